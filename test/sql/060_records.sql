-- 060_records: the transition log and the outbox.  One log row per state
-- change (a stored rejection too), one outbox event per change of stock or
-- state (a stored rejection writes none), one ledger row per restock or
-- adjust, and nothing for replays, refusals or errors; the event payload
-- (README "Records", "Outbox events").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-05-01 00:00:00+00';

-- what each call wrote for this file's tenant (t060): delta() returns the
-- rows added since its previous call
CREATE TEMP TABLE seen (transitions bigint, events bigint, ledger bigint);
CREATE FUNCTION pg_temp.now_counts(OUT transitions bigint, OUT events bigint, OUT ledger bigint)
LANGUAGE sql AS $$
SELECT (SELECT count(*) FROM inventory.reservation_transition t
          JOIN inventory.reservation r ON r.id = t.reservation_id
         WHERE r.tenant = 't060'),
       (SELECT count(*) FROM inventory.outbox o WHERE o.tenant = 't060'),
       (SELECT count(*) FROM inventory.stock_ledger g WHERE g.tenant = 't060')
$$;
INSERT INTO seen SELECT * FROM pg_temp.now_counts();
CREATE FUNCTION pg_temp.delta(OUT transitions bigint, OUT events bigint, OUT ledger bigint)
LANGUAGE plpgsql AS $$
DECLARE
	c record;
BEGIN
	SELECT * INTO c FROM pg_temp.now_counts();
	SELECT c.transitions - s.transitions, c.events - s.events, c.ledger - s.ledger
	  INTO transitions, events, ledger FROM seen s;
	UPDATE seen SET transitions = c.transitions, events = c.events, ledger = c.ledger;
END
$$;

-- restock: a ledger row and a stock.restocked event, no log row
SELECT inventory.restock('t060', 'rcpt-1', 'A', 5);
SELECT * FROM pg_temp.delta();
SELECT inventory.restock('t060', 'rcpt-2', 'B', 5);
SELECT * FROM pg_temp.delta();
-- its replay and its key reuse: nothing
SELECT inventory.restock('t060', 'rcpt-1', 'A', 5);
SELECT * FROM pg_temp.delta();
SELECT inventory.restock('t060', 'rcpt-1', 'A', 6);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- reserve: a log row (NULL -> pending) and a reservation.reserved event
SET pg_inventory.frozen_now = '2026-05-01 00:01:00+00';
SELECT status, applied FROM inventory.reserve('t060', 'k1', 'A', 2, '1 hour');
SELECT * FROM pg_temp.delta();
-- replay, key reuse, unknown SKU, bad argument: nothing
SELECT status, applied FROM inventory.reserve('t060', 'k1', 'A', 2);
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.reserve('t060', 'k1', 'A', 3);
\echo :LAST_ERROR_SQLSTATE
SELECT status, applied FROM inventory.reserve('t060', 'k9', 'NOPE', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status, applied FROM inventory.reserve('t060', 'k9', 'A', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();
-- lookup: nothing
SELECT status, state FROM inventory.lookup('t060', 'k1');
SELECT * FROM pg_temp.delta();

-- confirm: a log row and an event; confirming again: nothing
SET pg_inventory.frozen_now = '2026-05-01 00:02:00+00';
SELECT status, applied FROM inventory.confirm('t060', 'k1');
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.confirm('t060', 'k1');
SELECT status, applied FROM inventory.cancel('t060', 'k1');
SELECT * FROM pg_temp.delta();
-- compensate: a log row and an event; again, or without a reason: nothing
SET pg_inventory.frozen_now = '2026-05-01 00:03:00+00';
SELECT status, applied FROM inventory.compensate('t060', 'k1', 'parcel lost');
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.compensate('t060', 'k1', 'parcel lost');
SELECT status, applied FROM inventory.compensate('t060', 'k1', '');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- a stored rejection: a log row (NULL -> rejected), no event
SET pg_inventory.frozen_now = '2026-05-01 00:04:00+00';
SELECT status, applied FROM inventory.reserve('t060', 'k2', 'A', 100);
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.reserve('t060', 'k2', 'A', 100);
SELECT status, applied FROM inventory.confirm('t060', 'k2');
SELECT status, applied FROM inventory.cancel('t060', 'k2');
SELECT status, applied FROM inventory.compensate('t060', 'k2', 'never held');
SELECT * FROM pg_temp.delta();

-- cancel: a log row and an event; a refused compensate of a pending one: nothing
SET pg_inventory.frozen_now = '2026-05-01 00:05:00+00';
SELECT status, applied FROM inventory.reserve_lines('t060', 'k3',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 2}]', '1 hour');
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.compensate('t060', 'k3', 'not confirmed');
SELECT * FROM pg_temp.delta();
SET pg_inventory.frozen_now = '2026-05-01 00:06:00+00';
SELECT status, applied FROM inventory.cancel('t060', 'k3', 'customer cancelled');
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.cancel('t060', 'k3', 'customer cancelled');
SELECT * FROM pg_temp.delta();

-- expiry performed by confirm: a log row and an event; again: nothing
SET pg_inventory.frozen_now = '2026-05-01 00:07:00+00';
SELECT status, applied FROM inventory.reserve('t060', 'k4', 'B', 1, '1 minute');
SELECT * FROM pg_temp.delta();
SET pg_inventory.frozen_now = '2026-05-01 00:08:00+00';
SELECT status, applied FROM inventory.confirm('t060', 'k4');
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.confirm('t060', 'k4');
SELECT * FROM pg_temp.delta();

-- adjust: a ledger row and a stock.adjusted event; refusals: nothing
SET pg_inventory.frozen_now = '2026-05-01 00:09:00+00';
SELECT inventory.adjust('t060', 'adj-1', 'B', -1, 'loss', 'dropped');
SELECT * FROM pg_temp.delta();
SELECT inventory.adjust('t060', 'adj-1', 'B', -1, 'loss', 'dropped');
SELECT inventory.adjust('t060', 'adj-2', 'B', -100, 'loss', 'too many');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t060', 'adj-3', 'B', 0, 'correction', 'zero');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- the transition log: versions 1..n with no gap, one row each
SELECT r.request_key, t.from_state, t.to_state, t.version,
       CASE WHEN t.to_state IN ('cancelled', 'compensated') THEN t.reason END AS callers_reason,
       t.created_at - timestamptz '2026-05-01 00:00:00+00' AS at,
       t.actor IS NOT NULL AS has_actor
  FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant = 't060' ORDER BY r.request_key, t.version;
SELECT r.request_key, r.state, r.version,
       r.version = (SELECT count(*) FROM inventory.reservation_transition t
                     WHERE t.reservation_id = r.id) AS one_row_per_version
  FROM inventory.reservation r WHERE r.tenant = 't060' ORDER BY r.request_key;

-- the events, in order, with the facts of their payload
SELECT o.event_type,
       o.payload ->> 'event_type' = o.event_type AS type_matches,
       o.payload ->> 'tenant' AS tenant,
       o.payload ->> 'request_key' AS request_key,
       o.payload ->> 'state' AS state,
       o.payload -> 'version' AS version,
       o.payload -> 'lines' AS lines,
       (o.payload ->> 'occurred_at')::timestamptz - timestamptz '2026-05-01 00:00:00+00' AS occurred
  FROM inventory.outbox o WHERE o.tenant = 't060' ORDER BY o.id;

-- reservation events: every key, with its JSON type, and values that agree
-- with the columns, the reservation and its transition log
SELECT o.event_type,
       o.payload ?& ARRAY['event_id', 'event_type', 'tenant', 'request_key',
                          'reservation_id', 'state', 'version', 'lines',
                          'reason', 'occurred_at'] AS has_keys,
       jsonb_typeof(o.payload -> 'event_id') AS event_id,
       jsonb_typeof(o.payload -> 'event_type') AS event_type,
       jsonb_typeof(o.payload -> 'tenant') AS tenant,
       jsonb_typeof(o.payload -> 'request_key') AS request_key,
       jsonb_typeof(o.payload -> 'reservation_id') AS reservation_id,
       jsonb_typeof(o.payload -> 'state') AS state,
       jsonb_typeof(o.payload -> 'version') AS version,
       jsonb_typeof(o.payload -> 'lines') AS lines,
       jsonb_typeof(o.payload -> 'occurred_at') AS occurred_at
  FROM inventory.outbox o
 WHERE o.tenant = 't060' AND o.event_type LIKE 'reservation.%' ORDER BY o.id;
SELECT o.event_type,
       (o.payload ->> 'event_id')::uuid = o.event_id AS event_id_matches,
       o.payload ->> 'tenant' = o.tenant AS tenant_matches,
       (o.payload ->> 'reservation_id')::bigint = o.reservation_id AS id_matches_column,
       (o.payload ->> 'reservation_id')::bigint = r.id AS id_matches_reservation,
       o.payload ->> 'request_key' = r.request_key AS key_matches,
       EXISTS (SELECT 1 FROM inventory.reservation_transition t
                WHERE t.reservation_id = r.id
                  AND t.version = (o.payload ->> 'version')::int
                  AND t.to_state = o.payload ->> 'state') AS matches_a_transition,
       -- 0.5: "reason" is the reason given to the last cancel or compensate
       -- up to this event (JSON null if none); an expiry is left out here
       -- (who performed it must not matter: 220)
       CASE WHEN o.event_type <> 'reservation.expired' THEN
       o.payload -> 'reason' = COALESCE(to_jsonb((SELECT t.reason
              FROM inventory.reservation_transition t
             WHERE t.reservation_id = r.id
               AND t.to_state IN ('cancelled', 'compensated')
               AND t.version <= (o.payload ->> 'version')::int
             ORDER BY t.version DESC LIMIT 1)), 'null'::jsonb) END AS reason_is_callers,
       (o.payload ->> 'occurred_at')::timestamptz = o.created_at AS occurred_at_is_created_at
  FROM inventory.outbox o
  JOIN inventory.reservation r ON r.tenant = o.tenant
   AND r.request_key = o.payload ->> 'request_key'
 WHERE o.tenant = 't060' AND o.event_type LIKE 'reservation.%' ORDER BY o.id;
-- stock events
SELECT o.event_type,
       o.payload ?& ARRAY['event_id', 'event_type', 'tenant', 'sku',
                          'request_key', 'delta', 'available',
                          'location', 'version', 'occurred_at'] AS has_keys,
       (o.payload ->> 'event_id')::uuid = o.event_id AS event_id_matches,
       o.payload ->> 'tenant' = o.tenant AS tenant_matches,
       o.reservation_id IS NULL AS no_reservation,
       jsonb_typeof(o.payload -> 'delta') AS delta_type,
       jsonb_typeof(o.payload -> 'available') AS available_type,
       o.payload ->> 'sku' AS sku, o.payload -> 'delta' AS delta,
       o.payload -> 'available' AS available
  FROM inventory.outbox o
 WHERE o.tenant = 't060' AND o.event_type LIKE 'stock.%' ORDER BY o.id;

-- every event type of the contract occurred; event ids are unique
SELECT DISTINCT event_type FROM inventory.outbox WHERE tenant = 't060' ORDER BY 1;
SELECT count(*) AS events, count(DISTINCT event_id) AS distinct_event_ids
  FROM inventory.outbox WHERE tenant = 't060';
SELECT count(*) = count(DISTINCT event_id) AS event_ids_unique_everywhere
  FROM inventory.outbox;
-- new events are unpublished, live and not yet attempted
SELECT count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL
                          AND attempts = 0 AND last_error IS NULL) AS fresh,
       count(*) AS events
  FROM inventory.outbox WHERE tenant = 't060';
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't060%' ORDER BY 1, 2, 3;
