-- test/bench/scripts/claim_probe.sql: what one claim of the relay costs,
-- sampled (issue #12, goal 4).  Claims at most one event as relay
-- bench-probe and gives it back at once (relay_release: no attempt is
-- counted, the real relay claims it next), so the probe changes nothing but
-- adds one claim per call.  pgbench's per-transaction log (-l) has the
-- latency of each pair.  Up to 0.6 the claim walked inventory.outbox's
-- index of unpublished events from its start, past every entry that a
-- snapshot still held open keeps from being cleaned up; from 0.7 it starts
-- at the outbox's low-water mark.
SELECT coalesce(array_agg(id), '{}') AS ids
  FROM inventory.relay_claim('bench-probe', 1, interval '1 second') \gset
SELECT inventory.relay_release('bench-probe', :ids::bigint[]);
