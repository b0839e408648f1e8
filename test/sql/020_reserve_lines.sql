-- 020_reserve_lines: all-or-nothing holds, the same SKU on several lines,
-- quantities as JSON numbers, the payload as a set, the outcome of a
-- multi-SKU reservation, and every malformed "lines" argument (22023)
-- (README "reserve_lines", "Limits").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-01-01 00:00:00+00';

-- this file's tenants are t020...: counts, stk and :oc (include/tenant.sql)
\set prefix t020
\ir include/tenant.sql
-- the stored lines of a reservation
CREATE TEMP VIEW lines AS
SELECT r.request_key, r.state, l.sku, l.quantity
  FROM inventory.reservation_line l
  JOIN inventory.reservation r ON r.id = l.reservation_id
 WHERE r.tenant LIKE 't020%';

SELECT inventory.restock('t020', 'rcpt-a', 'A', 10);
SELECT inventory.restock('t020', 'rcpt-b', 'B', 3);
SELECT inventory.restock('t020', 'rcpt-c', 'C', 100);

-- all or nothing: one line short -> insufficient, no stock moved, the
-- rejected reservation keeps the requested lines
SELECT :oc FROM inventory.reserve_lines('t020', 'short',
  '[{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 4}]');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM lines WHERE request_key = 'short' ORDER BY sku;
SELECT * FROM counts;

-- every line fits: several SKUs -> sku NULL, quantity is the sum
SELECT :oc FROM inventory.reserve_lines('t020', 'two-skus',
  '[{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 3}]', '5 minutes');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM lines WHERE request_key = 'two-skus' ORDER BY sku;
SELECT * FROM counts;

-- the payload is a set: other line order, other ttl -> a replay
SELECT :oc FROM inventory.reserve_lines('t020', 'two-skus',
  '[{"quantity": 3, "sku": "B"}, {"sku": "A", "quantity": 2}]');
SELECT * FROM counts;
-- a line more, a line less or another quantity -> IN001, nothing changed
SELECT :oc FROM inventory.reserve_lines('t020', 'two-skus',
  '[{"sku": "A", "quantity": 2}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'two-skus',
  '[{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 3}, {"sku": "C", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'two-skus',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 3}]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- the same SKU on two lines counts as the sum, stored as one line row
SELECT :oc FROM inventory.reserve_lines('t020', 'same-sku',
  '[{"sku": "C", "quantity": 4}, {"sku": "C", "quantity": 6}]');
SELECT * FROM lines WHERE request_key = 'same-sku' ORDER BY sku;
SELECT * FROM stk ORDER BY tenant, sku;
-- replays with the lines merged, or split differently, are the same payload
SELECT :oc FROM inventory.reserve_lines('t020', 'same-sku',
  '[{"sku": "C", "quantity": 10}]');
SELECT :oc FROM inventory.reserve_lines('t020', 'same-sku',
  '[{"sku": "C", "quantity": 1}, {"sku": "C", "quantity": 2}, {"sku": "C", "quantity": 7}]');
SELECT :oc FROM inventory.reserve('t020', 'same-sku', 'C', 10);
SELECT * FROM counts;
-- each line counts on its own: a 0 line is refused even when the sum is 1
SELECT :oc FROM inventory.reserve_lines('t020', 'sum-short',
  '[{"sku": "B", "quantity": 0.0e0}, {"sku": "B", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
-- the summed lines must fit the stock as a whole (50 and 41 each fit 90)
SELECT :oc FROM inventory.reserve_lines('t020', 'sum-short',
  '[{"sku": "C", "quantity": 50}, {"sku": "C", "quantity": 41}]');
SELECT * FROM lines WHERE request_key = 'sum-short' ORDER BY sku;
SELECT * FROM stk ORDER BY tenant, sku;

-- reserve is reserve_lines with one line: the same key is a replay either way
SELECT :oc FROM inventory.reserve('t020', 'single', 'A', 2);
SELECT :oc FROM inventory.reserve_lines('t020', 'single', '[{"sku": "A", "quantity": 2}]');

-- 2, 2.0 and 2e0 are the same quantity: replays, not IN001
SELECT :oc FROM inventory.reserve_lines('t020', 'num', '[{"sku": "A", "quantity": 2}]');
SELECT :oc FROM inventory.reserve_lines('t020', 'num', '[{"sku": "A", "quantity": 2.0}]');
SELECT :oc FROM inventory.reserve_lines('t020', 'num', '[{"sku": "A", "quantity": 2e0}]');
SELECT :oc FROM inventory.reserve_lines('t020', 'num', '[{"sku": "A", "quantity": 0.2E1}]');
SELECT :oc FROM inventory.reserve('t020', 'num', 'A', 2);
-- and a first call with 2.0 stores 2
SELECT :oc FROM inventory.reserve_lines('t020', 'num2', '[{"sku": "A", "quantity": 2.00}]');
SELECT * FROM lines WHERE request_key = 'num2' ORDER BY sku;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- an unknown SKU on any line: IN002, nothing stored, no stock moved
SELECT :oc FROM inventory.reserve_lines('t020', 'unknown',
  '[{"sku": "A", "quantity": 1}, {"sku": "ZZZ", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.lookup('t020', 'unknown');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- invalid lines: 22023 and nothing changed
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '{"sku": "A", "quantity": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '"A"');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '1');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', 'null');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[1]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[["A", 1]]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[null]');
\echo :LAST_ERROR_SQLSTATE
-- a line is exactly {sku, quantity}
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 1, "note": "x"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "qty": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{}]');
\echo :LAST_ERROR_SQLSTATE
-- one bad line spoils the whole call
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 1}, {"sku": "B"}]');
\echo :LAST_ERROR_SQLSTATE
-- quantities: integral JSON numbers from 1 to 2147483647
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 0}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": -1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 1.5}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 0.5}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": "2"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": null}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": true}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 2147483648}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A", "quantity": 1e100}]');
\echo :LAST_ERROR_SQLSTATE
-- sku: a JSON string within the identifier limits
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": 1, "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": null, "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad',
  jsonb_build_array(jsonb_build_object('sku', repeat('s', 65), 'quantity', 1)));
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', '[{"sku": "A\u0001", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
-- the reservation's total must fit an integer, across lines
SELECT :oc FROM inventory.reserve_lines('t020', 'bad',
  '[{"sku": "A", "quantity": 2147483647}, {"sku": "B", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad',
  '[{"sku": "A", "quantity": 2147483647}, {"sku": "A", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
-- at most 100 lines
SELECT :oc FROM inventory.reserve_lines('t020', 'bad',
  (SELECT jsonb_agg(jsonb_build_object('sku', 'C', 'quantity', 1)) FROM generate_series(1, 101)));
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t020', 'bad', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.lookup('t020', 'bad');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- the limits themselves are accepted: 100 lines, a 64-character SKU,
-- a total of exactly 2147483647
SELECT inventory.restock('t020', 'rcpt-d', 'D', 100);
SELECT :oc FROM inventory.reserve_lines('t020', 'hundred',
  (SELECT jsonb_agg(jsonb_build_object('sku', 'D', 'quantity', 1)) FROM generate_series(1, 100)));
SELECT * FROM lines WHERE request_key = 'hundred' ORDER BY sku;
SELECT inventory.restock('t020', 'rcpt-long', repeat('s', 64), 1);
SELECT status, state, applied, char_length(sku) AS sku_length, quantity
  FROM inventory.reserve_lines('t020', 'long-sku',
  jsonb_build_array(jsonb_build_object('sku', repeat('s', 64), 'quantity', 1)));
SELECT :oc FROM inventory.reserve_lines('t020', 'max-total',
  '[{"sku": "A", "quantity": 2147483646}, {"sku": "B", "quantity": 1}]');

-- 0.5: the stock level events of this file's tenants (the counts' events
-- include them): a SKU whose sellable units reached 0 and came back
SELECT tenant, event_type, payload ->> 'sku' AS sku, payload -> 'available' AS available
  FROM inventory.outbox
 WHERE tenant LIKE :'tenants'
   AND event_type IN ('stock.out_of_stock', 'stock.back_in_stock', 'stock.low')
 ORDER BY id;

SELECT * FROM stk ORDER BY tenant, sku;
SELECT request_key, state, sku, quantity FROM lines ORDER BY request_key, sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't020%' ORDER BY 1, 2, 3;
