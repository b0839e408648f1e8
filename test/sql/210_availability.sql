-- 210_availability: availability(tenant, skus) for several SKUs: one row
-- per (sku, active location) by (sku, priority, location), then a total
-- row per SKU (location NULL); unknown SKUs absent; sellable net of safety
-- stock and of what is held; available, reserved and consumed NULL for a
-- role that acts for the tenant by its own grant, shown for an operator
-- with a grant of '*' and for a superuser; the limits (README
-- "availability").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-03 00:00:00+00';

-- this file's tenants are t210...: counts, stk and :oc (include/tenant.sql)
\set prefix t210
\ir include/tenant.sql

-- locations: hub (10), shop (20), annex (20: before shop by name, though
-- made after it), closed (5, inactive)
SELECT inventory.set_location('t210', 'hub', 10);
SELECT inventory.set_location('t210', 'shop', 20);
SELECT inventory.set_location('t210', 'annex', 20);
SELECT inventory.set_location('t210', 'closed', 5, false);
-- A: hub 5, shop 3, annex 1, closed 4; B: shop 2 with safety stock 1;
-- C: annex 0 (all reserved); D: only at closed
SELECT inventory.restock_at('t210', 'r-a-hub', 'A', 'hub', 5);
SELECT inventory.restock_at('t210', 'r-a-shop', 'A', 'shop', 3);
SELECT inventory.restock_at('t210', 'r-a-annex', 'A', 'annex', 1);
SELECT inventory.restock_at('t210', 'r-a-closed', 'A', 'closed', 4);
SELECT inventory.restock_at('t210', 'r-b-shop', 'B', 'shop', 2);
SELECT inventory.set_stock_policy('t210', 'B', 'shop', 1);
SELECT inventory.restock_at('t210', 'r-c-annex', 'C', 'annex', 2);
SELECT inventory.restock_at('t210', 'r-d-closed', 'D', 'closed', 6);
-- A: 2 held at hub, 1 consumed at hub; C: both held at annex
SELECT status, lines FROM inventory.reserve('t210', 'k1', 'A', 2, '1 hour');
SELECT status, lines FROM inventory.reserve('t210', 'k2', 'A', 1, '1 hour');
SELECT status FROM inventory.confirm('t210', 'k2');
SELECT status, lines FROM inventory.reserve('t210', 'k3', 'C', 2, '1 hour');
SELECT * FROM stk ORDER BY tenant, sku;

-- as a superuser: every column; in the function's own order; NOPE absent;
-- a SKU named twice listed once
SELECT * FROM inventory.availability('t210', ARRAY['C', 'A', 'NOPE', 'B', 'D', 'A']);
-- one SKU
SELECT * FROM inventory.availability('t210', ARRAY['B']);
-- only unknown SKUs: no rows
SELECT count(*) FROM inventory.availability('t210', ARRAY['NOPE']);
-- another tenant's SKUs are not this tenant's
SELECT inventory.restock('t210-other', 'r-x', 'X', 4);
SELECT count(*) FROM inventory.availability('t210', ARRAY['X']);
SELECT * FROM inventory.availability('t210-other', ARRAY['X', 'A']);
-- it writes nothing
SELECT * FROM counts;

------------------------------------------------------------------------
-- roles: an application role sees sellable only; an operator ('*') all
------------------------------------------------------------------------
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t210_app;
DROP ROLE IF EXISTS regress_t210_operator;
RESET client_min_messages;
CREATE ROLE regress_t210_app;
CREATE ROLE regress_t210_operator;
GRANT USAGE ON SCHEMA inventory TO regress_t210_app, regress_t210_operator;
GRANT EXECUTE ON FUNCTION inventory.availability(text, text[])
  TO regress_t210_app, regress_t210_operator;
SELECT inventory.grant_tenant('t210', 'regress_t210_app');
SELECT inventory.grant_tenant('*', 'regress_t210_operator');

SET ROLE regress_t210_app;
SELECT * FROM inventory.availability('t210', ARRAY['A', 'B', 'C']);
-- not its tenant: 42501
SELECT * FROM inventory.availability('t210-other', ARRAY['X']);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

SET ROLE regress_t210_operator;
SELECT * FROM inventory.availability('t210', ARRAY['A', 'B', 'C']);
SELECT * FROM inventory.availability('t210-other', ARRAY['X']);
RESET ROLE;

-- a role with a grant of t210 and of '*' sees everything (it acts for
-- every tenant)
SELECT inventory.grant_tenant('*', 'regress_t210_app');
SET ROLE regress_t210_app;
SELECT sku, location, available FROM inventory.availability('t210', ARRAY['B']);
RESET ROLE;
SELECT inventory.revoke_tenant('*', 'regress_t210_app');
SET ROLE regress_t210_app;
SELECT sku, location, available FROM inventory.availability('t210', ARRAY['B']);
RESET ROLE;

-- without EXECUTE: 42501
REVOKE EXECUTE ON FUNCTION inventory.availability(text, text[]) FROM regress_t210_app;
SET ROLE regress_t210_app;
SELECT * FROM inventory.availability('t210', ARRAY['A']);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

------------------------------------------------------------------------
-- limits: 1 to 1000 SKUs, no NULLs: 22023
------------------------------------------------------------------------
SELECT * FROM inventory.availability('t210', ARRAY[]::text[]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.availability('t210', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.availability('t210', ARRAY['A', NULL]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.availability(NULL, ARRAY['A']);
\echo :LAST_ERROR_SQLSTATE
-- SKUs within the identifier limits (README "Limits")
SELECT * FROM inventory.availability('t210', ARRAY[repeat('s', 65)]);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.availability('t210', ARRAY['A', '']);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inventory.availability('t210', ARRAY[E'A\n']);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM inventory.availability('t210',
  (SELECT array_agg('S' || i) FROM generate_series(1, 1001) i));
\echo :LAST_ERROR_SQLSTATE
-- 1000 is fine (A among them)
SELECT count(*), count(*) FILTER (WHERE location IS NULL) AS totals
  FROM inventory.availability('t210',
  (SELECT array_agg('S' || i) || ARRAY['A'] FROM generate_series(1, 999) i));

-- the roles go again
DROP OWNED BY regress_t210_app, regress_t210_operator;
DROP ROLE regress_t210_app;
DROP ROLE regress_t210_operator;
