-- test/bench/scripts/reserve_cancel_ext.sql: pg_inventory's reserve, then
-- cancel of the same key (two transactions), as the application role
-- bench_app: every reservation finishes at once, so purge_history can
-- remove it after the retention (the held-snapshot runs of goal 4).
-- Variables (pgbench -D): pfx (key prefix of this point), n=0 (per-client
-- counter: unique keys).
\set n :n + 1
\set s random(1, 10000)
SELECT status FROM inventory.reserve('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	concat('sku-', lpad(:s::text, 5, '0')), 1, interval '1 hour');
SELECT status FROM inventory.cancel('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int));
