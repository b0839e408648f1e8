/*-------------------------------------------------------------------------
 *
 * src/reservation.c
 *		The reservation functions: reserve, reserve_lines, confirm, cancel,
 *		compensate, lookup and expire_due (CONTRACT.md "Functions").
 *
 * Every transition checks the old state and applies the new one under the
 * reservation's row lock, with a guarded UPDATE (WHERE state = old AND
 * version = read) whose row count is checked, and writes its log row and
 * outbox event in the same statement.  Lock order: the reservation row
 * first, then stock rows in (tenant, sku) order (see pg_inventory.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "inventory_errcodes.h"
#include "pg_inventory.h"
#include "plans.h"

PG_FUNCTION_INFO_V1(inventory_reserve);
PG_FUNCTION_INFO_V1(inventory_reserve_lines);
PG_FUNCTION_INFO_V1(inventory_confirm);
PG_FUNCTION_INFO_V1(inventory_cancel);
PG_FUNCTION_INFO_V1(inventory_compensate);
PG_FUNCTION_INFO_V1(inventory_lookup);
PG_FUNCTION_INFO_V1(inventory_expire_due);

/* A reservation as read from the tables */
typedef struct StoredReservation
{
	int64		id;
	char	   *state;
	bool		has_expiry;
	TimestampTz expires_at;
	int32		version;
	InventoryLines lines;
} StoredReservation;

/* The columns of inventory.outcome */
typedef struct Outcome
{
	const char *status;
	const char *state;			/* NULL: no reservation */
	bool		applied;
	const StoredReservation *res;	/* NULL: no reservation */
} Outcome;

/* What confirm, cancel and compensate do with an unexpired reservation */
typedef enum TransitionKind
{
	TRANSITION_CONFIRM,
	TRANSITION_CANCEL,
	TRANSITION_COMPENSATE
} TransitionKind;

/*
 * OutcomeDatum
 *		Builds the inventory.outcome tuple in the caller's memory context
 *		(before SPI_finish frees what the tables gave us).
 */
static Datum
OutcomeDatum(FunctionCallInfo fcinfo, InventoryCall *call, const Outcome *o)
{
	InventoryFnCache *cache = (InventoryFnCache *) fcinfo->flinfo->fn_extra;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};
	MemoryContext oldcxt;
	HeapTuple	tuple;

	/* the result's descriptor, blessed once per call site */
	if (cache->outcome == NULL)
	{
		TupleDesc	tupdesc;

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "pg_inventory: return type must be inventory.outcome");
		oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		cache->outcome = BlessTupleDesc(CreateTupleDescCopy(tupdesc));
		MemoryContextSwitchTo(oldcxt);
	}
	oldcxt = MemoryContextSwitchTo(call->outer_cxt);

	values[0] = CStringGetTextDatum(o->status);
	nulls[1] = (o->state == NULL);
	if (o->state != NULL)
		values[1] = CStringGetTextDatum(o->state);
	values[2] = BoolGetDatum(o->applied);
	if (o->res == NULL)
	{
		nulls[3] = nulls[4] = nulls[5] = nulls[6] = true;
	}
	else
	{
		values[3] = Int64GetDatum(o->res->id);
		nulls[4] = (o->res->lines.count != 1);
		if (!nulls[4])
			values[4] = CStringGetTextDatum(o->res->lines.items[0].sku);
		values[5] = Int32GetDatum((int32) o->res->lines.total);
		nulls[6] = !o->res->has_expiry;
		if (o->res->has_expiry)
			values[6] = TimestampTzGetDatum(o->res->expires_at);
	}
	tuple = heap_form_tuple(cache->outcome, values, nulls);
	MemoryContextSwitchTo(oldcxt);
	return HeapTupleGetDatum(tuple);
}

/*
 * FetchReservation
 *		Reads the reservation (tenant, key) with its lines; with lock, takes
 *		its row lock first (READ COMMITTED: waits for a concurrent change and
 *		reads the newest version).  Returns false when there is none.
 */
static bool
FetchReservation(const char *tenant, const char *key, bool lock,
				 bool read_only, StoredReservation *res)
{
	Datum		values[2];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum	   *skus;
	Datum	   *qtys;
	int			nskus;
	int			nqtys;
	int			i;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(key);
	if (InventoryExec(lock ? PLAN_RES_FETCH_LOCK : PLAN_RES_FETCH, values, NULL,
					  read_only, SPI_OK_SELECT) == 0)
		return false;

	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	res->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	res->state = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
	res->expires_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 3, &isnull));
	res->has_expiry = !isnull;
	res->version = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 5, &isnull)),
					  TEXTOID, -1, false, TYPALIGN_INT, &skus, NULL, &nskus);
	deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 6, &isnull)),
					  INT4OID, 4, true, TYPALIGN_INT, &qtys, NULL, &nqtys);
	Assert(nskus == nqtys);
	res->lines.count = nskus;
	res->lines.total = 0;
	res->lines.items = palloc(sizeof(InventoryLine) * Max(nskus, 1));
	for (i = 0; i < nskus; i++)
	{
		res->lines.items[i].sku = TextDatumGetCString(skus[i]);
		res->lines.items[i].quantity = DatumGetInt32(qtys[i]);
		res->lines.total += res->lines.items[i].quantity;
	}
	return true;
}

/*
 * EffectiveState
 *		The state a reader reports: a pending reservation at or past its
 *		expiry (clock >= expires_at, CONTRACT.md "Expiry boundary") is
 *		expired even before anything wrote it so.
 */
static const char *
EffectiveState(const StoredReservation *res, TimestampTz now)
{
	if (strcmp(res->state, "pending") == 0 && res->has_expiry &&
		now >= res->expires_at)
		return "expired";
	return res->state;
}

/* The status a replay of reserve (or lookup) reports: reserved or insufficient */
static const char *
ReserveStatus(const StoredReservation *res)
{
	return strcmp(res->state, "rejected") == 0 ? "insufficient" : "reserved";
}

/* The status that reports an existing state unchanged (rejected: insufficient) */
static const char *
StateStatus(const char *state)
{
	return strcmp(state, "rejected") == 0 ? "insufficient" : state;
}

/*
 * MoveStock
 *		Moves the units of lines from counter "from" to counter "to"
 *		(available, reserved or consumed): in 0.3, slot by slot
 *		(InventorySlotMove, SKU by SKU in sku order); before 0.3, on the one
 *		stock row of each SKU, locking the rows in sku order.  The units must
 *		be there (the reservation holds them); anything else is XX000.
 */
static void
MoveStock(const char *tenant, const InventoryLines *lines,
		  InventoryCounter from, InventoryCounter to, TimestampTz now)
{
	int			factor[3] = {0, 0, 0};

	if (InventorySlotted())
	{
		int			i;

		for (i = 0; i < lines->count; i++)
			if (InventorySlotMove(tenant, lines->items[i].sku,
								  lines->items[i].quantity, from, to, false,
								  now, NULL) != SLOT_MOVE_DONE)
				elog(ERROR, "pg_inventory: SKU \"%s\" of tenant \"%s\" does not hold "
					 "the reservation's units", lines->items[i].sku, tenant);
	}
	else
	{
		Datum		values[7];

		factor[from] = -1;
		factor[to] = 1;
		values[0] = CStringGetTextDatum(tenant);
		values[1] = InventorySkuArray(lines);
		values[2] = InventoryQuantityArray(lines, INT8OID);
		values[3] = Int64GetDatum(factor[COUNTER_AVAILABLE]);
		values[4] = Int64GetDatum(factor[COUNTER_RESERVED]);
		values[5] = Int64GetDatum(factor[COUNTER_CONSUMED]);
		values[6] = TimestampTzGetDatum(now);
		if (InventoryExec(PLAN_STOCK_MOVE, values, NULL, false,
						  SPI_OK_UPDATE) != (uint64) lines->count)
			elog(ERROR, "pg_inventory: stock rows of tenant \"%s\" are missing",
				 tenant);
	}
	InventoryTestPause();
}

/*
 * UnknownSku
 *		Raises IN002 for a SKU the tenant never stocked.
 */
static void
UnknownSku(const char *tenant, const char *sku)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVENTORY_UNKNOWN_OBJECT),
			 errmsg("SKU \"%s\" is not stocked for tenant \"%s\"", sku, tenant),
			 errhint("An operator creates a SKU by restocking it.")));
}

/*
 * HoldStockRows
 *		Before 0.3: locks the stock row of every line in sku order and, if
 *		every line fits, moves its units from available to reserved.
 *		Returns whether it did.  Errors: IN002.
 */
static bool
HoldStockRows(const char *tenant, const InventoryLines *lines, TimestampTz now)
{
	Datum		values[2];
	uint64		nlocked;
	bool		sufficient = true;
	bool		isnull;
	int			i;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = InventorySkuArray(lines);
	nlocked = InventoryExec(PLAN_STOCK_LOCK, values, NULL, false, SPI_OK_SELECT);
	for (i = 0; i < lines->count; i++)
	{
		if ((uint64) i >= nlocked ||
			strcmp(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
				   lines->items[i].sku) != 0)
			UnknownSku(tenant, lines->items[i].sku);
		if (DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, 2, &isnull)) <
			lines->items[i].quantity)
			sufficient = false;
	}
	if (sufficient)
		MoveStock(tenant, lines, COUNTER_AVAILABLE, COUNTER_RESERVED, now);
	return sufficient;
}

/*
 * HoldSlots
 *		0.3: holds every line's units, SKU by SKU in sku order, from one
 *		free slot or (falling back) from all slots of the SKU, rebalancing
 *		them.  When a line does not fit, undoes the lines already held and
 *		returns false.  Errors: IN002 (also when a line that was not reached
 *		names an unknown SKU).
 */
static bool
HoldSlots(const char *tenant, const InventoryLines *lines, TimestampTz now)
{
	InventorySlotChanges done = {0, 0, NULL};
	int			i;

	for (i = 0; i < lines->count; i++)
	{
		switch (InventorySlotMove(tenant, lines->items[i].sku,
								  lines->items[i].quantity, COUNTER_AVAILABLE,
								  COUNTER_RESERVED, true, now, &done))
		{
			case SLOT_MOVE_DONE:
				break;
			case SLOT_MOVE_UNKNOWN:
				UnknownSku(tenant, lines->items[i].sku);
				break;
			case SLOT_MOVE_SHORT:
				{
					Datum		values[2];

					values[0] = CStringGetTextDatum(tenant);
					values[1] = InventorySkuArray(lines);
					if (InventoryExec(PLAN_SKU_MISSING, values, NULL, false,
									  SPI_OK_SELECT) == 1)
						UnknownSku(tenant, SPI_getvalue(SPI_tuptable->vals[0],
														SPI_tuptable->tupdesc, 1));
					InventorySlotUndo(&done, now);
					return false;
				}
		}
	}
	InventoryTestPause();
	return true;
}

/*
 * ApplyTransition
 *		Changes a locked reservation from its current state to to_state:
 *		moves its stock, updates it with a guard on the state and version it
 *		was read with, logs the transition and writes the event.
 */
static void
ApplyTransition(InventoryCall *call, const char *tenant, StoredReservation *res,
				const char *to_state, const char *reason, TimestampTz now,
				InventoryCounter from, InventoryCounter to)
{
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	MoveStock(tenant, &res->lines, from, to, now);

	values[0] = Int64GetDatum(res->id);
	values[1] = CStringGetTextDatum(res->state);
	values[2] = CStringGetTextDatum(to_state);
	if (reason == NULL)
		nulls[3] = 'n';
	else
		values[3] = CStringGetTextDatum(reason);
	values[4] = CStringGetTextDatum(call->actor);
	values[5] = TimestampTzGetDatum(now);
	values[6] = Int32GetDatum(res->version);
	if (InventoryExec(PLAN_RES_TRANSITION, values, nulls, false,
					  SPI_OK_INSERT) != 1)
		elog(ERROR, "pg_inventory: reservation " INT64_FORMAT
			 " changed under its row lock", res->id);
	res->state = (char *) to_state;
	res->version++;
}

/*
 * ReserveLines
 *		The work of reserve and reserve_lines (CONTRACT.md "reserve",
 *		"reserve_lines", "Idempotency", "Unknown SKU").
 *
 * 1. Claim the request key by inserting the pending reservation (a
 *	  concurrent call with the same key waits for this one, then replays).
 * 2. If the key exists: the same lines replay the stored outcome
 *	  (applied = false); other lines raise IN001.
 * 3. Hold every line's units (available -> reserved), SKU by SKU in sku
 *	  order; a SKU the tenant never stocked raises IN002 (the claim is
 *	  undone with the error).
 * 4. If a line does not fit, hold none (all or nothing).
 * 5. Write lines, log and event; or store the rejection (the frozen
 *	  insufficient outcome).
 */
static Datum
ReserveLines(FunctionCallInfo fcinfo, const char *tenant, const char *key,
			 InventoryLines *lines, Interval *ttl)
{
	InventoryCall call;
	StoredReservation res;
	Outcome		o;
	TimestampTz now;
	TimestampTz expires_at;
	Datum		values[8];
	bool		isnull;
	bool		sufficient;

	InventoryBeginCall(fcinfo, &call, tenant);
	now = InventoryNow();
	expires_at = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
														 TimestampTzGetDatum(now),
														 IntervalPGetDatum(ttl)));

	/* 1. claim the key */
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(key);
	values[2] = TimestampTzGetDatum(expires_at);
	values[3] = TimestampTzGetDatum(now);
	if (InventoryExec(PLAN_RES_CLAIM, values, NULL, false,
					  SPI_OK_INSERT_RETURNING) == 0)
	{
		/* 2. replay or refusal */
		if (!FetchReservation(tenant, key, false, false, &res))
			elog(ERROR, "pg_inventory: request key \"%s\" conflicted but is not visible",
				 key);
		if (!InventoryLinesEqual(&res.lines, lines))
			ereport(ERROR,
					(errcode(ERRCODE_INVENTORY_KEY_REUSED),
					 errmsg("request key \"%s\" was already used with a different payload",
							key),
					 errdetail("Reservation " INT64_FORMAT " of tenant \"%s\" holds %s; this call asks for %s.",
							   res.id, tenant, InventoryLinesText(&res.lines),
							   InventoryLinesText(lines)),
					 errhint("Use a new request key for a new intent.")));
		o.status = ReserveStatus(&res);
		o.state = EffectiveState(&res, InventoryNow());
		o.applied = false;
		o.res = &res;
		{
			Datum		result = OutcomeDatum(fcinfo, &call, &o);

			InventoryEndCall(&call);
			return result;
		}
	}
	res.id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	res.version = 1;
	res.lines = *lines;

	/* 3. and 4. hold the stock of every line, or of none */
	sufficient = InventorySlotted() ? HoldSlots(tenant, lines, now) :
		HoldStockRows(tenant, lines, now);

	/* 5. record the reservation, or store the rejection */
	values[0] = Int64GetDatum(res.id);
	values[1] = InventorySkuArray(lines);
	values[2] = InventoryQuantityArray(lines, INT4OID);
	values[3] = CStringGetTextDatum(call.actor);
	values[4] = TimestampTzGetDatum(now);
	if (sufficient)
	{
		values[5] = CStringGetTextDatum(tenant);
		values[6] = CStringGetTextDatum(key);
		values[7] = TimestampTzGetDatum(expires_at);
		if (InventoryExec(PLAN_RES_CREATED, values, NULL, false,
						  SPI_OK_INSERT) != 1)
			elog(ERROR, "pg_inventory: reservation " INT64_FORMAT " not recorded",
				 res.id);
		res.state = "pending";
		res.has_expiry = true;
		res.expires_at = expires_at;
		o.status = "reserved";
	}
	else
	{
		if (InventoryExec(PLAN_RES_REJECTED, values, NULL, false,
						  SPI_OK_INSERT) != 1)
			elog(ERROR, "pg_inventory: rejection of reservation " INT64_FORMAT
				 " not recorded", res.id);
		res.state = "rejected";
		res.has_expiry = false;
		o.status = "insufficient";
	}
	o.state = res.state;
	o.applied = true;
	o.res = &res;
	{
		Datum		result = OutcomeDatum(fcinfo, &call, &o);

		InventoryEndCall(&call);
		return result;
	}
}

/*
 * inventory_reserve
 *		reserve(tenant text, request_key text, sku text, quantity integer,
 *				ttl interval DEFAULT '15 minutes') RETURNS inventory.outcome
 *
 * Holds quantity (units, 1 to 2147483647) of sku for ttl (above zero, at
 * most 7 days); it is reserve_lines with one line.  Status reserved or
 * insufficient.  Errors: 22023 bad argument, 42501 tenant not granted,
 * IN002 unknown SKU, IN001 key reused with another payload.
 */
Datum
inventory_reserve(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	char	   *sku = InventoryNameArg(fcinfo, 2, "sku", false);
	Interval   *ttl;
	int32		quantity;
	InventoryLines lines;

	InventoryRequireArg(fcinfo, 3, "quantity");
	quantity = PG_GETARG_INT32(3);
	if (quantity < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quantity must be at least 1"),
				 errdetail("The value given is %d.", quantity)));
	ttl = InventoryTtlArg(fcinfo, 4);
	InventoryOneLine(sku, quantity, &lines);
	return ReserveLines(fcinfo, tenant, key, &lines, ttl);
}

/*
 * inventory_reserve_lines
 *		reserve_lines(tenant text, request_key text, lines jsonb,
 *					  ttl interval DEFAULT '15 minutes') RETURNS inventory.outcome
 *
 * All-or-nothing hold of 1 to 100 lines [{"sku": .., "quantity": ..}]; the
 * same SKU on several lines counts as their sum, the total must fit an
 * integer.  Status reserved or insufficient.  Errors: 22023, 42501, IN002,
 * IN001.
 */
Datum
inventory_reserve_lines(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	Interval   *ttl;
	InventoryLines lines;

	InventoryRequireArg(fcinfo, 2, "lines");
	InventoryParseLines(PG_GETARG_JSONB_P(2), &lines);
	ttl = InventoryTtlArg(fcinfo, 3);
	return ReserveLines(fcinfo, tenant, key, &lines, ttl);
}

/*
 * Transition
 *		The work of confirm, cancel and compensate.  Under the reservation's
 *		row lock, with the clock read after the lock is held:
 *		- pending and due (clock >= expires_at): expire it (units back to
 *		  available), status expired, applied;
 *		- confirm:	  pending -> confirmed (reserved -> consumed);
 *		- cancel:	  pending -> cancelled (reserved -> available);
 *		- compensate: confirmed -> compensated (consumed -> available);
 *		  pending is reported as status pending;
 *		- anything else is reported unchanged (rejected as insufficient).
 */
static Datum
Transition(FunctionCallInfo fcinfo, TransitionKind kind, const char *tenant,
		   const char *key, const char *reason)
{
	InventoryCall call;
	StoredReservation res;
	Outcome		o;
	TimestampTz now;
	Datum		result;

	InventoryBeginCall(fcinfo, &call, tenant);
	o.applied = false;
	o.res = &res;
	if (!FetchReservation(tenant, key, true, false, &res))
	{
		o.status = "not_found";
		o.state = NULL;
		o.res = NULL;
		result = OutcomeDatum(fcinfo, &call, &o);
		InventoryEndCall(&call);
		return result;
	}

	/* the row lock is held: this is the moment of the check */
	now = InventoryNow();
	if (strcmp(res.state, "pending") == 0 &&
		strcmp(EffectiveState(&res, now), "expired") == 0)
	{
		ApplyTransition(&call, tenant, &res, "expired", "expires_at reached",
						now, COUNTER_RESERVED, COUNTER_AVAILABLE);
		o.status = "expired";
		o.applied = true;
	}
	else if (kind == TRANSITION_CONFIRM && strcmp(res.state, "pending") == 0)
	{
		ApplyTransition(&call, tenant, &res, "confirmed", NULL, now,
						COUNTER_RESERVED, COUNTER_CONSUMED);
		o.status = "confirmed";
		o.applied = true;
	}
	else if (kind == TRANSITION_CANCEL && strcmp(res.state, "pending") == 0)
	{
		ApplyTransition(&call, tenant, &res, "cancelled", reason, now,
						COUNTER_RESERVED, COUNTER_AVAILABLE);
		o.status = "cancelled";
		o.applied = true;
	}
	else if (kind == TRANSITION_COMPENSATE && strcmp(res.state, "confirmed") == 0)
	{
		ApplyTransition(&call, tenant, &res, "compensated", reason, now,
						COUNTER_CONSUMED, COUNTER_AVAILABLE);
		o.status = "compensated";
		o.applied = true;
	}
	else
		o.status = StateStatus(res.state);

	o.state = res.state;
	result = OutcomeDatum(fcinfo, &call, &o);
	InventoryEndCall(&call);
	return result;
}

/*
 * inventory_confirm
 *		confirm(tenant text, request_key text) RETURNS inventory.outcome
 *
 * Accepts only an unexpired pending reservation; a due one is expired.
 * Status confirmed, expired, cancelled, insufficient, compensated or
 * not_found.  Errors: 22023, 42501.
 */
Datum
inventory_confirm(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");

	return Transition(fcinfo, TRANSITION_CONFIRM, tenant, key, NULL);
}

/*
 * inventory_cancel
 *		cancel(tenant text, request_key text, reason text DEFAULT NULL)
 *		RETURNS inventory.outcome
 *
 * Releases only pending stock; reason (at most 1000 characters) may be
 * NULL.  Status cancelled, expired, confirmed, insufficient, compensated or
 * not_found.  Errors: 22023, 42501.
 */
Datum
inventory_cancel(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	char	   *reason = InventoryReasonArg(fcinfo, 2, "reason", false);

	return Transition(fcinfo, TRANSITION_CANCEL, tenant, key, reason);
}

/*
 * inventory_compensate
 *		compensate(tenant text, request_key text, reason text)
 *		RETURNS inventory.outcome
 *
 * After fulfillment failed: confirmed -> compensated, units from consumed
 * back to available, once.  reason is required (1 to 1000 characters).
 * Status compensated, pending, cancelled, expired, insufficient or
 * not_found.  Errors: 22023, 42501.
 */
Datum
inventory_compensate(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	char	   *reason = InventoryReasonArg(fcinfo, 2, "reason", true);

	return Transition(fcinfo, TRANSITION_COMPENSATE, tenant, key, reason);
}

/*
 * inventory_lookup
 *		lookup(tenant text, request_key text) RETURNS inventory.outcome
 *
 * The stored status of the original reserve (reserved or insufficient) or
 * not_found, with the effective state; never changes data.  Errors: 22023,
 * 42501.
 */
Datum
inventory_lookup(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	InventoryCall call;
	StoredReservation res;
	Outcome		o;
	Datum		result;

	InventoryBeginCall(fcinfo, &call, tenant);
	o.applied = false;
	if (FetchReservation(tenant, key, false, true, &res))
	{
		o.status = ReserveStatus(&res);
		o.state = EffectiveState(&res, InventoryNow());
		o.res = &res;
	}
	else
	{
		o.status = "not_found";
		o.state = NULL;
		o.res = NULL;
	}
	result = OutcomeDatum(fcinfo, &call, &o);
	InventoryEndCall(&call);
	return result;
}

/*
 * ReleaseSlots
 *		0.3: returns the units of the expired reservations ids (an int8[])
 *		from reserved to available, all their SKUs' slots locked in (tenant,
 *		sku, slot) order by one statement and written by one more.
 */
static void
ReleaseSlots(Datum ids, TimestampTz now)
{
	uint64		n = InventoryExec(PLAN_EXPIRE_LINES, &ids, NULL, false,
								  SPI_OK_SELECT);
	const char **tenants = palloc(sizeof(char *) * Max(n, 1));
	const char **skus = palloc(sizeof(char *) * Max(n, 1));
	int64	   *qty = palloc(sizeof(int64) * Max(n, 1));
	uint64		i;
	bool		isnull;

	for (i = 0; i < n; i++)
	{
		tenants[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		skus[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		qty[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
											 SPI_tuptable->tupdesc, 3, &isnull));
	}
	InventorySlotMoveBatch((int) n, tenants, skus, qty, COUNTER_RESERVED,
						   COUNTER_AVAILABLE, now);
}

/*
 * inventory_expire_due
 *		expire_due(max_rows integer DEFAULT 1000) RETURNS integer
 *
 * Expires at most max_rows (at least 1) pending reservations whose
 * expires_at <= clock, oldest first, skipping rows another transaction
 * holds, and returns their units to available.  Returns how many it
 * expired.  Safe to call from many sessions at once.  Errors: 22023.
 */
Datum
inventory_expire_due(PG_FUNCTION_ARGS)
{
	InventoryCall call;
	int32		max_rows;
	TimestampTz now;
	Datum		values[3];
	uint64		n;

	InventoryRequireArg(fcinfo, 0, "max_rows");
	max_rows = PG_GETARG_INT32(0);
	if (max_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must be at least 1"),
				 errdetail("The value given is %d.", max_rows)));

	InventoryBeginCall(fcinfo, &call, NULL);
	now = InventoryNow();
	values[0] = TimestampTzGetDatum(now);
	values[1] = Int32GetDatum(max_rows);
	values[2] = CStringGetTextDatum(call.actor);
	n = InventoryExec(PLAN_EXPIRE_CLAIM, values, NULL, false, SPI_OK_SELECT);
	if (n > 0)
	{
		Datum	   *ids = palloc(sizeof(Datum) * n);
		uint64		i;
		bool		isnull;

		for (i = 0; i < n; i++)
			ids[i] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
								   1, &isnull);
		values[0] = PointerGetDatum(construct_array(ids, (int) n, INT8OID, 8,
													FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
		values[1] = TimestampTzGetDatum(now);
		if (InventorySlotted())
			ReleaseSlots(values[0], now);
		else
			InventoryExec(PLAN_EXPIRE_RELEASE, values, NULL, false, SPI_OK_UPDATE);
	}
	InventoryEndCall(&call);
	PG_RETURN_INT32((int32) n);
}
