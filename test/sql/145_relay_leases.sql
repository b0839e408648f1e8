-- 145_relay_leases: a relay holds the lease of an event from its claim
-- until it marks the event published or failed or releases it, or until
-- another relay claims it after the lease ran out (README
-- "relay_mark_published", "relay_mark_failed", "relay_release"; the 0.4
-- rule "Leases are owned").  A repeated or late completion changes and
-- counts nothing, so a relay that writes its marks again after a commit in
-- doubt counts no extra attempt.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-04-02 10:00:00+00';
-- only this file's events are unpublished
UPDATE inventory.outbox SET published_at = '2000-01-01' WHERE published_at IS NULL;
SELECT inventory.restock('t145', 'r1', 'A', 1);
SELECT inventory.restock('t145', 'r2', 'A', 1);
CREATE TEMP VIEW t145 AS
SELECT o.id, o.attempts, o.claimed_by, o.claimed_until IS NOT NULL AS leased,
	   o.published_at IS NOT NULL AS published, o.dead_at IS NOT NULL AS dead
  FROM inventory.outbox o WHERE o.tenant = 't145';
CREATE TEMP TABLE ids AS SELECT array_agg(id ORDER BY id) AS ids FROM inventory.outbox WHERE tenant = 't145';

SELECT count(*) FROM inventory.relay_claim('relay-a', 10, '1 minute');
-- a failure counts once, however often it is written
SELECT inventory.relay_mark_failed('relay-a', (SELECT ids FROM ids), 'nack', 3) AS first;
SELECT inventory.relay_mark_failed('relay-a', (SELECT ids FROM ids), 'nack', 3) AS again;
SELECT attempts, claimed_by, leased, dead FROM t145 ORDER BY id;
-- a released lease takes no mark
SET pg_inventory.frozen_now = '2026-04-02 10:10:00+00';
SELECT count(*) FROM inventory.relay_claim('relay-a', 10, '1 minute');
SELECT inventory.relay_release('relay-a', (SELECT ids FROM ids)) AS released;
SELECT inventory.relay_mark_published('relay-a', (SELECT ids FROM ids)) AS after_release;
SELECT inventory.relay_mark_failed('relay-a', (SELECT ids FROM ids), 'nack', 1) AS after_release;
SELECT attempts, leased, published, dead FROM t145 ORDER BY id;
-- a lease that ran out is the relay's until another claims the event
SELECT count(*) FROM inventory.relay_claim('relay-a', 10, '1 minute');
SET pg_inventory.frozen_now = '2026-04-02 10:12:00+00';
SELECT inventory.relay_mark_published('relay-a', ARRAY[(SELECT ids[1] FROM ids)]) AS ran_out_unclaimed;
SELECT count(*) FROM inventory.relay_claim('relay-b', 10, '1 minute');
SELECT inventory.relay_mark_published('relay-a', (SELECT ids FROM ids)) AS claimed_by_b;
SELECT inventory.relay_mark_published('relay-b', (SELECT ids FROM ids)) AS by_b;
SELECT claimed_by, published, dead FROM t145 ORDER BY id;
