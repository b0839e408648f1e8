-- 300_outbox_low_water: the outbox's low-water mark (0.7; README "Long
-- transactions and the outbox").  Every event below the mark is published
-- or dead-lettered; relay_claim and outbox_metrics start there.  What
-- moves it (advance_outbox_low_water) and what holds it back (a running
-- transaction's marker), a requeue below it, a hand-made change below it
-- (from_start), privileges, and the claim's plan on an outbox whose
-- statistics say it is empty.  The races (a writer that commits after the
-- advance, a prepared writer, a requeue during an advance) are in the
-- isolation spec outbox_low_water.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-21 00:00:00+00';
-- the newest version (an earlier file tests an older step)
ALTER EXTENSION pg_inventory UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
-- start from an empty outbox: what earlier files left (dead letters, events
-- waiting behind them) published by hand, then purged
UPDATE inventory.outbox SET published_at = '2026-01-01', dead_at = NULL, claimed_until = NULL
 WHERE published_at IS NULL;
SELECT inventory.purge_published('0', 1000000) >= 0 AS purged;
SELECT count(*) AS events FROM inventory.outbox;
SELECT inventory.advance_outbox_low_water() > (SELECT coalesce(max(id), 0) FROM inventory.outbox)
	AS mark_past_every_event;

-- writes: the mark stays at or below the first unpublished event
SELECT inventory.restock('t300', 'r' || g, 'S' || g, 10) FROM generate_series(1, 3) g;
SELECT inventory.advance_outbox_low_water() = (SELECT min(id) FROM inventory.outbox)
	AS mark_at_first_event;
-- publish the first two: the mark moves to the third
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.relay_claim('t300', 2)));
SELECT inventory.advance_outbox_low_water() = (SELECT max(id) FROM inventory.outbox)
	AS mark_at_third_event;
-- outbox_metrics sees the third from the mark on
SELECT unpublished, lag_seconds >= 0 AS lag_known, oldest_unpublished_at IS NOT NULL AS oldest_known
  FROM inventory.outbox_metrics;

-- a transaction that writes events holds a marker (a share lock in
-- pg_locks) below its first event until it ends; an advance inside it
-- stays below its events
BEGIN;
SELECT inventory.restock('t300', 'r4', 'S4', 10);
SELECT count(*) AS markers, min(mode) AS mode FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND objsubid = 20553 AND pid = pg_backend_pid();
SELECT inventory.restock('t300', 'r5', 'S5', 10);
SELECT count(*) AS markers_after_two_writes FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND objsubid = 20553 AND pid = pg_backend_pid();
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.relay_claim('t300', 10)));
SELECT inventory.advance_outbox_low_water() <= (SELECT min(id) FROM inventory.outbox WHERE tenant = 't300'
		AND reservation_id IS NULL AND payload->>'request_key' = 'r4') AS mark_below_own_events;
COMMIT;
SELECT count(*) AS markers_after_commit FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND objsubid = 20553 AND pid = pg_backend_pid();
-- a subtransaction rolled back keeps the top transaction's marker
BEGIN;
SAVEPOINT a;
SELECT inventory.restock('t300', 'r6', 'S6', 10);
ROLLBACK TO SAVEPOINT a;
SELECT count(*) AS marker_kept FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND objsubid = 20553 AND pid = pg_backend_pid();
ROLLBACK;

-- REPEATABLE READ: the advance reads the latest committed data, not the
-- transaction's snapshot
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) >= 0 AS snapshot_taken FROM inventory.outbox;
SELECT inventory.advance_outbox_low_water() = (SELECT last_value FROM inventory.outbox_low_water)
	AS advanced;
COMMIT;

-- a dead letter below the mark: requeued, the mark goes down to it
SELECT inventory.restock('t300', 'r7', 'S7', 10);
SELECT inventory.relay_mark_failed('t300', ARRAY(SELECT id FROM inventory.relay_claim('t300', 10)),
	'NO_ROUTE', 1) AS dead_lettered;
SELECT inventory.advance_outbox_low_water() > (SELECT max(id) FROM inventory.outbox)
	AS mark_past_the_dead_letter;
SELECT inventory.requeue_dead_letters(NULL, 't300') AS requeued;
SELECT (SELECT last_value FROM inventory.outbox_low_water) = (SELECT max(id) FROM inventory.outbox)
	AS mark_at_requeued;
SELECT event_type FROM inventory.relay_claim('t300', 10);
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 't300' AND published_at IS NULL));

-- a reservation's later event waits behind its dead-lettered first one:
-- the mark passes both; discarding the dead letter lowers the mark to it,
-- and the later event goes out
SELECT status FROM inventory.reserve('t300', 'd1', 'S1', 1);
SELECT status FROM inventory.confirm('t300', 'd1');
SELECT inventory.relay_mark_failed('t300', ARRAY(SELECT id FROM inventory.relay_claim('t300', 10)),
	'NO_ROUTE', 1) AS dead_lettered;
SELECT inventory.advance_outbox_low_water() > (SELECT max(id) FROM inventory.outbox)
	AS mark_past_the_waiting_event;
SELECT count(*) AS claimed_while_waiting FROM inventory.relay_claim('t300', 10);
SELECT inventory.discard_dead_letters(ARRAY(SELECT id FROM inventory.outbox WHERE dead_at IS NOT NULL),
	't300: the consumer knows it') AS discarded;
SELECT (SELECT last_value FROM inventory.outbox_low_water) < (SELECT max(id) FROM inventory.outbox)
	AS mark_lowered;
SELECT event_type FROM inventory.relay_claim('t300', 10);
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 't300' AND published_at IS NULL));

-- a change by hand below the mark (here: an event made unpublished
-- again): relays do not see it until advance_outbox_low_water(true)
-- recomputes the mark from the start (the worker does every 60th pass)
SELECT inventory.advance_outbox_low_water() > (SELECT max(id) FROM inventory.outbox)
	AS mark_past_every_event;
UPDATE inventory.outbox SET published_at = NULL
 WHERE id = (SELECT min(id) FROM inventory.outbox WHERE tenant = 't300');
SELECT count(*) AS claimed_before FROM inventory.relay_claim('t300', 10);
-- outbox_metrics says so: below_low_water
SELECT unpublished, oldest_unpublished_at IS NULL AS oldest_unknown, below_low_water
  FROM inventory.outbox_metrics;
SELECT inventory.advance_outbox_low_water(true) = (SELECT min(id) FROM inventory.outbox WHERE tenant = 't300')
	AS mark_recomputed;
SELECT below_low_water FROM inventory.outbox_metrics;
SELECT count(*) AS claimed_after FROM inventory.relay_claim('t300', 10);
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 't300' AND published_at IS NULL));

-- an advance in a transaction that has written (here: marked events
-- published) does not raise the mark: a rollback would leave those events
-- unpublished below it
SELECT inventory.restock('t300', 'r8', 'S8', 10);
SELECT inventory.advance_outbox_low_water() AS mark_before \gset
BEGIN;
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.relay_claim('t300', 10)));
SELECT inventory.advance_outbox_low_water() = :mark_before AS not_raised_in_a_writing_transaction;
ROLLBACK;
SELECT count(*) AS claimable_after_rollback FROM inventory.relay_claim('t300', 10);
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 't300' AND published_at IS NULL));

-- outbox_id_seq must hand out ids one at a time: with CACHE above 1 a
-- backend holds ids below the last one drawn, so the mark is not raised
-- (WARNING 55000)
ALTER SEQUENCE inventory.outbox_id_seq CACHE 50;
SELECT inventory.advance_outbox_low_water() = :mark_before AS not_raised_with_cache;
ALTER SEQUENCE inventory.outbox_id_seq CACHE 1;
SELECT inventory.advance_outbox_low_water() > (SELECT max(id) FROM inventory.outbox)
	AS raised_with_cache_1;

-- the id sequence set back (RESTART, setval): the next advance looks from
-- the start, so the events drawn from the old range again are seen
SELECT last_value AS head_before FROM inventory.outbox_id_seq \gset
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.relay_claim('t300', 1000)));
DELETE FROM inventory.outbox WHERE id > :head_before - 3;
SELECT setval('inventory.outbox_id_seq', :head_before - 3) > 0 AS set_back;
SELECT inventory.restock('t300', 'r9', 'S9', 10);
SELECT inventory.advance_outbox_low_water() = :head_before - 2 AS mark_at_the_new_event;
SELECT event_type FROM inventory.relay_claim('t300', 10);
SELECT setval('inventory.outbox_id_seq', :head_before) > 0 AS set_forth;

-- a requeue that changed nothing gives the low-water lock back at once
BEGIN;
SELECT inventory.requeue_dead_letters(ARRAY[-1]::bigint[], 't300') AS requeued;
SELECT count(*) AS low_water_locks FROM pg_catalog.pg_locks
 WHERE locktype = 'advisory' AND objsubid = 20554 AND pid = pg_backend_pid();
ROLLBACK;

-- privileges: PUBLIC may call neither function nor read the mark
CREATE ROLE regress_t300;
GRANT USAGE ON SCHEMA inventory TO regress_t300;
SET ROLE regress_t300;
SELECT inventory.advance_outbox_low_water();
SELECT inventory._next_event_id('inventory.outbox_id_seq');
SELECT last_value FROM inventory.outbox_low_water;
RESET ROLE;

-- the claim's plan keeps to the indexes when the statistics say the
-- outbox is empty: a new backend plans its claim on an emptied, analyzed
-- outbox (six claims: the kept generic plan), then the outbox grows
-- without an ANALYZE; the claims that follow read it by index, never
-- whole (no sequential scan of inventory.outbox in the transaction)
SELECT inventory.relay_mark_published('t300', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 't300' AND published_at IS NULL)) >= 0 AS published;
SELECT inventory.purge_published('0', 1000000) >= 0 AS purged;
ANALYZE inventory.outbox;
\c
SET pg_inventory.frozen_now = '2026-07-21 00:00:00+00';
SELECT sum((SELECT count(*) FROM inventory.relay_claim('t300-plan', 10 + 0 * g))) AS claimed
  FROM generate_series(1, 6) g;
SELECT count(inventory.restock('t300', 'p' || g, 'P' || g, 10)) AS restocked
  FROM generate_series(1, 400) g;
BEGIN;
SELECT inventory.relay_mark_published('t300-plan',
	ARRAY(SELECT id FROM inventory.relay_claim('t300-plan', 100))) AS published;
SELECT pg_stat_get_xact_numscans('inventory.outbox'::regclass) AS outbox_seq_scans;
COMMIT;
SELECT inventory.relay_mark_published('t300-plan', ARRAY(SELECT id FROM inventory.relay_claim('t300-plan', 1000)))
	AS published;

DROP OWNED BY regress_t300;
DROP ROLE regress_t300;
