-- include/drain.sql: expire whatever earlier test files left pending, due
-- or not (expire_due acts on every tenant), with the clock far ahead for
-- this transaction only, and check that nothing is left due; the file's
-- own clock is as it was.
BEGIN;
SET LOCAL pg_inventory.frozen_now = '2100-01-01 00:00:00+00';
SELECT inventory.expire_due(100000) >= 0 AS drained;
SELECT inventory.expire_due() AS still_due;
COMMIT;
