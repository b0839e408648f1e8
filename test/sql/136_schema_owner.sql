-- 136_schema_owner: the schema the extension's functions use, as its owner,
-- belongs to a superuser (README "Roles and grants").  A role that owned a
-- schema named inventory could rename it and put objects of its own in its
-- place; the statements, which run as the extension's owner, would then
-- use them.  CREATE EXTENSION refuses a schema a non-superuser owns; the
-- update to 0.4 gives such a schema to the superuser that runs it; and a
-- call refuses to run when the schema named inventory is not the
-- extension's.
\set VERBOSITY sqlstate
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t136_owner;
RESET client_min_messages;
CREATE ROLE regress_t136_owner;

-- a schema inventory that a non-superuser made first is refused
DROP EXTENSION pg_inventory;
DROP SCHEMA inventory;
CREATE SCHEMA inventory AUTHORIZATION regress_t136_owner;
CREATE EXTENSION pg_inventory;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS extensions FROM pg_extension WHERE extname = 'pg_inventory';

-- an install of 0.3 that adopted it: the update to 0.4 takes it back
CREATE EXTENSION pg_inventory VERSION '0.3';
SET client_min_messages = error;
ALTER EXTENSION pg_inventory UPDATE;
RESET client_min_messages;
SELECT nspowner::regrole = current_user::regrole AS superuser_owns_it
  FROM pg_namespace WHERE nspname = 'inventory';

-- the schema named inventory replaced behind the extension's back: calls
-- refuse to run (here a superuser plays the part of the schema's owner)
SELECT inventory.restock('t136', 'r', 'A', 1);
ALTER SCHEMA inventory RENAME TO inventory_t136;
CREATE SCHEMA inventory;
CREATE TABLE inventory.reservation (id bigint);
SELECT status FROM inventory_t136.lookup('t136', 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory_t136.restock('t136', 'r2', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
DROP SCHEMA inventory CASCADE;
ALTER SCHEMA inventory_t136 RENAME TO inventory;
SELECT status FROM inventory.lookup('t136', 'k');

-- back to a fresh install of the newest version for the files after this
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory;
DROP ROLE regress_t136_owner;
