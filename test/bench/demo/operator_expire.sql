-- test/bench/demo/operator_expire.sql: the operator's scheduled sweep,
-- alongside the background worker: expire pending reservations that are
-- due (at most 500 per call; rows other sessions hold are skipped).
-- Runs as role inventory_operator.
SELECT inventory.expire_due(500);
