-- 330_ring_plans: the calls keep to the rings' indexes whatever the
-- statistics say.  A ring is empty, and analyzed as empty, on a new
-- install (a VACUUM ANALYZE before the first reservation) and whenever
-- autovacuum analyzes a ring the purge emptied; a plan made then (a kept
-- generic plan of a backend's statement, or of a foreign-key check) chose
-- a sequential scan of that ring and kept scanning it while it filled, a
-- scan of the whole ring per call until the next ANALYZE.  The statements
-- of the calls that read or change reservations by key or id are planned
-- with sequential scans off (as the outbox's claims are), so their kept
-- plans, and the foreign-key checks their inserts fire, use the rings'
-- keys.  Checked here with generic plans forced and every ring analyzed
-- empty: the calls of one transaction start no sequential scan of any
-- ring partition (pg_stat_xact_user_tables counts them).
\set VERBOSITY sqlstate
SET TimeZone = 'UTC';
DROP EXTENSION pg_inventory CASCADE;
CREATE EXTENSION pg_inventory;
SET pg_inventory.frozen_now = '2030-01-01 00:00:00+00';
\set prefix t330
\ir include/tenant.sql
SELECT inventory.restock('t330', 'open-a', 'sku-a', 100, 'opening stock') IS NOT NULL AS restocked;
SELECT inventory.restock('t330', 'open-b', 'sku-b', 100, 'opening stock') IS NOT NULL AS restocked;
-- every ring empty and analyzed as empty
ANALYZE inventory.reservation, inventory.reservation_line, inventory.reservation_transition;
SELECT c.relname, c.relpages, c.reltuples FROM pg_class c
 WHERE c.relname ~ '^reservation_(line_|transition_)?ring_[0-3]$' AND c.relnamespace = 'inventory'::regnamespace
 ORDER BY c.relname;
-- the backend's statements planned once, generically, from the first call
SET plan_cache_mode = force_generic_plan;
-- the sequential scans of each ring partition this session has counted and
-- not yet sent to the statistics (sent only between transactions: within
-- the transaction below, what the calls add is the difference)
CREATE TEMP VIEW ring_seq_scans AS
SELECT relname, seq_scan FROM pg_stat_xact_user_tables
 WHERE schemaname = 'inventory' AND relname ~ '^reservation_(line_|transition_)?ring_[0-3]$';
BEGIN;
CREATE TEMP TABLE scans_before ON COMMIT DROP AS SELECT * FROM ring_seq_scans;
SELECT status, state FROM inventory.reserve('t330', 'r1', 'sku-a', 2, '1 hour');
SELECT status, state FROM inventory.reserve('t330', 'r1', 'sku-a', 2, '1 hour');
SELECT status, state FROM inventory.reserve('t330', 'r2', 'sku-b', 3, '1 minute');
SELECT status, state FROM inventory.reserve('t330', 'r3', 'sku-a', 1000, '1 hour');
SELECT status, state FROM inventory.reserve_lines('t330', 'r4', '[{"sku": "sku-a", "quantity": 1}, {"sku": "sku-b", "quantity": 1}]', '1 hour');
SELECT status, state FROM inventory.lookup('t330', 'r1');
SELECT status, state FROM inventory.extend('t330', 'r1', '2030-01-01 02:00:00+00');
SELECT status, state FROM inventory.amend('t330', 'r4', '[{"sku": "sku-a", "quantity": 2}]');
SELECT status, state FROM inventory.confirm('t330', 'r1');
SELECT status, state FROM inventory.compensate('t330', 'r1', 'returned');
SELECT status, state FROM inventory.cancel('t330', 'r4');
SET LOCAL pg_inventory.frozen_now = '2030-01-01 00:05:00+00';
SELECT inventory.expire_due(10) AS expired;
SELECT status, state FROM inventory.lookup('t330', 'r2');
-- none: every call above read and wrote the rings through their keys
SELECT a.relname, a.seq_scan - COALESCE(b.seq_scan, 0) AS seq_scans
  FROM ring_seq_scans a LEFT JOIN scans_before b USING (relname)
 WHERE a.seq_scan > COALESCE(b.seq_scan, 0) ORDER BY a.relname;
COMMIT;
SELECT * FROM inventory.check_invariants();
SELECT * FROM stk ORDER BY sku;
