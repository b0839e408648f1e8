-- 140_outbox_relay: the relay functions of 0.2 (leases, per-reservation
-- order, backoff, dead letters, requeue, discard, release, retention).
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-04-01 10:00:00+00';
-- start from an empty outbox: earlier files left events
SELECT inventory.purge_published('0 seconds', 1000000) >= 0 AS purged;
UPDATE inventory.outbox SET published_at = '2000-01-01' WHERE published_at IS NULL;
UPDATE inventory.outbox SET dead_at = NULL WHERE dead_at IS NOT NULL;
SELECT inventory.purge_published('0 seconds', 1000000) >= 0 AS purged;
SELECT count(*) AS events_left FROM inventory.outbox;

SELECT inventory.restock('relay', 'rc-1', 'A', 10);
SELECT status FROM inventory.reserve('relay', 'o1', 'A', 1);
SELECT status FROM inventory.confirm('relay', 'o1');
SELECT status FROM inventory.reserve('relay', 'o2', 'A', 2);
SELECT status FROM inventory.cancel('relay', 'o2');
SELECT id AS first_id FROM inventory.outbox ORDER BY id LIMIT 1 \gset

-- only the first unpublished event of each reservation is handed out, in id order
SELECT c.id - :first_id AS n, c.event_type, c.attempts, c.payload->>'request_key' AS key
FROM inventory.relay_claim('relay-1', 10) c ORDER BY c.id;
-- leased: a second relay gets nothing
SELECT count(*) AS second_relay_claims FROM inventory.relay_claim('relay-2', 10);
-- publish the restock and o1's reserve; o2's reserve fails once
SELECT inventory.relay_mark_published('relay-1', ARRAY[:first_id, :first_id + 1]::bigint[]) AS published;
SELECT inventory.relay_mark_failed('relay-1', ARRAY[:first_id + 3]::bigint[], 'NO_ROUTE', 3, '10 seconds', '1 minute') AS failed;
SELECT id - :first_id AS n, attempts, last_error,
       next_attempt_at BETWEEN '2026-04-01 10:00:05+00' AND '2026-04-01 10:00:10+00' AS backoff_with_jitter,
       dead_at IS NULL AS live, claimed_until IS NULL AS lease_given_back
FROM inventory.outbox WHERE id = :first_id + 3;
-- the next claim: o1's confirm (its reserve is published); o2's events wait for the backoff
SELECT c.id - :first_id AS n, c.event_type FROM inventory.relay_claim('relay-2', 10) c ORDER BY c.id;
SELECT inventory.relay_mark_published('relay-2', ARRAY[:first_id + 2]::bigint[]) AS published;
-- after the backoff: o2's reserve again; its cancel still waits behind it
SET pg_inventory.frozen_now = '2026-04-01 10:00:11+00';
SELECT c.id - :first_id AS n, c.event_type, c.attempts FROM inventory.relay_claim('relay-2', 10) c ORDER BY c.id;
-- fails twice more: dead-lettered at the third failure, with no next attempt
SELECT inventory.relay_mark_failed('relay-2', ARRAY[:first_id + 3]::bigint[], 'NO_ROUTE', 3, '1 second', '1 second') AS failed;
SET pg_inventory.frozen_now = '2026-04-01 10:01:00+00';
SELECT count(*) AS claimed FROM inventory.relay_claim('relay-2', 10);
SELECT inventory.relay_mark_failed('relay-2', ARRAY[:first_id + 3]::bigint[], 'NO_ROUTE', 3, '1 second', '1 second') AS failed;
SELECT id - :first_id AS n, attempts, dead_at = '2026-04-01 10:01:00+00' AS dead, next_attempt_at IS NULL AS no_next
FROM inventory.outbox WHERE id = :first_id + 3;
-- a dead letter blocks the later events of its reservation
SET pg_inventory.frozen_now = '2026-04-01 11:00:00+00';
SELECT count(*) AS claimed_while_dead FROM inventory.relay_claim('relay-3', 10);
SELECT unpublished, retrying, dead_lettered FROM inventory.outbox_metrics;
-- failing a dead letter again changes nothing
SELECT inventory.relay_mark_failed('relay-3', ARRAY[:first_id + 3]::bigint[], 'x') AS failed;
-- the operator requeues it: fresh attempts, claimable now
SELECT inventory.requeue_dead_letters(ARRAY[:first_id + 3]::bigint[]) AS requeued;
SELECT inventory.requeue_dead_letters() AS requeued_again;
SELECT c.id - :first_id AS n, c.event_type, c.attempts FROM inventory.relay_claim('relay-3', 10) c;
-- a clean shutdown gives the lease back; only the relay's own leases
SELECT inventory.relay_release('someone-else', ARRAY[:first_id + 3]::bigint[]) AS released_by_other;
SELECT inventory.relay_release('relay-3', ARRAY[:first_id + 3]::bigint[]) AS released;
SELECT c.id - :first_id AS n FROM inventory.relay_claim('relay-4', 10) c;
SELECT inventory.relay_mark_published('relay-4', ARRAY[:first_id + 3]::bigint[]) AS published;
-- marking twice counts once
SELECT inventory.relay_mark_published('relay-4', ARRAY[:first_id + 3]::bigint[]) AS published_again;
SELECT c.id - :first_id AS n, c.event_type FROM inventory.relay_claim('relay-4', 10) c;
-- a lease that ran out: another relay takes the event
SET pg_inventory.frozen_now = '2026-04-01 11:01:00+00';
SELECT c.id - :first_id AS n FROM inventory.relay_claim('relay-5', 10) c;

-- discard: only dead letters are deleted
SELECT inventory.restock('relay', 'rc-2', 'B', 1) AS b_available;
SELECT id AS b_id FROM inventory.outbox WHERE payload->>'request_key' = 'rc-2' \gset
SELECT inventory.discard_dead_letters(ARRAY[:b_id]::bigint[], 'not needed') AS discarded_live;
SELECT count(*) FROM inventory.relay_claim('relay-6', 10);
SELECT inventory.relay_mark_failed('relay-6', ARRAY[:b_id]::bigint[], 'gone', 1) AS failed;
SELECT inventory.discard_dead_letters(ARRAY[:b_id]::bigint[], 'not needed') AS discarded;
SELECT count(*) AS b_events FROM inventory.outbox WHERE id = :b_id;

-- retention: published events older than the retention go, others stay
SELECT inventory.relay_mark_published('relay-5', ARRAY(SELECT id FROM inventory.outbox WHERE published_at IS NULL)) >= 1 AS published;
SET pg_inventory.frozen_now = '2026-04-02 11:01:00+00';
SELECT inventory.purge_published('2 days') AS purged_none;
-- 0.8: a whole ring at a time (README "Outbox retention: rings"); max_rows
-- bounds the unpublished events moved out of it (none here)
SELECT inventory.purge_published('1 hour', 2) AS purged_ring;
SELECT inventory.purge_published('1 hour') AS purged_rest;
SELECT count(*) AS events_left FROM inventory.outbox;
SELECT * FROM inventory.check_invariants();

-- argument errors (22023)
SELECT * FROM inventory.relay_claim(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.relay_claim('r', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.relay_claim('r', 10001);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.relay_claim('r', 10, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.relay_claim('r', 10, '2 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.relay_mark_published('r', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.relay_mark_failed('r', '{1}', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.relay_mark_failed('r', '{1}', 'e', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.relay_mark_failed('r', '{1}', 'e', 3, '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.discard_dead_letters(NULL, 'ids missing');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.purge_published('-1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.purge_published('1 day', 0);
\echo :LAST_ERROR_SQLSTATE
-- a long error is kept to its first 1000 characters
SELECT inventory.restock('relay', 'rc-3', 'C', 1) AS c_available;
SELECT count(*) FROM inventory.relay_claim('relay-7', 10);
SELECT inventory.relay_mark_failed('relay-7', ARRAY(SELECT id FROM inventory.outbox WHERE published_at IS NULL), repeat('é', 5000)) AS failed;
SELECT char_length(last_error) FROM inventory.outbox WHERE published_at IS NULL;
RESET pg_inventory.frozen_now;
