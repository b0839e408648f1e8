-- test/bench/demo/cluster_shop.sql: make demo-cluster's shopper, through
-- the router (pg_inventory_router) as role shop_app: one item of a tenant
-- among 12 (spread over the three nodes by their partitions), then checkout
-- (confirm, 75%), cancel (15%) or walk away (10%, held for 2 s, then
-- expired by that node's worker).
\set tenant random(1, 12)
\set sku random_exponential(1, 100, 6)
\set key random(1, 1000000000000000)
\set fate random(1, 100)
\if :fate > 90
\set ttl 2
\else
\set ttl 900
\endif
SELECT status FROM inventory.reserve((ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne', 'tyrell', 'cyberdyne', 'soylent', 'wonka', 'duff'])[:tenant::int],
	concat('item-', :client_id::int, '-', :key::bigint),
	concat('sku-', lpad(:sku::text, 3, '0')), 1, make_interval(secs => :ttl::int));
\if :fate <= 75
SELECT status FROM inventory.confirm((ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne', 'tyrell', 'cyberdyne', 'soylent', 'wonka', 'duff'])[:tenant::int],
	concat('item-', :client_id::int, '-', :key::bigint));
\elif :fate <= 90
SELECT status FROM inventory.cancel((ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne', 'tyrell', 'cyberdyne', 'soylent', 'wonka', 'duff'])[:tenant::int],
	concat('item-', :client_id::int, '-', :key::bigint), 'customer emptied the cart');
\endif
