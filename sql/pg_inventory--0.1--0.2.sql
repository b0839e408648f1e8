/*
 * sql/pg_inventory--0.1--0.2.sql
 *
 * Upgrade step 0.1 -> 0.2: the outbox relay.  Relays lease events
 * (claimed_until, claimed_by), publish them with publisher confirms and mark
 * them published; failed attempts back off and end as dead letters that an
 * operator requeues or discards; published events are purged after a
 * retention time.  A fresh install of 0.2 runs 0.1 and then this step.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.2'" to load this file. \quit

/*
 * Amended in 0.4 (the objects this step makes are unchanged): the step
 * refuses to run above READ COMMITTED and takes its table locks before it
 * reads, inventory.reservation first (every call locks it first),
 * and the new view outbox_metrics gets the SELECT privileges of the table
 * it reads (inventory.outbox), table and column privileges alike.
 */
-- At READ COMMITTED every statement below reads a snapshot taken after the
-- locks: a call that commits while this step waits is seen, never lost.
-- At REPEATABLE READ the snapshot would be older than the locks.
DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.2'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- every lock first, then every read: inventory.reservation first, which
-- every call locks (ACCESS SHARE) before anything else, so that the calls
-- in flight end and the calls that start meanwhile wait; then the others
LOCK TABLE inventory.reservation, inventory.outbox IN ACCESS EXCLUSIVE MODE;

/* ---------------------------------------------------------------------
 * Leases: a relay's claim on an event runs out at claimed_until, so the
 * events of a relay that died come back to the others.
 * ------------------------------------------------------------------- */
ALTER TABLE inventory.outbox
	ADD COLUMN claimed_until timestamptz,
	ADD COLUMN claimed_by text,
	ADD CONSTRAINT outbox_dead_unpublished
		CHECK (dead_at IS NULL OR published_at IS NULL),
	ADD CONSTRAINT outbox_claimed_by_length CHECK (char_length(claimed_by) <= 64);
COMMENT ON COLUMN inventory.outbox.claimed_until IS
	'End of the lease of the relay that claimed the event; NULL or past: free to claim.';
COMMENT ON COLUMN inventory.outbox.claimed_by IS
	'Name of the relay that last claimed the event.';

-- dead letters, for operators and the metrics view
CREATE INDEX outbox_dead ON inventory.outbox (id) WHERE dead_at IS NOT NULL;
COMMENT ON INDEX inventory.outbox_dead IS 'Dead-lettered events, for operators.';
-- retention deletes by publication time
CREATE INDEX outbox_published_at ON inventory.outbox (published_at)
	WHERE published_at IS NOT NULL;
COMMENT ON INDEX inventory.outbox_published_at IS 'Published events by time, for purge_published.';

/* ---------------------------------------------------------------------
 * Relay functions (granted to the relay role).
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.relay_claim(relay text, batch_size integer DEFAULT 100,
		lease interval DEFAULT '30 seconds')
	RETURNS TABLE(id bigint, event_id uuid, event_type text, tenant text,
				  reservation_id bigint, payload jsonb, attempts integer)
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_claim';
COMMENT ON FUNCTION inventory.relay_claim(text, integer, interval) IS
	'Leases up to batch_size (1 to 10000) committed, unpublished, live events that are due, in id order, to relay for lease (at most 1 hour); only the first unpublished event of a reservation is handed out. Relays never wait for each other (SKIP LOCKED). Errors: 22023.';

CREATE FUNCTION inventory.relay_mark_published(relay text, ids bigint[])
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_mark_published';
COMMENT ON FUNCTION inventory.relay_mark_published(text, bigint[]) IS
	'Marks the events published; call only after the broker confirmed them (publisher confirms). Returns how many were unpublished. Errors: 22023.';

CREATE FUNCTION inventory.relay_mark_failed(relay text, ids bigint[], error text,
		max_attempts integer DEFAULT 10, backoff interval DEFAULT '1 second',
		max_backoff interval DEFAULT '5 minutes')
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_mark_failed';
COMMENT ON FUNCTION inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval) IS
	'Records a failed publish attempt: next attempt after backoff * 2^attempts (at most max_backoff) with jitter, or dead-letters the event at its max_attempts-th failure. Returns how many events it recorded. Errors: 22023.';

CREATE FUNCTION inventory.relay_release(relay text, ids bigint[])
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_release';
COMMENT ON FUNCTION inventory.relay_release(text, bigint[]) IS
	'Gives back the relay''s leases on unpublished events without counting an attempt (clean shutdown). Returns how many. Errors: 22023.';

/* ---------------------------------------------------------------------
 * Operator functions: dead letters and retention.
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.requeue_dead_letters(ids bigint[] DEFAULT NULL)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_requeue_dead_letters';
COMMENT ON FUNCTION inventory.requeue_dead_letters(bigint[]) IS
	'Makes dead-lettered events (NULL: all) live again with a fresh attempt count. Returns how many.';

CREATE FUNCTION inventory.discard_dead_letters(ids bigint[])
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_discard_dead_letters';
COMMENT ON FUNCTION inventory.discard_dead_letters(bigint[]) IS
	'Deletes dead-lettered events for good; later events of their reservations can then be published. Returns how many. Errors: 22023.';

CREATE FUNCTION inventory.purge_published(older_than interval DEFAULT '7 days',
		max_rows integer DEFAULT 10000)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_purge_published';
COMMENT ON FUNCTION inventory.purge_published(interval, integer) IS
	'Retention: deletes at most max_rows events published more than older_than ago, oldest first; never dead letters or unpublished events. The worker runs it with pg_inventory.outbox_retention. Returns how many. Errors: 22023.';

REVOKE ALL ON FUNCTION inventory.relay_claim(text, integer, interval),
	inventory.relay_mark_published(text, bigint[]),
	inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval),
	inventory.relay_release(text, bigint[]),
	inventory.requeue_dead_letters(bigint[]),
	inventory.discard_dead_letters(bigint[]),
	inventory.purge_published(interval, integer) FROM PUBLIC;

/* ---------------------------------------------------------------------
 * Metrics an operator (and the relay) reads.  Each figure comes from a
 * partial index, so the view stays cheap on a large outbox.  A view runs
 * with its owner's privileges: granting SELECT on it shows the figures,
 * not the events.
 * ------------------------------------------------------------------- */
CREATE VIEW inventory.outbox_metrics AS
SELECT
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL) AS unpublished,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.attempts > 0) AS retrying,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.dead_at IS NOT NULL) AS dead_lettered,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at >= pg_catalog.now() - interval '1 minute') AS published_last_minute,
	(SELECT o.created_at FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
	  ORDER BY o.id LIMIT 1) AS oldest_unpublished_at,
	COALESCE(EXTRACT(epoch FROM pg_catalog.now() - (SELECT o.created_at
	  FROM inventory.outbox o WHERE o.published_at IS NULL AND o.dead_at IS NULL
	  ORDER BY o.id LIMIT 1)), 0)::double precision AS lag_seconds;
COMMENT ON VIEW inventory.outbox_metrics IS
	'Relay health: live unpublished events, those retrying, dead letters, events published in the last minute, and the age of the oldest unpublished event (lag_seconds).';
COMMENT ON COLUMN inventory.outbox_metrics.unpublished IS 'Live events not yet published.';
COMMENT ON COLUMN inventory.outbox_metrics.retrying IS 'Live unpublished events with at least one failed attempt.';
COMMENT ON COLUMN inventory.outbox_metrics.dead_lettered IS 'Events dead-lettered after too many failed attempts.';
COMMENT ON COLUMN inventory.outbox_metrics.published_last_minute IS 'Events published in the last minute.';
COMMENT ON COLUMN inventory.outbox_metrics.oldest_unpublished_at IS 'created_at of the oldest live unpublished event.';
COMMENT ON COLUMN inventory.outbox_metrics.lag_seconds IS 'Age in seconds of the oldest live unpublished event (0 when none).';
REVOKE ALL ON inventory.outbox_metrics FROM PUBLIC;
DO $$
DECLARE
	dst regclass;
	a record;
	init aclitem[];
BEGIN
	FOREACH dst IN ARRAY ARRAY['inventory.outbox_metrics']::regclass[] LOOP
		SELECT p.initprivs INTO init FROM pg_catalog.pg_init_privs p
		 WHERE p.objoid = dst AND p.classoid = 'pg_catalog.pg_class'::regclass
		   AND p.objsubid = 0;
		FOR a IN SELECT x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) x
				  WHERE c.oid = 'inventory.outbox'::regclass AND x.grantee <> c.relowner
					 AND x.privilege_type IN ('SELECT')
		LOOP
			EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', a.privilege_type, dst,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		FOR a IN SELECT c.attname, x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_attribute c, pg_catalog.aclexplode(c.attacl) x
				  WHERE c.attrelid = 'inventory.outbox'::regclass AND c.attnum > 0
					AND NOT c.attisdropped
					AND x.privilege_type IN ('SELECT')
					AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute d
								 WHERE d.attrelid = dst AND d.attname = c.attname
								   AND d.attnum > 0 AND NOT d.attisdropped)
		LOOP
			EXECUTE pg_catalog.format('GRANT %s (%I) ON %s TO %s%s', a.privilege_type,
				a.attname, dst,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
		   AND objsubid > 0;
		-- the carried grants are the DBA's, not the extension's initial
		-- privileges, so that pg_dump writes them
		IF init IS NULL THEN
			DELETE FROM pg_catalog.pg_init_privs
			 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
			   AND objsubid = 0;
		ELSE
			UPDATE pg_catalog.pg_init_privs SET initprivs = init
			 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
			   AND objsubid = 0;
		END IF;
	END LOOP;
END
$$;
