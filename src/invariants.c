/*-------------------------------------------------------------------------
 *
 * src/invariants.c
 *		check_invariants: every broken invariant, read in one snapshot
 *		(README "check_invariants").
 *
 * The counts come from the storage as numeric (the slots of a SKU summed
 * without a cast), so a SKU whose counters would pass the bigint range when
 * added (which no call can make since 0.4, but an older version or a hand
 * repair could) is reported, never an error that hides the other tenants'
 * rows.
 *
 * A request key is held by one reservation of its tenant
 * (request_key_once): a unique constraint before 0.9, reserve's lock on the
 * key across the reservations' rings from 0.9 on, checked here.
 *
 * With retention (0.5 on, retention.c) the ledger is stock_ledger and
 * stock_ledger_archive, and the units of confirmed reservations are their
 * lines and the units of those purge_history removed (purged_confirmed);
 * each check reads them in one statement, so a concurrent archive_ledger
 * or purge_history (each one transaction) never makes a check inexact.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "funcapi.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "pg_inventory.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(inventory_check_invariants);

/*
 * The ledger records (tenant, sku[, location], delta) and the held units
 * (tenant, sku[, location], quantity, state pending or confirmed): before
 * 0.5 the ledger and the lines of pending and confirmed reservations;
 * from 0.5 on, with locations, also the ledger's archive and the units of
 * the confirmed reservations purge_history removed.
 */
#define LEDGER_ROWS "inventory.stock_ledger"
#define LEDGER_ROWS_LOCATED \
	"(SELECT a.tenant, a.sku, a.location, a.delta FROM inventory.stock_ledger a " \
	"UNION ALL SELECT b.tenant, b.sku, b.location, b.delta " \
	"FROM inventory.stock_ledger_archive b)"
#define HELD_ROWS \
	"(SELECT l.tenant, l.sku, l.quantity, r.state " \
	"FROM inventory.reservation_line l " \
	"JOIN inventory.reservation r ON r.id = l.reservation_id " \
	"WHERE r.state IN ('pending', 'confirmed'))"
#define HELD_ROWS_LOCATED \
	"(SELECT l.tenant, l.sku, l.location, l.quantity::bigint AS quantity, r.state " \
	"FROM inventory.reservation_line l " \
	"JOIN inventory.reservation r ON r.id = l.reservation_id " \
	"WHERE r.state IN ('pending', 'confirmed') " \
	"UNION ALL SELECT p.tenant, p.sku, p.location, p.quantity, 'confirmed' " \
	"FROM inventory.purged_confirmed p)"

/*
 * The checks of the counts of every SKU, read in one snapshot; the three
 * %s are the ledger rows, the held rows and the relation of the storage's
 * counts (numeric).
 */
#define CHECK_COUNTS \
	"WITH led AS (SELECT g.tenant, g.sku, sum(g.delta) AS net " \
	"FROM %s g GROUP BY g.tenant, g.sku), " \
	"held AS (SELECT h.tenant, h.sku, " \
	"sum(h.quantity) FILTER (WHERE h.state = 'pending') AS pending, " \
	"sum(h.quantity) FILTER (WHERE h.state = 'confirmed') AS confirmed " \
	"FROM %s h GROUP BY h.tenant, h.sku), " \
	"c AS (SELECT s.tenant::text AS tenant, s.sku::text AS sku, s.available, " \
	"s.reserved, s.consumed, s.available + s.reserved + s.consumed AS total, " \
	"COALESCE(led.net, 0) AS net, " \
	"COALESCE(held.pending, 0) AS pending, COALESCE(held.confirmed, 0) AS confirmed " \
	"FROM %s s " \
	"LEFT JOIN led ON led.tenant = s.tenant AND led.sku = s.sku " \
	"LEFT JOIN held ON held.tenant = s.tenant AND held.sku = s.sku), " \
	"logs AS (SELECT r.tenant::text AS tenant, r.id, r.request_key, r.version, " \
	"(SELECT count(*) FROM inventory.reservation_transition t " \
	"WHERE t.reservation_id = r.id) AS n " \
	"FROM inventory.reservation r) " \
	"SELECT c.tenant, c.sku, 'counts_match_ledger'::text, " \
	"format('available %%s + reserved %%s + consumed %%s = %%s, but the ledger nets %%s', " \
	"c.available, c.reserved, c.consumed, c.total, c.net) " \
	"FROM c WHERE c.total <> c.net " \
	"UNION ALL " \
	"SELECT c.tenant, c.sku, 'counts_in_range', " \
	"format('available %%s + reserved %%s + consumed %%s = %%s passes the bigint range', " \
	"c.available, c.reserved, c.consumed, c.total) " \
	"FROM c WHERE c.total > 9223372036854775807 OR c.available > 9223372036854775807 " \
	"OR c.reserved > 9223372036854775807 OR c.consumed > 9223372036854775807 " \
	"UNION ALL " \
	"SELECT c.tenant, c.sku, 'counts_nonnegative', " \
	"format('available %%s, reserved %%s, consumed %%s', c.available, c.reserved, c.consumed) " \
	"FROM c WHERE c.available < 0 OR c.reserved < 0 OR c.consumed < 0 " \
	"UNION ALL " \
	"SELECT c.tenant, c.sku, 'reserved_matches_pending', " \
	"format('reserved is %%s, but pending reservations hold %%s', c.reserved, c.pending) " \
	"FROM c WHERE c.reserved <> c.pending " \
	"UNION ALL " \
	"SELECT c.tenant, c.sku, 'consumed_matches_confirmed', " \
	"format('consumed is %%s, but confirmed reservations hold %%s', c.consumed, c.confirmed) " \
	"FROM c WHERE c.consumed <> c.confirmed " \
	"UNION ALL " \
	"SELECT logs.tenant, NULL, 'transition_log_matches_version', " \
	"format('reservation %%s (request key %%s) is at version %%s with %%s transition rows', " \
	"logs.id, logs.request_key, logs.version, logs.n) " \
	"FROM logs WHERE logs.n <> logs.version " \
	"UNION ALL " \
	"SELECT k.tenant::text, NULL, 'request_key_once', " \
	"format('request key %%s is held by %%s reservations (ids %%s)', " \
	"k.request_key, count(*), string_agg(k.id::text, ', ' ORDER BY k.id)) " \
	"FROM inventory.reservation k GROUP BY k.tenant, k.request_key " \
	"HAVING count(*) > 1 " \
	"ORDER BY 1, 2, 3, 4"

/*
 * LockRings
 *		0.9: takes reservation, reservation_line and reservation_transition
 *		and all their rings in ACCESS SHARE mode (waiting for a
 *		purge_history that holds one), for check_invariants to take its
 *		snapshot after them.  TRUNCATE is not MVCC-safe: a check reading
 *		with the snapshot of its calling query, taken before a purge
 *		committed, would find the truncated ring empty but not see the
 *		units the purge carried into purged_confirmed, and report
 *		consumed_matches_confirmed for a healthy database (found by the
 *		soak with a history purge).  At REPEATABLE READ the transaction's
 *		snapshot is the check's, and that can still happen (README).
 */
static void
LockRings(void)
{
	static const char *const tables[] = {
		"reservation", "reservation_line", "reservation_transition"
	};
	Oid			nsp = get_namespace_oid("inventory", false);
	int			i;

	for (i = 0; i < (int) lengthof(tables); i++)
	{
		Oid			rel = get_relname_relid(tables[i], nsp);

		if (!OidIsValid(rel))
			elog(ERROR, "pg_inventory: relation inventory.%s is missing", tables[i]);
		LockRelationOid(rel, AccessShareLock);
		list_free(find_all_inheritors(rel, AccessShareLock, NULL));
	}
}

/*
 * The counts check of one storage (each serves one schema generation, so
 * located, 0.5 on, goes with it), made on first use of that storage
 */
typedef struct CountsCheck
{
	const InventoryStorage *storage;
	InventoryStatement statement;
} CountsCheck;

static CountsCheck counts_checks[3];

static InventoryStatement *
CountsCheckOf(const InventoryStorage *storage, bool located)
{
	int			i;

	for (i = 0; i < (int) lengthof(counts_checks); i++)
	{
		CountsCheck *c = &counts_checks[i];

		if (c->storage == NULL)
		{
			c->storage = storage;
			c->statement.name = "check invariants";
			c->statement.sql = MemoryContextStrdup(TopMemoryContext,
												   psprintf(CHECK_COUNTS,
															located ? LEDGER_ROWS_LOCATED : LEDGER_ROWS,
															located ? HELD_ROWS_LOCATED : HELD_ROWS,
															storage->counts));
			c->statement.nargs = 0;
		}
		if (c->storage == storage)
			return &c->statement;
	}
	elog(ERROR, "pg_inventory: more storages than counts checks");
	return NULL;
}

/*
 * 0.5 on: the counts of every (sku, location), over its slots, against the
 * ledger records and the lines of pending and confirmed reservations at
 * that location; and no record or held line at a (sku, location) without
 * counters (or, for a line, without a location).  Numeric sums, one
 * snapshot.
 */
static InventoryStatement check_locations = {
	"check invariants per location",
	"WITH c AS (SELECT sl.tenant::text AS tenant, sl.sku::text AS sku, "
	"sl.location::text AS location, COALESCE(sum(s.available), 0) AS available, "
	"COALESCE(sum(s.reserved), 0) AS reserved, "
	"COALESCE(sum(s.consumed), 0) AS consumed "
	"FROM inventory.stock_location sl LEFT JOIN inventory.stock_slot s "
	"ON s.tenant = sl.tenant AND s.sku = sl.sku AND s.location = sl.location "
	"GROUP BY sl.tenant, sl.sku, sl.location), "
	"led AS (SELECT g.tenant::text AS tenant, g.sku::text AS sku, "
	"g.location::text AS location, sum(g.delta) AS net "
	"FROM " LEDGER_ROWS_LOCATED " g GROUP BY g.tenant, g.sku, g.location), "
	"held AS (SELECT h.tenant::text AS tenant, h.sku::text AS sku, "
	"h.location::text AS location, "
	"COALESCE(sum(h.quantity) FILTER (WHERE h.state = 'pending'), 0) AS pending, "
	"COALESCE(sum(h.quantity) FILTER (WHERE h.state = 'confirmed'), 0) AS confirmed "
	"FROM " HELD_ROWS_LOCATED " h GROUP BY h.tenant, h.sku, h.location), "
	"k AS (SELECT c.tenant, c.sku, c.location FROM c "
	"UNION SELECT led.tenant, led.sku, led.location FROM led "
	"UNION SELECT held.tenant, held.sku, held.location FROM held), "
	"x AS (SELECT k.tenant, k.sku, k.location, c.tenant IS NOT NULL AS stocked, "
	"COALESCE(c.available, 0) AS available, COALESCE(c.reserved, 0) AS reserved, "
	"COALESCE(c.consumed, 0) AS consumed, "
	"COALESCE(c.available + c.reserved + c.consumed, 0) AS total, "
	"COALESCE(led.net, 0) AS net, COALESCE(held.pending, 0) AS pending, "
	"COALESCE(held.confirmed, 0) AS confirmed, "
	"led.tenant IS NOT NULL AS recorded, held.tenant IS NOT NULL AS holding "
	"FROM k LEFT JOIN c ON c.tenant = k.tenant AND c.sku = k.sku "
	"AND c.location = k.location "
	"LEFT JOIN led ON led.tenant = k.tenant AND led.sku = k.sku "
	"AND led.location = k.location "
	"LEFT JOIN held ON held.tenant = k.tenant AND held.sku = k.sku "
	"AND held.location IS NOT DISTINCT FROM k.location) "
	"SELECT x.tenant, x.sku, 'location_counts_match_ledger'::text, "
	"format('at location \"%s\": available %s + reserved %s + consumed %s = %s, "
	"but the ledger there nets %s', "
	"x.location, x.available, x.reserved, x.consumed, x.total, x.net) "
	"FROM x WHERE x.stocked AND x.total <> x.net "
	"UNION ALL "
	"SELECT x.tenant, x.sku, 'location_reserved_matches_pending', "
	"format('at location \"%s\": reserved is %s, but pending reservations hold %s there', "
	"x.location, x.reserved, x.pending) "
	"FROM x WHERE x.stocked AND x.reserved <> x.pending "
	"UNION ALL "
	"SELECT x.tenant, x.sku, 'location_consumed_matches_confirmed', "
	"format('at location \"%s\": consumed is %s, but confirmed reservations hold %s there', "
	"x.location, x.consumed, x.confirmed) "
	"FROM x WHERE x.stocked AND x.consumed <> x.confirmed "
	"UNION ALL "
	"SELECT x.tenant, x.sku, 'location_stocked', "
	"CASE WHEN x.location IS NULL "
	"THEN format('pending or confirmed reservations hold %s units at no location', "
	"x.pending + x.confirmed) "
	"ELSE format('location \"%s\" has no counters of the SKU, but %s', x.location, "
	"concat_ws(' and ', CASE WHEN x.recorded THEN format('the ledger there nets %s', x.net) END, "
	"CASE WHEN x.holding THEN format('reservations hold %s units there', "
	"x.pending + x.confirmed) END)) END "
	"FROM x WHERE NOT x.stocked "
	"ORDER BY 1, 2, 3, 4",
	0, {InvalidOid}
};

/*
 * 0.6: slot_guards_match_policy: each slot's keep_units and level_watch are
 * what its (sku, location)'s safety stock, low threshold and level and the
 * SKU's slot count give (inventory.slot_keep_units, slot_level_watch): a
 * wrong guard could let the fast path take the safety stock or miss a
 * level crossing.
 */
static InventoryStatement check_slot_guards = {
	"check slot guards",
	"SELECT s.tenant::text, s.sku::text, 'slot_guards_match_policy', "
	"format('slot %s at location \"%s\": keep_units %s and level_watch %s, "
	"but safety_stock %s, low_threshold %s, level %s and %s slots give %s and %s', "
	"s.slot, s.location, COALESCE(s.keep_units::text, 'NULL'), "
	"COALESCE(s.level_watch::text, 'NULL'), l.safety_stock, "
	"COALESCE(l.low_threshold::text, 'NULL'), COALESCE(l.level, 'NULL'), k.slots, "
	"COALESCE(inventory.slot_keep_units(k.slots, l.safety_stock)::text, 'NULL'), "
	"COALESCE(inventory.slot_level_watch(k.slots, l.safety_stock, l.low_threshold, "
	"l.level)::text, 'NULL')) "
	"FROM inventory.stock_slot s "
	"JOIN inventory.stock_location l ON l.tenant = s.tenant AND l.sku = s.sku "
	"AND l.location = s.location "
	"JOIN inventory.sku k ON k.tenant = s.tenant AND k.sku = s.sku "
	"WHERE (s.keep_units, s.level_watch) IS DISTINCT FROM "
	"(inventory.slot_keep_units(k.slots, l.safety_stock), "
	"inventory.slot_level_watch(k.slots, l.safety_stock, l.low_threshold, l.level)) "
	"ORDER BY s.tenant COLLATE \"C\", s.sku COLLATE \"C\", s.location COLLATE \"C\", s.slot",
	0, {InvalidOid}
};

/* Runs a read-only check and appends its rows to the result set. */
static void
EmitCheckRows(ReturnSetInfo *rsinfo, InventoryStatement *check)
{
	uint64		n = InventoryRunReadOnly(check, NULL, NULL);
	uint64		i;

	for (i = 0; i < n; i++)
	{
		Datum		values[4];
		bool		nulls[4];
		int			col;

		for (col = 0; col < 4; col++)
			values[col] = InventoryResultDatum(i, col + 1, &nulls[col]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * inventory_check_invariants
 *		check_invariants() RETURNS TABLE(tenant text, sku text,
 *										 check_name text, detail text)
 *
 * One row per broken invariant, read in one snapshot; no rows when
 * healthy.  Checks: counts_match_ledger (available + reserved + consumed =
 * net received), counts_in_range (that total fits a bigint),
 * counts_nonnegative, reserved_matches_pending, consumed_matches_confirmed,
 * transition_log_matches_version (one log row per version), and with slots
 * (0.3 on) slots_match_sku (slots numbered 0 to slots - 1).  With
 * locations (0.5 on) the checks above stay per SKU (sums over its
 * locations) and these hold per (sku, location):
 * location_counts_match_ledger (available + reserved + consumed there =
 * the ledger's net there), location_reserved_matches_pending,
 * location_consumed_matches_confirmed (the lines held there), and
 * location_stocked (no ledger record or held line at a location where the
 * SKU has no counters, nor a held line at no location).  With locations
 * the ledger is stock_ledger with stock_ledger_archive, and the confirmed
 * units include those of reservations purge_history removed.  0.6 adds
 * slot_guards_match_policy (each slot's keep_units and level_watch).
 */
Datum
inventory_check_invariants(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InventoryCall call;
	bool		own_snapshot = false;

	InitMaterializedSRF(fcinfo, 0);
	InventoryBeginCall(fcinfo, &call, NULL);
	if (call.ringed && !IsolationUsesXactSnapshot())
	{
		LockRings();
		PushActiveSnapshot(GetTransactionSnapshot());
		own_snapshot = true;
	}
	EmitCheckRows(rsinfo, CountsCheckOf(call.storage, call.located));
	if (call.storage->check != NULL)
		EmitCheckRows(rsinfo, call.storage->check);
	if (call.located)
		EmitCheckRows(rsinfo, &check_locations);
	if (call.guarded)
		EmitCheckRows(rsinfo, &check_slot_guards);
	if (own_snapshot)
		PopActiveSnapshot();
	InventoryEndCall(&call);
	return (Datum) 0;
}
