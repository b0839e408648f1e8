/*
 * sql/pg_inventory--0.9--0.10.sql
 *
 * Upgrade step 0.9 -> 0.10: several nodes behind pg_inventory_router
 * (issue #13; README "Several nodes").
 *	- inventory.node_identity, node_number() and set_node_number(n): a
 *	  node's number gives the ids it makes (reservations, transitions,
 *	  ledger, events, audit) a range of their own, so that ids are unique
 *	  across the nodes and a tenant moved to another node keeps them;
 *	- partition_rows, partition_freeze, partition_import, partition_delete:
 *	  what a partition move (inventory_router.move_partition) runs on the
 *	  source and target nodes.
 * Adds objects only; existing rows and ids stay as they are (an upgraded
 * server is node 0 until set_node_number says otherwise).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.10'" to load this file. \quit

/*
 * 0.10: several nodes (README "Several nodes").  A node of a cluster behind
 * pg_inventory_router has a node number, which gives its ids a range of
 * their own, and the functions a partition move runs on the nodes.
 */
CREATE TABLE inventory.node_identity (
	one			boolean NOT NULL DEFAULT true,
	node_number	integer NOT NULL,
	numbered_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT node_identity_pkey PRIMARY KEY (one),
	CONSTRAINT node_identity_one CHECK (one),
	CONSTRAINT node_identity_number_range CHECK (node_number BETWEEN 0 AND 1023)
);
COMMENT ON TABLE inventory.node_identity IS
	'0.10: this database''s node number in a cluster of nodes (inventory.set_node_number); no row: node 0, the only node of a single server.';
COMMENT ON COLUMN inventory.node_identity.one IS 'Always true: the table has one row at most.';
COMMENT ON COLUMN inventory.node_identity.node_number IS 'The node number, 0 to 1023.';
COMMENT ON COLUMN inventory.node_identity.numbered_at IS 'When set_node_number last set it.';
REVOKE ALL ON inventory.node_identity FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('inventory.node_identity', '');

CREATE FUNCTION inventory.node_number()
	RETURNS integer
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
	RETURN coalesce((SELECT i.node_number FROM inventory.node_identity i), 0);
COMMENT ON FUNCTION inventory.node_number() IS
	'0.10: this database''s node number (0 to 1023; 0 when never set). A reservation id made here lies in [n * 2^43, (n + 1) * 2^43): id >> 43 is the number of the node that made it, which stays with it when its tenant moves to another node; every id stays below 2^53, exact in JSON read as a double. Errors: none.';

CREATE FUNCTION inventory.set_node_number(node_number integer)
	RETURNS integer
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- each sequence, and the size of a node's range of its values
	seqs constant text[] := ARRAY['reservation_id_seq', 'reservation_transition_id_seq',
								  'stock_ledger_id_seq', 'outbox_id_seq', 'operator_audit_id_seq'];
	-- (2^43 ids a node: every id stays below 2^53, exact in a JSON number
	-- read as a double, e.g. by JavaScript; reservation ids are a
	-- sequence number times 4 plus the ring)
	sizes constant bigint[] := ARRAY[2::bigint ^ 41, 2::bigint ^ 43, 2::bigint ^ 43,
									 2::bigint ^ 43, 2::bigint ^ 43];
	k integer;
	lo bigint;
	hi bigint;
	last bigint;
BEGIN
	IF node_number IS NULL OR node_number NOT BETWEEN 0 AND 1023 THEN
		RAISE EXCEPTION 'node_number must be between 0 and 1023'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('The value given is %s.', coalesce(node_number::text, 'NULL'));
	END IF;
	LOCK TABLE inventory.node_identity IN EXCLUSIVE MODE;
	-- every sequence must be unused, or already in the new range
	FOR k IN 1 .. pg_catalog.cardinality(seqs) LOOP
		lo := greatest(1, node_number * sizes[k]);
		hi := node_number * sizes[k] + (sizes[k] - 1);
		SELECT s.last_value INTO last FROM pg_catalog.pg_sequences s
		 WHERE s.schemaname = 'inventory' AND s.sequencename = seqs[k];
		IF last IS NOT NULL AND (last < lo OR last > hi) THEN
			RAISE EXCEPTION 'this node already made ids outside the range of node number %', node_number
				USING ERRCODE = '55000',
					  DETAIL = pg_catalog.format('Sequence inventory.%s is at %s; node %s draws its values from %s to %s (a reservation id is 4 times the value of reservation_id_seq plus its ring).',
												 seqs[k], last, node_number, lo, hi),
					  HINT = 'Number a node before its first call; a server that already holds data keeps number 0 (the default) and the new nodes take 1, 2, ...';
		END IF;
	END LOOP;
	FOR k IN 1 .. pg_catalog.cardinality(seqs) LOOP
		lo := greatest(1, node_number * sizes[k]);
		hi := node_number * sizes[k] + (sizes[k] - 1);
		SELECT s.last_value INTO last FROM pg_catalog.pg_sequences s
		 WHERE s.schemaname = 'inventory' AND s.sequencename = seqs[k];
		IF last IS NULL THEN
			EXECUTE pg_catalog.format('ALTER SEQUENCE inventory.%I MINVALUE %s MAXVALUE %s START %s RESTART',
									  seqs[k], lo, hi, lo);
		ELSE
			EXECUTE pg_catalog.format('ALTER SEQUENCE inventory.%I MINVALUE %s MAXVALUE %s START %s',
									  seqs[k], lo, hi, lo);
		END IF;
	END LOOP;
	INSERT INTO inventory.node_identity AS i (one, node_number) VALUES (true, node_number)
	ON CONFLICT ON CONSTRAINT node_identity_pkey
	DO UPDATE SET node_number = excluded.node_number, numbered_at = pg_catalog.now();
	RETURN node_number;
END
$$;
COMMENT ON FUNCTION inventory.set_node_number(integer) IS
	'0.10: makes this database node node_number (0 to 1023) of a cluster: the reservation ids it makes lie in [node_number * 2^43, (node_number + 1) * 2^43), its transition, ledger, event and audit ids in ranges of 2^43 of their own (every id below 2^53, exact in JSON read as a double), so that no two nodes make the same id and a tenant moved to another node keeps its ids. Run it on each node before its first call (a server that already holds data keeps 0, the default); running it again with the same number re-applies the ranges (after a restore from pg_dump). Superusers only (it alters the extension''s sequences). Returns node_number. Errors: 22023 (outside 0 to 1023 or NULL), 55000 (the node already made ids outside that range), 42501 (not the owner of the sequences).';

/*
 * A partition's rows: those of the tenants t with hashtext(t) & 63 =
 * partition (inventory_router.partition_of), from every table that a
 * tenant's business touches, in the order partition_import writes them.
 * A move copies them in two parts: the history first, without pausing the
 * partition's calls, then the rest during the pause.
 */
CREATE FUNCTION inventory._partition_of(tenant text)
	RETURNS integer
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	RETURN pg_catalog.hashtext(tenant) OPERATOR(pg_catalog.&) 63;
COMMENT ON FUNCTION inventory._partition_of(text) IS
	'Internal (the partition_* functions): the partition (0 to 63) of tenant, hashtext(tenant) & 63, as pg_inventory_router''s partition_of computes it on the router.';

CREATE FUNCTION inventory._visible_in(row_xmin xid, snapshot pg_snapshot)
	RETURNS boolean
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
	RETURN row_xmin::text::bigint < 3   -- frozen (or bootstrap): old
		OR pg_visible_in_snapshot(
			(CASE WHEN ((pg_snapshot_xmax(pg_current_snapshot())::text::bigint >> 32) << 32)
						   + row_xmin::text::bigint
						 > pg_snapshot_xmax(pg_current_snapshot())::text::bigint
				  THEN ((pg_snapshot_xmax(pg_current_snapshot())::text::bigint >> 32) << 32)
					   + row_xmin::text::bigint - 4294967296
				  ELSE ((pg_snapshot_xmax(pg_current_snapshot())::text::bigint >> 32) << 32)
					   + row_xmin::text::bigint END)::text::xid8,
			snapshot);
COMMENT ON FUNCTION inventory._visible_in(xid, pg_snapshot) IS
	'Internal (partition_rows): whether a row whose version was written by transaction row_xmin (a recent 32-bit id, or frozen) was committed as seen by snapshot.';

CREATE FUNCTION inventory.partition_rows(partition integer, part text DEFAULT 'all',
		history_snapshot pg_snapshot DEFAULT NULL)
	RETURNS TABLE(step integer, table_name text, row_data jsonb)
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF partition IS NULL OR partition NOT BETWEEN 0 AND 63 THEN
		RAISE EXCEPTION 'partition must be between 0 and 63'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(partition::text, 'NULL'));
	END IF;
	IF part IS NULL OR part NOT IN ('all', 'history', 'rest')
	   OR (part = 'rest') <> (history_snapshot IS NOT NULL) THEN
		RAISE EXCEPTION 'part must be all, history, or rest with the history''s snapshot'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('part %s, history_snapshot %s.', coalesce(part, 'NULL'),
											 coalesce(history_snapshot::text, 'NULL'));
	END IF;
	RETURN QUERY
	WITH res AS (
		-- the partition's reservations, and whether each belongs to the part
		SELECT r.*, r.state IN ('rejected', 'cancelled', 'expired', 'compensated') AS finished,
			   r.xmin AS row_xmin
		  FROM inventory.reservation r
		 WHERE inventory._partition_of(r.tenant) = partition),
	sel AS (
		SELECT res.* FROM res
		 WHERE part = 'all'
			OR (part = 'history' AND res.finished)
			OR (part = 'rest' AND NOT (res.finished
									   AND inventory._visible_in(res.row_xmin, history_snapshot))))
	SELECT u.step, u.table_name, u.row_data FROM (
	SELECT 1 AS step, 'location' AS table_name, to_jsonb(x) AS row_data FROM inventory.location x
	 WHERE inventory._partition_of(x.tenant) = partition
	   AND (part <> 'rest' OR NOT inventory._visible_in(x.xmin, history_snapshot))
	UNION ALL
	SELECT 2, 'allocation_policy', to_jsonb(x) FROM inventory.allocation_policy x
	 WHERE inventory._partition_of(x.tenant) = partition
	   AND (part <> 'rest' OR NOT inventory._visible_in(x.xmin, history_snapshot))
	UNION ALL
	SELECT 3, 'sku', to_jsonb(x) FROM inventory.sku x
	 WHERE inventory._partition_of(x.tenant) = partition
	   AND (part <> 'rest' OR NOT inventory._visible_in(x.xmin, history_snapshot))
	UNION ALL
	SELECT 4, 'stock_location', to_jsonb(x) FROM inventory.stock_location x
	 WHERE inventory._partition_of(x.tenant) = partition
	   AND (part <> 'rest' OR NOT inventory._visible_in(x.xmin, history_snapshot))
	UNION ALL
	SELECT 5, 'stock_slot', to_jsonb(x) FROM inventory.stock_slot x
	 WHERE part <> 'history' AND inventory._partition_of(x.tenant) = partition
	UNION ALL
	SELECT 6, 'stock_ledger', to_jsonb(x) FROM inventory.stock_ledger x
	 WHERE part <> 'history' AND inventory._partition_of(x.tenant) = partition
	UNION ALL
	SELECT 7, 'stock_ledger_archive', to_jsonb(x) FROM inventory.stock_ledger_archive x
	 WHERE inventory._partition_of(x.tenant) = partition
	   AND (part <> 'rest' OR NOT inventory._visible_in(x.xmin, history_snapshot))
	UNION ALL
	SELECT 8, 'purged_confirmed', to_jsonb(x) FROM inventory.purged_confirmed x
	 WHERE part <> 'history' AND inventory._partition_of(x.tenant) = partition
	UNION ALL
	SELECT 9, 'reservation', to_jsonb(x) - 'finished' - 'row_xmin' FROM sel x
	UNION ALL
	SELECT 10, 'reservation_line', to_jsonb(x) FROM inventory.reservation_line x
	  JOIN sel r ON r.id = x.reservation_id
	UNION ALL
	SELECT 11, 'reservation_transition', to_jsonb(x) FROM inventory.reservation_transition x
	  JOIN sel r ON r.id = x.reservation_id
	UNION ALL
	SELECT 12, 'reservation_archive', to_jsonb(x) FROM inventory.reservation_archive x
	 WHERE inventory._partition_of(x.tenant) = partition
	   AND (part <> 'rest' OR NOT inventory._visible_in(x.xmin, history_snapshot))
	UNION ALL
	SELECT 13, 'outbox', to_jsonb(x) FROM inventory.outbox x
	 WHERE part <> 'history' AND inventory._partition_of(x.tenant) = partition AND x.published_at IS NULL
	UNION ALL
	SELECT 14, 'tenant_grant', jsonb_build_object('tenant', x.tenant, 'member', x.member::text,
												  'granted_at', x.granted_at)
	  FROM inventory.tenant_grant x
	 WHERE part <> 'history' AND x.tenant <> '*' AND inventory._partition_of(x.tenant) = partition
	) AS u
	ORDER BY u.step, (u.row_data->>'id')::numeric;
END
$$;
COMMENT ON FUNCTION inventory.partition_rows(integer, text, pg_snapshot) IS
	'0.10, for a partition move (README "Moving a partition"): the rows of the tenants of partition (0 to 63; tenant t is in partition hashtext(t) & 63), one row each with its step (the order partition_import writes them in), table and content as JSON: locations, allocation policies, SKUs, stock, ledger and its archive, reservations with lines, transitions and archive, unpublished events (dead letters included) and tenant grants (the member by name). Not copied: published events (the source''s relay delivered them; partition_delete removes them with the rest) and operator_audit (the source keeps it). part all: every row, read in the transaction that holds partition_freeze. part history: the locations, allocation policy, SKUs and stock locations (their parents), the finished reservations (rejected, cancelled, expired, compensated: they never change again) with their lines and transitions, and the two archives, read at REPEATABLE READ before the pause, the transaction kept open until the move ends (its snapshot also keeps purge_history from truncating a ring meanwhile); part rest, with history_snapshot the snapshot of that read (pg_current_snapshot() there): every row the history did not return, and the parents changed since (partition_import writes them over the history''s), read under partition_freeze. Superusers only (reads every table). Errors: 22023 (partition outside 0 to 63, part or snapshot wrong), 42501.';

CREATE FUNCTION inventory.partition_freeze(partition integer)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	locked bigint;
	slots bigint;
BEGIN
	IF partition IS NULL OR partition NOT BETWEEN 0 AND 63 THEN
		RAISE EXCEPTION 'partition must be between 0 and 63'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(partition::text, 'NULL'));
	END IF;
	-- reservations first (the calls' order: the key, then the stock): the
	-- expiry skips the locked ones (SKIP LOCKED), the calls wait
	SELECT count(*) INTO locked FROM (
		SELECT 1 FROM inventory.reservation r
		 WHERE inventory._partition_of(r.tenant) = partition AND r.state = 'pending'
		 ORDER BY r.id FOR UPDATE) AS x;
	SELECT count(*) INTO slots FROM (
		SELECT 1 FROM inventory.stock_slot s
		 WHERE inventory._partition_of(s.tenant) = partition
		 ORDER BY s.tenant, s.sku, s.location, s.slot FOR UPDATE) AS x;
	RETURN locked + slots;
END
$$;
COMMENT ON FUNCTION inventory.partition_freeze(integer) IS
	'0.10, for a partition move: locks the pending reservations and the stock slots of the tenants of partition until the end of the transaction, so that nothing on this node changes them while they are copied (the expiry worker skips locked holds; a call that reaches this node directly waits for them; what such a call writes anew is caught by partition_changed_since). Returns how many rows it locked. Superusers only. Errors: 22023 (partition outside 0 to 63), 42501.';

CREATE FUNCTION inventory._rows_of(rows jsonb, table_name text)
	RETURNS TABLE(row_data jsonb)
	LANGUAGE sql IMMUTABLE STRICT
	SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT e.value->'row' FROM jsonb_array_elements(rows) WITH ORDINALITY AS e(value, ord)
	 WHERE e.value->>'table' = table_name ORDER BY e.ord;
END;
COMMENT ON FUNCTION inventory._rows_of(jsonb, text) IS
	'Internal (partition_import): the "row" of each element of rows whose "table" is table_name, in the order of the array.';

CREATE FUNCTION inventory.partition_import(rows jsonb)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	written bigint := 0;
	n bigint;
	member regrole;
BEGIN
	IF rows IS NULL OR jsonb_typeof(rows) <> 'array' THEN
		RAISE EXCEPTION 'rows must be a JSON array of {"table": ..., "row": ...} objects'
			USING ERRCODE = '22023';
	END IF;
	-- i: the elements in order (no temporary table: the move prepares
	-- this transaction, PREPARE TRANSACTION refuses temporary objects)
	IF EXISTS (SELECT 1 FROM (SELECT e.value->>'table' AS table_name, e.value->'row' AS row_data
								FROM jsonb_array_elements(rows) AS e) AS i
			   WHERE i.table_name IS NULL OR i.row_data IS NULL
				  OR i.table_name NOT IN ('location', 'allocation_policy', 'sku', 'stock_location',
										  'stock_slot', 'stock_ledger', 'stock_ledger_archive',
										  'purged_confirmed', 'reservation', 'reservation_line',
										  'reservation_transition', 'reservation_archive',
										  'outbox', 'tenant_grant')) THEN
		RAISE EXCEPTION 'rows holds an element that is not a row of a table partition_rows reads'
			USING ERRCODE = '22023';
	END IF;
	-- the parents (locations, policy, SKUs, stock locations) come with the
	-- history and again, if they changed since, with the rest: the later
	-- one wins (every column, as partition_rows reads them)
	INSERT INTO inventory.location
	SELECT (jsonb_populate_record(NULL::inventory.location, i.row_data)).*
	  FROM inventory._rows_of(rows, 'location') AS i
	ON CONFLICT ON CONSTRAINT location_pkey DO UPDATE
		SET priority = excluded.priority,
			active = excluded.active,
			created_at = excluded.created_at,
			updated_at = excluded.updated_at;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.allocation_policy
	SELECT (jsonb_populate_record(NULL::inventory.allocation_policy, i.row_data)).*
	  FROM inventory._rows_of(rows, 'allocation_policy') AS i
	ON CONFLICT ON CONSTRAINT allocation_policy_pkey DO UPDATE
		SET allow_split = excluded.allow_split,
			updated_at = excluded.updated_at;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.sku
	SELECT (jsonb_populate_record(NULL::inventory.sku, i.row_data)).*
	  FROM inventory._rows_of(rows, 'sku') AS i
	ON CONFLICT ON CONSTRAINT sku_pkey DO UPDATE
		SET slots = excluded.slots,
			created_at = excluded.created_at;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.stock_location
	SELECT (jsonb_populate_record(NULL::inventory.stock_location, i.row_data)).*
	  FROM inventory._rows_of(rows, 'stock_location') AS i
	ON CONFLICT ON CONSTRAINT stock_location_pkey DO UPDATE
		SET safety_stock = excluded.safety_stock,
			low_threshold = excluded.low_threshold,
			level = excluded.level,
			version = excluded.version,
			created_at = excluded.created_at;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.stock_slot
	SELECT (jsonb_populate_record(NULL::inventory.stock_slot, i.row_data)).*
	  FROM inventory._rows_of(rows, 'stock_slot') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.stock_ledger
	SELECT (jsonb_populate_record(NULL::inventory.stock_ledger, i.row_data)).*
	  FROM inventory._rows_of(rows, 'stock_ledger') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.stock_ledger_archive
	SELECT (jsonb_populate_record(NULL::inventory.stock_ledger_archive, i.row_data)).*
	  FROM inventory._rows_of(rows, 'stock_ledger_archive') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.purged_confirmed
	SELECT (jsonb_populate_record(NULL::inventory.purged_confirmed, i.row_data)).*
	  FROM inventory._rows_of(rows, 'purged_confirmed') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.reservation
	SELECT (jsonb_populate_record(NULL::inventory.reservation, i.row_data)).*
	  FROM inventory._rows_of(rows, 'reservation') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.reservation_line
	SELECT (jsonb_populate_record(NULL::inventory.reservation_line, i.row_data)).*
	  FROM inventory._rows_of(rows, 'reservation_line') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.reservation_transition
	SELECT (jsonb_populate_record(NULL::inventory.reservation_transition, i.row_data)).*
	  FROM inventory._rows_of(rows, 'reservation_transition') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	INSERT INTO inventory.reservation_archive
	SELECT (jsonb_populate_record(NULL::inventory.reservation_archive, i.row_data)).*
	  FROM inventory._rows_of(rows, 'reservation_archive') AS i;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	-- events take this node's next ids, in their order (the relay reads
	-- from this node's low-water mark up); the event id stays, so a
	-- consumer that saw one before the move drops its repeat
	INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload,
								  created_at, attempts, next_attempt_at, last_error, dead_at)
	SELECT x.event_id, x.event_type, x.tenant, x.reservation_id, x.payload, x.created_at,
		   x.attempts, x.next_attempt_at, x.last_error, x.dead_at
	  FROM inventory._rows_of(rows, 'outbox') AS i,
		   jsonb_populate_record(NULL::inventory.outbox, i.row_data) AS x
	 ORDER BY x.id;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	-- a grant's member holds the marker of live grants, as grant_tenant
	-- gives it (DROP ROLE then fails while it has grants)
	FOR member IN SELECT DISTINCT (i.row_data->>'member')::regrole
					FROM inventory._rows_of(rows, 'tenant_grant') AS i LOOP
		EXECUTE pg_catalog.format('GRANT USAGE ON TYPE inventory.tenant_grantee TO %s', member);
	END LOOP;
	INSERT INTO inventory.tenant_grant (tenant, member, granted_at)
	SELECT i.row_data->>'tenant', (i.row_data->>'member')::regrole,
		   (i.row_data->>'granted_at')::timestamptz
	  FROM inventory._rows_of(rows, 'tenant_grant') AS i
	ON CONFLICT ON CONSTRAINT tenant_grant_pkey DO NOTHING;
	GET DIAGNOSTICS n = ROW_COUNT; written := written + n;
	RETURN written;
END
$$;
COMMENT ON FUNCTION inventory.partition_import(jsonb) IS
	'0.10, for a partition move: writes rows read by partition_rows on another node, a JSON array of {"table": table_name, "row": row_data}, in the order of the array within each table and the tables in partition_rows'' steps; ids are kept (they are unique across numbered nodes) except the events'', which take this node''s next ids in their order (their event ids stay); a location, allocation policy, SKU or stock location this node already has is written over (a move copies them with the history and again with the rest if they changed in between); a tenant grant''s member is found by name (the role must exist here). Returns how many rows it wrote. Superusers only. Errors: 22023 (not such an array), 23505 (a reservation, ledger or other row this node already has: the partition was not empty here), 42704 (a granted role missing here), 42501.';

CREATE FUNCTION inventory.partition_delete(partition integer)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	deleted bigint := 0;
	n bigint;
	member regrole;
	members regrole[] := '{}';
BEGIN
	IF partition IS NULL OR partition NOT BETWEEN 0 AND 63 THEN
		RAISE EXCEPTION 'partition must be between 0 and 63'
			USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given is %s.', coalesce(partition::text, 'NULL'));
	END IF;
	DELETE FROM inventory.outbox x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.reservation_archive x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.reservation_transition x USING inventory.reservation r
	 WHERE r.id = x.reservation_id AND inventory._partition_of(r.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.reservation_line x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.reservation x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.purged_confirmed x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.stock_ledger_archive x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.stock_ledger x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.stock_slot x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.stock_location x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.sku x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.allocation_policy x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	DELETE FROM inventory.location x WHERE inventory._partition_of(x.tenant) = partition;
	GET DIAGNOSTICS n = ROW_COUNT; deleted := deleted + n;
	FOR member IN DELETE FROM inventory.tenant_grant x
				   WHERE x.tenant <> '*' AND inventory._partition_of(x.tenant) = partition
				   RETURNING x.member LOOP
		deleted := deleted + 1;
		members := members || member;
	END LOOP;
	-- a role left without grants gives the marker back, as revoke_tenant
	FOR member IN SELECT DISTINCT m FROM unnest(members) AS m
				   WHERE NOT EXISTS (SELECT 1 FROM inventory.tenant_grant g WHERE g.member = m) LOOP
		EXECUTE pg_catalog.format('REVOKE USAGE ON TYPE inventory.tenant_grantee FROM %s', member);
	END LOOP;
	RETURN deleted;
END
$$;
COMMENT ON FUNCTION inventory.partition_delete(integer) IS
	'0.10, for a partition move: deletes every row of the tenants of partition from this node (what partition_rows reads, and their published events), in the transaction that moved them; returns how many rows it deleted. The ledger and operator_audit rows of the move itself: none (a move is not a business change). Superusers only. Errors: 22023, 42501.';

CREATE FUNCTION inventory.partition_changed_since(partition integer, copy_snapshot pg_snapshot)
	RETURNS bigint
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t text;
	n bigint;
	changed bigint := 0;
BEGIN
	-- every table partition_rows reads but the outbox; each has a tenant
	-- column, except the transitions (their reservations' rows count)
	FOREACH t IN ARRAY ARRAY['location', 'allocation_policy', 'sku', 'stock_location',
							 'stock_slot', 'stock_ledger', 'stock_ledger_archive',
							 'purged_confirmed', 'reservation', 'reservation_line',
							 'reservation_archive', 'tenant_grant'] LOOP
		EXECUTE format('SELECT count(*) FROM inventory.%I x WHERE x.tenant <> ''*''
						   AND inventory._partition_of(x.tenant) = $1
						   AND NOT inventory._visible_in(x.xmin, $2)', t)
		   INTO n USING partition, copy_snapshot;
		changed := changed + n;
	END LOOP;
	RETURN changed;
END
$$;
COMMENT ON FUNCTION inventory.partition_changed_since(integer, pg_snapshot) IS
	'0.10, for a partition move: how many rows of the tenants of partition were written after copy_snapshot (taken before the move copied them) and are visible now (the move''s prepared delete keeps the rows it deleted visible to others): writes that reached this node without the router''s pause (a direct connection, a tool), which the move would otherwise delete unseen; the move aborts (40001) when there are any. Events are not counted (a relay marks them published meanwhile; the move copies the unpublished ones). Superusers only. Errors: 42501.';

REVOKE ALL ON FUNCTION inventory.node_number(), inventory.set_node_number(integer),
	inventory.partition_rows(integer, text, pg_snapshot), inventory.partition_freeze(integer),
	inventory.partition_import(jsonb), inventory.partition_delete(integer),
	inventory.partition_changed_since(integer, pg_snapshot),
	inventory._rows_of(jsonb, text), inventory._visible_in(xid, pg_snapshot),
	inventory._partition_of(text) FROM PUBLIC;
