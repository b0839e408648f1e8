--
-- 120_pg_cron: scheduling expire_due with pg_cron (README "Operations").
-- Needs a server started with shared_preload_libraries including pg_cron
-- and cron.database_name = 'cron_test', and an existing database cron_test
-- (test/scripts/run_tests.sh makes both).  pg_cron 1.4 schedules by the
-- minute, so this test does not wait for a run: it checks the job row the
-- README's command creates and runs that job's command text itself.
--
\set VERBOSITY terse
\c cron_test
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_inventory CASCADE;
DROP SCHEMA IF EXISTS inventory;
CREATE EXTENSION IF NOT EXISTS pg_cron;
CREATE EXTENSION IF NOT EXISTS pg_inventory;
RESET client_min_messages;
-- a job left by an interrupted run
SELECT count(cron.unschedule(jobid)) >= 0 AS clean
  FROM cron.job WHERE jobname = 'inventory-expire-due';

-- the README's schedule: every minute, at most 1000 reservations a run
SELECT cron.schedule('inventory-expire-due', '* * * * *',
					 'SELECT inventory.expire_due(1000)') > 0 AS scheduled;
SELECT jobname, schedule, command, database, username, active
  FROM cron.job WHERE jobname = 'inventory-expire-due';

-- scheduling again under the same name keeps one job
SELECT cron.schedule('inventory-expire-due', '* * * * *',
					 'SELECT inventory.expire_due(1000)')
	   = (SELECT jobid FROM cron.job WHERE jobname = 'inventory-expire-due') AS same_job;
SELECT count(*) AS jobs FROM cron.job WHERE jobname = 'inventory-expire-due';

-- the job's command expires a due reservation in this database
SET pg_inventory.frozen_now = '2026-01-01 00:00:00+00';
SELECT inventory.restock('cron-t', 'cron-rcpt-1', 'A', 5);
SELECT status, state FROM inventory.reserve('cron-t', 'cron-1', 'A', 2, '1 minute');
SET pg_inventory.frozen_now = '2026-01-01 00:01:00+00';
DO $$
BEGIN
	EXECUTE (SELECT command FROM cron.job WHERE jobname = 'inventory-expire-due');
END $$;
SELECT state FROM inventory.reservation
 WHERE tenant = 'cron-t' AND request_key = 'cron-1';
SELECT available, reserved, consumed FROM inventory.stock WHERE tenant = 'cron-t';
SELECT * FROM inventory.check_invariants();
RESET pg_inventory.frozen_now;

-- unscheduling removes the job
SELECT cron.unschedule('inventory-expire-due');
SELECT count(*) AS jobs FROM cron.job WHERE jobname = 'inventory-expire-due';

-- leave cron_test as it was
DROP EXTENSION pg_inventory;
DROP SCHEMA IF EXISTS inventory;
