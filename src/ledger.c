/*-------------------------------------------------------------------------
 *
 * src/ledger.c
 *		The stock ledger: restock (receipts) and adjust (returns, losses,
 *		corrections), each one ledger record, one change of available and
 *		one stock event (README "restock", "adjust").
 *
 * A change locks the SKU's counters first (storage lock_sku), then looks
 * up its request key in the ledger (its own namespace, apart from
 * reservation keys): under the lock a concurrent call with the same key
 * and SKU has either committed (replay) or not started.
 *
 * Arithmetic never overflows: a change that would bring available, or the
 * SKU's total available + reserved + consumed (which equals the ledger sum,
 * the invariant), outside the bigint range raises 22003 and changes
 * nothing, so no later call (a cancel, expire_due, check_invariants) can
 * meet a sum it cannot compute.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "utils/builtins.h"

#include "inventory_errcodes.h"
#include "pg_inventory.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(inventory_restock);
PG_FUNCTION_INFO_V1(inventory_adjust);

/* $1 tenant, $2 key */
static InventoryStatement fetch_record = {
	"fetch ledger record",
	"SELECT g.sku::text, g.kind, g.delta, g.available_after "
	"FROM inventory.stock_ledger g WHERE g.tenant = $1 AND g.request_key = $2",
	2, {TEXTOID, TEXTOID}
};

/*
 * The ledger record and the stock event of a change whose counters the
 * caller already set; $7 is available after it.  No row returned: the key
 * was taken meanwhile by a call for another SKU (IN001).  $1 tenant, $2
 * sku, $3 key, $4 kind, $5 delta, $6 reason, $8 actor, $9 clock.
 */
static InventoryStatement write_record = {
	"write ledger record and stock event",
	"WITH g AS (INSERT INTO inventory.stock_ledger (tenant, sku, request_key, kind, "
	"delta, reason, available_after, actor, created_at) "
	"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
	"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING available_after), "
	"e AS (SELECT gen_random_uuid() AS event_id), "
	"o AS (INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, "
	"CASE WHEN $4 = 'receipt' THEN 'stock.restocked' ELSE 'stock.adjusted' END, "
	"$1, NULL, jsonb_build_object('event_id', e.event_id, 'event_type', "
	"CASE WHEN $4 = 'receipt' THEN 'stock.restocked' ELSE 'stock.adjusted' END, "
	"'tenant', $1, 'sku', $2, 'request_key', $3, 'kind', $4, 'delta', $5, "
	"'available', g.available_after, 'reason', $6, "
	"'occurred_at', to_char($9 AT TIME ZONE 'UTC', "
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')), $9 FROM g, e) "
	"SELECT g.available_after FROM g",
	9, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, INT8OID, TEXTOID,
	TIMESTAMPTZOID}
};

/* Raises 22003: the change would pass the bigint range. */
static void
OutOfRange(const char *sku, const char *what, const int64 *counts, int64 delta)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%s of SKU \"%s\" would pass the bigint range", what, sku),
			 errdetail("Available is " INT64_FORMAT ", reserved " INT64_FORMAT
					   ", consumed " INT64_FORMAT "; the change is " INT64_FORMAT ".",
					   counts[COUNTER_AVAILABLE], counts[COUNTER_RESERVED],
					   counts[COUNTER_CONSUMED], delta),
			 errhint("No SKU may hold more than 9223372036854775807 units in all.")));
}

/*
 * LedgerChange
 *		Applies one receipt or adjustment of delta units to available of
 *		(tenant, sku), idempotent on (tenant, key).  Returns available after
 *		it, or the value stored with the record on a replay.
 *
 * Errors: IN002 unknown SKU, IN001 key used with another (sku, delta,
 * kind), IN003 available would go negative, 22003 available or the SKU's
 * total would pass the bigint range.
 */
static int64
LedgerChange(InventoryCall *call, const char *key, const char *sku,
			 int64 delta, const char *kind, const char *reason,
			 TimestampTz now)
{
	const char *tenant = call->tenant;
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int64		counts[INVENTORY_COUNTERS];
	int64		total;
	int64		after;
	void	   *locked;

	locked = call->storage->lock_sku(tenant, sku, NULL, counts);
	if (locked == NULL)
		InventoryUnknownSku(tenant, sku, NULL);

	/* the key: a replay, or a refusal */
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(key);
	if (InventoryRun(&fetch_record, values, NULL, SPI_OK_SELECT) == 1)
	{
		char	   *old_sku = InventoryResultText(0, 1);
		char	   *old_kind = InventoryResultText(0, 2);
		int64		old_delta = InventoryResultInt64(0, 3);

		if (strcmp(old_sku, sku) != 0 || strcmp(old_kind, kind) != 0 ||
			old_delta != delta)
			InventoryKeyReused(key,
							   psprintf("The ledger record of tenant \"%s\" is a %s of "
										INT64_FORMAT " units of SKU \"%s\"; this call is a %s of "
										INT64_FORMAT " units of SKU \"%s\".",
										tenant, old_kind, old_delta, old_sku,
										kind, delta, sku),
							   "Use a new request key for a new stock change.");
		return InventoryResultInt64(0, 4);
	}

	if (pg_add_s64_overflow(counts[COUNTER_AVAILABLE], delta, &after))
		OutOfRange(sku, "available", counts, delta);
	if (pg_add_s64_overflow(counts[COUNTER_AVAILABLE], counts[COUNTER_RESERVED], &total) ||
		pg_add_s64_overflow(total, counts[COUNTER_CONSUMED], &total) ||
		pg_add_s64_overflow(total, delta, &total))
		OutOfRange(sku, "the stock", counts, delta);
	if (after < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_WOULD_GO_NEGATIVE),
				 errmsg("%s of " INT64_FORMAT " units would make available of SKU \"%s\" negative",
						kind, delta, sku),
				 errdetail("Available is " INT64_FORMAT " for tenant \"%s\"; units held by pending reservations cannot be adjusted away.",
						   counts[COUNTER_AVAILABLE], tenant),
				 errhint("Adjust by at most " INT64_FORMAT " units, or cancel reservations first.",
						 counts[COUNTER_AVAILABLE])));

	call->storage->set_available(locked, after, now);
	InventoryTestPause();
	InventoryFaultPoint("ledger");

	values[1] = CStringGetTextDatum(sku);
	values[2] = CStringGetTextDatum(key);
	values[3] = CStringGetTextDatum(kind);
	values[4] = Int64GetDatum(delta);
	if (reason == NULL)
		nulls[5] = 'n';
	else
		values[5] = CStringGetTextDatum(reason);
	values[6] = Int64GetDatum(after);
	values[7] = CStringGetTextDatum(call->actor);
	values[8] = TimestampTzGetDatum(now);
	if (InventoryRun(&write_record, values, nulls, SPI_OK_SELECT) == 0)
		InventoryKeyReused(key,
						   psprintf("A concurrent call of tenant \"%s\" used the key for another SKU.",
									tenant),
						   "Use a new request key for a new stock change.");
	return after;
}

/*
 * inventory_restock
 *		restock(tenant text, request_key text, sku text, quantity integer,
 *				reason text DEFAULT NULL) RETURNS bigint
 *
 * Records a receipt of quantity units (1 to 2147483647), creating the
 * tenant's SKU if it is new.  Returns available after it (a replay returns
 * the value stored with the record).  Errors: 22023 bad argument, 42501
 * tenant not granted, IN001 key reused with another (sku, quantity), 22003
 * the SKU's stock would pass the bigint range.
 */
Datum
inventory_restock(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", NAME_CANONICAL);
	char	   *sku = InventoryNameArg(fcinfo, 2, "sku", NAME_CANONICAL);
	int32		quantity = InventoryQuantityArg(fcinfo, 3,
												"Record removals with inventory.adjust.");
	char	   *reason = InventoryReasonArg(fcinfo, 4, "reason", false);
	InventoryCall call;
	TimestampTz now;
	int64		result;

	InventoryBeginCall(fcinfo, &call, tenant);
	now = InventoryNow();
	call.storage->ensure_sku(tenant, sku, NULL, now);
	result = LedgerChange(&call, key, sku, quantity, "receipt", reason, now);
	InventoryEndCall(&call);
	PG_RETURN_INT64(result);
}

/*
 * inventory_adjust
 *		adjust(tenant text, request_key text, sku text, delta bigint,
 *			   kind text, reason text) RETURNS bigint
 *
 * Records a return (delta > 0), loss (delta < 0) or correction (either
 * sign) of available units; reason is required.  Returns available after
 * it.  Errors: 22023 (delta 0, sign against kind, unknown kind, empty
 * reason), 42501 tenant not granted, IN002 unknown SKU, IN003 available
 * would go negative, IN001, 22003 the SKU's stock would pass the bigint
 * range.
 */
Datum
inventory_adjust(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", NAME_CANONICAL);
	char	   *sku = InventoryNameArg(fcinfo, 2, "sku", 0);
	char	   *kind;
	char	   *reason;
	int64		delta;
	InventoryCall call;
	int64		result;

	InventoryRequireArg(fcinfo, 3, "delta");
	delta = PG_GETARG_INT64(3);
	InventoryRequireArg(fcinfo, 4, "kind");
	kind = text_to_cstring(PG_GETARG_TEXT_PP(4));
	if (strcmp(kind, "return") != 0 && strcmp(kind, "loss") != 0 &&
		strcmp(kind, "correction") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be return, loss or correction"),
				 errhint("Record receipts with inventory.restock.")));
	if (delta == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must not be zero"),
				 errhint("A return adds units (delta > 0), a loss removes them (delta < 0).")));
	if ((strcmp(kind, "return") == 0 && delta < 0) ||
		(strcmp(kind, "loss") == 0 && delta > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta " INT64_FORMAT " contradicts kind %s", delta, kind),
				 errhint("A return adds units (delta > 0), a loss removes them (delta < 0); a correction may do either.")));
	reason = InventoryReasonArg(fcinfo, 5, "reason", true);

	InventoryBeginCall(fcinfo, &call, tenant);
	result = LedgerChange(&call, key, sku, delta, kind, reason, InventoryNow());
	InventoryEndCall(&call);
	PG_RETURN_INT64(result);
}
