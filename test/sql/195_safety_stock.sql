-- 195_safety_stock: the safety stock is never taken, also on a SKU split
-- over several slots whose units sit unevenly (set_stock_policy does not
-- move units between slots), and a safety stock near the bigint maximum
-- is refused by no reservation of another location (found by review:
-- the fast path once kept a per-slot share only, and computed it in
-- bigint arithmetic that overflowed).
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-01 00:00:00+00';

-- slots 5 / 5, then 5 reserved from one slot: 0 / 5; safety stock 4 of 5
SELECT inventory.restock('t195', 'r1', 'A', 10);
SELECT inventory.set_stock_slots('t195', 'A', 2);
SELECT status FROM inventory.reserve('t195', 'k1', 'A', 5);
SELECT slot, available, reserved FROM inventory.stock_slot
 WHERE tenant = 't195' AND sku = 'A' ORDER BY slot;
SELECT inventory.set_stock_policy('t195', 'A', 'default', 4);
SELECT sku, location, sellable FROM inventory.availability('t195', ARRAY['A']);
-- 3 of a sellable 1: insufficient, and the 4 stay
SELECT status, lines FROM inventory.reserve('t195', 'k2', 'A', 3);
-- the one sellable unit is there
SELECT status, lines FROM inventory.reserve('t195', 'k3', 'A', 1);
SELECT status, lines FROM inventory.reserve('t195', 'k4', 'A', 1);
SELECT available, safety_stock, sellable, reserved FROM inventory.location_stock
 WHERE tenant = 't195' AND sku = 'A';

-- a safety stock of the bigint maximum at hub: hub sells nothing, store does
SELECT inventory.set_location('t195b', 'hub', 10);
SELECT inventory.set_location('t195b', 'store', 20);
SELECT inventory.restock_at('t195b', 'r1', 'A', 'hub', 10);
SELECT inventory.restock_at('t195b', 'r2', 'A', 'store', 10);
SELECT inventory.set_stock_policy('t195b', 'A', 'hub', 9223372036854775807);
SELECT sku, location, sellable FROM inventory.availability('t195b', ARRAY['A']);
SELECT status, lines FROM inventory.reserve('t195b', 'k1', 'A', 1);
SELECT status, lines FROM inventory.reserve_lines('t195b', 'k2', '[{"sku": "A", "quantity": 1, "location": "hub"}]');
SELECT inventory.set_stock_slots('t195b', 'A', 3);
SELECT status, lines FROM inventory.reserve('t195b', 'k3', 'A', 2);
SELECT * FROM inventory.check_invariants();
