-- test/bench/scripts/avail_ext.sql: a product listing page asks
-- inventory.availability for 100 SKUs at once (a run of 100 consecutive
-- SKUs from a random start), as the application role bench_app (so
-- available/reserved/consumed come back NULL; sellable per location and
-- in total).  Plain snapshot read: no row locks, nothing written.
-- Variables (pgbench -D): tenant.
\set first random(1, 9901)
SELECT count(*) FROM inventory.availability(:tenant::text,
	ARRAY(SELECT concat('sku-', lpad(g::text, 5, '0'))
			FROM generate_series(:first::int, :first::int + 99) AS g));
