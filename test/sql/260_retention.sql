-- 260_retention: retention of history (README "purge_history",
-- "archive_ledger", "Retention").
--   purge_history: finished reservations (confirmed, cancelled, expired,
--   rejected, compensated) older than older_than whose events are all
--   published go, with their lines, transitions and events, oldest first,
--   at most max_rows; pending ones (even due), ones with an unpublished or
--   dead-lettered event and recent ones stay; with archive, one document
--   each in reservation_archive; the units of confirmed ones are carried in
--   purged_confirmed, so check_invariants stays clean; a re-run removes
--   nothing; a removed key no longer replays; argument errors are 22023.
--   archive_ledger: old records move to stock_ledger_archive, oldest
--   first, at most max_rows; check_invariants sums ledger and archive (and
--   sees a missing archived record); their keys still replay; 22023.
-- Both act on every tenant: this file's clock is in 2001, before anything
-- other files make (2026 on), so only its own rows are old enough.
-- purge_history is tested here on the schema of 0.8, where it removes
-- reservations row by row (the library keeps that path for schemas 0.5 to
-- 0.8); 320_history_rings tests the rings of 0.9.  At its end the database
-- is updated to the current version with this file's history in it.
\set VERBOSITY sqlstate
DROP EXTENSION pg_inventory CASCADE;
CREATE EXTENSION pg_inventory VERSION '0.8';
SET TimeZone = 'UTC';
\ir include/drain.sql
SET pg_inventory.frozen_now = '2001-01-01 00:00:00+00';

-- this file's tenant is t260: counts, stk and :oc (include/tenant.sql)
\set prefix t260
\ir include/tenant.sql
-- each reservation of the tenant with what it still has
CREATE TEMP VIEW kept AS
SELECT r.request_key, r.state,
       (SELECT count(*) FROM inventory.reservation_line l WHERE l.reservation_id = r.id) AS lines,
       (SELECT count(*) FROM inventory.reservation_transition t WHERE t.reservation_id = r.id) AS transitions,
       (SELECT count(*) FROM inventory.outbox o WHERE o.reservation_id = r.id) AS events,
       (SELECT count(*) FROM inventory.outbox o WHERE o.reservation_id = r.id
           AND o.published_at IS NULL AND o.dead_at IS NULL) AS unpublished,
       (SELECT count(*) FROM inventory.outbox o WHERE o.reservation_id = r.id
           AND o.dead_at IS NOT NULL) AS dead
  FROM inventory.reservation r WHERE r.tenant = 't260' ORDER BY r.request_key;
-- the archive without raw ids (they depend on the other files)
CREATE TEMP VIEW arch AS
SELECT a.request_key, a.state, a.finished_at, a.archived_at,
       a.reservation_id = (a.document ->> 'id')::bigint AS same_id,
       a.document - 'id' - 'lines' - 'transitions' AS reservation,
       a.document -> 'lines' AS lines,
       (SELECT jsonb_agg(t - 'id' ORDER BY (t ->> 'version')::int)
          FROM jsonb_array_elements(a.document -> 'transitions') t) AS transitions
  FROM inventory.reservation_archive a WHERE a.tenant = 't260' ORDER BY a.request_key;
CREATE TEMP VIEW carried AS
SELECT sku, location, quantity, updated_at FROM inventory.purged_confirmed
 WHERE tenant = 't260' ORDER BY sku, location;
CREATE TEMP VIEW lstk AS
SELECT sku, location, available, reserved, consumed
  FROM inventory.location_stock WHERE tenant = 't260' ORDER BY sku, location;
CREATE TEMP VIEW broken AS
SELECT sku, check_name, detail FROM inventory.check_invariants()
 WHERE tenant = 't260' ORDER BY 1, 2, 3;

-- stock: A 20 at default, A 3 at hub (served first), B 5 at default
SELECT inventory.set_location('t260', 'hub', 10);
SELECT inventory.restock('t260', 'rcpt-1', 'A', 20);
SELECT inventory.restock_at('t260', 'rcpt-2', 'A', 'hub', 3);
SELECT inventory.restock('t260', 'rcpt-3', 'B', 5);

------------------------------------------------------------------------
-- history made on 2001-01-01
------------------------------------------------------------------------
-- c1: A 2 and B 1, confirmed (both at default, the one location with both)
SELECT :oc FROM inventory.reserve_lines('t260', 'c1',
	'[{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}]');
SELECT status, state FROM inventory.confirm('t260', 'c1');
-- c2: A 3, confirmed (at hub, which serves first)
SELECT :oc FROM inventory.reserve('t260', 'c2', 'A', 3);
SELECT status, state FROM inventory.confirm('t260', 'c2');
-- x1 cancelled, j1 rejected, m1 confirmed then compensated
SELECT :oc FROM inventory.reserve('t260', 'x1', 'A', 1);
SELECT status, state FROM inventory.cancel('t260', 'x1', 'changed mind');
SELECT :oc FROM inventory.reserve('t260', 'j1', 'A', 1000);
SELECT :oc FROM inventory.reserve('t260', 'm1', 'A', 2);
SELECT status, state FROM inventory.confirm('t260', 'm1');
SELECT status, state FROM inventory.compensate('t260', 'm1', 'damaged');
-- u1 confirmed (its confirmation will stay unpublished), d1 cancelled (its
-- cancellation will be dead-lettered)
SELECT :oc FROM inventory.reserve('t260', 'u1', 'A', 1);
SELECT status, state FROM inventory.confirm('t260', 'u1');
SELECT :oc FROM inventory.reserve('t260', 'd1', 'A', 1);
SELECT status, state FROM inventory.cancel('t260', 'd1', 'changed mind');
-- p1 pending for 10 minutes, e1 for 5 minutes
SELECT :oc FROM inventory.reserve('t260', 'p1', 'A', 1, '10 minutes');
SELECT :oc FROM inventory.reserve('t260', 'e1', 'A', 1, '5 minutes');
-- at 00:07 e1 is expired by expire_due (finished at 00:07); p1 is due at
-- 00:10 but nobody sweeps it: it stays pending
SET pg_inventory.frozen_now = '2001-01-01 00:07:00+00';
SELECT inventory.expire_due();
-- r1, confirmed much later (2001-05-20)
SET pg_inventory.frozen_now = '2001-05-20 00:00:00+00';
SELECT :oc FROM inventory.reserve('t260', 'r1', 'A', 1);
SELECT status, state FROM inventory.confirm('t260', 'r1');
-- and a loss recorded the same day
SELECT inventory.adjust('t260', 'adj-1', 'B', -1, 'loss', 'broken');

-- a relay published every event but u1's confirmation, which is still
-- unpublished, and d1's cancellation, which is dead-lettered (written by
-- hand as the superuser: relays are 140's business)
UPDATE inventory.outbox o SET published_at = '2001-05-20 00:00:00+00'
 WHERE o.tenant = 't260'
   AND (o.reservation_id IS NULL
        OR (o.payload ->> 'request_key', o.event_type) NOT IN
           (('u1', 'reservation.confirmed'), ('d1', 'reservation.cancelled')));
UPDATE inventory.outbox o SET attempts = 10, dead_at = '2001-05-20 00:00:00+00',
       last_error = 'nacked'
 WHERE o.tenant = 't260' AND o.payload ->> 'request_key' = 'd1'
   AND o.event_type = 'reservation.cancelled';
SELECT * FROM kept;
SELECT * FROM counts;
SELECT * FROM broken;

------------------------------------------------------------------------
-- purge_history on 2001-06-01, older than 30 days (before 2001-05-02)
------------------------------------------------------------------------
SET pg_inventory.frozen_now = '2001-06-01 00:00:00+00';
-- at most 2, oldest first (by last change, then id): c1 and c2
SELECT inventory.purge_history('30 days', 2, archive => true);
SELECT * FROM kept;
-- the rest that may go: x1, j1, m1 (finished at 00:00) and e1 (00:07)
SELECT inventory.purge_history('30 days', archive => true);
-- left: d1 (dead letter), p1 (pending, due), r1 (recent), u1 (unpublished)
SELECT * FROM kept;
-- their events went with them; the stock events stay
SELECT * FROM counts;
SELECT count(*) AS stock_events FROM inventory.outbox
 WHERE tenant = 't260' AND reservation_id IS NULL;
-- one document each: the reservation, its lines, its transitions
SELECT request_key, state, finished_at, archived_at, same_id FROM arch;
SELECT request_key, reservation FROM arch;
SELECT request_key, lines FROM arch;
SELECT request_key, transitions FROM arch;
-- the units of c1 and c2 stay consumed: carried per (sku, location)
SELECT * FROM carried;
SELECT * FROM lstk;
SELECT * FROM stk;
SELECT * FROM broken;

-- a re-run removes nothing and changes nothing
SELECT inventory.purge_history('30 days', archive => true);
SELECT * FROM counts;
SELECT count(*) AS archived FROM arch;

-- a removed reservation is gone for its key: lookup finds nothing, and a
-- reserve with the key makes a new reservation (no replay)
SELECT :oc FROM inventory.lookup('t260', 'c1');
SELECT :oc FROM inventory.reserve('t260', 'x1', 'A', 1);
SELECT status, state FROM inventory.cancel('t260', 'x1', 'test only');

-- u1 goes once its event is published, d1 once its dead letter is
-- discarded; without archive nothing is kept of them
UPDATE inventory.outbox o SET published_at = '2001-06-01 00:00:00+00'
 WHERE o.tenant = 't260' AND o.payload ->> 'request_key' = 'u1'
   AND o.published_at IS NULL;
SELECT inventory.discard_dead_letters(ARRAY(SELECT o.id FROM inventory.outbox o
	WHERE o.tenant = 't260' AND o.dead_at IS NOT NULL), 'given up: test of retention');
SELECT inventory.purge_history('30 days');
SELECT * FROM kept;
SELECT count(*) AS archived FROM arch;
SELECT * FROM carried;
SELECT * FROM broken;

-- r1 goes once it is older than older_than; p1 never while pending
SET pg_inventory.frozen_now = '2001-07-01 00:00:00+00';
UPDATE inventory.outbox o SET published_at = '2001-07-01 00:00:00+00'
 WHERE o.tenant = 't260' AND o.published_at IS NULL;
SELECT inventory.purge_history('30 days');
SELECT * FROM kept;
SELECT * FROM carried;
SELECT * FROM broken;
-- older_than 0: everything finished before the clock (the x1 made again)
SELECT inventory.purge_history('0');
SELECT * FROM kept;

-- arguments
SELECT inventory.purge_history(NULL);
SELECT inventory.purge_history('-1 second');
SELECT inventory.purge_history('11 years');
SELECT inventory.purge_history('1 day', 0);
SELECT inventory.purge_history('1 day', 1000001);
SELECT inventory.purge_history('1 day', NULL);
SELECT inventory.purge_history('1 day', 10, NULL);

------------------------------------------------------------------------
-- archive_ledger on 2001-07-01, older than 30 days (before 2001-06-01):
-- rcpt-1, rcpt-2, rcpt-3 (2001-01-01) and adj-1 (2001-05-20)
------------------------------------------------------------------------
CREATE TEMP VIEW led AS
SELECT 'ledger' AS "table", request_key, sku, location, kind, delta, available_after
  FROM inventory.stock_ledger WHERE tenant = 't260'
UNION ALL
SELECT 'archive', request_key, sku, location, kind, delta, available_after
  FROM inventory.stock_ledger_archive WHERE tenant = 't260'
 ORDER BY 2;
-- at most 2, oldest (lowest id) first
SELECT inventory.archive_ledger('30 days', 2);
SELECT * FROM led;
SELECT * FROM broken;
SELECT inventory.archive_ledger('30 days');
SELECT inventory.archive_ledger('30 days');
SELECT * FROM led;
-- ledger and archive together still net the counters, per location
SELECT g.sku, g.location, sum(g.delta) AS net,
       (SELECT available + reserved + consumed FROM lstk s
         WHERE s.sku = g.sku AND s.location = g.location) AS counted
  FROM (SELECT sku, location, delta FROM inventory.stock_ledger WHERE tenant = 't260'
        UNION ALL
        SELECT sku, location, delta FROM inventory.stock_ledger_archive WHERE tenant = 't260') g
 GROUP BY 1, 2 ORDER BY 1, 2;
SELECT * FROM broken;
-- an archived key still replays: the stored result, nothing new; with
-- another payload it is refused (IN001)
SELECT inventory.restock('t260', 'rcpt-1', 'A', 20);
SELECT inventory.restock('t260', 'rcpt-1', 'A', 21);
SELECT inventory.restock_at('t260', 'rcpt-2', 'A', 'default', 3);
SELECT inventory.adjust('t260', 'adj-1', 'B', -1, 'loss', 'broken');
SELECT * FROM counts;
SELECT * FROM stk;
-- the archive counts: a record missing from it is a broken ledger
BEGIN;
DELETE FROM inventory.stock_ledger_archive
 WHERE tenant = 't260' AND request_key = 'rcpt-3';
SELECT * FROM broken;
ROLLBACK;
SELECT * FROM broken;

-- arguments: at least 1 day, at most 10 years; max_rows 1 to 1000000
SELECT inventory.archive_ledger(NULL);
SELECT inventory.archive_ledger('23 hours');
SELECT inventory.archive_ledger('11 years');
SELECT inventory.archive_ledger('30 days', 0);
SELECT inventory.archive_ledger('30 days', NULL);

-- the update to the current version carries this history into the rings:
-- every reservation in the ring of its id, invariants clean.  A view on
-- the reservations (even a temporary one) refuses it (2BP01) until dropped.
\set VERBOSITY default
ALTER EXTENSION pg_inventory UPDATE;
\set VERBOSITY sqlstate
DROP VIEW kept, counts;
ALTER EXTENSION pg_inventory UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions
                      WHERE name = 'pg_inventory') AS current
  FROM pg_extension WHERE extname = 'pg_inventory';
SELECT r.request_key, r.state,
       (SELECT count(*) FROM inventory.reservation_line l WHERE l.reservation_id = r.id) AS lines,
       (SELECT count(*) FROM inventory.reservation_transition t WHERE t.reservation_id = r.id) AS transitions
  FROM inventory.reservation r WHERE r.tenant = 't260' ORDER BY r.request_key;
SELECT count(*) AS misplaced FROM inventory.reservation r
 WHERE r.tableoid <> ('inventory.reservation_ring_' || r.id % 4)::regclass;
SELECT * FROM broken;
