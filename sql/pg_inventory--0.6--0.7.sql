/*
 * sql/pg_inventory--0.6--0.7.sql
 *
 * Upgrade step 0.6 -> 0.7: an outbox whose relays do not slow down under a
 * long transaction elsewhere (issue #12, goal 4; README "Long transactions
 * and the outbox").
 *	- the sequence inventory.outbox_low_water holds the outbox's low-water
 *	  mark: every event below it is published or dead-lettered, so a claim
 *	  (relay_claim) and outbox_metrics start their index scans there
 *	  instead of stepping over every dead index entry a held snapshot keeps;
 *	- inventory._next_event_id(outbox_id_seq), the new default of outbox.id, lets a
 *	  transaction that writes events hold a marker (a share lock, shown in
 *	  pg_locks) until it ends, so the mark never passes an event that may
 *	  still commit;
 *	- inventory.advance_outbox_low_water moves the mark (the expiry worker
 *	  calls it every pass);
 *	- outbox_metrics reads the oldest unpublished event from the mark on.
 * No row changes; the mark starts at 1 (the whole outbox) and the first
 * advance_outbox_low_water moves it.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.7'" to load this file. \quit

DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.7'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- inventory.reservation first, which every call locks (ACCESS SHARE)
-- before anything else: the calls in flight end, those that start wait
LOCK TABLE inventory.reservation, inventory.outbox IN ACCESS EXCLUSIVE MODE;

/* ---------------------------------------------------------------------
 * The outbox's low-water mark (0.7; README "Long transactions and the
 * outbox").  Each claim and mark rewrites an event row, so the partial
 * index outbox_unpublished keeps an entry for every event published since
 * the oldest snapshot still open; a claim that scanned from the lowest id
 * stepped over all of them.  Every event below the mark is published or
 * dead-lettered: claims start at the mark.
 * ------------------------------------------------------------------- */
CREATE SEQUENCE inventory.outbox_low_water AS bigint MINVALUE 1 START 1 NO CYCLE;
COMMENT ON SEQUENCE inventory.outbox_low_water IS
	'The outbox''s low-water mark (its last_value): every event with a lower id is published, dead-lettered or waits behind a dead letter of its reservation, so relay_claim and outbox_metrics scan from it. Set by advance_outbox_low_water (the expiry worker, every pass; it may also lower it) and lowered by requeue_dead_letters and discard_dead_letters; never set it by hand (advance_outbox_low_water(true) recomputes it). A sequence, not a row: reading and moving it leaves no dead row behind. Not dumped by pg_dump: a restored database starts it at 1.';

CREATE FUNCTION inventory._next_event_id(sequence regclass)
	RETURNS bigint
	LANGUAGE C VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'inventory_next_event_id';
COMMENT ON FUNCTION inventory._next_event_id(regclass) IS
	'Default of outbox.id (0.7), called with inventory.outbox_id_seq (a constant of the default: no lookup per row, and the sequence cannot be dropped while the default uses it): the next value of sequence. At the first event of a transaction it first reads the last id drawn from that sequence (its marker) and holds a share lock on the marker until the transaction (or the prepared transaction) ends: pg_locks shows it as an advisory lock with objsubid 20553, classid and objid the marker''s high and low 32 bits. advance_outbox_low_water never moves the mark past a held marker, so no event that may still commit falls below it. Internal: runs as the extension''s owner inside the write functions. Errors: those of nextval.';
ALTER TABLE inventory.outbox ALTER COLUMN id
	SET DEFAULT inventory._next_event_id('inventory.outbox_id_seq'::regclass);

CREATE FUNCTION inventory.advance_outbox_low_water(from_start boolean DEFAULT false)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_advance_outbox_low_water';
COMMENT ON FUNCTION inventory.advance_outbox_low_water(boolean) IS
	'Sets the outbox''s low-water mark (sequence inventory.outbox_low_water) to the lowest of: the first live unpublished event at or above the mark that does not wait behind a dead letter of its reservation, the lowest marker a running or prepared transaction holds (_next_event_id), and the last id drawn plus one; this can lower it. from_start: look from id 1 instead of from the mark (after outbox rows were changed by hand; the worker does it every 60th pass). Reads the latest committed data, whatever the isolation level. While another advance, a requeue_dead_letters or a discard_dead_letters holds the low-water lock (advisory, objsubid 20554), does nothing. Returns the mark. The expiry worker calls it every pass; without the worker, schedule it as often as you can. Errors: none of its own.';

-- the oldest unpublished event is looked for from the mark on
CREATE OR REPLACE VIEW inventory.outbox_metrics AS
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
		AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w)
	  ORDER BY o.id LIMIT 1) AS oldest_unpublished_at,
	COALESCE(EXTRACT(epoch FROM pg_catalog.now() - (SELECT o.created_at
	  FROM inventory.outbox o WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w)
	  ORDER BY o.id LIMIT 1)), 0)::double precision AS lag_seconds,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id < (SELECT w.last_value FROM inventory.outbox_low_water w)
		AND (o.reservation_id IS NULL OR NOT EXISTS (SELECT 1 FROM inventory.outbox p
			  WHERE p.reservation_id = o.reservation_id
				AND (p.reservation_id, p.id) < (o.reservation_id, o.id)
				AND p.dead_at IS NOT NULL))) AS below_low_water;

-- the worker's states advancing and slotting (0.7)
COMMENT ON FUNCTION inventory.worker_status() IS
	'One row: the status of the expiry worker''s launcher and of the expiry worker, kept in shared memory (view inventory.worker_status). enabled is false when the server does not preload pg_inventory with a pg_inventory.worker_database (then the states are stopped, the counts 0, the rest NULL). launcher_state: stopped, checking, no_database, worker_running, no_extension or retry; worker_state: stopped, starting, idle, expiring, purging (purge_published), purging_history (purge_history), advancing (advance_outbox_low_water, 0.7) or slotting (splitting or merging a SKU''s slots, 0.7); worker_exit (why the last worker stopped): NULL, no_extension, extension_dropped or terminated. Counts run from the server''s start; pids and times are NULL when there is none. Errors: none.';
COMMENT ON COLUMN inventory.worker_status.worker_state IS 'stopped, starting, idle (between passes), expiring (in expire_due), purging (in purge_published), purging_history (in purge_history), advancing (in advance_outbox_low_water, 0.7) or slotting (splitting or merging a SKU''s slots, 0.7).';

-- the comments that now name the mark
COMMENT ON COLUMN inventory.outbox_metrics.below_low_water IS 'Live unpublished events below the low-water mark that do not wait behind a dead letter: relays do not see them (changed by hand, 0.7); advance_outbox_low_water(true) brings them back. Alert when above 0.';
COMMENT ON FUNCTION inventory.discard_dead_letters(bigint[], text) IS
	'Deletes dead-lettered events for good; later events of their reservations can then be published. reason (1 to 1000 characters) is required: the events deleted (ids, types, tenants, payloads) and the reason are kept in inventory.operator_audit. 0.7: it holds the low-water lock (advisory, objsubid 20554) until its transaction ends, and lowers the outbox''s low-water mark to the lowest id deleted (the later events of their reservations are above it). Returns how many. Errors: 22023 (ids or an element of it NULL; reason NULL, empty or over 1000 characters).';
COMMENT ON COLUMN inventory.outbox.id IS 'Commit-order-compatible sequence within one reservation; drawn by inventory._next_event_id(regclass) (0.7), which holds the writing transaction''s marker for the low-water mark.';
COMMENT ON VIEW inventory.outbox_metrics IS
	'Relay health: live unpublished events, those retrying, dead letters, events published in the last minute, and the age of the oldest unpublished event (lag_seconds), looked for from the low-water mark on (0.7), and the live events below the mark a relay could publish but does not see (below_low_water, 0.7).';
COMMENT ON FUNCTION inventory.relay_claim(text, integer, interval) IS
	'Leases up to batch_size (1 to 10000) committed, unpublished, live events that are due, in id order, to relay (a name of 1 to 64 characters) for lease (above 0, at most 1 hour); only the first unpublished event of a reservation is handed out. Relays never wait for each other (SKIP LOCKED). Looks from the outbox''s low-water mark on (0.7, sequence inventory.outbox_low_water). Errors: 22023.';
COMMENT ON FUNCTION inventory.requeue_dead_letters(bigint[], text) IS
	'Makes dead-lettered events (ids; NULL: all) live again with a fresh attempt count. When it requeues any, it writes a row of inventory.operator_audit with their ids and reason (at most 1000 characters, or NULL). 0.7: it holds the low-water lock (advisory, objsubid 20554) until its transaction ends, and lowers the outbox''s low-water mark to the lowest id requeued. Returns how many. Errors: 22023 (an element of ids NULL, a reason over 1000 characters).';

REVOKE ALL ON SEQUENCE inventory.outbox_low_water FROM PUBLIC;
REVOKE ALL ON FUNCTION inventory._next_event_id(regclass),
	inventory.advance_outbox_low_water(boolean) FROM PUBLIC;
