-- 230_stock_events: stock events carry the location, its version (rising
-- by one per stock event of that (sku, location)) and the available count
-- there; the level events stock.low, stock.out_of_stock and
-- stock.back_in_stock are written once per crossing, in the transaction of
-- the change that crossed, and none for a change that crosses nothing or
-- goes from low back to in_stock (README "Locations and allocation"
-- (levels), "Outbox and delivery", "set_stock_policy").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-05 00:00:00+00';

-- this file's tenants are t230...: counts, stk and :oc (include/tenant.sql)
\set prefix t230
\ir include/tenant.sql
CREATE TEMP VIEW sev AS
SELECT o.id, o.payload ->> 'sku' AS sku, o.payload ->> 'location' AS location,
       o.event_type, (o.payload ->> 'version')::bigint AS version,
       (o.payload ->> 'available')::bigint AS available,
       o.payload ->> 'level' AS level, (o.payload ->> 'sellable')::bigint AS sellable
  FROM inventory.outbox o
 WHERE o.tenant LIKE 't230%' AND o.event_type LIKE 'stock.%';
-- the stock events written since the previous call of pg_temp.new_events()
CREATE TEMP TABLE seen (last_id bigint);
INSERT INTO seen VALUES (0);
CREATE FUNCTION pg_temp.new_events()
RETURNS TABLE(sku text, location text, event_type text, version bigint,
              available bigint, level text, sellable bigint)
LANGUAGE plpgsql AS $$
DECLARE
	prev bigint;
BEGIN
	SELECT last_id INTO prev FROM seen;
	UPDATE seen SET last_id = coalesce((SELECT max(id) FROM sev), prev);
	RETURN QUERY SELECT s.sku, s.location, s.event_type, s.version, s.available,
	                    s.level, s.sellable
	               FROM sev s WHERE s.id > prev ORDER BY s.id;
END
$$;
CREATE TEMP VIEW lstk AS
SELECT sku, location, available, reserved, safety_stock, sellable, low_threshold,
       level, version
  FROM inventory.location_stock WHERE tenant = 't230';

SELECT inventory.set_location('t230', 'hub', 10);
SELECT inventory.set_location('t230', 'shop', 20);

------------------------------------------------------------------------
-- restock: stock.restocked with location, version 1, available; the first
-- level computed (from NULL) writes no level event
------------------------------------------------------------------------
SELECT inventory.restock_at('t230', 'r1', 'A', 'hub', 5);
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;
-- another location of the same SKU has its own version
SELECT inventory.restock_at('t230', 'r2', 'A', 'shop', 1);
SELECT * FROM pg_temp.new_events();
-- the 5-argument restock: location default, version 1 there
SELECT inventory.restock('t230', 'r3', 'B', 2);
SELECT * FROM pg_temp.new_events();
SELECT inventory.restock_at('t230', 'r4', 'A', 'hub', 1);
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;

------------------------------------------------------------------------
-- set_stock_policy: safety 1, low at 2: A at hub sellable 5, in_stock
-- (no event); a policy that crosses writes the level event itself
------------------------------------------------------------------------
SELECT inventory.set_stock_policy('t230', 'A', 'hub', 1, 2) AS changed;
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;

------------------------------------------------------------------------
-- reservations move A at hub across the levels
------------------------------------------------------------------------
-- sellable 5 -> 3: still in_stock, no event
SELECT status, lines FROM inventory.reserve('t230', 'k1', 'A', 2, '1 hour');
SELECT * FROM pg_temp.new_events();
-- 3 -> 2: low (2 <= 2): stock.low, version 3
SELECT status, lines FROM inventory.reserve('t230', 'k2', 'A', 1, '1 hour');
SELECT * FROM pg_temp.new_events();
-- 2 -> 1: still low, no event
SELECT status, lines FROM inventory.reserve('t230', 'k3', 'A', 1, '1 hour');
SELECT * FROM pg_temp.new_events();
-- 1 -> 0: stock.out_of_stock (available 1: the safety stock)
SELECT status, lines FROM inventory.reserve('t230', 'k4', 'A', 1, '1 hour');
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;
-- a reservation served by shop instead: shop's A 1 -> 0, its own version;
-- hub writes nothing
SELECT status, lines FROM inventory.reserve('t230', 'k5', 'A', 1, '1 hour');
SELECT * FROM pg_temp.new_events();
-- confirm moves no available unit: no level event
SELECT status FROM inventory.confirm('t230', 'k1');
SELECT * FROM pg_temp.new_events();
-- cancel gives 1 back: hub sellable 0 -> 1: stock.back_in_stock (it is low)
SELECT status FROM inventory.cancel('t230', 'k4', 'changed mind');
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;
-- 1 -> 2: low -> low, no event; then a restock to sellable 12: low ->
-- in_stock writes no level event, only stock.restocked
SELECT status FROM inventory.cancel('t230', 'k3');
SELECT * FROM pg_temp.new_events();
SELECT inventory.restock_at('t230', 'r5', 'A', 'hub', 10);
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;

------------------------------------------------------------------------
-- in the same transaction as the change: seen inside it, gone with its
-- rollback
------------------------------------------------------------------------
BEGIN;
-- a loss of 12 at hub (available 13, 1 of it safety): sellable 0
SELECT inventory.adjust_at('t230', 'a1', 'A', 'hub', -12, 'loss', 'flood');
SELECT * FROM pg_temp.new_events();
ROLLBACK;
UPDATE seen SET last_id = coalesce((SELECT max(id) FROM sev), 0);
SELECT * FROM lstk WHERE location = 'hub' ORDER BY sku, location;
-- committed: adjusted and out_of_stock, one each
SELECT inventory.adjust_at('t230', 'a1', 'A', 'hub', -12, 'loss', 'flood');
SELECT * FROM pg_temp.new_events();
-- its replay writes nothing
SELECT inventory.adjust_at('t230', 'a1', 'A', 'hub', -12, 'loss', 'flood');
SELECT * FROM pg_temp.new_events();
-- a return of 3: back_in_stock (sellable 3 > low 2: in_stock)
SELECT inventory.adjust_at('t230', 'a2', 'A', 'hub', 3, 'return', 'dried');
SELECT * FROM pg_temp.new_events();
-- raising the safety stock crosses to low: set_stock_policy writes it
SELECT inventory.set_stock_policy('t230', 'A', 'hub', 2, 2) AS changed;
SELECT * FROM pg_temp.new_events();
-- the same policy again: nothing
SELECT inventory.set_stock_policy('t230', 'A', 'hub', 2, 2) AS changed;
SELECT * FROM pg_temp.new_events();
-- no low threshold: low -> in_stock, no event
SELECT inventory.set_stock_policy('t230', 'A', 'hub', 2) AS changed;
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk ORDER BY sku, location;

------------------------------------------------------------------------
-- expiry releases units and may cross back
------------------------------------------------------------------------
-- B at default: 2, reserve 2 -> out_of_stock; expiry -> back_in_stock
SELECT status, lines FROM inventory.reserve('t230', 'k6', 'B', 2, '5 minutes');
SELECT * FROM pg_temp.new_events();
SET pg_inventory.frozen_now = '2026-07-05 00:05:00+00';
SELECT status FROM inventory.confirm('t230', 'k6');
SELECT * FROM pg_temp.new_events();

------------------------------------------------------------------------
-- set_stock_policy at a location where the SKU never was: the row is made
-- with zero counts (out_of_stock from the start: no event, old level NULL)
------------------------------------------------------------------------
SELECT inventory.set_stock_policy('t230', 'B', 'hub', 0, 1) AS changed;
SELECT * FROM pg_temp.new_events();
SELECT * FROM lstk WHERE sku = 'B' ORDER BY sku, location;
-- its first receipt: out_of_stock -> low (1 <= 1): back_in_stock
SELECT inventory.restock_at('t230', 'r6', 'B', 'hub', 1);
SELECT * FROM pg_temp.new_events();

------------------------------------------------------------------------
-- the versions: per (sku, location), from 1 up without gaps, and the
-- catalog's version is the last one written
------------------------------------------------------------------------
SELECT sku, location, count(*) AS events, min(version) AS first, max(version) AS last,
       max(version) - min(version) + 1 = count(*) AS no_gaps
  FROM sev GROUP BY sku, location ORDER BY sku, location;
SELECT l.sku, l.location, l.version = (SELECT max(s.version) FROM sev s
                                         WHERE s.sku = l.sku AND s.location = l.location) AS matches
  FROM lstk l ORDER BY l.sku, l.location;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't230%' ORDER BY 1, 2, 3;
