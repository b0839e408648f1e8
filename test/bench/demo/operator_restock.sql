-- test/bench/demo/operator_restock.sql: a small supplier delivery of one
-- of the five best sellers (the SKUs that run out).  Each delivery has its
-- own request key.  Runs as role inventory_operator.
\set tenant random(1, 2)
\set sku random(1, 5)
\set key random(1, 1000000000000000)
SELECT inventory.restock((ARRAY['acme', 'globex'])[:tenant::int],
	concat('delivery-', :key::bigint), concat('sku-', lpad(:sku::text, 4, '0')),
	20, 'supplier delivery');
