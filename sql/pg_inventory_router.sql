-- pg_inventory_router 0.2: pg_inventory's API on several nodes, behind one
-- router database, with PL/Proxy.
--
-- Installed in a router database that has no pg_inventory of its own.  Every
-- tenant-scoped function of pg_inventory has a function of the same name,
-- arguments, defaults and result here (schema inventory), which runs the
-- call on the node that owns the tenant: tenants map to 64 partitions
-- (inventory_router.partition_of: hashtext(tenant) & 63), partitions to
-- nodes through inventory_router.placement, which the operator manages.
-- The operator calls (expire_due, check_invariants, worker_status,
-- dead letters, retention) run on every node and their results are
-- combined.  The node checks the caller: PL/Proxy connects to it as the
-- role in effect at the call (user=current_user), so tenant grants and
-- EXECUTE grants on the nodes mean what they mean on one server.

\echo Use "CREATE EXTENSION pg_inventory_router CASCADE" to load this file. \quit

DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'inventory') THEN
		RAISE EXCEPTION 'schema "inventory" already exists in database %', pg_catalog.current_database()
			USING ERRCODE = '42P06',
				  DETAIL = 'The router gives the nodes'' functions their own names (inventory.reserve, ...): it needs a database without pg_inventory or any other schema "inventory".',
				  HINT = 'Create a database for the router (CREATE DATABASE inventory_router) and install pg_inventory_router there.';
	END IF;
	IF EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'plproxy') THEN
		RAISE EXCEPTION 'schema "plproxy" already exists in database %', pg_catalog.current_database()
			USING ERRCODE = '42P06',
				  DETAIL = 'The router defines PL/Proxy''s cluster configuration functions (plproxy.get_cluster_version, get_cluster_partitions, get_cluster_config) for its cluster "pg_inventory".',
				  HINT = 'Install pg_inventory_router in a database of its own.';
	END IF;
END
$$;

CREATE SCHEMA inventory;
COMMENT ON SCHEMA inventory IS
	'pg_inventory_router: the functions of pg_inventory with the same names, arguments and results; each runs on the node that owns the tenant, or on every node (operator calls).';
CREATE SCHEMA inventory_router;
COMMENT ON SCHEMA inventory_router IS
	'pg_inventory_router: the nodes, the placement of the 64 tenant partitions on them, and the routing functions.';
CREATE SCHEMA plproxy;
COMMENT ON SCHEMA plproxy IS
	'PL/Proxy''s cluster configuration functions, defined by pg_inventory_router for the cluster "pg_inventory" from inventory_router.node and inventory_router.placement.';

---------------------------------------------------------------- placement

CREATE TABLE inventory_router.node (
	name		text PRIMARY KEY
				CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
	connstr		text NOT NULL
				CHECK (connstr <> ''
					   AND connstr !~* '^[a-z]+://'
					   AND connstr !~* '(^|[[:space:]'']|\\)(user|password|service)[[:space:]]*='),
	added_at	timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE inventory_router.node IS
	'The nodes: PostgreSQL databases with pg_inventory (0.10 or later, each with its own node number: inventory.set_node_number). Written by inventory_router.set_node.';
COMMENT ON COLUMN inventory_router.node.name IS
	'The node''s name: a lower-case letter, then up to 62 lower-case letters, digits or _.';
COMMENT ON COLUMN inventory_router.node.connstr IS
	'libpq connection string to the node''s database, in the key = value form (not a URI), without user= (PL/Proxy connects as the role in effect at the call, and uses a string that names a user as it is), without password= (passwords belong in a passfile= the router''s server can read, or in ~postgres/.pgpass) and without service= (a service file may name a user); add connect_timeout=2 so that calls for a stopped node fail fast.';

CREATE TABLE inventory_router.placement (
	partition	integer PRIMARY KEY CHECK (partition BETWEEN 0 AND 63),
	node		text NOT NULL REFERENCES inventory_router.node (name),
	placed_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	moving_to	text REFERENCES inventory_router.node (name)
);
COMMENT ON COLUMN inventory_router.placement.moving_to IS
	'Set while a move of the partition commits on its nodes (move_partition, resolve_moves): calls for the partition then fail at once (PL/Proxy cannot connect to "pg_inventory_partition_<p>_is_moving_to_<node>"), never read a half-committed copy; NULL otherwise.';
COMMENT ON TABLE inventory_router.placement IS
	'Which node owns each of the 64 tenant partitions (a tenant''s partition: inventory_router.partition_of). Filled by inventory_router.place_partitions; a partition that holds tenants changes node only by a move (README, "Moving a partition"): changing a row by hand sends its tenants'' calls to a node without their data.';

CREATE TABLE inventory_router.cluster_setting (
	key			text PRIMARY KEY
				CHECK (key IN ('connection_lifetime', 'query_timeout', 'keepalive_idle',
							   'keepalive_interval', 'keepalive_count')),
	val			text NOT NULL
);
COMMENT ON TABLE inventory_router.cluster_setting IS
	'PL/Proxy cluster settings of the cluster "pg_inventory" (plproxy.get_cluster_config): connection_lifetime, query_timeout, keepalive_* in seconds. Empty: PL/Proxy''s defaults.';

CREATE TABLE inventory_router.cluster_version (
	one			boolean PRIMARY KEY DEFAULT true CHECK (one),
	version		integer NOT NULL
);
-- a random start (0.2; 0.1 started at 1): a session that cached the
-- version of a router dropped and created again never takes the new
-- router's configuration for the one it cached
INSERT INTO inventory_router.cluster_version (version)
	VALUES (1 + (pg_catalog.random() * 1073741823)::integer);
COMMENT ON TABLE inventory_router.cluster_version IS
	'One row: the version of the cluster configuration, raised by every change of node, placement or cluster_setting; PL/Proxy reads it at every call (plproxy.get_cluster_version) and reloads the configuration when it changed. Starts at a random number (0.2), so that sessions that cached a dropped router''s version reload after CREATE EXTENSION.';

-- pg_dump writes the rows of the configuration (0.2): a restored router
-- routes as the dumped one (cluster_version is written anew by CREATE
-- EXTENSION, and raised by the restored rows)
SELECT pg_catalog.pg_extension_config_dump('inventory_router.node', '');
SELECT pg_catalog.pg_extension_config_dump('inventory_router.placement', '');
SELECT pg_catalog.pg_extension_config_dump('inventory_router.cluster_setting', '');

CREATE FUNCTION inventory_router._configuration_changed()
	RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	UPDATE inventory_router.cluster_version SET version = version + 1;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION inventory_router._configuration_changed() IS
	'Statement trigger on node, placement and cluster_setting: raises cluster_version, so that every router session reloads the configuration at its next call. Internal.';
CREATE TRIGGER configuration_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
	ON inventory_router.node FOR EACH STATEMENT
	EXECUTE FUNCTION inventory_router._configuration_changed();
CREATE TRIGGER configuration_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
	ON inventory_router.placement FOR EACH STATEMENT
	EXECUTE FUNCTION inventory_router._configuration_changed();
CREATE TRIGGER configuration_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
	ON inventory_router.cluster_setting FOR EACH STATEMENT
	EXECUTE FUNCTION inventory_router._configuration_changed();

CREATE FUNCTION inventory_router.partition_of(tenant text)
	RETURNS integer
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	RETURN pg_catalog.hashtext(tenant) & 63;
COMMENT ON FUNCTION inventory_router.partition_of(text) IS
	'The partition (0 to 63) of tenant: hashtext(tenant) & 63, the same on every PostgreSQL server, so a node computes it too. Fixed for the life of the cluster: adding a node moves partitions, never rehashes tenants. NULL for NULL.';

-- SECURITY DEFINER: an operator granted EXECUTE on it reads the placement
-- through it without SELECT on the table (0.2; 0.1 raised 42501 for them)
CREATE FUNCTION inventory_router.node_of(tenant text)
	RETURNS text
	LANGUAGE sql STABLE STRICT
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT p.node FROM inventory_router.placement p
			WHERE p.partition = inventory_router.partition_of(tenant));
COMMENT ON FUNCTION inventory_router.node_of(text) IS
	'The node that owns tenant (through its partition); NULL when the partition is not placed (while it moves: still the source). For operators (GRANT EXECUTE on it: README section 10; it reads the placement as its owner); calls route the same way. Errors: none.';

CREATE FUNCTION inventory_router._require_read_committed()
	RETURNS void
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'calls through pg_inventory_router run at READ COMMITTED only'
			USING ERRCODE = '0A000',
				  DETAIL = pg_catalog.format('This transaction is %s: its snapshot would route by a placement that a move may have changed since.',
											 pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))),
				  HINT = 'Call the router in autocommit (each call commits on its node anyway), or at READ COMMITTED.';
	END IF;
END
$$;
COMMENT ON FUNCTION inventory_router._require_read_committed() IS
	'Internal: raises 0A000 unless the transaction is READ COMMITTED. PL/Proxy reads the placement''s version with the transaction''s snapshot: at REPEATABLE READ or SERIALIZABLE, a call after a move would go to the partition''s old node.';

CREATE FUNCTION inventory_router.cluster_all()
	RETURNS text
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM inventory_router._require_read_committed();
	RETURN 'pg_inventory';
END
$$;
COMMENT ON FUNCTION inventory_router.cluster_all() IS
	'The CLUSTER of the operator calls that run on every node: checks that the transaction is READ COMMITTED (0A000 otherwise), then names the cluster "pg_inventory".';

CREATE FUNCTION inventory_router.cluster_all_paused()
	RETURNS text
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	PERFORM inventory_router._require_read_committed();
	-- shared: such calls run side by side; a move holds it exclusively
	-- while it copies, so that they wait for it
	PERFORM pg_catalog.pg_advisory_xact_lock_shared(1885825394, 64);
	RETURN 'pg_inventory';
END
$$;
COMMENT ON FUNCTION inventory_router.cluster_all_paused() IS
	'The CLUSTER of requeue_dead_letters, discard_dead_letters, purge_history and archive_ledger, which change rows of any partition: as cluster_all, and takes the lock 1885825394, 64 (pg_locks: objid 64) in share mode until the end of the router transaction; a move holds it exclusively while it copies, so these calls wait for it instead of changing events it is moving.';

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
CREATE FUNCTION inventory_router.cluster_for(tenant text)
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

CREATE FUNCTION inventory_router.place_partitions(nodes text[])
	RETURNS integer
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n integer := pg_catalog.cardinality(nodes);
	placed integer;
BEGIN
	IF n IS NULL OR n = 0 OR pg_catalog.array_position(nodes, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'nodes must be a non-empty array of node names'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(nodes::text, 'NULL'));
	END IF;
	IF EXISTS (SELECT 1 FROM pg_catalog.unnest(nodes) AS x(name)
			   WHERE NOT EXISTS (SELECT 1 FROM inventory_router.node d WHERE d.name = x.name)) THEN
		RAISE EXCEPTION 'nodes names a node the router does not know'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('Known nodes: %s.', (SELECT coalesce(pg_catalog.string_agg(d.name, ', ' ORDER BY d.name), 'none') FROM inventory_router.node d)),
				  HINT = 'Add it first: SELECT inventory_router.set_node(name, connstr).';
	END IF;
	LOCK TABLE inventory_router.placement IN SHARE ROW EXCLUSIVE MODE;
	INSERT INTO inventory_router.placement (partition, node)
	SELECT p, nodes[1 + (k % n)]
	  FROM (SELECT p, (pg_catalog.row_number() OVER (ORDER BY p) - 1)::integer AS k
			  FROM pg_catalog.generate_series(0, 63) AS p
			 WHERE NOT EXISTS (SELECT 1 FROM inventory_router.placement q WHERE q.partition = p)) AS free;
	GET DIAGNOSTICS placed = ROW_COUNT;
	RETURN placed;
END
$$;
COMMENT ON FUNCTION inventory_router.place_partitions(text[]) IS
	'Places every partition that has no node yet on the given nodes in turn (partition 0 on the first, 1 on the second, ...); placed partitions are left alone (moving one is a move: README). Returns how many it placed. Run it once when the cluster is made. Errors: 22023 (empty or NULL nodes, an unknown node).';

CREATE FUNCTION inventory_router.set_node(name text, connstr text)
	RETURNS boolean
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	added boolean;
BEGIN
	IF name IS NULL OR connstr IS NULL THEN
		RAISE EXCEPTION 'name and connstr must not be null' USING ERRCODE = '22023';
	END IF;
	INSERT INTO inventory_router.node AS d (name, connstr) VALUES (name, connstr)
	ON CONFLICT ON CONSTRAINT node_pkey DO UPDATE SET connstr = excluded.connstr
	RETURNING (xmax = 0) INTO added;
	RETURN added;
EXCEPTION WHEN check_violation THEN
	RAISE EXCEPTION 'node % cannot be set with this connection string or name', pg_catalog.quote_literal(name)
		USING ERRCODE = '22023',
			  DETAIL = 'A name is a lower-case letter then up to 62 lower-case letters, digits or _; a connection string is key = value pairs (not a URI) with no user= (PL/Proxy connects as the caller), no password= (use passfile=) and no service=.';
END
$$;
COMMENT ON FUNCTION inventory_router.set_node(text, text) IS
	'Adds the node name with the libpq connection string connstr, or changes the connection string of a known node (the same database reached another way; the partitions it owns stay). Returns whether the node is new. Errors: 22023 (NULL, a bad name, a connstr that is a URI or names user=, password= or service=).';

---------------------------------------------------------------- PL/Proxy configuration

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

CREATE FUNCTION plproxy.get_cluster_partitions(cluster_name text)
	RETURNS SETOF text
	LANGUAGE plpgsql STABLE
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	missing integer;
BEGIN
	IF cluster_name IS DISTINCT FROM 'pg_inventory' THEN
		RAISE EXCEPTION 'unknown PL/Proxy cluster %', coalesce(pg_catalog.quote_literal(cluster_name), 'NULL')
			USING ERRCODE = '42704', DETAIL = 'This router defines the cluster "pg_inventory" only.';
	END IF;
	SELECT p INTO missing FROM pg_catalog.generate_series(0, 63) AS p
	 WHERE NOT EXISTS (SELECT 1 FROM inventory_router.placement q WHERE q.partition = p)
	 ORDER BY p LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'partition % of the cluster "pg_inventory" has no node', missing
			USING ERRCODE = '55000',
				  HINT = 'Place the partitions: SELECT inventory_router.place_partitions(ARRAY[''node_a'', ...]).';
	END IF;
	-- a partition whose move is committing: a connection that fails at once
	-- and names the move
	RETURN QUERY SELECT CASE WHEN p.moving_to IS NULL THEN d.connstr
							 ELSE pg_catalog.format('host=/nonexistent/pg_inventory_partition_%s_is_moving_to_%s',
													p.partition, p.moving_to) END
				   FROM inventory_router.placement p
				   JOIN inventory_router.node d ON d.name = p.node
				  ORDER BY p.partition;
END
$$;
COMMENT ON FUNCTION plproxy.get_cluster_partitions(text) IS
	'PL/Proxy calls it when the configuration changed: the connection strings of the 64 partitions'' nodes, in partition order (partitions on the same node share one connection per router session and role). Errors: 42704 for another cluster, 55000 while a partition has no node.';

CREATE FUNCTION plproxy.get_cluster_config(cluster_name text, OUT key text, OUT val text)
	RETURNS SETOF record
	LANGUAGE plpgsql STABLE
	SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF cluster_name IS DISTINCT FROM 'pg_inventory' THEN
		RAISE EXCEPTION 'unknown PL/Proxy cluster %', coalesce(pg_catalog.quote_literal(cluster_name), 'NULL')
			USING ERRCODE = '42704', DETAIL = 'This router defines the cluster "pg_inventory" only.';
	END IF;
	RETURN QUERY SELECT s.key, s.val FROM inventory_router.cluster_setting s ORDER BY s.key;
END
$$;
COMMENT ON FUNCTION plproxy.get_cluster_config(text) IS
	'PL/Proxy calls it when the configuration changed: the rows of inventory_router.cluster_setting. Errors: 42704 for another cluster.';

---------------------------------------------------------------- the API

CREATE TYPE inventory.outcome AS (
	status		text,
	state		text,
	applied		boolean,
	reservation_id bigint,
	sku			text,
	quantity	integer,
	expires_at	timestamptz,
	lines		jsonb,
	reason		text
);
COMMENT ON TYPE inventory.outcome IS
	'Result of the reservation functions, as on a node: what the call amounts to (status), the effective state after it, whether it changed data, and the reservation it concerns.';

-- Each function below has the node's signature; its body names the
-- cluster (inventory_router.cluster_for: waits while the tenant's
-- partition moves) and the partition (inventory_router.partition_of), and
-- PL/Proxy runs SELECT * FROM inventory.<same name>(<same arguments>) there.

CREATE FUNCTION inventory.reserve(tenant text, request_key text, sku text,
		quantity integer, ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.reserve_lines(tenant text, request_key text,
		lines jsonb, ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.confirm(tenant text, request_key text)
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.cancel(tenant text, request_key text,
		reason text DEFAULT NULL)
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.compensate(tenant text, request_key text, reason text)
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.lookup(tenant text, request_key text)
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.extend(tenant text, request_key text, expires_at timestamptz)
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.amend(tenant text, request_key text, lines jsonb)
	RETURNS inventory.outcome LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.restock(tenant text, request_key text, sku text,
		quantity integer, reason text DEFAULT NULL)
	RETURNS bigint LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.restock_at(tenant text, request_key text, sku text,
		location text, quantity integer, reason text DEFAULT NULL)
	RETURNS bigint LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.adjust(tenant text, request_key text, sku text,
		delta bigint, kind text, reason text)
	RETURNS bigint LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.adjust_at(tenant text, request_key text, sku text,
		location text, delta bigint, kind text, reason text)
	RETURNS bigint LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.availability(tenant text, skus text[])
	RETURNS TABLE(sku text, location text, sellable bigint, available bigint,
				  reserved bigint, consumed bigint)
	LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.register_sku(tenant text, sku text, location text DEFAULT NULL)
	RETURNS boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.set_allocation_policy(tenant text, allow_split boolean)
	RETURNS boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.set_location(tenant text, location text,
		priority integer DEFAULT 100, active boolean DEFAULT true)
	RETURNS boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.set_stock_policy(tenant text, sku text, location text,
		safety_stock bigint DEFAULT 0, low_threshold bigint DEFAULT NULL)
	RETURNS boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;
CREATE FUNCTION inventory.set_stock_slots(tenant text, sku text, slots integer)
	RETURNS integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
$$;

-- grants: a regrole travels as its name (PL/Proxy would send the router's
-- role oid); a grant of * goes to every node
CREATE FUNCTION inventory_router.grant_tenant_on_node(tenant text, member text)
	RETURNS boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
	SELECT inventory.grant_tenant(tenant, member::regrole);
$$;
CREATE FUNCTION inventory_router.grant_tenant_on_all_nodes(tenant text, member text)
	RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
	SELECT inventory.grant_tenant(tenant, member::regrole);
$$;
CREATE FUNCTION inventory_router.revoke_tenant_on_node(tenant text, member text)
	RETURNS boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_for(tenant);
	RUN ON inventory_router.partition_of(tenant);
	SELECT inventory.revoke_tenant(tenant, member::regrole);
$$;
CREATE FUNCTION inventory_router.revoke_tenant_on_all_nodes(tenant text, member text)
	RETURNS SETOF boolean LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
	SELECT inventory.revoke_tenant(tenant, member::regrole);
$$;
COMMENT ON FUNCTION inventory_router.grant_tenant_on_node(text, text) IS
	'Internal (inventory.grant_tenant): grant_tenant on the node that owns tenant, the role given by name.';
COMMENT ON FUNCTION inventory_router.grant_tenant_on_all_nodes(text, text) IS
	'Internal (inventory.grant_tenant of *): grant_tenant on every node, one result per node.';
COMMENT ON FUNCTION inventory_router.revoke_tenant_on_node(text, text) IS
	'Internal (inventory.revoke_tenant): revoke_tenant on the node that owns tenant, the role given by name.';
COMMENT ON FUNCTION inventory_router.revoke_tenant_on_all_nodes(text, text) IS
	'Internal (inventory.revoke_tenant of *): revoke_tenant on every node, one result per node.';

CREATE FUNCTION inventory.grant_tenant(tenant text, member regrole)
	RETURNS boolean
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF tenant = '*' THEN
		RETURN (SELECT pg_catalog.bool_or(g)
				  FROM inventory_router.grant_tenant_on_all_nodes(tenant, member::text) AS g);
	END IF;
	RETURN inventory_router.grant_tenant_on_node(tenant, member::text);
END
$$;
CREATE FUNCTION inventory.revoke_tenant(tenant text, member regrole)
	RETURNS boolean
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF tenant = '*' THEN
		RETURN (SELECT pg_catalog.bool_or(g)
				  FROM inventory_router.revoke_tenant_on_all_nodes(tenant, member::text) AS g);
	END IF;
	RETURN inventory_router.revoke_tenant_on_node(tenant, member::text);
END
$$;

---------------------------------------------------------------- operator calls on every node

CREATE FUNCTION inventory_router.expire_due_by_node(max_rows integer)
	RETURNS SETOF integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
	SELECT inventory.expire_due(max_rows);
$$;
COMMENT ON FUNCTION inventory_router.expire_due_by_node(integer) IS
	'Internal (inventory.expire_due): expire_due(max_rows) on every node, one count per node.';
CREATE FUNCTION inventory.expire_due(max_rows integer DEFAULT 1000)
	RETURNS integer
	LANGUAGE sql VOLATILE
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT coalesce(sum(n), 0)::integer
			  FROM inventory_router.expire_due_by_node(max_rows) AS n);

CREATE FUNCTION inventory.check_invariants()
	RETURNS TABLE(tenant text, sku text, check_name text, detail text)
	LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
$$;
CREATE FUNCTION inventory.worker_status()
	RETURNS TABLE(enabled boolean, database text, launcher_state text,
				  launcher_pid integer, launcher_checks integer,
				  launcher_next_check timestamptz, worker_state text,
				  worker_pid integer, worker_started_at timestamptz,
				  worker_exit text, last_pass_at timestamptz,
				  last_pass_expired bigint, last_pass_purged bigint,
				  last_pass_history_purged bigint, total_passes bigint,
				  total_expired bigint, total_purged bigint,
				  total_history_purged bigint, total_errors bigint,
				  last_error_at timestamptz, last_error_sqlstate text,
				  last_error_message text)
	LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
$$;
CREATE FUNCTION inventory.transition_rules()
	RETURNS TABLE(call text, from_state text, to_state text, moves_from text,
				  moves_to text)
	LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ANY;
$$;

CREATE FUNCTION inventory_router.requeue_dead_letters_by_node(ids bigint[], reason text)
	RETURNS SETOF integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all_paused();
	RUN ON ALL;
	SELECT inventory.requeue_dead_letters(ids, reason);
$$;
COMMENT ON FUNCTION inventory_router.requeue_dead_letters_by_node(bigint[], text) IS
	'Internal (inventory.requeue_dead_letters): on every node, one count per node.';
CREATE FUNCTION inventory.requeue_dead_letters(ids bigint[] DEFAULT NULL, reason text DEFAULT NULL)
	RETURNS integer
	LANGUAGE sql VOLATILE
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT coalesce(sum(n), 0)::integer
			  FROM inventory_router.requeue_dead_letters_by_node(ids, reason) AS n);

CREATE FUNCTION inventory_router.discard_dead_letters_by_node(ids bigint[], reason text)
	RETURNS SETOF integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all_paused();
	RUN ON ALL;
	SELECT inventory.discard_dead_letters(ids, reason);
$$;
COMMENT ON FUNCTION inventory_router.discard_dead_letters_by_node(bigint[], text) IS
	'Internal (inventory.discard_dead_letters): on every node, one count per node.';
CREATE FUNCTION inventory.discard_dead_letters(ids bigint[], reason text)
	RETURNS integer
	LANGUAGE sql VOLATILE
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT coalesce(sum(n), 0)::integer
			  FROM inventory_router.discard_dead_letters_by_node(ids, reason) AS n);

CREATE FUNCTION inventory_router.purge_published_by_node(older_than interval, max_rows integer)
	RETURNS SETOF integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
	SELECT inventory.purge_published(older_than, max_rows);
$$;
COMMENT ON FUNCTION inventory_router.purge_published_by_node(interval, integer) IS
	'Internal (inventory.purge_published): on every node, one count per node.';
CREATE FUNCTION inventory.purge_published(older_than interval DEFAULT '7 days',
		max_rows integer DEFAULT 10000)
	RETURNS integer
	LANGUAGE sql VOLATILE
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT coalesce(sum(n), 0)::integer
			  FROM inventory_router.purge_published_by_node(older_than, max_rows) AS n);

CREATE FUNCTION inventory_router.purge_history_by_node(older_than interval,
		max_rows integer, archive boolean)
	RETURNS SETOF integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all_paused();
	RUN ON ALL;
	SELECT inventory.purge_history(older_than, max_rows, archive);
$$;
COMMENT ON FUNCTION inventory_router.purge_history_by_node(interval, integer, boolean) IS
	'Internal (inventory.purge_history): on every node, one count per node.';
CREATE FUNCTION inventory.purge_history(older_than interval DEFAULT '90 days',
		max_rows integer DEFAULT 10000, archive boolean DEFAULT false)
	RETURNS integer
	LANGUAGE sql VOLATILE
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT coalesce(sum(n), 0)::integer
			  FROM inventory_router.purge_history_by_node(older_than, max_rows, archive) AS n);

CREATE FUNCTION inventory_router.archive_ledger_by_node(older_than interval, max_rows integer)
	RETURNS SETOF integer LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all_paused();
	RUN ON ALL;
	SELECT inventory.archive_ledger(older_than, max_rows);
$$;
COMMENT ON FUNCTION inventory_router.archive_ledger_by_node(interval, integer) IS
	'Internal (inventory.archive_ledger): on every node, one count per node.';
CREATE FUNCTION inventory.archive_ledger(older_than interval DEFAULT '365 days',
		max_rows integer DEFAULT 10000)
	RETURNS integer
	LANGUAGE sql VOLATILE
	SET search_path = pg_catalog, pg_temp
	RETURN (SELECT coalesce(sum(n), 0)::integer
			  FROM inventory_router.archive_ledger_by_node(older_than, max_rows) AS n);

CREATE FUNCTION inventory_router.outbox_metrics_by_node()
	RETURNS TABLE(node_address text, unpublished bigint, retrying bigint,
				  dead_lettered bigint, published_last_minute bigint,
				  oldest_unpublished_at timestamptz, lag_seconds double precision,
				  below_low_water bigint, oldest_published_at timestamptz)
	LANGUAGE plproxy AS $$
	CLUSTER inventory_router.cluster_all();
	RUN ON ALL;
	SELECT pg_catalog.concat(pg_catalog.inet_server_addr(), ':', pg_catalog.inet_server_port(),
							 '/', pg_catalog.current_database()) AS node_address,
		   m.unpublished, m.retrying, m.dead_lettered, m.published_last_minute,
		   m.oldest_unpublished_at, m.lag_seconds, m.below_low_water,
		   m.oldest_published_at
	  FROM inventory.outbox_metrics AS m;
$$;
COMMENT ON FUNCTION inventory_router.outbox_metrics_by_node() IS
	'inventory.outbox_metrics of every node, one row per node, with the node''s address (host:port/database as the node sees the connection). Needs SELECT on inventory.outbox_metrics on the nodes.';
CREATE VIEW inventory.outbox_metrics AS
	SELECT sum(m.unpublished)::bigint AS unpublished,
		   sum(m.retrying)::bigint AS retrying,
		   sum(m.dead_lettered)::bigint AS dead_lettered,
		   sum(m.published_last_minute)::bigint AS published_last_minute,
		   min(m.oldest_unpublished_at) AS oldest_unpublished_at,
		   max(m.lag_seconds) AS lag_seconds,
		   sum(m.below_low_water)::bigint AS below_low_water,
		   min(m.oldest_published_at) AS oldest_published_at
	  FROM inventory_router.outbox_metrics_by_node() AS m;
COMMENT ON VIEW inventory.outbox_metrics IS
	'The outbox metrics of the whole cluster: counts summed over the nodes, the oldest instants, the largest lag (per node: inventory_router.outbox_metrics_by_node()).';

---------------------------------------------------------------- comments and privileges

COMMENT ON FUNCTION inventory.reserve(text, text, text, integer, interval) IS
	'Router: inventory.reserve on the node that owns tenant (same arguments, result and SQLSTATEs; an error message is prefixed by PL/Proxy with the function and the node''s database; the call commits on the node when it returns: a router transaction does not span the nodes, and its ROLLBACK does not undo it). Holds quantity units of sku for tenant during ttl, idempotent on (tenant, request_key). Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501, IN001, IN002); XX000 from PL/Proxy when the node cannot be reached; 55000 while a partition has no node.';
COMMENT ON FUNCTION inventory.reserve_lines(text, text, jsonb, interval) IS
	'Router: inventory.reserve_lines on the node that owns tenant: every line held or none, idempotent on (tenant, request_key). Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.confirm(text, text) IS
	'Router: inventory.confirm on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501); 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.cancel(text, text, text) IS
	'Router: inventory.cancel on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501); 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.compensate(text, text, text) IS
	'Router: inventory.compensate on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501); 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.lookup(text, text) IS
	'Router: inventory.lookup on the node that owns tenant: the stored outcome of the reserve call with this key. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501); 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.extend(text, text, timestamptz) IS
	'Router: inventory.extend on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.amend(text, text, jsonb) IS
	'Router: inventory.amend on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.restock(text, text, text, integer, text) IS
	'Router: inventory.restock on the node that owns tenant; returns available at the location default after it. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.restock_at(text, text, text, text, integer, text) IS
	'Router: inventory.restock_at on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.adjust(text, text, text, bigint, text, text) IS
	'Router: inventory.adjust on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501, IN002, IN003); 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.adjust_at(text, text, text, text, bigint, text, text) IS
	'Router: inventory.adjust_at on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.availability(text, text[]) IS
	'Router: inventory.availability on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.register_sku(text, text, text) IS
	'Router: inventory.register_sku on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.set_allocation_policy(text, boolean) IS
	'Router: inventory.set_allocation_policy on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.set_location(text, text, integer, boolean) IS
	'Router: inventory.set_location on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.set_stock_policy(text, text, text, bigint, bigint) IS
	'Router: inventory.set_stock_policy on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.set_stock_slots(text, text, integer) IS
	'Router: inventory.set_stock_slots on the node that owns tenant. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.grant_tenant(text, regrole) IS
	'Router: inventory.grant_tenant on the node that owns tenant, or on every node for * (true if any node added the grant); the role must exist, with the same name, on the router and on the nodes. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node (22023, 42501); 55000 while a partition has no node; XX000 when a node cannot be reached (for *, the nodes reached keep the grant: call it again).';
COMMENT ON FUNCTION inventory.revoke_tenant(text, regrole) IS
	'Router: inventory.revoke_tenant on the node that owns tenant, or on every node for * (true if any node removed the grant). Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the node; 55000 while a partition has no node; XX000 when a node cannot be reached (call it again).';
COMMENT ON FUNCTION inventory.expire_due(integer) IS
	'Router: inventory.expire_due(max_rows) on every node at once (at most max_rows on each); returns the sum. Each node''s expiry worker does this on its own; this is for operators. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes (22023, 42501); 55000 while a partition has no node; XX000 when a node cannot be reached (the other nodes'' expiries stay done); 22003 when the sum passes the integer range.';
COMMENT ON FUNCTION inventory.check_invariants() IS
	'Router: inventory.check_invariants on every node: the broken invariants of the whole cluster, one row each (no rows when every node is healthy). Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';
COMMENT ON FUNCTION inventory.worker_status() IS
	'Router: inventory.worker_status() of every node, one row per node. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';
COMMENT ON FUNCTION inventory.transition_rules() IS
	'Router: the state machine the nodes follow (inventory.transition_rules of any one node). Errors: 55000 while a partition has no node; XX000 when the node cannot be reached.';
COMMENT ON FUNCTION inventory.requeue_dead_letters(bigint[], text) IS
	'Router: inventory.requeue_dead_letters on every node; returns the sum. ids are outbox ids, unique in the cluster when every node has its own node number (inventory.set_node_number, 0.10); NULL: every dead letter. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';
COMMENT ON FUNCTION inventory.discard_dead_letters(bigint[], text) IS
	'Router: inventory.discard_dead_letters on every node; returns the sum. ids as for requeue_dead_letters. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';
COMMENT ON FUNCTION inventory.purge_published(interval, integer) IS
	'Router: inventory.purge_published on every node (at most max_rows on each); returns the sum. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';
COMMENT ON FUNCTION inventory.purge_history(interval, integer, boolean) IS
	'Router: inventory.purge_history on every node (at most max_rows on each); returns the sum. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';
COMMENT ON FUNCTION inventory.archive_ledger(interval, integer) IS
	'Router: inventory.archive_ledger on every node (at most max_rows on each); returns the sum. Errors: 0A000 inside a REPEATABLE READ or SERIALIZABLE transaction; those of the nodes; 55000 while a partition has no node; XX000 when a node cannot be reached.';

-- As on a node: the API is granted by the DBA (README), the same
-- statements as on the nodes.  The routing helpers run as the caller
-- inside every call (PL/Proxy evaluates CLUSTER, RUN ON and its
-- configuration functions with the caller's rights), so PUBLIC may run
-- them: they expose no data but the nodes' connection strings, which hold
-- no user, password or service (CHECK on inventory_router.node); the configuration
-- functions are SECURITY DEFINER for that reason only.  The internal
-- proxies (grants, fan-out) are PUBLIC too: what a role may do is decided
-- on the node, which checks EXECUTE on its own function and the tenant
-- grants for the connecting role, the caller.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA inventory FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA inventory_router FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA inventory FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA inventory_router FROM PUBLIC;
GRANT USAGE ON SCHEMA inventory_router, plproxy TO PUBLIC;
GRANT SELECT ON inventory_router.cluster_version TO PUBLIC;
GRANT EXECUTE ON FUNCTION inventory_router.cluster_for(text), inventory_router._cluster_for_checked(text),
	inventory_router.cluster_all(), inventory_router.cluster_all_paused(),
	inventory_router._require_read_committed(),
	inventory_router.partition_of(text),
	inventory_router.grant_tenant_on_node(text, text),
	inventory_router.grant_tenant_on_all_nodes(text, text),
	inventory_router.revoke_tenant_on_node(text, text),
	inventory_router.revoke_tenant_on_all_nodes(text, text),
	inventory_router.expire_due_by_node(integer),
	inventory_router.requeue_dead_letters_by_node(bigint[], text),
	inventory_router.discard_dead_letters_by_node(bigint[], text),
	inventory_router.purge_published_by_node(interval, integer),
	inventory_router.purge_history_by_node(interval, integer, boolean),
	inventory_router.archive_ledger_by_node(interval, integer),
	inventory_router.outbox_metrics_by_node(),
	plproxy.get_cluster_version(text), plproxy.get_cluster_partitions(text),
	plproxy.get_cluster_config(text) TO PUBLIC;

---------------------------------------------------------------- moving a partition

-- The move talks to the nodes through dblink (installed with the router,
-- in a schema of its choosing: these wrappers find it once, here).
DO $do$
DECLARE
	s text := (SELECT n.nspname FROM pg_catalog.pg_extension e
				 JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
				WHERE e.extname = 'dblink');
	path text;
BEGIN
	path := pg_catalog.format('%I, pg_catalog, pg_temp', s);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_connect(conn text, node text)
			RETURNS void LANGUAGE plpgsql SET search_path = %s AS $b$
		BEGIN
			IF conn = ANY (coalesce(dblink_get_connections(), '{}')) THEN
				PERFORM dblink_disconnect(conn);
			END IF;
			PERFORM dblink_connect(conn, (SELECT d.connstr FROM inventory_router.node d WHERE d.name = node)
				-- a conninfo value in single quotes, \ and ' escaped
				|| ' user=''' || pg_catalog.replace(pg_catalog.replace(current_user::text, E'\\', E'\\\\'), '''', E'\\''') || ''''
				|| ' application_name=pg_inventory_router_move');
		END $b$$f$, path);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_disconnect(conn text)
			RETURNS void LANGUAGE plpgsql SET search_path = %s AS $b$
		BEGIN
			IF conn = ANY (coalesce(dblink_get_connections(), '{}')) THEN
				PERFORM dblink_disconnect(conn);
			END IF;
		END $b$$f$, path);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_exec(conn text, sql text)
			RETURNS text LANGUAGE sql SET search_path = %s
			RETURN dblink_exec(conn, sql)$f$, path);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_value(conn text, sql text)
			RETURNS text LANGUAGE sql SET search_path = %s
			RETURN (SELECT t.v FROM dblink(conn, sql) AS t(v text) LIMIT 1)$f$, path);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_values(conn text, sql text)
			RETURNS SETOF text LANGUAGE sql SET search_path = %s
			AS 'SELECT t.v FROM dblink(conn, sql) AS t(v text)'$f$, path);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_open(conn text, sql text)
			RETURNS text LANGUAGE sql SET search_path = %s
			RETURN dblink_open(conn, 'pg_inventory_move_rows', sql)$f$, path);
	EXECUTE pg_catalog.format($f$
		CREATE FUNCTION inventory_router._node_fetch(conn text, rows integer)
			RETURNS jsonb LANGUAGE sql SET search_path = %s
			RETURN (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('table', t.table_name, 'row', t.row_data))
					  FROM dblink_fetch(conn, 'pg_inventory_move_rows', rows) AS t(table_name text, row_data jsonb))$f$, path);
END
$do$;
COMMENT ON FUNCTION inventory_router._node_connect(text, text) IS
	'Internal (move_partition, resolve_moves): opens the dblink connection conn to node as the role in effect.';
COMMENT ON FUNCTION inventory_router._node_disconnect(text) IS
	'Internal (move_partition, resolve_moves): closes the dblink connection conn if open.';
COMMENT ON FUNCTION inventory_router._node_exec(text, text) IS
	'Internal (move_partition, resolve_moves): runs a command on the dblink connection conn.';
COMMENT ON FUNCTION inventory_router._node_value(text, text) IS
	'Internal (move_partition, resolve_moves): the first column of the first row of a query on the dblink connection conn, as text.';
COMMENT ON FUNCTION inventory_router._node_values(text, text) IS
	'Internal (resolve_moves): the first column of each row of a query on the dblink connection conn, as text.';
COMMENT ON FUNCTION inventory_router._node_open(text, text) IS
	'Internal (move_partition): opens the cursor pg_inventory_move_rows of a query on the dblink connection conn.';
COMMENT ON FUNCTION inventory_router._node_fetch(text, integer) IS
	'Internal (move_partition): the next rows of the cursor pg_inventory_move_rows (table_name, row_data) as the JSON array inventory.partition_import takes; NULL at the end.';

CREATE FUNCTION inventory_router._move_gid(partition integer, source text, target text)
	RETURNS text
	LANGUAGE sql IMMUTABLE
	RETURN pg_catalog.format('pg_inventory_move.%s.%s.%s', partition, source, target);
COMMENT ON FUNCTION inventory_router._move_gid(integer, text, text) IS
	'Internal: the name of the prepared transactions of a move on its two nodes, pg_inventory_move.<partition>.<source>.<target> (a node name has no dot, so the name reads back one way only).';

CREATE PROCEDURE inventory_router.move_partition(partition integer, target text,
		batch_rows integer DEFAULT 1000, wait_for_calls interval DEFAULT '10 seconds')
	LANGUAGE plpgsql
AS $$
DECLARE
	source text;
	gid text;
	batch jsonb;
	copied bigint := 0;
	early bigint := 0;
	snap text;
	copy_snap text;
	frozen bigint;
	deleted bigint;
	changed bigint;
	t0 timestamptz := pg_catalog.clock_timestamp();
	paused timestamptz;
	pause_ms bigint;
	phase text := 'check';
	saved_lock_timeout text;
	err_state text;
	err_text text;
BEGIN
	-- outside a transaction block only: this fails here, before anything
	-- is done, when the CALL runs inside one (the switch commits)
	COMMIT;
	IF partition IS NULL OR partition NOT BETWEEN 0 AND 63 THEN
		RAISE EXCEPTION 'partition must be between 0 and 63'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(partition::text, 'NULL'));
	END IF;
	IF batch_rows IS NULL OR batch_rows NOT BETWEEN 1 AND 100000 THEN
		RAISE EXCEPTION 'batch_rows must be between 1 and 100000'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(batch_rows::text, 'NULL'));
	END IF;
	IF wait_for_calls IS NULL OR wait_for_calls <= interval '0' OR wait_for_calls > interval '1 hour' THEN
		RAISE EXCEPTION 'wait_for_calls must be above 0 and at most 1 hour'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(wait_for_calls::text, 'NULL'));
	END IF;
	IF NOT EXISTS (SELECT 1 FROM inventory_router.node d WHERE d.name = target) THEN
		RAISE EXCEPTION 'target node % is not known', coalesce(pg_catalog.quote_literal(target), 'NULL')
			USING ERRCODE = '22023', HINT = 'Add it first: SELECT inventory_router.set_node(name, connstr).';
	END IF;
	-- one move or resolve of a partition at a time: the placement row stays
	-- locked until the switch
	SELECT p.node INTO source FROM inventory_router.placement p
	 WHERE p.partition = move_partition.partition FOR UPDATE;
	IF source IS NULL THEN
		RAISE EXCEPTION 'partition % has no node', partition
			USING ERRCODE = '55000', HINT = 'Place the partitions first: inventory_router.place_partitions.';
	END IF;
	IF source = target THEN
		RAISE NOTICE 'partition % is on % already: nothing to move', partition, target;
		RETURN;
	END IF;
	gid := inventory_router._move_gid(partition, source, target);
	BEGIN
		PERFORM inventory_router._node_connect('pgi_move_source', source);
		PERFORM inventory_router._node_connect('pgi_move_target', target);
		IF inventory_router._node_value('pgi_move_source',
				'SELECT count(*) FROM pg_catalog.pg_prepared_xacts WHERE gid LIKE ''pg_inventory\_move.%''')::bigint > 0
		   OR inventory_router._node_value('pgi_move_target',
				'SELECT count(*) FROM pg_catalog.pg_prepared_xacts WHERE gid LIKE ''pg_inventory\_move.%''')::bigint > 0 THEN
			RAISE EXCEPTION 'a move that did not finish left a prepared transaction on % or %', source, target
				USING ERRCODE = '55000', HINT = 'CALL inventory_router.resolve_moves() finishes or undoes it.';
		END IF;
		IF inventory_router._node_value('pgi_move_target', pg_catalog.format(
				'SELECT count(*) FROM inventory.partition_rows(%s)', partition))::bigint > 0 THEN
			RAISE EXCEPTION 'target node % already holds rows of partition %', target, partition
				USING ERRCODE = '55000',
					  DETAIL = 'The router places the partition on ' || source || '; rows of it elsewhere were written there directly.',
					  HINT = 'Inspect them (SELECT * FROM inventory.partition_rows(' || partition || ') on the target); inventory.partition_delete(' || partition || ') there removes them.';
		END IF;
		-- the history first, while the calls go on: finished reservations
		-- never change again; this snapshot stays open until the end (it
		-- also keeps purge_history from truncating a ring meanwhile)
		phase := 'history';
		PERFORM inventory_router._node_connect('pgi_move_history', source);
		PERFORM inventory_router._node_exec('pgi_move_history', 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
		snap := inventory_router._node_value('pgi_move_history', 'SELECT pg_catalog.pg_current_snapshot()::text');
		PERFORM inventory_router._node_open('pgi_move_history', pg_catalog.format(
			'SELECT table_name, row_data FROM inventory.partition_rows(%s, ''history'')', partition));
		PERFORM inventory_router._node_exec('pgi_move_target', 'BEGIN');
		LOOP
			batch := inventory_router._node_fetch('pgi_move_history', batch_rows);
			EXIT WHEN batch IS NULL;
			early := early + inventory_router._node_value('pgi_move_target', pg_catalog.format(
				'SELECT inventory.partition_import(%L::jsonb)', batch))::bigint;
		END LOOP;
		-- the pause: calls for the partition wait (cluster_for) from the
		-- moment this waits for the lock, this waits for those already
		-- running, at most wait_for_calls.  A session lock: it outlives the
		-- switch's commit, until both nodes committed
		phase := 'pause';
		saved_lock_timeout := pg_catalog.current_setting('lock_timeout');
		PERFORM pg_catalog.set_config('lock_timeout',
			(extract(epoch FROM wait_for_calls) * 1000)::bigint::text, false);
		PERFORM pg_catalog.pg_advisory_lock(1885825394, partition);
		PERFORM pg_catalog.pg_advisory_lock(1885825394, 64);
		PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, false);
		paused := pg_catalog.clock_timestamp();
		phase := 'copy';
		-- the rest, under the partition's locks on the source (READ
		-- COMMITTED: a relay marking events published meanwhile is waited
		-- for, not a serialization failure); copy_snap is taken before the
		-- copy's own snapshot, so that anything the copy may miss is newer
		-- than it
		PERFORM inventory_router._node_exec('pgi_move_source', 'BEGIN');
		frozen := inventory_router._node_value('pgi_move_source', pg_catalog.format(
			'SELECT inventory.partition_freeze(%s)', partition))::bigint;
		copy_snap := inventory_router._node_value('pgi_move_source', 'SELECT pg_catalog.pg_current_snapshot()::text');
		PERFORM inventory_router._node_open('pgi_move_source', pg_catalog.format(
			'SELECT table_name, row_data FROM inventory.partition_rows(%s, ''rest'', %L)', partition, snap));
		LOOP
			batch := inventory_router._node_fetch('pgi_move_source', batch_rows);
			EXIT WHEN batch IS NULL;
			copied := copied + inventory_router._node_value('pgi_move_target', pg_catalog.format(
				'SELECT inventory.partition_import(%L::jsonb)', batch))::bigint;
		END LOOP;
		phase := 'delete';
		deleted := inventory_router._node_value('pgi_move_source', pg_catalog.format(
			'SELECT inventory.partition_delete(%s)', partition))::bigint;
		phase := 'prepare';
		PERFORM inventory_router._node_exec('pgi_move_target', pg_catalog.format('PREPARE TRANSACTION %L', gid));
		PERFORM inventory_router._node_exec('pgi_move_source', pg_catalog.format('PREPARE TRANSACTION %L', gid));
		-- writes that reached the source without this pause (a direct
		-- connection) since the copy's snapshot were deleted unseen (the
		-- prepared delete keeps them visible to this check) or are left
		-- behind
		changed := inventory_router._node_value('pgi_move_source', pg_catalog.format(
			'SELECT inventory.partition_changed_since(%s, %L)', partition, copy_snap))::bigint;
		IF changed > 0 THEN
			RAISE EXCEPTION 'rows of partition % were written on % during the move, not by the paused calls', partition, source
				USING ERRCODE = '40001',
					  DETAIL = pg_catalog.format('%s row(s) changed after the copy''s snapshot (a direct connection to the node, or the node''s own worker archiving history); the move changed nothing.', changed),
					  HINT = 'Move again; if it keeps failing, stop what writes to the node directly for the partition''s tenants.';
		END IF;
	EXCEPTION WHEN OTHERS THEN
		-- nothing moved: both nodes' transactions (prepared or not) are
		-- undone, and the calls go on on the source
		GET STACKED DIAGNOSTICS err_state = RETURNED_SQLSTATE, err_text = MESSAGE_TEXT;
		BEGIN
			PERFORM pg_catalog.set_config('lock_timeout', coalesce(saved_lock_timeout, pg_catalog.current_setting('lock_timeout')), false);
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
		BEGIN
			PERFORM inventory_router._node_exec('pgi_move_target', 'ROLLBACK');
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
		BEGIN
			PERFORM inventory_router._node_exec('pgi_move_source', 'ROLLBACK');
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
		IF phase = 'prepare' THEN
			BEGIN
				PERFORM inventory_router._node_exec('pgi_move_target', pg_catalog.format('ROLLBACK PREPARED %L', gid));
			EXCEPTION WHEN OTHERS THEN NULL;
			END;
			BEGIN
				PERFORM inventory_router._node_exec('pgi_move_source', pg_catalog.format('ROLLBACK PREPARED %L', gid));
			EXCEPTION WHEN OTHERS THEN NULL;
			END;
		END IF;
		PERFORM pg_catalog.pg_advisory_unlock_all();
		PERFORM inventory_router._node_disconnect('pgi_move_history');
		PERFORM inventory_router._node_disconnect('pgi_move_source');
		PERFORM inventory_router._node_disconnect('pgi_move_target');
		IF phase = 'pause' AND err_state = '55P03' THEN
			RAISE EXCEPTION 'calls for partition %, or another move, still ran after wait_for_calls (%)', partition, wait_for_calls
				USING ERRCODE = '55P03',
					  DETAIL = 'A router transaction that made a call for one of its tenants is still open, or another move holds the moves'' lock (pg_locks: advisory, classid 1885825394, objid the partition or 64); the move changed nothing.',
					  HINT = 'End that transaction, or move with a longer wait_for_calls.';
		END IF;
		IF phase = 'delete' AND err_state IN ('23503', '40001') THEN
			-- the delete met rows written since the copy's snapshot
			RAISE EXCEPTION 'rows of partition % were written on % during the move, not through the router', partition, source
				USING ERRCODE = '40001',
					  DETAIL = pg_catalog.format('Deleting the copied rows failed: %s; the move changed nothing.', err_text),
					  HINT = 'Stop what writes to the node directly for the partition''s tenants, then move again.';
		END IF;
		RAISE;
	END;
	-- the decision, durable before either node commits: the partition is
	-- moving to the target (resolve_moves finishes it from here); calls
	-- still wait (the session lock), and if this session dies they fail at
	-- once instead of reading a half-committed copy
	UPDATE inventory_router.placement p SET moving_to = target
	 WHERE p.partition = move_partition.partition;
	COMMIT;
	phase := 'commit';
	BEGIN
		PERFORM inventory_router._node_exec('pgi_move_target', pg_catalog.format('COMMIT PREPARED %L', gid));
		PERFORM inventory_router._node_exec('pgi_move_source', pg_catalog.format('COMMIT PREPARED %L', gid));
		-- the switch
		UPDATE inventory_router.placement p
		   SET node = target, moving_to = NULL, placed_at = pg_catalog.now()
		 WHERE p.partition = move_partition.partition;
	EXCEPTION WHEN OTHERS THEN
		PERFORM pg_catalog.pg_advisory_unlock(1885825394, 64);
		PERFORM pg_catalog.pg_advisory_unlock(1885825394, partition);
		PERFORM inventory_router._node_disconnect('pgi_move_history');
		PERFORM inventory_router._node_disconnect('pgi_move_source');
		PERFORM inventory_router._node_disconnect('pgi_move_target');
		RAISE EXCEPTION 'partition % is moving to % but a node did not commit its half: %', partition, target, SQLERRM
			USING ERRCODE = '55000',
				  DETAIL = 'Calls for the partition fail at once until the move is finished.',
				  HINT = 'CALL inventory_router.resolve_moves() once both nodes answer: it commits the prepared transactions left and switches the partition.';
	END;
	COMMIT;
	pause_ms := round(extract(epoch FROM pg_catalog.clock_timestamp() - paused) * 1000);
	PERFORM pg_catalog.pg_advisory_unlock(1885825394, 64);
	PERFORM pg_catalog.pg_advisory_unlock(1885825394, partition);
	PERFORM inventory_router._node_disconnect('pgi_move_history');
	PERFORM inventory_router._node_disconnect('pgi_move_source');
	PERFORM inventory_router._node_disconnect('pgi_move_target');
	RAISE NOTICE 'partition % moved from % to %: % rows copied before the pause and % during it, % deleted on the source (% locked there), calls paused for % ms, % ms in all',
		partition, source, target, early, copied, deleted, frozen, pause_ms,
		round(extract(epoch FROM pg_catalog.clock_timestamp() - t0) * 1000);
END
$$;
COMMENT ON PROCEDURE inventory_router.move_partition(integer, text, integer, interval) IS
	'Moves partition (0 to 63) and every row of its tenants from the node that owns it to target, losing nothing: CALL it outside a transaction block as a role that is a superuser on the router and on both nodes (it connects to them as itself with dblink, through the nodes'' connection strings). First the history (partition_rows part history: locations, SKUs, stock locations, finished reservations with their lines and transitions, the archives) is copied to the target at REPEATABLE READ while calls go on. Then the pause: calls for the partition wait from the moment the move asks for the partition''s lock, which it gets once the calls already running finished (at most wait_for_calls, else 55P03 and nothing changed); calls for the other partitions run as usual. On the source: partition_freeze locks the tenants'' pending holds and stock, the rest (part rest) is copied by batches of batch_rows rows (partition_import), partition_delete removes all of it; both nodes prepare their transaction (pg_inventory_move.<partition>.<source>.<target>); writes that reached the source directly meanwhile (partition_changed_since) abort the move (40001, nothing changed); the router switches the placement and commits, the target commits, the source commits, and the calls go on, on the target. Unpublished events move with new ids on the target and their event ids (one the source''s relay was sending is sent again, which consumers drop by event id). An error before the switch undoes everything; if a node or the router fails after it, calls for the partition fail or wait until resolve_moves commits what is left. Needs max_prepared_transactions > 0 on the nodes. Errors: 22023 (partition, target, batch_rows or wait_for_calls), 2D000 (inside a transaction block), 55000 (partition not placed, a move left unfinished, rows of the partition already on the target, a node that did not commit after the switch), 55P03 (the calls running did not finish within wait_for_calls), 40001 (direct writes on the source during the move), and those of the nodes and dblink.';

CREATE PROCEDURE inventory_router.resolve_moves()
	LANGUAGE plpgsql
AS $$
DECLARE
	n record;
	g text;
	p integer;
	source text;
	target text;
	owner text;
	moving text;
	done integer := 0;
	reached text[] := '{}';
BEGIN
	FOR n IN SELECT d.name FROM inventory_router.node d ORDER BY d.name LOOP
		BEGIN
			PERFORM inventory_router._node_connect('pgi_resolve', n.name);
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'node % cannot be reached: its prepared move transactions are left for a later resolve_moves (%)', n.name, SQLERRM;
			CONTINUE;
		END;
		reached := reached || n.name;
		FOR g IN SELECT * FROM inventory_router._node_values('pgi_resolve',
				'SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE gid LIKE ''pg_inventory\_move.%'' AND database = current_database()') LOOP
			SELECT q.partition, s.name, t.name INTO p, source, target
			  FROM inventory_router.placement q, inventory_router.node s, inventory_router.node t
			 WHERE g = inventory_router._move_gid(q.partition, s.name, t.name);
			IF NOT FOUND THEN
				RAISE WARNING 'prepared transaction % on node % names no partition and nodes this router knows: left alone', g, n.name;
				CONTINUE;
			END IF;
			-- a move still running holds the partition's lock exclusively:
			-- then leave it alone.  Calls hold it shared; they may even wait
			-- for the prepared transaction's row locks, so this must not
			-- wait for them
			IF NOT pg_catalog.pg_try_advisory_lock_shared(1885825394, p) THEN
				RAISE NOTICE 'move of partition % from % to %: still running, left alone', p, source, target;
				CONTINUE;
			END IF;
			SELECT q.node, q.moving_to INTO owner, moving FROM inventory_router.placement q
			 WHERE q.partition = p;
			IF owner = target OR moving = target THEN
				PERFORM inventory_router._node_exec('pgi_resolve', pg_catalog.format('COMMIT PREPARED %L', g));
				RAISE NOTICE 'move of partition % from % to %: committed its prepared transaction on %', p, source, target, n.name;
			ELSE
				PERFORM inventory_router._node_exec('pgi_resolve', pg_catalog.format('ROLLBACK PREPARED %L', g));
				RAISE NOTICE 'move of partition % from % to %: undid its prepared transaction on %', p, source, target, n.name;
			END IF;
			PERFORM pg_catalog.pg_advisory_unlock_shared(1885825394, p);
			done := done + 1;
		END LOOP;
		PERFORM inventory_router._node_disconnect('pgi_resolve');
	END LOOP;
	-- moves whose two nodes were reached and hold no prepared half of them
	-- any more: switch them
	FOR p, source, target IN SELECT q.partition, q.node, q.moving_to FROM inventory_router.placement q
							  WHERE q.moving_to IS NOT NULL ORDER BY q.partition LOOP
		IF NOT (source = ANY (reached) AND target = ANY (reached)) THEN
			RAISE NOTICE 'partition % moving from % to %: a node could not be reached, left alone', p, source, target;
			CONTINUE;
		END IF;
		IF NOT pg_catalog.pg_try_advisory_lock_shared(1885825394, p) THEN
			RAISE NOTICE 'partition % moving to %: its move is still running, left alone', p, target;
			CONTINUE;
		END IF;
		PERFORM inventory_router._node_connect('pgi_resolve', source);
		PERFORM inventory_router._node_connect('pgi_resolve_target', target);
		IF inventory_router._node_value('pgi_resolve', pg_catalog.format(
				'SELECT count(*) FROM pg_catalog.pg_prepared_xacts WHERE gid = %L',
				inventory_router._move_gid(p, source, target)))::bigint = 0
		   AND inventory_router._node_value('pgi_resolve_target', pg_catalog.format(
				'SELECT count(*) FROM pg_catalog.pg_prepared_xacts WHERE gid = %L',
				inventory_router._move_gid(p, source, target)))::bigint = 0 THEN
			UPDATE inventory_router.placement q SET node = q.moving_to, moving_to = NULL, placed_at = pg_catalog.now()
			 WHERE q.partition = p;
			RAISE NOTICE 'partition % switched to %', p, target;
			done := done + 1;
		END IF;
		PERFORM inventory_router._node_disconnect('pgi_resolve');
		PERFORM inventory_router._node_disconnect('pgi_resolve_target');
		PERFORM pg_catalog.pg_advisory_unlock_shared(1885825394, p);
	END LOOP;
	RAISE NOTICE '% step(s) of interrupted moves resolved', done;
END
$$;
COMMENT ON PROCEDURE inventory_router.resolve_moves() IS
	'Finishes or undoes what an interrupted move_partition left, by the placement: a prepared move transaction is committed where the placement says the partition is moving to (or is on) its target, rolled back elsewhere (both halves then: a node commits its half only after the move''s decision was committed); then a partition both of whose nodes were reached and hold no half of its move any more is switched to its target (placement.moving_to). A move still running (it holds the partition''s lock exclusively) is left alone; calls for the partition are not waited for (they may be waiting for a prepared half''s row locks, which this releases). A node that cannot be reached is reported (WARNING) and left for a later run. Run it as a superuser of the router and the nodes after a move failed with the router or a node gone, before moving again. Errors: those of the nodes and dblink.';

REVOKE ALL ON FUNCTION inventory_router._node_connect(text, text),
	inventory_router._node_disconnect(text), inventory_router._node_exec(text, text),
	inventory_router._node_value(text, text), inventory_router._node_values(text, text),
	inventory_router._node_open(text, text), inventory_router._node_fetch(text, integer),
	inventory_router._move_gid(integer, text, text) FROM PUBLIC;
REVOKE ALL ON PROCEDURE inventory_router.move_partition(integer, text, integer, interval),
	inventory_router.resolve_moves() FROM PUBLIC;
