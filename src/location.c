/*-------------------------------------------------------------------------
 *
 * src/location.c
 *		Locations (schema 0.5 on): set_location, set_allocation_policy,
 *		set_stock_policy and availability (README "Locations").
 *
 * A location is a place a tenant keeps stock (a warehouse, a store, a
 * drop-shipper): a row of inventory.location with a priority (smaller
 * serves first, ties by name) and an active flag.  A SKU's counters at a
 * location are the slots of its inventory.stock_location row, which also
 * holds the stock policy there: safety_stock (units counted as available
 * but never reserved) and low_threshold (the 'low' level, level.c).  The
 * allocation policy of a tenant (inventory.allocation_policy, no row:
 * allow_split false) says whether one line may be served from several
 * locations.
 *
 * On a schema before 0.5 these functions raise 0A000 (the SQL functions
 * exist from 0.5 on only; the check guards a hand-made declaration).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "inventory_errcodes.h"
#include "pg_inventory.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(inventory_set_location);
PG_FUNCTION_INFO_V1(inventory_set_allocation_policy);
PG_FUNCTION_INFO_V1(inventory_set_stock_policy);
PG_FUNCTION_INFO_V1(inventory_availability);

/*
 * InventoryRequireLocated
 *		Raises 0A000 unless the call runs on schema 0.5 or later (one with
 *		locations); function names the SQL function for the message.
 */
void
InventoryRequireLocated(const InventoryCall *call, const char *function)
{
	if (!call->located)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s needs schema 0.5: ALTER EXTENSION pg_inventory UPDATE",
						function),
				 errdetail("The database has the schema of an older version of pg_inventory, which has no locations."),
				 errhint("A superuser runs ALTER EXTENSION pg_inventory UPDATE.")));
}

/*
 * InventoryUnknownLocation
 *		Raises IN004: the tenant has no location of that name.
 */
void
InventoryUnknownLocation(const char *tenant, const char *location)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVENTORY_UNKNOWN_LOCATION),
			 errmsg("location \"%s\" does not exist for tenant \"%s\"",
					location, tenant),
			 errhint("An operator creates a location with inventory.set_location.")));
}

/* $1 tenant, $2 location, $3 priority, $4 active, $5 clock */
/*
 * $1 tenant, $2 location, $3 priority, $4 active, $5 clock: a new location;
 * no row when it exists (a concurrent creator is waited for)
 */
static InventoryStatement insert_location = {
	"create location",
	"INSERT INTO inventory.location AS l "
	"(tenant, location, priority, active, created_at, updated_at) "
	"VALUES ($1, $2, $3, $4, $5, $5) "
	"ON CONFLICT (tenant, location) DO NOTHING RETURNING 1",
	5, {TEXTOID, TEXTOID, INT4OID, BOOLOID, TIMESTAMPTZOID}
};

/* the same values for the existing location, locked before: one row if changed */
static InventoryStatement update_location = {
	"update location",
	"UPDATE inventory.location l SET priority = $3, active = $4, updated_at = $5 "
	"WHERE l.tenant = $1 AND l.location = $2 "
	"AND (l.priority, l.active) IS DISTINCT FROM ($3, $4) RETURNING 1",
	5, {TEXTOID, TEXTOID, INT4OID, BOOLOID, TIMESTAMPTZOID}
};

/*
 * $1 tenant, $2 location: its priority and active flag as JSON, for the
 * audit, locked until the update changes them
 */
static InventoryStatement lock_location = {
	"lock location",
	"SELECT jsonb_build_object('priority', l.priority, 'active', l.active)::text "
	"FROM inventory.location l WHERE l.tenant = $1 AND l.location = $2 FOR UPDATE",
	2, {TEXTOID, TEXTOID}
};

/*
 * inventory_set_location
 *		set_location(tenant text, location text, priority integer DEFAULT 100,
 *					 active boolean DEFAULT true) RETURNS boolean
 *
 * Creates the tenant's location, or updates its priority (-1000000 to
 * 1000000; smaller serves first, ties by name) and active flag (an
 * inactive location keeps its stock but serves no reservation).  Returns
 * true when something changed.  Errors: 22023 bad argument, 42501 tenant
 * not granted, 0A000 schema before 0.5.
 */
Datum
inventory_set_location(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	char	   *location = InventoryNameArg(fcinfo, 1, "location", NAME_CANONICAL);
	int32		priority;
	bool		active;
	InventoryCall call;
	Datum		values[5];
	char	   *old;
	bool		changed;

	InventoryRequireArg(fcinfo, 2, "priority");
	priority = PG_GETARG_INT32(2);
	if (priority < -INVENTORY_PRIORITY_MAX || priority > INVENTORY_PRIORITY_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("priority must be between %d and %d",
						-INVENTORY_PRIORITY_MAX, INVENTORY_PRIORITY_MAX),
				 errdetail("The value given is %d.", priority),
				 errhint("Smaller priorities serve first; locations of equal priority serve in name order.")));
	InventoryRequireArg(fcinfo, 3, "active");
	active = PG_GETARG_BOOL(3);

	InventoryBeginCall(fcinfo, &call, tenant);
	InventoryRequireLocated(&call, "inventory.set_location");
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(location);
	values[2] = Int32GetDatum(priority);
	values[3] = BoolGetDatum(active);
	values[4] = TimestampTzGetDatum(InventoryNow());
	/*
	 * Create it, or (it exists, made by someone else, committed) lock it,
	 * read what it was for the audit, and change it: the old values the
	 * audit records are the ones this call replaced.
	 */
	old = "null";
	changed = InventoryRun(&insert_location, values, NULL,
						   SPI_OK_INSERT_RETURNING) > 0;
	if (!changed)
	{
		if (InventoryRun(&lock_location, values, NULL, SPI_OK_SELECT) == 0)
			elog(ERROR, "pg_inventory: location \"%s\" conflicted but is not visible",
				 location);
		old = InventoryResultText(0, 1);
		changed = InventoryRun(&update_location, values, NULL,
							   SPI_OK_UPDATE_RETURNING) > 0;
	}
	if (changed)
		InventoryAudit(&call, "set_location", tenant,
					   psprintf("{\"location\": %s, \"old\": %s, "
								"\"new\": {\"priority\": %d, \"active\": %s}}",
								InventoryJsonText(location), old,
								priority, active ? "true" : "false"),
					   NULL);
	InventoryEndCall(&call);
	PG_RETURN_BOOL(changed);
}

/*
 * $1 tenant, $2 allow_split, $3 clock.  No row means allow_split false, so
 * false for a tenant without a row writes nothing.
 */
static InventoryStatement upsert_policy = {
	"set allocation policy",
	"INSERT INTO inventory.allocation_policy AS p (tenant, allow_split, updated_at) "
	"SELECT $1, $2, $3 WHERE $2 OR EXISTS (SELECT 1 FROM inventory.allocation_policy q "
	"WHERE q.tenant = $1) "
	"ON CONFLICT (tenant) DO UPDATE SET allow_split = EXCLUDED.allow_split, "
	"updated_at = EXCLUDED.updated_at "
	"WHERE p.allow_split IS DISTINCT FROM EXCLUDED.allow_split "
	"RETURNING 1",
	3, {TEXTOID, BOOLOID, TIMESTAMPTZOID}
};

/*
 * inventory_set_allocation_policy
 *		set_allocation_policy(tenant text, allow_split boolean) RETURNS boolean
 *
 * Sets whether a reservation line that no single active location can
 * serve whole may be filled from several (in priority order); the default
 * is false.  Returns true when the policy changed.  Errors: 22023 bad
 * argument, 42501 tenant not granted, 0A000 schema before 0.5.
 */
Datum
inventory_set_allocation_policy(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	InventoryCall call;
	Datum		values[3];
	bool		changed;

	InventoryRequireArg(fcinfo, 1, "allow_split");
	InventoryBeginCall(fcinfo, &call, tenant);
	InventoryRequireLocated(&call, "inventory.set_allocation_policy");
	values[0] = CStringGetTextDatum(tenant);
	values[1] = PG_GETARG_DATUM(1);
	values[2] = TimestampTzGetDatum(InventoryNow());
	changed = InventoryRun(&upsert_policy, values, NULL,
						   SPI_OK_INSERT_RETURNING) > 0;
	if (changed)
		InventoryAudit(&call, "set_allocation_policy", tenant,
					   PG_GETARG_BOOL(1) ?
					   "{\"old\": {\"allow_split\": false}, \"new\": {\"allow_split\": true}}" :
					   "{\"old\": {\"allow_split\": true}, \"new\": {\"allow_split\": false}}",
					   NULL);
	InventoryEndCall(&call);
	PG_RETURN_BOOL(changed);
}

/* $1 tenant, $2 sku, $3 location: whether each exists, and the SKU there */
static InventoryStatement find_stock_location = {
	"find SKU and location",
	"SELECT EXISTS (SELECT 1 FROM inventory.sku k WHERE k.tenant = $1 AND k.sku = $2), "
	"EXISTS (SELECT 1 FROM inventory.location l WHERE l.tenant = $1 AND l.location = $3), "
	"EXISTS (SELECT 1 FROM inventory.stock_location sl WHERE sl.tenant = $1 "
	"AND sl.sku = $2 AND sl.location = $3)",
	3, {TEXTOID, TEXTOID, TEXTOID}
};

/*
 * $1 tenant, $2 sku, $3 location, $4 safety_stock, $5 low_threshold.  A row
 * when it changed something: the old policy as JSON, for the audit (the
 * row is the caller's to change: it holds the SKU's slots there).
 */
static InventoryStatement update_stock_policy = {
	"set stock policy",
	"UPDATE inventory.stock_location sl SET safety_stock = $4, low_threshold = $5 "
	"FROM inventory.stock_location o "
	"WHERE sl.tenant = $1 AND sl.sku = $2 AND sl.location = $3 "
	"AND o.tenant = sl.tenant AND o.sku = sl.sku AND o.location = sl.location "
	"AND (sl.safety_stock, sl.low_threshold) IS DISTINCT FROM ($4, $5) "
	"RETURNING jsonb_build_object('safety_stock', o.safety_stock, "
	"'low_threshold', o.low_threshold)::text",
	5, {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID}
};

/* Reads a bigint argument that must be at least 0 (NULL if allowed). */
static int64
UnitsArg(FunctionCallInfo fcinfo, int argno, const char *argname,
		 bool nullable, bool *isnull)
{
	int64		units;

	*isnull = PG_ARGISNULL(argno);
	if (*isnull)
	{
		if (!nullable)
			InventoryRequireArg(fcinfo, argno, argname);
		return 0;
	}
	units = PG_GETARG_INT64(argno);
	if (units < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", argname),
				 errdetail("The value given is " INT64_FORMAT ".", units),
				 nullable ?
				 errhint("NULL means no threshold: the level is never \"low\".") :
				 errhint("0 means every available unit may be reserved.")));
	return units;
}

/*
 * inventory_set_stock_policy
 *		set_stock_policy(tenant text, sku text, location text,
 *						 safety_stock bigint DEFAULT 0,
 *						 low_threshold bigint DEFAULT NULL) RETURNS boolean
 *
 * Sets the stock policy of the tenant's SKU at a location: safety_stock
 * units (0 or more) stay available but are never reserved; the level is
 * 'low' when the sellable units (available - safety_stock, at least 0) are
 * at most low_threshold (0 or more; NULL: never 'low').  The SKU's
 * counters at the location are created (all 0) when it was never stocked
 * there.  The level is evaluated again, which may write a level event
 * (level.c).  Returns true when the policy changed or the counters were
 * created.  Errors: 22023 bad argument, 42501 tenant not granted, IN002
 * unknown SKU, IN004 unknown location, 0A000 schema before 0.5.
 */
Datum
inventory_set_stock_policy(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	char	   *sku = InventoryNameArg(fcinfo, 1, "sku", NAME_CANONICAL);
	char	   *location = InventoryNameArg(fcinfo, 2, "location", NAME_CANONICAL);
	bool		isnull;
	int64		safety = UnitsArg(fcinfo, 3, "safety_stock", false, &isnull);
	int64		low = UnitsArg(fcinfo, 4, "low_threshold", true, &isnull);
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	int64		counts[INVENTORY_COUNTERS];
	InventoryCall call;
	Datum		values[5];
	TimestampTz now;
	bool		stocked;
	bool		changed;

	InventoryBeginCall(fcinfo, &call, tenant);
	InventoryRequireLocated(&call, "inventory.set_stock_policy");
	now = InventoryNow();
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(sku);
	values[2] = CStringGetTextDatum(location);
	InventoryRun(&find_stock_location, values, NULL, SPI_OK_SELECT);
	if (!DatumGetBool(InventoryResultDatum(0, 1, &isnull)))
		InventoryUnknownSku(tenant, sku, NULL);
	if (!DatumGetBool(InventoryResultDatum(0, 2, &isnull)))
		InventoryUnknownLocation(tenant, location);
	stocked = DatumGetBool(InventoryResultDatum(0, 3, &isnull));
	if (!stocked)
		call.storage->ensure_sku(tenant, sku, location, now);

	/* the slots first (the lock order), so the level is exact */
	if (call.storage->lock_sku(tenant, sku, location, counts) == NULL)
		InventoryUnknownSku(tenant, sku, NULL);

	values[3] = Int64GetDatum(safety);
	values[4] = Int64GetDatum(low);
	if (PG_ARGISNULL(4))
		nulls[4] = 'n';
	changed = InventoryRun(&update_stock_policy, values, nulls,
						   SPI_OK_UPDATE_RETURNING) > 0;
	if (changed || !stocked)
	{
		/* old: null when the SKU's counters were created here just now */
		char	   *old = changed && stocked ? InventoryResultText(0, 1) : "null";

		InventoryAudit(&call, "set_stock_policy", tenant,
					   psprintf("{\"sku\": %s, \"location\": %s, \"old\": %s, "
								"\"new\": {\"safety_stock\": " INT64_FORMAT
								", \"low_threshold\": %s}}",
								InventoryJsonText(sku), InventoryJsonText(location),
								old, safety,
								PG_ARGISNULL(4) ? "null" : psprintf(INT64_FORMAT, low)),
					   NULL);
	}
	changed = changed || !stocked;
	/* 0.6: the slots' guards follow the policy (the slots are locked) */
	InventoryRefreshSlotGuards(tenant, sku);
	InventoryCheckLevels(1, (const char *const *) &tenant,
						 (const char *const *) &sku,
						 (const char *const *) &location, now);
	InventoryEndCall(&call);
	PG_RETURN_BOOL(changed);
}

/*
 * The availability of the SKUs $2 (text[]) of tenant $1: one row per (sku,
 * active location) the SKU is stocked at, by (sku, priority, location),
 * each SKU followed by its total row (location NULL: the sums of the rows
 * above it, zeros for a known SKU stocked at no active location).  SKUs
 * the tenant does not have give no row.  Columns: sku, location, sellable,
 * available, reserved, consumed, then the sort keys.
 */
static InventoryStatement availability = {
	"read availability",
	"WITH k AS (SELECT DISTINCT u.sku FROM unnest($2) AS u(sku)), "
	"r AS MATERIALIZED (SELECT sl.sku, sl.location, l.priority, "
	"COALESCE(sum(s.available), 0) AS available, "
	"COALESCE(sum(s.reserved), 0) AS reserved, "
	"COALESCE(sum(s.consumed), 0) AS consumed, "
	"greatest(COALESCE(sum(s.available), 0) - sl.safety_stock, 0) AS sellable "
	"FROM k JOIN inventory.stock_location sl ON sl.tenant = $1 AND sl.sku = k.sku "
	"JOIN inventory.location l ON l.tenant = sl.tenant AND l.location = sl.location "
	"AND l.active "
	"LEFT JOIN inventory.stock_slot s ON s.tenant = sl.tenant AND s.sku = sl.sku "
	"AND s.location = sl.location "
	"GROUP BY sl.sku, sl.location, l.priority, sl.safety_stock) "
	"SELECT x.sku::text, x.location::text, x.sellable::bigint, x.available::bigint, "
	"x.reserved::bigint, x.consumed::bigint FROM ("
	"SELECT r.sku, r.location, r.sellable, r.available, r.reserved, r.consumed, "
	"false AS total, r.priority FROM r "
	"UNION ALL "
	"SELECT g.sku, NULL, COALESCE(sum(r.sellable), 0), COALESCE(sum(r.available), 0), "
	"COALESCE(sum(r.reserved), 0), COALESCE(sum(r.consumed), 0), true, NULL "
	"FROM inventory.sku g JOIN k ON g.tenant = $1 AND g.sku = k.sku "
	"LEFT JOIN r ON r.sku = g.sku GROUP BY g.sku) x "
	"ORDER BY x.sku COLLATE \"C\", x.total, x.priority, x.location COLLATE \"C\"",
	2, {TEXTOID, TEXTARRAYOID}
};

/*
 * SkusArg
 *		The skus argument of availability: a text[] of 1 to 1000 SKU names
 *		without NULLs (duplicates allowed).  Errors: 22023.
 */
static Datum
SkusArg(FunctionCallInfo fcinfo, int argno)
{
	ArrayType  *skus;
	Datum	   *elems;
	bool	   *elem_nulls;
	int			n;
	int			i;

	InventoryRequireArg(fcinfo, argno, "skus");
	skus = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(skus) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("skus must be a one-dimensional array"),
				 errdetail("The array given has %d dimensions.", ARR_NDIM(skus))));
	deconstruct_array(skus, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elem_nulls, &n);
	if (n < 1 || n > INVENTORY_AVAILABILITY_MAX_SKUS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("skus must name 1 to %d SKUs",
						INVENTORY_AVAILABILITY_MAX_SKUS),
				 errdetail("The array has %d elements.", n),
				 n > 0 ? errhint("Ask for more SKUs in several calls.") : 0));
	for (i = 0; i < n; i++)
	{
		if (elem_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("skus must not contain NULL"),
					 errdetail("Element %d is NULL.", i + 1)));
		InventoryCheckName(psprintf("skus[%d]", i + 1),
						   TextDatumGetCString(elems[i]), 0);
	}
	return PointerGetDatum(skus);
}

/*
 * inventory_availability
 *		availability(tenant text, skus text[]) RETURNS TABLE(sku text,
 *			location text, sellable bigint, available bigint,
 *			reserved bigint, consumed bigint)
 *
 * For 1 to 1000 SKUs of the tenant, one row per (sku, active location) it
 * is stocked at, by (sku, priority, location), each SKU followed by a
 * total row (location NULL) that sums the rows above it; SKUs the tenant
 * does not have are absent.  Units: sellable = greatest(available -
 * safety_stock, 0), what reservations may take there.  available,
 * reserved and consumed are NULL unless the caller acts for every tenant
 * (a grant of '*') or is a superuser.  A plain read of the call's snapshot:
 * no row locks, nothing waits.  Errors: 22023 bad argument, 42501 tenant
 * not granted, 0A000 schema before 0.5.
 */
Datum
inventory_availability(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	Datum		values[2];
	InventoryCall call;
	bool		counters;
	uint64		n;
	uint64		i;

	values[1] = SkusArg(fcinfo, 1);
	InitMaterializedSRF(fcinfo, 0);
	InventoryBeginCall(fcinfo, &call, tenant);
	InventoryRequireLocated(&call, "inventory.availability");
	counters = InventoryActsForAll(&call);
	values[0] = CStringGetTextDatum(tenant);
	n = InventoryRunReadOnly(&availability, values, NULL);
	for (i = 0; i < n; i++)
	{
		Datum		row[6];
		bool		nulls[6];
		int			col;

		for (col = 0; col < 6; col++)
			row[col] = InventoryResultDatum(i, col + 1, &nulls[col]);
		if (!counters)
			nulls[3] = nulls[4] = nulls[5] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
	InventoryEndCall(&call);
	return (Datum) 0;
}
