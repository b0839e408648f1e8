-- test/bench/scripts/reserve_ext.sql: pg_inventory's reserve (run as the
-- application role bench_app, or as the superuser for the second figure).
-- Variables (pgbench -D): pfx (key prefix of this point), n=0 (per-client
-- counter: unique keys), hot (1: every call reserves 1 unit of the hot SKU
-- number hotsku: 0 = sku-00000, one slot; 99999 = sku-99999, split in slots).
\set n :n + 1
\if :hot
\set s :hotsku
\else
\set s random(1, 10000)
\endif
SELECT status FROM inventory.reserve('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	concat('sku-', lpad(:s::text, 5, '0')), 1, interval '1 hour');
