-- test/bench/demo/shop_reserve.sql: a shopper puts one item in the cart
-- (inventory.reserve), then checks out (confirm, 75%), abandons the cart
-- explicitly (cancel, 15%) or walks away (10%, held for 2 seconds only,
-- then expired by the background worker or the operator's expire_due).
-- SKU popularity is skewed: random_exponential makes sku-0001 the best
-- seller and the first handful of SKUs take most of the demand.
-- Runs as role shop_app.
\set tenant random(1, 2)
\set sku random_exponential(1, 300, 8)
\set qty random(1, 3)
\set key random(1, 1000000000000000)
\set fate random(1, 100)
\if :fate > 90
\set ttl 2
\else
\set ttl 900
\endif
SELECT status FROM inventory.reserve((ARRAY['acme', 'globex'])[:tenant::int],
	concat('item-', :client_id::int, '-', :key::bigint),
	concat('sku-', lpad(:sku::text, 4, '0')), :qty::int,
	make_interval(secs => :ttl::int));
\if :fate <= 75
SELECT status FROM inventory.confirm((ARRAY['acme', 'globex'])[:tenant::int],
	concat('item-', :client_id::int, '-', :key::bigint));
\elif :fate <= 90
SELECT status FROM inventory.cancel((ARRAY['acme', 'globex'])[:tenant::int],
	concat('item-', :client_id::int, '-', :key::bigint), 'customer emptied the cart');
\endif
