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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/memutils.h"

#include "pg_inventory.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(inventory_check_invariants);

/*
 * The checks of the counts of every SKU of relation %s (the storage's
 * counts, numeric), read in one snapshot.
 */
#define CHECK_COUNTS \
	"WITH led AS (SELECT g.tenant, g.sku, sum(g.delta) AS net " \
	"FROM inventory.stock_ledger g GROUP BY g.tenant, g.sku), " \
	"held AS (SELECT l.tenant, l.sku, " \
	"sum(l.quantity) FILTER (WHERE r.state = 'pending') AS pending, " \
	"sum(l.quantity) FILTER (WHERE r.state = 'confirmed') AS confirmed " \
	"FROM inventory.reservation_line l " \
	"JOIN inventory.reservation r ON r.id = l.reservation_id " \
	"WHERE r.state IN ('pending', 'confirmed') GROUP BY l.tenant, l.sku), " \
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
	"ORDER BY 1, 2, 3, 4"

/* The counts check of one storage, made on first use of that storage */
typedef struct CountsCheck
{
	const InventoryStorage *storage;
	InventoryStatement statement;
} CountsCheck;

static CountsCheck counts_checks[2];

static InventoryStatement *
CountsCheckOf(const InventoryStorage *storage)
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
												   psprintf(CHECK_COUNTS, storage->counts));
			c->statement.nargs = 0;
		}
		if (c->storage == storage)
			return &c->statement;
	}
	elog(ERROR, "pg_inventory: more storages than counts checks");
	return NULL;
}

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
 * (0.3 on) slots_match_sku (slots numbered 0 to slots - 1).
 */
Datum
inventory_check_invariants(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InventoryCall call;

	InitMaterializedSRF(fcinfo, 0);
	InventoryBeginCall(fcinfo, &call, NULL);
	EmitCheckRows(rsinfo, CountsCheckOf(call.storage));
	if (call.storage->check != NULL)
		EmitCheckRows(rsinfo, call.storage->check);
	InventoryEndCall(&call);
	return (Datum) 0;
}
