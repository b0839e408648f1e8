-- 310_outbox_rings: the outbox's rings (0.8; README "Outbox retention:
-- rings").  The outbox is partitioned by ring (outbox_ring_0..2); new
-- events go to the current ring (sequence outbox_ring), every event of a
-- transaction to the ring current at its first; purge_published truncates
-- a ring none of whose events was published within the retention, after
-- moving its unpublished events and dead letters into the current ring,
-- and makes the next ring current once it is empty and the current ring
-- holds an event published more than half the retention ago.  The races
-- (a writer or a reader holding a ring) are in the isolation spec
-- outbox_rings.
\set VERBOSITY sqlstate
SET TimeZone = 'UTC';
SET pg_inventory.frozen_now = '2026-08-01 00:00:00+00';
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
-- the rings: three partitions of the outbox, none readable but through it
SELECT c.oid::regclass AS ring, pg_get_expr(c.relpartbound, c.oid) AS bound,
       has_table_privilege('public', c.oid, 'SELECT') AS public_reads
  FROM pg_class c WHERE c.relispartition
   AND c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'inventory.outbox'::regclass)
 ORDER BY 1;
SELECT pg_get_expr(d.adbin, d.adrelid) AS ring_default
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE d.adrelid = 'inventory.outbox'::regclass AND a.attname = 'ring';
SELECT has_function_privilege('public', 'inventory._outbox_ring(regclass)', 'EXECUTE') AS public_ring_fn,
       has_sequence_privilege('public', 'inventory.outbox_ring', 'SELECT') AS public_ring_seq;

-- start from an empty outbox: what earlier files left published by hand
-- (at this file's clock), then purged; a retention of 0 empties every
-- ring in one call
UPDATE inventory.outbox SET published_at = '2026-07-01', dead_at = NULL, claimed_until = NULL
 WHERE published_at IS NULL;
SELECT inventory.purge_published('0') >= 0 AS purged;
SELECT count(*) AS events FROM inventory.outbox;
-- :cur, :nxt and :third: the rings from the current one on
SELECT last_value AS cur, (last_value + 1) % 3 AS nxt, (last_value + 2) % 3 AS third
  FROM inventory.outbox_ring \gset
CREATE TEMP VIEW rings AS
SELECT (o.ring - :cur + 3) % 3 AS ring_from_current, count(*) AS events,
       count(o.published_at) AS published, count(o.dead_at) AS dead
  FROM inventory.outbox o GROUP BY 1 ORDER BY 1;
CREATE TEMP VIEW current_ring AS
SELECT (r.last_value - :cur + 3) % 3 AS current_from_start FROM inventory.outbox_ring r;

-- five events in the current ring: three published, a dead letter, a
-- live one whose lease is given back
SELECT inventory.restock('t310', 'r' || g, 'S' || g, 10) FROM generate_series(1, 5) g;
SELECT array_agg(id ORDER BY id) AS ids FROM inventory.relay_claim('t310', 5) \gset
SELECT inventory.relay_mark_published('t310', (:'ids'::bigint[])[1:3]) AS published,
       inventory.relay_mark_failed('t310', (:'ids'::bigint[])[4:4], 'broker said no', 1) AS dead,
       inventory.relay_release('t310', (:'ids'::bigint[])[5:5]) AS released;
SELECT * FROM rings;
SELECT oldest_published_at FROM inventory.outbox_metrics;

-- 20 minutes on, nothing is older than the hour of retention, and the
-- current ring's first publication is younger than half of it: nothing
SET pg_inventory.frozen_now = '2026-08-01 00:20:00+00';
SELECT inventory.purge_published('1 hour') AS removed;
SELECT * FROM current_ring;
-- 40 minutes on: the next ring (empty) becomes current, nothing removed
SET pg_inventory.frozen_now = '2026-08-01 00:40:00+00';
SELECT inventory.purge_published('1 hour') AS removed;
SELECT * FROM current_ring;
-- new events go to the new current ring
SELECT inventory.restock('t310', 'r6', 'S6', 10);
SELECT * FROM rings;
-- 59 minutes: the old ring's events were published within the hour: kept
SET pg_inventory.frozen_now = '2026-08-01 00:59:00+00';
SELECT inventory.purge_published('1 hour') AS removed;
SELECT * FROM rings;
-- 61 minutes: the old ring goes whole: its three published events are
-- removed, its dead letter and its live event move to the current ring
-- with their ids, attempts and errors
SET pg_inventory.frozen_now = '2026-08-01 01:01:00+00';
SELECT inventory.purge_published('1 hour') AS removed;
SELECT * FROM rings;
SELECT o.id = ANY ((:'ids'::bigint[])[4:5]) AS kept_id, (o.ring - :cur + 3) % 3 AS ring_from_current,
       o.attempts, o.last_error, o.dead_at IS NOT NULL AS dead, o.published_at IS NULL AS unpublished
  FROM inventory.outbox o WHERE o.tenant = 't310' AND o.id <= (:'ids'::bigint[])[5] ORDER BY o.id;
-- the moved live event is claimed as before, in id order with the new one
SELECT array_agg(c.id ORDER BY c.id) = ARRAY[(:'ids'::bigint[])[5],
         (SELECT max(id) FROM inventory.outbox)] AS claimed_in_order
  FROM inventory.relay_claim('t310', 10) c;
SELECT * FROM inventory.outbox_metrics \gset m_
SELECT :m_unpublished AS unpublished, :m_dead_lettered AS dead_lettered,
       :m_below_low_water AS below_low_water;
-- nothing published is left
SELECT oldest_published_at FROM inventory.outbox_metrics;
-- the truncated ring holds no row, not even a dead one
SELECT pg_relation_size(format('inventory.outbox_ring_%s', :cur)::regclass) AS old_ring_bytes;

-- a retention of 0: every published event goes in one call, whichever
-- ring it is in; the dead letter stays
SELECT inventory.relay_mark_published('t310', ARRAY(SELECT id FROM inventory.outbox
        WHERE tenant = 't310' AND claimed_by = 't310' AND published_at IS NULL AND dead_at IS NULL)) AS published;
SET pg_inventory.frozen_now = '2026-08-01 01:02:00+00';
SELECT inventory.purge_published('0') AS removed;
SELECT count(*) FILTER (WHERE published_at IS NOT NULL) AS published_left,
       count(*) FILTER (WHERE dead_at IS NOT NULL) AS dead_left
  FROM inventory.outbox;

-- every event of a transaction goes to the ring current at its first,
-- even when the ring moves on meanwhile
-- (the current ring's one published event, 35 minutes old, lets it move
-- on but keeps the ring)
SELECT inventory.requeue_dead_letters(NULL, 'rings test') AS requeued;
SET pg_inventory.frozen_now = '2026-08-01 02:40:00+00';
SELECT inventory.relay_mark_published('t310', ARRAY(SELECT id FROM inventory.relay_claim('t310', 10))) AS published;
SET pg_inventory.frozen_now = '2026-08-01 03:15:00+00';
BEGIN;
SELECT inventory.restock('t310', 'r7', 'S7', 10);
SELECT last_value AS ring_before FROM inventory.outbox_ring \gset
SELECT inventory.purge_published('1 hour') >= 0 AS purged;
SELECT last_value <> :ring_before AS ring_moved FROM inventory.outbox_ring;
SELECT inventory.restock('t310', 'r8', 'S8', 10);
COMMIT;
SELECT request_key, ring = :ring_before AS first_ring
  FROM inventory.outbox o JOIN LATERAL (SELECT o.payload ->> 'request_key' AS request_key) k ON true
 WHERE o.tenant = 't310' AND k.request_key IN ('r7', 'r8') ORDER BY 1;
-- the next transaction writes to the new ring
SELECT inventory.restock('t310', 'r9', 'S9', 10);
SELECT ring <> :ring_before AS new_ring FROM inventory.outbox
 WHERE tenant = 't310' AND payload ->> 'request_key' = 'r9';

-- max_rows bounds the unpublished events a ring may hold to be emptied
-- (they move row by row while the ring is locked): a ring with three
-- waits at max_rows 2 and goes at 3
SET pg_inventory.frozen_now = '2026-08-01 05:00:00+00';
SELECT inventory.relay_mark_published('t310', ARRAY(SELECT id FROM inventory.relay_claim('t310', 100))) >= 0 AS published;
SET pg_inventory.frozen_now = '2026-08-01 05:00:30+00';
SELECT inventory.purge_published('0') >= 0 AS purged;
SELECT count(*) AS events FROM inventory.outbox;
SELECT inventory.restock('t310', 'm' || g, 'M' || g, 10) FROM generate_series(1, 4) g;
SELECT array_agg(id ORDER BY id) AS mids FROM inventory.relay_claim('t310', 4) \gset
SELECT inventory.relay_mark_published('t310', (:'mids'::bigint[])[1:1]) AS published,
       inventory.relay_release('t310', (:'mids'::bigint[])[2:4]) AS released;
SELECT last_value AS mring FROM inventory.outbox_ring \gset
SET pg_inventory.frozen_now = '2026-08-01 05:01:00+00';
SELECT inventory.purge_published('0', 2) AS removed;
SELECT (o.ring - :mring + 3) % 3 AS ring_from_then_current, count(*) AS events,
       count(o.published_at) AS published
  FROM inventory.outbox o GROUP BY 1 ORDER BY 1;
SELECT inventory.purge_published('0', 3) AS removed;
SELECT (o.ring - :mring + 3) % 3 AS ring_from_then_current, count(*) AS events,
       count(o.published_at) AS published
  FROM inventory.outbox o GROUP BY 1 ORDER BY 1;

-- errors: a transaction snapshot older than the ring's lock could miss
-- events to move (25001); arguments (22023)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT inventory.purge_published('0');
ROLLBACK;
SELECT inventory.purge_published('1 hour', 0);
SELECT inventory.purge_published(NULL);
-- an event with a ring that is none of the three is refused (23514), and
-- so is such a current ring (22003)
INSERT INTO inventory.outbox (event_id, event_type, tenant, payload, created_at, ring)
VALUES (gen_random_uuid(), 'stock.restocked', 't310', '{}', now(), 3);
SELECT setval('inventory.outbox_ring', 3);
SELECT * FROM inventory.check_invariants() WHERE tenant = 't310';

-- the update from 0.7: what a DBA attached to the outbox that the update
-- cannot carry refuses it (2BP01, each named) and changes nothing; storage
-- parameters and statistics targets are carried to the rings
DROP VIEW rings, current_ring;
\set VERBOSITY default
DROP EXTENSION pg_inventory CASCADE;
CREATE EXTENSION pg_inventory VERSION '0.7';
SELECT inventory.restock('t310', 'u1', 'U', 5);
CREATE FUNCTION pg_temp.t310_note() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER t310_note AFTER INSERT ON inventory.outbox FOR EACH STATEMENT EXECUTE FUNCTION pg_temp.t310_note();
CREATE INDEX t310_outbox_tenant ON inventory.outbox (tenant, created_at);
CREATE VIEW pg_temp.t310_events AS SELECT id, event_type FROM inventory.outbox;
CREATE PUBLICATION t310_cdc FOR TABLE inventory.outbox;
ALTER TABLE inventory.outbox ADD COLUMN trace_id text DEFAULT 'abc';
CREATE TABLE pg_temp.t310_child () INHERITS (inventory.outbox);
ALTER TABLE inventory.outbox SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01);
ALTER TABLE inventory.outbox ALTER COLUMN payload SET STATISTICS 500;
ALTER EXTENSION pg_inventory UPDATE TO '0.8';
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
SELECT count(*) AS events, count(*) FILTER (WHERE event_type = 'stock.restocked') AS restocked
  FROM inventory.outbox;
DROP TRIGGER t310_note ON inventory.outbox;
DROP INDEX inventory.t310_outbox_tenant;
DROP VIEW pg_temp.t310_events;
DROP PUBLICATION t310_cdc;
DROP TABLE pg_temp.t310_child;
ALTER TABLE inventory.outbox DROP COLUMN trace_id;
ALTER EXTENSION pg_inventory UPDATE TO '0.8';
\set VERBOSITY sqlstate
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
SELECT c.relname, c.reloptions FROM pg_class c
 WHERE c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'inventory.outbox'::regclass)
 ORDER BY 1;
SELECT c.oid::regclass AS rel, a.attstattarget FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE a.attname = 'payload' AND (c.oid = 'inventory.outbox'::regclass OR c.oid IN
       (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'inventory.outbox'::regclass))
 ORDER BY 1;
SELECT ring, event_type FROM inventory.outbox;
