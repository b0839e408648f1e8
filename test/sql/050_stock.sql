-- 050_stock: restock and adjust: SKU creation, replays returning the
-- stored available count, key reuse (IN001), the ledger's own key
-- namespace, adjustment kinds and signs (22023), unknown SKU (IN002), and
-- never going negative (IN003) (README "Unknown SKU", "Idempotency",
-- "adjust", "Records").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-04-01 00:00:00+00';

-- this file's tenants are t050...: counts and stk (include/tenant.sql)
\set prefix t050
\ir include/tenant.sql
CREATE TEMP VIEW ledger AS
SELECT id, tenant, sku, request_key, kind, delta, reason, available_after
  FROM inventory.stock_ledger WHERE tenant LIKE 't050%';

-- restock creates the tenant's SKU and returns available after it
SELECT * FROM stk ORDER BY tenant, sku;
SELECT inventory.restock('t050', 'rcpt-1', 'A', 5);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT inventory.restock('t050', 'rcpt-2', 'A', 3, 'second pallet');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- a replay returns the available count stored with that record, even
-- after other changes, and writes nothing; the reason is not part of
-- the payload
SELECT status FROM inventory.reserve('t050', 'res-1', 'A', 2);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT inventory.restock('t050', 'rcpt-1', 'A', 5);
SELECT inventory.restock('t050', 'rcpt-2', 'A', 3, 'second pallet');
SELECT inventory.restock('t050', 'rcpt-2', 'A', 3, 'another reason');
SELECT inventory.restock('t050', 'rcpt-2', 'A', 3);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- the same key with another payload: IN001, nothing changed (no SKU B made)
SELECT inventory.restock('t050', 'rcpt-1', 'A', 6);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t050', 'rcpt-1', 'B', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- restock and adjust keys are apart from reservation keys: one key string
-- used for a reservation and for a receipt works for both
SELECT status, applied FROM inventory.reserve('t050', 'shared-key', 'A', 1);
SELECT inventory.restock('t050', 'shared-key', 'A', 4);
SELECT status, applied FROM inventory.reserve('t050', 'shared-key', 'A', 1);
SELECT inventory.restock('t050', 'shared-key', 'A', 4);
SELECT inventory.restock('t050', 'res-1', 'A', 1);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- keys are scoped by tenant
SELECT inventory.restock('t050-other', 'rcpt-1', 'A', 1);
SELECT * FROM stk ORDER BY tenant, sku;

-- adjust: a return adds, a loss removes, a correction goes either way
SELECT inventory.adjust('t050', 'adj-1', 'A', 2, 'return', 'customer return');
SELECT inventory.adjust('t050', 'adj-2', 'A', -1, 'loss', 'broken in the warehouse');
SELECT inventory.adjust('t050', 'adj-3', 'A', 3, 'correction', 'stock count found 3 more');
SELECT inventory.adjust('t050', 'adj-4', 'A', -2, 'correction', 'stock count found 2 fewer');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- a replay returns the stored count, even after other changes
SELECT inventory.restock('t050', 'rcpt-3', 'A', 10);
SELECT inventory.restock('t050', 'rcpt-4', 'B', 1);
SELECT inventory.adjust('t050', 'adj-1', 'A', 2, 'return', 'customer return');
SELECT inventory.adjust('t050', 'adj-2', 'A', -1, 'loss', 'another reason');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- another delta, kind or SKU under the same key: IN001
SELECT inventory.adjust('t050', 'adj-1', 'A', 3, 'return', 'customer return');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'adj-1', 'A', 2, 'correction', 'customer return');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'adj-1', 'B', 2, 'return', 'customer return');
\echo :LAST_ERROR_SQLSTATE
-- restock and adjust share the ledger's keys: a receipt key is not a return
SELECT inventory.adjust('t050', 'rcpt-1', 'A', 5, 'return', 'same numbers, other kind');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t050', 'adj-1', 'A', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- invalid adjustments: 22023, nothing changed
SELECT inventory.adjust('t050', 'bad', 'A', 0, 'correction', 'nothing');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 0, 'return', 'nothing');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 0, 'loss', 'nothing');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', -1, 'return', 'a negative return');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, 'loss', 'a positive loss');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, 'theft', 'no such kind');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, 'receipt', 'receipts come from restock');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, '', 'empty kind');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, NULL, 'no kind');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, 'return', '');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'bad', 'A', 1, 'return', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t050', 'bad', 'A', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t050', 'bad', 'A', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- a SKU the tenant never stocked: IN002, nothing stored
SELECT inventory.adjust('t050', 'unknown', 'NOPE', 1, 'return', 'never stocked');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050-none', 'unknown', 'A', 1, 'return', 'unknown tenant');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- never negative: units held by pending reservations are not taken away
SELECT status FROM inventory.reserve('t050', 'res-2', 'B', 1);
SELECT * FROM stk WHERE sku = 'B' ORDER BY tenant, sku;
SELECT inventory.adjust('t050', 'neg-1', 'B', -1, 'loss', 'the held unit broke');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t050', 'neg-1', 'B', -1, 'correction', 'the held unit is missing');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- A: exactly what is available can go, one more cannot
SELECT available AS a_available FROM inventory.stock WHERE tenant = 't050' AND sku = 'A' \gset
SELECT inventory.adjust('t050', 'neg-2', 'A', -(:a_available + 1), 'loss', 'fire');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT inventory.adjust('t050', 'neg-2', 'A', -(:a_available), 'loss', 'fire');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT inventory.adjust('t050', 'neg-3', 'A', -1, 'correction', 'nothing left');
\echo :LAST_ERROR_SQLSTATE
-- a refused key stays free: after a receipt the same call succeeds
SELECT inventory.restock('t050', 'rcpt-5', 'A', 1);
SELECT inventory.adjust('t050', 'neg-3', 'A', -1, 'correction', 'nothing left');
SELECT * FROM stk ORDER BY tenant, sku;

-- one ledger row per applied restock or adjust, none for replays or errors
SELECT tenant, sku, request_key, kind, delta, reason, available_after
  FROM ledger ORDER BY id;
-- and one stock event each
SELECT o.event_type, o.payload ->> 'request_key' AS request_key,
       o.payload ->> 'sku' AS sku, o.payload -> 'delta' AS delta,
       o.payload -> 'available' AS available
  FROM inventory.outbox o
 WHERE o.tenant LIKE 't050%' AND o.event_type LIKE 'stock.%' ORDER BY o.id;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't050%' ORDER BY 1, 2, 3;
