/*-------------------------------------------------------------------------
 *
 * src/allocate.c
 *		Allocation (schema 0.5 on): which locations serve the lines of a
 *		reservation (README "Locations and allocation").
 *
 * The policy, deterministic, over the tenant's active locations in
 * (priority, name) order (a smaller priority serves first):
 *	1. a line that pins a location is held there only (an inactive location
 *	   serves nothing);
 *	2. the first location that can serve every unpinned line whole serves
 *	   them all (fewest shipments);
 *	3. else each unpinned line, in sku order, comes whole from the first
 *	   location that can serve it;
 *	4. else, only where the tenant's allocation_policy allows splitting, a
 *	   line no single location can serve is filled from the locations in
 *	   order;
 *	5. else the reservation is insufficient: nothing is held.
 * A location serves a SKU's units beyond its safety stock (sellable).
 *
 * The common case costs nothing extra: the first try holds every unpinned
 * line at the first active location, which is the policy's answer whenever
 * it fits (rule 2).  Only when it does not, that try is rolled back (with
 * its row locks) and the exact path locks every slot of the cart's SKUs at
 * every location in (tenant, sku, location, slot) order, plans on the exact
 * sellable units, and holds the plan.  Both paths lock in the global order
 * of pg_inventory.h, so carts never deadlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "inventory_errcodes.h"
#include "backend_cache.h"
#include "statement.h"
#include "storage.h"
#include "allocate.h"

/*
 * The location cache (0.6 on, see backend_cache.h): per backend, each
 * tenant's first two active locations in allocation order, which every
 * reservation needs (with one, the policy is that location:
 * InventoryFirstLocations).  Forgotten at every invalidation of
 * inventory.location, which its statement trigger location_changed sends
 * at each change of the table (whoever makes it); filled from the latest
 * committed rows (and the caller's own changes), never from an older
 * snapshot, so that a change seen once is never forgotten.  A name is at
 * most 64 characters, 256 bytes.  At most 1,024 tenants (about 800 KB).
 */
#define LOCATION_CACHE_NAME 257

typedef struct FirstLocations
{
	char		tenant[LOCATION_CACHE_NAME];	/* the key */
	int			count;			/* 0, 1 or 2 */
	char		names[2][LOCATION_CACHE_NAME];
} FirstLocations;

static InventoryBackendCache location_cache = {
	"pg_inventory first locations", "location", NULL,
	LOCATION_CACHE_NAME, sizeof(FirstLocations), true, 1024, NULL
};

/* $1 tenant: its first two active locations in allocation order */
static InventoryStatement first_locations = {
	"read first locations",
	"SELECT l.location::text FROM inventory.location l "
	"WHERE l.tenant = $1 AND l.active ORDER BY l.priority, l.location LIMIT 2",
	1, {TEXTOID}
};

/*
 * InventoryFirstLocations
 *		0.6 on: the tenant's first two active locations in allocation order
 *		(at most two names in names[], palloc'd), from the location cache
 *		or read and remembered.  Returns how many (0 to 2).  Runs inside a
 *		call (SPI connected, as the owner).  Errors: those of the read.
 */
int
InventoryFirstLocations(const char *tenant, char ***names)
{
	FirstLocations *entry;
	char		key[LOCATION_CACHE_NAME];
	bool		cached = strlen(tenant) < LOCATION_CACHE_NAME;
	uint64		n;
	uint64		generation = 0;
	int			i;

	*names = palloc(sizeof(char *) * 2);
	if (cached)
	{
		memset(key, 0, LOCATION_CACHE_NAME);
		strcpy(key, tenant);
		entry = InventoryCacheFind(&location_cache, key);
		if (entry != NULL)
		{
			for (i = 0; i < entry->count; i++)
				(*names)[i] = pstrdup(entry->names[i]);
			return entry->count;
		}
		generation = InventoryCacheBeginRead(&location_cache);
	}
	n = InventoryRunLatest(&first_locations, (Datum[]) {CStringGetTextDatum(tenant)},
						   NULL);
	for (i = 0; i < (int) n; i++)
	{
		(*names)[i] = InventoryResultText(i, 1);
		if (strlen((*names)[i]) >= LOCATION_CACHE_NAME)
			cached = false;
	}
	if (cached &&
		(entry = InventoryCacheStore(&location_cache, generation, key)) != NULL)
	{
		entry->count = (int) n;
		for (i = 0; i < (int) n; i++)
			strlcpy(entry->names[i], (*names)[i], LOCATION_CACHE_NAME);
	}
	return (int) n;
}

/*
 * The tenant's $1 locations (names, active flags, priorities) in (priority,
 * name) order, read in one scan, and its allow_split
 */
static InventoryStatement read_policy = {
	"read allocation policy",
	"SELECT COALESCE(array_agg(l.location::text ORDER BY l.priority, l.location), '{}'), "
	"COALESCE(array_agg(l.active ORDER BY l.priority, l.location), '{}'), "
	"COALESCE(array_agg(l.priority ORDER BY l.priority, l.location), '{}'), "
	"COALESCE((SELECT a.allow_split FROM inventory.allocation_policy a "
	"WHERE a.tenant = $1), false) "
	"FROM inventory.location l WHERE l.tenant = $1",
	1, {TEXTOID}
};

/*
 * InventoryReadPolicy
 *		Reads the tenant's locations (every one, in allocation order, with
 *		its active flag) and whether it allows splitting a line.
 */
void
InventoryReadPolicy(const char *tenant, InventoryPolicy *policy)
{
	Datum		value = CStringGetTextDatum(tenant);
	Datum	   *names;
	Datum	   *active;
	Datum	   *priority;
	bool		isnull;
	int			n;
	int			i;

	InventoryRun(&read_policy, &value, NULL, SPI_OK_SELECT);
	deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 1, &isnull)),
					  TEXTOID, -1, false, TYPALIGN_INT, &names, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 2, &isnull)),
					  BOOLOID, 1, true, TYPALIGN_CHAR, &active, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 3, &isnull)),
					  INT4OID, 4, true, TYPALIGN_INT, &priority, NULL, &n);
	policy->count = n;
	policy->names = palloc(sizeof(char *) * Max(n, 1));
	policy->active = palloc(sizeof(bool) * Max(n, 1));
	policy->priority = palloc(sizeof(int32) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		policy->names[i] = TextDatumGetCString(names[i]);
		policy->active[i] = DatumGetBool(active[i]);
		policy->priority[i] = DatumGetInt32(priority[i]);
	}
	policy->allow_split = DatumGetBool(InventoryResultDatum(0, 4, &isnull));
}

/* The position of location in the policy's order, or -1 */
int
InventoryPolicyRank(const InventoryPolicy *policy, const char *location)
{
	int			i;

	for (i = 0; i < policy->count; i++)
		if (strcmp(policy->names[i], location) == 0)
			return i;
	return -1;
}

/* Appends a line (sku, location, quantity) to lines (capacity: enough) */
static void
AddLine(InventoryLines *lines, const char *sku, const char *location,
		int64 quantity)
{
	InventoryLine *l = &lines->items[lines->count++];

	l->sku = (char *) sku;
	l->location = (char *) location;
	l->quantity = quantity;
	l->available = -1;
	lines->total += quantity;
}

/*
 * InventorySortLines
 *		Sorts lines by (sku, location) and merges equal pairs (summing).
 */
void
InventorySortLines(InventoryLines *lines)
{
	int			i;
	int			out = 0;

	qsort(lines->items, lines->count, sizeof(InventoryLine),
		  InventoryCompareLines);
	for (i = 0; i < lines->count; i++)
	{
		if (out > 0 && InventoryCompareLines(&lines->items[out - 1],
											 &lines->items[i]) == 0)
			lines->items[out - 1].quantity += lines->items[i].quantity;
		else
			lines->items[out++] = lines->items[i];
	}
	lines->count = out;
}

/* The distinct SKUs of lines (sorted by sku), as an array */
int
InventoryDistinctSkus(const InventoryLines *lines, const char ***skus)
{
	const char **out = palloc(sizeof(char *) * Max(lines->count, 1));
	int			n = 0;
	int			i;

	for (i = 0; i < lines->count; i++)
		if (n == 0 || strcmp(out[n - 1], lines->items[i].sku) != 0)
			out[n++] = lines->items[i].sku;
	*skus = out;
	return n;
}

/* A plan in the making: the exact sellable units, taken as lines are placed */
typedef struct AllocationPlan
{
	const InventoryPolicy *policy;
	int			nstock;
	InventorySellable *stock;
	int64	   *left;			/* sellable units not yet planned, per stock */
} AllocationPlan;

/* Units of sku still sellable at location, 0 where it is not kept */
static int64 *
Left(AllocationPlan *plan, const char *sku, const char *location)
{
	static int64 none;
	int			i;

	for (i = 0; i < plan->nstock; i++)
		if (strcmp(plan->stock[i].sku, sku) == 0 &&
			strcmp(plan->stock[i].location, location) == 0)
			return &plan->left[i];
	none = 0;
	return &none;
}

/*
 * PlanLines
 *		Places the request's lines by the policy (rules 1 to 4) on the exact
 *		sellable units, into held; false when they do not fit (rule 5).
 */
static bool
PlanLines(AllocationPlan *plan, const InventoryLines *request, InventoryLines *held)
{
	const InventoryPolicy *policy = plan->policy;
	bool	   *placed = palloc0(sizeof(bool) * Max(request->count, 1));
	int			nunpinned = 0;
	int			i;
	int			k;

	/* 1. pinned lines, at their location only */
	for (i = 0; i < request->count; i++)
	{
		const InventoryLine *line = &request->items[i];
		int64	   *left;

		if (line->location == NULL)
		{
			nunpinned++;
			continue;
		}
		k = InventoryPolicyRank(policy, line->location);
		left = Left(plan, line->sku, line->location);
		if (k < 0 || !policy->active[k] || *left < line->quantity)
			return false;
		*left -= line->quantity;
		AddLine(held, line->sku, line->location, line->quantity);
		placed[i] = true;
	}
	if (nunpinned == 0)
		return true;

	/* 2. the first location that serves every unpinned line whole */
	for (k = 0; k < policy->count; k++)
	{
		bool		fits = policy->active[k];

		for (i = 0; i < request->count && fits; i++)
			if (!placed[i] &&
				*Left(plan, request->items[i].sku, policy->names[k]) <
				request->items[i].quantity)
				fits = false;
		if (!fits)
			continue;
		for (i = 0; i < request->count; i++)
			if (!placed[i])
			{
				*Left(plan, request->items[i].sku, policy->names[k]) -=
					request->items[i].quantity;
				AddLine(held, request->items[i].sku, policy->names[k],
						request->items[i].quantity);
			}
		return true;
	}

	/* 3. each line whole from its first location that can serve it */
	for (i = 0; i < request->count; i++)
	{
		if (placed[i])
			continue;
		for (k = 0; k < policy->count && !placed[i]; k++)
		{
			int64	   *left = Left(plan, request->items[i].sku, policy->names[k]);

			if (policy->active[k] && *left >= request->items[i].quantity)
			{
				*left -= request->items[i].quantity;
				AddLine(held, request->items[i].sku, policy->names[k],
						request->items[i].quantity);
				placed[i] = true;
			}
		}
	}

	/* 4. split what is left, where the tenant allows it */
	for (i = 0; i < request->count; i++)
	{
		int64		remaining = request->items[i].quantity;

		if (placed[i])
			continue;
		if (!policy->allow_split)
			return false;
		for (k = 0; k < policy->count && remaining > 0; k++)
		{
			int64	   *left = Left(plan, request->items[i].sku, policy->names[k]);
			int64		take = policy->active[k] ? Min(*left, remaining) : 0;

			if (take > 0)
			{
				*left -= take;
				remaining -= take;
				AddLine(held, request->items[i].sku, policy->names[k], take);
			}
		}
		if (remaining > 0)
			return false;
	}
	return true;
}

/*
 * The rejection: every request line with the sellable units it could use
 * at that moment (pinned: at its location if active; unpinned: at every
 * active location)
 */
static void
DescribeShortage(AllocationPlan *plan, const InventoryLines *request,
				 InventoryLines *rejection)
{
	const InventoryPolicy *policy = plan->policy;
	int			i;
	int			k;

	rejection->count = request->count;
	rejection->total = request->total;
	rejection->items = palloc(sizeof(InventoryLine) * Max(request->count, 1));
	for (i = 0; i < request->count; i++)
	{
		InventoryLine *line = &rejection->items[i];
		int64		available = 0;

		*line = request->items[i];
		for (k = 0; k < policy->count; k++)
		{
			int			s;

			if (!policy->active[k] || (line->location != NULL &&
									   strcmp(line->location, policy->names[k]) != 0))
				continue;
			for (s = 0; s < plan->nstock; s++)
				if (strcmp(plan->stock[s].sku, line->sku) == 0 &&
					strcmp(plan->stock[s].location, policy->names[k]) == 0)
					available += plan->stock[s].sellable;
		}
		line->available = available;
	}
}

/*
 * The sellable units of the SKUs $2 of tenant $1 at every location, read
 * without locks, by (sku, location): what a rejection reports when the one
 * location's units were short
 */
static InventoryStatement read_sellable = {
	"read sellable units",
	"SELECT l.sku::text, l.location::text, greatest(COALESCE((SELECT "
	"sum(s.available) FROM inventory.stock_slot s WHERE s.tenant = l.tenant "
	"AND s.sku = l.sku AND s.location = l.location), 0) - l.safety_stock, 0)::bigint "
	"FROM inventory.stock_location l WHERE l.tenant = $1 AND l.sku = ANY ($2) "
	"ORDER BY l.sku, l.location",
	2, {TEXTOID, TEXTARRAYOID}
};

/* The rejection of request after a short hold, from read_sellable */
static void
DescribeShortageRead(InventoryCall *call, const InventoryLines *request,
					 const InventoryPolicy *policy, InventoryLines *rejection)
{
	AllocationPlan plan;
	const char **skus;
	int			nskus = InventoryDistinctSkus(request, &skus);
	Datum		values[2];
	int			i;

	values[0] = CStringGetTextDatum(call->tenant);
	values[1] = InventoryTextArray(skus, nskus);
	plan.policy = policy;
	plan.nstock = (int) InventoryRun(&read_sellable, values, NULL,
									 SPI_OK_SELECT);
	plan.stock = palloc(sizeof(InventorySellable) * Max(plan.nstock, 1));
	plan.left = NULL;
	for (i = 0; i < plan.nstock; i++)
	{
		plan.stock[i].sku = InventoryResultText(i, 1);
		plan.stock[i].location = InventoryResultText(i, 2);
		plan.stock[i].sellable = InventoryResultInt64(i, 3);
	}
	DescribeShortage(&plan, request, rejection);
}

/* The first try: every unpinned line at the first active location */
typedef struct FirstTry
{
	InventoryCall *call;
	const InventoryLines *lines;
	TimestampTz now;
} FirstTry;

static bool
FirstTryWork(void *arg)
{
	FirstTry   *t = (FirstTry *) arg;

	return t->call->storage->try_hold(t->call->tenant, t->lines, t->now);
}

/*
 * InventoryAllocateExact
 *		The exact planning: locks every slot of the nskus SKUs skus (sorted,
 *		distinct; at least those of the request) at every location, in lock
 *		order, and places the request's lines by the policy on the sellable
 *		units into *held (sorted); holds nothing.  False (nothing placed)
 *		when they do not fit, with every request line and the units it could
 *		use in *rejection.  Errors: IN002 a SKU the tenant never stocked.
 */
bool
InventoryAllocateExact(InventoryCall *call, const InventoryLines *request,
					   const InventoryPolicy *policy, int nskus,
					   const char *const *skus, InventoryLines *held,
					   InventoryLines *rejection)
{
	AllocationPlan plan;
	int			i;
	int			j;

	if (held->items == NULL)
	{
		held->count = 0;
		held->total = 0;
		held->items = palloc(sizeof(InventoryLine) *
							 Max(request->count * Max(policy->count, 1), 1));
	}
	plan.policy = policy;
	plan.nstock = InventoryLockSellable(call->tenant, nskus, skus, &plan.stock);

	/*
	 * A SKU with no counters at any location may be one the tenant never
	 * stocked: then IN002 names every such SKU (both lists are in byte
	 * order, so one merge pass finds them; the statement runs only then)
	 */
	for (i = 0, j = 0; i < nskus; i++)
	{
		while (j < plan.nstock && strcmp(plan.stock[j].sku, skus[i]) < 0)
			j++;
		if (j == plan.nstock || strcmp(plan.stock[j].sku, skus[i]) != 0)
		{
			InventoryCheckStocked(call->tenant, InventoryTextArray(skus, nskus));
			break;
		}
	}
	plan.left = palloc(sizeof(int64) * Max(plan.nstock, 1));
	for (i = 0; i < plan.nstock; i++)
		plan.left[i] = plan.stock[i].sellable;
	if (!PlanLines(&plan, request, held))
	{
		DescribeShortage(&plan, request, rejection);
		return false;
	}
	InventorySortLines(held);
	return true;
}

/*
 * InventoryAllocate
 *		Places and holds the request's lines (pinned or not) by the policy:
 *		true with the held lines, one per (sku, location) in lock order, in
 *		*held; false (nothing held) with every request line and the units it
 *		could use in *rejection.  Errors: IN002 a SKU the tenant never
 *		stocked, IN004 a pinned location the tenant does not have.
 */
bool
InventoryAllocate(InventoryCall *call, const InventoryLines *request,
				  const InventoryPolicy *policy, InventoryLines *held,
				  InventoryLines *rejection, TimestampTz now)
{
	const char *first = NULL;
	int			nactive = 0;
	bool		try_first = true;
	const char **skus;
	int			nskus;
	int			i;
	int			k;

	held->count = 0;
	held->total = 0;
	held->items = palloc(sizeof(InventoryLine) *
						 Max(request->count * Max(policy->count, 1), 1));
	for (k = 0; k < policy->count; k++)
		if (policy->active[k] && nactive++ == 0)
			first = policy->names[k];
	for (i = 0; i < request->count; i++)
	{
		const char *loc = request->items[i].location;

		if (loc == NULL)
		{
			try_first = try_first && first != NULL;
			continue;
		}
		k = InventoryPolicyRank(policy, loc);
		if (k < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVENTORY_UNKNOWN_LOCATION),
					 errmsg("tenant \"%s\" has no location \"%s\"",
							call->tenant, loc),
					 errdetail("Line of SKU \"%s\" pins location \"%s\".",
							   request->items[i].sku, loc),
					 errhint("Create it with inventory.set_location, or leave the location out to let the allocation policy choose.")));
		try_first = try_first && policy->active[k];
	}

	/* the first try: the policy's answer whenever it fits */
	if (try_first)
	{
		FirstTry	t;

		for (i = 0; i < request->count; i++)
			AddLine(held, request->items[i].sku,
					request->items[i].location != NULL ?
					request->items[i].location : first,
					request->items[i].quantity);
		InventorySortLines(held);

		/*
		 * With one active location (and no line pinned elsewhere) the first
		 * try is the whole policy: its answer is final, no subtransaction
		 * needed (a short hold undoes what it held).
		 */
		if (nactive == 1)
		{
			if (call->storage->hold(call->tenant, held, now))
				return true;
			DescribeShortageRead(call, request, policy, rejection);
			return false;
		}
		t.call = call;
		t.lines = held;
		t.now = now;
		if (InventorySubtransaction(FirstTryWork, &t))
			return true;
		held->count = 0;
		held->total = 0;
	}

	/* the exact path: lock every slot of the cart's SKUs, plan, hold */
	nskus = InventoryDistinctSkus(request, &skus);
	if (!InventoryAllocateExact(call, request, policy, nskus, skus, held,
								rejection))
		return false;
	InventorySortLines(held);
	if (!InventoryHoldLocked(call->tenant, held, now))
		elog(ERROR, "pg_inventory: units planned under their row locks could not be held");
	return true;
}
