-- test/bench/scripts/confirm_ext.sql: pg_inventory's confirm of a
-- pre-created pending reservation, as bench_app.  Keys pfx-<client>-<n>,
-- n = 1, 2, ... per client (run.sh creates them).  Variables: pfx, n=0.
\set n :n + 1
SELECT status FROM inventory.confirm('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int));
