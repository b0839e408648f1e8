-- test/bench/scripts/reserve_scale.sql: pg_inventory's reserve over a large
-- catalog (issue #12 goal 6, database bench_scale), as the application role
-- bench_app.  Variables (pgbench -D): pfx (key prefix of this point), n=0
-- (per-client counter: unique keys), nskus (SKUs sku-0000001 ..
-- sku-<nskus>, 7 digits: test/bench/scale_load.sql).
\set n :n + 1
\set s random(1, :nskus)
SELECT status FROM inventory.reserve('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	concat('sku-', lpad(:s::text, 7, '0')), 1, interval '1 hour');
