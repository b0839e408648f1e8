/*-------------------------------------------------------------------------
 *
 * src/slots.c
 *		Slotted stock (version 0.3): a SKU's counters are split over slots,
 *		rows of inventory.stock_slot, so that concurrent reservations of a
 *		hot SKU take units from different rows instead of queueing on one.
 *
 * Moving units (available -> reserved on reserve, reserved -> consumed on
 * confirm, ...) first tries one slot that holds enough, taken with SKIP
 * LOCKED: concurrent callers spread over the slots and never wait there
 * (PLAN_SLOT_TAKE_ONE).  When no free slot holds enough, it falls back to
 * locking every slot of the SKU in slot order and taking from several
 * (greedy, lowest slot first); a reservation taken this way also spreads the
 * SKU's available units evenly over its slots again (rebalancing as slots
 * drain).  Per slot, as per SKU, no counter goes negative (CHECK), so the
 * SKU's totals, the sums in the view inventory.stock, obey the contract.
 *
 * Lock order (see pg_inventory.h): stock slot rows come after the
 * reservation row, SKU by SKU in (tenant, sku) order, and within a SKU
 * either one slot taken with SKIP LOCKED (never waits) or a share lock on
 * the SKU's catalog row and then all slots in slot order.  set_stock_slots
 * takes the catalog row (FOR NO KEY UPDATE) before the slots.  Within one call, a caller that holds a slot of a SKU never waits
 * for a slot of the same or a lower SKU, so no two calls deadlock.  A
 * transaction that makes several calls on one slotted SKU can: its first
 * call may hold slot 1 while another's holds slot 0, and both then fall
 * back to all slots; such a caller retries 40P01, as with any transaction
 * that touches rows in an order of its own.
 *
 * Schemas before 0.3 have the table inventory.stock instead; the callers
 * ask InventorySlotted() and keep their single-row statements for them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"

#include "pg_inventory.h"
#include "plans.h"

/* One locked slot row as read */
typedef struct SlotRow
{
	char	   *tenant;
	char	   *sku;
	int32		slot;
	int64		counter[3];		/* indexed by InventoryCounter */
} SlotRow;

/*
 * InventorySlotted
 *		Whether the installed schema has slotted stock (0.3 and later).  Two
 *		syscache lookups per call: cheap, and right across ALTER EXTENSION.
 */
bool
InventorySlotted(void)
{
	Oid			nsp = get_namespace_oid("inventory", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid("stock_slot", nsp));
}

/* Appends one change of one slot to changes. */
static void
AddChange(InventorySlotChanges *changes, const char *tenant, const char *sku,
		  int32 slot, int64 da, int64 dr, int64 dc)
{
	InventorySlotChange *c;

	if (changes->count == changes->capacity)
	{
		changes->capacity = Max(8, changes->capacity * 2);
		changes->items = changes->items == NULL ?
			palloc(sizeof(InventorySlotChange) * changes->capacity) :
			repalloc(changes->items, sizeof(InventorySlotChange) * changes->capacity);
	}
	c = &changes->items[changes->count++];
	c->tenant = pstrdup(tenant);
	c->sku = pstrdup(sku);
	c->slot = slot;
	c->delta[COUNTER_AVAILABLE] = da;
	c->delta[COUNTER_RESERVED] = dr;
	c->delta[COUNTER_CONSUMED] = dc;
}

/*
 * ApplyChanges
 *		Writes changes (of slots this transaction has locked) in one
 *		statement; with negate, writes their opposite (an undo).
 */
static void
ApplyChanges(const InventorySlotChanges *changes, bool negate, TimestampTz now)
{
	int			n = changes->count;
	Datum	   *tenants;
	Datum	   *skus;
	Datum	   *slots;
	Datum	   *deltas[3];
	Datum		values[7];
	int			i;
	int			k;

	if (n == 0)
		return;
	tenants = palloc(sizeof(Datum) * n);
	skus = palloc(sizeof(Datum) * n);
	slots = palloc(sizeof(Datum) * n);
	for (k = 0; k < 3; k++)
		deltas[k] = palloc(sizeof(Datum) * n);
	for (i = 0; i < n; i++)
	{
		tenants[i] = CStringGetTextDatum(changes->items[i].tenant);
		skus[i] = CStringGetTextDatum(changes->items[i].sku);
		slots[i] = Int32GetDatum(changes->items[i].slot);
		for (k = 0; k < 3; k++)
			deltas[k][i] = Int64GetDatum(negate ? -changes->items[i].delta[k] :
										 changes->items[i].delta[k]);
	}
	values[0] = PointerGetDatum(construct_array(tenants, n, TEXTOID, -1, false, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_array(skus, n, TEXTOID, -1, false, TYPALIGN_INT));
	values[2] = PointerGetDatum(construct_array(slots, n, INT4OID, 4, true, TYPALIGN_INT));
	for (k = 0; k < 3; k++)
		values[3 + k] = PointerGetDatum(construct_array(deltas[k], n, INT8OID, 8,
														FLOAT8PASSBYVAL,
														TYPALIGN_DOUBLE));
	values[6] = TimestampTzGetDatum(now);
	if (InventoryExec(PLAN_SLOT_APPLY, values, NULL, false, SPI_OK_UPDATE) != (uint64) n)
		elog(ERROR, "pg_inventory: %d stock slots changed under their row locks", n);
}

/*
 * LockAllSlots
 *		Locks every slot of the n SKUs (tenants[i], skus[i]; distinct pairs)
 *		in (tenant, sku, slot) order and returns them in that order.
 *
 * First a statement share-locks the SKUs' catalog rows, in the same order:
 * that waits for a set_stock_slots in progress and keeps others out until
 * commit.  At READ COMMITTED each statement reads its own snapshot, so the
 * second statement, which locks the slots, sees every slot the SKUs have.
 * (Locking the slots alone would miss slots that a set_stock_slots it
 * waited for had added.)
 */
static int
LockAllSlots(int n, const char *const *tenants, const char *const *skus,
			 SlotRow **rows)
{
	Datum	   *t = palloc(sizeof(Datum) * n);
	Datum	   *s = palloc(sizeof(Datum) * n);
	Datum		values[2];
	uint64		nrows;
	uint64		i;
	int			k;
	bool		isnull;

	for (k = 0; k < n; k++)
	{
		t[k] = CStringGetTextDatum(tenants[k]);
		s[k] = CStringGetTextDatum(skus[k]);
	}
	values[0] = PointerGetDatum(construct_array(t, n, TEXTOID, -1, false, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_array(s, n, TEXTOID, -1, false, TYPALIGN_INT));
	InventoryExec(PLAN_SKU_SHARE, values, NULL, false, SPI_OK_SELECT);
	nrows = InventoryExec(PLAN_SLOT_LOCK_ALL, values, NULL, false, SPI_OK_SELECT);
	*rows = palloc(sizeof(SlotRow) * Max(nrows, 1));
	for (i = 0; i < nrows; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		(*rows)[i].tenant = SPI_getvalue(tup, desc, 1);
		(*rows)[i].sku = SPI_getvalue(tup, desc, 2);
		(*rows)[i].slot = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		for (k = 0; k < 3; k++)
			(*rows)[i].counter[k] = DatumGetInt64(SPI_getbinval(tup, desc, 4 + k, &isnull));
	}
	return (int) nrows;
}

/*
 * TakeGreedy
 *		Plans moving qty units from counter "from" to counter "to" over the
 *		nrows locked slots of one SKU, lowest slot first, into changes;
 *		with rebalance, also spreads the SKU's available units evenly over
 *		its slots.  Returns false (planning nothing) when the slots hold
 *		fewer than qty units in "from".
 */
static bool
TakeGreedy(SlotRow *rows, int nrows, int64 qty, InventoryCounter from,
		   InventoryCounter to, bool rebalance, InventorySlotChanges *changes)
{
	int64	   *take = palloc0(sizeof(int64) * nrows);
	int64		total = 0;
	int64		remaining = qty;
	int64		available = 0;
	int			i;

	for (i = 0; i < nrows; i++)
		total += rows[i].counter[from];
	if (total < qty)
		return false;
	for (i = 0; i < nrows && remaining > 0; i++)
	{
		take[i] = Min(rows[i].counter[from], remaining);
		remaining -= take[i];
	}
	for (i = 0; i < nrows; i++)
		available += rows[i].counter[COUNTER_AVAILABLE] +
			(from == COUNTER_AVAILABLE ? -take[i] : 0) +
			(to == COUNTER_AVAILABLE ? take[i] : 0);
	for (i = 0; i < nrows; i++)
	{
		int64		d[3] = {0, 0, 0};

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
			AddChange(changes, rows[i].tenant, rows[i].sku, rows[i].slot,
					  d[0], d[1], d[2]);
	}
	return true;
}

/*
 * TakeOneSlot
 *		Runs PLAN_SLOT_TAKE_ONE with values in a subtransaction.  When no
 *		free slot holds enough, the subtransaction is rolled back, and with
 *		it any row lock the statement took: SKIP LOCKED may lock a slot that
 *		a concurrent commit just emptied (its recheck then fails, but the lock
 *		stays), and a caller that kept such a lock while falling back to
 *		locking all slots in slot order would hold a slot out of order and
 *		could deadlock with another fallback.  Returns whether a slot was
 *		taken, and which in *slot.
 */
static bool
TakeOneSlot(Datum *values, int32 *slot)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		taken;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	taken = InventoryExec(PLAN_SLOT_TAKE_ONE, values, NULL, false,
						  SPI_OK_UPDATE_RETURNING) == 1;
	if (taken)
	{
		bool		isnull;

		*slot = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
		ReleaseCurrentSubTransaction();
	}
	else
		RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return taken;
}

/*
 * InventorySlotMove
 *		Moves qty units (at least 1) of (tenant, sku) from counter "from" to
 *		counter "to": one free slot that holds enough if there is one,
 *		else all slots locked in order (and, with rebalance, available spread
 *		evenly again).  The changes made are appended to done (if not NULL),
 *		so that a caller can undo them.
 *
 * Returns SLOT_MOVE_DONE, SLOT_MOVE_SHORT (the SKU holds fewer than qty
 * units in "from"; nothing changed) or SLOT_MOVE_UNKNOWN (no such SKU).
 */
InventorySlotMoveResult
InventorySlotMove(const char *tenant, const char *sku, int64 qty,
				  InventoryCounter from, InventoryCounter to, bool rebalance,
				  TimestampTz now, InventorySlotChanges *done)
{
	int64		d[3] = {0, 0, 0};
	Datum		values[8];
	InventorySlotChanges planned = {0, 0, NULL};
	SlotRow    *rows;
	int			nrows;
	int			i;
	int32		slot;

	d[from] -= qty;
	if (to != COUNTER_NONE)
		d[to] += qty;
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	values[2] = Int32GetDatum((int32) from);
	values[3] = Int64GetDatum(qty);
	values[4] = Int64GetDatum(d[COUNTER_AVAILABLE]);
	values[5] = Int64GetDatum(d[COUNTER_RESERVED]);
	values[6] = Int64GetDatum(d[COUNTER_CONSUMED]);
	values[7] = TimestampTzGetDatum(now);
	if (TakeOneSlot(values, &slot))
	{
		if (done != NULL)
			AddChange(done, tenant, sku, slot, d[0], d[1], d[2]);
		return SLOT_MOVE_DONE;
	}

	/* fallback: every slot of the SKU, locked in slot order */
	nrows = LockAllSlots(1, &tenant, &sku, &rows);
	if (nrows == 0)
		return SLOT_MOVE_UNKNOWN;
	if (!TakeGreedy(rows, nrows, qty, from, to, rebalance, &planned))
		return SLOT_MOVE_SHORT;
	ApplyChanges(&planned, false, now);
	if (done != NULL)
		for (i = 0; i < planned.count; i++)
			AddChange(done, planned.items[i].tenant, planned.items[i].sku,
					  planned.items[i].slot, planned.items[i].delta[0],
					  planned.items[i].delta[1], planned.items[i].delta[2]);
	return SLOT_MOVE_DONE;
}

/* Undoes changes made by InventorySlotMove (slots still locked). */
void
InventorySlotUndo(const InventorySlotChanges *changes, TimestampTz now)
{
	ApplyChanges(changes, true, now);
}

/*
 * InventorySlotMoveBatch
 *		Moves qty[i] units of (tenants[i], skus[i]) (distinct pairs, in
 *		(tenant, sku) order) from "from" to "to", locking all their slots in
 *		one statement and writing in one more: expire_due's release.  The
 *		units must be there (they are held by the reservations being
 *		expired); anything else is a defect (XX000).
 */
void
InventorySlotMoveBatch(int n, const char *const *tenants,
					   const char *const *skus, const int64 *qty,
					   InventoryCounter from, InventoryCounter to,
					   TimestampTz now)
{
	InventorySlotChanges planned = {0, 0, NULL};
	SlotRow    *rows;
	int			nrows;
	int			first = 0;
	int			k;

	if (n == 0)
		return;
	nrows = LockAllSlots(n, tenants, skus, &rows);
	for (k = 0; k < n; k++)
	{
		int			last = first;

		while (last < nrows && strcmp(rows[last].tenant, tenants[k]) == 0 &&
			   strcmp(rows[last].sku, skus[k]) == 0)
			last++;
		if (!TakeGreedy(rows + first, last - first, qty[k], from, to, false,
						&planned))
			elog(ERROR, "pg_inventory: SKU \"%s\" of tenant \"%s\" holds fewer than "
				 INT64_FORMAT " units to move", skus[k], tenants[k], qty[k]);
		first = last;
	}
	ApplyChanges(&planned, false, now);
}

/*
 * InventorySlotLockSku
 *		Locks every slot of (tenant, sku) in slot order and returns how many
 *		there are (0: no such SKU), with the SKU's totals in totals[] (by
 *		InventoryCounter).  The lock is kept for InventorySlotSetAvailable.
 */
int
InventorySlotLockSku(const char *tenant, const char *sku, int64 *totals,
					 void **state)
{
	SlotRow    *rows;
	int			nrows = LockAllSlots(1, &tenant, &sku, &rows);
	int			i;
	int			k;

	for (k = 0; k < 3; k++)
		totals[k] = 0;
	for (i = 0; i < nrows; i++)
		for (k = 0; k < 3; k++)
			totals[k] += rows[i].counter[k];
	*state = rows;
	return nrows;
}

/*
 * InventorySlotSetAvailable
 *		Sets the SKU's available units to new_total (at least 0), spread
 *		evenly over its first nkeep slots (the others get none), of the
 *		nrows slots locked by InventorySlotLockSku: restock, adjust and
 *		set_stock_slots.
 */
void
InventorySlotSetAvailable(void *state, int nrows, int nkeep, int64 new_total,
						  TimestampTz now)
{
	SlotRow    *rows = (SlotRow *) state;
	InventorySlotChanges planned = {0, 0, NULL};
	int			i;

	for (i = 0; i < nrows; i++)
	{
		int64		share = i >= nkeep ? 0 :
			new_total / nkeep + (i < new_total % nkeep ? 1 : 0);

		if (share != rows[i].counter[COUNTER_AVAILABLE])
			AddChange(&planned, rows[i].tenant, rows[i].sku, rows[i].slot,
					  share - rows[i].counter[COUNTER_AVAILABLE], 0, 0);
	}
	ApplyChanges(&planned, false, now);
}

/*
 * InventorySlotGather
 *		Moves everything reserved and consumed of the slots from keep on
 *		into slot 0 (locked by InventorySlotLockSku), so those slots can be
 *		dropped once their available units are spread over the others.
 */
void
InventorySlotGather(void *state, int nrows, int keep, TimestampTz now)
{
	SlotRow    *rows = (SlotRow *) state;
	InventorySlotChanges planned = {0, 0, NULL};
	int64		reserved = 0;
	int64		consumed = 0;
	int			i;

	for (i = keep; i < nrows; i++)
	{
		reserved += rows[i].counter[COUNTER_RESERVED];
		consumed += rows[i].counter[COUNTER_CONSUMED];
		if (rows[i].counter[COUNTER_RESERVED] != 0 ||
			rows[i].counter[COUNTER_CONSUMED] != 0)
			AddChange(&planned, rows[i].tenant, rows[i].sku, rows[i].slot, 0,
					  -rows[i].counter[COUNTER_RESERVED],
					  -rows[i].counter[COUNTER_CONSUMED]);
	}
	if (reserved != 0 || consumed != 0)
		AddChange(&planned, rows[0].tenant, rows[0].sku, rows[0].slot, 0,
				  reserved, consumed);
	ApplyChanges(&planned, false, now);
}
