/*-------------------------------------------------------------------------
 *
 * src/outbox.c
 *		The outbox functions of version 0.2: what a relay calls to publish
 *		events at least once (claim, mark published, mark failed, release),
 *		what an operator calls for dead letters (requeue, discard), and the
 *		retention function (purge_published).
 *
 * A relay leases a batch of events (claimed_until), publishes them with
 * publisher confirms, and marks them published only after the broker's
 * ack; a relay that dies loses its lease when it runs out, and another relay
 * publishes the events again: delivery is at least once, never at most
 * once.  Events of one reservation are leased one at a time, in id order
 * (see claim_events).  Leases are owned: a relay holds the lease of an
 * event from its claim until it marks the event published or failed or
 * releases it, or until another relay claims the event after the lease
 * ran out; marking and releasing act only on the events whose lease the
 * named relay holds (claimed_by, claimed_until set), so a late or repeated
 * call changes and counts nothing.  These functions touch only outbox rows, never
 * reservation or stock rows, so they take no part in the lock order of
 * pg_inventory.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_inventory.h"
#include "statement.h"

PG_FUNCTION_INFO_V1(inventory_relay_claim);
PG_FUNCTION_INFO_V1(inventory_relay_mark_published);
PG_FUNCTION_INFO_V1(inventory_relay_mark_failed);
PG_FUNCTION_INFO_V1(inventory_relay_release);
PG_FUNCTION_INFO_V1(inventory_requeue_dead_letters);
PG_FUNCTION_INFO_V1(inventory_discard_dead_letters);
PG_FUNCTION_INFO_V1(inventory_purge_published);
PG_FUNCTION_INFO_V1(inventory_next_event_id);
PG_FUNCTION_INFO_V1(inventory_advance_outbox_low_water);
PG_FUNCTION_INFO_V1(inventory_outbox_ring);

/*
 * The low-water mark (0.7): pg_locks.objsubid of the advisory locks the
 * outbox takes (values user code cannot take: pg_advisory_lock uses 1 and
 * 2).  EVENT_MARKER: a share lock per transaction writing events, on its
 * marker, the last id drawn before its first event's id.  LOW_WATER: the
 * exclusive lock of whoever moves the mark (advance_outbox_low_water,
 * briefly; requeue_dead_letters and discard_dead_letters, until they
 * commit).
 */
#define INVENTORY_LOCK_EVENT_MARKER	20553
#define INVENTORY_LOCK_LOW_WATER	20554
/*
 * The rings (0.8): the exclusive lock of a purge_published that empties
 * rings, taken without waiting and held to its transaction's end: one
 * purge at a time (two could each hold one ring exclusively and wait for
 * the other's to run their statements, which lock every ring;
 * InventoryPurgeRings)
 */
#define INVENTORY_LOCK_RING_PURGE	20555

/* The tag of the low-water lock of this database */
static void
LowWaterLockTag(LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, 0, 0, INVENTORY_LOCK_LOW_WATER);
}

/* The relation name of schema inventory (InvalidOid: none) */
static Oid
InventoryRelid(const char *name)
{
	return get_relname_relid(name, get_namespace_oid("inventory", false));
}

/*
 * The last value of sequence seq as pg_sequence_last_value reads it (NULL,
 * *isnull set, when it was never called).  Errors: 42501 without SELECT or
 * USAGE on it.
 */
int64
InventorySequenceLastValue(Oid seq, bool *isnull)
{
	LOCAL_FCINFO(last, 1);
	Datum		value;

	InitFunctionCallInfoData(*last, NULL, 1, InvalidOid, NULL, NULL);
	last->args[0].value = ObjectIdGetDatum(seq);
	last->args[0].isnull = false;
	value = pg_sequence_last_value(last);
	*isnull = last->isnull;
	return *isnull ? 0 : DatumGetInt64(value);
}

/*
 * Whether the installed schema has the low-water mark (0.7 on); looked up
 * by the outbox's functions only, not at every call
 */
static bool
HasLowWater(void)
{
	return OidIsValid(InventoryRelid("outbox_low_water"));
}

/* the top transaction (MyProc->lxid) that holds its marker */
static LocalTransactionId marker_lxid = InvalidLocalTransactionId;

/* Most characters of an error kept on an outbox row */
#define INVENTORY_ERROR_MAX_CHARS 1000

/*
 * InventoryIntervalArg
 *		A non-NULL interval argument within (min, max]; with or_equal the
 *		lower bound is included.  Errors: 22023.  (Also retention.c.)
 */
Interval *
InventoryIntervalArg(FunctionCallInfo fcinfo, int argno, const char *argname,
					 const char *min_text, bool or_equal, const char *max_text)
{
	Interval   *value;
	Datum		min;
	Datum		max;
	bool		too_small;

	InventoryRequireArg(fcinfo, argno, argname);
	value = PG_GETARG_INTERVAL_P(argno);
	min = DirectFunctionCall3(interval_in, CStringGetDatum(min_text),
							  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	max = DirectFunctionCall3(interval_in, CStringGetDatum(max_text),
							  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	too_small = or_equal ?
		DatumGetBool(DirectFunctionCall2(interval_lt, IntervalPGetDatum(value), min)) :
		DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(value), min));
	if (too_small ||
		DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(value), max)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %s %s and at most %s", argname,
						or_equal ? "at least" : "above", min_text, max_text),
				 errdetail("The value given is %s.",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(value))))));
	return value;
}

/*
 * IdsArg
 *		The outbox ids of argument argno (bigint[]): neither the array nor
 *		an element may be NULL (a NULL id names no event: it would be
 *		skipped silently); with nullable, a NULL array is allowed and
 *		returned as (Datum) 0 with *isnull set (requeue_dead_letters: every
 *		dead letter).  Errors: 22023.
 */
static Datum
IdsArg(FunctionCallInfo fcinfo, int argno, bool nullable, bool *isnull)
{
	ArrayType  *ids;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	*isnull = PG_ARGISNULL(argno);
	if (*isnull && nullable)
		return (Datum) 0;
	if (*isnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"ids\" must not be null"),
				 errdetail("The value given is NULL."),
				 errhint("Pass the outbox ids as a bigint[], e.g. ARRAY[17, 18]::bigint[].")));
	ids = PG_GETARG_ARRAYTYPE_P(argno);
	if (array_contains_nulls(ids))
	{
		deconstruct_array(ids, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &nulls, &n);
		for (i = 0; i < n && !nulls[i]; i++)
			;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ids must not contain NULL"),
				 errdetail("Element %d of the %d given is NULL.", i + 1, n),
				 errhint("Every element is the id of an outbox event.")));
	}
	return PointerGetDatum(ids);
}

/* A non-NULL integer argument within [min, max].  Errors: 22023. */
int32
InventoryIntArg(FunctionCallInfo fcinfo, int argno, const char *argname,
				int32 min, int32 max)
{
	int32		value;

	InventoryRequireArg(fcinfo, argno, argname);
	value = PG_GETARG_INT32(argno);
	if (value < min || value > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be %d to %d", argname, min, max),
				 errdetail("The value given is %d.", value)));
	return value;
}

/*
 * RunPlan
 *		Runs stmt with values as the function owner and returns its row
 *		count.
 */
static int32
RunPlan(FunctionCallInfo fcinfo, InventoryStatement *stmt, Datum *values,
		const char *nulls, int expected_rc)
{
	InventoryCall call;
	uint64		n;

	InventoryBeginCall(fcinfo, &call, NULL);
	n = InventoryRun(stmt, values, nulls, expected_rc);
	InventoryEndCall(&call);
	return (int32) n;
}

/*
 * Leases up to $2 publishable events to relay $1 until $3 + $4: committed,
 * unpublished, live, due for an attempt, not leased by a live claim, and
 * the first unpublished event of their reservation (events of one
 * reservation go out in order; a later one waits while an earlier one
 * backs off or is dead-lettered).  SKIP LOCKED: relays never wait for each
 * other.  $3 clock.  The update finds the leased rows by id = ANY (ARRAY(c)):
 * one index lookup each, whatever the plan; a join with c, planned
 * generically (the statement's plan is kept), merged or hashed the whole
 * outbox, published events included, on every claim.
 *
 * The earlier-event check compares (reservation_id, id) as a row: only
 * outbox_reservation can serve that, so no plan walks the primary key
 * down from o.id (what an empty outbox's statistics made the planner
 * choose for "p.id < o.id", a scan of every older event per candidate).
 */
#define CLAIM_EVENTS_SQL(from) \
	"WITH c AS (SELECT o.id FROM inventory.outbox o " \
	"WHERE o.published_at IS NULL AND o.dead_at IS NULL " from \
	"AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= $3) " \
	"AND (o.claimed_until IS NULL OR o.claimed_until <= $3) " \
	"AND (o.reservation_id IS NULL OR NOT EXISTS (SELECT 1 FROM inventory.outbox p " \
	"WHERE p.reservation_id = o.reservation_id " \
	"AND (p.reservation_id, p.id) < (o.reservation_id, o.id) " \
	"AND p.published_at IS NULL)) " \
	"ORDER BY o.id LIMIT $2 FOR UPDATE SKIP LOCKED), " \
	"u AS (UPDATE inventory.outbox o SET claimed_until = $3 + $4, claimed_by = $1 " \
	"WHERE o.id = ANY (ARRAY(SELECT c.id FROM c)) " \
	"RETURNING o.id, o.event_id, o.event_type, o.tenant::text, o.reservation_id, " \
	"o.payload, o.attempts) " \
	"SELECT * FROM u ORDER BY u.id"

static InventoryStatement claim_events = {
	"claim outbox events",
	CLAIM_EVENTS_SQL(""),
	4, {TEXTOID, INT4OID, TIMESTAMPTZOID, INTERVALOID}, NULL, true
};

/*
 * The same from the low-water mark on (0.7): every event below it is
 * published or dead-lettered, so the index scan starts there, past the
 * dead entries a long transaction elsewhere keeps in outbox_unpublished.
 */
static InventoryStatement claim_events_from_mark = {
	"claim outbox events",
	CLAIM_EVENTS_SQL("AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w) "),
	4, {TEXTOID, INT4OID, TIMESTAMPTZOID, INTERVALOID}, NULL, true
};

/* $1 relay, $2 ids, $3 clock: only events relay $1 claimed last */
static InventoryStatement mark_published = {
	"mark events published",
	"UPDATE inventory.outbox o SET published_at = $3, claimed_until = NULL "
	"WHERE o.id = ANY ($2) AND o.claimed_by = $1 AND o.claimed_until IS NOT NULL "
	"AND o.published_at IS NULL",
	3, {TEXTOID, INT8ARRAYOID, TIMESTAMPTZOID}, NULL, true
};

/*
 * One failed attempt of each event $2 that relay $1 claimed last (error
 * $3): the next attempt after $6 * 2^attempts (at most $7) with jitter
 * (x 0.5 to 1), or, at the $4th failure, dead-lettered.  $5 clock.  The
 * delay is computed in seconds as a double and capped before it becomes an
 * interval, so no attempt count overflows it.
 */
static InventoryStatement mark_failed = {
	"mark events failed",
	"UPDATE inventory.outbox o SET attempts = o.attempts + 1, last_error = $3, "
	"claimed_until = NULL, "
	"next_attempt_at = CASE WHEN o.attempts + 1 >= $4 THEN NULL "
	"ELSE $5 + make_interval(secs => least(extract(epoch FROM $6) "
	"* power(2::float8, o.attempts), extract(epoch FROM $7)::float8) "
	"* (0.5 + random() / 2)) END, "
	"dead_at = CASE WHEN o.attempts + 1 >= $4 THEN $5 END "
	"WHERE o.id = ANY ($2) AND o.claimed_by = $1 AND o.claimed_until IS NOT NULL "
	"AND o.published_at IS NULL AND o.dead_at IS NULL",
	7, {TEXTOID, INT8ARRAYOID, TEXTOID, INT4OID, TIMESTAMPTZOID, INTERVALOID,
	INTERVALOID}, NULL, true
};

/* gives back the leases of relay $1 on $2 */
static InventoryStatement release_events = {
	"release outbox leases",
	"UPDATE inventory.outbox o SET claimed_until = NULL "
	"WHERE o.id = ANY ($2) AND o.claimed_by = $1 AND o.published_at IS NULL "
	"AND o.claimed_until IS NOT NULL",
	2, {TEXTOID, INT8ARRAYOID}, NULL, true
};

/*
 * $1 ids, or NULL for every dead letter.  Returns how many it requeued,
 * what they were (JSON, for the audit), $1 as JSON and the lowest id
 * requeued (NULL: none), below which the low-water mark (0.7) must go.
 */
static InventoryStatement requeue_dead = {
	"requeue dead letters",
	"WITH u AS (UPDATE inventory.outbox o SET dead_at = NULL, attempts = 0, "
	"next_attempt_at = NULL, claimed_until = NULL "
	"WHERE o.dead_at IS NOT NULL AND o.published_at IS NULL "
	"AND ($1 IS NULL OR o.id = ANY ($1)) "
	"RETURNING o.id, o.event_id, o.event_type, o.tenant, o.reservation_id, "
	"o.last_error) "
	"SELECT count(*)::int4, COALESCE(jsonb_agg(jsonb_build_object('id', u.id, "
	"'event_id', u.event_id, 'event_type', u.event_type, 'tenant', u.tenant, "
	"'reservation_id', u.reservation_id, 'last_error', u.last_error) "
	"ORDER BY u.id), '[]')::text, COALESCE(to_jsonb($1)::text, 'null'), "
	"min(u.id) FROM u",
	1, {INT8ARRAYOID}, NULL, true
};

/*
 * deletes the dead letters $1; returns how many, what they were (JSON with
 * their payloads, for the audit), $1 as JSON and the lowest id deleted
 * (the later events of its reservation, which the low-water mark (0.7)
 * may have passed, are above it)
 */
static InventoryStatement discard_dead = {
	"discard dead letters",
	"WITH d AS (DELETE FROM inventory.outbox o WHERE o.dead_at IS NOT NULL "
	"AND o.published_at IS NULL AND o.id = ANY ($1) "
	"RETURNING o.id, o.event_id, o.event_type, o.tenant, o.reservation_id, "
	"o.created_at, o.attempts, o.last_error, o.dead_at, o.payload) "
	"SELECT count(*)::int4, COALESCE(jsonb_agg(jsonb_build_object('id', d.id, "
	"'event_id', d.event_id, 'event_type', d.event_type, 'tenant', d.tenant, "
	"'reservation_id', d.reservation_id, 'created_at', d.created_at, "
	"'attempts', d.attempts, 'last_error', d.last_error, 'dead_at', d.dead_at, "
	"'payload', d.payload) ORDER BY d.id), '[]')::text, COALESCE(to_jsonb($1)::text, 'null'), "
	"min(d.id) FROM d",
	1, {INT8ARRAYOID}, NULL, true
};

/*
 * The low-water mark (0.7).  The last id drawn from outbox_id_seq (0 when
 * none was) and the mark: read from the sequences' pages, not from a
 * snapshot.
 */
static InventoryStatement low_water_head = {
	"read the outbox's head and mark",
	"SELECT CASE WHEN s.is_called THEN s.last_value ELSE s.last_value - 1 END, "
	"(SELECT w.last_value FROM inventory.outbox_low_water w), "
	"(SELECT q.seqcache = 1 AND q.seqincrement > 0 FROM pg_catalog.pg_sequence q "
	"WHERE q.seqrelid = 'inventory.outbox_id_seq'::pg_catalog.regclass) "
	"FROM inventory.outbox_id_seq s",
	0, {InvalidOid}
};

/*
 * the lowest and the highest marker the running or prepared transactions
 * of database $1 hold
 */
static InventoryStatement low_water_writers = {
	"find the outbox's writers",
	"SELECT min(m.marker), max(m.marker) FROM (SELECT (l.classid::int8 << 32) | l.objid::int8 "
	"AS marker FROM pg_catalog.pg_locks l "
	"WHERE l.locktype = 'advisory' AND l.database = $1 "
	"AND l.objsubid = " CppAsString2(INVENTORY_LOCK_EVENT_MARKER) ") m",
	1, {OIDOID}
};

/*
 * The first live unpublished event from id $1 on that a claim could hand
 * out some day, NULL when none: not one that waits behind a dead letter
 * of its reservation (it waits until an operator requeues or discards
 * that dead letter, and both lower the mark below it).
 */
static InventoryStatement low_water_first = {
	"find the first unpublished event",
	"SELECT min(o.id) FROM inventory.outbox o "
	"WHERE o.published_at IS NULL AND o.dead_at IS NULL AND o.id >= $1 "
	"AND (o.reservation_id IS NULL OR NOT EXISTS (SELECT 1 FROM inventory.outbox p "
	"WHERE p.reservation_id = o.reservation_id "
	"AND (p.reservation_id, p.id) < (o.reservation_id, o.id) "
	"AND p.dead_at IS NOT NULL))",
	1, {INT8OID}, NULL, true
};

/* moves the mark to $1 (up or down) */
static InventoryStatement low_water_set = {
	"move the outbox's low-water mark",
	"SELECT pg_catalog.setval('inventory.outbox_low_water', $1, true)",
	1, {INT8OID}
};

/* lowers the mark to $1 if it is above */
static InventoryStatement low_water_lower = {
	"lower the outbox's low-water mark",
	"SELECT pg_catalog.setval('inventory.outbox_low_water', $1, true) "
	"FROM inventory.outbox_low_water w WHERE w.last_value > $1",
	1, {INT8OID}
};

/* deletes up to $3 events published before $1 - $2, oldest first */
static InventoryStatement purge_events = {
	"purge published events",
	"WITH p AS MATERIALIZED (SELECT p.id FROM inventory.outbox p "
	"WHERE p.published_at < $1 - $2 "
	"ORDER BY p.published_at LIMIT $3 FOR UPDATE SKIP LOCKED) "
	"DELETE FROM inventory.outbox o USING p WHERE o.id = p.id",
	3, {TIMESTAMPTZOID, INTERVALOID, INT4OID}, NULL, true
};

/*
 * inventory_relay_claim
 *		relay_claim(relay text, batch_size integer DEFAULT 100,
 *					lease interval DEFAULT '30 seconds')
 *		RETURNS TABLE(id bigint, event_id uuid, event_type text, tenant text,
 *					  reservation_id bigint, payload jsonb, attempts integer)
 *
 * Leases up to batch_size (1 to 10000) publishable events to relay (a name,
 * 1 to 64 characters, for logs and release) for lease (above 0, at most
 * 1 hour), in id order.  Another relay sees them again when the lease runs
 * out.  Errors: 22023.
 */
Datum
inventory_relay_claim(PG_FUNCTION_ARGS)
{
	char	   *relay = InventoryNameArg(fcinfo, 0, "relay", NAME_WILDCARD);
	int32		batch = InventoryIntArg(fcinfo, 1, "batch_size", 1, 10000);
	Interval   *lease = InventoryIntervalArg(fcinfo, 2, "lease", "0", false, "1 hour");
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InventoryCall call;
	Datum		values[4];
	uint64		n;
	uint64		i;

	InitMaterializedSRF(fcinfo, 0);
	InventoryBeginCall(fcinfo, &call, NULL);
	values[0] = CStringGetTextDatum(relay);
	values[1] = Int32GetDatum(batch);
	values[2] = TimestampTzGetDatum(InventoryNow());
	values[3] = IntervalPGetDatum(lease);
	n = InventoryRun(HasLowWater() ? &claim_events_from_mark : &claim_events,
					 values, NULL, SPI_OK_SELECT);
	for (i = 0; i < n; i++)
	{
		Datum		row[7];
		bool		nulls[7];
		int			col;

		for (col = 0; col < 7; col++)
			row[col] = InventoryResultDatum(i, col + 1, &nulls[col]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, nulls);
	}
	InventoryEndCall(&call);
	return (Datum) 0;
}

/*
 * inventory_relay_mark_published
 *		relay_mark_published(relay text, ids bigint[]) RETURNS integer
 *
 * Marks the events ids published; call it only after the broker confirmed
 * every one of them.  Acts only on events whose lease relay still holds
 * (it claimed them last): an event another relay claimed since, after this
 * relay's lease ran out, is left to that relay.  Returns how many it
 * marked.  Errors: 22023.
 */
Datum
inventory_relay_mark_published(PG_FUNCTION_ARGS)
{
	Datum		values[3];

	bool		isnull;

	values[0] = CStringGetTextDatum(InventoryNameArg(fcinfo, 0, "relay",
													 NAME_WILDCARD));
	values[1] = IdsArg(fcinfo, 1, false, &isnull);
	values[2] = TimestampTzGetDatum(InventoryNow());
	PG_RETURN_INT32(RunPlan(fcinfo, &mark_published, values, NULL,
							SPI_OK_UPDATE));
}

/*
 * inventory_relay_mark_failed
 *		relay_mark_failed(relay text, ids bigint[], error text,
 *						  max_attempts integer DEFAULT 10,
 *						  backoff interval DEFAULT '1 second',
 *						  max_backoff interval DEFAULT '5 minutes')
 *		RETURNS integer
 *
 * Records one failed publish attempt of each event: the error (its first
 * 1000 characters), and the next attempt after backoff * 2^(attempts
 * before) capped at max_backoff, times a random factor from 0.5 to 1
 * (jitter); at the max_attempts-th failure the event is dead-lettered
 * instead (dead_at set; requeue_dead_letters brings it back).  Acts only
 * on events whose lease relay still holds.  Returns how many events it
 * recorded.  Errors: 22023.
 */
Datum
inventory_relay_mark_failed(PG_FUNCTION_ARGS)
{
	Datum		values[7];
	text	   *error;
	int			len;
	bool		isnull;

	values[0] = CStringGetTextDatum(InventoryNameArg(fcinfo, 0, "relay",
													 NAME_WILDCARD));
	values[1] = IdsArg(fcinfo, 1, false, &isnull);
	InventoryRequireArg(fcinfo, 2, "error");
	error = PG_GETARG_TEXT_PP(2);
	len = pg_mbcharcliplen(VARDATA_ANY(error), VARSIZE_ANY_EXHDR(error),
						   INVENTORY_ERROR_MAX_CHARS);
	values[2] = PointerGetDatum(cstring_to_text_with_len(VARDATA_ANY(error), len));
	values[3] = Int32GetDatum(InventoryIntArg(fcinfo, 3, "max_attempts", 1, 1000));
	values[4] = TimestampTzGetDatum(InventoryNow());
	values[5] = IntervalPGetDatum(InventoryIntervalArg(fcinfo, 4, "backoff", "0",
													   false, "1 day"));
	values[6] = IntervalPGetDatum(InventoryIntervalArg(fcinfo, 5, "max_backoff",
													   "0", false, "7 days"));
	PG_RETURN_INT32(RunPlan(fcinfo, &mark_failed, values, NULL,
							SPI_OK_UPDATE));
}

/*
 * inventory_relay_release
 *		relay_release(relay text, ids bigint[]) RETURNS integer
 *
 * Gives back relay's leases on the unpublished events ids, without
 * counting an attempt, so that another relay can publish them at once (a
 * relay stopping cleanly).  Returns how many leases it gave back.
 * Errors: 22023.
 */
Datum
inventory_relay_release(PG_FUNCTION_ARGS)
{
	Datum		values[2];
	bool		isnull;

	values[0] = CStringGetTextDatum(InventoryNameArg(fcinfo, 0, "relay", NAME_WILDCARD));
	values[1] = IdsArg(fcinfo, 1, false, &isnull);
	PG_RETURN_INT32(RunPlan(fcinfo, &release_events, values, NULL,
							SPI_OK_UPDATE));
}

/*
 * DeadLetters
 *		The work of requeue_dead_letters and discard_dead_letters: runs stmt
 *		with values (the ids, or NULL) as the function owner and, when it
 *		changed any event, writes the audit row (0.5: action, the ids asked
 *		for, how many, the events, reason).  0.7 on: first takes the
 *		low-water lock until the transaction ends (so no advance runs
 *		before the change is seen), then lowers the mark to the lowest id
 *		changed: a requeued event is live again, and the events that waited
 *		behind a discarded one (which the mark may have passed) are above
 *		it.  Returns how many events.
 */
static int32
DeadLetters(FunctionCallInfo fcinfo, InventoryStatement *stmt, Datum *values,
			const char *nulls, const char *action, const char *counted,
			const char *reason)
{
	InventoryCall call;
	bool		isnull;
	int32		n;
	bool		low_water;
	LOCKTAG		tag;

	InventoryBeginCall(fcinfo, &call, NULL);
	low_water = HasLowWater();
	LowWaterLockTag(&tag);
	if (low_water)
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	InventoryRun(stmt, values, nulls, SPI_OK_SELECT);
	n = DatumGetInt32(InventoryResultDatum(0, 1, &isnull));
	if (n > 0)
	{
		char	   *audit = psprintf("{\"ids\": %s, \"%s\": %d, \"events\": %s}",
									 InventoryResultText(0, 3), counted, n,
									 InventoryResultText(0, 2));
		Datum		lowest = InventoryResultDatum(0, 4, &isnull);

		if (low_water && !isnull)
			InventoryRun(&low_water_lower, &lowest, NULL, SPI_OK_SELECT);
		InventoryAudit(&call, action, NULL, audit, reason);
	}
	else if (low_water)
	{
		/* nothing changed: nothing for an advance to wait for */
		LockRelease(&tag, ExclusiveLock, false);
	}
	InventoryEndCall(&call);
	return n;
}

/*
 * inventory_requeue_dead_letters
 *		requeue_dead_letters(ids bigint[] DEFAULT NULL,
 *							 reason text DEFAULT NULL) RETURNS integer
 *
 * Operator: makes the dead-lettered events ids (NULL: all of them) live
 * again with a fresh attempt count; relays publish them at the next poll.
 * 0.5: when it requeued any, writes an operator_audit row with the events
 * and reason (at most 1000 characters, or NULL); before 0.5 the SQL
 * function has no reason argument.  Returns how many it requeued.
 * Errors: 22023 (a NULL element, a reason too long).
 */
Datum
inventory_requeue_dead_letters(PG_FUNCTION_ARGS)
{
	char	   *reason = PG_NARGS() > 1 ?
		InventoryReasonArg(fcinfo, 1, "reason", false) : NULL;
	Datum		values[1];
	char		nulls[1] = {' '};
	bool		isnull;

	values[0] = IdsArg(fcinfo, 0, true, &isnull);
	if (isnull)
		nulls[0] = 'n';
	PG_RETURN_INT32(DeadLetters(fcinfo, &requeue_dead, values, nulls,
								"requeue_dead_letters", "requeued", reason));
}

/*
 * inventory_discard_dead_letters
 *		discard_dead_letters(ids bigint[], reason text) RETURNS integer
 *
 * Operator: deletes the dead-lettered events ids for good (later events of
 * the same reservations can then go out).  0.5: reason (1 to 1000
 * characters) is required, and an operator_audit row keeps the events
 * deleted (with their payloads) and the reason; before 0.5 the SQL
 * function has no reason argument.  Returns how many it deleted.
 * Errors: 22023 (ids or an element NULL, a reason NULL, empty or too
 * long).
 */
Datum
inventory_discard_dead_letters(PG_FUNCTION_ARGS)
{
	Datum		values[1];
	bool		isnull;
	char	   *reason;

	values[0] = IdsArg(fcinfo, 0, false, &isnull);
	reason = PG_NARGS() > 1 ?
		InventoryReasonArg(fcinfo, 1, "reason", true) : NULL;
	PG_RETURN_INT32(DeadLetters(fcinfo, &discard_dead, values, NULL,
								"discard_dead_letters", "discarded", reason));
}

/*
 * The outbox's rings (0.8).  OUTBOX_RINGS partitions, outbox_ring_0 to
 * outbox_ring_2, of which the sequence inventory.outbox_ring names the
 * current one.
 */
#define OUTBOX_RINGS 3

/* Whether the installed schema has the rings (0.8 on) */
static bool
HasRings(void)
{
	return OidIsValid(InventoryRelid("outbox_ring"));
}

/* the top transaction (MyProc->lxid) whose ring ring_value is */
static LocalTransactionId ring_lxid = InvalidLocalTransactionId;
static int16 ring_value = 0;

/* the current ring */
static InventoryStatement ring_current = {
	"read the outbox's current ring",
	"SELECT r.last_value::int4 FROM inventory.outbox_ring r",
	0, {InvalidOid}
};

/*
 * Of ring $1: whether it holds any event, and the latest and the earliest
 * publication of its events (NULL: none published).  Each a probe of an
 * index of the one partition (runtime pruning on $1).
 */
static InventoryStatement ring_state = {
	"read an outbox ring's state",
	"SELECT EXISTS (SELECT 1 FROM inventory.outbox o WHERE o.ring = $1), "
	"(SELECT max(o.published_at) FROM inventory.outbox o "
	"WHERE o.ring = $1 AND o.published_at IS NOT NULL), "
	"(SELECT min(o.published_at) FROM inventory.outbox o "
	"WHERE o.ring = $1 AND o.published_at IS NOT NULL)",
	1, {INT2OID}, NULL, true
};

/* how many published events ring $1 holds */
static InventoryStatement ring_published = {
	"count an outbox ring's published events",
	"SELECT count(*)::int8 FROM inventory.outbox o "
	"WHERE o.ring = $1 AND o.published_at IS NOT NULL",
	1, {INT2OID}, NULL, true
};

/*
 * how many live unpublished events ring $1 holds, counted up to $2 (dead
 * letters are not counted: they wait for an operator, not for a relay, and
 * a ring that waited for them would never be emptied)
 */
static InventoryStatement ring_unpublished = {
	"count an outbox ring's unpublished events",
	"SELECT count(*)::int8 FROM (SELECT 1 FROM inventory.outbox o "
	"WHERE o.ring = $1 AND o.published_at IS NULL AND o.dead_at IS NULL LIMIT $2) l",
	2, {INT2OID, INT8OID}, NULL, true
};

/*
 * moves the live unpublished events of ring $1 into ring $2, as they are
 * (the same ids, leases and attempts), firing no trigger (without_triggers):
 * the moved rows are the same events, whose foreign key to their
 * reservation was checked when they were written (nobody can delete that
 * reservation meanwhile: its events are in the locked ring); the check on
 * the re-inserted row would take FOR KEY SHARE on the reservation and
 * wait, with the ring locked and every relay's claim waiting behind it,
 * for any transaction that holds the reservation FOR UPDATE (a confirm or
 * a cancel still open), and could deadlock with it
 */
static InventoryStatement ring_move = {
	"move an outbox ring's unpublished events",
	"UPDATE inventory.outbox o SET ring = $2 "
	"WHERE o.ring = $1 AND o.published_at IS NULL AND o.dead_at IS NULL",
	2, {INT2OID, INT2OID}, NULL, true, true
};

/*
 * the same for its dead letters: two statements, each of whose conditions
 * is the predicate of a partial index (outbox_unpublished, outbox_dead),
 * so each reads that small index, not the whole ring (with "published_at
 * IS NULL" alone the plan scanned an index of every row of the ring, dead
 * row versions included, while the ring was locked)
 */
static InventoryStatement ring_move_dead = {
	"move an outbox ring's dead letters",
	"UPDATE inventory.outbox o SET ring = $2 "
	"WHERE o.ring = $1 AND o.dead_at IS NOT NULL",
	2, {INT2OID, INT2OID}, NULL, true, true
};

/* makes ring $1 current */
static InventoryStatement ring_set = {
	"move the outbox's current ring",
	"SELECT pg_catalog.setval('inventory.outbox_ring', $1, true)",
	1, {INT8OID}
};

/* the partition of ring r (0.8); errors: XX000 when it is missing */
static Oid
RingPartition(int ring)
{
	char		name[NAMEDATALEN];
	Oid			rel;

	snprintf(name, sizeof(name), "outbox_ring_%d", ring);
	rel = InventoryRelid(name);
	if (!OidIsValid(rel))
		elog(ERROR, "pg_inventory: the outbox's partition inventory.%s is missing",
			 name);
	return rel;
}

/*
 * InventoryLockWithoutQueue
 *		Takes relation rel (a ring's partition) exclusively without
 *		queueing for it: tries up to RING_LOCK_TRIES times, 1 ms apart,
 *		since the relays' claims and marks lock every outbox ring for a few
 *		milliseconds each and a single try on a busy table mostly fails.
 *		Never waits in the lock queue, so no call ever waits behind the
 *		purge's request.  Returns whether it holds the lock.
 */
#define RING_LOCK_TRIES 20

static bool
InventoryLockWithoutQueue(Oid rel)
{
	int			i;

	for (i = 0; i < RING_LOCK_TRIES; i++)
	{
		if (ConditionalLockRelationOid(rel, AccessExclusiveLock))
			return true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return false;
}

/*
 * TruncateRing
 *		Empties ring (not the current one, cur): takes its partition
 *		exclusively without queueing (InventoryLockWithoutQueue: a transaction
 *		that writes to it, or reads the outbox, holds a lock on it),
 *		checks again that none of its events was published at or after
 *		cutoff, moves its unpublished events into ring cur and truncates
 *		it.  Returns how many published
 *		events it removed, counted just before the partition was locked, or
 *		-1 with nothing done: the ring is held, an event was published
 *		since, or it holds more than max_moved live unpublished events (a
 *		relay far behind: moving them would hold the relays' claims for as
 *		long; the ring waits until they are published); both checked again
 *		under the lock.  Dead letters are moved whatever their number.
 *
 * Why nothing can be lost: a writer holds its lock on the partition from
 * its insert to its commit, so once the lock is ours every event in the
 * ring has committed or rolled back, and the move, which runs on a
 * snapshot taken after the lock (READ COMMITTED: the caller checks),
 * sees every committed one.
 */
static int64
TruncateRing(int ring, int cur, TimestampTz cutoff, int32 max_moved)
{
	Oid			rel = RingPartition(ring);
	Datum		values[2];
	Datum		last;
	bool		none_published;
	bool		busy;
	int64		published;
	char	   *sql;

	values[0] = Int16GetDatum((int16) ring);
	values[1] = Int64GetDatum((int64) max_moved + 1);
	InventoryRun(&ring_unpublished, values, NULL, SPI_OK_SELECT);
	if (InventoryResultInt64(0, 1) > max_moved)
		return -1;
	InventoryRun(&ring_published, values, NULL, SPI_OK_SELECT);
	published = InventoryResultInt64(0, 1);
	if (!InventoryLockWithoutQueue(rel))
		return -1;
	/*
	 * again under the lock: a relay may have published one of its events
	 * since the first look, and a writer may have committed many
	 */
	InventoryRun(&ring_state, values, NULL, SPI_OK_SELECT);
	last = InventoryResultDatum(0, 2, &none_published);
	busy = !none_published && DatumGetTimestampTz(last) >= cutoff;
	if (!busy)
	{
		InventoryRun(&ring_unpublished, values, NULL, SPI_OK_SELECT);
		busy = InventoryResultInt64(0, 1) > max_moved;
	}
	if (busy)
	{
		UnlockRelationOid(rel, AccessExclusiveLock);
		return -1;
	}
	values[1] = Int16GetDatum((int16) cur);
	InventoryRun(&ring_move, values, NULL, SPI_OK_UPDATE);
	InventoryRun(&ring_move_dead, values, NULL, SPI_OK_UPDATE);
	sql = psprintf("TRUNCATE inventory.outbox_ring_%d", ring);
	if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "pg_inventory: could not truncate inventory.outbox_ring_%d",
			 ring);
	pfree(sql);
	return published;
}

/* What purge_published on the rings works with */
typedef struct OutboxPurge
{
	TimestampTz cutoff;			/* published before it: due */
	TimestampTz half_cutoff;	/* the current ring published before it: aged */
	int32		max_moved;
} OutboxPurge;

/*
 * ops->due of the outbox's rings: no event published within the
 * retention; a ring of unpublished events only is due only when it is the
 * next one (which must be empty to become current)
 */
static bool
OutboxRingDue(int ring, int next, bool *has_rows, void *arg)
{
	OutboxPurge *o = (OutboxPurge *) arg;
	Datum		value = Int16GetDatum((int16) ring);
	Datum		last;
	bool		isnull;
	bool		none_published;

	InventoryRun(&ring_state, &value, NULL, SPI_OK_SELECT);
	*has_rows = DatumGetBool(InventoryResultDatum(0, 1, &isnull));
	last = InventoryResultDatum(0, 2, &none_published);
	if (!*has_rows)
		return false;
	if (none_published)
		return ring == next;
	return DatumGetTimestampTz(last) < o->cutoff;
}

/* ops->empty of the outbox's rings */
static int64
OutboxRingEmpty(int ring, int cur, void *arg)
{
	OutboxPurge *o = (OutboxPurge *) arg;

	return TruncateRing(ring, cur, o->cutoff, o->max_moved);
}

/* ops->aged of the outbox's rings: an event published before half_cutoff */
static bool
OutboxRingAged(int cur, void *arg)
{
	OutboxPurge *o = (OutboxPurge *) arg;
	Datum		value = Int16GetDatum((int16) cur);
	Datum		first;
	bool		isnull;

	InventoryRun(&ring_state, &value, NULL, SPI_OK_SELECT);
	first = InventoryResultDatum(0, 3, &isnull);
	return !isnull && DatumGetTimestampTz(first) < o->half_cutoff;
}

/*
 * purge_published on the rings (0.8), InventoryPurgeRings with these ops:
 * removes, by truncating its partition, every ring but the current one
 * that holds events none of which was published after cutoff (its
 * unpublished events and dead letters move into the current ring first),
 * then makes the next ring current when it is empty and the current ring
 * holds an event published before half_cutoff; twice, so that a retention
 * of 0 also empties the ring that was current.  A ring with more than
 * max_moved live unpublished events is not emptied (TruncateRing).  A ring
 * another transaction holds is left for the next call; while another purge
 * holds the ring-purge lock (advisory, objsubid 20555, to its
 * transaction's end), it does nothing.
 */
static const InventoryRingOps outbox_rings = {
	OUTBOX_RINGS, INVENTORY_LOCK_RING_PURGE, &ring_current, &ring_set,
	OutboxRingDue, OutboxRingEmpty, OutboxRingAged
};

/*
 * inventory_purge_published
 *		purge_published(older_than interval DEFAULT '7 days',
 *						max_rows integer DEFAULT 10000) RETURNS integer
 *
 * Retention: removes events published more than older_than (at least 0,
 * at most 10 years) ago.  Dead letters and unpublished events are never
 * removed.  The expiry worker calls it with pg_inventory.outbox_retention.
 * On a schema with the outbox's rings (0.8 on), published events leave a
 * ring at a time (InventoryPurgeRings with outbox_rings: truncated, never deleted row by row), once
 * none of the ring's events was published within older_than; max_rows
 * (1 to 1000000) bounds the live unpublished events a ring may hold to be
 * emptied, since they are moved row by row into the current ring while
 * the ring is locked (dead letters move whatever their number); it must
 * run at READ COMMITTED (a ring is emptied only after moving every
 * unpublished event committed before its lock was taken, which an older
 * snapshot would not see).  Before
 * 0.8: deletes at most max_rows events, oldest first.  Returns how many it
 * removed (at most 2147483647 counted).  Errors: 22023; 25001 (0.8 on)
 * in a REPEATABLE READ or SERIALIZABLE transaction.
 */
Datum
inventory_purge_published(PG_FUNCTION_ARGS)
{
	Datum		values[3];
	Interval   *older_than;
	InventoryCall call;
	int64		n;

	values[0] = TimestampTzGetDatum(InventoryNow());
	older_than = InventoryIntervalArg(fcinfo, 0, "older_than", "0", true,
									  "10 years");
	values[1] = IntervalPGetDatum(older_than);
	values[2] = Int32GetDatum(InventoryIntArg(fcinfo, 1, "max_rows", 1, 1000000));

	InventoryBeginCall(fcinfo, &call, NULL);
	if (HasRings())
	{
		Interval   *half;
		OutboxPurge o;

		if (IsolationUsesXactSnapshot())
			ereport(ERROR,
					(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
					 errmsg("purge_published must run at READ COMMITTED"),
					 errdetail("It empties a ring of the outbox after moving the ring's unpublished events, which a transaction snapshot older than its lock on the ring would not all see."),
					 errhint("Call it in a transaction of its own at the default isolation level, as the expiry worker does.")));
		half = DatumGetIntervalP(DirectFunctionCall2(interval_div,
													 IntervalPGetDatum(older_than),
													 Float8GetDatum(2.0)));
		o.cutoff = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														   values[0], values[1]));
		o.half_cutoff = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
																values[0],
																IntervalPGetDatum(half)));
		o.max_moved = DatumGetInt32(values[2]);
		n = InventoryPurgeRings(&outbox_rings, &o);
	}
	else
		n = (int64) InventoryRun(&purge_events, values, NULL, SPI_OK_DELETE);
	InventoryEndCall(&call);
	PG_RETURN_INT32((int32) Min(n, (int64) PG_INT32_MAX));
}

/*
 * inventory_outbox_ring
 *		_outbox_ring(sequence regclass) RETURNS smallint: the default of
 *		outbox.ring (0.8), called with inventory.outbox_ring
 *
 * The current ring (the sequence's last value; 0 when it was never set),
 * read at the first event of a top transaction and kept for its later
 * events: any ring is safe to write to, since purge_published empties a
 * ring only when it holds the partition exclusively, after every writer
 * of it ended, and moves its unpublished events first.  Runs as the
 * caller of the INSERT (the extension's owner inside its functions) and
 * needs SELECT or USAGE on the sequence.  Errors: 42501 without it.
 */
Datum
inventory_outbox_ring(PG_FUNCTION_ARGS)
{
	if (ring_lxid != MyProc->lxid)
	{
		bool		isnull;
		int64		ring = InventorySequenceLastValue(PG_GETARG_OID(0), &isnull);

		ring_value = (int16) ((ring >= 0 && ring < OUTBOX_RINGS) ? ring : 0);
		ring_lxid = MyProc->lxid;
	}
	PG_RETURN_INT16(ring_value);
}

/*
 * inventory_next_event_id
 *		_next_event_id(sequence regclass) RETURNS bigint: the default of
 *		outbox.id (0.7), called with inventory.outbox_id_seq (a constant of
 *		the default: no catalog lookup per row)
 *
 * The next value of sequence.  At the first call of a top
 * transaction it first reads the last id drawn from the sequence (its
 * marker; 0 when none was) and takes a share lock on it
 * (INVENTORY_LOCK_EVENT_MARKER) that the top transaction holds until it
 * ends, whatever its subtransactions do; a prepared transaction keeps it
 * until COMMIT/ROLLBACK PREPARED.  Every id the transaction then draws is
 * above its marker, and the marker is in pg_locks before the first id is
 * drawn: advance_outbox_low_water, which
 * reads the last id drawn and then pg_locks, can tell which ids may still
 * commit (README "Long transactions and the outbox").  Runs as the
 * caller of the INSERT (the extension's owner inside its functions) and
 * needs USAGE or UPDATE on the sequence, as nextval does.
 * Errors: those of nextval.
 */
Datum
inventory_next_event_id(PG_FUNCTION_ARGS)
{
	Oid			seq = PG_GETARG_OID(0);

	if (marker_lxid != MyProc->lxid)
	{
		bool		isnull;
		int64		marker;
		ResourceOwner save = CurrentResourceOwner;
		LOCKTAG		tag;

		/* the last id drawn (0: none yet), not a new one: ids stay dense */
		marker = InventorySequenceLastValue(seq, &isnull);

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (marker >> 32),
							 (uint32) marker, INVENTORY_LOCK_EVENT_MARKER);
		/* held by the top transaction: a subtransaction's abort keeps it */
		CurrentResourceOwner = TopTransactionResourceOwner;
		PG_TRY();
		{
			(void) LockAcquire(&tag, ShareLock, false, false);
		}
		PG_FINALLY();
		{
			CurrentResourceOwner = save;
		}
		PG_END_TRY();
		marker_lxid = MyProc->lxid;
	}
	PG_RETURN_INT64(nextval_internal(seq, true));
}

/*
 * inventory_advance_outbox_low_water
 *		advance_outbox_low_water(from_start boolean DEFAULT false)
 *		RETURNS bigint
 *
 * Sets the low-water mark (0.7; sequence inventory.outbox_low_water) to
 * the lowest of: the first live unpublished event at or above the mark
 * (from_start: above 0) that does not wait behind a dead letter of its
 * reservation, the lowest marker a running or prepared transaction holds
 * (_next_event_id), and the last id drawn plus one.
 * Order matters: the last id drawn is read first, then pg_locks, then the
 * outbox on the latest committed data.  An id at or below the last id
 * drawn was drawn after its transaction's marker was in pg_locks; so a
 * transaction still running holds a marker below all its ids, or drew
 * them after the read; either way the mark stays at or below them, and
 * every event below the mark has committed and is published,
 * dead-lettered or waits behind a dead letter (requeue_dead_letters and
 * discard_dead_letters lower the mark when they free it).  Takes the
 * low-water lock without waiting: when a requeue_dead_letters, a
 * discard_dead_letters or another advance holds it, changes nothing.
 * Never raises the mark in a transaction that has written anything
 * before the call (its own uncommitted changes are in the latest
 * snapshot, and a rollback would undo them, not the non-transactional
 * mark), nor when outbox_id_seq has CACHE above 1 or a falling INCREMENT
 * (a backend may then hold ids below the last one drawn: WARNING 55000);
 * a sequence that went back (RESTART, setval) makes it look from the
 * start, and a writer whose marker is above the last id drawn (it began
 * before the sequence went back) holds the mark at 1 until it ends.
 * Returns the mark.  Errors: none of its own (WARNING 55000).
 */
Datum
inventory_advance_outbox_low_water(PG_FUNCTION_ARGS)
{
	bool		from_start = !PG_ARGISNULL(0) && PG_GETARG_BOOL(0);
	/* a transaction that wrote anything sees its own uncommitted changes */
	bool		wrote = TransactionIdIsValid(GetTopTransactionIdIfAny());
	InventoryCall call;
	LOCKTAG		tag;
	int64		head;
	int64		mark;
	int64		target;
	Datum		arg;
	bool		isnull;
	bool		sequence_ok;
	bool		locked;

	InventoryBeginCall(fcinfo, &call, NULL);
	LowWaterLockTag(&tag);
	locked = LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
	/* read once the lock is held: no requeue or discard runs */
	InventoryRun(&low_water_head, NULL, NULL, SPI_OK_SELECT);
	mark = InventoryResultInt64(0, 2);
	if (locked)
	{
		head = InventoryResultInt64(0, 1);
		sequence_ok = DatumGetBool(InventoryResultDatum(0, 3, &isnull)) && !isnull;
		target = head + 1;
		/* the id sequence went back (RESTART, setval): look from the start */
		if (target < mark)
			from_start = true;

		arg = ObjectIdGetDatum(MyDatabaseId);
		InventoryRun(&low_water_writers, &arg, NULL, SPI_OK_SELECT);
		arg = InventoryResultDatum(0, 1, &isnull);
		if (!isnull && DatumGetInt64(arg) < target)
			target = DatumGetInt64(arg);
		/*
		 * a marker above the last id drawn: the sequence went back while
		 * that writer ran, and it may still draw ids anywhere below its
		 * marker: the mark goes to 1 until it ends
		 */
		arg = InventoryResultDatum(0, 2, &isnull);
		if (!isnull && DatumGetInt64(arg) > head)
			target = 1;

		/*
		 * the rings (0.8) locked before the latest snapshot is taken: a
		 * purge_published that holds one (moving its unpublished events
		 * into the current ring, then truncating it) has committed by then,
		 * so the read sees the moved events; a snapshot taken before the
		 * statement waited for that lock would see neither the truncated
		 * ring's events nor their moved copies, and could pass them
		 */
		if (HasRings())
		{
			int			ring;

			for (ring = 0; ring < OUTBOX_RINGS; ring++)
				LockRelationOid(RingPartition(ring), AccessShareLock);
		}
		arg = Int64GetDatum(from_start ? 1 : mark);
		InventoryRunLatest(&low_water_first, &arg, NULL);
		arg = InventoryResultDatum(0, 1, &isnull);
		if (!isnull && DatumGetInt64(arg) < target)
			target = DatumGetInt64(arg);

		if (target < 1)
			target = 1;
		if (target > mark && !sequence_ok)
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the outbox's low-water mark stays at %lld: inventory.outbox_id_seq does not hand out ids one at a time in rising order",
							(long long) mark),
					 errdetail("A sequence with CACHE above 1 (or a falling INCREMENT) lets a transaction hold ids below the last one drawn, which the mark could pass."),
					 errhint("ALTER SEQUENCE inventory.outbox_id_seq CACHE 1 INCREMENT 1;")));
		else if (target > mark && wrote)
		{
			/*
			 * the caller's own uncommitted changes (a mark, a failure) are in
			 * what we read; a rollback would leave the mark above events
			 * that are unpublished again: only a committed view may raise it
			 */
		}
		else if (target != mark)
		{
			arg = Int64GetDatum(target);
			InventoryRun(&low_water_set, &arg, NULL, SPI_OK_SELECT);
			mark = target;
		}
		/* an advance writes no row: nothing to keep the lock for */
		LockRelease(&tag, ExclusiveLock, false);
	}
	InventoryEndCall(&call);
	PG_RETURN_INT64(mark);
}
