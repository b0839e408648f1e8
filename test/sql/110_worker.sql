--
-- 110_worker: the background expiry worker (README "expire_due";
-- README "Operations").  Needs a server started with
--   shared_preload_libraries = 'pg_inventory'
--   pg_inventory.worker_database = 'worker_test'
--   pg_inventory.worker_interval = 200
-- and an existing database worker_test (test/scripts/run_tests.sh makes
-- both).  pg_regress cannot drop a database a worker is connected to, so
-- this test works in worker_test, not in contrib_regression: it creates the
-- extension there, reserves with a one-second ttl on the real clock, and
-- waits (bounded) until the reservation is expired in the table.  Nobody
-- but the worker calls expire_due here, so the expiry is the worker's.  Then
-- inventory.worker_status and the worker's pg_stat_activity text after a
-- pass (README "The DBA's console").  The
-- extension is dropped at the end so that a rerun starts clean.
--
\set VERBOSITY terse
\c worker_test
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS pg_inventory CASCADE;
DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'worker_test_app') THEN
		DROP OWNED BY worker_test_app;
		DROP ROLE worker_test_app;
	END IF;
END $$;
DROP SCHEMA IF EXISTS inventory;
RESET client_min_messages;
CREATE EXTENSION pg_inventory;

-- an application role reserves, so that the actor of the expiry (the
-- worker, connected as the bootstrap superuser) can be told apart
CREATE ROLE worker_test_app NOLOGIN;
GRANT USAGE ON SCHEMA inventory TO worker_test_app;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval)
	TO worker_test_app;
SELECT inventory.grant_tenant('wk-t', 'worker_test_app');
SELECT inventory.restock('wk-t', 'wk-rcpt-1', 'A', 5);

SET ROLE worker_test_app;
SELECT status, state, applied, quantity,
	   expires_at - now() >= interval '1 second' AS ttl_after_call,
	   expires_at - now() < interval '5 seconds' AS ttl_not_longer
  FROM inventory.reserve('wk-t', 'wk-1', 'A', 2, '1 second');
RESET ROLE;

SELECT available, reserved, consumed FROM inventory.stock WHERE tenant = 'wk-t';

-- wait until the worker has written the expiry: each poll is a new
-- statement, so it sees the worker's commits (READ COMMITTED); at most 20 s
DO $$
DECLARE
	deadline timestamptz := clock_timestamp() + interval '20 seconds';
BEGIN
	LOOP
		EXIT WHEN (SELECT state FROM inventory.reservation
					WHERE tenant = 'wk-t' AND request_key = 'wk-1') = 'expired';
		IF clock_timestamp() > deadline THEN
			RAISE WARNING 'the expiry worker did not expire wk-1 within 20 seconds';
			EXIT;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;

-- the worker is listed in pg_stat_activity, connected to this database as
-- the bootstrap superuser
SELECT count(*) AS workers, min(datname) AS datname, min(usename) AS usename
  FROM pg_stat_activity
 WHERE backend_type = 'pg_inventory expiry worker';

-- written by the worker: state, version, and the units are back
SELECT state, version,
	   updated_at >= expires_at AS expired_at_or_after_expiry
  FROM inventory.reservation WHERE tenant = 'wk-t' AND request_key = 'wk-1';
SELECT available, reserved, consumed FROM inventory.stock WHERE tenant = 'wk-t';

-- the transition log: reserve by the application role, expiry by the worker
SELECT from_state, to_state, reason, actor, version,
	   created_at >= (SELECT expires_at FROM inventory.reservation
					   WHERE tenant = 'wk-t' AND request_key = 'wk-1') AS at_or_after_expiry
  FROM inventory.reservation_transition t
 WHERE reservation_id = (SELECT id FROM inventory.reservation
						  WHERE tenant = 'wk-t' AND request_key = 'wk-1')
 ORDER BY version;

-- one reservation.expired event
SELECT event_type, payload->>'state' AS state, payload->>'request_key' AS request_key,
	   (payload->>'version')::int AS version
  FROM inventory.outbox
 WHERE tenant = 'wk-t' AND reservation_id IS NOT NULL
 ORDER BY id;

SELECT * FROM inventory.check_invariants();

-- the worker's status after a pass (inventory.worker_status, 0.5): wait
-- (at most 20 s) until a pass that expired wk-1 is counted and the worker
-- shows its idle text in pg_stat_activity, noting the text seen
CREATE TEMP TABLE seen_activity (query text);
CREATE TEMP TABLE sampled_activity (query text);
DO $$
DECLARE
	deadline timestamptz := clock_timestamp() + interval '20 seconds';
	q text;
BEGIN
	LOOP
		SELECT a.query INTO q FROM pg_stat_activity a
		 WHERE a.backend_type = 'pg_inventory expiry worker';
		INSERT INTO sampled_activity VALUES (q);
		EXIT WHEN (SELECT total_expired FROM inventory.worker_status) >= 1
			  AND q LIKE '%: idle, %';
		IF clock_timestamp() > deadline THEN
			RAISE WARNING 'the worker status did not show a pass within 20 seconds';
			EXIT;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	INSERT INTO seen_activity VALUES (q);
END $$;
SELECT query ~ '^pg_inventory expiry worker: idle, last pass at .+, expired [0-9]+, purged [0-9]+, next in 200 ms$'
	   AS idle_text
  FROM seen_activity;
SELECT enabled, database, launcher_state, launcher_pid IS NOT NULL AS launcher_runs,
	   worker_state IN ('idle', 'expiring', 'purging', 'purging_history', 'advancing', 'slotting') AS worker_in_a_pass_or_idle,
	   worker_pid = (SELECT pid FROM pg_stat_activity
					  WHERE backend_type = 'pg_inventory expiry worker') AS worker_pid_ok,
	   worker_exit, total_passes >= 1 AS passed, total_expired >= 1 AS expired_some,
	   last_pass_at IS NOT NULL AS last_pass_known,
	   total_expired >= last_pass_expired AS totals_include_last_pass
  FROM inventory.worker_status;
-- every text sampled while waiting: idle between passes, else the step
SELECT bool_and(query ~ '^pg_inventory expiry worker: (idle, last pass at .+, expired [0-9]+, purged [0-9]+, next in 200 ms|expiring: expire_due\(1000\)|purging: purge_published\(''604800 seconds'', 10000\)|advancing: advance_outbox_low_water\((true|false)\))$')
	   AS texts_known
  FROM sampled_activity;

-- retention of history (0.5): with pg_inventory.history_retention set, the
-- worker's pass ends with purge_history, which removes wk-1 (expired,
-- every event published here by hand) once its last change is older than
-- that; the units stay where the expiry put them and the invariants hold.
-- The setting is reset at once (it is the server's).  (0.9: the purge
-- removes wk-1's ring once no transaction holds it, so the loop looks in
-- a transaction of its own each time: one transaction left open across
-- the loop, having read the reservations, would keep the ring.)
UPDATE inventory.outbox SET published_at = now() WHERE tenant = 'wk-t';
ALTER SYSTEM SET pg_inventory.history_retention = 1;
SELECT pg_reload_conf();
DO $$
DECLARE
	deadline timestamptz := clock_timestamp() + interval '20 seconds';
BEGIN
	LOOP
		EXIT WHEN NOT EXISTS (SELECT 1 FROM inventory.reservation
							   WHERE tenant = 'wk-t' AND request_key = 'wk-1');
		IF clock_timestamp() > deadline THEN
			RAISE WARNING 'the expiry worker did not purge wk-1 within 20 seconds';
			EXIT;
		END IF;
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
ALTER SYSTEM RESET pg_inventory.history_retention;
SELECT pg_reload_conf();
-- the outbox's low-water mark (0.7): every event is published now, so the
-- worker's next pass (advance_outbox_low_water) moves the mark past them
DO $$
DECLARE
	deadline timestamptz := clock_timestamp() + interval '20 seconds';
BEGIN
	LOOP
		EXIT WHEN (SELECT last_value FROM inventory.outbox_low_water)
				  > (SELECT coalesce(max(id), 0) FROM inventory.outbox);
		IF clock_timestamp() > deadline THEN
			RAISE WARNING 'the expiry worker did not move the low-water mark within 20 seconds';
			EXIT;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
-- wk-1 is gone; its two events stay (0.9: they leave by purge_published)
SELECT (SELECT count(*) FROM inventory.reservation WHERE tenant = 'wk-t') AS reservations,
	   (SELECT count(*) FROM inventory.outbox
		 WHERE tenant = 'wk-t' AND reservation_id IS NOT NULL) AS reservation_events;
SELECT available, reserved, consumed FROM inventory.stock WHERE tenant = 'wk-t';
SELECT * FROM inventory.check_invariants();

-- leave worker_test as it was
DROP EXTENSION pg_inventory;
DROP OWNED BY worker_test_app;
DROP ROLE worker_test_app;
DROP SCHEMA IF EXISTS inventory;
