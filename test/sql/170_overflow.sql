-- 170_overflow: arithmetic never overflows (README "restock", "adjust",
-- "check_invariants", "expire_due"; the 0.4 rule "Arithmetic never
-- overflows").
--
-- No call may bring a counter, the total available + reserved + consumed of
-- a SKU, or the ledger sum of a SKU outside the bigint range: it raises
-- 22003 and changes nothing.  And one tenant's bad data (made before 0.4,
-- or by a hand repair) never makes expire_due, check_invariants or a later
-- call fail for another tenant.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-11-01 00:00:00+00';
SELECT inventory.expire_due(100000) >= 0 AS drained_older_files;

CREATE TEMP VIEW t170 AS
SELECT s.tenant, s.sku, s.available, s.reserved, s.consumed,
	   (SELECT count(*) FROM inventory.stock_ledger g
		 WHERE g.tenant = s.tenant AND g.sku = s.sku) AS ledger_records,
	   (SELECT count(*) FROM inventory.outbox o WHERE o.tenant = s.tenant
		   AND o.event_type NOT IN ('stock.out_of_stock', 'stock.back_in_stock',
									'stock.low')) AS events,
	   -- 0.5: the stock level events, apart
	   (SELECT count(*) FROM inventory.outbox o WHERE o.tenant = s.tenant
		   AND o.event_type IN ('stock.out_of_stock', 'stock.back_in_stock',
								'stock.low')) AS level_events
  FROM inventory.stock s WHERE s.tenant LIKE 't170%';

-- the reported input: 10 units, all reserved, then a correction of 2^63-1
SELECT inventory.restock('t170', 'r', 'S', 10);
SELECT status FROM inventory.reserve('t170', 'a', 'S', 10);
SELECT inventory.adjust('t170', 'big', 'S', 9223372036854775807, 'correction', 'x');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM t170 ORDER BY sku;
-- and the calls it broke go on working
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't170%';
SELECT status, applied FROM inventory.cancel('t170', 'a');
SELECT inventory.adjust('t170', 'big', 'S', 9223372036854775807, 'correction', 'x');
\echo :LAST_ERROR_SQLSTATE

-- the largest change that fits is accepted: the total is exactly 2^63-1
SELECT inventory.adjust('t170', 'fits', 'S', 9223372036854775797, 'correction', 'to the limit');
SELECT * FROM t170 ORDER BY sku;
-- one more unit is refused, by restock and by adjust, whatever the counter
SELECT inventory.restock('t170', 'r2', 'S', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t170', 'one', 'S', 1, 'return', 'one too many');
\echo :LAST_ERROR_SQLSTATE
-- the total, not a counter: most units reserved, available small
SELECT status FROM inventory.reserve('t170', 'most', 'S', 2147483647);
SELECT inventory.restock('t170', 'r3', 'S', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM t170 ORDER BY sku;
-- taking units away is always possible, and holds move within the total
SELECT inventory.adjust('t170', 'less', 'S', -5, 'loss', 'broken');
SELECT status, applied FROM inventory.confirm('t170', 'most');
SELECT status, applied FROM inventory.compensate('t170', 'most', 'cannot ship');
SELECT * FROM t170 ORDER BY sku;
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't170%';

-- the same on a slotted SKU (the total is the sum over its slots)
SELECT inventory.restock('t170', 'rz', 'Z', 10);
SELECT inventory.set_stock_slots('t170', 'Z', 4);
SELECT inventory.adjust('t170', 'zbig', 'Z', 9223372036854775807, 'correction', 'x');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t170', 'zfits', 'Z', 9223372036854775797, 'correction', 'to the limit');
SELECT inventory.restock('t170', 'rz2', 'Z', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT slot, available FROM inventory.stock_slot WHERE tenant = 't170' AND sku = 'Z' ORDER BY slot;

/* ----------------------------------------------------------------------
 * Bad data of one tenant (a hand repair, or an older version): the
 * others' work goes on
 * ------------------------------------------------------------------- */
SELECT inventory.restock('t170-bad', 'r', 'B', 10);
SELECT status FROM inventory.reserve('t170-bad', 'due', 'B', 5, '1 minute');
SELECT inventory.restock('t170-ok', 'r', 'K', 10);
SELECT status FROM inventory.reserve('t170-ok', 'due', 'K', 5, '1 minute');
-- a superuser "repairs" B by hand: available near the top of bigint, so
-- that the 5 units of the due reservation no longer fit when released
UPDATE inventory.stock_slot SET available = 9223372036854775805
 WHERE tenant = 't170-bad' AND sku = 'B';
SET pg_inventory.frozen_now = '2026-11-01 00:02:00+00';
-- expire_due expires t170-ok's reservation and skips the bad one, saying so
SELECT inventory.expire_due(10);
SELECT tenant, request_key, state FROM inventory.reservation
 WHERE tenant IN ('t170-bad', 't170-ok') ORDER BY tenant;
SELECT tenant, available, reserved FROM inventory.stock
 WHERE tenant IN ('t170-bad', 't170-ok') ORDER BY tenant;
-- check_invariants reports the bad SKU instead of failing
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't170%' ORDER BY 1, 2, 3;
-- confirm of the bad reservation finds it due and tries to expire it: its
-- own error, for its own tenant only
SELECT status FROM inventory.confirm('t170-bad', 'due');
\echo :LAST_ERROR_SQLSTATE
-- repaired, the next pass expires it
UPDATE inventory.stock_slot SET available = 5
 WHERE tenant = 't170-bad' AND sku = 'B';
SELECT inventory.expire_due(10);
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't170%';

/* ----------------------------------------------------------------------
 * More bad data: a slotted SKU whose counters were changed by hand so that
 * it no longer holds what its reservations hold, and one whose slots add
 * up past bigint
 * ------------------------------------------------------------------- */
SET pg_inventory.frozen_now = '2026-11-01 01:00:00+00';
SELECT inventory.restock('t170-hand', 'r', 'H', 10);
SELECT inventory.set_stock_slots('t170-hand', 'H', 2);
SELECT status FROM inventory.reserve('t170-hand', 'due', 'H', 3, '1 minute');
SELECT status FROM inventory.reserve('t170-ok', 'due2', 'K', 3, '1 minute');
UPDATE inventory.stock_slot SET reserved = 0, available = available + 3
 WHERE tenant = 't170-hand' AND sku = 'H' AND reserved > 0;
SET pg_inventory.frozen_now = '2026-11-01 01:02:00+00';
-- the broken one is skipped (XX001, data_corrupted), the other expired
SELECT inventory.expire_due(10);
SELECT tenant, request_key, state FROM inventory.reservation
 WHERE (tenant, request_key) IN (('t170-hand', 'due'), ('t170-ok', 'due2')) ORDER BY 1;
SELECT status FROM inventory.cancel('t170-hand', 'due');
\echo :LAST_ERROR_SQLSTATE

SELECT inventory.restock('t170-big', 'r', 'G', 1);
SELECT inventory.set_stock_slots('t170-big', 'G', 2);
UPDATE inventory.stock_slot SET available = 9000000000000000000
 WHERE tenant = 't170-big' AND sku = 'G';
-- check_invariants still runs, and names both
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant IN ('t170-hand', 't170-big') ORDER BY 1, 2, 3;

/* ----------------------------------------------------------------------
 * Two broken rows among 40 due reservations: the failed batch is tried
 * again in parts (16, then single reservations where a part fails): the
 * 38 others expire once each, with their events, and the units they held
 * go back exactly once
 * ------------------------------------------------------------------- */
SET pg_inventory.frozen_now = '2026-11-01 02:00:00+00';
SELECT count(inventory.restock('t170-many', concat('r', g), concat('M', g), 10))
  FROM generate_series(1, 40) AS g;
SELECT count(*) FILTER (WHERE s = 'reserved') AS reserved
  FROM generate_series(1, 40) AS g,
	   LATERAL inventory.reserve('t170-many', concat('due', lpad(g::text, 2, '0')),
								 concat('M', g), 2, '1 minute') AS o(s);
-- M7 and M31 "repaired" by hand: their 2 held units no longer fit into
-- available when released (22003)
UPDATE inventory.stock_slot SET available = 9223372036854775806
 WHERE tenant = 't170-many' AND sku IN ('M7', 'M31');
SET pg_inventory.frozen_now = '2026-11-01 02:02:00+00';
-- one WARNING (it also counts t170-hand's reservation above, still broken)
SELECT inventory.expire_due(100);
SELECT state, count(*), string_agg(request_key, ',' ORDER BY request_key)
	   FILTER (WHERE state = 'pending') AS left_pending
  FROM inventory.reservation WHERE tenant = 't170-many' GROUP BY state ORDER BY state;
SELECT count(*) AS expired_events, count(DISTINCT reservation_id) AS reservations
  FROM inventory.outbox WHERE tenant = 't170-many' AND event_type = 'reservation.expired';
SELECT count(*) FILTER (WHERE available = 10 AND reserved = 0) AS released_once,
	   count(*) FILTER (WHERE reserved = 2) AS still_held
  FROM inventory.stock WHERE tenant = 't170-many';
SELECT count(*) AS other_findings FROM inventory.check_invariants()
 WHERE tenant = 't170-many' AND sku NOT IN ('M7', 'M31');
UPDATE inventory.stock_slot SET available = 8
 WHERE tenant = 't170-many' AND sku IN ('M7', 'M31');
SELECT inventory.expire_due(100);
SELECT count(*) AS findings FROM inventory.check_invariants() WHERE tenant = 't170-many';
SET pg_inventory.frozen_now = '2026-11-01 01:02:00+00';

/* ----------------------------------------------------------------------
 * The relay's backoff never overflows, whatever the attempt count
 * ------------------------------------------------------------------- */
SELECT count(*) > 0 AS claimed FROM inventory.relay_claim('r170', 10000, '1 hour');
UPDATE inventory.outbox SET attempts = 999 WHERE claimed_by = 'r170';
SELECT inventory.relay_mark_failed('r170', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 'r170'), 'NO_ROUTE', 1000, '1 day', '7 days') > 0 AS recorded;
SELECT bool_and(dead_at IS NOT NULL) AS all_dead_lettered
  FROM inventory.outbox WHERE claimed_by = 'r170';
UPDATE inventory.outbox SET attempts = 44, dead_at = NULL, claimed_until = '2100-01-01'
 WHERE claimed_by = 'r170';
SELECT inventory.relay_mark_failed('r170', ARRAY(SELECT id FROM inventory.outbox
	WHERE claimed_by = 'r170'), 'NO_ROUTE', 100) > 0 AS recorded;
SELECT bool_and(next_attempt_at - '2026-11-01 01:02:00+00' BETWEEN '2 minutes 30 seconds' AND '5 minutes')
	AS capped_at_max_backoff
  FROM inventory.outbox WHERE claimed_by = 'r170';
-- leave the outbox as the later files expect it
DELETE FROM inventory.outbox WHERE claimed_by = 'r170';
-- and repair the hand-broken SKUs: the next pass expires the reservation
UPDATE inventory.stock_slot SET available = available - 3, reserved = 3
 WHERE tenant = 't170-hand' AND sku = 'H' AND slot = 0;
UPDATE inventory.stock_slot SET available = CASE slot WHEN 0 THEN 1 ELSE 0 END
 WHERE tenant = 't170-big' AND sku = 'G';
SELECT inventory.expire_due(10);
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't170%';
