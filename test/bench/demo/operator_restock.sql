-- test/bench/demo/operator_restock.sql: a small supplier delivery of one
-- of the five best sellers (the SKUs that run out) to one location
-- (inventory.restock_at): 20 units to warehouse-a or warehouse-b, or 3 to
-- the store.  Each delivery has its own request key.  Runs as role
-- inventory_operator.
\set tenant random(1, 2)
\set sku random(1, 5)
\set loc random(1, 3)
\set key random(1, 1000000000000000)
SELECT inventory.restock_at((ARRAY['acme', 'globex'])[:tenant::int],
	concat('delivery-', :key::bigint), concat('sku-', lpad(:sku::text, 4, '0')),
	(ARRAY['warehouse-a', 'warehouse-b', 'store'])[:loc::int],
	CASE WHEN :loc::int = 3 THEN 3 ELSE 20 END, 'supplier delivery');
