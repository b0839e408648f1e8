-- test/bench/scripts/reserve_plpgsql.sql: the PL/pgSQL baseline
-- (test/bench/plpgsql_baseline.sql), run as the application role bench_app.
-- Variables as in reserve_ext.sql.
\set n :n + 1
\if :hot
\set s :hotsku
\else
\set s random(1, 10000)
\endif
SELECT status FROM bench_plpgsql.reserve('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	concat('sku-', lpad(:s::text, 5, '0')), 1, interval '1 hour');
