-- 010_reserve: reserve() statuses, outcome columns, idempotent replays,
-- key reuse (IN001), the frozen insufficient outcome, unknown SKU (IN002),
-- the reserved tenant name and the default ttl (README "reserve",
-- "Idempotency", "Unknown SKU").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-01-01 00:00:00+00';

-- this file's tenants are t010...: counts, stk and :oc (include/tenant.sql)
\set prefix t010
\ir include/tenant.sql

SELECT inventory.restock('t010', 'rcpt-1', 'A', 5);
SELECT inventory.restock('t010', 'rcpt-2', 'B', 5);
-- another tenant's SKU C (never stocked by t010)
SELECT inventory.restock('t010-other', 'rcpt-1', 'C', 5);

-- a reservation that fits: reserved, applied, expires at clock + ttl
SELECT :oc FROM inventory.reserve('t010', 'k1', 'A', 2, '10 minutes');
SELECT expires_at = timestamptz '2026-01-01 00:10:00+00' AS expires_at_is_now_plus_ttl,
       reservation_id = (SELECT id FROM inventory.reservation
                          WHERE tenant = 't010' AND request_key = 'k1') AS id_is_stored_id
  FROM inventory.lookup('t010', 'k1');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- replay with the same payload: stored outcome, applied false, nothing written
-- (ttl is not part of the payload)
SELECT :oc FROM inventory.reserve('t010', 'k1', 'A', 2, '10 minutes');
SELECT :oc FROM inventory.reserve('t010', 'k1', 'A', 2, '1 hour');
SELECT :oc FROM inventory.reserve('t010', 'k1', 'A', 2);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- the same key with another payload: IN001, nothing changed
SELECT :oc FROM inventory.reserve('t010', 'k1', 'A', 3);
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve('t010', 'k1', 'B', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT state, version FROM inventory.reservation
 WHERE tenant = 't010' AND request_key = 'k1';

-- not enough stock: a stored rejection (applied true), no units moved,
-- no expiry, the requested line kept
SELECT :oc FROM inventory.reserve('t010', 'k2', 'A', 4);
SELECT state, expires_at IS NULL AS no_expiry FROM inventory.reservation
 WHERE tenant = 't010' AND request_key = 'k2';
SELECT l.sku, l.quantity FROM inventory.reservation_line l
  JOIN inventory.reservation r ON r.id = l.reservation_id
 WHERE r.tenant = 't010' AND r.request_key = 'k2' ORDER BY l.sku;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- the insufficient outcome is frozen: after a restock the same key is
-- still insufficient (applied false, nothing written) ...
SELECT inventory.restock('t010', 'rcpt-3', 'A', 10);
SELECT * FROM counts;
SELECT :oc FROM inventory.reserve('t010', 'k2', 'A', 4);
SELECT :oc FROM inventory.lookup('t010', 'k2');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- ... its payload still counts: another quantity is IN001
SELECT :oc FROM inventory.reserve('t010', 'k2', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM counts;
-- ... and a new key reserves
SELECT :oc FROM inventory.reserve('t010', 'k3', 'A', 4);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- exactly what is available fits; one more does not
SELECT :oc FROM inventory.reserve('t010', 'k4', 'A', 9);
SELECT :oc FROM inventory.reserve('t010', 'k5', 'A', 1);
SELECT * FROM stk ORDER BY tenant, sku;

-- a SKU the tenant never stocked: IN002 and nothing stored
SELECT * FROM counts;
SELECT :oc FROM inventory.reserve('t010', 'k6', 'NOPE', 1);
\echo :LAST_ERROR_SQLSTATE
-- a SKU another tenant stocked is still unknown for this one
SELECT :oc FROM inventory.reserve('t010', 'k6', 'C', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.lookup('t010', 'k6');
SELECT * FROM counts;
-- the key stays free for a valid call
SELECT :oc FROM inventory.reserve('t010', 'k6', 'B', 1);

-- the tenant name "*" is reserved for grants: 22023, nothing stored
SELECT * FROM counts;
SELECT :oc FROM inventory.reserve('*', 'k7', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS star_reservations FROM inventory.reservation WHERE tenant = '*';
SELECT * FROM counts;

-- the default ttl is 15 minutes
SELECT :oc FROM inventory.reserve('t010', 'k8', 'B', 1);
SELECT expires_at = timestamptz '2026-01-01 00:15:00+00' AS default_ttl_15_minutes
  FROM inventory.reservation WHERE tenant = 't010' AND request_key = 'k8';

-- lookup never changes data
SELECT * FROM counts;
SELECT :oc FROM inventory.lookup('t010', 'k1');
SELECT :oc FROM inventory.lookup('t010', 'no-such-key');
SELECT * FROM counts;

-- 0.5: the stock level events of this file's tenants (the counts' events
-- include them): a SKU whose sellable units reached 0 and came back
SELECT tenant, event_type, payload ->> 'sku' AS sku, payload -> 'available' AS available
  FROM inventory.outbox
 WHERE tenant LIKE :'tenants'
   AND event_type IN ('stock.out_of_stock', 'stock.back_in_stock', 'stock.low')
 ORDER BY id;

-- what this file did, in the stock
SELECT * FROM stk ORDER BY tenant, sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't010%' ORDER BY 1, 2, 3;
