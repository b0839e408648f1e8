-- 320_history_rings: the reservations' rings (0.9; README "History
-- retention: rings").  reservation, reservation_line and
-- reservation_transition are partitioned by the reservation id modulo 4
-- (four rings each); a new id is a sequence number times 4 plus the
-- current ring (sequence reservation_ring), so a reservation's lines and
-- log rows are in the ring of its id.  A request key is kept once across
-- the rings (reserve's lock on the key).  purge_history truncates a ring
-- other than the current one once every reservation in it finished before
-- the retention (archiving first, at most max_rows documents per call, when
-- asked; the units of confirmed ones carried into purged_confirmed), then
-- makes the next ring current once it is empty and the current ring's
-- oldest reservation is older than half the retention.  The races (a
-- transaction holding a ring, the same key across a ring switch) are in
-- the isolation spec history_rings.
\set VERBOSITY sqlstate
SET TimeZone = 'UTC';
-- a database of its own making: ids and rings from the start
DROP EXTENSION pg_inventory CASCADE;
CREATE EXTENSION pg_inventory;
SET pg_inventory.frozen_now = '2030-01-01 00:00:00+00';
\set prefix t320
\ir include/tenant.sql
-- each reservation of the tenant, with its ring and where its rows are
CREATE TEMP VIEW held AS
SELECT r.request_key, r.state, r.id, r.id % 4 AS ring, r.tableoid::regclass AS partition,
       (SELECT string_agg(DISTINCT l.tableoid::regclass::text, ',') FROM inventory.reservation_line l
         WHERE l.reservation_id = r.id) AS lines_in,
       (SELECT string_agg(DISTINCT t.tableoid::regclass::text, ',') FROM inventory.reservation_transition t
         WHERE t.reservation_id = r.id) AS transitions_in
  FROM inventory.reservation r WHERE r.tenant LIKE 't320%' ORDER BY r.id;
CREATE TEMP VIEW ring_rows AS
SELECT k AS ring,
       (SELECT count(*) FROM inventory.reservation r WHERE r.id % 4 = k) AS reservations,
       (SELECT count(*) FROM inventory.reservation_line l WHERE l.reservation_id % 4 = k) AS lines,
       (SELECT count(*) FROM inventory.reservation_transition t WHERE t.reservation_id % 4 = k) AS transitions
  FROM generate_series(0, 3) k;
CREATE TEMP VIEW current_ring AS SELECT last_value AS current_ring FROM inventory.reservation_ring;
CREATE TEMP VIEW broken AS SELECT * FROM inventory.check_invariants();

-- the partitions: four rings of each table, none readable but through it
SELECT c.oid::regclass AS partition, pg_get_expr(c.relpartbound, c.oid) AS bound,
       has_table_privilege('public', c.oid, 'SELECT') AS public_reads
  FROM pg_class c
 WHERE c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent IN
        ('inventory.reservation'::regclass, 'inventory.reservation_line'::regclass,
         'inventory.reservation_transition'::regclass))
 ORDER BY 1;
SELECT pg_get_expr(d.adbin, d.adrelid) AS id_default
  FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
 WHERE d.adrelid = 'inventory.reservation'::regclass AND a.attname = 'id';
SELECT has_function_privilege('public', 'inventory._reservation_id(regclass,regclass)', 'EXECUTE') AS public_id_fn,
       has_sequence_privilege('public', 'inventory.reservation_ring', 'SELECT') AS public_ring_seq;
SELECT * FROM current_ring;

-- ids: a sequence number times 4 plus the current ring (0), growing; the
-- lines and the log in the reservation's ring
SELECT inventory.restock('t320', 'r1', 'A', 100);
SELECT inventory.restock('t320', 'r2', 'B', 100);
SELECT :oc FROM inventory.reserve('t320', 'c1', 'A', 2);
SELECT :oc FROM inventory.reserve_lines('t320', 'x1', '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1}]');
SELECT :oc FROM inventory.reserve('t320', 'p1', 'B', 3);
SELECT * FROM held;

-- the next ring: new ids end in 1; a key held in ring 0 still replays (the
-- same payload) or is refused (another), and is not claimed again
SELECT setval('inventory.reservation_ring', 1);
SELECT :oc FROM inventory.reserve('t320', 'n1', 'A', 1);
SELECT :oc FROM inventory.reserve('t320', 'c1', 'A', 2);
SELECT :oc FROM inventory.reserve('t320', 'c1', 'A', 3);
SELECT status, state, applied FROM inventory.lookup('t320', 'c1');
SELECT * FROM held;
-- a transaction keeps the ring it drew its first id in (one read per
-- transaction), whatever the sequence says meanwhile
BEGIN;
SELECT :oc FROM inventory.reserve('t320', 'n2', 'A', 1);
SELECT setval('inventory.reservation_ring', 2);
SELECT :oc FROM inventory.reserve('t320', 'n3', 'A', 1);
ROLLBACK;
SELECT setval('inventory.reservation_ring', 1);

-- the rings refuse a row in the wrong ring: a line of a reservation that
-- is not in its ring (23503), a reservation in another ring's partition
-- (23514), a second key in one ring (23505)
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, quantity, location)
VALUES (5, 't320', 'A', 1, 'default');
INSERT INTO inventory.reservation_ring_2 (id, tenant, request_key, state, expires_at, created_at, updated_at)
VALUES (9, 't320', 'bad', 'pending', now(), now(), now());
INSERT INTO inventory.reservation (id, tenant, request_key, state, expires_at, created_at, updated_at)
VALUES (400, 't320', 'c1', 'pending', now(), now(), now());

-- transitions of a reservation in ring 0 made while ring 1 is current stay
-- in ring 0
SELECT :oc FROM inventory.confirm('t320', 'c1');
SELECT :oc FROM inventory.cancel('t320', 'x1');
SELECT :oc FROM inventory.cancel('t320', 'n1');
SELECT * FROM held;
SELECT * FROM ring_rows;

-- purge_history: the current ring (1) is never truncated; ring 0 holds a
-- pending reservation (p1): kept; the next ring (2) is empty and the
-- current ring's oldest reservation is older than half the retention, so
-- ring 2 becomes current, and then ring 1, all of it finished before the
-- retention, goes (n1: 1 reservation)
SET pg_inventory.frozen_now = '2030-01-03 00:00:00+00';
SELECT inventory.purge_history('1 day');
SELECT * FROM current_ring;
SELECT * FROM held;
SELECT * FROM ring_rows;
-- a second call changes nothing: ring 0 still holds p1, ring 3 (the next)
-- is empty but the current ring (2) holds nothing to age
SELECT inventory.purge_history('1 day');
SELECT * FROM current_ring;

-- p1 finishes now (2030-01-03): ring 0 waits until a day after that
SELECT :oc FROM inventory.cancel('t320', 'p1');
SET pg_inventory.frozen_now = '2030-01-03 23:59:59+00';
SELECT inventory.purge_history('1 day');
SELECT * FROM held;
-- archive: at most max_rows new documents per call; the ring goes once all
-- are archived; a compensate after its archiving writes the document again
-- and keeps the ring another retention
SET pg_inventory.frozen_now = '2030-01-05 00:00:00+00';
SELECT inventory.purge_history('1 day', 1, archive => true);
SELECT reservation_id % 4 AS ring, request_key, state FROM inventory.reservation_archive ORDER BY reservation_id;
SELECT :oc FROM inventory.compensate('t320', 'c1', 'returned');
SELECT inventory.purge_history('1 day', 1, archive => true);
SELECT request_key, state FROM inventory.reservation_archive ORDER BY reservation_id;
SELECT * FROM held;
-- two days later: x1 archived (1 document), p1 not yet: the ring stays;
-- the next call archives p1, writes c1 again (compensated since) and
-- removes the ring (3 reservations)
SET pg_inventory.frozen_now = '2030-01-07 00:00:00+00';
SELECT inventory.purge_history('1 day', 1, archive => true);
SELECT * FROM ring_rows WHERE ring = 0;
SET pg_inventory.frozen_now = '2030-01-07 00:00:01+00';
SELECT inventory.purge_history('1 day', 1, archive => true);
SELECT request_key, state, finished_at, archived_at,
       document ->> 'state' AS document_state,
       jsonb_array_length(document -> 'transitions') AS transitions,
       jsonb_array_length(document -> 'lines') AS lines
  FROM inventory.reservation_archive ORDER BY reservation_id;
SELECT * FROM held;
SELECT * FROM ring_rows;
-- the ring's partitions are empty files (truncated, no dead rows), and
-- the confirmed units stay counted (c1 was compensated: 0; x1 cancelled)
SELECT c.relname, pg_relation_size(c.oid) AS bytes
  FROM pg_class c WHERE c.relname IN ('reservation_ring_0', 'reservation_line_ring_0',
                                      'reservation_transition_ring_0')
 ORDER BY 1;
SELECT * FROM broken;
SELECT * FROM stk;

-- a confirmed reservation's units go into purged_confirmed with its ring
SELECT :oc FROM inventory.reserve('t320', 'c2', 'A', 4);
SELECT :oc FROM inventory.confirm('t320', 'c2');
SELECT * FROM current_ring;
-- a removed key no longer replays: p1 makes a new reservation
SELECT :oc FROM inventory.reserve('t320', 'p1', 'B', 3);
SELECT :oc FROM inventory.cancel('t320', 'p1');
-- a retention of 0 empties every ring, the current one in the second round
SET pg_inventory.frozen_now = '2030-01-07 00:00:02+00';
SELECT inventory.purge_history('0');
SELECT * FROM ring_rows;
SELECT * FROM current_ring;
SELECT sku, location, quantity FROM inventory.purged_confirmed WHERE tenant = 't320';
SELECT * FROM broken;
SELECT * FROM stk;

-- purge_history must run at READ COMMITTED on 0.9 (25001), and its
-- arguments are checked first (22023)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT inventory.purge_history('0');
ROLLBACK;
SELECT inventory.purge_history(NULL);
SELECT inventory.purge_history('1 day', 0);
SELECT inventory.purge_history('11 years');
SELECT inventory.purge_history('1 day', 10, NULL);
