/*-------------------------------------------------------------------------
 *
 * src/stock.c
 *		The operator functions: restock, adjust, check_invariants,
 *		grant_tenant and revoke_tenant (CONTRACT.md "Functions", "adjust",
 *		"Authorisation").
 *
 * restock and adjust lock the one stock row first, then look up their
 * request key in the ledger (its own namespace, apart from reservation
 * keys): under the row lock a concurrent call with the same key and SKU has
 * either committed (replay) or not started.  Operators act for every
 * tenant, so these functions check no tenant grant; EXECUTE decides.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "inventory_errcodes.h"
#include "pg_inventory.h"
#include "plans.h"

PG_FUNCTION_INFO_V1(inventory_restock);
PG_FUNCTION_INFO_V1(inventory_adjust);
PG_FUNCTION_INFO_V1(inventory_check_invariants);
PG_FUNCTION_INFO_V1(inventory_grant_tenant);
PG_FUNCTION_INFO_V1(inventory_revoke_tenant);
PG_FUNCTION_INFO_V1(inventory_set_stock_slots);

/*
 * KeyTakenMeanwhile
 *		Raises IN001 when a concurrent call took the ledger key for another
 *		SKU while this one held its stock lock.
 */
static void
KeyTakenMeanwhile(const char *tenant, const char *key)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVENTORY_KEY_REUSED),
			 errmsg("request key \"%s\" was already used with a different payload",
					key),
			 errdetail("A concurrent call of tenant \"%s\" used the key for another SKU.",
					   tenant),
			 errhint("Use a new request key for a new stock change.")));
}

/*
 * LedgerChange
 *		Applies one receipt or adjustment of delta units to available of
 *		(tenant, sku), idempotent on (tenant, key).  The stock row must
 *		exist (restock creates it first).  Returns available after it, or the
 *		value stored with the record on a replay.
 *
 * Errors: IN002 unknown SKU, IN001 key used with another (sku, delta,
 * kind), IN003 available would go negative, 22003 available would pass
 * the bigint range.
 */
static int64
LedgerChange(InventoryCall *call, const char *tenant, const char *key,
			 const char *sku, int64 delta, const char *kind,
			 const char *reason, TimestampTz now)
{
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		isnull;
	bool		slotted = InventorySlotted();
	int64		available;
	int64		after;
	int64		totals[3];
	void	   *slots = NULL;
	int			nslots = 0;

	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	if (slotted)
		nslots = InventorySlotLockSku(tenant, sku, totals, &slots);
	if (slotted ? nslots == 0 :
		InventoryExec(PLAN_STOCK_LOCK_ONE, values, NULL, false, SPI_OK_SELECT) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_UNKNOWN_OBJECT),
				 errmsg("SKU \"%s\" is not stocked for tenant \"%s\"", sku, tenant),
				 errhint("Restock a SKU to create it.")));
	available = slotted ? totals[COUNTER_AVAILABLE] :
		DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 1, &isnull));

	/* the key: a replay, or a refusal */
	values[1] = CStringGetTextDatum(key);
	if (InventoryExec(PLAN_LEDGER_FETCH, values, NULL, false,
					  SPI_OK_SELECT) == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *old_sku = SPI_getvalue(tup, desc, 1);
		char	   *old_kind = SPI_getvalue(tup, desc, 2);
		int64		old_delta = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));

		if (strcmp(old_sku, sku) != 0 || strcmp(old_kind, kind) != 0 ||
			old_delta != delta)
			ereport(ERROR,
					(errcode(ERRCODE_INVENTORY_KEY_REUSED),
					 errmsg("request key \"%s\" was already used with a different payload",
							key),
					 errdetail("The ledger record of tenant \"%s\" is a %s of " INT64_FORMAT
							   " units of SKU \"%s\"; this call is a %s of " INT64_FORMAT
							   " units of SKU \"%s\".",
							   tenant, old_kind, old_delta, old_sku, kind, delta, sku),
					 errhint("Use a new request key for a new stock change.")));
		return DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	}

	if (pg_add_s64_overflow(available, delta, &after))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("available of SKU \"%s\" would pass the bigint range", sku),
				 errdetail("Available is " INT64_FORMAT "; the change is " INT64_FORMAT ".",
						   available, delta)));
	if (after < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_WOULD_GO_NEGATIVE),
				 errmsg("%s of " INT64_FORMAT " units would make available of SKU \"%s\" negative",
						kind, delta, sku),
				 errdetail("Available is " INT64_FORMAT " for tenant \"%s\"; units held by pending reservations cannot be adjusted away.",
						   available, tenant),
				 errhint("Adjust by at most " INT64_FORMAT " units, or cancel reservations first.",
						 available)));

	values[1] = CStringGetTextDatum(sku);
	values[2] = CStringGetTextDatum(key);
	values[3] = CStringGetTextDatum(kind);
	values[4] = Int64GetDatum(delta);
	if (reason == NULL)
		nulls[5] = 'n';
	else
		values[5] = CStringGetTextDatum(reason);
	values[6] = CStringGetTextDatum(call->actor);
	values[7] = TimestampTzGetDatum(now);
	if (slotted)
	{
		Datum		rvalues[9];
		char		rnulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

		/* the SKU's available, spread evenly over its slots again */
		InventorySlotSetAvailable(slots, nslots, nslots, after, now);
		InventoryTestPause();
		memcpy(rvalues, values, sizeof(Datum) * 6);
		rnulls[5] = nulls[5];
		rvalues[6] = Int64GetDatum(after);
		rvalues[7] = values[6];
		rvalues[8] = values[7];
		if (InventoryExec(PLAN_LEDGER_RECORD, rvalues, rnulls, false,
						  SPI_OK_SELECT) == 0)
			KeyTakenMeanwhile(tenant, key);
		return after;
	}
	InventoryTestPause();
	if (InventoryExec(PLAN_LEDGER_APPLY, values, nulls, false,
					  SPI_OK_SELECT) == 0)
		KeyTakenMeanwhile(tenant, key);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * inventory_restock
 *		restock(tenant text, request_key text, sku text, quantity integer,
 *				reason text DEFAULT NULL) RETURNS bigint
 *
 * Records a receipt of quantity units (1 to 2147483647), creating the
 * tenant's SKU if it is new.  Returns available after it (a replay returns
 * the value stored with the record).  Errors: 22023 bad argument, IN001 key
 * reused with another (sku, quantity), 22003 available past bigint.
 */
Datum
inventory_restock(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	char	   *sku = InventoryNameArg(fcinfo, 2, "sku", false);
	char	   *reason;
	int32		quantity;
	InventoryCall call;
	TimestampTz now;
	Datum		values[3];
	int64		result;

	InventoryRequireArg(fcinfo, 3, "quantity");
	quantity = PG_GETARG_INT32(3);
	if (quantity < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("quantity must be at least 1"),
				 errdetail("The value given is %d.", quantity),
				 errhint("Record removals with inventory.adjust.")));
	reason = InventoryReasonArg(fcinfo, 4, "reason", false);

	InventoryBeginCall(fcinfo, &call, NULL);
	now = InventoryNow();
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	values[2] = TimestampTzGetDatum(now);
	InventoryExec(InventorySlotted() ? PLAN_SKU_ENSURE : PLAN_STOCK_ENSURE,
				  values, NULL, false, SPI_OK_INSERT);
	result = LedgerChange(&call, tenant, key, sku, quantity, "receipt", reason,
						  now);
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
 * reason), IN002 unknown SKU, IN003 available would go negative, IN001.
 */
Datum
inventory_adjust(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key");
	char	   *sku = InventoryNameArg(fcinfo, 2, "sku", false);
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
				 errmsg("delta must not be zero")));
	if ((strcmp(kind, "return") == 0 && delta < 0) ||
		(strcmp(kind, "loss") == 0 && delta > 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("delta " INT64_FORMAT " contradicts kind %s", delta, kind),
				 errhint("A return adds units (delta > 0), a loss removes them (delta < 0); a correction may do either.")));
	reason = InventoryReasonArg(fcinfo, 5, "reason", true);

	InventoryBeginCall(fcinfo, &call, NULL);
	result = LedgerChange(&call, tenant, key, sku, delta, kind, reason,
						  InventoryNow());
	InventoryEndCall(&call);
	PG_RETURN_INT64(result);
}

/* Runs a read-only check plan and appends its rows to the result set. */
static void
EmitCheckRows(ReturnSetInfo *rsinfo, InventoryPlanId plan)
{
	uint64		n = InventoryExec(plan, NULL, NULL, true, SPI_OK_SELECT);
	uint64		i;

	for (i = 0; i < n; i++)
	{
		Datum		values[4];
		bool		nulls[4];
		int			col;

		for (col = 0; col < 4; col++)
			values[col] = SPI_getbinval(SPI_tuptable->vals[i],
										SPI_tuptable->tupdesc, col + 1,
										&nulls[col]);
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
 * net received), counts_nonnegative, reserved_matches_pending,
 * consumed_matches_confirmed, transition_log_matches_version (one log row
 * per version), and from 0.3 slots_match_sku (slots numbered 0 to slots - 1).
 */
Datum
inventory_check_invariants(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InventoryCall call;

	InitMaterializedSRF(fcinfo, 0);
	InventoryBeginCall(fcinfo, &call, NULL);
	EmitCheckRows(rsinfo, PLAN_CHECK_INVARIANTS);
	if (InventorySlotted())
		EmitCheckRows(rsinfo, PLAN_CHECK_SLOTS);
	InventoryEndCall(&call);
	return (Datum) 0;
}

/*
 * GrantChange
 *		The work of grant_tenant and revoke_tenant: tenant within the name
 *		limits or '*', member a role (not NULL).  Returns whether a grant
 *		was added or removed.  Errors: 22023.
 */
static Datum
GrantChange(FunctionCallInfo fcinfo, InventoryPlanId plan)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", true);
	InventoryCall call;
	Datum		values[2];
	uint64		n;

	InventoryRequireArg(fcinfo, 1, "member");
	if (!OidIsValid(PG_GETARG_OID(1)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("member must be a role")));

	InventoryBeginCall(fcinfo, &call, NULL);
	values[0] = CStringGetTextDatum(tenant);
	values[1] = PG_GETARG_DATUM(1);
	n = InventoryExec(plan, values, NULL, false,
					  plan == PLAN_GRANT_TENANT ? SPI_OK_INSERT_RETURNING :
					  SPI_OK_DELETE_RETURNING);
	InventoryEndCall(&call);
	PG_RETURN_BOOL(n > 0);
}

/*
 * inventory_grant_tenant
 *		grant_tenant(tenant text, member regrole) RETURNS boolean
 *
 * Lets member (and roles with its privileges) act for tenant; '*' means
 * every tenant.  Returns false when the grant existed.  Errors: 22023.
 */
Datum
inventory_grant_tenant(PG_FUNCTION_ARGS)
{
	return GrantChange(fcinfo, PLAN_GRANT_TENANT);
}

/*
 * inventory_revoke_tenant
 *		revoke_tenant(tenant text, member regrole) RETURNS boolean
 *
 * Removes exactly the grant (tenant, member); revoking '*' removes the
 * wildcard only.  Returns false for an unknown grant.  Errors: 22023.
 */
Datum
inventory_revoke_tenant(PG_FUNCTION_ARGS)
{
	return GrantChange(fcinfo, PLAN_REVOKE_TENANT);
}

/*
 * inventory_set_stock_slots
 *		set_stock_slots(tenant text, sku text, slots integer) RETURNS integer
 *
 * Splits the counters of the tenant's SKU over slots (1 to 256) stock slot
 * rows, so that concurrent reservations of a hot SKU take units from
 * different rows (0.3).  Available units are spread evenly over the slots;
 * when slots shrink, the reserved and consumed units of the dropped slots
 * move to slot 0.  The SKU's totals do not change: no ledger record, no
 * event.  Calling it with the current count rebalances.  Returns the
 * previous slot count.  Errors: 22023, IN002 unknown SKU.
 */
Datum
inventory_set_stock_slots(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", false);
	char	   *sku = InventoryNameArg(fcinfo, 1, "sku", false);
	int32		slots;
	int32		old;
	InventoryCall call;
	TimestampTz now;
	Datum		values[5];
	bool		isnull;
	int64		totals[3];
	void	   *state;
	int			nrows;

	InventoryRequireArg(fcinfo, 2, "slots");
	slots = PG_GETARG_INT32(2);
	if (slots < 1 || slots > 256)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slots must be 1 to 256"),
				 errdetail("The value given is %d.", slots)));

	InventoryBeginCall(fcinfo, &call, NULL);
	now = InventoryNow();
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	if (InventoryExec(PLAN_SKU_LOCK, values, NULL, false, SPI_OK_SELECT) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVENTORY_UNKNOWN_OBJECT),
				 errmsg("SKU \"%s\" is not stocked for tenant \"%s\"", sku, tenant),
				 errhint("Restock a SKU to create it.")));
	old = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
									  SPI_tuptable->tupdesc, 1, &isnull));
	if (slots > old)
	{
		values[2] = Int32GetDatum(old);
		values[3] = Int32GetDatum(slots);
		values[4] = TimestampTzGetDatum(now);
		InventoryExec(PLAN_SLOT_INSERT, values, NULL, false, SPI_OK_INSERT);
		values[2] = Int32GetDatum(slots);
		InventoryExec(PLAN_SKU_SET_SLOTS, values, NULL, false, SPI_OK_UPDATE);
	}
	nrows = InventorySlotLockSku(tenant, sku, totals, &state);
	if (slots < nrows)
		InventorySlotGather(state, nrows, slots, now);
	InventorySlotSetAvailable(state, nrows, slots, totals[COUNTER_AVAILABLE], now);
	if (slots < nrows)
	{
		values[2] = Int32GetDatum(slots);
		if (InventoryExec(PLAN_SLOT_DELETE, values, NULL, false,
						  SPI_OK_DELETE) != (uint64) (nrows - slots))
			elog(ERROR, "pg_inventory: slots of SKU \"%s\" were not emptied", sku);
		InventoryExec(PLAN_SKU_SET_SLOTS, values, NULL, false, SPI_OK_UPDATE);
	}
	InventoryEndCall(&call);
	PG_RETURN_INT32(old);
}
