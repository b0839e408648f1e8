/*-------------------------------------------------------------------------
 *
 * src/reservation.c
 *		The reservation functions: reserve, reserve_lines, confirm, cancel,
 *		compensate, lookup and expire_due, and the table of transitions they
 *		follow (README "Concepts", "SQL API").
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
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "allocate.h"
#include "pg_inventory.h"
#include "storage.h"

PG_FUNCTION_INFO_V1(inventory_reserve);
PG_FUNCTION_INFO_V1(inventory_reserve_lines);
PG_FUNCTION_INFO_V1(inventory_confirm);
PG_FUNCTION_INFO_V1(inventory_cancel);
PG_FUNCTION_INFO_V1(inventory_compensate);
PG_FUNCTION_INFO_V1(inventory_lookup);
PG_FUNCTION_INFO_V1(inventory_expire_due);
PG_FUNCTION_INFO_V1(inventory_transition_rules);
PG_FUNCTION_INFO_V1(inventory_extend);
PG_FUNCTION_INFO_V1(inventory_amend);

/* The statement of a call's schema generation: name, or name_located (0.5) */
#define STMT(call, name) ((call)->located ? &name##_located : &name)

static char *EventTime(TimestampTz t);
static void NewEventIds(pg_uuid_t *uuids, int n);

/*
 * The state machine: which call moves a reservation from which state to
 * which, and which counter its units leave and enter.  The README's
 * transition table is this table (a test compares them, through the SQL
 * function inventory.transition_rules()).  A call that finds a pending
 * reservation at or past its expiry applies the "expire" rule instead of
 * its own; a call without a rule for the state reports the state unchanged.
 */
typedef struct TransitionRule
{
	const char *call;			/* reserve, confirm, cancel, compensate, expire */
	const char *from;			/* NULL: the reservation is new */
	const char *to;
	InventoryCounter take;		/* units leave this counter ... */
	InventoryCounter give;		/* ... and enter this one (NONE: nothing moves) */
} TransitionRule;

static const TransitionRule transition_rules[] = {
	{"reserve", NULL, "pending", COUNTER_AVAILABLE, COUNTER_RESERVED},
	{"reserve", NULL, "rejected", COUNTER_NONE, COUNTER_NONE},
	{"confirm", "pending", "confirmed", COUNTER_RESERVED, COUNTER_CONSUMED},
	{"cancel", "pending", "cancelled", COUNTER_RESERVED, COUNTER_AVAILABLE},
	{"compensate", "confirmed", "compensated", COUNTER_CONSUMED, COUNTER_AVAILABLE},
	{"expire", "pending", "expired", COUNTER_RESERVED, COUNTER_AVAILABLE},
	{"extend", "pending", "pending", COUNTER_NONE, COUNTER_NONE},
	{"amend", "pending", "pending", COUNTER_AVAILABLE, COUNTER_RESERVED},
};

static const char *const counter_names[INVENTORY_COUNTERS] = {
	"available", "reserved", "consumed"
};

/* The rule of call for a reservation in state from, or NULL */
static const TransitionRule *
FindRule(const char *call, const char *from)
{
	int			i;

	for (i = 0; i < (int) lengthof(transition_rules); i++)
		if (strcmp(transition_rules[i].call, call) == 0 &&
			transition_rules[i].from != NULL && from != NULL &&
			strcmp(transition_rules[i].from, from) == 0)
			return &transition_rules[i];
	return NULL;
}

/* A reservation as read from the tables */
typedef struct StoredReservation
{
	int64		id;
	char	   *state;
	bool		has_expiry;
	TimestampTz expires_at;
	int32		version;
	InventoryLines lines;
	char	   *request;		/* 0.5: the stored payload (JSON) or NULL */
	char	   *reason;			/* of the last cancel or compensate */
	TimestampTz created_at;
} StoredReservation;

/* The columns of inventory.outcome */
typedef struct Outcome
{
	const char *status;
	const char *state;			/* NULL: no reservation */
	bool		applied;
	const StoredReservation *res;	/* NULL: no reservation */
} Outcome;

/* Whether the lines hold one distinct SKU (at one or more locations) */
static bool
OneSku(const InventoryLines *lines)
{
	int			i;

	if (lines->count < 1)
		return false;
	for (i = 1; i < lines->count; i++)
		if (strcmp(lines->items[i].sku, lines->items[0].sku) != 0)
			return false;
	return true;
}

/* Appends "key": to the object being built */
static void
PushKey(JsonbParseState **state, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	pushJsonbValue(state, WJB_KEY, &k);
}

/* Appends "key": string (NULL: null) to the object being built */
static void
PushString(JsonbParseState **state, const char *key, const char *value)
{
	JsonbValue	v;

	PushKey(state, key);
	if (value == NULL)
		v.type = jbvNull;
	else
	{
		v.type = jbvString;
		v.val.string.val = (char *) value;
		v.val.string.len = strlen(value);
	}
	pushJsonbValue(state, WJB_VALUE, &v);
}

/* Appends "key": number to the object being built */
static void
PushInt64(JsonbParseState **state, const char *key, int64 value)
{
	JsonbValue	v;

	PushKey(state, key);
	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(value);
	pushJsonbValue(state, WJB_VALUE, &v);
}

/*
 * LinesJsonb
 *		The lines as a jsonb array, by (sku, location), built without a
 *		text round trip.  As outcome.lines: {"sku", "location" (null when
 *		none), "quantity"} with "available" where known (the lines of a
 *		rejection).  As a request (the stored payload, reservation.request):
 *		{"sku", "quantity"} with "location" only on pinned lines.
 */
static Datum
LinesJsonb(const InventoryLines *lines, bool as_request)
{
	JsonbParseState *state = NULL;
	JsonbValue *result;
	int			i;

	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	for (i = 0; i < lines->count; i++)
	{
		const InventoryLine *l = &lines->items[i];

		pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
		PushString(&state, "sku", l->sku);
		if (!as_request || l->location != NULL)
			PushString(&state, "location", l->location);
		PushInt64(&state, "quantity", l->quantity);
		if (!as_request && l->available >= 0)
			PushInt64(&state, "available", l->available);
		pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	}
	result = pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(result));
}

/*
 * SumBySku
 *		The lines as a payload without locations: one line per SKU with the
 *		units of all its locations (what a request that pins nothing asks).
 */
static void
SumBySku(const InventoryLines *lines, InventoryLines *out)
{
	int			i;

	out->count = lines->count;
	out->total = lines->total;
	out->items = palloc(sizeof(InventoryLine) * Max(lines->count, 1));
	for (i = 0; i < lines->count; i++)
	{
		out->items[i] = lines->items[i];
		out->items[i].location = NULL;
		out->items[i].available = -1;
	}
	InventorySortLines(out);
}

/*
 * FinishCall
 *		The one exit of the reservation functions: builds the
 *		inventory.outcome tuple in the caller's memory context (before
 *		SPI_finish frees what the tables gave us) and ends the call.
 */
static Datum
FinishCall(InventoryCall *call, const char *status, const char *state,
		   bool applied, const StoredReservation *res)
{
	FunctionCallInfo fcinfo = call->fcinfo;
	InventoryFnCache *cache = InventoryCallCache(fcinfo);
	Datum		values[9];
	bool		nulls[9] = {false, false, false, false, false, false, false,
	true, true};
	bool		with_lines;
	MemoryContext oldcxt;
	HeapTuple	tuple;

	/* the result's descriptor, blessed once per call site */
	if (cache->result == NULL)
	{
		TupleDesc	tupdesc;
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		TupleDesc	desc;

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "pg_inventory: return type must be inventory.outcome");
		oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		/*
		 * A query planned before an upgrade added columns to
		 * inventory.outcome (the call waited for ALTER EXTENSION UPDATE,
		 * README "Upgrading") expects the columns it was planned with: give
		 * it those, as an anonymous row of that shape.
		 */
		if (rsinfo != NULL && IsA(rsinfo, ReturnSetInfo) &&
			rsinfo->expectedDesc != NULL &&
			rsinfo->expectedDesc->natts < tupdesc->natts)
		{
			desc = CreateTupleDescCopy(rsinfo->expectedDesc);
			desc->tdtypeid = RECORDOID;
			desc->tdtypmod = -1;
		}
		else
			desc = CreateTupleDescCopy(tupdesc);
		cache->result = BlessTupleDesc(desc);
		MemoryContextSwitchTo(oldcxt);
	}
	/* 0.5: the lines (allocation, or what a rejection had) and the reason */
	with_lines = res != NULL && cache->result->natts >= 9;
	oldcxt = MemoryContextSwitchTo(call->outer_cxt);
	values[0] = CStringGetTextDatum(status);
	nulls[1] = (state == NULL);
	if (state != NULL)
		values[1] = CStringGetTextDatum(state);
	values[2] = BoolGetDatum(applied);
	if (res == NULL)
		nulls[3] = nulls[4] = nulls[5] = nulls[6] = true;
	else
	{
		values[3] = Int64GetDatum(res->id);
		nulls[4] = !OneSku(&res->lines);
		if (!nulls[4])
			values[4] = CStringGetTextDatum(res->lines.items[0].sku);
		values[5] = Int32GetDatum((int32) res->lines.total);
		nulls[6] = !res->has_expiry;
		if (res->has_expiry)
			values[6] = TimestampTzGetDatum(res->expires_at);
		if (with_lines)
		{
			values[7] = LinesJsonb(&res->lines, false);
			nulls[7] = false;
			nulls[8] = (res->reason == NULL);
			if (res->reason != NULL)
				values[8] = CStringGetTextDatum(res->reason);
		}
	}
	tuple = heap_form_tuple(cache->result, values, nulls);
	MemoryContextSwitchTo(oldcxt);
	InventoryEndCall(call);
	return HeapTupleGetDatum(tuple);
}

/* the fetched columns of a reservation with its lines as two arrays */
#define RESERVATION_COLUMNS \
	"SELECT r.id, r.state, r.expires_at, r.version, " \
	"ARRAY(SELECT l.sku::text FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id ORDER BY l.sku), " \
	"ARRAY(SELECT l.quantity FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id ORDER BY l.sku) " \
	"FROM inventory.reservation r WHERE r.tenant = $1 AND r.request_key = $2"

static InventoryStatement fetch_reservation = {
	"fetch reservation",
	RESERVATION_COLUMNS,
	2, {TEXTOID, TEXTOID}, NULL, true
};

static InventoryStatement lock_reservation = {
	"lock reservation",
	RESERVATION_COLUMNS " FOR UPDATE OF r",
	2, {TEXTOID, TEXTOID}, NULL, true
};

/*
 * 0.5: the lines per (sku, location) with what a rejection had available,
 * the stored payload, the reason and the creation time
 */
#define LINE_ORDER "ORDER BY l.sku, l.location NULLS FIRST"
#define RESERVATION_COLUMNS_LOCATED RESERVATION_COLUMNS_LOCATED_WITH("")
#define RESERVATION_COLUMNS_LOCATED_WITH(more) \
	"SELECT r.id, r.state, r.expires_at, r.version, " \
	"ARRAY(SELECT l.sku::text FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id " LINE_ORDER "), " \
	"ARRAY(SELECT l.quantity FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id " LINE_ORDER "), " \
	"ARRAY(SELECT l.location::text FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id " LINE_ORDER "), " \
	"ARRAY(SELECT COALESCE(l.available, -1) FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id " LINE_ORDER "), " \
	"r.request::text, r.reason, r.created_at " more \
	"FROM inventory.reservation r WHERE r.tenant = $1 AND r.request_key = $2"

static InventoryStatement fetch_reservation_located = {
	"fetch reservation",
	RESERVATION_COLUMNS_LOCATED,
	2, {TEXTOID, TEXTOID}, NULL, true
};

/*
 * The lock also returns the version its statement's snapshot saw: when the
 * lock waited for a concurrent change (an amend), READ COMMITTED hands the
 * newest row version to the statement, but its subqueries (the lines)
 * still read the snapshot from before; a version that differs tells
 * FetchReservation to read the lines again.
 */
static InventoryStatement lock_reservation_located = {
	"lock reservation",
	RESERVATION_COLUMNS_LOCATED_WITH(", (SELECT s.version FROM inventory.reservation s "
									 "WHERE s.id = r.id) ") " FOR UPDATE OF r",
	2, {TEXTOID, TEXTOID}, NULL, true
};

/*
 * FetchReservation
 *		Reads the reservation (tenant, key) with its lines; with lock, takes
 *		its row lock first (READ COMMITTED: waits for a concurrent change and
 *		reads the newest version); read_only: lookup's read.  Returns false
 *		when there is none.
 */
static bool
FetchReservation(InventoryCall *call, const char *key, bool lock,
				 bool read_only, StoredReservation *res)
{
	Datum		values[2];
	bool		isnull;
	Datum	   *skus;
	Datum	   *qtys;
	Datum	   *locs = NULL;
	bool	   *locnulls = NULL;
	Datum	   *avails = NULL;
	int			nskus;
	int			nqtys;
	int			i;
	uint64		n;
	InventoryStatement *fetch = STMT(call, fetch_reservation);

	values[0] = CStringGetTextDatum(call->tenant);
	values[1] = CStringGetTextDatum(key);
	n = read_only ? InventoryRunReadOnly(fetch, values, NULL) :
		InventoryRun(lock ? STMT(call, lock_reservation) : fetch, values,
					 NULL, SPI_OK_SELECT);
	if (n == 0)
		return false;

	res->id = InventoryResultInt64(0, 1);
	res->state = InventoryResultText(0, 2);
	res->expires_at = DatumGetTimestampTz(InventoryResultDatum(0, 3, &isnull));
	res->has_expiry = !isnull;
	res->version = DatumGetInt32(InventoryResultDatum(0, 4, &isnull));
	deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 5, &isnull)),
					  TEXTOID, -1, false, TYPALIGN_INT, &skus, NULL, &nskus);
	deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 6, &isnull)),
					  INT4OID, 4, true, TYPALIGN_INT, &qtys, NULL, &nqtys);
	Assert(nskus == nqtys);
	res->request = NULL;
	res->reason = NULL;
	res->created_at = 0;
	if (call->located)
	{
		deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 7, &isnull)),
						  TEXTOID, -1, false, TYPALIGN_INT, &locs, &locnulls,
						  &nqtys);
		deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 8, &isnull)),
						  INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &avails,
						  NULL, &nqtys);
		res->request = InventoryResultText(0, 9);
		res->reason = InventoryResultText(0, 10);
		res->created_at = DatumGetTimestampTz(InventoryResultDatum(0, 11, &isnull));
		if (lock && !read_only &&
			DatumGetInt32(InventoryResultDatum(0, 12, &isnull)) != res->version)
			return FetchReservation(call, key, false, false, res);
	}
	res->lines.count = nskus;
	res->lines.total = 0;
	res->lines.items = palloc(sizeof(InventoryLine) * Max(nskus, 1));
	for (i = 0; i < nskus; i++)
	{
		res->lines.items[i].sku = TextDatumGetCString(skus[i]);
		res->lines.items[i].location = (locs == NULL || locnulls[i]) ? NULL :
			TextDatumGetCString(locs[i]);
		res->lines.items[i].quantity = DatumGetInt32(qtys[i]);
		res->lines.items[i].available = avails == NULL ? -1 :
			DatumGetInt64(avails[i]);
		res->lines.total += res->lines.items[i].quantity;
	}
	return true;
}

/*
 * EffectiveState
 *		The state a reader reports: a pending reservation at or past its
 *		expiry (clock >= expires_at, README "Time") is expired even before
 *		anything wrote it so.
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
 * The outbox payload of a reservation event, built from a relation "r"
 * with columns id, tenant, request_key, state, version, expires_at, the
 * event id e.event_id, the event type and the clock.  A macro, so that
 * every reservation event has the same shape.
 */
#define RESERVATION_EVENT(etype, now, lines) \
	"jsonb_build_object('event_id', e.event_id, 'event_type', " etype \
	", 'tenant', r.tenant, 'request_key', r.request_key, " \
	"'reservation_id', r.id, 'state', r.state, 'version', r.version, " \
	"'lines', " lines ", " \
	"'expires_at', to_char(r.expires_at AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), " \
	"'occurred_at', to_char((" now ") AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))"

/* the lines of reservation r.id as a JSON array, by sku */
#define STORED_LINES_JSON \
	"(SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity) " \
	"ORDER BY l.sku) FROM inventory.reservation_line l WHERE l.reservation_id = r.id)"

/*
 * 0.5: events also carry the reason (r.reason) of the last cancel or
 * compensate, and lines their location
 */
#define RESERVATION_EVENT_LOCATED(etype, now, lines) \
	"jsonb_build_object('event_id', e.event_id, 'event_type', " etype \
	", 'tenant', r.tenant, 'request_key', r.request_key, " \
	"'reservation_id', r.id, 'state', r.state, 'version', r.version, " \
	"'lines', " lines ", 'reason', r.reason, " \
	"'expires_at', to_char(r.expires_at AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), " \
	"'occurred_at', to_char((" now ") AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))"

#define STORED_LINES_JSON_LOCATED \
	"(SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'location', l.location, " \
	"'quantity', l.quantity) " LINE_ORDER ") " \
	"FROM inventory.reservation_line l WHERE l.reservation_id = r.id)"

/* lines given as arrays $2 skus, $3 quantities, $9 locations */
#define GIVEN_LINES_JSON_LOCATED \
	"(SELECT jsonb_agg(jsonb_build_object('sku', u.sku, 'location', u.location, " \
	"'quantity', u.qty) ORDER BY u.sku, u.location) " \
	"FROM unnest($2, $3, $9) AS u(sku, qty, location))"

/*
 * One guarded state change of a locked reservation, its log row and its
 * event (reservation.<to_state>).  The WHERE clause repeats the expected
 * old state and version, so a caller that got either wrong changes nothing
 * (row count 0).  $1 id, $2 from, $3 to, $4 reason, $5 actor, $6 clock,
 * $7 version read.
 */
static InventoryStatement change_state = {
	"change reservation state",
	"WITH r AS (UPDATE inventory.reservation r SET state = $3, "
	"version = r.version + 1, reason = COALESCE($4, r.reason), updated_at = $6 "
	"WHERE r.id = $1 AND r.state = $2 AND r.version = $7 "
	"RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at), "
	"t AS (INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, $2, r.state, $4, $5, r.version, $6 FROM r), "
	"e AS (SELECT gen_random_uuid() AS event_id) "
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, 'reservation.' || r.state, r.tenant, r.id, "
	RESERVATION_EVENT("'reservation.' || r.state", "$6", STORED_LINES_JSON)
	", $6 FROM r, e",
	7, {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, INT4OID}, NULL, true
};

static InventoryStatement change_state_located = {
	"change reservation state",
	"WITH r AS (UPDATE inventory.reservation r SET state = $3, "
	"version = r.version + 1, reason = CASE WHEN $3 = 'expired' THEN r.reason "
	"ELSE COALESCE($4, r.reason) END, updated_at = $6 "
	"WHERE r.id = $1 AND r.state = $2 AND r.version = $7 "
	"RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at, "
	"r.reason), "
	"t AS (INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, $2, r.state, $4, $5, r.version, $6 FROM r), "
	"e AS (SELECT gen_random_uuid() AS event_id) "
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, 'reservation.' || r.state, r.tenant, r.id, "
	RESERVATION_EVENT_LOCATED("'reservation.' || r.state", "$6",
							  STORED_LINES_JSON_LOCATED)
	", $6 FROM r, e",
	7, {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, INT4OID}, NULL, true
};

/*
 * ApplyRule
 *		Changes a locked reservation by rule (from its current state): moves
 *		its stock, updates it with a guard on the state and version it was
 *		read with, logs the transition and writes the event.
 */
static void
ApplyRule(InventoryCall *call, const TransitionRule *rule,
		  StoredReservation *res, const char *reason, TimestampTz now)
{
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	call->storage->move(call->tenant, &res->lines, rule->take, rule->give, now);
	InventoryTestPause();
	InventoryFaultPoint("records");

	values[0] = Int64GetDatum(res->id);
	values[1] = CStringGetTextDatum(res->state);
	values[2] = CStringGetTextDatum(rule->to);
	if (reason == NULL)
		nulls[3] = 'n';
	else
		values[3] = CStringGetTextDatum(reason);
	values[4] = CStringGetTextDatum(call->actor);
	values[5] = TimestampTzGetDatum(now);
	values[6] = Int32GetDatum(res->version);
	if (InventoryRun(STMT(call, change_state), values, nulls,
					 SPI_OK_INSERT) != 1)
		elog(ERROR, "pg_inventory: reservation " INT64_FORMAT
			 " changed under its row lock", res->id);
	res->state = (char *) rule->to;
	res->version++;
	if (reason != NULL && (!call->located || strcmp(rule->to, "expired") != 0))
		res->reason = (char *) reason;
}

/*
 * Claims the request key by inserting the reservation first, before any
 * stock row is locked; a concurrent call with the same key waits here and
 * then sees the winner's row.  $1 tenant, $2 key, $3 expires_at, $4 clock.
 */
static InventoryStatement claim_key = {
	"claim request key",
	"INSERT INTO inventory.reservation AS r "
	"(tenant, request_key, state, expires_at, version, created_at, updated_at) "
	"VALUES ($1, $2, 'pending', $3, 1, $4, $4) "
	"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING r.id",
	5, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, JSONBOID}
};

/*
 * 0.5: also stores the payload $5 when it pins locations (else NULL), and
 * returns with the new id the tenant's first two active locations in
 * allocation order: with one, the allocation policy is that location
 */
static InventoryStatement claim_key_located = {
	"claim request key",
	"WITH r AS (INSERT INTO inventory.reservation AS r "
	"(tenant, request_key, state, expires_at, version, created_at, updated_at, "
	"request) VALUES ($1, $2, 'pending', $3, 1, $4, $4, $5) "
	"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING r.id) "
	"SELECT r.id, ARRAY(SELECT l.location::text FROM inventory.location l "
	"WHERE l.tenant = $1 AND l.active ORDER BY l.priority, l.location LIMIT 2) "
	"FROM r",
	5, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, JSONBOID}
};

/*
 * 0.6: the claim alone (the first locations come from the location cache,
 * InventoryFirstLocations)
 */
static InventoryStatement claim_key_guarded = {
	"claim request key",
	"INSERT INTO inventory.reservation AS r "
	"(tenant, request_key, state, expires_at, version, created_at, updated_at, "
	"request) VALUES ($1, $2, 'pending', $3, 1, $4, $4, $5) "
	"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING r.id",
	5, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, JSONBOID}
};

/*
 * 0.9: the claim on the reservations' rings.  The request key is unique
 * per ring (each ring's unique index), not across the rings, so the claim
 * runs under the request key lock (LockRequestKey) and inserts only when
 * no ring holds the key: a concurrent call with the same key waits for the
 * lock, then sees the winner's row (at READ COMMITTED this statement's
 * snapshot is taken after the lock).  The new id's ring is the current
 * one (inventory._reservation_id).
 */
static InventoryStatement claim_key_ringed = {
	"claim request key",
	"INSERT INTO inventory.reservation AS r "
	"(tenant, request_key, state, expires_at, version, created_at, updated_at, "
	"request) SELECT $1, $2, 'pending', $3, 1, $4, $4, $5 "
	"WHERE NOT EXISTS (SELECT 1 FROM inventory.reservation x "
	"WHERE x.tenant = $1 AND x.request_key = $2) RETURNING r.id",
	5, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, JSONBOID}, NULL, true
};

/* 0.9: whether a reservation holds key $2 of tenant $1, in any ring */
static InventoryStatement key_taken = {
	"look up a request key",
	"SELECT 1 FROM inventory.reservation x WHERE x.tenant = $1 AND x.request_key = $2",
	2, {TEXTOID, TEXTOID}, NULL, true
};

/*
 * LockRequestKey
 *		0.9: takes the request key lock of (tenant, key): an exclusive
 *		advisory lock (objsubid INVENTORY_LOCK_REQUEST_KEY, classid and
 *		objid a 64-bit hash of both) held to the end of the transaction,
 *		or of the subtransaction if that rolls back (with the claim).  Two
 *		keys with the same hash only wait for each other.  First in the
 *		lock order (pg_inventory.h): taken before any row lock.
 */
static void
LockRequestKey(const char *tenant, const char *key)
{
	LOCKTAG		tag;
	uint64		h;

	/* the tenant with its terminating zero, so that ("ab", "c") != ("a", "bc") */
	h = hash_bytes_extended((const unsigned char *) tenant, strlen(tenant) + 1, 0);
	h = hash_bytes_extended((const unsigned char *) key, strlen(key), h);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 INVENTORY_LOCK_REQUEST_KEY);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * The records of a new pending reservation: its lines, the transition
 * NULL -> pending and the reservation.reserved event.  $1 id, $2 skus, $3
 * quantities, $4 actor, $5 clock, $6 tenant, $7 key, $8 expires_at (the
 * values the claim inserted: not read again).
 */
static InventoryStatement record_reserved = {
	"record reservation",
	"WITH r AS (SELECT $1::bigint AS id, $6::text AS tenant, "
	"$7::text AS request_key, 'pending'::text AS state, 1 AS version, "
	"$8::timestamptz AS expires_at), "
	"l AS (INSERT INTO inventory.reservation_line "
	"(reservation_id, tenant, sku, quantity) "
	"SELECT r.id, r.tenant, u.sku, u.qty FROM r, unnest($2, $3) AS u(sku, qty)), "
	"t AS (INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, NULL, r.state, NULL, $4, r.version, $5 FROM r), "
	"e AS (SELECT gen_random_uuid() AS event_id) "
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, 'reservation.reserved', r.tenant, r.id, "
	RESERVATION_EVENT("'reservation.reserved'", "$5",
					  "(SELECT jsonb_agg(jsonb_build_object('sku', u.sku, "
					  "'quantity', u.qty) ORDER BY u.sku) "
					  "FROM unnest($2, $3) AS u(sku, qty))")
	", $5 FROM r, e",
	9, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
	TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID}, NULL, true
};

/* 0.5: the lines are the allocation, one per (sku $2, location $9) */
static InventoryStatement record_reserved_located = {
	"record reservation",
	"WITH r AS (SELECT $1::bigint AS id, $6::text AS tenant, "
	"$7::text AS request_key, 'pending'::text AS state, 1 AS version, "
	"$8::timestamptz AS expires_at, NULL::text AS reason), "
	"l AS (INSERT INTO inventory.reservation_line "
	"(reservation_id, tenant, sku, quantity, location) "
	"SELECT r.id, r.tenant, u.sku, u.qty, u.location "
	"FROM r, unnest($2, $3, $9) AS u(sku, qty, location)), "
	"t AS (INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, NULL, r.state, NULL, $4, r.version, $5 FROM r), "
	"e AS (SELECT gen_random_uuid() AS event_id) "
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, 'reservation.reserved', r.tenant, r.id, "
	RESERVATION_EVENT_LOCATED("'reservation.reserved'", "$5",
							  GIVEN_LINES_JSON_LOCATED)
	", $5 FROM r, e",
	9, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
	TEXTOID, TIMESTAMPTZOID, TEXTARRAYOID}, NULL, true
};

/*
 * 0.5: the same for one line (INVENTORY_RESERVED_ONE_RECORDS, as the
 * single-line fast path writes them), with the event built in C
 * (ReservedEvent): the same rows, without unnest, jsonb_agg and to_char
 * in the statement (issue #12: the CPU of a single-line reserve).  $1 id, $2 sku, $3
 * quantity, $4 actor, $5 clock, $6 tenant, $7 location, $8 event id, $9
 * payload.
 */
static InventoryStatement record_reserved_one = {
	"record reservation",
	"WITH "
	INVENTORY_RESERVED_ONE_RECORDS("$1", "$6", "$2", "$3", "$7", "$4", "$5",
								   "$8", "$9", "")
	"SELECT 1",
	9, {INT8OID, TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
	TEXTOID, UUIDOID, JSONBOID}, NULL, true
};

/*
 * The stored insufficient outcome: state rejected, the requested lines and
 * the transition NULL -> rejected (no event: nothing moved).  $1 id, $2
 * skus, $3 quantities, $4 actor, $5 clock.
 */
static InventoryStatement record_rejected = {
	"record rejection",
	"WITH r AS (UPDATE inventory.reservation r SET state = 'rejected', "
	"expires_at = NULL, updated_at = $5 "
	"WHERE r.id = $1 AND r.state = 'pending' AND r.version = 1 "
	"RETURNING r.id, r.tenant, r.state, r.version), "
	"l AS (INSERT INTO inventory.reservation_line "
	"(reservation_id, tenant, sku, quantity) "
	"SELECT r.id, r.tenant, u.sku, u.qty FROM r, unnest($2, $3) AS u(sku, qty)) "
	"INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, NULL, r.state, 'insufficient stock', $4, r.version, $5 FROM r",
	7, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID,
	TEXTARRAYOID, INT8ARRAYOID}, NULL, true
};

/*
 * 0.5: each requested line with its pinned location ($6, NULL: none) and
 * the units it could use at that moment ($7)
 */
static InventoryStatement record_rejected_located = {
	"record rejection",
	"WITH r AS (UPDATE inventory.reservation r SET state = 'rejected', "
	"expires_at = NULL, updated_at = $5 "
	"WHERE r.id = $1 AND r.state = 'pending' AND r.version = 1 "
	"RETURNING r.id, r.tenant, r.state, r.version), "
	"l AS (INSERT INTO inventory.reservation_line "
	"(reservation_id, tenant, sku, quantity, location, available) "
	"SELECT r.id, r.tenant, u.sku, u.qty, u.location, u.available "
	"FROM r, unnest($2, $3, $6, $7) AS u(sku, qty, location, available)) "
	"INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, NULL, r.state, 'insufficient stock', $4, r.version, $5 FROM r",
	7, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID,
	TEXTARRAYOID, INT8ARRAYOID}, NULL, true
};

/*
 * ReservedEvent
 *		The payload of the reservation.reserved event of a new single-line
 *		reservation (schema 0.5 on), as RESERVATION_EVENT_LOCATED with
 *		GIVEN_LINES_JSON_LOCATED writes it (the same keys and values; jsonb
 *		orders the keys): event_id, event_type, tenant, request_key,
 *		reservation_id, state "pending", version 1, lines [{sku, location,
 *		quantity}], reason null, expires_at and occurred_at (now) in UTC.
 */
static Datum
ReservedEvent(const pg_uuid_t *event_id, const char *tenant, const char *key,
			  int64 id, const InventoryLine *line, TimestampTz expires_at,
			  TimestampTz now)
{
	JsonbParseState *state = NULL;
	JsonbValue *result;

	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	PushString(&state, "event_id",
			   DatumGetCString(DirectFunctionCall1(uuid_out,
												   UUIDPGetDatum(event_id))));
	PushString(&state, "event_type", "reservation.reserved");
	PushString(&state, "tenant", tenant);
	PushString(&state, "request_key", key);
	PushInt64(&state, "reservation_id", id);
	PushString(&state, "state", "pending");
	PushInt64(&state, "version", 1);
	PushKey(&state, "lines");
	pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	PushString(&state, "sku", line->sku);
	PushString(&state, "location", line->location);
	PushInt64(&state, "quantity", line->quantity);
	pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	PushString(&state, "reason", NULL);
	PushString(&state, "expires_at", EventTime(expires_at));
	PushString(&state, "occurred_at", EventTime(now));
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return JsonbPGetDatum(JsonbValueToJsonb(result));
}

/* The locations of the lines as a text[] Datum (NULL elements allowed) */
static Datum
LocationArray(const InventoryLines *lines)
{
	const char **items = palloc(sizeof(char *) * Max(lines->count, 1));
	int			i;

	for (i = 0; i < lines->count; i++)
		items[i] = lines->items[i].location;
	return InventoryTextArray(items, lines->count);
}

/* The available units of the lines as an int8[] Datum */
static Datum
AvailableArray(const InventoryLines *lines)
{
	int64	   *items = palloc(sizeof(int64) * Max(lines->count, 1));
	int			i;

	for (i = 0; i < lines->count; i++)
		items[i] = lines->items[i].available;
	return InventoryInt8Array(items, lines->count);
}

/* Whether a request pins a location on any line */
static bool
PinsLocation(const InventoryLines *lines)
{
	int			i;

	for (i = 0; i < lines->count; i++)
		if (lines->items[i].location != NULL)
			return true;
	return false;
}

/*
 * StoredPayload
 *		0.5: what a reservation was asked for, to compare a replay with: the
 *		stored request when there is one, else its lines summed per SKU.
 */
static void
StoredPayload(InventoryCall *call, const StoredReservation *res,
			  InventoryLines *payload)
{
	if (call->located && res->request != NULL)
		InventoryParseLines(DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
															   CStringGetDatum(res->request))),
							true, payload);
	else if (call->located)
		SumBySku(&res->lines, payload);
	else
		*payload = res->lines;
}

/*
 * ReserveLines
 *		The work of reserve and reserve_lines (README "reserve",
 *		"reserve_lines").
 *
 * 1. Claim the request key by inserting the pending reservation (a
 *	  concurrent call with the same key waits for this one, then replays).
 * 2. If the key exists: the same lines replay the stored outcome
 *	  (applied = false); other lines raise IN001.
 * 3. Hold every line's units (available -> reserved), SKU by SKU in sku
 *	  order; a SKU the tenant never stocked raises IN002 (the claim is
 *	  undone with the error).  If a line does not fit, hold none.
 * 4. Write lines, log and event; or store the rejection (the frozen
 *	  insufficient outcome).
 */
static Datum
ReserveLines(FunctionCallInfo fcinfo, const char *tenant, const char *key,
			 InventoryLines *lines, int64 ttl_usecs)
{
	InventoryCall call;
	StoredReservation res;
	TimestampTz now;
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};
	bool		sufficient;
	InventoryLines held = {0, 0, NULL};
	InventoryLines rejection = {0, 0, NULL};
	bool		claimed = false;
	int			attempt;
	InventoryHoldResult fast = INVENTORY_HOLD_NOT_TAKEN;
	pg_uuid_t  *event_id = NULL;	/* the event of a single line, and */
	Datum		event = (Datum) 0;	/* its payload, once built */

	InventoryBeginCall(fcinfo, &call, tenant);
	if (!call.located && PinsLocation(lines))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("locations need pg_inventory 0.5 or later in this database"),
				 errhint("Run ALTER EXTENSION pg_inventory UPDATE.")));
	now = InventoryNow();
	res.expires_at = InventoryExpiry(now, ttl_usecs);
	res.request = NULL;
	res.reason = NULL;

	/* 1. claim the key */
	values[0] = CStringGetTextDatum(tenant);
	values[1] = CStringGetTextDatum(key);
	values[2] = TimestampTzGetDatum(res.expires_at);
	values[3] = TimestampTzGetDatum(now);
	if (PinsLocation(lines))
		values[4] = LinesJsonb(lines, true);
	else
		nulls[4] = 'n';
	if (call.ringed)
	{
		LockRequestKey(tenant, key);
		/*
		 * a transaction snapshot taken before the key's winner committed
		 * would not see it and claim the key a second time (in another
		 * ring; in the same ring, the unique index would refuse it with
		 * 23505): as ON CONFLICT does, that is a serialization failure,
		 * raised before the claim
		 */
		if (IsolationUsesXactSnapshot() &&
			InventoryRunLatest(&key_taken, values, NULL) > 0 &&
			InventoryRunReadOnly(&key_taken, values, NULL) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent update"),
					 errdetail("Request key \"%s\" of tenant \"%s\" was claimed by a transaction that committed after this transaction's snapshot was taken.",
							   key, tenant),
					 errhint("Retry the transaction: the retry replays the stored outcome.")));
	}
	/*
	 * A key that conflicted can be gone by the time it is read
	 * (purge_history removed it meanwhile): then it is claimed again, as a
	 * key never used.
	 */
	for (attempt = 0;; attempt++)
	{
		if (InventoryRun(call.ringed ? &claim_key_ringed :
						 call.guarded ? &claim_key_guarded : STMT(&call, claim_key),
						 values, nulls, call.located && !call.guarded ?
						 SPI_OK_SELECT : SPI_OK_INSERT_RETURNING) > 0)
		{
			claimed = true;
			break;
		}
		if (FetchReservation(&call, key, false, false, &res))
			break;
		if (attempt >= 2)
			elog(ERROR, "pg_inventory: request key \"%s\" conflicted but is not visible",
				 key);
	}
	if (!claimed)
	{
		InventoryLines payload;

		/* 2. replay or refusal */
		StoredPayload(&call, &res, &payload);
		if (!InventoryLinesEqual(&payload, lines))
			InventoryKeyReused(key,
							   psprintf("Reservation " INT64_FORMAT " of tenant \"%s\" holds %s; this call asks for %s.",
										res.id, tenant, InventoryLinesText(&payload),
										InventoryLinesText(lines)),
							   "Use a new request key for a new intent.");
		return FinishCall(&call, ReserveStatus(&res),
						  EffectiveState(&res, InventoryNow()), false, &res);
	}
	res.id = InventoryResultInt64(0, 1);
	res.version = 1;
	res.lines = *lines;

	/* 3. hold the stock of every line, or of none (0.5: by the policy) */
	if (call.located)
	{
		InventoryPolicy policy;
		char	  **first;
		int			nfirst;

		if (call.guarded)
			nfirst = InventoryFirstLocations(tenant, &first);
		else
		{
			Datum	   *names;
			bool		isnull;
			int			i;

			deconstruct_array(DatumGetArrayTypeP(InventoryResultDatum(0, 2, &isnull)),
							  TEXTOID, -1, false, TYPALIGN_INT, &names, NULL,
							  &nfirst);
			first = palloc(sizeof(char *) * Max(nfirst, 1));
			for (i = 0; i < nfirst; i++)
				first[i] = TextDatumGetCString(names[i]);
		}
		if (nfirst == 1 && !PinsLocation(lines) && call.guarded &&
			lines->count == 1)
		{
			/*
			 * One line, one active location, no pin (0.6 on): the take
			 * and the records in one statement when a free slot holds
			 * enough; else the usual path below
			 */
			InventoryLine *line = palloc(sizeof(InventoryLine));

			*line = lines->items[0];
			line->location = first[0];
			event_id = palloc(sizeof(pg_uuid_t));
			NewEventIds(event_id, 1);
			event = ReservedEvent(event_id, tenant, key, res.id, line,
								  res.expires_at, now);
			fast = InventoryHoldOneRecorded(tenant, line, now, res.id,
											call.actor,
											UUIDPGetDatum(event_id), event);
			if (fast != INVENTORY_HOLD_NOT_TAKEN)
			{
				held.count = 1;
				held.total = line->quantity;
				held.items = line;
			}
		}
		if (fast != INVENTORY_HOLD_NOT_TAKEN)
		{
			sufficient = true;
			res.lines = held;
		}
		else
		{
			if (nfirst == 1 && !PinsLocation(lines))
			{
				/* one active location and no pin: the policy is that location */
				policy.count = 1;
				policy.names = palloc(sizeof(char *));
				policy.names[0] = first[0];
				policy.active = palloc(sizeof(bool));
				policy.active[0] = true;
				policy.priority = palloc0(sizeof(int32));
				policy.allow_split = false;
			}
			else
				InventoryReadPolicy(tenant, &policy);
			sufficient = InventoryAllocate(&call, lines, &policy, &held,
										   &rejection, now);
			res.lines = sufficient ? held : rejection;
		}
	}
	else
		sufficient = call.storage->hold(tenant, lines, now);
	InventoryTestPause();
	InventoryFaultPoint("hold");

	/* 4. record the reservation, or store the rejection */
	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(res.id);
	values[1] = InventorySkuArray(&res.lines);
	values[2] = InventoryQuantityArray(&res.lines, INT4OID);
	values[3] = CStringGetTextDatum(call.actor);
	values[4] = TimestampTzGetDatum(now);
	if (sufficient && fast == INVENTORY_HOLD_RECORDED)
	{
		/* written with the take */
		res.state = "pending";
		res.has_expiry = true;
	}
	else if (sufficient)
	{
		values[5] = CStringGetTextDatum(tenant);
		if (call.located && res.lines.count == 1)
		{
			/*
			 * the event the fast path built (it held the same line at the
			 * same location, or took nothing and the usual path held it
			 * there), else a new one
			 */
			if (event == (Datum) 0)
			{
				event_id = palloc(sizeof(pg_uuid_t));
				NewEventIds(event_id, 1);
				event = ReservedEvent(event_id, tenant, key, res.id,
									  &res.lines.items[0], res.expires_at,
									  now);
			}
			values[1] = CStringGetTextDatum(res.lines.items[0].sku);
			values[2] = Int32GetDatum(res.lines.items[0].quantity);
			if (res.lines.items[0].location != NULL)
				values[6] = CStringGetTextDatum(res.lines.items[0].location);
			else
				nulls[6] = 'n';
			values[7] = UUIDPGetDatum(event_id);
			values[8] = event;
			if (InventoryRun(&record_reserved_one, values, nulls,
							 SPI_OK_SELECT) != 1)
				elog(ERROR, "pg_inventory: reservation " INT64_FORMAT " not recorded",
					 res.id);
		}
		else
		{
			values[6] = CStringGetTextDatum(key);
			values[7] = TimestampTzGetDatum(res.expires_at);
			if (call.located)
				values[8] = LocationArray(&res.lines);
			else
				nulls[8] = 'n';
			if (InventoryRun(STMT(&call, record_reserved), values, nulls,
							 SPI_OK_INSERT) != 1)
				elog(ERROR, "pg_inventory: reservation " INT64_FORMAT " not recorded",
					 res.id);
		}
		res.state = "pending";
		res.has_expiry = true;
	}
	else
	{
		if (call.located)
		{
			values[5] = LocationArray(&res.lines);
			values[6] = AvailableArray(&res.lines);
		}
		else
			nulls[5] = nulls[6] = 'n';
		if (InventoryRun(STMT(&call, record_rejected), values, nulls,
						 SPI_OK_INSERT) != 1)
			elog(ERROR, "pg_inventory: rejection of reservation " INT64_FORMAT
				 " not recorded", res.id);
		res.state = "rejected";
		res.has_expiry = false;
	}
	return FinishCall(&call, sufficient ? "reserved" : "insufficient",
					  res.state, true, &res);
}

/*
 * inventory_reserve
 *		reserve(tenant text, request_key text, sku text, quantity integer,
 *				ttl interval DEFAULT '15 minutes') RETURNS inventory.outcome
 *
 * Holds quantity (units, 1 to 2147483647) of sku for ttl (above zero, at
 * most 7 days, no months); it is reserve_lines with one line.  Status
 * reserved or insufficient.  Errors: 22023 bad argument (also a tenant,
 * key or SKU that is not canonical), 42501 tenant not granted, IN002
 * unknown SKU, IN001 key reused with another payload.
 */
Datum
inventory_reserve(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", NAME_CANONICAL);
	char	   *sku = InventoryNameArg(fcinfo, 2, "sku", NAME_CANONICAL);
	int32		quantity = InventoryQuantityArg(fcinfo, 3, NULL, NULL);
	int64		ttl = InventoryTtlArg(fcinfo, 4);
	InventoryLines lines;

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
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", NAME_CANONICAL);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", NAME_CANONICAL);
	InventoryLines lines;
	int64		ttl;

	InventoryRequireArg(fcinfo, 2, "lines");
	InventoryParseLines(PG_GETARG_JSONB_P(2), true, &lines);
	ttl = InventoryTtlArg(fcinfo, 3);
	return ReserveLines(fcinfo, tenant, key, &lines, ttl);
}

/*
 * Transition
 *		The work of confirm, cancel and compensate (call names the rule).
 *		Under the reservation's row lock, with the clock read after the lock
 *		is held: a pending reservation that is due is expired (status
 *		expired, applied); else the call's rule for the state applies (see
 *		transition_rules); else the state is reported unchanged (rejected as
 *		insufficient; compensate of a pending one as pending).
 */
static Datum
Transition(FunctionCallInfo fcinfo, const char *call_name, const char *tenant,
		   const char *key, const char *reason)
{
	InventoryCall call;
	StoredReservation res;
	const TransitionRule *rule;
	TimestampTz now;

	InventoryBeginCall(fcinfo, &call, tenant);
	if (!FetchReservation(&call, key, true, false, &res))
		return FinishCall(&call, "not_found", NULL, false, NULL);

	/* the row lock is held: this is the moment of the check */
	now = InventoryNow();
	if (strcmp(EffectiveState(&res, now), "expired") == 0 &&
		strcmp(res.state, "pending") == 0)
	{
		rule = FindRule("expire", res.state);
		reason = "expires_at reached";
	}
	else
		rule = FindRule(call_name, res.state);
	if (rule == NULL)
		return FinishCall(&call, StateStatus(res.state), res.state, false, &res);
	ApplyRule(&call, rule, &res, reason, now);
	return FinishCall(&call, rule->to, res.state, true, &res);
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
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", 0);

	return Transition(fcinfo, "confirm", tenant, key, NULL);
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
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", 0);
	char	   *reason = InventoryReasonArg(fcinfo, 2, "reason", false);

	return Transition(fcinfo, "cancel", tenant, key, reason);
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
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", 0);
	char	   *reason = InventoryReasonArg(fcinfo, 2, "reason", true);

	return Transition(fcinfo, "compensate", tenant, key, reason);
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
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", 0);
	InventoryCall call;
	StoredReservation res;

	InventoryBeginCall(fcinfo, &call, tenant);
	if (!FetchReservation(&call, key, false, true, &res))
		return FinishCall(&call, "not_found", NULL, false, NULL);
	return FinishCall(&call, ReserveStatus(&res),
					  EffectiveState(&res, InventoryNow()), false, &res);
}

/*
 * The expiry of a batch: up to $2 due pending reservations, oldest first
 * (or only reservation $4), SKIP LOCKED: never waits on a reservation
 * another transaction holds; a row changed since the snapshot is re-checked
 * after it is locked, so a stale observation is never acted on.  The locked
 * rows are found again by id (an array probed in reservation_pkey: a join
 * could scan every reservation before the due ones on each batch).  Writes
 * the log rows and returns, per reservation (by id) and line (by sku and
 * location, as the lines of its events), what its reservation.expired event
 * says; ExpireWork builds the events.  $1 clock, $3 actor.
 */
#define EXPIRE_DUE(due) EXPIRE_DUE_AS(due, "", "NULL::text", "NULL::text", \
	"l.sku")
#define EXPIRE_DUE_LOCATED(due) EXPIRE_DUE_AS(due, ", r.reason", "r.reason", \
	"l.location::text", "l.sku, l.location NULLS FIRST")
#define EXPIRE_DUE_AS(due, returning, reason, location, line_order) \
	"WITH due AS (" due " FOR UPDATE SKIP LOCKED), " \
	"r AS (UPDATE inventory.reservation r SET state = 'expired', " \
	"version = r.version + 1, updated_at = $1 " \
	"WHERE r.id = ANY (ARRAY(SELECT due.id FROM due)) AND r.state = 'pending' " \
	"RETURNING r.id, r.tenant, r.request_key, r.version, r.expires_at" \
	returning "), " \
	"t AS (INSERT INTO inventory.reservation_transition " \
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) " \
	"SELECT r.id, 'pending', 'expired', 'expires_at reached', $3, r.version, $1 FROM r) " \
	"SELECT r.id, r.tenant::text, r.request_key::text, r.version, r.expires_at, " \
	reason ", l.sku::text, " location ", l.quantity FROM r " \
	"LEFT JOIN inventory.reservation_line l ON l.reservation_id = r.id " \
	"ORDER BY r.id, " line_order

static InventoryStatement expire_batch = {
	"expire due reservations",
	EXPIRE_DUE("SELECT d.id FROM inventory.reservation d "
			   "WHERE d.state = 'pending' AND d.expires_at <= $1 "
			   "ORDER BY d.expires_at, d.id LIMIT $2"),
	3, {TIMESTAMPTZOID, INT4OID, TEXTOID}, NULL, true
};

static InventoryStatement expire_batch_located = {
	"expire due reservations",
	EXPIRE_DUE_LOCATED("SELECT d.id FROM inventory.reservation d "
					   "WHERE d.state = 'pending' AND d.expires_at <= $1 "
					   "ORDER BY d.expires_at, d.id LIMIT $2"),
	3, {TIMESTAMPTZOID, INT4OID, TEXTOID}, NULL, true
};

/*
 * The same for the listed reservations $4 only (those still pending and
 * due; the parts of ExpireTry)
 */
static InventoryStatement expire_listed_located = {
	"expire listed due reservations",
	EXPIRE_DUE_LOCATED("SELECT d.id FROM inventory.reservation d "
					   "WHERE d.id = ANY ($4) AND d.state = 'pending' "
					   "AND d.expires_at <= $1 ORDER BY d.expires_at, d.id LIMIT $2"),
	4, {TIMESTAMPTZOID, INT4OID, TEXTOID, INT8ARRAYOID}, NULL, true
};

static InventoryStatement expire_listed = {
	"expire listed due reservations",
	EXPIRE_DUE("SELECT d.id FROM inventory.reservation d "
			   "WHERE d.id = ANY ($4) AND d.state = 'pending' "
			   "AND d.expires_at <= $1 ORDER BY d.expires_at, d.id LIMIT $2"),
	4, {TIMESTAMPTZOID, INT4OID, TEXTOID, INT8ARRAYOID}, NULL, true
};

/*
 * The reservation.expired events of the reservations just expired, in
 * their order: $1 event ids, $2 tenants, $3 reservation ids, $4 payloads;
 * $5 clock.  The same on 0.4 and 0.5.
 */
static InventoryStatement write_expired_events = {
	"expire due reservations",
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT u.event_id, 'reservation.expired', u.tenant, u.id, u.payload, $5 "
	"FROM unnest($1, $2, $3, $4) AS u(event_id, tenant, id, payload)",
	5, {UUIDARRAYOID, TEXTARRAYOID, INT8ARRAYOID, JSONBARRAYOID, TIMESTAMPTZOID}
};

/*
 * Due reservations after the position ($3 expires_at, $4 id), oldest first,
 * at most $2: the candidates of ExpireAroundBadRows.  $1 clock.
 */
static InventoryStatement due_after = {
	"list due reservations",
	"SELECT d.id, d.expires_at FROM inventory.reservation d "
	"WHERE d.state = 'pending' AND d.expires_at <= $1 "
	"AND (d.expires_at, d.id) > ($3, $4) "
	"ORDER BY d.expires_at, d.id LIMIT $2",
	4, {TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, INT8OID}, NULL, true
};

/* One expiry pass of expire_due */
typedef struct ExpirePass
{
	InventoryCall *call;
	TimestampTz now;
	int32		max_rows;		/* also the length of only_ids */
	const int64 *only_ids;		/* NULL: the oldest due ones */
	uint64		expired;		/* out */
} ExpirePass;

/*
 * A timestamp as the events write it: to_char(t AT TIME ZONE 'UTC',
 * 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') (at UTC a timestamptz is its
 * timestamp); NULL where to_char gives NULL (infinity).  Years 1 to 9999
 * are formatted here, as to_char formats them (four-digit year, two-digit
 * fields, six-digit microseconds); other years go through to_char itself
 * (it writes more digits, and BC years its own way): the per-event cost
 * of reserve and expire_due (issue #12) without a second format.
 */
static char *
EventTime(TimestampTz t)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(t))
		return NULL;
	if (timestamp2tm((Timestamp) t, NULL, &tm, &fsec, NULL, NULL) == 0 &&
		tm.tm_year >= 1 && tm.tm_year <= 9999)
		return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year,
						tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min,
						tm.tm_sec, (int) fsec);
	return TextDatumGetCString(DirectFunctionCall2Coll(timestamp_to_char,
													   DEFAULT_COLLATION_OID,
													   TimestampGetDatum((Timestamp) t),
													   CStringGetTextDatum("YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"")));
}

/*
 * A new event id in *uuid, as gen_random_uuid() makes one (version 4,
 * variant RFC 4122), from n random ids in uuids; ERROR (XX000) when the
 * system has no random bytes to give
 */
static void
NewEventIds(pg_uuid_t *uuids, int n)
{
	int			i;

	if (!pg_strong_random(uuids, sizeof(pg_uuid_t) * n))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random values")));
	for (i = 0; i < n; i++)
	{
		uuids[i].data[6] = (uuids[i].data[6] & 0x0f) | 0x40;
		uuids[i].data[8] = (uuids[i].data[8] & 0x3f) | 0x80;
	}
}

/* A text column of the current result, NULL when null */
static char *
ResultCString(uint64 row, int col)
{
	bool		isnull;
	Datum		d = InventoryResultDatum(row, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

/* reservation.expired events per INSERT (and payloads in memory at once) */
#define EXPIRY_EVENTS_PER_INSERT 10000

/*
 * WriteExpiredEvents
 *		From the n rows of the expire statement (one per line of each
 *		reservation expired, by reservation id), writes one
 *		reservation.expired event per reservation, the payload the SQL
 *		builder RESERVATION_EVENT(_LOCATED) with STORED_LINES_JSON(_LOCATED)
 *		writes (the same keys and values; jsonb orders the keys), by one
 *		INSERT per EXPIRY_EVENTS_PER_INSERT events, in id order.  Returns
 *		the ids of the reservations in *ids_out, their number as the result.
 */
static int
WriteExpiredEvents(InventoryCall *call, uint64 n, TimestampTz now,
				   int64 **ids_out)
{
	SPITupleTable *rows = SPI_tuptable;
	int64	   *ids = palloc(sizeof(int64) * n);
	char	   *occurred_at = EventTime(now);
	MemoryContext chunk_cxt = AllocSetContextCreate(CurrentMemoryContext,
													"pg_inventory expiry events",
													ALLOCSET_DEFAULT_SIZES);
	uint64		row = 0;
	int			count = 0;

	while (row < n)
	{
		MemoryContext outer = MemoryContextSwitchTo(chunk_cxt);
		/* at most one event per row left (a row per line) */
		int			cap = (int) Min(n - row, (uint64) EXPIRY_EVENTS_PER_INSERT);
		const char **tenants = palloc(sizeof(char *) * cap);
		Datum	   *payloads = palloc(sizeof(Datum) * cap);
		Datum	   *event_ids = palloc(sizeof(Datum) * cap);
		pg_uuid_t  *uuids = palloc(sizeof(pg_uuid_t) * cap);
		int			first = count;
		int			m = 0;
		Datum		values[5];

		NewEventIds(uuids, cap);
		for (; row < n && m < cap; m++)
		{
			JsonbParseState *state = NULL;
			JsonbValue *result;
			pg_uuid_t  *uuid = &uuids[m];
			int64		id = InventoryResultInt64(row, 1);
			bool		isnull;
			bool		no_expiry;
			Datum		expires_at = InventoryResultDatum(row, 5, &no_expiry);

			ids[count++] = id;
			tenants[m] = ResultCString(row, 2);
			event_ids[m] = UUIDPGetDatum(uuid);

			pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
			PushString(&state, "event_id",
					   DatumGetCString(DirectFunctionCall1(uuid_out,
														   UUIDPGetDatum(uuid))));
			PushString(&state, "event_type", "reservation.expired");
			PushString(&state, "tenant", tenants[m]);
			PushString(&state, "request_key", ResultCString(row, 3));
			PushInt64(&state, "reservation_id", id);
			PushString(&state, "state", "expired");
			PushInt64(&state, "version",
					  DatumGetInt32(InventoryResultDatum(row, 4, &isnull)));
			if (call->located)
				PushString(&state, "reason", ResultCString(row, 6));
			PushString(&state, "expires_at", no_expiry ? NULL :
					   EventTime(DatumGetTimestampTz(expires_at)));
			PushString(&state, "occurred_at", occurred_at);
			PushKey(&state, "lines");
			(void) InventoryResultDatum(row, 7, &isnull);
			if (isnull)
			{
				/* no line (jsonb_agg over no rows): null */
				JsonbValue	v;

				v.type = jbvNull;
				pushJsonbValue(&state, WJB_VALUE, &v);
				row++;
			}
			else
			{
				pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
				for (; row < n && InventoryResultInt64(row, 1) == id; row++)
				{
					pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
					PushString(&state, "sku", ResultCString(row, 7));
					if (call->located)
						PushString(&state, "location", ResultCString(row, 8));
					PushInt64(&state, "quantity",
							  DatumGetInt32(InventoryResultDatum(row, 9, &isnull)));
					pushJsonbValue(&state, WJB_END_OBJECT, NULL);
				}
				pushJsonbValue(&state, WJB_END_ARRAY, NULL);
			}
			result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
			payloads[m] = JsonbPGetDatum(JsonbValueToJsonb(result));
		}

		values[0] = PointerGetDatum(construct_array(event_ids, m, UUIDOID,
													UUID_LEN, false,
													TYPALIGN_CHAR));
		values[1] = InventoryTextArray(tenants, m);
		values[2] = InventoryInt8Array(ids + first, m);
		values[3] = PointerGetDatum(construct_array(payloads, m, JSONBOID, -1,
													false, TYPALIGN_INT));
		values[4] = TimestampTzGetDatum(now);
		if (InventoryRun(&write_expired_events, values, NULL,
						 SPI_OK_INSERT) != (uint64) m)
			elog(ERROR, "pg_inventory: %d expiry events were not written", m);
		/* the expire statement's rows again, for the next chunk */
		SPI_tuptable = rows;
		MemoryContextSwitchTo(outer);
		MemoryContextReset(chunk_cxt);
	}
	MemoryContextDelete(chunk_cxt);
	*ids_out = ids;
	return count;
}

/* Expires a batch (or one reservation) and releases its units. */
static void
ExpireWork(void *arg)
{
	ExpirePass *pass = (ExpirePass *) arg;
	Datum		values[4];
	uint64		n;
	int			count = 0;

	values[0] = TimestampTzGetDatum(pass->now);
	values[1] = Int32GetDatum(pass->max_rows);
	values[2] = CStringGetTextDatum(pass->call->actor);
	if (pass->only_ids != NULL)
	{
		values[3] = InventoryInt8Array(pass->only_ids, pass->max_rows);
		n = InventoryRun(STMT(pass->call, expire_listed), values, NULL,
						 SPI_OK_SELECT);
	}
	else
		n = InventoryRun(STMT(pass->call, expire_batch), values, NULL,
						 SPI_OK_SELECT);
	if (n > 0)
	{
		int64	   *ids;

		count = WriteExpiredEvents(pass->call, n, pass->now, &ids);
		InventoryFaultPoint("expire");
		pass->call->storage->release(InventoryInt8Array(ids, count), pass->now);
	}
	pass->expired = count;
}

/*
 * A bad row: a data exception (class 22), a broken constraint (23) or
 * counters that do not hold what the reservations hold (XX001)
 */
static bool
IsBadRowError(ErrorData *edata)
{
	int			class = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

	return class == ERRCODE_DATA_EXCEPTION ||
		class == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION ||
		edata->sqlerrcode == ERRCODE_DATA_CORRUPTED;
}

/* What ExpireAroundBadRows has expired and skipped so far */
typedef struct ExpireSkips
{
	InventoryCall *call;
	TimestampTz now;
	uint64		expired;
	int			skipped;
	int64		first_skipped;	/* the oldest bad reservation */
	ErrorData  *first_error;	/* and its error */
} ExpireSkips;

/* the parts a failed list of due reservations is tried again in */
#define EXPIRE_SPLIT 16

/*
 * ExpireTry
 *		Expires the n listed due reservations ids (oldest first) in one
 *		subtransaction; false when that failed on a bad row
 *		(IsBadRowError) and was rolled back.  A single reservation that
 *		fails is skipped: the oldest skipped and its error are kept for
 *		the WARNING.
 */
static bool
ExpireTry(ExpireSkips *skips, const int64 *ids, int n)
{
	ExpirePass	pass = {skips->call, skips->now, n, ids, 0};
	ErrorData  *edata = NULL;

	if (InventoryTrySubtransaction(ExpireWork, &pass, IsBadRowError, &edata))
	{
		skips->expired += pass.expired;
		return true;
	}
	if (n == 1 && skips->skipped++ == 0)
	{
		skips->first_skipped = ids[0];
		skips->first_error = edata;
	}
	else
		FreeErrorData(edata);
	return false;
}

/*
 * ExpireSplit
 *		Expires the n (at least 2) listed due reservations ids, which failed
 *		together on a bad row, in EXPIRE_SPLIT parts tried on their own: the
 *		parts without a bad row are written once more, the failed ones are
 *		split again, down to single reservations, which are skipped.  With
 *		one bad row among n, that is about n rows written again and n / 15
 *		rolled back, in some 16 log16(n) subtransactions, instead of n
 *		subtransactions one by one.  When every part failed (bad rows
 *		everywhere), splitting further would only fail again at each level:
 *		the parts are then tried one reservation at a time.
 */
static void
ExpireSplit(ExpireSkips *skips, const int64 *ids, int n)
{
	int			part = (n + EXPIRE_SPLIT - 1) / EXPIRE_SPLIT;
	int			failed_first[EXPIRE_SPLIT];
	int			failed_count[EXPIRE_SPLIT];
	int			nparts = 0;
	int			nfailed = 0;
	int			first;
	int			k;

	for (first = 0; first < n; first += part)
	{
		int			m = Min(part, n - first);

		nparts++;
		if (!ExpireTry(skips, ids + first, m) && m > 1)
		{
			failed_first[nfailed] = first;
			failed_count[nfailed] = m;
			nfailed++;
		}
	}
	for (k = 0; k < nfailed; k++)
	{
		const int64 *part_ids = ids + failed_first[k];

		if (nfailed < nparts)
			ExpireSplit(skips, part_ids, failed_count[k]);
		else
		{
			int			i;

			for (i = 0; i < failed_count[k]; i++)
				(void) ExpireTry(skips, part_ids + i, 1);
		}
	}
}

/*
 * ExpireAroundBadRows
 *		After a batch failed on a bad row: lists the due reservations,
 *		oldest first, and expires them in parts (ExpireSplit, ExpireTry),
 *		which skip those that fail with a data or constraint error, until
 *		max_rows are expired or none is left.  One tenant's bad row never
 *		stops the expiry of the others, and costs them a few rolled-back
 *		tries, not one subtransaction per reservation.  Warns once, naming
 *		the oldest reservation it skipped and how many.
 */
static uint64
ExpireAroundBadRows(InventoryCall *call, TimestampTz now, int32 max_rows)
{
	ExpireSkips skips = {call, now, 0, 0, 0, NULL};
	TimestampTz after_at = DT_NOBEGIN;
	int64		after_id = 0;
	bool		first = true;

	while (skips.expired < (uint64) max_rows)
	{
		Datum		values[4];
		uint64		n;
		uint64		i;
		int64	   *ids;
		bool		isnull;

		values[0] = TimestampTzGetDatum(now);
		values[1] = Int32GetDatum((int32) ((uint64) max_rows - skips.expired));
		values[2] = TimestampTzGetDatum(after_at);
		values[3] = Int64GetDatum(after_id);
		n = InventoryRun(&due_after, values, NULL, SPI_OK_SELECT);
		if (n == 0)
			break;
		ids = palloc(sizeof(int64) * n);
		for (i = 0; i < n; i++)
			ids[i] = InventoryResultInt64(i, 1);
		after_at = DatumGetTimestampTz(InventoryResultDatum(n - 1, 2, &isnull));
		after_id = ids[n - 1];
		/* the first list is about the batch that failed: split it at once */
		if (first && n > 1)
			ExpireSplit(&skips, ids, (int) n);
		else if (!ExpireTry(&skips, ids, (int) n) && n > 1)
			ExpireSplit(&skips, ids, (int) n);
		first = false;
		pfree(ids);
	}
	if (skips.skipped > 0)
		ereport(WARNING,
				(errcode(skips.first_error->sqlerrcode),
				 errmsg("expire_due could not expire %d due reservation(s); the first is reservation " INT64_FORMAT ": %s",
						skips.skipped, skips.first_skipped,
						skips.first_error->message),
				 errdetail("The other due reservations were expired; these stay pending until their rows are repaired."),
				 errhint("SELECT * FROM inventory.check_invariants() names the SKUs whose counters are out of range or broken.")));
	return skips.expired;
}

/*
 * inventory_expire_due
 *		expire_due(max_rows integer DEFAULT 1000) RETURNS integer
 *
 * Expires at most max_rows (at least 1) pending reservations whose
 * expires_at <= clock, oldest first, skipping rows another transaction
 * holds, and returns their units to available.  Returns how many it
 * expired.  Safe to call from many sessions at once.  A batch that fails on
 * a bad row (a data or constraint error) is done again in parts, down to
 * single reservations (ExpireAroundBadRows), skipping the bad ones with a
 * WARNING.  Errors: 22023.
 */
Datum
inventory_expire_due(PG_FUNCTION_ARGS)
{
	InventoryCall call;
	ExpirePass	pass;
	ErrorData  *edata = NULL;
	int32		max_rows;
	uint64		expired;

	InventoryRequireArg(fcinfo, 0, "max_rows");
	max_rows = PG_GETARG_INT32(0);
	if (max_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_rows must be at least 1"),
				 errdetail("The value given is %d.", max_rows)));

	InventoryBeginCall(fcinfo, &call, NULL);
	pass.call = &call;
	pass.now = InventoryNow();
	pass.max_rows = max_rows;
	pass.only_ids = NULL;
	pass.expired = 0;
	if (InventoryTrySubtransaction(ExpireWork, &pass, IsBadRowError, &edata))
		expired = pass.expired;
	else
		expired = ExpireAroundBadRows(&call, pass.now, max_rows);
	InventoryEndCall(&call);
	PG_RETURN_INT32((int32) expired);
}

/*
 * inventory_transition_rules
 *		transition_rules() RETURNS TABLE(call text, from_state text,
 *			to_state text, moves_from text, moves_to text)
 *
 * The state machine the functions follow, one row per rule: the call (or
 * "expire", which expire_due and any call that finds a due pending
 * reservation apply), the state before (NULL: a new reservation), the
 * state after, and the counters the units leave and enter (NULL: nothing
 * moves).  Reads no table.
 */
Datum
inventory_transition_rules(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	for (i = 0; i < (int) lengthof(transition_rules); i++)
	{
		const TransitionRule *rule = &transition_rules[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = CStringGetTextDatum(rule->call);
		nulls[1] = rule->from == NULL;
		if (rule->from != NULL)
			values[1] = CStringGetTextDatum(rule->from);
		values[2] = CStringGetTextDatum(rule->to);
		nulls[3] = rule->take == COUNTER_NONE;
		if (!nulls[3])
			values[3] = CStringGetTextDatum(counter_names[rule->take]);
		nulls[4] = rule->give == COUNTER_NONE;
		if (!nulls[4])
			values[4] = CStringGetTextDatum(counter_names[rule->give]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * 0.5: a pending reservation's new expiry $2, with its log row and its
 * reservation.extended event.  $1 id, $3 actor, $4 clock, $5 version read.
 */
static InventoryStatement extend_hold = {
	"extend reservation",
	"WITH r AS (UPDATE inventory.reservation r SET expires_at = $2, "
	"version = r.version + 1, updated_at = $4 "
	"WHERE r.id = $1 AND r.state = 'pending' AND r.version = $5 "
	"RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at, "
	"r.reason), "
	"t AS (INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, 'pending', r.state, 'extended', $3, r.version, $4 FROM r), "
	"e AS (SELECT gen_random_uuid() AS event_id) "
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, 'reservation.extended', r.tenant, r.id, "
	RESERVATION_EVENT_LOCATED("'reservation.extended'", "$4",
							  STORED_LINES_JSON_LOCATED)
	", $4 FROM r, e",
	5, {INT8OID, TIMESTAMPTZOID, TEXTOID, TIMESTAMPTZOID, INT4OID}, NULL, true
};

/*
 * LockPendingHold
 *		The start of extend and amend: the reservation under its row lock,
 *		the clock read after the lock.  Returns NULL when the call goes on;
 *		else the call's result (not_found, the expiry of a due hold, or a
 *		state other than pending reported unchanged).
 */
static bool
LockPendingHold(InventoryCall *call, const char *key, StoredReservation *res,
				TimestampTz *now, Datum *result)
{
	if (!call->located)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("extend and amend need pg_inventory 0.5 or later in this database"),
				 errhint("Run ALTER EXTENSION pg_inventory UPDATE.")));
	if (!FetchReservation(call, key, true, false, res))
	{
		*result = FinishCall(call, "not_found", NULL, false, NULL);
		return false;
	}
	*now = InventoryNow();
	if (strcmp(EffectiveState(res, *now), "expired") == 0 &&
		strcmp(res->state, "pending") == 0)
	{
		ApplyRule(call, FindRule("expire", res->state), res,
				  "expires_at reached", *now);
		*result = FinishCall(call, "expired", res->state, true, res);
		return false;
	}
	if (strcmp(res->state, "pending") != 0)
	{
		*result = FinishCall(call, StateStatus(res->state), res->state, false,
							 res);
		return false;
	}
	return true;
}

/*
 * inventory_extend
 *		extend(tenant text, request_key text, expires_at timestamptz)
 *		RETURNS inventory.outcome
 *
 * 0.5: moves a pending hold's expiry later, to expires_at, at most 7 days
 * after the hold was created.  Under the reservation's row lock with the
 * clock read after it; a transition row (pending -> pending, "extended"),
 * a version step and one reservation.extended event.  A target at or
 * before the current expiry changes nothing (status extended, applied
 * false): the same call again is harmless.  A due hold is expired instead
 * (status expired, applied); other states are reported unchanged
 * (confirmed, cancelled, insufficient, compensated, expired), and
 * not_found.  Errors: 22023 (NULL or infinite expires_at, or past the 7
 * days), 42501.
 */
Datum
inventory_extend(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", 0);
	TimestampTz target;
	TimestampTz limit;
	InventoryCall call;
	StoredReservation res;
	TimestampTz now;
	Datum		result;
	Datum		values[5];

	InventoryRequireArg(fcinfo, 2, "expires_at");
	target = PG_GETARG_TIMESTAMPTZ(2);
	if (TIMESTAMP_NOT_FINITE(target))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expires_at must be a finite instant"),
				 errdetail("The value given is %s.",
						   timestamptz_to_str(target))));

	InventoryBeginCall(fcinfo, &call, tenant);
	if (!LockPendingHold(&call, key, &res, &now, &result))
		return result;
	if (target <= res.expires_at)
		return FinishCall(&call, "extended", res.state, false, &res);
	limit = res.created_at + INVENTORY_TTL_MAX_USECS;
	if (target > limit)
	{
		/* timestamptz_to_str returns a static buffer: one copy each */
		char	   *created_str = pstrdup(timestamptz_to_str(res.created_at));
		char	   *target_str = pstrdup(timestamptz_to_str(target));
		char	   *limit_str = pstrdup(timestamptz_to_str(limit));

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a hold lasts at most 7 days from its creation"),
				 errdetail("Reservation " INT64_FORMAT " was created at %s; expires_at %s is later than %s.",
						   res.id, created_str, target_str, limit_str),
				 errhint("Confirm the hold, or make a new reservation.")));
	}

	values[0] = Int64GetDatum(res.id);
	values[1] = TimestampTzGetDatum(target);
	values[2] = CStringGetTextDatum(call.actor);
	values[3] = TimestampTzGetDatum(now);
	values[4] = Int32GetDatum(res.version);
	if (InventoryRun(&extend_hold, values, NULL, SPI_OK_INSERT) != 1)
		elog(ERROR, "pg_inventory: reservation " INT64_FORMAT
			 " changed under its row lock", res.id);
	res.expires_at = target;
	res.version++;
	return FinishCall(&call, "extended", res.state, true, &res);
}

/* 0.5: the lines of reservation $1, before amend writes them anew */
static InventoryStatement drop_lines = {
	"drop reservation lines",
	"DELETE FROM inventory.reservation_line l WHERE l.reservation_id = $1",
	1, {INT8OID}, NULL, true
};

/*
 * 0.5: a pending reservation's new lines ($2 skus, $3 quantities, $9
 * locations), its log row and its reservation.amended event; the payload
 * it was asked for ($7) is kept when none was stored, so that a replay of
 * the original reserve still matches.  $1 id, $4 actor, $5 clock, $6
 * version read; $8 unused.
 */
static InventoryStatement amend_hold = {
	"amend reservation",
	"WITH r AS (UPDATE inventory.reservation r SET version = r.version + 1, "
	"updated_at = $5, request = COALESCE(r.request, $7) "
	"WHERE r.id = $1 AND r.state = 'pending' AND r.version = $6 "
	"RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at, "
	"r.reason), "
	"l AS (INSERT INTO inventory.reservation_line "
	"(reservation_id, tenant, sku, quantity, location) "
	"SELECT r.id, r.tenant, u.sku, u.qty, u.location "
	"FROM r, unnest($2, $3, $9) AS u(sku, qty, location)), "
	"t AS (INSERT INTO inventory.reservation_transition "
	"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
	"SELECT r.id, 'pending', r.state, 'amended', $4, r.version, $5 FROM r), "
	"e AS (SELECT gen_random_uuid() AS event_id) "
	"INSERT INTO inventory.outbox "
	"(event_id, event_type, tenant, reservation_id, payload, created_at) "
	"SELECT e.event_id, 'reservation.amended', r.tenant, r.id, "
	RESERVATION_EVENT_LOCATED("'reservation.amended'", "$5",
							  GIVEN_LINES_JSON_LOCATED)
	", $5 FROM r, e",
	9, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID, INT4OID,
	JSONBOID, TEXTOID, TEXTARRAYOID}, NULL, true
};

/* Units of sku in sorted, merged lines without locations (0 if absent) */
static int64
UnitsOf(const InventoryLines *lines, const char *sku)
{
	int			i;

	for (i = 0; i < lines->count; i++)
		if (strcmp(lines->items[i].sku, sku) == 0)
			return lines->items[i].quantity;
	return 0;
}

/* for sorting a SKU's held lines, the last location in policy order first */
static const InventoryPolicy *release_policy;

static int
CompareReleaseOrder(const void *a, const void *b)
{
	const InventoryLine *la = (const InventoryLine *) a;
	const InventoryLine *lb = (const InventoryLine *) b;
	int			ra = InventoryPolicyRank(release_policy, la->location);
	int			rb = InventoryPolicyRank(release_policy, lb->location);

	if (ra < 0)
		ra = PG_INT32_MAX;
	if (rb < 0)
		rb = PG_INT32_MAX;
	return (rb > ra) - (rb < ra);
}

/*
 * PlanRelease
 *		Into releases: units units of sku taken back from the held lines,
 *		from the location last in the policy's order first.
 */
static void
PlanRelease(const InventoryLines *held, const InventoryPolicy *policy,
			const char *sku, int64 units, InventoryLines *releases)
{
	InventoryLine *rows = palloc(sizeof(InventoryLine) * Max(held->count, 1));
	int			n = 0;
	int			i;

	for (i = 0; i < held->count; i++)
		if (strcmp(held->items[i].sku, sku) == 0)
			rows[n++] = held->items[i];
	release_policy = policy;
	qsort(rows, n, sizeof(InventoryLine), CompareReleaseOrder);
	for (i = 0; i < n && units > 0; i++)
	{
		InventoryLine *r = &releases->items[releases->count++];

		*r = rows[i];
		r->quantity = Min(rows[i].quantity, units);
		units -= r->quantity;
	}
}

/*
 * inventory_amend
 *		amend(tenant text, request_key text, lines jsonb)
 *		RETURNS inventory.outcome
 *
 * 0.5: sets a pending hold's units per SKU to lines (reserve_lines' form,
 * without "location"; a SKU left out is released): a lower quantity
 * releases units (from the location last in the allocation policy's order
 * first), a higher one or a new SKU takes the extra units by the
 * allocation policy.  All or nothing: when the extra units are not there,
 * nothing changes and the status is insufficient (state pending).  Under
 * the reservation's row lock with the clock read after it; a transition
 * row (pending -> pending, "amended"), a version step and one
 * reservation.amended event.  The same target again changes nothing
 * (status amended, applied false).  A due hold is expired instead; other
 * states are reported unchanged, and not_found.  Errors: 22023 bad lines,
 * 42501, IN002 a new SKU the tenant never stocked.
 */
Datum
inventory_amend(PG_FUNCTION_ARGS)
{
	char	   *tenant = InventoryNameArg(fcinfo, 0, "tenant", 0);
	char	   *key = InventoryKeyArg(fcinfo, 1, "request_key", 0);
	InventoryLines target;
	InventoryLines current;
	InventoryLines all;
	InventoryLines increments = {0, 0, NULL};
	InventoryLines releases = {0, 0, NULL};
	InventoryLines taken = {0, 0, NULL};
	InventoryLines shortage = {0, 0, NULL};
	InventoryLines after;
	InventoryPolicy policy;
	InventoryCall call;
	StoredReservation res;
	TimestampTz now;
	Datum		result;
	Datum		values[9];
	char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', 'n', ' '};
	const char **skus;
	int			nskus;
	int			i;

	InventoryRequireArg(fcinfo, 2, "lines");
	InventoryParseLines(PG_GETARG_JSONB_P(2), false, &target);

	InventoryBeginCall(fcinfo, &call, tenant);
	if (!LockPendingHold(&call, key, &res, &now, &result))
		return result;
	SumBySku(&res.lines, &current);
	if (InventoryLinesEqual(&current, &target))
		return FinishCall(&call, "amended", res.state, false, &res);

	/* every SKU concerned, and what moves */
	all.count = current.count + target.count;
	all.items = palloc(sizeof(InventoryLine) * all.count);
	memcpy(all.items, current.items, sizeof(InventoryLine) * current.count);
	memcpy(all.items + current.count, target.items,
		   sizeof(InventoryLine) * target.count);
	InventorySortLines(&all);
	nskus = InventoryDistinctSkus(&all, &skus);
	InventoryReadPolicy(tenant, &policy);
	increments.items = palloc(sizeof(InventoryLine) * Max(nskus, 1));
	releases.items = palloc(sizeof(InventoryLine) * Max(res.lines.count, 1));
	for (i = 0; i < nskus; i++)
	{
		int64		cur = UnitsOf(&current, skus[i]);
		int64		tgt = UnitsOf(&target, skus[i]);

		if (tgt > cur)
		{
			InventoryLine *l = &increments.items[increments.count++];

			l->sku = (char *) skus[i];
			l->location = NULL;
			l->quantity = tgt - cur;
			l->available = -1;
			increments.total += tgt - cur;
		}
		else if (tgt < cur)
			PlanRelease(&res.lines, &policy, skus[i], cur - tgt, &releases);
	}

	/* the extra units by the policy, on the exact units under lock */
	if (increments.count > 0 &&
		!InventoryAllocateExact(&call, &increments, &policy, nskus, skus,
								&taken, &shortage))
		return FinishCall(&call, "insufficient", res.state, false, &res);
	if (taken.count > 0 && !call.storage->hold(tenant, &taken, now))
		elog(ERROR, "pg_inventory: units planned under their row locks could not be held");
	InventorySortLines(&releases);
	if (releases.count > 0)
		call.storage->move(tenant, &releases, COUNTER_RESERVED,
						   COUNTER_AVAILABLE, now);
	InventoryTestPause();
	InventoryFaultPoint("records");

	/* the lines after: held - released + taken, merged */
	after.count = 0;
	after.total = 0;
	after.items = palloc(sizeof(InventoryLine) *
						 (res.lines.count + releases.count + taken.count));
	for (i = 0; i < res.lines.count; i++)
		after.items[after.count++] = res.lines.items[i];
	for (i = 0; i < releases.count; i++)
	{
		after.items[after.count] = releases.items[i];
		after.items[after.count++].quantity = -releases.items[i].quantity;
	}
	for (i = 0; i < taken.count; i++)
		after.items[after.count++] = taken.items[i];
	InventorySortLines(&after);
	{
		int			out = 0;

		for (i = 0; i < after.count; i++)
			if (after.items[i].quantity > 0)
			{
				after.items[out++] = after.items[i];
				after.total += after.items[i].quantity;
			}
		after.count = out;
	}

	values[0] = Int64GetDatum(res.id);
	InventoryRun(&drop_lines, values, NULL, SPI_OK_DELETE);
	values[1] = InventorySkuArray(&after);
	values[2] = InventoryQuantityArray(&after, INT4OID);
	values[3] = CStringGetTextDatum(call.actor);
	values[4] = TimestampTzGetDatum(now);
	values[5] = Int32GetDatum(res.version);
	values[6] = LinesJsonb(&current, true);
	values[8] = LocationArray(&after);
	if (InventoryRun(&amend_hold, values, nulls, SPI_OK_INSERT) != 1)
		elog(ERROR, "pg_inventory: reservation " INT64_FORMAT
			 " changed under its row lock", res.id);
	res.lines = after;
	res.version++;
	return FinishCall(&call, "amended", res.state, true, &res);
}
