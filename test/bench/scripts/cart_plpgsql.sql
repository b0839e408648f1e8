-- test/bench/scripts/cart_plpgsql.sql: a 3-line cart with the PL/pgSQL
-- baseline's reserve_lines, as bench_app.  Variables as in cart_ext.sql.
\set n :n + 1
\set s1 random(1, 3333)
\set s2 random(3334, 6666)
\set s3 random(6667, 10000)
SELECT status FROM bench_plpgsql.reserve_lines('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	jsonb_build_array(
		jsonb_build_object('sku', concat('sku-', lpad(:s1::text, 5, '0')), 'quantity', 1),
		jsonb_build_object('sku', concat('sku-', lpad(:s2::text, 5, '0')), 'quantity', 1),
		jsonb_build_object('sku', concat('sku-', lpad(:s3::text, 5, '0')), 'quantity', 1)),
	interval '1 hour');
