/*-------------------------------------------------------------------------
 *
 * src/plans.c
 *		Every SQL statement pg_inventory runs, and the saved plans for them.
 *
 * Each statement is prepared on first use in a backend and kept with
 * SPI_keepplan, so a call plans nothing.  The functions run with
 * search_path pinned to pg_catalog, pg_temp (see the install script), and
 * every object of the extension is written schema-qualified.
 *
 * Lock order (see pg_inventory.h): statements that lock stock rows do so in
 * (tenant, sku) order, through an ORDER BY ... FOR UPDATE before they update
 * them; identifier columns use the "C" collation so this is byte order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"

#include "plans.h"

#define MAX_PLAN_ARGS 10

typedef struct InventoryPlanDef
{
	const char *sql;
	int			nargs;
	Oid			argtypes[MAX_PLAN_ARGS];
} InventoryPlanDef;

/*
 * The outbox payload of a reservation event, built from a relation "r"
 * with columns id, tenant, request_key, state, version, expires_at, the
 * event id e.event_id, the event type $T and the clock $N.  Kept as a macro
 * so that every reservation event has the same shape.
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

/*
 * The end of a receipt or adjustment statement whose CTE "g" inserted the
 * ledger record (returning available_after): the stock event and the
 * result.  $1 tenant, $2 sku, $3 key, $4 kind, $5 delta, $6 reason; now is
 * the clock parameter.
 */
#define STOCK_EVENT(now) \
	"e AS (SELECT gen_random_uuid() AS event_id), " \
	"o AS (INSERT INTO inventory.outbox " \
	"(event_id, event_type, tenant, reservation_id, payload, created_at) " \
	"SELECT e.event_id, " \
	"CASE WHEN $4 = 'receipt' THEN 'stock.restocked' ELSE 'stock.adjusted' END, " \
	"$1, NULL, jsonb_build_object('event_id', e.event_id, 'event_type', " \
	"CASE WHEN $4 = 'receipt' THEN 'stock.restocked' ELSE 'stock.adjusted' END, " \
	"'tenant', $1, 'sku', $2, 'request_key', $3, 'kind', $4, 'delta', $5, " \
	"'available', g.available_after, 'reason', $6, " \
	"'occurred_at', to_char(" now " AT TIME ZONE 'UTC', " \
	"'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')), " now " FROM g, e) " \
	"SELECT g.available_after FROM g"

/* the lines of reservation r.id as a JSON array, by sku */
#define STORED_LINES_JSON \
	"(SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity) " \
	"ORDER BY l.sku) FROM inventory.reservation_line l WHERE l.reservation_id = r.id)"

/* the fetched columns of a reservation with its lines as two arrays */
#define RESERVATION_COLUMNS \
	"SELECT r.id, r.state, r.expires_at, r.version, " \
	"ARRAY(SELECT l.sku::text FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id ORDER BY l.sku), " \
	"ARRAY(SELECT l.quantity FROM inventory.reservation_line l " \
	"WHERE l.reservation_id = r.id ORDER BY l.sku) " \
	"FROM inventory.reservation r WHERE r.tenant = $1 AND r.request_key = $2"

static const InventoryPlanDef plan_defs[PLAN_COUNT] = {
	/* PLAN_AUTH_TENANT: $1 tenant, $2 role in effect */
	[PLAN_AUTH_TENANT] = {
		"SELECT 1 FROM inventory.tenant_member m "
		"WHERE m.tenant IN ($1, '*') "
		"AND pg_has_role($2, m.member::oid, 'USAGE') LIMIT 1",
		2, {TEXTOID, OIDOID}
	},

	/*
	 * PLAN_RES_CLAIM: claims the request key by inserting the reservation
	 * first, before any stock row is locked; a concurrent call with the same
	 * key waits here and then sees the winner's row.  $1 tenant, $2 key,
	 * $3 expires_at, $4 clock.
	 */
	[PLAN_RES_CLAIM] = {
		"INSERT INTO inventory.reservation AS r "
		"(tenant, request_key, state, expires_at, version, created_at, updated_at) "
		"VALUES ($1, $2, 'pending', $3, 1, $4, $4) "
		"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING r.id",
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID}
	},

	/* PLAN_RES_FETCH: $1 tenant, $2 key */
	[PLAN_RES_FETCH] = {
		RESERVATION_COLUMNS,
		2, {TEXTOID, TEXTOID}
	},

	/* PLAN_RES_FETCH_LOCK: the same, locking the reservation row */
	[PLAN_RES_FETCH_LOCK] = {
		RESERVATION_COLUMNS " FOR UPDATE OF r",
		2, {TEXTOID, TEXTOID}
	},

	/* PLAN_STOCK_LOCK: locks stock rows in sku order; $1 tenant, $2 skus */
	[PLAN_STOCK_LOCK] = {
		"SELECT s.sku::text, s.available FROM inventory.stock s "
		"WHERE s.tenant = $1 AND s.sku = ANY ($2) "
		"ORDER BY s.sku FOR UPDATE",
		2, {TEXTOID, TEXTARRAYOID}
	},

	/*
	 * PLAN_STOCK_MOVE: moves units between the counters of several SKUs:
	 * each counter changes by its factor ($4 available, $5 reserved, $6
	 * consumed: -1, 0 or 1) times the line's quantity.  The CTE takes the
	 * row locks in sku order before the update touches a row.  $1 tenant,
	 * $2 skus, $3 quantities, $7 clock.
	 */
	[PLAN_STOCK_MOVE] = {
		"WITH locked AS (SELECT s.sku FROM inventory.stock s "
		"WHERE s.tenant = $1 AND s.sku = ANY ($2) ORDER BY s.sku FOR UPDATE) "
		"UPDATE inventory.stock s SET "
		"available = s.available + $4 * m.qty, "
		"reserved = s.reserved + $5 * m.qty, "
		"consumed = s.consumed + $6 * m.qty, "
		"updated_at = $7 "
		"FROM locked JOIN unnest($2, $3) AS m(sku, qty) ON m.sku = locked.sku "
		"WHERE s.tenant = $1 AND s.sku = locked.sku",
		7, {TEXTOID, TEXTARRAYOID, INT8ARRAYOID, INT8OID, INT8OID, INT8OID,
		TIMESTAMPTZOID}
	},

	/*
	 * PLAN_RES_CREATED: the records of a new pending reservation: its
	 * lines, the transition NULL -> pending and the reservation.reserved
	 * event.  $1 id, $2 skus, $3 quantities, $4 actor, $5 clock, $6 tenant,
	 * $7 key, $8 expires_at (the values the claim inserted: not read again).
	 */
	[PLAN_RES_CREATED] = {
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
		8, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
		TEXTOID, TIMESTAMPTZOID}
	},

	/*
	 * PLAN_RES_REJECTED: the stored insufficient outcome: state rejected,
	 * the requested lines and the transition NULL -> rejected (no event:
	 * nothing moved).  $1 id, $2 skus, $3 quantities, $4 actor, $5 clock.
	 */
	[PLAN_RES_REJECTED] = {
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
		5, {INT8OID, TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID}
	},

	/*
	 * PLAN_RES_TRANSITION: one guarded state change of a locked
	 * reservation, its log row and its event (reservation.<to_state>).  The
	 * WHERE clause repeats the expected old state and version, so a caller
	 * that got either wrong changes nothing (row count 0).  $1 id, $2 from,
	 * $3 to, $4 reason, $5 actor, $6 clock, $7 version read.
	 */
	[PLAN_RES_TRANSITION] = {
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
		7, {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, INT4OID}
	},

	/*
	 * PLAN_EXPIRE_CLAIM: expires up to $2 due pending reservations, oldest
	 * first.  SKIP LOCKED: never waits on a reservation another transaction
	 * holds; a row changed since the snapshot is re-checked after it is
	 * locked, so a stale observation is never acted on.  Writes the log
	 * rows and events and returns the ids.  $1 clock, $2 limit, $3 actor.
	 */
	[PLAN_EXPIRE_CLAIM] = {
		"WITH due AS (SELECT d.id FROM inventory.reservation d "
		"WHERE d.state = 'pending' AND d.expires_at <= $1 "
		"ORDER BY d.expires_at, d.id LIMIT $2 FOR UPDATE SKIP LOCKED), "
		"r AS (UPDATE inventory.reservation r SET state = 'expired', "
		"version = r.version + 1, updated_at = $1 FROM due "
		"WHERE r.id = due.id AND r.state = 'pending' "
		"RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at), "
		"t AS (INSERT INTO inventory.reservation_transition "
		"(reservation_id, from_state, to_state, reason, actor, version, created_at) "
		"SELECT r.id, 'pending', r.state, 'expires_at reached', $3, r.version, $1 FROM r), "
		"o AS (INSERT INTO inventory.outbox "
		"(event_id, event_type, tenant, reservation_id, payload, created_at) "
		"SELECT e.event_id, 'reservation.expired', r.tenant, r.id, "
		RESERVATION_EVENT("'reservation.expired'", "$1", STORED_LINES_JSON)
		", $1 FROM r, LATERAL (SELECT gen_random_uuid() AS event_id, r.id AS rid) e) "
		"SELECT r.id FROM r ORDER BY r.id",
		3, {TIMESTAMPTZOID, INT4OID, TEXTOID}
	},

	/*
	 * PLAN_EXPIRE_RELEASE: returns the units of the expired reservations
	 * $1 to available, locking the stock rows in (tenant, sku) order.
	 * $2 clock.
	 */
	[PLAN_EXPIRE_RELEASE] = {
		"WITH agg AS (SELECT l.tenant, l.sku, sum(l.quantity)::bigint AS qty "
		"FROM inventory.reservation_line l WHERE l.reservation_id = ANY ($1) "
		"GROUP BY l.tenant, l.sku), "
		"locked AS (SELECT s.tenant, s.sku FROM inventory.stock s "
		"JOIN agg ON agg.tenant = s.tenant AND agg.sku = s.sku "
		"ORDER BY s.tenant, s.sku FOR UPDATE OF s) "
		"UPDATE inventory.stock s SET available = s.available + agg.qty, "
		"reserved = s.reserved - agg.qty, updated_at = $2 "
		"FROM locked JOIN agg ON agg.tenant = locked.tenant AND agg.sku = locked.sku "
		"WHERE s.tenant = locked.tenant AND s.sku = locked.sku",
		2, {INT8ARRAYOID, TIMESTAMPTZOID}
	},

	/* PLAN_STOCK_ENSURE: creates the tenant's SKU; $1 tenant, $2 sku, $3 clock */
	[PLAN_STOCK_ENSURE] = {
		"INSERT INTO inventory.stock (tenant, sku, created_at, updated_at) "
		"VALUES ($1, $2, $3, $3) ON CONFLICT (tenant, sku) DO NOTHING",
		3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}
	},

	/* PLAN_STOCK_LOCK_ONE: $1 tenant, $2 sku */
	[PLAN_STOCK_LOCK_ONE] = {
		"SELECT s.available, s.reserved, s.consumed FROM inventory.stock s "
		"WHERE s.tenant = $1 AND s.sku = $2 FOR UPDATE",
		2, {TEXTOID, TEXTOID}
	},

	/* PLAN_LEDGER_FETCH: $1 tenant, $2 key */
	[PLAN_LEDGER_FETCH] = {
		"SELECT g.sku::text, g.kind, g.delta, g.available_after "
		"FROM inventory.stock_ledger g WHERE g.tenant = $1 AND g.request_key = $2",
		2, {TEXTOID, TEXTOID}
	},

	/*
	 * PLAN_LEDGER_APPLY: one receipt or adjustment of a locked stock row:
	 * the counter, the ledger record with the count after it, and the
	 * event.  No row returned means the key was taken meanwhile (by a call
	 * for another SKU, as this one holds the row lock): the caller raises
	 * IN001, which undoes the update.  $1 tenant, $2 sku, $3 key, $4 kind,
	 * $5 delta, $6 reason, $7 actor, $8 clock.
	 */
	[PLAN_LEDGER_APPLY] = {
		"WITH s AS (UPDATE inventory.stock s SET available = s.available + $5, "
		"updated_at = $8 WHERE s.tenant = $1 AND s.sku = $2 RETURNING s.available), "
		"g AS (INSERT INTO inventory.stock_ledger (tenant, sku, request_key, kind, "
		"delta, reason, available_after, actor, created_at) "
		"SELECT $1, $2, $3, $4, $5, $6, s.available, $7, $8 FROM s "
		"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING available_after), "
		STOCK_EVENT("$8"),
		8, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID,
		TIMESTAMPTZOID}
	},

	/*
	 * PLAN_CHECK_INVARIANTS: every broken invariant, read in one snapshot.
	 */
	[PLAN_CHECK_INVARIANTS] = {
		"WITH led AS (SELECT g.tenant, g.sku, sum(g.delta) AS net "
		"FROM inventory.stock_ledger g GROUP BY g.tenant, g.sku), "
		"held AS (SELECT l.tenant, l.sku, "
		"sum(l.quantity) FILTER (WHERE r.state = 'pending') AS pending, "
		"sum(l.quantity) FILTER (WHERE r.state = 'confirmed') AS confirmed "
		"FROM inventory.reservation_line l "
		"JOIN inventory.reservation r ON r.id = l.reservation_id "
		"WHERE r.state IN ('pending', 'confirmed') GROUP BY l.tenant, l.sku), "
		"c AS (SELECT s.tenant::text AS tenant, s.sku::text AS sku, s.available, "
		"s.reserved, s.consumed, COALESCE(led.net, 0) AS net, "
		"COALESCE(held.pending, 0) AS pending, COALESCE(held.confirmed, 0) AS confirmed "
		"FROM inventory.stock s "
		"LEFT JOIN led ON led.tenant = s.tenant AND led.sku = s.sku "
		"LEFT JOIN held ON held.tenant = s.tenant AND held.sku = s.sku), "
		"logs AS (SELECT r.tenant::text AS tenant, r.id, r.request_key, r.version, "
		"(SELECT count(*) FROM inventory.reservation_transition t "
		"WHERE t.reservation_id = r.id) AS n "
		"FROM inventory.reservation r) "
		"SELECT c.tenant, c.sku, 'counts_match_ledger'::text, "
		"format('available %s + reserved %s + consumed %s = %s, but the ledger nets %s', "
		"c.available, c.reserved, c.consumed, c.available + c.reserved + c.consumed, c.net) "
		"FROM c WHERE c.available + c.reserved + c.consumed <> c.net "
		"UNION ALL "
		"SELECT c.tenant, c.sku, 'counts_nonnegative', "
		"format('available %s, reserved %s, consumed %s', c.available, c.reserved, c.consumed) "
		"FROM c WHERE c.available < 0 OR c.reserved < 0 OR c.consumed < 0 "
		"UNION ALL "
		"SELECT c.tenant, c.sku, 'reserved_matches_pending', "
		"format('reserved is %s, but pending reservations hold %s', c.reserved, c.pending) "
		"FROM c WHERE c.reserved <> c.pending "
		"UNION ALL "
		"SELECT c.tenant, c.sku, 'consumed_matches_confirmed', "
		"format('consumed is %s, but confirmed reservations hold %s', c.consumed, c.confirmed) "
		"FROM c WHERE c.consumed <> c.confirmed "
		"UNION ALL "
		"SELECT logs.tenant, NULL, 'transition_log_matches_version', "
		"format('reservation %s (request key %s) is at version %s with %s transition rows', "
		"logs.id, logs.request_key, logs.version, logs.n) "
		"FROM logs WHERE logs.n <> logs.version "
		"ORDER BY 1, 2, 3, 4",
		0, {InvalidOid}
	},

	/* PLAN_GRANT_TENANT: $1 tenant, $2 role */
	[PLAN_GRANT_TENANT] = {
		"INSERT INTO inventory.tenant_member (tenant, member) VALUES ($1, $2) "
		"ON CONFLICT (tenant, member) DO NOTHING RETURNING 1",
		2, {TEXTOID, REGROLEOID}
	},

	/* PLAN_REVOKE_TENANT: $1 tenant, $2 role */
	[PLAN_REVOKE_TENANT] = {
		"DELETE FROM inventory.tenant_member m WHERE m.tenant = $1 "
		"AND m.member = $2 RETURNING 1",
		2, {TEXTOID, REGROLEOID}
	},

	/*
	 * PLAN_RELAY_CLAIM (0.2): leases up to $2 publishable events to relay
	 * $1 until $3 + $4: committed, unpublished, live, due for an attempt,
	 * not leased by a live claim, and the first unpublished event of their
	 * reservation (events of one reservation go out in order; a later one
	 * waits while an earlier one backs off or is dead-lettered).  SKIP
	 * LOCKED: relays never wait for each other.  $3 clock.
	 */
	[PLAN_RELAY_CLAIM] = {
		"WITH c AS (SELECT o.id FROM inventory.outbox o "
		"WHERE o.published_at IS NULL AND o.dead_at IS NULL "
		"AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= $3) "
		"AND (o.claimed_until IS NULL OR o.claimed_until <= $3) "
		"AND (o.reservation_id IS NULL OR NOT EXISTS (SELECT 1 FROM inventory.outbox p "
		"WHERE p.reservation_id = o.reservation_id AND p.id < o.id "
		"AND p.published_at IS NULL)) "
		"ORDER BY o.id LIMIT $2 FOR UPDATE SKIP LOCKED), "
		"u AS (UPDATE inventory.outbox o SET claimed_until = $3 + $4, claimed_by = $1 "
		"FROM c WHERE o.id = c.id "
		"RETURNING o.id, o.event_id, o.event_type, o.tenant::text, o.reservation_id, "
		"o.payload, o.attempts) "
		"SELECT * FROM u ORDER BY u.id",
		4, {TEXTOID, INT4OID, TIMESTAMPTZOID, INTERVALOID}
	},

	/* PLAN_RELAY_PUBLISHED (0.2): $1 ids, $2 clock */
	[PLAN_RELAY_PUBLISHED] = {
		"UPDATE inventory.outbox o SET published_at = $2, claimed_until = NULL "
		"WHERE o.id = ANY ($1) AND o.published_at IS NULL",
		2, {INT8ARRAYOID, TIMESTAMPTZOID}
	},

	/*
	 * PLAN_RELAY_FAILED (0.2): one failed attempt of each event $1 (error
	 * $2): the next attempt after $5 * 2^attempts (at most $6) with jitter
	 * (x 0.5 to 1), or, at the $3rd failure, dead-lettered.  $4 clock.
	 */
	[PLAN_RELAY_FAILED] = {
		"UPDATE inventory.outbox o SET attempts = o.attempts + 1, last_error = $2, "
		"claimed_until = NULL, "
		"next_attempt_at = CASE WHEN o.attempts + 1 >= $3 THEN NULL "
		"ELSE $4 + least($5 * power(2, o.attempts), $6) * (0.5 + random() / 2) END, "
		"dead_at = CASE WHEN o.attempts + 1 >= $3 THEN $4 END "
		"WHERE o.id = ANY ($1) AND o.published_at IS NULL AND o.dead_at IS NULL",
		6, {INT8ARRAYOID, TEXTOID, INT4OID, TIMESTAMPTZOID, INTERVALOID, INTERVALOID}
	},

	/* PLAN_RELAY_RELEASE (0.2): gives back the leases of relay $1 on $2 */
	[PLAN_RELAY_RELEASE] = {
		"UPDATE inventory.outbox o SET claimed_until = NULL "
		"WHERE o.id = ANY ($2) AND o.claimed_by = $1 AND o.published_at IS NULL "
		"AND o.claimed_until IS NOT NULL",
		2, {TEXTOID, INT8ARRAYOID}
	},

	/* PLAN_DEAD_REQUEUE (0.2): $1 ids, or NULL for every dead letter */
	[PLAN_DEAD_REQUEUE] = {
		"UPDATE inventory.outbox o SET dead_at = NULL, attempts = 0, "
		"next_attempt_at = NULL, claimed_until = NULL "
		"WHERE o.dead_at IS NOT NULL AND o.published_at IS NULL "
		"AND ($1 IS NULL OR o.id = ANY ($1))",
		1, {INT8ARRAYOID}
	},

	/* PLAN_DEAD_DISCARD (0.2): deletes the dead letters $1 */
	[PLAN_DEAD_DISCARD] = {
		"DELETE FROM inventory.outbox o WHERE o.dead_at IS NOT NULL "
		"AND o.published_at IS NULL AND o.id = ANY ($1)",
		1, {INT8ARRAYOID}
	},

	/*
	 * PLAN_OUTBOX_PURGE (0.2): deletes up to $3 events published before
	 * $1 - $2, oldest first, skipping rows a relay holds.
	 */
	[PLAN_OUTBOX_PURGE] = {
		"WITH p AS MATERIALIZED (SELECT p.id FROM inventory.outbox p "
		"WHERE p.published_at < $1 - $2 "
		"ORDER BY p.published_at LIMIT $3 FOR UPDATE SKIP LOCKED) "
		"DELETE FROM inventory.outbox o USING p WHERE o.id = p.id",
		3, {TIMESTAMPTZOID, INTERVALOID, INT4OID}
	},

	/*
	 * PLAN_SLOT_TAKE_ONE (0.3): the fast path of slotted stock.  Locks the
	 * first slot of (tenant $1, sku $2) whose counter $3 (0 available, 1
	 * reserved, 2 consumed) holds at least $4 units, skipping slots other
	 * transactions hold (so concurrent calls spread over the slots and never
	 * wait here), and changes its counters by $5, $6, $7 (units).  The CTE
 * runs once (a subquery in FROM could be rescanned per row and lock more
 * slots).  No row:
	 * no free slot holds enough; the caller falls back to PLAN_SLOT_LOCK_ALL.
	 * $8 clock.
	 */
	[PLAN_SLOT_TAKE_ONE] = {
		"WITH p AS MATERIALIZED (SELECT p.slot FROM inventory.stock_slot p "
		"WHERE p.tenant = $1 AND p.sku = $2 AND CASE $3 WHEN 0 THEN p.available "
		"WHEN 1 THEN p.reserved ELSE p.consumed END >= $4 "
		"ORDER BY p.slot LIMIT 1 FOR UPDATE SKIP LOCKED) "
		"UPDATE inventory.stock_slot s SET available = s.available + $5, "
		"reserved = s.reserved + $6, consumed = s.consumed + $7, updated_at = $8 "
		"FROM p WHERE s.tenant = $1 AND s.sku = $2 AND s.slot = p.slot "
		"RETURNING s.slot",
		8, {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID, INT8OID,
		TIMESTAMPTZOID}
	},

	/*
	 * PLAN_SLOT_LOCK_ALL (0.3): locks every slot of the SKUs ($1 tenants,
	 * $2 skus, pairwise) in (tenant, sku, slot) order and reads them.
	 */
	[PLAN_SLOT_LOCK_ALL] = {
		"SELECT s.tenant::text, s.sku::text, s.slot, s.available, s.reserved, "
		"s.consumed FROM inventory.stock_slot s "
		"JOIN unnest($1, $2) AS u(tenant, sku) ON s.tenant = u.tenant AND s.sku = u.sku "
		"ORDER BY s.tenant, s.sku, s.slot FOR UPDATE OF s",
		2, {TEXTARRAYOID, TEXTARRAYOID}
	},

	/*
	 * PLAN_SLOT_APPLY (0.3): changes the counters of slots the caller has
	 * locked: $1 tenants, $2 skus, $3 slots, $4/$5/$6 changes of available,
	 * reserved, consumed; $7 clock.
	 */
	[PLAN_SLOT_APPLY] = {
		"UPDATE inventory.stock_slot s SET available = s.available + d.da, "
		"reserved = s.reserved + d.dr, consumed = s.consumed + d.dc, updated_at = $7 "
		"FROM unnest($1, $2, $3, $4, $5, $6) AS d(tenant, sku, slot, da, dr, dc) "
		"WHERE s.tenant = d.tenant AND s.sku = d.sku AND s.slot = d.slot",
		7, {TEXTARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
		INT8ARRAYOID, TIMESTAMPTZOID}
	},

	/* PLAN_SLOT_INSERT (0.3): empty slots $3 .. $4 - 1 of ($1, $2); $5 clock */
	[PLAN_SLOT_INSERT] = {
		"INSERT INTO inventory.stock_slot (tenant, sku, slot, updated_at) "
		"SELECT $1, $2, g, $5 FROM generate_series($3, $4 - 1) AS g",
		5, {TEXTOID, TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID}
	},

	/* PLAN_SLOT_DELETE (0.3): slots $3 and above of ($1, $2), emptied before */
	[PLAN_SLOT_DELETE] = {
		"DELETE FROM inventory.stock_slot s WHERE s.tenant = $1 AND s.sku = $2 "
		"AND s.slot >= $3 AND s.available = 0 AND s.reserved = 0 AND s.consumed = 0",
		3, {TEXTOID, TEXTOID, INT4OID}
	},

	/* PLAN_SKU_ENSURE (0.3): creates the tenant's SKU with slot 0; $3 clock */
	[PLAN_SKU_ENSURE] = {
		"WITH k AS (INSERT INTO inventory.sku (tenant, sku, slots, created_at) "
		"VALUES ($1, $2, 1, $3) ON CONFLICT (tenant, sku) DO NOTHING "
		"RETURNING tenant, sku) "
		"INSERT INTO inventory.stock_slot (tenant, sku, slot, updated_at) "
		"SELECT k.tenant, k.sku, 0, $3 FROM k",
		3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}
	},

	/*
	 * PLAN_SKU_LOCK (0.3): serialises set_stock_slots calls of one SKU.  FOR
	 * NO KEY UPDATE does not conflict with the KEY SHARE locks of foreign
	 * key checks, so reservations never wait for it.
	 */
	[PLAN_SKU_LOCK] = {
		"SELECT k.slots FROM inventory.sku k WHERE k.tenant = $1 AND k.sku = $2 "
		"FOR NO KEY UPDATE",
		2, {TEXTOID, TEXTOID}
	},

	/* PLAN_SKU_SET_SLOTS (0.3) */
	[PLAN_SKU_SET_SLOTS] = {
		"UPDATE inventory.sku k SET slots = $3 WHERE k.tenant = $1 AND k.sku = $2",
		3, {TEXTOID, TEXTOID, INT4OID}
	},

	/* PLAN_SKU_MISSING (0.3): the first of the SKUs $2 the tenant $1 lacks */
	[PLAN_SKU_MISSING] = {
		"SELECT u.sku FROM unnest($2) AS u(sku) WHERE NOT EXISTS (SELECT 1 "
		"FROM inventory.sku k WHERE k.tenant = $1 AND k.sku = u.sku) "
		"ORDER BY u.sku LIMIT 1",
		2, {TEXTOID, TEXTARRAYOID}
	},

	/* PLAN_EXPIRE_LINES (0.3): units per (tenant, sku) of reservations $1 */
	[PLAN_EXPIRE_LINES] = {
		"SELECT l.tenant::text, l.sku::text, sum(l.quantity)::bigint "
		"FROM inventory.reservation_line l WHERE l.reservation_id = ANY ($1) "
		"GROUP BY l.tenant, l.sku ORDER BY l.tenant, l.sku",
		1, {INT8ARRAYOID}
	},

	/*
	 * PLAN_LEDGER_RECORD (0.3): the ledger record and event of a receipt or
	 * adjustment whose slots the caller already changed; $7 is available
	 * after it.  No row returned: the key was taken meanwhile (IN001).
	 * $1 tenant, $2 sku, $3 key, $4 kind, $5 delta, $6 reason, $8 actor,
	 * $9 clock.
	 */
	[PLAN_LEDGER_RECORD] = {
		"WITH g AS (INSERT INTO inventory.stock_ledger (tenant, sku, request_key, kind, "
		"delta, reason, available_after, actor, created_at) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
		"ON CONFLICT (tenant, request_key) DO NOTHING RETURNING available_after), "
		STOCK_EVENT("$9"),
		9, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, INT8OID, TEXTOID,
		TIMESTAMPTZOID}
	},

	/*
	 * PLAN_CHECK_SLOTS (0.3): the slots of every SKU are numbered 0 to
	 * slots - 1, as many as inventory.sku says.
	 */
	[PLAN_CHECK_SLOTS] = {
		"SELECT k.tenant::text, k.sku::text, 'slots_match_sku'::text, "
		"format('sku says %s slots; stock_slot has %s rows numbered %s to %s', "
		"k.slots, count(s.slot), min(s.slot), max(s.slot)) "
		"FROM inventory.sku k LEFT JOIN inventory.stock_slot s "
		"ON s.tenant = k.tenant AND s.sku = k.sku "
		"GROUP BY k.tenant, k.sku, k.slots "
		"HAVING count(s.slot) <> k.slots OR min(s.slot) <> 0 "
		"OR max(s.slot) <> k.slots - 1 "
		"ORDER BY 1, 2",
		0, {InvalidOid}
	},

	/*
	 * PLAN_SKU_SHARE (0.3): share locks on the SKUs ($1 tenants, $2 skus)
	 * in (tenant, sku) order, taken before PLAN_SLOT_LOCK_ALL.  They wait for
	 * a set_stock_slots in progress (FOR NO KEY UPDATE) and keep new ones
	 * out, so the next statement's snapshot shows every slot of the SKUs.
	 * They do not conflict with each other nor with foreign key checks.
	 */
	[PLAN_SKU_SHARE] = {
		"SELECT 1 FROM inventory.sku k "
		"JOIN unnest($1, $2) AS u(tenant, sku) ON k.tenant = u.tenant AND k.sku = u.sku "
		"ORDER BY k.tenant, k.sku FOR SHARE OF k",
		2, {TEXTARRAYOID, TEXTARRAYOID}
	},
};

static SPIPlanPtr saved_plans[PLAN_COUNT];

/*
 * InventoryExec
 *		Runs the saved plan of statement id (preparing and keeping it on
 *		first use) with the given parameters.
 *
 * values/nulls: one entry per parameter (nulls as for SPI: ' ' or 'n', or
 * NULL for none null).  read_only: true for lookup and check_invariants.
 * expected_rc: the exact SPI_OK_* code the statement must return; anything
 * else is a defect and raises XX000.  Returns SPI_processed.
 */
uint64
InventoryExec(InventoryPlanId id, Datum *values, const char *nulls,
			  bool read_only, int expected_rc)
{
	int			rc;

	Assert(id >= 0 && id < PLAN_COUNT);
	if (saved_plans[id] == NULL)
	{
		const InventoryPlanDef *def = &plan_defs[id];
		SPIPlanPtr	plan;

		/*
		 * A generic plan from the start: with custom plans the plan cache
		 * would plan the statement again on every call while it weighs them.
		 */
		plan = SPI_prepare_cursor(def->sql, def->nargs, (Oid *) def->argtypes,
								  CURSOR_OPT_GENERIC_PLAN);
		if (plan == NULL)
			elog(ERROR, "pg_inventory: SPI_prepare of statement %d failed: %s",
				 (int) id, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "pg_inventory: SPI_keepplan of statement %d failed",
				 (int) id);
		saved_plans[id] = plan;
	}

	rc = SPI_execute_plan(saved_plans[id], values, nulls, read_only, 0);
	if (rc != expected_rc)
		elog(ERROR, "pg_inventory: statement %d returned %s, expected %s",
			 (int) id, SPI_result_code_string(rc),
			 SPI_result_code_string(expected_rc));
	return SPI_processed;
}
