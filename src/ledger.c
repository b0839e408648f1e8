/*-------------------------------------------------------------------------
 *
 * src/ledger.c
 *		The stock ledger: restock (receipts) and adjust (returns, losses,
 *		corrections), each one ledger record, one change of available and
 *		one stock event (README "restock", "adjust").
 *
 * A change locks the SKU's counters first (storage lock_sku), then looks
 * up its request key in the ledger (its own namespace, apart from
 * reservation keys; 0.5 on, with the ledger's archive: retention.c): under
 * the lock a concurrent call with the same key and SKU has either
 * committed (replay) or not started.
 *
 * Arithmetic never overflows: a change that would bring available, or the
 * SKU's total available + reserved + consumed (which equals the ledger sum,
 * the invariant), outside the bigint range raises 22003 and changes
 * nothing, so no later call (a cancel, expire_due, check_invariants) can
 * meet a sum it cannot compute.  With locations (0.5 on) this holds at
 * the location (exact, under its locks) and for the SKU's total over all
 * its locations as the call sees the others (not locked: two concurrent
 * receipts at two locations could still pass it together).
 *
 * With locations, restock and adjust act on one location (the overloads
 * without one: location default), bump the version of the SKU there, and
 * re-evaluate its level (level.c), which may add a level event after the
 * stock event.
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
PG_FUNCTION_INFO_V1(inventory_restock_at);
PG_FUNCTION_INFO_V1(inventory_adjust_at);
PG_FUNCTION_INFO_V1(inventory_register_sku);

/* One receipt or adjustment, as asked; location NULL before 0.5 */
typedef struct LedgerRequest
{
	const char *key;
	const char *sku;
	const char *location;
	int64		delta;
	const char *kind;
	const char *reason;
} LedgerRequest;

/* $1 tenant, $2 key */
static InventoryStatement fetch_record = {
	"fetch ledger record",
	"SELECT g.sku::text, g.kind, g.delta, g.available_after "
	"FROM inventory.stock_ledger g WHERE g.tenant = $1 AND g.request_key = $2",
	2, {TEXTOID, TEXTOID}
};

/*
 * The same with the record's location (0.5 on), in the ledger or in its
 * archive (archive_ledger moves a record in one transaction, so one
 * snapshot sees it in exactly one of them: a moved record still replays)
 */
static InventoryStatement fetch_record_at = {
	"fetch ledger record",
	"SELECT g.sku::text, g.kind, g.delta, g.available_after, g.location::text "
	"FROM inventory.stock_ledger g WHERE g.tenant = $1 AND g.request_key = $2 "
	"UNION ALL SELECT a.sku::text, a.kind, a.delta, a.available_after, "
	"a.location::text FROM inventory.stock_ledger_archive a "
	"WHERE a.tenant = $1 AND a.request_key = $2",
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

/*
 * The same at location $10 (0.5 on): the record carries the location, the
 * SKU's version there goes up by one, and the event carries "location",
 * "version", "available" (at the location) and "sku_available" (the SKU's
 * available units over all its locations).
 */
static InventoryStatement write_record_at = {
	"write ledger record and stock event",
	"WITH g AS (INSERT INTO inventory.stock_ledger (tenant, sku, location, "
	"request_key, kind, delta, reason, available_after, actor, created_at) "
	"VALUES ($1, $2, $10, $3, $4, $5, $6, $7, $8, $9) "
	"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING available_after), "
	"v AS (UPDATE inventory.stock_location sl SET version = sl.version + 1 FROM g "
	"WHERE sl.tenant = $1 AND sl.sku = $2 AND sl.location = $10 "
	"RETURNING sl.version), "
	"e AS (SELECT gen_random_uuid() AS event_id), "
	"o AS (INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, "
	"CASE WHEN $4 = 'receipt' THEN 'stock.restocked' ELSE 'stock.adjusted' END, "
	"$1, NULL, jsonb_build_object('event_id', e.event_id, 'event_type', "
	"CASE WHEN $4 = 'receipt' THEN 'stock.restocked' ELSE 'stock.adjusted' END, "
	"'tenant', $1, 'sku', $2, 'location', $10, 'request_key', $3, 'kind', $4, "
	"'delta', $5, 'available', g.available_after, "
	"'sku_available', (SELECT COALESCE(sum(s.available), 0) "
	"FROM inventory.stock_slot s WHERE s.tenant = $1 AND s.sku = $2), "
	"'version', v.version, 'reason', $6, "
	"'occurred_at', to_char($9 AT TIME ZONE 'UTC', "
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')), $9 FROM g, v, e) "
	"SELECT g.available_after FROM g",
	10, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, INT8OID, TEXTOID,
	TIMESTAMPTZOID, TEXTOID}
};

/* 0.5 on: $1 tenant, $2 location: whether the tenant has it */
static InventoryStatement find_location = {
	"find location",
	"SELECT 1 FROM inventory.location l WHERE l.tenant = $1 AND l.location = $2",
	2, {TEXTOID, TEXTOID}
};

/* 0.5 on: $1 tenant, $2 clock: creates location default if it is missing */
static InventoryStatement ensure_default_location = {
	"create default location",
	"INSERT INTO inventory.location (tenant, location, priority, active, "
	"created_at, updated_at) VALUES ($1, '" INVENTORY_DEFAULT_LOCATION "', 100, "
	"true, $2, $2) ON CONFLICT (tenant, location) DO NOTHING",
	2, {TEXTOID, TIMESTAMPTZOID}
};

/*
 * 0.5 on: whether the SKU's units over all its locations would pass the
 * bigint range (the view inventory.stock sums them as bigint) when its
 * total at location $3 becomes $4; the other locations as this statement
 * sees them (their slots are not locked).  $1 tenant, $2 sku.
 */
static InventoryStatement sku_total_passes = {
	"check SKU total over locations",
	"SELECT COALESCE(sum(s.available::numeric + s.reserved + s.consumed), 0) + $4 "
	"> 9223372036854775807 FROM inventory.stock_slot s "
	"WHERE s.tenant = $1 AND s.sku = $2 AND s.location <> $3",
	4, {TEXTOID, TEXTOID, TEXTOID, INT8OID}
};

/*
 * SkuTotalPasses
 *		0.5 on, for a change that adds units: whether the SKU's total over
 *		all its locations would pass the bigint range once its total at the
 *		location is total.
 */
static bool
SkuTotalPasses(const char *tenant, const LedgerRequest *req, int64 total)
{
	Datum		values[4];
	bool		isnull;

	if (req->location == NULL || req->delta <= 0)
		return false;
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(req->sku);
	values[2] = CStringGetTextDatum(req->location);
	values[3] = Int64GetDatum(total);
	InventoryRun(&sku_total_passes, values, NULL, SPI_OK_SELECT);
	return DatumGetBool(InventoryResultDatum(0, 1, &isnull));
}

/* " at location \"x\"" for messages, or "" before 0.5 */
static char *
AtLocation(const char *location)
{
	return location ? psprintf(" at location \"%s\"", location) : "";
}

/*
 * Raises 22003: the change would pass the bigint range; counts are those
 * at the location (0.5 on), where (with everywhere) the SKU's total over
 * all its locations would pass it.
 */
static void
OutOfRange(const LedgerRequest *req, const char *what, const int64 *counts,
		   bool everywhere)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("%s of SKU \"%s\"%s would pass the bigint range", what,
					req->sku, everywhere ? " over all its locations" :
					AtLocation(req->location)),
			 errdetail("Available%s is " INT64_FORMAT ", reserved " INT64_FORMAT
					   ", consumed " INT64_FORMAT "; the change is " INT64_FORMAT ".",
					   AtLocation(req->location), counts[COUNTER_AVAILABLE], counts[COUNTER_RESERVED],
					   counts[COUNTER_CONSUMED], req->delta),
			 errhint("No SKU may hold more than 9223372036854775807 units in all.")));
}

/*
 * FindRecord
 *		Looks up the ledger record of (tenant, key).  Returns false when
 *		there is none; true with *available_after its stored result when it
 *		is this very change (a replay).  Errors: IN001 when it records
 *		another change (SKU, location, kind or delta).
 */
static bool
FindRecord(const char *tenant, const LedgerRequest *req, int64 *available_after)
{
	Datum		values[2];
	char	   *old_sku;
	char	   *old_kind;
	char	   *old_location;
	int64		old_delta;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(req->key);
	if (InventoryRun(req->location ? &fetch_record_at : &fetch_record,
					 values, NULL, SPI_OK_SELECT) == 0)
		return false;
	old_sku = InventoryResultText(0, 1);
	old_kind = InventoryResultText(0, 2);
	old_delta = InventoryResultInt64(0, 3);
	old_location = req->location ? InventoryResultText(0, 5) : NULL;
	if (strcmp(old_sku, req->sku) != 0 || strcmp(old_kind, req->kind) != 0 ||
		old_delta != req->delta ||
		(req->location && strcmp(old_location, req->location) != 0))
		InventoryKeyReused(req->key,
						   psprintf("The ledger record of tenant \"%s\" is a %s of "
									INT64_FORMAT " units of SKU \"%s\"%s; this call is a %s of "
									INT64_FORMAT " units of SKU \"%s\"%s.",
									tenant, old_kind, old_delta, old_sku,
									AtLocation(old_location), req->kind,
									req->delta, req->sku,
									AtLocation(req->location)),
						   "Use a new request key for a new stock change.");
	*available_after = InventoryResultInt64(0, 4);
	return true;
}

/*
 * LedgerChange
 *		Applies one receipt or adjustment of req->delta units to available
 *		of (tenant, sku) (at req->location, 0.5 on), idempotent on (tenant,
 *		key).  Returns available (there) after it, or the value stored with
 *		the record on a replay.  0.5 on, the level there is evaluated again
 *		(level.c).
 *
 * Errors: IN002 SKU not stocked (there), IN001 key used with another (sku,
 * location, delta, kind), IN003 available would go negative, 22003
 * available or the total there, or the SKU's total over all its locations
 * (0.5 on), would pass the bigint range.
 */
static int64
LedgerChange(InventoryCall *call, const LedgerRequest *req, TimestampTz now)
{
	const char *tenant = call->tenant;
	Datum		values[10];
	char		nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	int64		counts[INVENTORY_COUNTERS];
	int64		total;
	int64		after;
	void	   *locked;

	locked = call->storage->lock_sku(tenant, req->sku, req->location, counts);
	if (locked == NULL && req->location == NULL)
		InventoryUnknownSku(tenant, req->sku, NULL);
	if (locked == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_UNKNOWN_OBJECT),
				 errmsg("SKU \"%s\" is not stocked at location \"%s\" for tenant \"%s\"",
						req->sku, req->location, tenant),
				 errhint("An operator stocks a SKU at a location by restocking it there (inventory.restock_at) or by registering it there with no stock (inventory.register_sku).")));

	/* the key: a replay, or a refusal */
	if (FindRecord(tenant, req, &after))
		return after;

	if (pg_add_s64_overflow(counts[COUNTER_AVAILABLE], req->delta, &after))
		OutOfRange(req, "available", counts, false);
	if (pg_add_s64_overflow(counts[COUNTER_AVAILABLE], counts[COUNTER_RESERVED], &total) ||
		pg_add_s64_overflow(total, counts[COUNTER_CONSUMED], &total) ||
		pg_add_s64_overflow(total, req->delta, &total))
		OutOfRange(req, "the stock", counts, false);
	if (SkuTotalPasses(tenant, req, total))
		OutOfRange(req, "the stock", counts, true);
	if (after < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_WOULD_GO_NEGATIVE),
				 errmsg("%s of " INT64_FORMAT " units would make available of SKU \"%s\"%s negative",
						req->kind, req->delta, req->sku, AtLocation(req->location)),
				 errdetail("Available is " INT64_FORMAT " for tenant \"%s\"; units held by pending reservations cannot be adjusted away.",
						   counts[COUNTER_AVAILABLE], tenant),
				 errhint("Adjust by at most " INT64_FORMAT " units, or cancel reservations first.",
						 counts[COUNTER_AVAILABLE])));

	call->storage->set_available(locked, after, now);
	InventoryTestPause();
	InventoryFaultPoint("ledger");

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(req->sku);
	values[2] = CStringGetTextDatum(req->key);
	values[3] = CStringGetTextDatum(req->kind);
	values[4] = Int64GetDatum(req->delta);
	if (req->reason == NULL)
		nulls[5] = 'n';
	else
		values[5] = CStringGetTextDatum(req->reason);
	values[6] = Int64GetDatum(after);
	values[7] = CStringGetTextDatum(call->actor);
	values[8] = TimestampTzGetDatum(now);
	if (req->location)
		values[9] = CStringGetTextDatum(req->location);
	if (InventoryRun(req->location ? &write_record_at : &write_record,
					 values, nulls, SPI_OK_SELECT) == 0)
		InventoryKeyReused(req->key,
						   psprintf("A concurrent call of tenant \"%s\" used the key for another SKU.",
									tenant),
						   "Use a new request key for a new stock change.");
	if (req->location)
		InventoryCheckLevels(1, &tenant, &req->sku, &req->location, now);
	return after;
}

/*
 * StockLocation
 *		0.5 on, the location a restock or adjust acts on: the location
 *		argument argno (at: the overloads with a location), which the
 *		tenant must have (IN004), or location default, which restock
 *		(create) makes when it is missing (priority 100, active).  NULL
 *		before 0.5, where the overloads with a location raise 0A000.
 */
static const char *
StockLocation(InventoryCall *call, const char *location, bool create,
			  const char *function, TimestampTz now)
{
	Datum		values[2];

	if (location != NULL)
		InventoryRequireLocated(call, function);
	if (!call->located)
		return NULL;
	values[0] = CStringGetTextDatum(call->tenant);
	if (location == NULL)
	{
		if (create)
		{
			values[1] = TimestampTzGetDatum(now);
			InventoryRun(&ensure_default_location, values, NULL, SPI_OK_INSERT);
		}
		return INVENTORY_DEFAULT_LOCATION;
	}
	values[1] = CStringGetTextDatum(location);
	if (InventoryRun(&find_location, values, NULL, SPI_OK_SELECT) == 0)
		InventoryUnknownLocation(call->tenant, location);
	return location;
}

/*
 * Restock
 *		The work of both restock overloads; at: the one with a location
 *		(argument 3, the others after it).
 */
static Datum
Restock(FunctionCallInfo fcinfo, bool at)
{
	int			off = at ? 1 : 0;
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	LedgerRequest req;
	char	   *location = NULL;
	InventoryCall call;
	TimestampTz now;
	int64		result;

	req.key = InventoryKeyArg(fcinfo, 1, "request_key", NAME_CANONICAL);
	req.sku = InventoryNameArg(fcinfo, 2, "sku", NAME_CANONICAL);
	if (at)
		location = InventoryNameArg(fcinfo, 3, "location", NAME_CANONICAL);
	req.delta = InventoryQuantityArg(fcinfo, 3 + off,
									 at ? "Record removals with inventory.adjust_at." :
									 "Record removals with inventory.adjust.",
									 at ? "A receipt has at least 1 unit; to create a SKU at a location with no stock, use inventory.register_sku(tenant, sku, location)." :
									 "A receipt has at least 1 unit; to create a SKU with no stock, use inventory.register_sku(tenant, sku).");
	req.kind = "receipt";
	req.reason = InventoryReasonArg(fcinfo, 4 + off, "reason", false);

	InventoryBeginCall(fcinfo, &call, tenant);
	now = InventoryNow();
	req.location = StockLocation(&call, location, true, "inventory.restock_at", now);
	call.storage->ensure_sku(tenant, req.sku, req.location, now);
	result = LedgerChange(&call, &req, now);
	InventoryEndCall(&call);
	PG_RETURN_INT64(result);
}

/*
 * inventory_restock
 *		restock(tenant text, request_key text, sku text, quantity integer,
 *				reason text DEFAULT NULL) RETURNS bigint
 *
 * Records a receipt of quantity units (1 to 2147483647), creating the
 * tenant's SKU if it is new; 0.5 on, at location default (created,
 * priority 100 and active, when missing).  Returns available (there) after
 * it (a replay returns the value stored with the record).  Errors: 22023
 * bad argument, 42501 tenant not granted, IN001 key reused with another
 * (sku, location, quantity), 22003 the SKU's stock would pass the bigint
 * range.
 */
Datum
inventory_restock(PG_FUNCTION_ARGS)
{
	return Restock(fcinfo, false);
}

/*
 * inventory_restock_at
 *		restock_at(tenant text, request_key text, sku text, location text,
 *				   quantity integer, reason text DEFAULT NULL) RETURNS bigint
 *
 * Schema 0.5 on: records a receipt of quantity units (1 to 2147483647) at
 * the tenant's location, creating the SKU, and its counters there, if they
 * are new.  Returns available at the location after it (a replay returns
 * the value stored with the record).  Errors: 22023 bad argument, 42501
 * tenant not granted, IN004 unknown location, IN001 key reused with
 * another (sku, location, quantity), 22003 the SKU's stock there would
 * pass the bigint range, 0A000 schema before 0.5.
 */
Datum
inventory_restock_at(PG_FUNCTION_ARGS)
{
	return Restock(fcinfo, true);
}

/*
 * AdjustKind
 *		The kind and delta (arguments argno and argno - 1) of an adjust:
 *		return (delta > 0), loss (delta < 0) or correction (either sign),
 *		never 0.  Errors: 22023.
 */
static char *
AdjustKind(FunctionCallInfo fcinfo, int argno, int64 *delta)
{
	char	   *kind;

	InventoryRequireArg(fcinfo, argno - 1, "delta");
	*delta = PG_GETARG_INT64(argno - 1);
	InventoryRequireArg(fcinfo, argno, "kind");
	kind = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(kind, "return") != 0 && strcmp(kind, "loss") != 0 &&
		strcmp(kind, "correction") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kind must be return, loss or correction"),
				 errhint("Record receipts with inventory.restock.")));
	if (*delta == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta must not be zero"),
				 errhint("A return adds units (delta > 0), a loss removes them (delta < 0).")));
	if ((strcmp(kind, "return") == 0 && *delta < 0) ||
		(strcmp(kind, "loss") == 0 && *delta > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta " INT64_FORMAT " contradicts kind %s", *delta, kind),
				 errhint("A return adds units (delta > 0), a loss removes them (delta < 0); a correction may do either.")));
	return kind;
}

/*
 * Adjust
 *		The work of both adjust overloads; at: the one with a location
 *		(argument 3, the others after it).
 */
static Datum
Adjust(FunctionCallInfo fcinfo, bool at)
{
	int			off = at ? 1 : 0;
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	LedgerRequest req;
	char	   *location = NULL;
	InventoryCall call;
	TimestampTz now;
	int64		result;

	req.key = InventoryKeyArg(fcinfo, 1, "request_key", NAME_CANONICAL);
	req.sku = InventoryNameArg(fcinfo, 2, "sku", 0);
	if (at)
		location = InventoryNameArg(fcinfo, 3, "location", 0);
	req.kind = AdjustKind(fcinfo, 4 + off, &req.delta);
	req.reason = InventoryReasonArg(fcinfo, 5 + off, "reason", true);

	InventoryBeginCall(fcinfo, &call, tenant);
	now = InventoryNow();
	req.location = StockLocation(&call, location, false, "inventory.adjust_at", now);
	result = LedgerChange(&call, &req, now);
	InventoryEndCall(&call);
	PG_RETURN_INT64(result);
}

/*
 * inventory_adjust
 *		adjust(tenant text, request_key text, sku text, delta bigint,
 *			   kind text, reason text) RETURNS bigint
 *
 * Records a return (delta > 0), loss (delta < 0) or correction (either
 * sign) of available units; reason is required.  0.5 on it acts on
 * location default.  Returns available (there) after it.  Errors: 22023
 * (delta 0, sign against kind, unknown kind, empty reason), 42501 tenant
 * not granted, IN002 unknown SKU (0.5 on: not stocked at location
 * default), IN003 available would go negative, IN001, 22003 the SKU's
 * stock would pass the bigint range.
 */
Datum
inventory_adjust(PG_FUNCTION_ARGS)
{
	return Adjust(fcinfo, false);
}

/*
 * inventory_adjust_at
 *		adjust_at(tenant text, request_key text, sku text, location text,
 *				  delta bigint, kind text, reason text) RETURNS bigint
 *
 * Schema 0.5 on: adjust (as above) of the SKU's available units at the
 * tenant's location.  Returns available at the location after it.
 * Errors: 22023, 42501 tenant not granted, IN004 unknown location, IN002
 * SKU not stocked at that location, IN003 available there would go
 * negative, IN001 key reused with another (sku, location, delta, kind),
 * 22003, 0A000 schema before 0.5.
 */
Datum
inventory_adjust_at(PG_FUNCTION_ARGS)
{
	return Adjust(fcinfo, true);
}

/*
 * inventory_register_sku
 *		register_sku(tenant text, sku text, location text DEFAULT NULL)
 *		RETURNS boolean
 *
 * Schema 0.5 on: creates the tenant's SKU with no stock, with its counters
 * (all 0) at location (NULL: the location default, created as restock
 * creates it when missing), so that a reservation of it is insufficient
 * rather than IN002.  Nothing was received: no ledger record, no event;
 * the level is first computed at the first change of available (level.c:
 * from NULL, no event).  Returns whether it created the counters (false:
 * the SKU was already stocked there).  Errors: 22023 bad argument, 42501
 * tenant not granted, IN004 unknown location, 0A000 schema before 0.5.
 */
Datum
inventory_register_sku(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	char	   *sku = InventoryNameArg(fcinfo, 1, "sku", NAME_CANONICAL);
	char	   *location = NULL;
	const char *at;
	InventoryCall call;
	TimestampTz now;
	bool		created;

	if (!PG_ARGISNULL(2))
		location = InventoryNameArg(fcinfo, 2, "location", NAME_CANONICAL);
	InventoryBeginCall(fcinfo, &call, tenant);
	InventoryRequireLocated(&call, "inventory.register_sku");
	now = InventoryNow();
	at = StockLocation(&call, location, true, "inventory.register_sku", now);
	created = call.storage->ensure_sku(tenant, sku, at, now);
	InventoryEndCall(&call);
	PG_RETURN_BOOL(created);
}
