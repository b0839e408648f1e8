-- 135_upgrade_privileges: an upgrade keeps privileges (README "Upgrading",
-- the 0.4 rule "Upgrades lose nothing").
--
-- A DBA grants an operator SELECT on every relation of the schema, then
-- updates 0.1 or 0.2 to the newest version: every relation an upgrade step
-- replaced (stock: a table, then a view; tenant_member: a table, then a
-- view) or filled from an older one (sku and stock_slot from stock,
-- outbox_metrics from outbox, tenant_grant from tenant_member; in 0.5
-- location and stock_location from sku, location_stock from stock) can be
-- read, and the carried grants are the DBA's (not in pg_init_privs as the
-- extension's), so pg_dump writes them.  A relation that is new and empty
-- (allocation_policy; the retention tables reservation_archive,
-- purged_confirmed, stock_ledger_archive; the DBA's console: operator_audit
-- and the views pending_hold, pending_hold_summary, reservation_metrics,
-- worker_status) gets no grant; a new column location is readable by
-- whoever could read the column sku of its table.  The dead-letter
-- functions that 0.5 replaces (they take a reason) keep their EXECUTE
-- grants, as the DBA's.
\set VERBOSITY sqlstate
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t135_operator;
RESET client_min_messages;
CREATE ROLE regress_t135_operator;

CREATE FUNCTION pg_temp.readable() RETURNS TABLE (relation text, readable boolean)
LANGUAGE sql AS $$
SELECT c.oid::regclass::text,
	   has_table_privilege('regress_t135_operator', c.oid, 'SELECT')
  FROM pg_class c
 WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind IN ('r', 'p', 'v')
 ORDER BY 1
$$;
CREATE FUNCTION pg_temp.extension_initial() RETURNS TABLE (relation text)
LANGUAGE sql AS $$
SELECT p.objoid::regclass::text
  FROM pg_init_privs p
 WHERE p.classoid = 'pg_class'::regclass
   AND p.initprivs::text LIKE '%regress_t135_operator%'
 ORDER BY 1
$$;

-- from 0.1
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.1';
GRANT USAGE ON SCHEMA inventory TO regress_t135_operator;
GRANT SELECT ON ALL TABLES IN SCHEMA inventory TO regress_t135_operator;
ALTER EXTENSION pg_inventory UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
SELECT * FROM pg_temp.readable();
SELECT * FROM pg_temp.extension_initial();
SET ROLE regress_t135_operator;
SELECT count(*) FROM inventory.stock;
SELECT count(*) FROM inventory.stock_slot;
SELECT count(*) FROM inventory.tenant_member;
SELECT unpublished FROM inventory.outbox_metrics;
RESET ROLE;

-- from 0.2
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.2';
GRANT SELECT ON ALL TABLES IN SCHEMA inventory TO regress_t135_operator;
GRANT EXECUTE ON FUNCTION inventory.requeue_dead_letters(bigint[]),
	inventory.discard_dead_letters(bigint[]) TO regress_t135_operator;
ALTER EXTENSION pg_inventory UPDATE;
SELECT * FROM pg_temp.readable() WHERE NOT readable;
SELECT * FROM pg_temp.extension_initial();
-- the dead-letter functions with a reason (0.5): executable by whoever
-- could execute the old ones, and not as the extension's initial privilege
SELECT p.oid::regprocedure AS function,
	   has_function_privilege('regress_t135_operator', p.oid, 'EXECUTE') AS executable,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS by_public,
	   EXISTS (SELECT 1 FROM pg_init_privs i
				WHERE i.objoid = p.oid AND i.classoid = 'pg_proc'::regclass
				  AND i.initprivs::text LIKE '%regress_t135_operator%') AS initial
  FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace AND p.proname LIKE '%dead_letters'
 ORDER BY 1;

-- column privileges too: a dashboard may read three columns of stock
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.2';
REVOKE ALL ON SCHEMA inventory FROM regress_t135_operator;
GRANT USAGE ON SCHEMA inventory TO regress_t135_operator;
GRANT SELECT (tenant, sku, available) ON inventory.stock TO regress_t135_operator;
GRANT SELECT (tenant, member) ON inventory.tenant_member TO regress_t135_operator;
ALTER EXTENSION pg_inventory UPDATE;
SELECT c.relname, a.attname,
	   has_column_privilege('regress_t135_operator', c.oid, a.attnum, 'SELECT') AS readable
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relnamespace = 'inventory'::regnamespace
   AND c.relname IN ('stock', 'sku', 'stock_slot', 'tenant_member', 'tenant_grant',
					 'location', 'stock_location', 'location_stock')
   AND has_column_privilege('regress_t135_operator', c.oid, a.attnum, 'SELECT')
 ORDER BY 1, 2;
SELECT count(*) AS extension_initial_columns FROM pg_init_privs p
 WHERE p.classoid = 'pg_class'::regclass AND p.objsubid > 0
   AND p.initprivs::text LIKE '%regress_t135_operator%';
SET ROLE regress_t135_operator;
SELECT count(*) FROM (SELECT tenant, sku, available FROM inventory.stock) s;
SELECT count(*) FROM (SELECT tenant, member FROM inventory.tenant_member) m;
RESET ROLE;

-- from 0.3: only tenant_member changes
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.3';
GRANT SELECT ON inventory.tenant_member TO regress_t135_operator;
ALTER EXTENSION pg_inventory UPDATE;
SELECT * FROM pg_temp.readable() WHERE readable;

-- back to a fresh install of the newest version for the files after this
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory;
REVOKE ALL ON SCHEMA inventory FROM regress_t135_operator;
DROP ROLE regress_t135_operator;
