-- 290_backend_caches: what a backend remembers (0.6) and what makes it
-- forget.  The remembered grants and first locations live in hash tables
-- that show in pg_backend_memory_contexts (named 'pg_inventory tenant
-- grants', 'pg_inventory first locations') while they hold anything, so
-- this file can see when they are forgotten: at a change of
-- inventory.tenant_grant or inventory.location, of a role membership, of
-- the marker type inventory.tenant_grantee; not at a CREATE TABLE or
-- CREATE TEMP TABLE, whose new types have nothing to do with grants.  The
-- races (a change that commits while a check reads) are in the isolation
-- spec backend_caches.  README "Remembered grants (0.6)".
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-20 00:00:00+00';
CREATE ROLE regress_t290_app;
CREATE ROLE regress_t290_other;
GRANT USAGE ON SCHEMA inventory TO regress_t290_app;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval)
	TO regress_t290_app;
SELECT inventory.grant_tenant('t290', 'regress_t290_app');
SELECT inventory.restock('t290', 'r', 'S', 100);

-- the caches this backend holds now (each shows while it holds anything)
CREATE FUNCTION pg_temp.caches() RETURNS text[] LANGUAGE sql AS $$
	SELECT COALESCE(array_agg(name ORDER BY name), '{}')
	  FROM pg_backend_memory_contexts
	 WHERE name IN ('pg_inventory tenant grants', 'pg_inventory first locations')
$$;

-- a call as the application: both filled
SET ROLE regress_t290_app;
SELECT status FROM inventory.reserve('t290', 'k1', 'S', 1);
RESET ROLE;
SELECT pg_temp.caches();

-- types made by CREATE TABLE and CREATE TEMP TABLE are not the marker:
-- nothing forgotten
CREATE TEMP TABLE t290_scratch (x int);
CREATE TABLE t290_table (x int);
DROP TABLE t290_table;
SELECT pg_temp.caches();

-- a change of inventory.location: the first locations forgotten, the
-- grants kept
SELECT inventory.set_location('t290', 'second', 20);
SELECT pg_temp.caches();

-- the marker's privileges change (a grant of another role): the grants
-- forgotten
SET ROLE regress_t290_app;
SELECT status FROM inventory.reserve('t290', 'k2', 'S', 1);
RESET ROLE;
SELECT pg_temp.caches();
SELECT inventory.grant_tenant('t290', 'regress_t290_other');
SELECT pg_temp.caches();

-- a revoke ends the grant for the next call, remembered or not
SET ROLE regress_t290_app;
SELECT status FROM inventory.reserve('t290', 'k3', 'S', 1);
RESET ROLE;
SELECT pg_temp.caches();
SELECT inventory.revoke_tenant('t290', 'regress_t290_app');
SELECT pg_temp.caches();
SET ROLE regress_t290_app;
SELECT status FROM inventory.reserve('t290', 'k4', 'S', 1);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- a role membership changes: forgotten (and the app acts for t290 again,
-- through the other role's grant)
SELECT pg_temp.caches();
GRANT regress_t290_other TO regress_t290_app;
SELECT pg_temp.caches();
SET ROLE regress_t290_app;
SELECT status FROM inventory.reserve('t290', 'k5', 'S', 1);
RESET ROLE;
SELECT pg_temp.caches();
REVOKE regress_t290_other FROM regress_t290_app;
SELECT pg_temp.caches();
SET ROLE regress_t290_app;
SELECT status FROM inventory.reserve('t290', 'k6', 'S', 1);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

SELECT inventory.revoke_tenant('t290', 'regress_t290_other');
REVOKE ALL ON SCHEMA inventory FROM regress_t290_app;
REVOKE ALL ON FUNCTION inventory.reserve(text, text, text, integer, interval)
	FROM regress_t290_app;
DROP ROLE regress_t290_app;
DROP ROLE regress_t290_other;
