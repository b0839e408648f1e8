-- 270_expiry_records: what one expire_due batch writes, field by field, on
-- schema 0.5 and on 0.4: the state change and version step of every
-- reservation, its transition row, its reservation.expired event (the whole
-- payload but the random event id, and its stored size), the units back at
-- their (sku, location, slot), and the stock level events of the crossings
-- (README "expire_due", "Outbox and delivery", "Levels").  The expected
-- output was made by the release before expire_due's batch was rewritten.
\set VERBOSITY sqlstate

\ir include/drain.sql

SET pg_inventory.frozen_now = '2026-05-01 08:00:00+00';

-- ---------------------------------------------------------------- 0.5
SELECT inventory.set_location('t270', 'hub', 10);
SELECT inventory.set_location('t270', 'store', 20);
SELECT inventory.restock_at('t270', 'r1', 'A', 'hub', 5);
SELECT inventory.restock_at('t270', 'r2', 'A', 'store', 5);
SELECT inventory.restock_at('t270', 'r3', 'B', 'hub', 3);
SELECT inventory.restock_at('t270', 'r4', 'C', 'store', 100);
SELECT inventory.restock_at('t270', 'r5', 'D', 'hub', 40);
SELECT inventory.set_stock_policy('t270', 'C', 'store', 0, 95);
SELECT inventory.set_stock_slots('t270', 'D', 4);

-- a cart over two locations (A: 4 at hub, 2 pinned at store) with the
-- last units of B (out of stock), C down to low, D from a SKU in 4 slots,
-- one pinned line
SELECT status, lines FROM inventory.reserve_lines('t270', 'cart-1',
  '[{"sku": "A", "quantity": 2, "location": "store"}, {"sku": "A", "quantity": 4}, {"sku": "B", "quantity": 3}]', '10 minutes');
SELECT status, lines FROM inventory.reserve_lines('t270', 'cart-2',
  '[{"sku": "C", "quantity": 6}, {"sku": "D", "quantity": 25}]', '20 minutes');
SELECT status, lines FROM inventory.reserve_lines('t270', 'cart-3',
  '[{"sku": "A", "quantity": 1, "location": "store"}]', '30 minutes');
-- pending, not due at the batch's clock
SELECT status FROM inventory.reserve('t270', 'later', 'D', 1, '2 hours');
-- confirmed and cancelled (with a reason) before: never expired
SELECT status FROM inventory.reserve('t270', 'conf', 'D', 1, '5 minutes');
SELECT status FROM inventory.confirm('t270', 'conf');
SELECT status FROM inventory.reserve('t270', 'canc', 'D', 1, '5 minutes');
SELECT status FROM inventory.cancel('t270', 'canc', 'changed my mind');

SELECT sku, location, available, reserved, consumed, level
  FROM inventory.location_stock WHERE tenant = 't270' ORDER BY sku, location;

CREATE TEMP TABLE before_batch AS
SELECT (SELECT max(id) FROM inventory.outbox) AS outbox_id,
       (SELECT max(id) FROM inventory.reservation_transition) AS transition_id;

SET pg_inventory.frozen_now = '2026-05-01 09:00:00.123456+00';
SELECT inventory.expire_due(100) AS expired;

SELECT request_key, state, version, reason, updated_at
  FROM inventory.reservation WHERE tenant = 't270' ORDER BY request_key;
SELECT r.request_key, t.from_state, t.to_state, t.reason, t.actor, t.version, t.created_at
  FROM inventory.reservation_transition t JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE t.id > (SELECT transition_id FROM before_batch) ORDER BY t.id;
SELECT o.event_type, o.tenant, o.reservation_id IS NOT NULL AS has_reservation,
       (o.payload ->> 'event_id') = o.event_id::text AS event_id_ok,
       (o.payload ->> 'reservation_id')::bigint IS NOT DISTINCT FROM o.reservation_id AS reservation_id_ok,
       pg_column_size(o.payload) AS payload_size, o.created_at,
       o.published_at IS NULL AS unpublished
  FROM inventory.outbox o WHERE o.id > (SELECT outbox_id FROM before_batch)
 ORDER BY o.id;
SELECT (o.payload - 'event_id' - 'reservation_id')::text AS payload
  FROM inventory.outbox o WHERE o.id > (SELECT outbox_id FROM before_batch)
 ORDER BY o.id;
SELECT sku, location, slot, available, reserved, consumed
  FROM inventory.stock_slot WHERE tenant = 't270' ORDER BY sku, location, slot;
SELECT sku, location, level, version
  FROM inventory.stock_location WHERE tenant = 't270' ORDER BY sku, location;
SELECT * FROM inventory.check_invariants() WHERE tenant = 't270';
-- nothing more is due
SELECT inventory.expire_due(100) AS expired_again;

-- ---------------------------------------------------------------- 0.4
RESET pg_inventory.frozen_now;
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.4';
SET pg_inventory.frozen_now = '2026-05-01 08:00:00+00';
SELECT inventory.restock('t270', 'r1', 'A', 5);
SELECT inventory.restock('t270', 'r2', 'B', 3);
SELECT inventory.restock('t270', 'r3', 'D', 40);
SELECT inventory.set_stock_slots('t270', 'D', 4);
SELECT status FROM inventory.reserve_lines('t270', 'cart-1',
  '[{"sku": "B", "quantity": 3}, {"sku": "A", "quantity": 2}, {"sku": "A", "quantity": 1}]', '10 minutes');
SELECT status FROM inventory.reserve_lines('t270', 'cart-2',
  '[{"sku": "D", "quantity": 25}]', '20 minutes');
SELECT status FROM inventory.reserve('t270', 'later', 'D', 1, '2 hours');
SET pg_inventory.frozen_now = '2026-05-01 09:00:00.5+00';
SELECT inventory.expire_due(100) AS expired;
SELECT request_key, state, version, updated_at
  FROM inventory.reservation WHERE tenant = 't270' ORDER BY request_key;
SELECT r.request_key, t.from_state, t.to_state, t.reason, t.actor, t.version, t.created_at
  FROM inventory.reservation_transition t JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE t.to_state = 'expired' ORDER BY t.id;
SELECT o.event_type, (o.payload ->> 'event_id') = o.event_id::text AS event_id_ok,
       (o.payload ->> 'reservation_id')::bigint = o.reservation_id AS reservation_id_ok,
       pg_column_size(o.payload) AS payload_size, o.created_at,
       (o.payload - 'event_id' - 'reservation_id')::text AS payload
  FROM inventory.outbox o WHERE o.event_type = 'reservation.expired' ORDER BY o.id;
SELECT tenant, sku, slot, available, reserved, consumed
  FROM inventory.stock_slot ORDER BY tenant, sku, slot;
SELECT * FROM inventory.check_invariants();

-- back to the default version for whatever runs next
RESET pg_inventory.frozen_now;
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory;
