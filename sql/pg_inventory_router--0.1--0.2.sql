-- pg_inventory_router 0.1 -> 0.2: a routed call costs the router less.
--
-- 0.1 spent about half of the router's CPU per call in three places:
-- plproxy.get_cluster_version was a scalar SQL function whose body reads a
-- table, so it was parsed and planned again at every call; cluster_for was
-- a PL/pgSQL function; every proxy function had a SET clause
-- (client_min_messages), which saves and restores the setting at every
-- call.  0.2: get_cluster_version is a set-returning SQL function, which
-- PL/Proxy's saved plan inlines; cluster_for is plain SQL inlined the same
-- way (its NULL and isolation checks in _cluster_for_checked, called only
-- when they fail); the proxies have no SET clause.  Without it, PL/Proxy's
-- notice "dropping stale conn" (at the first call after a call that failed
-- on its node) reaches the caller: set client_min_messages = warning for
-- the router's database (README section 10) to hide it.
--
-- Sessions open across the update keep working: their saved plans name
-- the functions replaced here and are planned again at their next call.

\echo Use "ALTER EXTENSION pg_inventory_router UPDATE TO '0.2'" to load this file. \quit

CREATE FUNCTION inventory_router._cluster_for_checked(tenant text)
	RETURNS text
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF tenant IS NULL THEN
		RAISE EXCEPTION 'argument "tenant" must not be null'
			USING ERRCODE = '22023', DETAIL = 'The value given is NULL.';
	END IF;
	PERFORM inventory_router._require_read_committed();
	PERFORM pg_catalog.pg_advisory_xact_lock_shared(1885825394, inventory_router.partition_of(tenant));
	RETURN 'pg_inventory';
END
$$;
COMMENT ON FUNCTION inventory_router._cluster_for_checked(text) IS
	'Internal: inventory_router.cluster_for when tenant is NULL or the transaction is not READ COMMITTED: raises 22023 for a NULL tenant, 0A000 at another isolation level; otherwise does what cluster_for does (takes the partition''s lock in share mode, returns ''pg_inventory'').';

-- On every call, and in plain SQL for that reason: PL/Proxy runs
-- SELECT inventory_router.cluster_for($1) through a saved plan, into which
-- the planner inlines this body (no PL/pgSQL frame, no SET clause: every
-- name is qualified).  The advisory lock function returns void, which
-- concat writes as ''.
CREATE OR REPLACE FUNCTION inventory_router.cluster_for(tenant text)
	RETURNS text
	LANGUAGE sql VOLATILE
	RETURN CASE WHEN tenant IS NOT NULL
				 AND pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) 'read committed'
			THEN pg_catalog.concat('pg_inventory',
					-- shared: calls for a partition run side by side; a move
					-- holds it exclusively, and a call that waited here reads
					-- the new placement
					pg_catalog.pg_advisory_xact_lock_shared(1885825394, inventory_router.partition_of(tenant)))
			ELSE inventory_router._cluster_for_checked(tenant) END;
COMMENT ON FUNCTION inventory_router.cluster_for(text) IS
	'The CLUSTER of every tenant-scoped proxy function: takes the tenant''s partition lock in share mode until the end of the router transaction (advisory lock 1885825394, partition: pg_locks shows classid 1885825394, objid the partition, objsubid 2), then names the cluster "pg_inventory". PL/Proxy reads the configuration''s version after this, so a call that waited for a move runs on the partition''s new node. Plain SQL that PL/Proxy''s saved plan inlines (0.2). Errors: 22023 when tenant is NULL (as the node would say), 0A000 outside READ COMMITTED.';

-- PL/Proxy's version function changes its result type (integer -> SETOF
-- integer): the old one is renamed, the new one created, the old one's
-- privileges carried over (a DBA may have revoked it from PUBLIC and
-- granted it to the application roles), and the old one dropped
ALTER FUNCTION plproxy.get_cluster_version(text) RENAME TO get_cluster_version_0_1;
-- On every call: PL/Proxy runs SELECT * FROM plproxy.get_cluster_version($1)
-- through a saved plan.  A set-returning SQL function in FROM is inlined
-- there (a scalar one whose body reads a table is not: it would be parsed
-- and planned again at every call); it returns one row for "pg_inventory".
-- No SET clause, every name qualified; the version is readable by PUBLIC.
CREATE FUNCTION plproxy.get_cluster_version(cluster_name text)
	RETURNS SETOF integer
	LANGUAGE sql STABLE ROWS 1
BEGIN ATOMIC
	SELECT v.version FROM inventory_router.cluster_version v
	 WHERE cluster_name OPERATOR(pg_catalog.=) 'pg_inventory';
END;
COMMENT ON FUNCTION plproxy.get_cluster_version(text) IS
	'PL/Proxy calls it at every call: the version of the cluster "pg_inventory" (inventory_router.cluster_version), one row; no row for another cluster, which PL/Proxy reports as an error. A set-returning SQL function so that PL/Proxy''s saved plan inlines it (0.2). Errors: none.';

DO $$
DECLARE
	a record;
BEGIN
	-- PUBLIC first, as a fresh install grants it (the acl in the same order)
	IF EXISTS (SELECT 1 FROM pg_catalog.pg_proc p,
					  pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) x
				WHERE p.oid = 'plproxy.get_cluster_version_0_1(text)'::pg_catalog.regprocedure
				  AND x.grantee = 0) THEN
		GRANT EXECUTE ON FUNCTION plproxy.get_cluster_version(text) TO PUBLIC;
	ELSE
		REVOKE EXECUTE ON FUNCTION plproxy.get_cluster_version(text) FROM PUBLIC;
	END IF;
	FOR a IN SELECT x.grantee, x.is_grantable
			   FROM pg_catalog.pg_proc p,
					pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) x
			  WHERE p.oid = 'plproxy.get_cluster_version_0_1(text)'::pg_catalog.regprocedure
				AND x.grantee NOT IN (0, p.proowner)
			  ORDER BY x.grantee
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION plproxy.get_cluster_version(text) TO %I%s',
			pg_catalog.pg_get_userbyid(a.grantee),
			CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
	END LOOP;
END
$$;
DROP FUNCTION plproxy.get_cluster_version_0_1(text);

-- the privileges of a fresh install: PUBLIC may execute it (the
-- functions of schema inventory_router are revoked from PUBLIC first)
REVOKE ALL ON FUNCTION inventory_router._cluster_for_checked(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory_router._cluster_for_checked(text) TO PUBLIC;

-- node_of reads the placement as its owner: an operator granted EXECUTE
-- on it had 42501 (no SELECT on inventory_router.placement)
ALTER FUNCTION inventory_router.node_of(text) SECURITY DEFINER;
COMMENT ON FUNCTION inventory_router.node_of(text) IS
	'The node that owns tenant (through its partition); NULL when the partition is not placed (while it moves: still the source). For operators (GRANT EXECUTE on it: README section 10; it reads the placement as its owner); calls route the same way. Errors: none.';

-- the configuration's version: the comment of 0.2 (its random start is
-- for CREATE EXTENSION; an updated router keeps its version)
COMMENT ON TABLE inventory_router.cluster_version IS
	'One row: the version of the cluster configuration, raised by every change of node, placement or cluster_setting; PL/Proxy reads it at every call (plproxy.get_cluster_version) and reloads the configuration when it changed. Starts at a random number (0.2), so that sessions that cached a dropped router''s version reload after CREATE EXTENSION.';

-- pg_dump writes the rows of the configuration (0.2)
SELECT pg_catalog.pg_extension_config_dump('inventory_router.node', '');
SELECT pg_catalog.pg_extension_config_dump('inventory_router.placement', '');
SELECT pg_catalog.pg_extension_config_dump('inventory_router.cluster_setting', '');

-- the proxy functions: no SET clause (their other settings, a site's, stay)
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN SELECT p.oid FROM pg_catalog.pg_proc p
			   JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
				AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
			   JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_inventory_router'
			  WHERE p.prolang = (SELECT l.oid FROM pg_catalog.pg_language l WHERE l.lanname = 'plproxy')
				AND 'client_min_messages=warning' OPERATOR(pg_catalog.=) ANY (p.proconfig)
	LOOP
		EXECUTE pg_catalog.format('ALTER FUNCTION %s RESET client_min_messages', f);
	END LOOP;
END
$$;
