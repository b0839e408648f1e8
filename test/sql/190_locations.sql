-- 190_locations: locations of a tenant (set_location), the default
-- location, restock and adjust at a location (IN004 for an unknown one),
-- stock per location in inventory.location_stock and the totals in
-- inventory.stock, the ledger's location, slots per location, and
-- check_invariants clean afterwards (README "Locations and allocation",
-- "set_location", "restock", "adjust").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-01 00:00:00+00';

-- this file's tenants are t190...: counts, stk and :oc (include/tenant.sql)
\set prefix t190
\ir include/tenant.sql
CREATE TEMP VIEW locs AS
SELECT tenant, location, priority, active
  FROM inventory.location WHERE tenant LIKE 't190%';
CREATE TEMP VIEW lstk AS
SELECT tenant, sku, location, available, reserved, consumed, safety_stock,
       sellable, low_threshold, level, slots
  FROM inventory.location_stock WHERE tenant LIKE 't190%';
CREATE TEMP VIEW ledger AS
SELECT sku, location, request_key, kind, delta, available_after
  FROM inventory.stock_ledger WHERE tenant LIKE 't190%';

------------------------------------------------------------------------
-- the default location: made (priority 100, active) by the first call
-- that needs it; a tenant has no location before
------------------------------------------------------------------------
SELECT * FROM locs ORDER BY tenant, location;
SELECT inventory.restock('t190', 'rcpt-1', 'A', 10);
SELECT * FROM locs ORDER BY tenant, location;
SELECT * FROM lstk ORDER BY tenant, sku, location;

------------------------------------------------------------------------
-- set_location: creates (true), the same values again (false), a change
-- (true); priority defaults to 100, active to true
------------------------------------------------------------------------
SELECT inventory.set_location('t190', 'north', 50) AS changed;
SELECT inventory.set_location('t190', 'north', 50) AS changed;
SELECT inventory.set_location('t190', 'north', 50, true) AS changed;
SELECT inventory.set_location('t190', 'north', 10) AS changed;
SELECT inventory.set_location('t190', 'south') AS changed;
SELECT inventory.set_location('t190', 'closed', -5, false) AS changed;
SELECT inventory.set_location('t190', 'closed', -5, false) AS changed;
SELECT * FROM locs ORDER BY tenant, location;
-- the default location is a location like any other: set to its own
-- values it does not change
SELECT inventory.set_location('t190', 'default', 100) AS changed;
-- no ledger row, no event for locations
SELECT * FROM counts;

-- bad arguments: 22023, nothing made
SELECT inventory.set_location('t190', '', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', repeat('x', 65), 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', E'tab\there', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', ' padded', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', 'x', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', 'x', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', 'x', 1000001);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('t190', 'x', -1000001);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location('*', 'x', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_location(NULL, 'x', 1);
\echo :LAST_ERROR_SQLSTATE
-- the bounds themselves are fine
SELECT inventory.set_location('t190-b', 'lo', -1000000) AS changed;
SELECT inventory.set_location('t190-b', 'hi', 1000000) AS changed;
SELECT * FROM locs ORDER BY tenant, location;

------------------------------------------------------------------------
-- restock and adjust at a location
------------------------------------------------------------------------
-- restock at a location returns available there (not the SKU's total)
SELECT inventory.restock_at('t190', 'rcpt-2', 'A', 'north', 7);
SELECT inventory.restock_at('t190', 'rcpt-3', 'A', 'north', 3, 'second pallet');
-- a new SKU stocked first at a location other than default: the SKU is made,
-- and no default location row for it
SELECT inventory.restock_at('t190', 'rcpt-4', 'B', 'south', 4);
-- at an inactive location: receipts are still recorded there
SELECT inventory.restock_at('t190', 'rcpt-5', 'B', 'closed', 2);
SELECT * FROM lstk ORDER BY tenant, sku, location;
SELECT * FROM stk ORDER BY tenant, sku;

-- adjust at a location: return, loss, correction; returns available there
SELECT inventory.adjust_at('t190', 'adj-1', 'A', 'north', -2, 'loss', 'dropped');
SELECT inventory.adjust_at('t190', 'adj-2', 'A', 'north', 1, 'return', 'returned');
SELECT inventory.adjust_at('t190', 'adj-3', 'B', 'south', -1, 'correction', 'counted');
-- the 6-argument adjust acts on the default location
SELECT inventory.adjust('t190', 'adj-4', 'A', -1, 'loss', 'broken');
-- more than there is at that location (the SKU's total would suffice): IN003
SELECT inventory.adjust_at('t190', 'adj-5', 'A', 'north', -10, 'loss', 'too many');
\echo :LAST_ERROR_SQLSTATE
-- the SKU was never stocked at that location (south has no A): IN002 for
-- a loss and for a return alike, no row made (a receipt comes first)
SELECT inventory.adjust_at('t190', 'adj-6', 'A', 'south', -1, 'loss', 'none there');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust_at('t190', 'adj-6', 'A', 'south', 1, 'return', 'none there');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM lstk ORDER BY tenant, sku, location;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM ledger ORDER BY sku, location, request_key;
SELECT * FROM counts;

-- replays return the available stored with the record; the location is
-- part of the payload: the same key at another location is IN001
SELECT inventory.restock_at('t190', 'rcpt-2', 'A', 'north', 7);
SELECT inventory.adjust_at('t190', 'adj-1', 'A', 'north', -2, 'loss', 'another reason');
SELECT inventory.restock_at('t190', 'rcpt-2', 'A', 'south', 7);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t190', 'rcpt-2', 'A', 7);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock_at('t190', 'rcpt-1', 'A', 'north', 10);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust_at('t190', 'adj-1', 'A', 'default', -2, 'loss', 'dropped');
\echo :LAST_ERROR_SQLSTATE
-- and the 5-argument restock's replay is a replay at default
SELECT inventory.restock('t190', 'rcpt-1', 'A', 10);
SELECT inventory.restock_at('t190', 'rcpt-1', 'A', 'default', 10);
SELECT * FROM counts;

-- IN004: a location the tenant does not have (another tenant's does not
-- count); nothing is made, not even the SKU
SELECT inventory.restock_at('t190', 'rcpt-x', 'A', 'nowhere', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock_at('t190', 'rcpt-x', 'NEW', 'nowhere', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock_at('t190', 'rcpt-x', 'A', 'lo', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust_at('t190', 'adj-x', 'A', 'nowhere', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
-- an unknown SKU at a known location: IN002 for adjust
SELECT inventory.adjust_at('t190', 'adj-x', 'NOPE', 'north', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
-- bad location names: 22023
SELECT inventory.restock_at('t190', 'rcpt-x', 'A', '', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock_at('t190', 'rcpt-x', 'A', NULL::text, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock_at('t190', 'rcpt-x', 'A', repeat('n', 65), 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust_at('t190', 'adj-x', 'A', NULL::text, 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM lstk ORDER BY tenant, sku, location;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT sku FROM inventory.sku WHERE tenant LIKE 't190%' ORDER BY sku;

------------------------------------------------------------------------
-- reservations take units at a location and show there; the totals of
-- inventory.stock are the sums over the locations
------------------------------------------------------------------------
-- A: default 9, north 9 (priority 10 serves first)
SELECT :oc FROM inventory.reserve('t190', 'k1', 'A', 3, '1 hour');
SELECT lines FROM inventory.lookup('t190', 'k1');
SELECT :oc FROM inventory.confirm('t190', 'k1');
SELECT :oc FROM inventory.reserve('t190', 'k2', 'A', 2, '1 hour');
SELECT * FROM lstk WHERE sku = 'A' ORDER BY tenant, sku, location;
SELECT * FROM stk ORDER BY tenant, sku;
-- the view's totals are the sums of location_stock
SELECT s.sku, s.available = sum(l.available) AS available_sums,
       s.reserved = sum(l.reserved) AS reserved_sums,
       s.consumed = sum(l.consumed) AS consumed_sums
  FROM inventory.stock s
  JOIN inventory.location_stock l ON l.tenant = s.tenant AND l.sku = s.sku
 WHERE s.tenant = 't190'
 GROUP BY s.sku, s.available, s.reserved, s.consumed ORDER BY s.sku;
-- a loss at a location never takes units held there
SELECT inventory.adjust_at('t190', 'adj-7', 'A', 'north', -5, 'loss', 'held units');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust_at('t190', 'adj-7', 'A', 'north', -4, 'loss', 'free units');

------------------------------------------------------------------------
-- slots: the SKU-wide slot count holds at every location of the SKU
------------------------------------------------------------------------
SELECT inventory.set_stock_slots('t190', 'A', 3) AS previous;
SELECT location, count(*) AS slots, sum(available) AS available, sum(reserved) AS reserved
  FROM inventory.stock_slot WHERE tenant = 't190' AND sku = 'A'
 GROUP BY location ORDER BY location;
SELECT * FROM lstk WHERE sku = 'A' ORDER BY tenant, sku, location;
SELECT inventory.set_stock_slots('t190', 'A', 1) AS previous;
SELECT location, count(*) AS slots, sum(available) AS available, sum(reserved) AS reserved
  FROM inventory.stock_slot WHERE tenant = 't190' AND sku = 'A'
 GROUP BY location ORDER BY location;
-- a new location of a slotted SKU gets the same slots
SELECT inventory.set_stock_slots('t190', 'B', 2) AS previous;
SELECT inventory.restock_at('t190', 'rcpt-6', 'B', 'north', 5);
SELECT location, count(*) AS slots, sum(available) AS available
  FROM inventory.stock_slot WHERE tenant = 't190' AND sku = 'B'
 GROUP BY location ORDER BY location;

------------------------------------------------------------------------
-- healthy afterwards
------------------------------------------------------------------------
SELECT :oc FROM inventory.cancel('t190', 'k2', 'done');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't190%' ORDER BY 1, 2, 3;
