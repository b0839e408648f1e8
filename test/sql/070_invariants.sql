-- 070_invariants: check_invariants() finds nothing after a mixed workload,
-- and reports each kind of broken count (made deliberately, as superuser,
-- writing the tables behind the functions' back: each SKU here has one slot
-- at one location, and the view inventory.stock refuses hand changes) by
-- tenant, SKU and check until it is repaired (README "Words",
-- "check_invariants").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-06-01 00:00:00+00';

-- check_invariants() for this file's tenants (t070...), with a flag for a
-- non-empty detail instead of the text
CREATE TEMP VIEW broken AS
SELECT tenant, sku, check_name, coalesce(detail, '') <> '' AS has_detail
  FROM inventory.check_invariants() WHERE tenant LIKE 't070%';
CREATE TEMP VIEW stk AS
SELECT tenant, sku, available, reserved, consumed
  FROM inventory.stock WHERE tenant LIKE 't070%';

-- a mixed workload on two tenants with the same SKU names
SELECT inventory.restock('t070', 'rcpt-a', 'A', 10);
SELECT inventory.restock('t070', 'rcpt-b', 'B', 5);
SELECT inventory.restock('t070-b', 'rcpt-a', 'A', 7);
SELECT status FROM inventory.reserve('t070', 'r1', 'A', 3, '1 hour');
SELECT status FROM inventory.reserve('t070', 'r2', 'A', 2, '1 hour');
SELECT status FROM inventory.reserve_lines('t070', 'r3',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 2}]', '1 hour');
SELECT status FROM inventory.reserve('t070', 'r4', 'B', 1, '1 minute');
SELECT status FROM inventory.reserve('t070', 'r5', 'B', 50);
SELECT status FROM inventory.reserve('t070-b', 'r1', 'A', 4, '1 hour');
SELECT status FROM inventory.confirm('t070', 'r1');
SELECT status FROM inventory.confirm('t070', 'r3');
SELECT status FROM inventory.cancel('t070', 'r2', 'changed mind');
SELECT status FROM inventory.compensate('t070', 'r3', 'fulfillment failed');
SELECT inventory.adjust('t070', 'adj-1', 'A', 2, 'return', 'returned');
SELECT inventory.adjust('t070', 'adj-2', 'B', -1, 'loss', 'broken');
SELECT inventory.adjust('t070', 'adj-3', 'A', -1, 'correction', 'counted');
SET pg_inventory.frozen_now = '2026-06-01 00:01:00+00';
SELECT status FROM inventory.confirm('t070', 'r4');
SELECT status FROM inventory.reserve('t070', 'r6', 'A', 1, '1 hour');
SELECT * FROM stk ORDER BY tenant, sku;

-- healthy: no rows
SELECT * FROM broken ORDER BY 1, 2, 3;

-- 1. one unit too many in available: the counts no longer add up to the
-- ledger, for t070's A only
UPDATE inventory.stock_slot SET available = available + 1 WHERE tenant = 't070' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;
UPDATE inventory.stock_slot SET available = available - 1 WHERE tenant = 't070' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;

-- 2. a stray ledger row: the ledger nets more than the counts
INSERT INTO inventory.stock_ledger
       (tenant, sku, location, request_key, kind, delta, reason, available_after, actor, created_at)
VALUES ('t070', 'B', 'default', 'stray', 'receipt', 3, 'not through restock', 0, current_user,
        '2026-06-01 00:02:00+00');
SELECT * FROM broken ORDER BY 1, 2, 3;
DELETE FROM inventory.stock_ledger WHERE tenant = 't070' AND request_key = 'stray';
SELECT * FROM broken ORDER BY 1, 2, 3;

-- 3. a unit moved from available to reserved: the sum still matches the
-- ledger, but reserved no longer matches the pending reservations
UPDATE inventory.stock_slot SET available = available - 1, reserved = reserved + 1
 WHERE tenant = 't070' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;
UPDATE inventory.stock_slot SET available = available + 1, reserved = reserved - 1
 WHERE tenant = 't070' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;

-- 4. a unit moved from available to consumed: consumed no longer matches
-- the confirmed reservations
UPDATE inventory.stock_slot SET available = available - 1, consumed = consumed + 1
 WHERE tenant = 't070-b' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;
UPDATE inventory.stock_slot SET available = available + 1, consumed = consumed - 1
 WHERE tenant = 't070-b' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;

-- 5. a reservation's units changed behind its back: its line says 3 more
-- than the stock holds as consumed
UPDATE inventory.reservation_line SET quantity = quantity + 3
 WHERE reservation_id = (SELECT id FROM inventory.reservation
                          WHERE tenant = 't070' AND request_key = 'r1');
SELECT * FROM broken ORDER BY 1, 2, 3;
UPDATE inventory.reservation_line SET quantity = quantity - 3
 WHERE reservation_id = (SELECT id FROM inventory.reservation
                          WHERE tenant = 't070' AND request_key = 'r1');
SELECT * FROM broken ORDER BY 1, 2, 3;

-- 6. a lost transition-log row: the log no longer matches the version
CREATE TEMP TABLE lost AS
SELECT t.* FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant = 't070' AND r.request_key = 'r2' AND t.version = 2;
SELECT count(*) AS saved FROM lost;
DELETE FROM inventory.reservation_transition t USING lost
 WHERE t.id = lost.id;
SELECT tenant, sku IS NULL AS no_sku, check_name, has_detail FROM broken ORDER BY 1, 2, 3;
INSERT INTO inventory.reservation_transition SELECT * FROM lost;
SELECT * FROM broken ORDER BY 1, 2, 3;

-- two faults at once are both reported
UPDATE inventory.stock_slot SET available = available + 2 WHERE tenant = 't070' AND sku = 'B';
UPDATE inventory.stock_slot SET available = available + 5 WHERE tenant = 't070-b' AND sku = 'A';
SELECT * FROM broken ORDER BY 1, 2, 3;
UPDATE inventory.stock_slot SET available = available - 2 WHERE tenant = 't070' AND sku = 'B';
UPDATE inventory.stock_slot SET available = available - 5 WHERE tenant = 't070-b' AND sku = 'A';

-- repaired: healthy again, the counts as before
SELECT * FROM broken ORDER BY 1, 2, 3;
SELECT * FROM stk ORDER BY tenant, sku;
-- the sum rule, checked directly as well
SELECT s.tenant, s.sku,
       s.available + s.reserved + s.consumed = (SELECT sum(g.delta) FROM inventory.stock_ledger g
                                                 WHERE g.tenant = s.tenant AND g.sku = s.sku) AS sum_matches_ledger
  FROM inventory.stock s WHERE s.tenant LIKE 't070%' ORDER BY 1, 2;
