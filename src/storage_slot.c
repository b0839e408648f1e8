/*-------------------------------------------------------------------------
 *
 * src/storage_slot.c
 *		Slot storage (schemas 0.3 on): a SKU's counters are split over
 *		slots, rows of inventory.stock_slot (escrow buckets), so that
 *		concurrent reservations of a hot SKU take units from different rows
 *		instead of queueing on one.  See storage.h for the interface; the
 *		operator function set_stock_slots lives here too.
 *
 * Two layouts share this code (SlotLayout): 0.3 and 0.4 keep the slots of
 * a SKU; 0.5 on keeps them per (sku, location), each location of a SKU
 * with as many slots as inventory.sku says, with the safety stock of the
 * (sku, location) never taken (a slot keeps its share on the fast path,
 * the fallback checks the total), and the stock level looked at after a
 * move that may have changed it (level.c).
 *
 * Moving units (available -> reserved on reserve, reserved -> consumed on
 * confirm, ...) first tries one slot that holds enough, taken with SKIP
 * LOCKED: concurrent callers spread over the slots and never wait there.
 * When no free slot holds enough, it waits for one busy slot that held
 * enough, chosen by a hash of the request key so that waiters spread over
 * the slots (a flash sale: callers queue per slot, not all on slot 0), and
 * takes from it if it still holds enough after the wait.  Else it falls
 * back to locking every slot of the SKU in slot order and taking from several (greedy, lowest slot
 * first); a reservation taken this way also spreads the SKU's available
 * units evenly over its slots again (rebalancing as slots drain).  Per
 * slot, as per SKU, no counter goes negative (CHECK), so the SKU's totals,
 * the sums in the view inventory.stock, obey the invariants.
 *
 * Lock order (see pg_inventory.h): stock slot rows come after the
 * reservation row, SKU by SKU in (tenant, sku) order, and within a SKU
 * either one slot taken with SKIP LOCKED (never waits), or one slot waited
 * for while holding no slot of the SKU (released again before the next
 * step when it does not hold enough), or a share lock on the SKU's
 * catalog row and then all slots in slot order.  set_stock_slots
 * takes the catalog row (FOR NO KEY UPDATE) before the slots.  Within one
 * call, a caller that holds a slot of a SKU never waits for a slot of the
 * same or a lower SKU, so no two calls deadlock.  A transaction that makes
 * several calls on one slotted SKU can: its first call may hold slot 1
 * while another's holds slot 0, and both then fall back to all slots; such
 * a caller retries 40P01, as with any transaction that touches rows in an
 * order of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "inventory_errcodes.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(inventory_set_stock_slots);

#define INVENTORY_SLOTS_MAX 256

/*
 * One locked slot row as read.  location: NULL before 0.5; keep: the units
 * of available that reservations never take at the slot's (sku, location),
 * its safety stock (0 before 0.5)
 */
typedef struct SlotRow
{
	char	   *tenant;
	char	   *sku;
	char	   *location;
	int32		slot;
	int64		counter[INVENTORY_COUNTERS];
	int64		keep;
} SlotRow;

/* The locked slots of one or more SKUs, in (tenant, sku, slot) order */
typedef struct SlotRows
{
	int			count;
	SlotRow    *items;
} SlotRows;

/* A change of the counters of one slot, in units */
typedef struct SlotChange
{
	char	   *tenant;
	char	   *sku;
	char	   *location;
	int32		slot;
	int64		delta[INVENTORY_COUNTERS];
} SlotChange;

typedef struct SlotChanges
{
	int			count;
	int			capacity;
	SlotChange *items;
} SlotChanges;

typedef enum SlotMoveResult
{
	SLOT_MOVE_DONE,
	SLOT_MOVE_SHORT,
	SLOT_MOVE_UNKNOWN
} SlotMoveResult;

/* a + b, or the bound it passed: sums that only decide "enough or not" */
static int64
AddSaturating(int64 a, int64 b)
{
	int64		sum;

	if (pg_add_s64_overflow(a, b, &sum))
		return b > 0 ? PG_INT64_MAX : PG_INT64_MIN;
	return sum;
}

/*
 * The statements of one layout of the slot rows: without a location (0.3
 * and 0.4) or per (sku, location) (0.5 on).  Both take the same parameters
 * (the location ones last, unused without locations) and return the same
 * columns, so the code above them is one.
 */
typedef struct SlotLayout
{
	InventoryStatement *apply_changes;
	InventoryStatement *lock_slots;
	InventoryStatement *units_of_reservations;
	InventoryStatement *add_slots;
	InventoryStatement *drop_slots;
} SlotLayout;

static const SlotLayout unlocated_layout;
static const SlotLayout located_layout;

/* Whether the current call's schema has the slot guards (0.6 on) */
static bool slot_guards = false;

/* Appends one change of one slot to changes. */
static void
AddChange(SlotChanges *changes, const char *tenant, const char *sku,
		  const char *location, int32 slot, const int64 *delta)
{
	SlotChange *c;

	if (changes->count == changes->capacity)
	{
		changes->capacity = Max(8, changes->capacity * 2);
		changes->items = changes->items == NULL ?
			palloc(sizeof(SlotChange) * changes->capacity) :
			repalloc(changes->items, sizeof(SlotChange) * changes->capacity);
	}
	c = &changes->items[changes->count++];
	c->tenant = pstrdup(tenant);
	c->sku = pstrdup(sku);
	c->location = location == NULL ? NULL : pstrdup(location);
	c->slot = slot;
	memcpy(c->delta, delta, sizeof(c->delta));
}

/*
 * $1 tenants, $2 skus, $3 slots, $4/$5/$6 changes of available, reserved,
 * consumed of slots the caller has locked; $7 clock; $8 locations (0.5).
 */
static InventoryStatement apply_changes = {
	"change stock slots",
	"UPDATE inventory.stock_slot s SET available = s.available + d.da, "
	"reserved = s.reserved + d.dr, consumed = s.consumed + d.dc, updated_at = $7 "
	"FROM unnest($1, $2, $3, $4, $5, $6) AS d(tenant, sku, slot, da, dr, dc) "
	"WHERE s.tenant = d.tenant AND s.sku = d.sku AND s.slot = d.slot",
	8, {TEXTARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
	INT8ARRAYOID, TIMESTAMPTZOID, TEXTARRAYOID}
};

static InventoryStatement apply_changes_located = {
	"change stock slots",
	"UPDATE inventory.stock_slot s SET available = s.available + d.da, "
	"reserved = s.reserved + d.dr, consumed = s.consumed + d.dc, updated_at = $7 "
	"FROM unnest($1, $2, $8, $3, $4, $5, $6) "
	"AS d(tenant, sku, location, slot, da, dr, dc) "
	"WHERE s.tenant = d.tenant AND s.sku = d.sku AND s.location = d.location "
	"AND s.slot = d.slot",
	8, {TEXTARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
	INT8ARRAYOID, TIMESTAMPTZOID, TEXTARRAYOID}
};

/*
 * ApplyChanges
 *		Writes changes (of slots this transaction has locked) in one
 *		statement; with negate, writes their opposite (an undo).
 */
static uint64 RunChanges(InventoryStatement *stmt, const SlotChanges *changes,
						 bool negate, TimestampTz now, int expected_rc);

static void
ApplyChanges(const SlotLayout *layout, const SlotChanges *changes, bool negate,
			 TimestampTz now)
{
	if (changes->count > 0 &&
		RunChanges(layout->apply_changes, changes, negate, now,
				   SPI_OK_UPDATE) != (uint64) changes->count)
		elog(ERROR, "pg_inventory: %d stock slots changed under their row locks",
			 changes->count);
}

/* Runs stmt (apply_changes' parameters) with changes; returns its rows */
static uint64
RunChanges(InventoryStatement *stmt, const SlotChanges *changes, bool negate,
		   TimestampTz now, int expected_rc)
{
	int			n = changes->count;
	const char **tenants;
	const char **skus;
	const char **locations;
	Datum	   *slots;
	int64	   *deltas[INVENTORY_COUNTERS];
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int			i;
	int			k;

	tenants = palloc(sizeof(char *) * n);
	skus = palloc(sizeof(char *) * n);
	locations = palloc(sizeof(char *) * n);
	slots = palloc(sizeof(Datum) * n);
	for (k = 0; k < INVENTORY_COUNTERS; k++)
		deltas[k] = palloc(sizeof(int64) * n);
	for (i = 0; i < n; i++)
	{
		tenants[i] = changes->items[i].tenant;
		skus[i] = changes->items[i].sku;
		locations[i] = changes->items[i].location;
		slots[i] = Int32GetDatum(changes->items[i].slot);
		for (k = 0; k < INVENTORY_COUNTERS; k++)
			deltas[k][i] = negate ? -changes->items[i].delta[k] :
				changes->items[i].delta[k];
	}
	values[0] = InventoryTextArray(tenants, n);
	values[1] = InventoryTextArray(skus, n);
	values[2] = PointerGetDatum(construct_array(slots, n, INT4OID, 4, true,
												TYPALIGN_INT));
	for (k = 0; k < INVENTORY_COUNTERS; k++)
		values[3 + k] = InventoryInt8Array(deltas[k], n);
	values[6] = TimestampTzGetDatum(now);
	if (locations[0] != NULL)
		values[7] = InventoryTextArray(locations, n);
	else
		nulls[7] = 'n';
	return InventoryRun(stmt, values, nulls, expected_rc);
}

/*
 * Share locks on the SKUs ($1 tenants, $2 skus) in (tenant, sku) order,
 * taken before lock_slots.  They wait for a set_stock_slots in progress
 * (FOR NO KEY UPDATE) and keep new ones out, so the next statement's
 * snapshot shows every slot of the SKUs.  They conflict neither with each
 * other nor with foreign key checks.
 */
static InventoryStatement share_skus = {
	"share-lock SKUs",
	"SELECT 1 FROM inventory.sku k "
	"JOIN unnest($1, $2) AS u(tenant, sku) ON k.tenant = u.tenant AND k.sku = u.sku "
	"ORDER BY k.tenant, k.sku FOR SHARE OF k",
	2, {TEXTARRAYOID, TEXTARRAYOID}
};

/*
 * Every slot of the SKUs ($1 tenants, $2 skus), locked in order; with
 * locations (0.5), of the SKUs at $3 locations (NULL: at every location).
 * Columns: tenant, sku, location, slot, available, reserved, consumed and
 * the safety stock of the slot's (sku, location).
 */
static InventoryStatement lock_slots = {
	"lock all slots of SKUs",
	"SELECT s.tenant::text, s.sku::text, NULL::text, s.slot, s.available, "
	"s.reserved, s.consumed, 0::bigint FROM inventory.stock_slot s "
	"JOIN unnest($1, $2) AS u(tenant, sku) ON s.tenant = u.tenant AND s.sku = u.sku "
	"ORDER BY s.tenant, s.sku, s.slot FOR UPDATE OF s",
	3, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}
};

#define LOCK_SLOTS_LOCATED(keep) \
	"SELECT s.tenant::text, s.sku::text, s.location::text, s.slot, s.available, " \
	"s.reserved, s.consumed, " keep " FROM inventory.stock_slot s " \
	"JOIN unnest($1, $2, $3) AS u(tenant, sku, location) " \
	"ON s.tenant = u.tenant AND s.sku = u.sku " \
	"AND (u.location IS NULL OR s.location = u.location) " \
	"ORDER BY s.tenant, s.sku, s.location, s.slot FOR UPDATE OF s"

static InventoryStatement lock_slots_located = {
	"lock all slots of SKUs",
	LOCK_SLOTS_LOCATED("0::bigint"),
	3, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}
};

/*
 * 0.6: the same with each slot's keep_units: not NULL, it is the safety
 * stock of the slot's (sku, location) (one slot: all of it; several: 0),
 * read from the locked (newest) row, which set_stock_policy writes under
 * the same lock; NULL (several slots and a safety stock) sends
 * LockSlotRows to read_safety_stock
 */
static InventoryStatement lock_slots_guarded = {
	"lock all slots of SKUs",
	LOCK_SLOTS_LOCATED("s.keep_units"),
	3, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}
};

/*
 * The safety stock of the same (sku, location) pairs, read by a statement
 * of its own once their slots are locked: a lock that waited for
 * set_stock_policy returns the newest slot rows, and only a new statement
 * (a new snapshot at READ COMMITTED) sees the policy it committed.
 */
static InventoryStatement read_safety_stock = {
	"read safety stock",
	"SELECT l.tenant::text, l.sku::text, l.location::text, l.safety_stock "
	"FROM inventory.stock_location l "
	"JOIN unnest($1, $2, $3) AS u(tenant, sku, location) "
	"ON l.tenant = u.tenant AND l.sku = u.sku "
	"AND (u.location IS NULL OR l.location = u.location) "
	"ORDER BY l.tenant, l.sku, l.location",
	3, {TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID}
};

/*
 * LockAllSlots
 *		Locks every slot of the n SKUs (tenants[i], skus[i]; distinct
 *		pairs), with locations at locations[i] (NULL: every location; the
 *		array NULL: before 0.5), in (tenant, sku, location, slot) order and
 *		returns them in that order.
 *
 * First a statement share-locks the SKUs' catalog rows, in the same order:
 * that waits for a set_stock_slots in progress and keeps others out until
 * commit.  At READ COMMITTED each statement reads its own snapshot, so the
 * second statement, which locks the slots, sees every slot the SKUs have.
 * (Locking the slots alone would miss slots that a set_stock_slots it
 * waited for had added.)
 */
static SlotRows LockSlotRows(const SlotLayout *layout, int n,
							 const char *const *tenants,
							 const char *const *skus,
							 const char *const *locations, bool shared,
							 bool keep);

static SlotRows
LockAllSlots(const SlotLayout *layout, int n, const char *const *tenants,
			 const char *const *skus, const char *const *locations)
{
	return LockSlotRows(layout, n, tenants, skus, locations, false, true);
}

/*
 * LockSlotRows
 *		LockAllSlots, with two choices for callers that need less: shared,
 *		the caller's previous statement has share-locked the SKUs' catalog
 *		rows in (tenant, sku) order already (Release); keep false, the
 *		safety stock is not read (keep stays 0): a move that takes nothing
 *		from available never looks at it.
 */
static SlotRows
LockSlotRows(const SlotLayout *layout, int n, const char *const *tenants,
			 const char *const *skus, const char *const *locations,
			 bool shared, bool keep)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	SlotRows	rows;
	uint64		i;
	int			k;
	bool		guarded = slot_guards && layout == &located_layout;
	bool		unguarded = false;	/* a slot without keep_units */

	values[0] = InventoryTextArray(tenants, n);
	values[1] = InventoryTextArray(skus, n);
	if (locations != NULL)
		values[2] = InventoryTextArray(locations, n);
	else
		nulls[2] = 'n';
	if (!shared)
		InventoryRun(&share_skus, values, NULL, SPI_OK_SELECT);
	rows.count = (int) InventoryRun(guarded ? &lock_slots_guarded :
									layout->lock_slots, values, nulls,
									SPI_OK_SELECT);
	rows.items = palloc(sizeof(SlotRow) * Max(rows.count, 1));
	for (i = 0; i < (uint64) rows.count; i++)
	{
		bool		isnull;

		rows.items[i].tenant = InventoryResultText(i, 1);
		rows.items[i].sku = InventoryResultText(i, 2);
		rows.items[i].location = InventoryResultText(i, 3);
		rows.items[i].slot = DatumGetInt32(InventoryResultDatum(i, 4, &isnull));
		for (k = 0; k < INVENTORY_COUNTERS; k++)
			rows.items[i].counter[k] = InventoryResultInt64(i, 5 + k);
		rows.items[i].keep = DatumGetInt64(InventoryResultDatum(i, 8, &isnull));
		if (isnull)
		{
			rows.items[i].keep = 0;
			unguarded = true;
		}
	}
	if (keep && layout == &located_layout && rows.count > 0 &&
		(!guarded || unguarded))
	{
		uint64		nsafety = InventoryRun(&read_safety_stock, values, nulls,
										   SPI_OK_SELECT);
		uint64		j = 0;

		/* both in (tenant, sku, location) order: one merge pass */
		for (i = 0; i < (uint64) rows.count; i++)
		{
			SlotRow    *r = &rows.items[i];

			while (j < nsafety &&
				   (strcmp(InventoryResultText(j, 1), r->tenant) != 0 ||
					strcmp(InventoryResultText(j, 2), r->sku) != 0 ||
					strcmp(InventoryResultText(j, 3), r->location) != 0))
				j++;
			if (j == nsafety)
				elog(ERROR, "pg_inventory: stock of SKU \"%s\" at location \"%s\" has no catalog row",
					 r->sku, r->location);
			r->keep = InventoryResultInt64(j, 4);
		}
	}
	return rows;
}

/*
 * TakeGreedy
 *		Plans moving qty units from counter "from" to counter "to" over the
 *		nrows locked slots of one SKU, lowest slot first, into changes;
 *		with rebalance, also spreads the SKU's available units evenly over
 *		its slots.  Returns false (planning nothing) when the slots hold
 *		fewer than qty units in "from" (taking from available: beyond the
 *		safety stock of the (sku, location)).
 */
static bool
TakeGreedy(const SlotRow *rows, int nrows, int64 qty, InventoryCounter from,
		   InventoryCounter to, bool rebalance, SlotChanges *changes)
{
	int64	   *take = palloc0(sizeof(int64) * Max(nrows, 1));
	int64		total = 0;
	int64		remaining = qty;
	int64		available = 0;
	int			i;

	for (i = 0; i < nrows; i++)
		total = AddSaturating(total, rows[i].counter[from]);
	if (from == COUNTER_AVAILABLE && nrows > 0)
		total = AddSaturating(total, -rows[0].keep);
	if (total < qty)
		return false;
	for (i = 0; i < nrows && remaining > 0; i++)
	{
		take[i] = Min(rows[i].counter[from], remaining);
		remaining -= take[i];
	}
	if (rebalance && nrows > 1)
	{
		/* the SKU's available units after the move; they fit (invariant) */
		for (i = 0; i < nrows; i++)
			available += rows[i].counter[COUNTER_AVAILABLE] +
				(from == COUNTER_AVAILABLE ? -take[i] : 0) +
				(to == COUNTER_AVAILABLE ? take[i] : 0);
	}
	for (i = 0; i < nrows; i++)
	{
		int64		d[INVENTORY_COUNTERS] = {0, 0, 0};

		d[from] -= take[i];
		if (to != COUNTER_NONE)
			d[to] += take[i];
		if (rebalance && nrows > 1)
		{
			int64		after = rows[i].counter[COUNTER_AVAILABLE] + d[COUNTER_AVAILABLE];
			int64		share = available / nrows + (i < available % nrows ? 1 : 0);

			d[COUNTER_AVAILABLE] += share - after;
		}
		if (d[0] != 0 || d[1] != 0 || d[2] != 0)
			AddChange(changes, rows[i].tenant, rows[i].sku, rows[i].location,
					  rows[i].slot, d);
	}
	return true;
}

/*
 * The fast path: locks the first slot of (tenant $1, sku $2) whose counter
 * $3 (0 available, 1 reserved, 2 consumed) holds at least $4 units,
 * skipping slots other transactions hold (so concurrent calls spread over
 * the slots and never wait here), and changes its counters by $5, $6, $7
 * (units).  The CTE runs once (a subquery in FROM could be rescanned per
 * row and lock more slots).  No row: no free slot holds enough.  $8 clock.
 */
static InventoryStatement take_one_slot = {
	"take units from one free slot",
	"WITH p AS MATERIALIZED (SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND CASE $3 WHEN 0 THEN p.available "
	"WHEN 1 THEN p.reserved ELSE p.consumed END >= $4 "
	"ORDER BY p.slot LIMIT 1 FOR UPDATE SKIP LOCKED) "
	"UPDATE inventory.stock_slot s SET available = s.available + $5, "
	"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
	"FROM p WHERE s.tenant = $1 AND s.sku = $2 AND s.slot = p.slot "
	"RETURNING s.slot",
	9, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID}
};

/*
 * The same at location $9 (0.5).  Taking from available, the safety stock
 * stays: with one slot the slot keeps it; a SKU with several slots and a
 * safety stock takes no fast path from available (a slot cannot know what
 * the others hold), the fallback checks the total.  Also returns what tells whether the stock level may have changed: the
 * slot's available units after the change, the safety stock, the low
 * threshold, the stored level and the slot count.
 */
static InventoryStatement take_one_slot_located = {
	"take units from one free slot",
	"WITH p AS MATERIALIZED (SELECT p.slot, l.safety_stock, l.low_threshold, "
	"l.level, k.slots FROM inventory.stock_slot p "
	"JOIN inventory.stock_location l ON l.tenant = p.tenant AND l.sku = p.sku "
	"AND l.location = p.location "
	"JOIN inventory.sku k ON k.tenant = p.tenant AND k.sku = p.sku "
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.location = $9 AND CASE $3 "
	"WHEN 0 THEN CASE WHEN k.slots = 1 THEN p.available - l.safety_stock "
	"WHEN l.safety_stock = 0 THEN p.available ELSE -1 END "
	"WHEN 1 THEN p.reserved ELSE p.consumed END >= $4 "
	"ORDER BY p.slot LIMIT 1 FOR UPDATE OF p SKIP LOCKED) "
	"UPDATE inventory.stock_slot s SET available = s.available + $5, "
	"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
	"FROM p WHERE s.tenant = $1 AND s.sku = $2 AND s.location = $9 "
	"AND s.slot = p.slot RETURNING s.slot, s.available, p.safety_stock, "
	"p.low_threshold, p.level::text, p.slots",
	9, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID}
};

/*
 * Waiting on one slot, when the fast path found no free slot that holds
 * enough: of the slots of (tenant $1, sku $2) whose counter $3 holds at
 * least $4 units in the statement's snapshot, the one at position $10
 * modulo their count (in slot order) is locked with a plain FOR UPDATE,
 * which waits for the transaction that holds it, and returned.  After the
 * wait, READ COMMITTED rechecks the condition on the newest version of the
 * row: a slot that no longer holds enough is not returned (but stays
 * locked: SlotMove rolls the subtransaction back).  No slot holds enough
 * in the snapshot: no row, and nothing waited for.  $5 .. $8 unused.
 */
static InventoryStatement wait_one_slot = {
	"wait for one slot",
	"WITH c AS MATERIALIZED (SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND CASE $3 WHEN 0 THEN p.available "
	"WHEN 1 THEN p.reserved ELSE p.consumed END >= $4), "
	"w AS MATERIALIZED (SELECT c.slot FROM c ORDER BY c.slot "
	"OFFSET $10 % GREATEST((SELECT count(*) FROM c), 1) LIMIT 1) "
	"SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.slot = (SELECT w.slot FROM w) "
	"AND CASE $3 WHEN 0 THEN p.available "
	"WHEN 1 THEN p.reserved ELSE p.consumed END >= $4 FOR UPDATE",
	10, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID, INT4OID}
};

/*
 * Then, in a statement of its own (a snapshot taken after the wait, which
 * sees what the slot's holder committed, e.g. a new safety stock: the
 * recheck of the wait reads joined rows as they were), the move from the
 * locked slot $10 when it still holds enough, as take_one_slot does.
 */
static InventoryStatement take_locked_slot = {
	"take units from a locked slot",
	"UPDATE inventory.stock_slot s SET available = s.available + $5, "
	"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
	"WHERE s.tenant = $1 AND s.sku = $2 AND s.slot = $10 "
	"AND CASE $3 WHEN 0 THEN s.available "
	"WHEN 1 THEN s.reserved ELSE s.consumed END >= $4 "
	"RETURNING s.slot",
	10, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID, INT4OID}
};

/* The same at location $9 (0.5), with take_one_slot_located's condition */
#define LOCATED_SLOT_HOLDS_ENOUGH \
	"CASE $3 WHEN 0 THEN CASE WHEN k.slots = 1 THEN p.available - l.safety_stock " \
	"WHEN l.safety_stock = 0 THEN p.available ELSE -1 END " \
	"WHEN 1 THEN p.reserved ELSE p.consumed END >= $4 "
#define LOCATED_SLOT_JOIN \
	"FROM inventory.stock_slot p " \
	"JOIN inventory.stock_location l ON l.tenant = p.tenant AND l.sku = p.sku " \
	"AND l.location = p.location " \
	"JOIN inventory.sku k ON k.tenant = p.tenant AND k.sku = p.sku " \
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.location = $9 AND "

static InventoryStatement wait_one_slot_located = {
	"wait for one slot",
	"WITH c AS MATERIALIZED (SELECT p.slot " LOCATED_SLOT_JOIN
	LOCATED_SLOT_HOLDS_ENOUGH "), "
	"w AS MATERIALIZED (SELECT c.slot FROM c ORDER BY c.slot "
	"OFFSET $10 % GREATEST((SELECT count(*) FROM c), 1) LIMIT 1) "
	"SELECT p.slot " LOCATED_SLOT_JOIN "p.slot = (SELECT w.slot FROM w) AND "
	LOCATED_SLOT_HOLDS_ENOUGH "FOR UPDATE OF p",
	10, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID, INT4OID}
};

static InventoryStatement take_locked_slot_located = {
	"take units from a locked slot",
	"WITH p AS MATERIALIZED (SELECT p.slot, l.safety_stock, l.low_threshold, "
	"l.level, k.slots " LOCATED_SLOT_JOIN "p.slot = $10 AND "
	LOCATED_SLOT_HOLDS_ENOUGH ") "
	"UPDATE inventory.stock_slot s SET available = s.available + $5, "
	"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
	"FROM p WHERE s.tenant = $1 AND s.sku = $2 AND s.location = $9 "
	"AND s.slot = p.slot RETURNING s.slot, s.available, p.safety_stock, "
	"p.low_threshold, p.level::text, p.slots",
	10, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID, INT4OID}
};

/*
 * 0.6: the same three statements on the slot row alone: its guards
 * (keep_units, level_watch; see sql/pg_inventory.sql) stand for the join
 * with stock_location and sku.  A slot whose keep_units is NULL (several
 * slots and a safety stock) never holds enough here for a take from
 * available (the comparison is NULL), as with the join's -1.  Returns the
 * slot, its available units after the change and its level_watch.
 */
#define GUARDED_SLOT_HOLDS_ENOUGH(p) \
	"CASE $3 WHEN 0 THEN " p ".available - " p ".keep_units " \
	"WHEN 1 THEN " p ".reserved ELSE " p ".consumed END >= $4 "

static InventoryStatement take_one_slot_guarded = {
	"take units from one free slot",
	"WITH p AS MATERIALIZED (SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.location = $9 AND "
	GUARDED_SLOT_HOLDS_ENOUGH("p")
	"ORDER BY p.slot LIMIT 1 FOR UPDATE SKIP LOCKED) "
	"UPDATE inventory.stock_slot s SET available = s.available + $5, "
	"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
	"FROM p WHERE s.tenant = $1 AND s.sku = $2 AND s.location = $9 "
	"AND s.slot = p.slot RETURNING s.slot, s.available, s.level_watch",
	9, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID}
};

static InventoryStatement wait_one_slot_guarded = {
	"wait for one slot",
	"WITH c AS MATERIALIZED (SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.location = $9 AND "
	GUARDED_SLOT_HOLDS_ENOUGH("p") "), "
	"w AS MATERIALIZED (SELECT c.slot FROM c ORDER BY c.slot "
	"OFFSET $10 % GREATEST((SELECT count(*) FROM c), 1) LIMIT 1) "
	"SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.location = $9 "
	"AND p.slot = (SELECT w.slot FROM w) AND "
	GUARDED_SLOT_HOLDS_ENOUGH("p") "FOR UPDATE",
	10, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID, INT4OID}
};

static InventoryStatement take_locked_slot_guarded = {
	"take units from a locked slot",
	"UPDATE inventory.stock_slot s SET available = s.available + $5, "
	"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
	"WHERE s.tenant = $1 AND s.sku = $2 AND s.location = $9 AND s.slot = $10 "
	"AND " GUARDED_SLOT_HOLDS_ENOUGH("s")
	"RETURNING s.slot, s.available, s.level_watch",
	10, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
	TIMESTAMPTZOID, TEXTOID, INT4OID}
};

/*
 * 0.6: the guards of every slot of (tenant $1, sku $2), at every location,
 * written where they differ from what the policy, the level and the slot
 * count give (rows that already agree are not touched, so not locked).
 * Run by the calls that change one of those, while they hold the slots.
 */
static InventoryStatement refresh_slot_guards = {
	"refresh slot guards",
	"UPDATE inventory.stock_slot s "
	"SET keep_units = inventory.slot_keep_units(k.slots, l.safety_stock), "
	"level_watch = inventory.slot_level_watch(k.slots, l.safety_stock, "
	"l.low_threshold, l.level) "
	"FROM inventory.stock_location l "
	"JOIN inventory.sku k ON k.tenant = l.tenant AND k.sku = l.sku "
	"WHERE l.tenant = $1 AND l.sku = $2 AND s.tenant = l.tenant "
	"AND s.sku = l.sku AND s.location = l.location "
	"AND (s.keep_units, s.level_watch) IS DISTINCT FROM "
	"(inventory.slot_keep_units(k.slots, l.safety_stock), "
	"inventory.slot_level_watch(k.slots, l.safety_stock, l.low_threshold, l.level))",
	2, {TEXTOID, TEXTOID}
};

/*
 * InventorySlotGuards
 *		Called by InventoryBeginCall: whether the installed schema's slots
 *		carry their guards (0.6 on), so that the fast path reads the slot
 *		row alone.
 */
void
InventorySlotGuards(bool guarded)
{
	slot_guards = guarded;
}

/* InventorySlotGuarded: whether the current call's slots have guards */
bool
InventorySlotGuarded(void)
{
	return slot_guards;
}

/*
 * InventoryRefreshSlotGuards
 *		0.6 on: writes the guards of every slot of the tenant's SKU (at
 *		every location) from its policy, level and slot count where they
 *		differ.  Called by set_stock_policy and set_stock_slots, with the
 *		slots locked (new slots get theirs from
 *		ensure_sku_location_guarded).  Does nothing before 0.6.
 */
void
InventoryRefreshSlotGuards(const char *tenant, const char *sku)
{
	Datum		values[2];

	if (!slot_guards)
		return;
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	InventoryRun(&refresh_slot_guards, values, NULL, SPI_OK_UPDATE);
}

/*
 * The spread key of the current call (InventorySlotSpread): which of the
 * slots that hold enough a caller waits for when none is free
 */
static int32 slot_spread = 0;

/*
 * InventorySlotSpread
 *		Called by InventoryBeginCall with a hash of the call's request key
 *		(or the backend's pid): concurrent callers of one SKU that find
 *		every slot busy wait for different slots, and a given request
 *		always picks the same one (tests can predict it).
 */
void
InventorySlotSpread(uint32 key)
{
	slot_spread = (int32) (key & 0x7fffffff);
}

typedef struct TakeOne
{
	InventoryStatement *stmt;	/* the fast path's statement */
	InventoryStatement *wait;	/* the wait for one slot */
	InventoryStatement *take_locked;	/* and the take after it */
	Datum		values[10];
	char		nulls[10];
	InventoryCounter from;
	InventoryCounter to;
	int32		slot;			/* out: the slot taken */
	bool		level_may_change;	/* out (0.5): see LevelMayChange */
} TakeOne;

/*
 * LevelMayChange
 *		0.5, after a fast-path move of one slot (the row of the fast path's
 *		RETURNING): whether the level of the (sku, location) may have
 *		changed, so that InventoryCheckLevels must look.  Units leaving
 *		available: not if the level was in_stock and the SKU has one slot
 *		whose sellable units are still above the low threshold (and 0).
 *		Units entering available: not if the level was in_stock (it can
 *		only stay there).  Otherwise available did not change: no.
 *		0.6 reads the same from the slot's level_watch (not NULL only for a
 *		one-slot SKU in_stock): units leaving available need no look while
 *		more than the watch stays, units entering none while it is set.
 */
static bool
LevelMayChange(InventoryCounter from, InventoryCounter to)
{
	bool		isnull;
	bool		low_null;
	int64		available;
	int64		safety;
	int64		low;
	char	   *level;
	int32		slots;
	bool		in_stock;

	if (SPI_tuptable->tupdesc->natts == 3)
	{
		/* 0.6: slot, available after the change, level_watch */
		int64		watch = DatumGetInt64(InventoryResultDatum(0, 3, &isnull));

		if (from == COUNTER_AVAILABLE)
			return isnull || InventoryResultInt64(0, 2) <= watch;
		if (to == COUNTER_AVAILABLE)
			return isnull;
		return false;
	}
	available = InventoryResultInt64(0, 2);
	safety = InventoryResultInt64(0, 3);
	low = DatumGetInt64(InventoryResultDatum(0, 4, &low_null));
	level = InventoryResultText(0, 5);
	slots = DatumGetInt32(InventoryResultDatum(0, 6, &isnull));
	in_stock = level != NULL && strcmp(level, "in_stock") == 0;
	if (from == COUNTER_AVAILABLE)
		return !(in_stock && slots == 1 &&
				 available - safety > (low_null ? 0 : low));
	if (to == COUNTER_AVAILABLE)
		return !in_stock;
	return false;
}

static bool
TakeOneWork(void *arg)
{
	TakeOne    *t = (TakeOne *) arg;
	bool		isnull;

	InventoryFaultPoint("slot_take");
	if (InventoryRun(t->stmt, t->values, t->nulls,
					 SPI_OK_UPDATE_RETURNING) != 1)
		return false;
	t->slot = DatumGetInt32(InventoryResultDatum(0, 1, &isnull));
	t->level_may_change = SPI_tuptable->tupdesc->natts > 1 &&
		LevelMayChange(t->from, t->to);
	return true;
}

/*
 * WaitOneWork
 *		The wait on one slot (wait_one_slot, then take_locked_slot), in
 *		SlotMove's second subtransaction; false when the slot it waited for
 *		no longer holds enough (or none did).
 */
static bool
WaitOneWork(void *arg)
{
	TakeOne    *t = (TakeOne *) arg;
	InventoryStatement *fast = t->stmt;
	bool		isnull;
	bool		taken;

	InventoryFaultPoint("slot_wait");
	if (InventoryRun(t->wait, t->values, t->nulls, SPI_OK_SELECT) != 1)
		return false;
	t->values[9] = InventoryResultDatum(0, 1, &isnull);
	t->stmt = t->take_locked;
	taken = TakeOneWork(t);
	t->stmt = fast;
	t->values[9] = Int32GetDatum(slot_spread);
	return taken;
}

/*
 * InitTakeOne
 *		The fast path's statement and parameters for moving qty units of
 *		(tenant, sku) (at location, 0.5; NULL before) from counter "from"
 *		to counter "to".
 */
static void
InitTakeOne(TakeOne *t, const SlotLayout *layout, const char *tenant,
			const char *sku, const char *location, int64 qty,
			InventoryCounter from, InventoryCounter to, TimestampTz now)
{
	int64		d[INVENTORY_COUNTERS] = {0, 0, 0};

	d[from] -= qty;
	if (to != COUNTER_NONE)
		d[to] += qty;
	if (layout != &located_layout)
	{
		t->stmt = &take_one_slot;
		t->wait = &wait_one_slot;
		t->take_locked = &take_locked_slot;
	}
	else if (slot_guards)
	{
		t->stmt = &take_one_slot_guarded;
		t->wait = &wait_one_slot_guarded;
		t->take_locked = &take_locked_slot_guarded;
	}
	else
	{
		t->stmt = &take_one_slot_located;
		t->wait = &wait_one_slot_located;
		t->take_locked = &take_locked_slot_located;
	}
	t->from = from;
	t->to = to;
	t->level_may_change = false;
	memset(t->nulls, ' ', sizeof(t->nulls));
	t->values[0] = CStringGetTextDatum(tenant);
	t->values[1] = CStringGetTextDatum(sku);
	t->values[2] = Int32GetDatum((int32) from);
	t->values[3] = Int64GetDatum(qty);
	t->values[4] = Int64GetDatum(d[COUNTER_AVAILABLE]);
	t->values[5] = Int64GetDatum(d[COUNTER_RESERVED]);
	t->values[6] = Int64GetDatum(d[COUNTER_CONSUMED]);
	t->values[7] = TimestampTzGetDatum(now);
	if (location != NULL)
		t->values[8] = CStringGetTextDatum(location);
	else
		t->nulls[8] = 'n';
	t->values[9] = Int32GetDatum(slot_spread);
}

/*
 * SlotMove
 *		Moves qty units (at least 1) of (tenant, sku) (at location, 0.5;
 *		NULL before) from counter "from" to
 *		counter "to": one free slot that holds enough if there is one, else
 *		one busy slot that still holds enough once we got it, else
 *		all slots locked in order (and, with rebalance, available spread
 *		evenly again).  The changes made are appended to done (if not NULL),
 *		so that a caller can undo them.
 *
 * The fast path runs in a subtransaction: when no free slot holds enough,
 * it is rolled back, and with it any row lock the statement took: SKIP
 * LOCKED may lock a slot that a concurrent commit just emptied (its
 * recheck then fails, but the lock stays), and a caller that kept such a
 * lock while falling back to locking all slots in slot order would hold a
 * slot out of order and could deadlock with another fallback.  The wait
 * for one slot runs in a second subtransaction, rolled back likewise.
 *
 * With locked, the caller holds every slot of the SKU already (the exact
 * allocation path locked them all in order): the fast path then can take
 * no lock it does not hold, and runs without its subtransaction.
 *
 * Returns SLOT_MOVE_DONE, SLOT_MOVE_SHORT (the SKU holds fewer than qty
 * units in "from"; nothing changed) or SLOT_MOVE_UNKNOWN (no such SKU).
 */
static SlotMoveResult
SlotMove(const SlotLayout *layout, const char *tenant, const char *sku,
		 const char *location, int64 qty, InventoryCounter from,
		 InventoryCounter to, bool rebalance, TimestampTz now,
		 SlotChanges *done, bool *level_may_change, bool locked)
{
	int64		d[INVENTORY_COUNTERS] = {0, 0, 0};
	TakeOne		t;
	SlotChanges planned = {0, 0, NULL};
	SlotRows	rows;
	int			i;

	d[from] -= qty;
	if (to != COUNTER_NONE)
		d[to] += qty;
	InitTakeOne(&t, layout, tenant, sku, location, qty, from, to, now);
	*level_may_change = false;
	if (locked ? TakeOneWork(&t) : InventorySubtransaction(TakeOneWork, &t))
	{
		if (done != NULL)
			AddChange(done, tenant, sku, location, t.slot, d);
		*level_may_change = t.level_may_change;
		return SLOT_MOVE_DONE;
	}

	/*
	 * Every slot that holds enough is busy: wait for one of them (chosen by
	 * the call's spread key) rather than for all, in a subtransaction of
	 * its own.  When that slot still holds enough once its holder is done,
	 * take from it; when it does not (or none held enough to begin with),
	 * the subtransaction is rolled back, releasing the slot's row lock, and
	 * we fall back below holding no slot of this SKU, as before.
	 *
	 * Deadlocks: while it waits, the caller holds no slot of this (sku,
	 * location) (the fast path's subtransaction was rolled back) and only
	 * rows that come before it in the lock order (its reservation row,
	 * slots of earlier (sku, location) pairs), so it waits for a row above
	 * everything it holds, as the fallback does, and no cycle can form
	 * among single calls.  The slot's holder is a fast-path or one-slot
	 * taker (it waits for no slot of this pair afterwards), a fallback or
	 * set_stock_slots going up in slot order, or an expirer going up in
	 * (sku, location, slot) order: none of them waits for a row this
	 * caller holds.  The SKU's catalog row is not share-locked here:
	 * set_stock_slots, which holds it and then waits for every slot, waits
	 * for us at worst, never the other way round; a slot it drops is not
	 * returned after the wait and sends us to the fallback, which waits
	 * for it and sees the new slots.
	 */
	if (InventorySubtransaction(WaitOneWork, &t))
	{
		if (done != NULL)
			AddChange(done, tenant, sku, location, t.slot, d);
		*level_may_change = t.level_may_change;
		return SLOT_MOVE_DONE;
	}

	/* fallback: every slot of the SKU, locked in slot order */
	rows = LockAllSlots(layout, 1, &tenant, &sku,
						layout == &located_layout ? &location : NULL);
	if (rows.count == 0)
		return SLOT_MOVE_UNKNOWN;
	if (!TakeGreedy(rows.items, rows.count, qty, from, to, rebalance, &planned))
		return SLOT_MOVE_SHORT;
	ApplyChanges(layout, &planned, false, now);
	*level_may_change = layout == &located_layout &&
		(from == COUNTER_AVAILABLE || to == COUNTER_AVAILABLE);
	if (done != NULL)
		for (i = 0; i < planned.count; i++)
			AddChange(done, planned.items[i].tenant, planned.items[i].sku,
					  planned.items[i].location, planned.items[i].slot,
					  planned.items[i].delta);
	return SLOT_MOVE_DONE;
}

/*
 * The distinct SKUs of $2 the tenant $1 never stocked (no inventory.sku
 * row), in byte order
 */
static InventoryStatement unknown_skus = {
	"find unknown SKUs",
	"SELECT u.sku FROM (SELECT DISTINCT u.sku FROM unnest($2) AS u(sku)) u "
	"WHERE NOT EXISTS (SELECT 1 FROM inventory.sku k "
	"WHERE k.tenant = $1 AND k.sku = u.sku) "
	"ORDER BY u.sku COLLATE \"C\"",
	2, {TEXTOID, TEXTARRAYOID}
};

/*
 * InventoryCheckStocked
 *		0.3 on: raises IN002 naming every SKU of skus (a text[] Datum: the
 *		SKUs of a cart) that the tenant never stocked, when there is one
 *		(InventoryUnknownSkus); else returns.
 */
void
InventoryCheckStocked(const char *tenant, Datum skus)
{
	Datum		values[2];
	uint64		n;
	const char **names;
	uint64		i;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = skus;
	n = InventoryRun(&unknown_skus, values, NULL, SPI_OK_SELECT);
	if (n == 0)
		return;
	names = palloc(sizeof(char *) * n);
	for (i = 0; i < n; i++)
		names[i] = InventoryResultText(i, 1);
	InventoryUnknownSkus(tenant, (int) n, names, NULL);
}

/*
 * SlotHold
 *		Holds every line's units, line by line in (sku, location) order,
 *		from one free slot or (falling back) from all slots of the SKU (at
 *		the line's location), rebalancing them.  When a line does not fit
 *		(or, 0.5, its SKU was never stocked at its location), undoes the
 *		lines already held and returns false.  Errors: IN002 (also when a
 *		line that was not reached names an unknown SKU).
 */
/*
 * Levels to look at (0.5): the (sku, location) pairs whose level a call's
 * moves may have changed, checked by one InventoryCheckLevels once every
 * slot of the call is locked
 */
typedef struct LevelChecks
{
	int			count;
	const char **tenants;
	const char **skus;
	const char **locations;
} LevelChecks;

static void
InitLevelChecks(LevelChecks *checks, int capacity)
{
	checks->count = 0;
	checks->tenants = palloc(sizeof(char *) * Max(capacity, 1));
	checks->skus = palloc(sizeof(char *) * Max(capacity, 1));
	checks->locations = palloc(sizeof(char *) * Max(capacity, 1));
}

static void
AddLevelCheck(LevelChecks *checks, const char *tenant, const InventoryLine *line)
{
	checks->tenants[checks->count] = tenant;
	checks->skus[checks->count] = line->sku;
	checks->locations[checks->count] = line->location;
	checks->count++;
}

static void
RunLevelChecks(const LevelChecks *checks, TimestampTz now)
{
	if (checks->count > 0)
		InventoryCheckLevels(checks->count, checks->tenants, checks->skus,
							 checks->locations, now);
}

/*
 * ShareRepeatedSkus
 *		0.5: when a SKU is on several lines (at several locations), share-
 *		locks its catalog row before any of its slots, as the fallback
 *		would: a call holding a slot of the SKU at one location (fast path)
 *		that then fell back at another would ask for the catalog row after
 *		a slot, and could deadlock with set_stock_slots, which takes the
 *		catalog row first and then every slot.
 */
static void
ShareRepeatedSkus(const SlotLayout *layout, const char *tenant,
				  const InventoryLines *lines)
{
	const char **tenants;
	const char **skus;
	int			n = 0;
	int			i;
	Datum		values[2];

	if (layout != &located_layout)
		return;
	for (i = 1; i < lines->count; i++)
		if (strcmp(lines->items[i].sku, lines->items[i - 1].sku) == 0)
			break;
	if (i >= lines->count)
		return;					/* the common case: every SKU once */
	tenants = palloc(sizeof(char *) * Max(lines->count, 1));
	skus = palloc(sizeof(char *) * Max(lines->count, 1));
	for (i = 1; i < lines->count; i++)
		if (strcmp(lines->items[i].sku, lines->items[i - 1].sku) == 0 &&
			(n == 0 || strcmp(skus[n - 1], lines->items[i].sku) != 0))
		{
			tenants[n] = tenant;
			skus[n++] = lines->items[i].sku;
		}
	if (n == 0)
		return;
	values[0] = InventoryTextArray(tenants, n);
	values[1] = InventoryTextArray(skus, n);
	InventoryRun(&share_skus, values, NULL, SPI_OK_SELECT);
}

static bool
HoldLines(const SlotLayout *layout, const char *tenant,
		  const InventoryLines *lines, TimestampTz now, bool locked)
{
	SlotChanges done = {0, 0, NULL};
	LevelChecks checks;
	bool		check;
	int			i;

	InitLevelChecks(&checks, lines->count);
	ShareRepeatedSkus(layout, tenant, lines);
	for (i = 0; i < lines->count; i++)
	{
		switch (SlotMove(layout, tenant, lines->items[i].sku,
						 lines->items[i].location, lines->items[i].quantity,
						 COUNTER_AVAILABLE, COUNTER_RESERVED, true, now, &done,
						 &check, locked))
		{
			case SLOT_MOVE_DONE:
				if (check)
					AddLevelCheck(&checks, tenant, &lines->items[i]);
				break;
			case SLOT_MOVE_UNKNOWN:
			case SLOT_MOVE_SHORT:
				InventoryCheckStocked(tenant, InventorySkuArray(lines));
				ApplyChanges(layout, &done, true, now);
				return false;
		}
	}
	RunLevelChecks(&checks, now);
	return true;
}

/*
 * 0.6 on (slot guards): a single-line reserve's take and records in one
 * statement (issue #12: the CPU of a call).  The take is
 * take_one_slot_guarded's, from available to reserved of (tenant $1, sku
 * $2) at location $3, $4 units ($10 the same as int4), clock $5; the
 * records are INVENTORY_RESERVED_ONE_RECORDS (storage.h): the line, the
 * transition NULL -> pending of reservation $6 by actor $7, and the
 * reservation.reserved event $8 with payload $9.  The records are written
 * only when the take cannot have changed the stock level (available after
 * it above level_watch, as LevelMayChange says): otherwise the caller
 * checks the level first and records afterwards, so that a stock level
 * event comes before the reservation's event as on the other paths.
 * Returns the slot, its available units after the take and its
 * level_watch; no row: no free slot holds enough, and nothing changed.
 */
static InventoryStatement take_one_slot_recorded = {
	"take units from one free slot and record the reservation",
	"WITH p AS MATERIALIZED (SELECT p.slot FROM inventory.stock_slot p "
	"WHERE p.tenant = $1 AND p.sku = $2 AND p.location = $3 "
	"AND p.available - p.keep_units >= $4 "
	"ORDER BY p.slot LIMIT 1 FOR UPDATE SKIP LOCKED), "
	"s AS (UPDATE inventory.stock_slot s SET available = s.available - $4, "
	"reserved = s.reserved + $4, updated_at = $5 "
	"FROM p WHERE s.tenant = $1 AND s.sku = $2 AND s.location = $3 "
	"AND s.slot = p.slot RETURNING s.slot, s.available, s.level_watch), "
	"r AS MATERIALIZED (SELECT 1 FROM s WHERE s.available > s.level_watch), "
	INVENTORY_RESERVED_ONE_RECORDS("$6", "$1", "$2", "$10", "$3", "$7", "$5",
								   "$8", "$9", "FROM r")
	"SELECT s.slot, s.available, s.level_watch FROM s",
	10, {TEXTOID, TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID, INT8OID, TEXTOID,
	UUIDOID, JSONBOID, INT4OID}, NULL, true
};

typedef struct TakeRecorded
{
	Datum		values[10];
	bool		level_may_change;	/* out */
} TakeRecorded;

static bool
TakeRecordedWork(void *arg)
{
	TakeRecorded *t = (TakeRecorded *) arg;

	InventoryFaultPoint("slot_take");
	if (InventoryRun(&take_one_slot_recorded, t->values, NULL,
					 SPI_OK_SELECT) != 1)
		return false;
	t->level_may_change = LevelMayChange(COUNTER_AVAILABLE, COUNTER_RESERVED);
	return true;
}

/*
 * InventoryHoldOneRecorded
 *		0.6 on: holds line (its location set) of reservation id for tenant
 *		from one free slot that holds enough, as the fast path of
 *		HoldLines does (in a subtransaction, rolled back with any row lock
 *		when no free slot holds enough), and in the same statement writes
 *		the reservation's line, its transition NULL -> pending by actor and
 *		its reservation.reserved event (event_id, payload jsonb) unless the
 *		take may have changed the stock level (then the level is checked
 *		here and the caller records).  Returns INVENTORY_HOLD_NOT_TAKEN
 *		(nothing changed: the caller takes the usual path, which waits for
 *		a slot or locks them all), INVENTORY_HOLD_RECORDED or
 *		INVENTORY_HOLD_TAKEN (held, level checked, not recorded).
 */
InventoryHoldResult
InventoryHoldOneRecorded(const char *tenant, const InventoryLine *line,
						 TimestampTz now, int64 id, const char *actor,
						 Datum event_id, Datum payload)
{
	TakeRecorded t;

	Assert(slot_guards && line->location != NULL);
	t.values[0] = CStringGetTextDatum(tenant);
	t.values[1] = CStringGetTextDatum(line->sku);
	t.values[2] = CStringGetTextDatum(line->location);
	t.values[3] = Int64GetDatum((int64) line->quantity);
	t.values[4] = TimestampTzGetDatum(now);
	t.values[5] = Int64GetDatum(id);
	t.values[6] = CStringGetTextDatum(actor);
	t.values[7] = event_id;
	t.values[8] = payload;
	t.values[9] = Int32GetDatum(line->quantity);
	t.level_may_change = false;
	if (!InventorySubtransaction(TakeRecordedWork, &t))
		return INVENTORY_HOLD_NOT_TAKEN;
	if (!t.level_may_change)
		return INVENTORY_HOLD_RECORDED;
	{
		const char *sku = line->sku;
		const char *location = line->location;

		InventoryCheckLevels(1, &tenant, &sku, &location, now);
	}
	return INVENTORY_HOLD_TAKEN;
}

static bool
SlotHold(const char *tenant, const InventoryLines *lines, TimestampTz now)
{
	return HoldLines(&unlocated_layout, tenant, lines, now, false);
}

/*
 * InventoryHoldLocked
 *		0.5 on, after the exact allocation path: holds the planned lines
 *		(sorted, one per (sku, location)) as LocatedHold does, knowing that
 *		the caller locked every slot of their SKUs at every location
 *		(InventoryLockSellable), so that no fast-path move needs a
 *		subtransaction.  Returns false (nothing held) when a line does not
 *		fit, which a plan made under those locks never does.
 */
bool
InventoryHoldLocked(const char *tenant, const InventoryLines *lines,
					TimestampTz now)
{
	return HoldLines(&located_layout, tenant, lines, now, true);
}

static bool
LocatedHold(const char *tenant, const InventoryLines *lines, TimestampTz now)
{
	return HoldLines(&located_layout, tenant, lines, now, false);
}

/*
 * LocatedTryHold
 *		The first try of allocation (storage.h try_hold): each line from one
 *		free slot that holds enough, by the fast path's statement run in the
 *		caller's subtransaction; false at the first line not served so.
 */
static bool
LocatedTryHold(const char *tenant, const InventoryLines *lines,
			   TimestampTz now)
{
	LevelChecks checks;
	int			i;

	InitLevelChecks(&checks, lines->count);
	ShareRepeatedSkus(&located_layout, tenant, lines);
	for (i = 0; i < lines->count; i++)
	{
		TakeOne		t;

		InitTakeOne(&t, &located_layout, tenant, lines->items[i].sku,
					lines->items[i].location, lines->items[i].quantity,
					COUNTER_AVAILABLE, COUNTER_RESERVED, now);
		if (!TakeOneWork(&t))
			return false;
		if (t.level_may_change)
			AddLevelCheck(&checks, tenant, &lines->items[i]);
	}
	RunLevelChecks(&checks, now);
	return true;
}

static void
MoveLines(const SlotLayout *layout, const char *tenant,
		  const InventoryLines *lines, InventoryCounter from,
		  InventoryCounter to, TimestampTz now)
{
	LevelChecks checks;
	bool		check;
	int			i;

	InitLevelChecks(&checks, lines->count);
	ShareRepeatedSkus(layout, tenant, lines);
	for (i = 0; i < lines->count; i++)
	{
		if (SlotMove(layout, tenant, lines->items[i].sku,
					 lines->items[i].location, lines->items[i].quantity,
					 from, to, false, now, NULL, &check, false) != SLOT_MOVE_DONE)
			InventoryBrokenSku(tenant, lines->items[i].sku,
							   lines->items[i].quantity);
		if (check)
			AddLevelCheck(&checks, tenant, &lines->items[i]);
	}
	RunLevelChecks(&checks, now);
}

static void
SlotMoveLines(const char *tenant, const InventoryLines *lines,
			  InventoryCounter from, InventoryCounter to, TimestampTz now)
{
	MoveLines(&unlocated_layout, tenant, lines, from, to, now);
}

static void
LocatedMoveLines(const char *tenant, const InventoryLines *lines,
				 InventoryCounter from, InventoryCounter to, TimestampTz now)
{
	MoveLines(&located_layout, tenant, lines, from, to, now);
}

/*
 * Units per (tenant, sku) of the reservations $1, in lock order, with the
 * share locks of share_skus on the SKUs' catalog rows taken in the same
 * statement, in (tenant, sku) order: the next statement (lock_slots, a new
 * snapshot) sees every slot they have.
 */
static InventoryStatement units_of_reservations = {
	"units of expired reservations",
	"SELECT u.tenant::text, u.sku::text, NULL::text, u.qty "
	"FROM (SELECT l.tenant, l.sku, sum(l.quantity)::bigint AS qty "
	"FROM inventory.reservation_line l WHERE l.reservation_id = ANY ($1) "
	"GROUP BY l.tenant, l.sku) u "
	"JOIN inventory.sku k ON k.tenant = u.tenant AND k.sku = u.sku "
	"ORDER BY k.tenant, k.sku FOR SHARE OF k",
	1, {INT8ARRAYOID}, NULL, true
};

/* The same per (tenant, sku, location) (0.5) */
static InventoryStatement units_of_reservations_located = {
	"units of expired reservations",
	"SELECT u.tenant::text, u.sku::text, u.location::text, u.qty "
	"FROM (SELECT l.tenant, l.sku, l.location, sum(l.quantity)::bigint AS qty "
	"FROM inventory.reservation_line l WHERE l.reservation_id = ANY ($1) "
	"GROUP BY l.tenant, l.sku, l.location) u "
	"JOIN inventory.sku k ON k.tenant = u.tenant AND k.sku = u.sku "
	"ORDER BY k.tenant, k.sku, u.location FOR SHARE OF k",
	1, {INT8ARRAYOID}, NULL, true
};

/*
 * 0.5, Release's writes: apply_changes_located, returning per slot changed
 * whether its (sku, location) is stored in_stock.  Units that only enter
 * available leave such a level in_stock (as LevelMayChange says for the
 * fast path), so only the others need InventoryCheckLevels.  The level is
 * read by this statement, whose snapshot is taken with every slot of the
 * (sku, location) locked: every change of its slots, and the level its
 * maker stored, has committed before.
 */
static InventoryStatement release_changes_located = {
	"change stock slots",
	"UPDATE inventory.stock_slot s SET available = s.available + d.da, "
	"reserved = s.reserved + d.dr, consumed = s.consumed + d.dc, updated_at = $7 "
	"FROM unnest($1, $2, $8, $3, $4, $5, $6) "
	"AS d(tenant, sku, location, slot, da, dr, dc) "
	"LEFT JOIN inventory.stock_location l ON l.tenant = d.tenant "
	"AND l.sku = d.sku AND l.location = d.location "
	"WHERE s.tenant = d.tenant AND s.sku = d.sku AND s.location = d.location "
	"AND s.slot = d.slot RETURNING s.tenant::text, s.sku::text, s.location::text, "
	"COALESCE(l.level::text = 'in_stock', false)",
	8, {TEXTARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
	INT8ARRAYOID, TIMESTAMPTZOID, TEXTARRAYOID}
};

/*
 * ReleaseChanges
 *		0.5, Release's writes: applies changes (units entering available,
 *		of slots this transaction has locked) and recomputes the levels of
 *		the (sku, location) pairs not stored in_stock.
 */
static void
ReleaseChanges(const SlotChanges *changes, TimestampTz now)
{
	LevelChecks checks;
	uint64		n;
	uint64		i;

	if (changes->count == 0)
		return;
	n = RunChanges(&release_changes_located, changes, false, now,
				   SPI_OK_UPDATE_RETURNING);
	if (n != (uint64) changes->count)
		elog(ERROR, "pg_inventory: %d stock slots changed under their row locks",
			 changes->count);
	InitLevelChecks(&checks, (int) n);
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		if (DatumGetBool(InventoryResultDatum(i, 4, &isnull)))
			continue;
		checks.tenants[checks.count] = InventoryResultText(i, 1);
		checks.skus[checks.count] = InventoryResultText(i, 2);
		checks.locations[checks.count] = InventoryResultText(i, 3);
		checks.count++;
	}
	RunLevelChecks(&checks, now);
}

/*
 * SlotRelease
 *		Returns the units of the expired reservations ids from reserved to
 *		available: one statement reads their units per SKU (and location)
 *		and share-locks the SKUs in (tenant, sku) order, the next locks all
 *		their slots in (tenant, sku, location, slot) order, a third writes
 *		them (0.5: and says which levels may have changed).  The safety
 *		stock is not read: nothing is taken from available.
 */
static void
Release(const SlotLayout *layout, Datum ids, TimestampTz now)
{
	int			n = (int) InventoryRun(layout->units_of_reservations, &ids,
									   NULL, SPI_OK_SELECT);
	const char **tenants = palloc(sizeof(char *) * Max(n, 1));
	const char **skus = palloc(sizeof(char *) * Max(n, 1));
	const char **locations = palloc(sizeof(char *) * Max(n, 1));
	int64	   *qty = palloc(sizeof(int64) * Max(n, 1));
	SlotChanges planned = {0, 0, NULL};
	SlotRows	rows;
	int			first = 0;
	int			k;

	if (n == 0)
		return;
	for (k = 0; k < n; k++)
	{
		tenants[k] = InventoryResultText(k, 1);
		skus[k] = InventoryResultText(k, 2);
		locations[k] = InventoryResultText(k, 3);
		qty[k] = InventoryResultInt64(k, 4);
	}
	rows = LockSlotRows(layout, n, tenants, skus,
						layout == &located_layout ? locations : NULL,
						true, false);
	for (k = 0; k < n; k++)
	{
		int			last = first;

		while (last < rows.count &&
			   strcmp(rows.items[last].tenant, tenants[k]) == 0 &&
			   strcmp(rows.items[last].sku, skus[k]) == 0 &&
			   (locations[k] == NULL ||
				strcmp(rows.items[last].location, locations[k]) == 0))
			last++;
		if (!TakeGreedy(rows.items + first, last - first, qty[k],
						COUNTER_RESERVED, COUNTER_AVAILABLE, false, &planned))
			InventoryBrokenSku(tenants[k], skus[k], qty[k]);
		first = last;
	}
	if (layout != &located_layout)
	{
		ApplyChanges(layout, &planned, false, now);
		return;
	}
	ReleaseChanges(&planned, now);
}

static void
SlotRelease(Datum ids, TimestampTz now)
{
	Release(&unlocated_layout, ids, now);
}

static void
LocatedRelease(Datum ids, TimestampTz now)
{
	Release(&located_layout, ids, now);
}

/* Creates the tenant's SKU with slot 0; $3 clock */
static InventoryStatement ensure_sku = {
	"create SKU",
	"WITH k AS (INSERT INTO inventory.sku (tenant, sku, slots, created_at) "
	"VALUES ($1, $2, 1, $3) ON CONFLICT (tenant, sku) DO NOTHING "
	"RETURNING tenant, sku) "
	"INSERT INTO inventory.stock_slot (tenant, sku, slot, updated_at) "
	"SELECT k.tenant, k.sku, 0, $3 FROM k",
	3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}
};

static bool
SlotEnsureSku(const char *tenant, const char *sku, const char *location,
			  TimestampTz now)
{
	Datum		values[3];

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	values[2] = TimestampTzGetDatum(now);
	return InventoryRun(&ensure_sku, values, NULL, SPI_OK_INSERT) > 0;
}

/* 0.5: creates the tenant's SKU (one slot) if it is new; $3 clock */
static InventoryStatement ensure_sku_catalog = {
	"create SKU",
	"INSERT INTO inventory.sku (tenant, sku, slots, created_at) "
	"VALUES ($1, $2, 1, $3) ON CONFLICT (tenant, sku) DO NOTHING",
	3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}
};

/*
 * 0.5: creates the SKU's counters at location $4 if they are new, with as
 * many slots as the SKU has: the share lock on the SKU's catalog row waits
 * for a set_stock_slots in progress and reads the count it left.  $3 clock.
 */
#define ENSURE_SKU_LOCATION(columns, values) \
	"WITH k AS (SELECT k.slots FROM inventory.sku k " \
	"WHERE k.tenant = $1 AND k.sku = $2 FOR SHARE), " \
	"l AS (INSERT INTO inventory.stock_location (tenant, sku, location, created_at) " \
	"SELECT $1, $2, $4, $3 FROM k " \
	"ON CONFLICT (tenant, sku, location) DO NOTHING RETURNING tenant, sku, location) " \
	"INSERT INTO inventory.stock_slot (tenant, sku, location, slot, updated_at" columns ") " \
	"SELECT l.tenant, l.sku, l.location, g, $3" values " FROM l, k, " \
	"generate_series(0, k.slots - 1) AS g"

static InventoryStatement ensure_sku_location = {
	"create SKU at location",
	ENSURE_SKU_LOCATION("", ""),
	4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TEXTOID}
};

/*
 * 0.6: the same, the new slots with their guards: a new (sku, location)
 * has no safety stock (keep_units 0) and no level yet (level_watch NULL)
 */
static InventoryStatement ensure_sku_location_guarded = {
	"create SKU at location",
	ENSURE_SKU_LOCATION(", keep_units, level_watch", ", 0, NULL"),
	4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TEXTOID}
};

static bool
LocatedEnsureSku(const char *tenant, const char *sku, const char *location,
				 TimestampTz now)
{
	Datum		values[4];

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	values[2] = TimestampTzGetDatum(now);
	values[3] = CStringGetTextDatum(location);
	InventoryRun(&ensure_sku_catalog, values, NULL, SPI_OK_INSERT);
	return InventoryRun(slot_guards ? &ensure_sku_location_guarded :
						&ensure_sku_location, values, NULL, SPI_OK_INSERT) > 0;
}

/* What lock_sku returns and set_available takes */
typedef struct LockedSku
{
	const SlotLayout *layout;
	SlotRows	rows;
} LockedSku;

/*
 * Locks every slot of (tenant, sku) (at location, 0.5); the totals in
 * counts; NULL: unknown (there)
 */
static void *
LockSku(const SlotLayout *layout, const char *tenant, const char *sku,
		const char *location, int64 *counts)
{
	LockedSku  *locked = palloc(sizeof(LockedSku));
	int			i;
	int			k;

	locked->layout = layout;
	locked->rows = LockAllSlots(layout, 1, &tenant, &sku,
								layout == &located_layout ? &location : NULL);
	if (locked->rows.count == 0)
		return NULL;
	for (k = 0; k < INVENTORY_COUNTERS; k++)
		counts[k] = 0;
	for (i = 0; i < locked->rows.count; i++)
		for (k = 0; k < INVENTORY_COUNTERS; k++)
			counts[k] = AddSaturating(counts[k],
									  locked->rows.items[i].counter[k]);
	return locked;
}

static void *
SlotLockSku(const char *tenant, const char *sku, const char *location,
			int64 *counts)
{
	return LockSku(&unlocated_layout, tenant, sku, NULL, counts);
}

static void *
LocatedLockSku(const char *tenant, const char *sku, const char *location,
			   int64 *counts)
{
	if (location == NULL)
		elog(ERROR, "pg_inventory: stock is kept per location: name one");
	return LockSku(&located_layout, tenant, sku, location, counts);
}

/*
 * SetAvailableSpread
 *		Sets the available units of the nrows slot rows (one SKU at one
 *		location, locked) to total (at least 0), spread evenly over the
 *		first nkeep (the others get none).
 */
static void
SetAvailableSpread(const SlotLayout *layout, const SlotRow *rows, int nrows,
				   int nkeep, int64 total, TimestampTz now)
{
	SlotChanges planned = {0, 0, NULL};
	int			i;

	for (i = 0; i < nrows; i++)
	{
		int64		share = i >= nkeep ? 0 :
			total / nkeep + (i < total % nkeep ? 1 : 0);
		int64		d[INVENTORY_COUNTERS] = {0, 0, 0};

		if (share == rows[i].counter[COUNTER_AVAILABLE])
			continue;
		d[COUNTER_AVAILABLE] = share - rows[i].counter[COUNTER_AVAILABLE];
		AddChange(&planned, rows[i].tenant, rows[i].sku, rows[i].location,
				  rows[i].slot, d);
	}
	ApplyChanges(layout, &planned, false, now);
}

static void
SlotSetAvailable(void *locked, int64 available, TimestampTz now)
{
	LockedSku  *l = (LockedSku *) locked;

	SetAvailableSpread(l->layout, l->rows.items, l->rows.count,
					   l->rows.count, available, now);
}

/*
 * GatherIntoSlotZero
 *		Moves everything reserved and consumed of the slots from keep on
 *		(of the nrows slot rows of one SKU at one location) into the first,
 *		so those slots can be dropped once their available units are spread
 *		over the others.
 */
static void
GatherIntoSlotZero(const SlotLayout *layout, const SlotRow *rows, int nrows,
				   int keep, TimestampTz now)
{
	SlotChanges planned = {0, 0, NULL};
	int64		moved[INVENTORY_COUNTERS] = {0, 0, 0};
	int			i;

	for (i = keep; i < nrows; i++)
	{
		int64		d[INVENTORY_COUNTERS] = {0, 0, 0};

		d[COUNTER_RESERVED] = -rows[i].counter[COUNTER_RESERVED];
		d[COUNTER_CONSUMED] = -rows[i].counter[COUNTER_CONSUMED];
		moved[COUNTER_RESERVED] -= d[COUNTER_RESERVED];
		moved[COUNTER_CONSUMED] -= d[COUNTER_CONSUMED];
		if (d[COUNTER_RESERVED] != 0 || d[COUNTER_CONSUMED] != 0)
			AddChange(&planned, rows[i].tenant, rows[i].sku, rows[i].location,
					  rows[i].slot, d);
	}
	if (moved[COUNTER_RESERVED] != 0 || moved[COUNTER_CONSUMED] != 0)
		AddChange(&planned, rows[0].tenant, rows[0].sku, rows[0].location,
				  rows[0].slot, moved);
	ApplyChanges(layout, &planned, false, now);
}

/* Every SKU's slots are numbered 0 to slots - 1, as many as sku says */
static InventoryStatement check_slots = {
	"check slots",
	"SELECT k.tenant::text, k.sku::text, 'slots_match_sku'::text, "
	"format('sku says %s slots; stock_slot has %s rows numbered %s to %s', "
	"k.slots, count(s.slot), min(s.slot), max(s.slot)) "
	"FROM inventory.sku k LEFT JOIN inventory.stock_slot s "
	"ON s.tenant = k.tenant AND s.sku = k.sku "
	"GROUP BY k.tenant, k.sku, k.slots "
	"HAVING count(s.slot) <> k.slots OR min(s.slot) <> 0 "
	"OR max(s.slot) <> k.slots - 1 "
	"ORDER BY 1, 2",
	0, {InvalidOid}
};

/* 0.5: the same at every location the SKU is kept */
static InventoryStatement check_slots_located = {
	"check slots",
	"SELECT k.tenant::text, k.sku::text, 'slots_match_sku'::text, "
	"format('sku says %s slots; at location %s stock_slot has %s rows numbered %s to %s', "
	"k.slots, l.location, count(s.slot), min(s.slot), max(s.slot)) "
	"FROM inventory.sku k JOIN inventory.stock_location l "
	"ON l.tenant = k.tenant AND l.sku = k.sku "
	"LEFT JOIN inventory.stock_slot s "
	"ON s.tenant = l.tenant AND s.sku = l.sku AND s.location = l.location "
	"GROUP BY k.tenant, k.sku, k.slots, l.location "
	"HAVING count(s.slot) <> k.slots OR min(s.slot) <> 0 "
	"OR max(s.slot) <> k.slots - 1 "
	"ORDER BY 1, 2, l.location",
	0, {InvalidOid}
};

/* A SKU's totals over its slots (and locations), as numeric */
#define SLOT_COUNTS \
	"(SELECT k.tenant, k.sku, COALESCE(sum(s.available), 0) AS available, " \
	"COALESCE(sum(s.reserved), 0) AS reserved, COALESCE(sum(s.consumed), 0) AS consumed " \
	"FROM inventory.sku k LEFT JOIN inventory.stock_slot s " \
	"ON s.tenant = k.tenant AND s.sku = k.sku GROUP BY k.tenant, k.sku)"

const InventoryStorage InventorySlotStorage = {
	"slot",
	SlotEnsureSku,
	SlotHold,
	NULL,
	SlotMoveLines,
	SlotRelease,
	SlotLockSku,
	SlotSetAvailable,
	SLOT_COUNTS,
	&check_slots
};

const InventoryStorage InventoryLocatedStorage = {
	"located",
	LocatedEnsureSku,
	LocatedHold,
	LocatedTryHold,
	LocatedMoveLines,
	LocatedRelease,
	LocatedLockSku,
	SlotSetAvailable,
	SLOT_COUNTS,
	&check_slots_located
};

/*
 * InventoryLockSellable
 *		0.5, the allocation's exact read: locks every slot of the tenant's
 *		nskus SKUs at every location, in (tenant, sku, location, slot)
 *		order, and returns per (sku, location), in that order, the units
 *		reservations may take there (available beyond the safety stock, at
 *		least 0) in *stock.  The locks are held until the transaction ends.
 */
int
InventoryLockSellable(const char *tenant, int nskus, const char *const *skus,
					  InventorySellable **stock)
{
	const char **tenants = palloc(sizeof(char *) * Max(nskus, 1));
	const char **locations = palloc0(sizeof(char *) * Max(nskus, 1));
	SlotRows	rows;
	InventorySellable *out;
	int			n = 0;
	int			i;

	for (i = 0; i < nskus; i++)
		tenants[i] = tenant;
	rows = LockAllSlots(&located_layout, nskus, tenants, skus, locations);
	out = palloc(sizeof(InventorySellable) * Max(rows.count, 1));
	for (i = 0; i < rows.count; i++)
	{
		SlotRow    *r = &rows.items[i];

		if (n == 0 || strcmp(out[n - 1].sku, r->sku) != 0 ||
			strcmp(out[n - 1].location, r->location) != 0)
		{
			out[n].sku = r->sku;
			out[n].location = r->location;
			out[n].sellable = -r->keep;
			n++;
		}
		out[n - 1].sellable = AddSaturating(out[n - 1].sellable,
											r->counter[COUNTER_AVAILABLE]);
	}
	for (i = 0; i < n; i++)
		out[i].sellable = Max(out[i].sellable, 0);
	*stock = out;
	return n;
}

/*
 * Serialises set_stock_slots calls of one SKU.  FOR NO KEY UPDATE does not
 * conflict with the KEY SHARE locks of foreign key checks, so reservations
 * never wait for it.
 */
static InventoryStatement lock_sku_row = {
	"lock SKU for a slot change",
	"SELECT k.slots FROM inventory.sku k WHERE k.tenant = $1 AND k.sku = $2 "
	"FOR NO KEY UPDATE",
	2, {TEXTOID, TEXTOID}
};

/* empty slots $3 .. $4 - 1 of ($1, $2); $5 clock */
static InventoryStatement add_slots = {
	"add stock slots",
	"INSERT INTO inventory.stock_slot (tenant, sku, slot, updated_at) "
	"SELECT $1, $2, g, $5 FROM generate_series($3, $4 - 1) AS g",
	5, {TEXTOID, TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID}
};

/* 0.5: the same at every location of the SKU */
static InventoryStatement add_slots_located = {
	"add stock slots",
	"INSERT INTO inventory.stock_slot (tenant, sku, location, slot, updated_at) "
	"SELECT $1, $2, l.location, g, $5 FROM inventory.stock_location l, "
	"generate_series($3, $4 - 1) AS g WHERE l.tenant = $1 AND l.sku = $2",
	5, {TEXTOID, TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID}
};

/* slots $3 and above of ($1, $2) (at every location), emptied before */
static InventoryStatement drop_slots = {
	"drop stock slots",
	"DELETE FROM inventory.stock_slot s WHERE s.tenant = $1 AND s.sku = $2 "
	"AND s.slot >= $3 AND s.available = 0 AND s.reserved = 0 AND s.consumed = 0",
	3, {TEXTOID, TEXTOID, INT4OID}
};

static InventoryStatement set_slot_count = {
	"set slot count",
	"UPDATE inventory.sku k SET slots = $3 WHERE k.tenant = $1 AND k.sku = $2",
	3, {TEXTOID, TEXTOID, INT4OID}
};

static const SlotLayout unlocated_layout = {
	&apply_changes, &lock_slots, &units_of_reservations,
	&add_slots, &drop_slots
};

static const SlotLayout located_layout = {
	&apply_changes_located, &lock_slots_located,
	&units_of_reservations_located, &add_slots_located, &drop_slots
};

/*
 * inventory_set_stock_slots
 *		set_stock_slots(tenant text, sku text, slots integer) RETURNS integer
 *
 * Operator (0.3 on): splits the counters of the tenant's SKU over slots (1
 * to 256) stock slot rows (at each of its locations, 0.5), so that
 * concurrent reservations of a hot SKU take units from different rows.
 * Available units are spread evenly over the slots; when slots shrink, the
 * reserved and consumed units of the dropped slots move to slot 0.  The
 * SKU's totals do not change: no ledger record, no event; a new slot count
 * is audited (0.5: inventory.operator_audit).  Calling it with the current
 * count rebalances.  Returns the previous slot count.  Errors:
 * 22023, 42501 tenant not granted, IN002 unknown SKU.
 */
/*
 * The reason set_stock_slots writes in its audit row: NULL (none) but
 * while the expiry worker's automatic slotting calls it (worker.c)
 */
const char *inventory_slots_audit_reason = NULL;

Datum
inventory_set_stock_slots(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *sku = InventoryNameArg(fcinfo, 1, "sku", 0);
	int32		slots;
	int32		old;
	InventoryCall call;
	const SlotLayout *layout;
	TimestampTz now;
	Datum		values[5];
	bool		isnull;
	SlotRows	rows;
	int			first;
	int			dropped = 0;
	int			levels;
	const char **level_tenants;
	const char **level_skus;
	const char **level_locations;

	InventoryRequireArg(fcinfo, 2, "slots");
	slots = PG_GETARG_INT32(2);
	if (slots < 1 || slots > INVENTORY_SLOTS_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slots must be 1 to %d", INVENTORY_SLOTS_MAX),
				 errdetail("The value given is %d.", slots)));

	InventoryBeginCall(fcinfo, &call, tenant);
	layout = call.located ? &located_layout : &unlocated_layout;
	now = InventoryNow();
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	if (InventoryRun(&lock_sku_row, values, NULL, SPI_OK_SELECT) == 0)
		InventoryUnknownSku(tenant, sku, NULL);
	old = DatumGetInt32(InventoryResultDatum(0, 1, &isnull));
	if (slots > old)
	{
		values[2] = Int32GetDatum(old);
		values[3] = Int32GetDatum(slots);
		values[4] = TimestampTzGetDatum(now);
		InventoryRun(layout->add_slots, values, NULL, SPI_OK_INSERT);
		values[2] = Int32GetDatum(slots);
		InventoryRun(&set_slot_count, values, NULL, SPI_OK_UPDATE);
	}
	{
		const char *none = NULL;

		rows = LockAllSlots(layout, 1, (const char *const *) &tenant,
							(const char *const *) &sku,
							call.located ? &none : NULL);
	}
	/* location by location (one group before 0.5) */
	levels = 0;
	level_tenants = palloc(sizeof(char *) * Max(rows.count, 1));
	level_skus = palloc(sizeof(char *) * Max(rows.count, 1));
	level_locations = palloc(sizeof(char *) * Max(rows.count, 1));
	for (first = 0; first < rows.count;)
	{
		int			last = first + 1;
		int64		available = 0;
		int			i;

		if (call.located)
		{
			level_tenants[levels] = tenant;
			level_skus[levels] = sku;
			level_locations[levels++] = rows.items[first].location;
		}

		while (last < rows.count &&
			   (rows.items[first].location == NULL ||
				strcmp(rows.items[last].location,
					   rows.items[first].location) == 0))
			last++;
		if (slots < last - first)
		{
			GatherIntoSlotZero(layout, rows.items + first, last - first, slots,
							   now);
			dropped += last - first - slots;
		}
		for (i = first; i < last; i++)
			available += rows.items[i].counter[COUNTER_AVAILABLE];
		SetAvailableSpread(layout, rows.items + first, last - first, slots,
						   available, now);
		first = last;
	}
	if (slots < old)
	{
		values[2] = Int32GetDatum(slots);
		if (InventoryRun(layout->drop_slots, values, NULL, SPI_OK_DELETE) !=
			(uint64) dropped)
			elog(ERROR, "pg_inventory: slots of SKU \"%s\" were not emptied", sku);
		InventoryRun(&set_slot_count, values, NULL, SPI_OK_UPDATE);
	}
	/* 0.6: the guards follow the slot count (every slot is locked) */
	InventoryRefreshSlotGuards(tenant, sku);
	/*
	 * 0.5: every slot is locked, so the levels are read on exact totals: a
	 * crossing that a call on several slots could not see (README "Stock
	 * levels") is reported here at the latest
	 */
	InventoryCheckLevels(levels, level_tenants, level_skus, level_locations,
						 now);
	if (slots != old)
		InventoryAudit(&call, "set_stock_slots", tenant,
					   psprintf("{\"sku\": %s, \"old\": {\"slots\": %d}, \"new\": {\"slots\": %d}}",
								InventoryJsonText(sku), old, slots),
					   inventory_slots_audit_reason);
	InventoryEndCall(&call);
	PG_RETURN_INT32(old);
}
