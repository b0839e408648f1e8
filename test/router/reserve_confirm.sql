-- test/router/reserve_confirm.sql: pgbench script of router_test.sh's move
-- under load, run as the application role through the router: each
-- transaction reserves one unit of sku-1 for tenant :tenant under a key of
-- its own (<pfx>-<client>-<n>) and confirms it, two calls.
-- Variables (pgbench -D): tenant and pfx (quoted), n=0.
\set n :n + 1
SELECT status FROM inventory.reserve(:tenant, concat(:pfx, '-', :client_id::int, '-', :n::int), 'sku-1', 1);
SELECT status FROM inventory.confirm(:tenant, concat(:pfx, '-', :client_id::int, '-', :n::int));
