-- test/bench/scripts/cart_ext.sql: a 3-line cart with pg_inventory's
-- reserve_lines, as bench_app.  The three SKUs come from three disjoint
-- bands of the 10,000 (distinct, in sku order), 1 unit each.
-- Variables (pgbench -D): pfx, n=0, tenant: bench (every SKU at the one
-- location 'default') or multi (each band stocked at a location of its
-- own, loc-a, loc-b, loc-c: the policy serves each line from another
-- location).
\set n :n + 1
\set s1 random(1, 3333)
\set s2 random(3334, 6666)
\set s3 random(6667, 10000)
SELECT status FROM inventory.reserve_lines(:tenant::text, concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	jsonb_build_array(
		jsonb_build_object('sku', concat('sku-', lpad(:s1::text, 5, '0')), 'quantity', 1),
		jsonb_build_object('sku', concat('sku-', lpad(:s2::text, 5, '0')), 'quantity', 1),
		jsonb_build_object('sku', concat('sku-', lpad(:s3::text, 5, '0')), 'quantity', 1)),
	interval '1 hour');
