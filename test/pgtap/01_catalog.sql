-- test/pgtap/01_catalog.sql
--
-- The shape of the extension as the README's reference fixes it: schema, relations and
-- their columns, the inventory.outcome type, every function with its
-- argument types, parameter names, defaults and result, comments on every
-- public object, EXECUTE revoked from PUBLIC, pinned search_path, named
-- constraints, and pg_dump registration of the user data
-- (pg_extension_config_dump).
--
-- Runs with pg_prove in a database where pgtap and pg_inventory exist.

BEGIN;
SELECT plan(286);

/* ------------------------------------------------------------------
 * Extension and schema
 * ---------------------------------------------------------------- */
SELECT has_extension('pg_inventory', 'extension pg_inventory is installed');
SELECT has_schema('inventory', 'schema inventory exists');
SELECT is(
	(SELECT extnamespace::regnamespace::text FROM pg_catalog.pg_extension
	  WHERE extname = 'pg_inventory'),
	'inventory', 'the extension lives in schema inventory');
SELECT is(
	(SELECT extrelocatable FROM pg_catalog.pg_extension
	  WHERE extname = 'pg_inventory'),
	false, 'the extension is not relocatable');

/* ------------------------------------------------------------------
 * Relations of the contract (stock may be a table or a view)
 * ---------------------------------------------------------------- */
SELECT has_relation('inventory', 'stock', 'inventory.stock exists');
SELECT has_table('inventory', 'reservation', 'inventory.reservation is a table');
SELECT has_table('inventory', 'reservation_line', 'inventory.reservation_line is a table');
SELECT has_table('inventory', 'stock_ledger', 'inventory.stock_ledger is a table');
SELECT has_table('inventory', 'reservation_transition', 'inventory.reservation_transition is a table');
SELECT has_relation('inventory', 'tenant_member', 'inventory.tenant_member exists');
SELECT has_view('inventory', 'tenant_member', 'inventory.tenant_member is the view of the live grants (0.4)');
SELECT has_table('inventory', 'tenant_grant', 'inventory.tenant_grant is a table (0.4)');
SELECT has_domain('inventory', 'tenant_grantee', 'the grant marker inventory.tenant_grantee exists (0.4)');
SELECT has_table('inventory', 'outbox', 'inventory.outbox is a table');
SELECT has_table('inventory', 'location', 'inventory.location is a table (0.5)');
SELECT has_table('inventory', 'allocation_policy', 'inventory.allocation_policy is a table (0.5)');
SELECT has_table('inventory', 'stock_location', 'inventory.stock_location is a table (0.5)');
SELECT has_view('inventory', 'location_stock', 'inventory.location_stock is a view (0.5)');
SELECT has_table('inventory', 'reservation_archive', 'inventory.reservation_archive is a table (0.5, retention)');
SELECT has_table('inventory', 'purged_confirmed', 'inventory.purged_confirmed is a table (0.5, retention)');
SELECT has_table('inventory', 'stock_ledger_archive', 'inventory.stock_ledger_archive is a table (0.5, retention)');
-- 0.5: the DBA's console
SELECT has_view('inventory', 'pending_hold', 'inventory.pending_hold is a view (0.5)');
SELECT has_view('inventory', 'pending_hold_summary', 'inventory.pending_hold_summary is a view (0.5)');
SELECT has_view('inventory', 'reservation_metrics', 'inventory.reservation_metrics is a view (0.5)');
SELECT has_view('inventory', 'worker_status', 'inventory.worker_status is a view (0.5)');
SELECT has_table('inventory', 'operator_audit', 'inventory.operator_audit is a table (0.5)');

/* ------------------------------------------------------------------
 * Columns of the contract.  Identifier columns (tenant, sku,
 * request_key, state, kind, ...) must be text or a domain over text;
 * counts are bigint; timestamps timestamptz.
 * ---------------------------------------------------------------- */
CREATE TEMP TABLE contract_column (rel name, col name, base_type text);
INSERT INTO contract_column VALUES
	('stock', 'tenant', 'text'),
	('stock', 'sku', 'text'),
	('stock', 'available', 'bigint'),
	('stock', 'reserved', 'bigint'),
	('stock', 'consumed', 'bigint'),
	('reservation', 'id', 'bigint'),
	('reservation', 'tenant', 'text'),
	('reservation', 'request_key', 'text'),
	('reservation', 'state', 'text'),
	('reservation', 'expires_at', 'timestamp with time zone'),
	('reservation', 'version', NULL),
	('reservation', 'reason', 'text'),
	('reservation', 'created_at', 'timestamp with time zone'),
	('reservation_line', 'reservation_id', 'bigint'),
	('reservation_line', 'sku', 'text'),
	('reservation_line', 'quantity', 'integer'),
	('stock_ledger', 'tenant', 'text'),
	('stock_ledger', 'sku', 'text'),
	('stock_ledger', 'request_key', 'text'),
	('stock_ledger', 'kind', 'text'),
	('stock_ledger', 'delta', 'bigint'),
	('stock_ledger', 'reason', 'text'),
	('stock_ledger', 'created_at', 'timestamp with time zone'),
	('reservation_transition', 'reservation_id', 'bigint'),
	('reservation_transition', 'from_state', 'text'),
	('reservation_transition', 'to_state', 'text'),
	('reservation_transition', 'reason', 'text'),
	('reservation_transition', 'actor', 'text'),
	('reservation_transition', 'version', NULL),
	('reservation_transition', 'created_at', 'timestamp with time zone'),
	('tenant_member', 'tenant', 'text'),
	('tenant_member', 'member', NULL),
	('outbox', 'id', 'bigint'),
	('outbox', 'event_id', 'uuid'),
	('outbox', 'event_type', 'text'),
	('outbox', 'tenant', 'text'),
	('outbox', 'payload', NULL),
	('outbox', 'created_at', 'timestamp with time zone'),
	('outbox', 'attempts', NULL),
	('outbox', 'next_attempt_at', 'timestamp with time zone'),
	('outbox', 'published_at', 'timestamp with time zone'),
	('outbox', 'last_error', 'text'),
	('outbox', 'dead_at', 'timestamp with time zone'),
	-- 0.5: locations
	('location', 'tenant', 'text'),
	('location', 'location', 'text'),
	('location', 'priority', 'integer'),
	('location', 'active', 'boolean'),
	('allocation_policy', 'tenant', 'text'),
	('allocation_policy', 'allow_split', 'boolean'),
	('stock_location', 'tenant', 'text'),
	('stock_location', 'sku', 'text'),
	('stock_location', 'location', 'text'),
	('stock_location', 'safety_stock', 'bigint'),
	('stock_location', 'low_threshold', 'bigint'),
	('stock_location', 'level', 'text'),
	('stock_location', 'version', 'bigint'),
	('location_stock', 'tenant', 'text'),
	('location_stock', 'sku', 'text'),
	('location_stock', 'location', 'text'),
	('location_stock', 'available', 'bigint'),
	('location_stock', 'reserved', 'bigint'),
	('location_stock', 'consumed', 'bigint'),
	('location_stock', 'safety_stock', 'bigint'),
	('location_stock', 'sellable', 'bigint'),
	('location_stock', 'level', 'text'),
	('location_stock', 'version', 'bigint'),
	('stock_slot', 'location', 'text'),
	('stock_ledger', 'location', 'text'),
	('reservation_line', 'location', 'text'),
	('reservation_line', 'available', 'bigint'),
	('reservation', 'request', 'jsonb'),
	-- 0.6: the slot guards
	('stock_slot', 'keep_units', 'bigint'),
	('stock_slot', 'level_watch', 'bigint');

-- one has_column per contract column (73 tests)
SELECT has_column('inventory', rel, col,
		format('inventory.%s has column %s', rel, col))
  FROM contract_column ORDER BY rel, col;

-- no contract column has a type other than the one listed (a domain counts
-- as its base type)
SELECT is_empty($$
	SELECT cc.rel, cc.col, format_type(a.atttypid, a.atttypmod) AS got
	  FROM contract_column cc
	  JOIN pg_catalog.pg_attribute a
		ON a.attrelid = format('inventory.%I', cc.rel)::regclass
	   AND a.attname = cc.col AND NOT a.attisdropped
	  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
	 WHERE cc.base_type IS NOT NULL
	   AND format_type(CASE t.typtype WHEN 'd' THEN t.typbasetype ELSE t.oid END,
					   NULL) <> cc.base_type
$$, 'every contract column has the contract type (domains count as their base type)');

-- the types the contract names literally, checked one by one
SELECT col_type_is('inventory', 'stock', 'available', 'bigint', 'stock.available is bigint');
SELECT col_type_is('inventory', 'stock', 'reserved', 'bigint', 'stock.reserved is bigint');
SELECT col_type_is('inventory', 'stock', 'consumed', 'bigint', 'stock.consumed is bigint');
SELECT col_type_is('inventory', 'reservation', 'id', 'bigint', 'reservation.id is bigint');
SELECT col_type_is('inventory', 'reservation', 'state', 'text', 'reservation.state is text');
SELECT col_type_is('inventory', 'reservation', 'expires_at', 'timestamp with time zone', 'reservation.expires_at is timestamptz');
SELECT col_type_is('inventory', 'reservation_line', 'reservation_id', 'bigint', 'reservation_line.reservation_id is bigint');
SELECT col_type_is('inventory', 'reservation_line', 'quantity', 'integer', 'reservation_line.quantity is integer');
SELECT col_type_is('inventory', 'stock_ledger', 'delta', 'bigint', 'stock_ledger.delta is bigint');
SELECT col_type_is('inventory', 'stock_ledger', 'created_at', 'timestamp with time zone', 'stock_ledger.created_at is timestamptz');
SELECT col_type_is('inventory', 'reservation_transition', 'created_at', 'timestamp with time zone', 'reservation_transition.created_at is timestamptz');
SELECT col_type_is('inventory', 'outbox', 'event_id', 'uuid', 'outbox.event_id is uuid');
SELECT col_type_is('inventory', 'outbox', 'payload', 'jsonb', 'outbox.payload is jsonb');
SELECT col_type_is('inventory', 'outbox', 'id', 'bigint', 'outbox.id is bigint');

-- counts and identifiers are never NULL
SELECT col_not_null('inventory', 'stock_slot', 'available', 'stock_slot.available is NOT NULL');
SELECT col_not_null('inventory', 'stock_slot', 'reserved', 'stock_slot.reserved is NOT NULL');
SELECT col_not_null('inventory', 'stock_slot', 'consumed', 'stock_slot.consumed is NOT NULL');
SELECT col_not_null('inventory', 'reservation', 'state', 'reservation.state is NOT NULL');
SELECT col_not_null('inventory', 'outbox', 'event_id', 'outbox.event_id is NOT NULL');
SELECT col_is_null('inventory', 'reservation', 'expires_at', 'reservation.expires_at may be NULL (rejected reservations)');
SELECT col_is_null('inventory', 'stock_slot', 'keep_units', 'stock_slot.keep_units may be NULL (several slots and a safety stock: no fast path from available) (0.6)');
SELECT col_is_null('inventory', 'stock_slot', 'level_watch', 'stock_slot.level_watch may be NULL (the level is looked at after every change) (0.6)');

/* ------------------------------------------------------------------
 * inventory.outcome
 * ---------------------------------------------------------------- */
SELECT has_composite('inventory', 'outcome', 'composite type inventory.outcome exists');
SELECT results_eq($$
	SELECT a.attname::text COLLATE "default", format_type(a.atttypid, a.atttypmod)
	  FROM pg_catalog.pg_attribute a
	 WHERE a.attrelid = (SELECT typrelid FROM pg_catalog.pg_type
						  WHERE oid = 'inventory.outcome'::regtype)
	   AND a.attnum > 0 AND NOT a.attisdropped
	 ORDER BY a.attnum
$$, $$ VALUES
	('status', 'text'), ('state', 'text'), ('applied', 'boolean'),
	('reservation_id', 'bigint'), ('sku', 'text'), ('quantity', 'integer'),
	('expires_at', 'timestamp with time zone'), ('lines', 'jsonb'), ('reason', 'text')
$$, 'inventory.outcome has exactly the contract columns, in order, with their types (lines and reason: 0.5)');

/* ------------------------------------------------------------------
 * Functions: existence with argument types, result type, parameter
 * names and defaults (callers use named notation)
 * ---------------------------------------------------------------- */
SELECT has_function('inventory', 'reserve', ARRAY['text', 'text', 'text', 'integer', 'interval'], 'reserve(text, text, text, integer, interval) exists');
SELECT has_function('inventory', 'reserve_lines', ARRAY['text', 'text', 'jsonb', 'interval'], 'reserve_lines(text, text, jsonb, interval) exists');
SELECT has_function('inventory', 'confirm', ARRAY['text', 'text'], 'confirm(text, text) exists');
SELECT has_function('inventory', 'cancel', ARRAY['text', 'text', 'text'], 'cancel(text, text, text) exists');
SELECT has_function('inventory', 'compensate', ARRAY['text', 'text', 'text'], 'compensate(text, text, text) exists');
SELECT has_function('inventory', 'lookup', ARRAY['text', 'text'], 'lookup(text, text) exists');
SELECT has_function('inventory', 'restock', ARRAY['text', 'text', 'text', 'integer', 'text'], 'restock(text, text, text, integer, text) exists');
SELECT has_function('inventory', 'adjust', ARRAY['text', 'text', 'text', 'bigint', 'text', 'text'], 'adjust(text, text, text, bigint, text, text) exists');
SELECT has_function('inventory', 'expire_due', ARRAY['integer'], 'expire_due(integer) exists');
SELECT has_function('inventory', 'check_invariants', ARRAY[]::name[], 'check_invariants() exists');
SELECT has_function('inventory', 'grant_tenant', ARRAY['text', 'regrole'], 'grant_tenant(text, regrole) exists');
SELECT has_function('inventory', 'revoke_tenant', ARRAY['text', 'regrole'], 'revoke_tenant(text, regrole) exists');
SELECT has_function('inventory', 'relay_claim', ARRAY['text', 'integer', 'interval'], 'relay_claim(text, integer, interval) exists');
SELECT has_function('inventory', 'relay_mark_published', ARRAY['text', 'bigint[]'], 'relay_mark_published(text, bigint[]) exists');
SELECT has_function('inventory', 'relay_mark_failed', ARRAY['text', 'bigint[]', 'text', 'integer', 'interval', 'interval'], 'relay_mark_failed(text, bigint[], text, integer, interval, interval) exists');
SELECT has_function('inventory', 'relay_release', ARRAY['text', 'bigint[]'], 'relay_release(text, bigint[]) exists');
SELECT has_function('inventory', 'requeue_dead_letters', ARRAY['bigint[]', 'text'], 'requeue_dead_letters(bigint[], text) exists (0.5: with a reason)');
SELECT has_function('inventory', 'discard_dead_letters', ARRAY['bigint[]', 'text'], 'discard_dead_letters(bigint[], text) exists (0.5: with a reason)');
SELECT has_function('inventory', 'purge_published', ARRAY['interval', 'integer'], 'purge_published(interval, integer) exists');
SELECT has_function('inventory', 'set_stock_slots', ARRAY['text', 'text', 'integer'], 'set_stock_slots(text, text, integer) exists');
SELECT has_function('inventory', 'transition_rules', ARRAY[]::name[], 'transition_rules() exists');
-- 0.5
SELECT has_function('inventory', 'set_location', ARRAY['text', 'text', 'integer', 'boolean'], 'set_location(text, text, integer, boolean) exists');
SELECT has_function('inventory', 'set_allocation_policy', ARRAY['text', 'boolean'], 'set_allocation_policy(text, boolean) exists');
SELECT has_function('inventory', 'set_stock_policy', ARRAY['text', 'text', 'text', 'bigint', 'bigint'], 'set_stock_policy(text, text, text, bigint, bigint) exists');
SELECT has_function('inventory', 'restock_at', ARRAY['text', 'text', 'text', 'text', 'integer', 'text'], 'restock_at(text, text, text, text, integer, text) exists');
SELECT has_function('inventory', 'adjust_at', ARRAY['text', 'text', 'text', 'text', 'bigint', 'text', 'text'], 'adjust_at(text, text, text, text, bigint, text, text) exists');
SELECT has_function('inventory', 'availability', ARRAY['text', 'text[]'], 'availability(text, text[]) exists');
SELECT has_function('inventory', 'extend', ARRAY['text', 'text', 'timestamp with time zone'], 'extend(text, text, timestamptz) exists');
SELECT has_function('inventory', 'amend', ARRAY['text', 'text', 'jsonb'], 'amend(text, text, jsonb) exists');
-- #14 part B: a SKU with no stock
SELECT has_function('inventory', 'register_sku', ARRAY['text', 'text', 'text'], 'register_sku(text, text, text) exists');
-- 0.6: the closed lists of the CHECK constraints and the slot guards
SELECT has_function('inventory', 'is_reservation_state', ARRAY['text'], 'is_reservation_state(text) exists (0.6)');
SELECT has_function('inventory', 'is_event_type', ARRAY['text'], 'is_event_type(text) exists (0.6)');
SELECT has_function('inventory', 'slot_keep_units', ARRAY['integer', 'bigint'], 'slot_keep_units(integer, bigint) exists (0.6)');
SELECT has_function('inventory', 'slot_level_watch', ARRAY['integer', 'bigint', 'bigint', 'text'], 'slot_level_watch(integer, bigint, bigint, text) exists (0.6)');
-- 0.10: node numbers and partition moves (several nodes)
SELECT has_function('inventory', 'node_number', ARRAY[]::name[], 'node_number() exists (0.10)');
SELECT has_function('inventory', 'set_node_number', ARRAY['integer'], 'set_node_number(integer) exists (0.10)');
SELECT has_function('inventory', 'partition_rows', ARRAY['integer', 'text', 'pg_snapshot'], 'partition_rows(integer, text, pg_snapshot) exists (0.10)');
SELECT has_function('inventory', 'partition_freeze', ARRAY['integer'], 'partition_freeze(integer) exists (0.10)');
SELECT has_function('inventory', 'partition_import', ARRAY['jsonb'], 'partition_import(jsonb) exists (0.10)');
SELECT has_function('inventory', 'partition_delete', ARRAY['integer'], 'partition_delete(integer) exists (0.10)');
SELECT has_function('inventory', 'partition_changed_since', ARRAY['integer', 'pg_snapshot'], 'partition_changed_since(integer, pg_snapshot) exists (0.10)');
SELECT has_table('inventory', 'node_identity', 'inventory.node_identity exists (0.10)');
SELECT has_function('inventory', 'advance_outbox_low_water', ARRAY['boolean'], 'advance_outbox_low_water(boolean) exists (0.7)');
SELECT has_function('inventory', '_next_event_id', ARRAY['regclass'], '_next_event_id(regclass) exists (0.7)');
SELECT has_sequence('inventory', 'outbox_low_water', 'inventory.outbox_low_water is a sequence (0.7)');
SELECT col_default_is('inventory', 'outbox', 'id', 'inventory._next_event_id(''inventory.outbox_id_seq''::regclass)', 'outbox.id defaults to inventory._next_event_id(outbox_id_seq) (0.7)');
-- 0.8: the outbox's rings
SELECT is_partitioned('inventory', 'outbox', 'inventory.outbox is partitioned (0.8)');
SELECT partitions_are('inventory', 'outbox', ARRAY['inventory.outbox_ring_0', 'inventory.outbox_ring_1', 'inventory.outbox_ring_2'], 'the outbox''s partitions are its three rings (0.8)');
SELECT has_function('inventory', '_outbox_ring', ARRAY['regclass'], '_outbox_ring(regclass) exists (0.8)');
SELECT has_sequence('inventory', 'outbox_ring', 'inventory.outbox_ring is a sequence (0.8)');
SELECT col_default_is('inventory', 'outbox', 'ring', 'inventory._outbox_ring(''inventory.outbox_ring''::regclass)', 'outbox.ring defaults to inventory._outbox_ring(outbox_ring) (0.8)');
SELECT col_is_pk('inventory', 'outbox', ARRAY['id', 'ring'], 'the outbox''s primary key is (id, ring) (0.8)');
-- 0.9: the reservations' rings
SELECT is_partitioned('inventory', 'reservation', 'inventory.reservation is partitioned (0.9)');
SELECT partitions_are('inventory', 'reservation', ARRAY['inventory.reservation_ring_0', 'inventory.reservation_ring_1', 'inventory.reservation_ring_2', 'inventory.reservation_ring_3'], 'the reservations'' partitions are their four rings (0.9)');
SELECT partitions_are('inventory', 'reservation_line', ARRAY['inventory.reservation_line_ring_0', 'inventory.reservation_line_ring_1', 'inventory.reservation_line_ring_2', 'inventory.reservation_line_ring_3'], 'the lines'' partitions are the four rings (0.9)');
SELECT partitions_are('inventory', 'reservation_transition', ARRAY['inventory.reservation_transition_ring_0', 'inventory.reservation_transition_ring_1', 'inventory.reservation_transition_ring_2', 'inventory.reservation_transition_ring_3'], 'the transition log''s partitions are the four rings (0.9)');
SELECT is(
	(SELECT array_agg(pg_get_partkeydef(c.oid) ORDER BY c.relname)
	   FROM pg_catalog.pg_class c
	  WHERE c.oid IN ('inventory.reservation'::regclass, 'inventory.reservation_line'::regclass,
					  'inventory.reservation_transition'::regclass)),
	ARRAY['LIST (((id % (4)::bigint)))', 'LIST (((reservation_id % (4)::bigint)))',
		  'LIST (((reservation_id % (4)::bigint)))'],
	'the three tables are partitioned by the reservation id modulo 4 (0.9)');
SELECT has_function('inventory', '_reservation_id', ARRAY['regclass', 'regclass'], '_reservation_id(regclass, regclass) exists (0.9)');
SELECT has_sequence('inventory', 'reservation_ring', 'inventory.reservation_ring is a sequence (0.9)');
SELECT col_default_is('inventory', 'reservation', 'id', 'inventory._reservation_id(''inventory.reservation_id_seq''::regclass, ''inventory.reservation_ring''::regclass)', 'reservation.id defaults to inventory._reservation_id(reservation_id_seq, reservation_ring) (0.9)');
-- the keys and foreign keys of every ring: unique id, key per ring, lines
-- and log rows pointing into their own ring
SELECT is_empty($$
	SELECT format('%s_ring_%s', want.rel, k), format(want.conname, k), want.contype, want.def
	  FROM generate_series(0, 3) k, (VALUES
		('reservation', 'reservation_ring_%s_pkey', 'p', 'PRIMARY KEY (id)'),
		('reservation', 'reservation_ring_%s_request_key_unique', 'u', 'UNIQUE (tenant, request_key)'),
		('reservation_line', 'reservation_line_ring_%s_unique', 'u', 'UNIQUE NULLS NOT DISTINCT (reservation_id, sku, location)'),
		('reservation_line', 'reservation_line_ring_%s_reservation_fk', 'f', 'FOREIGN KEY (reservation_id) REFERENCES inventory.reservation_ring_%s(id)'),
		('reservation_transition', 'reservation_transition_ring_%s_pkey', 'p', 'PRIMARY KEY (id)'),
		('reservation_transition', 'reservation_transition_ring_%s_one_per_version', 'u', 'UNIQUE (reservation_id, version)'),
		('reservation_transition', 'reservation_transition_ring_%s_reservation_fk', 'f', 'FOREIGN KEY (reservation_id) REFERENCES inventory.reservation_ring_%s(id)')
	  ) AS want(rel, conname, contype, def)
	 WHERE NOT EXISTS (
		SELECT 1 FROM pg_catalog.pg_constraint c
		 WHERE c.conrelid = format('inventory.%s_ring_%s', want.rel, k)::regclass
		   AND c.conname = format(want.conname, k)
		   AND c.contype = want.contype::"char" AND c.convalidated
		   AND pg_get_constraintdef(c.oid) = format(want.def, k))
$$, 'every ring has its primary key, request key, line and version keys and foreign keys into the same ring (0.9)');
SELECT is_empty($$
	SELECT c.conname FROM pg_catalog.pg_constraint c
	 WHERE c.contype = 'f' AND c.confrelid IN (SELECT oid FROM pg_catalog.pg_class
		WHERE relnamespace = 'inventory'::regnamespace AND relname ~ '^reservation(_ring_\d)?$')
	   AND NOT (c.conrelid::regclass::text ~ '^inventory\.reservation_(line|transition)_ring_\d$')
$$, 'nothing but the lines and transitions of a ring refers to the reservations (0.9: not the outbox, whose events outlive a ring)');
-- 0.5, retention of history
SELECT has_function('inventory', 'purge_history', ARRAY['interval', 'integer', 'boolean'], 'purge_history(interval, integer, boolean) exists');
SELECT has_function('inventory', 'archive_ledger', ARRAY['interval', 'integer'], 'archive_ledger(interval, integer) exists');
-- 0.5: the DBA's console
SELECT has_function('inventory', 'clock', ARRAY[]::name[], 'clock() exists');
SELECT has_function('inventory', 'worker_status', ARRAY[]::name[], 'worker_status() exists');
SELECT function_returns('inventory', 'clock', ARRAY[]::name[], 'timestamp with time zone', 'clock returns timestamptz');
SELECT function_returns('inventory', 'worker_status', ARRAY[]::name[], 'setof record', 'worker_status returns a set');
SELECT is(pg_get_function_arguments('inventory.discard_dead_letters(bigint[],text)'::regprocedure),
	'ids bigint[], reason text', 'discard_dead_letters: parameter names, reason has no default');
SELECT is(pg_get_function_arguments('inventory.requeue_dead_letters(bigint[],text)'::regprocedure),
	'ids bigint[] DEFAULT NULL::bigint[], reason text DEFAULT NULL::text',
	'requeue_dead_letters: ids and reason default to NULL');
SELECT ok(NOT has_type_privilege('public', 'inventory.tenant_grantee', 'USAGE'),
	'PUBLIC does not hold the grant marker');

SELECT function_returns('inventory', 'reserve', ARRAY['text', 'text', 'text', 'integer', 'interval'], 'inventory.outcome', 'reserve returns inventory.outcome');
SELECT function_returns('inventory', 'reserve_lines', ARRAY['text', 'text', 'jsonb', 'interval'], 'inventory.outcome', 'reserve_lines returns inventory.outcome');
SELECT function_returns('inventory', 'confirm', ARRAY['text', 'text'], 'inventory.outcome', 'confirm returns inventory.outcome');
SELECT function_returns('inventory', 'cancel', ARRAY['text', 'text', 'text'], 'inventory.outcome', 'cancel returns inventory.outcome');
SELECT function_returns('inventory', 'compensate', ARRAY['text', 'text', 'text'], 'inventory.outcome', 'compensate returns inventory.outcome');
SELECT function_returns('inventory', 'lookup', ARRAY['text', 'text'], 'inventory.outcome', 'lookup returns inventory.outcome');
SELECT function_returns('inventory', 'restock', ARRAY['text', 'text', 'text', 'integer', 'text'], 'bigint', 'restock returns bigint');
SELECT function_returns('inventory', 'adjust', ARRAY['text', 'text', 'text', 'bigint', 'text', 'text'], 'bigint', 'adjust returns bigint');
SELECT function_returns('inventory', 'expire_due', ARRAY['integer'], 'integer', 'expire_due returns integer');
SELECT function_returns('inventory', 'check_invariants', ARRAY[]::name[], 'setof record', 'check_invariants returns a set');
SELECT function_returns('inventory', 'grant_tenant', ARRAY['text', 'regrole'], 'boolean', 'grant_tenant returns boolean');
SELECT function_returns('inventory', 'revoke_tenant', ARRAY['text', 'regrole'], 'boolean', 'revoke_tenant returns boolean');
SELECT function_returns('inventory', 'set_location', ARRAY['text', 'text', 'integer', 'boolean'], 'boolean', 'set_location returns boolean');
SELECT function_returns('inventory', 'set_allocation_policy', ARRAY['text', 'boolean'], 'boolean', 'set_allocation_policy returns boolean');
SELECT function_returns('inventory', 'set_stock_policy', ARRAY['text', 'text', 'text', 'bigint', 'bigint'], 'boolean', 'set_stock_policy returns boolean');
SELECT function_returns('inventory', 'restock_at', ARRAY['text', 'text', 'text', 'text', 'integer', 'text'], 'bigint', 'restock_at returns bigint');
SELECT function_returns('inventory', 'adjust_at', ARRAY['text', 'text', 'text', 'text', 'bigint', 'text', 'text'], 'bigint', 'adjust_at returns bigint');
SELECT function_returns('inventory', 'register_sku', ARRAY['text', 'text', 'text'], 'boolean', 'register_sku returns boolean');
SELECT function_returns('inventory', 'availability', ARRAY['text', 'text[]'], 'setof record', 'availability returns a set');
SELECT function_returns('inventory', 'extend', ARRAY['text', 'text', 'timestamp with time zone'], 'inventory.outcome', 'extend returns inventory.outcome');
SELECT function_returns('inventory', 'amend', ARRAY['text', 'text', 'jsonb'], 'inventory.outcome', 'amend returns inventory.outcome');
SELECT function_returns('inventory', 'purge_history', ARRAY['interval', 'integer', 'boolean'], 'integer', 'purge_history returns integer');
SELECT function_returns('inventory', 'archive_ledger', ARRAY['interval', 'integer'], 'integer', 'archive_ledger returns integer');
SELECT function_returns('inventory', 'is_reservation_state', ARRAY['text'], 'boolean', 'is_reservation_state returns boolean');
SELECT function_returns('inventory', 'is_event_type', ARRAY['text'], 'boolean', 'is_event_type returns boolean');
SELECT function_returns('inventory', 'slot_keep_units', ARRAY['integer', 'bigint'], 'bigint', 'slot_keep_units returns bigint');
SELECT function_returns('inventory', 'slot_level_watch', ARRAY['integer', 'bigint', 'bigint', 'text'], 'bigint', 'slot_level_watch returns bigint');
SELECT is(pg_get_function_result('inventory.availability(text,text[])'::regprocedure),
	'TABLE(sku text, location text, sellable bigint, available bigint, reserved bigint, consumed bigint)',
	'availability returns TABLE(sku, location, sellable, available, reserved, consumed)');

SELECT is(pg_get_function_result('inventory.check_invariants()'::regprocedure),
	'TABLE(tenant text, sku text, check_name text, detail text)',
	'check_invariants returns TABLE(tenant, sku, check_name, detail)');

SELECT is(pg_get_function_arguments('inventory.reserve(text,text,text,integer,interval)'::regprocedure),
	'tenant text, request_key text, sku text, quantity integer, ttl interval DEFAULT ''00:15:00''::interval',
	'reserve: parameter names, ttl defaults to 15 minutes');
SELECT is(pg_get_function_arguments('inventory.reserve_lines(text,text,jsonb,interval)'::regprocedure),
	'tenant text, request_key text, lines jsonb, ttl interval DEFAULT ''00:15:00''::interval',
	'reserve_lines: parameter names, ttl defaults to 15 minutes');
SELECT is(pg_get_function_arguments('inventory.confirm(text,text)'::regprocedure),
	'tenant text, request_key text', 'confirm: parameter names');
SELECT is(pg_get_function_arguments('inventory.cancel(text,text,text)'::regprocedure),
	'tenant text, request_key text, reason text DEFAULT NULL::text',
	'cancel: parameter names, reason defaults to NULL');
SELECT is(pg_get_function_arguments('inventory.compensate(text,text,text)'::regprocedure),
	'tenant text, request_key text, reason text',
	'compensate: parameter names, reason has no default');
SELECT is(pg_get_function_arguments('inventory.lookup(text,text)'::regprocedure),
	'tenant text, request_key text', 'lookup: parameter names');
SELECT is(pg_get_function_arguments('inventory.restock(text,text,text,integer,text)'::regprocedure),
	'tenant text, request_key text, sku text, quantity integer, reason text DEFAULT NULL::text',
	'restock: parameter names, reason defaults to NULL');
SELECT is(pg_get_function_arguments('inventory.adjust(text,text,text,bigint,text,text)'::regprocedure),
	'tenant text, request_key text, sku text, delta bigint, kind text, reason text',
	'adjust: parameter names');
SELECT is(pg_get_function_arguments('inventory.expire_due(integer)'::regprocedure),
	'max_rows integer DEFAULT 1000', 'expire_due: max_rows defaults to 1000');
SELECT is(pg_get_function_arguments('inventory.grant_tenant(text,regrole)'::regprocedure),
	'tenant text, member regrole', 'grant_tenant: parameter names');
SELECT is(pg_get_function_arguments('inventory.revoke_tenant(text,regrole)'::regprocedure),
	'tenant text, member regrole', 'revoke_tenant: parameter names');
SELECT is(pg_get_function_arguments('inventory.set_location(text,text,integer,boolean)'::regprocedure),
	'tenant text, location text, priority integer DEFAULT 100, active boolean DEFAULT true',
	'set_location: parameter names, priority defaults to 100, active to true');
SELECT is(pg_get_function_arguments('inventory.set_allocation_policy(text,boolean)'::regprocedure),
	'tenant text, allow_split boolean', 'set_allocation_policy: parameter names');
SELECT is(pg_get_function_arguments('inventory.set_stock_policy(text,text,text,bigint,bigint)'::regprocedure),
	'tenant text, sku text, location text, safety_stock bigint DEFAULT 0, low_threshold bigint DEFAULT NULL::bigint',
	'set_stock_policy: parameter names, safety_stock defaults to 0, low_threshold to NULL');
SELECT is(pg_get_function_arguments('inventory.restock_at(text,text,text,text,integer,text)'::regprocedure),
	'tenant text, request_key text, sku text, location text, quantity integer, reason text DEFAULT NULL::text',
	'restock_at: parameter names, reason defaults to NULL');
SELECT is(pg_get_function_arguments('inventory.adjust_at(text,text,text,text,bigint,text,text)'::regprocedure),
	'tenant text, request_key text, sku text, location text, delta bigint, kind text, reason text',
	'adjust_at: parameter names');
SELECT is(pg_get_function_arguments('inventory.availability(text,text[])'::regprocedure),
	'tenant text, skus text[]', 'availability: parameter names');
SELECT is(pg_get_function_arguments('inventory.extend(text,text,timestamptz)'::regprocedure),
	'tenant text, request_key text, expires_at timestamp with time zone', 'extend: parameter names');
SELECT is(pg_get_function_arguments('inventory.amend(text,text,jsonb)'::regprocedure),
	'tenant text, request_key text, lines jsonb', 'amend: parameter names');
SELECT is(pg_get_function_arguments('inventory.register_sku(text,text,text)'::regprocedure),
	'tenant text, sku text, location text DEFAULT NULL::text', 'register_sku: parameter names, location defaults to NULL');
SELECT is(pg_get_function_arguments('inventory.purge_history(interval,integer,boolean)'::regprocedure),
	'older_than interval DEFAULT ''90 days''::interval, max_rows integer DEFAULT 10000, archive boolean DEFAULT false',
	'purge_history: older_than defaults to 90 days, max_rows to 10000, archive to false');
SELECT is(pg_get_function_arguments('inventory.archive_ledger(interval,integer)'::regprocedure),
	'older_than interval DEFAULT ''365 days''::interval, max_rows integer DEFAULT 10000',
	'archive_ledger: older_than defaults to 365 days, max_rows to 10000');
SELECT is(pg_get_function_arguments('inventory.is_reservation_state(text)'::regprocedure),
	'state text', 'is_reservation_state: parameter names');
SELECT is(pg_get_function_arguments('inventory.is_event_type(text)'::regprocedure),
	'event_type text', 'is_event_type: parameter names');
SELECT is(pg_get_function_arguments('inventory.slot_keep_units(integer,bigint)'::regprocedure),
	'slots integer, safety_stock bigint', 'slot_keep_units: parameter names');
SELECT is(pg_get_function_arguments('inventory.slot_level_watch(integer,bigint,bigint,text)'::regprocedure),
	'slots integer, safety_stock bigint, low_threshold bigint, level text',
	'slot_level_watch: parameter names');
-- a CHECK constraint and check_invariants need them IMMUTABLE; the two
-- of the CHECKs are STRICT (NULL for NULL, which a CHECK passes: the
-- columns are NOT NULL)
SELECT is_empty($$
	SELECT p.oid::regprocedure::text, p.provolatile, p.proisstrict
	  FROM pg_catalog.pg_proc p
	 WHERE p.oid IN ('inventory.is_reservation_state(text)'::regprocedure,
					 'inventory.is_event_type(text)'::regprocedure,
					 'inventory.slot_keep_units(integer,bigint)'::regprocedure,
					 'inventory.slot_level_watch(integer,bigint,bigint,text)'::regprocedure)
	   AND (p.provolatile <> 'i' OR p.proparallel <> 's'
			OR (p.prolang = (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'c')
				AND NOT p.proisstrict))
$$, 'is_reservation_state, is_event_type, slot_keep_units and slot_level_watch are IMMUTABLE and PARALLEL SAFE, the C ones STRICT (0.6)');
-- availability only reads: it must not be VOLATILE either
SELECT isnt((SELECT provolatile FROM pg_catalog.pg_proc
			  WHERE oid = 'inventory.availability(text,text[])'::regprocedure),
	'v'::"char", 'availability is not declared VOLATILE');

-- lookup never changes data: it must not be VOLATILE
SELECT isnt((SELECT provolatile FROM pg_catalog.pg_proc
			  WHERE oid = 'inventory.lookup(text,text)'::regprocedure),
	'v'::"char", 'lookup is not declared VOLATILE');

/* ------------------------------------------------------------------
 * Every public object of the schema carries a COMMENT
 * ---------------------------------------------------------------- */
SELECT is_empty($$
	SELECT c.oid::regclass::text
	  FROM pg_catalog.pg_class c
	 WHERE c.relnamespace = 'inventory'::regnamespace
	   AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
	   AND c.relname !~ '^_'
	   AND obj_description(c.oid, 'pg_class') IS NULL
$$, 'every table and view of schema inventory has a comment');
SELECT is_empty($$
	SELECT c.oid::regclass::text || '.' || a.attname
	  FROM pg_catalog.pg_class c
	  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
	 WHERE c.relnamespace = 'inventory'::regnamespace
	   AND c.relkind IN ('r', 'v', 'm', 'p', 'f', 'c')
	   AND c.relname !~ '^_'
	   -- a partition's columns are its table's (outbox_ring_0..2, 0.8)
	   AND NOT c.relispartition
	   AND a.attnum > 0 AND NOT a.attisdropped
	   AND col_description(c.oid, a.attnum) IS NULL
$$, 'every column of the tables (but partitions), views and composite types of schema inventory has a comment');
SELECT is_empty($$
	SELECT p.oid::regprocedure::text
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND p.proname !~ '^_'
	   AND obj_description(p.oid, 'pg_proc') IS NULL
$$, 'every function of schema inventory has a comment');
SELECT is_empty($$
	SELECT t.oid::regtype::text
	  FROM pg_catalog.pg_type t
	 WHERE t.typnamespace = 'inventory'::regnamespace
	   AND t.typname !~ '^_'
	   AND (t.typtype IN ('d', 'e', 'r', 'm')
			OR (t.typtype = 'c' AND (SELECT relkind FROM pg_catalog.pg_class
									  WHERE oid = t.typrelid) = 'c'))
	   AND obj_description(t.oid, 'pg_type') IS NULL
$$, 'every type and domain of schema inventory has a comment');

/* ------------------------------------------------------------------
 * Privileges: nothing for PUBLIC
 * ---------------------------------------------------------------- */
SELECT is_empty($$
	SELECT p.oid::regprocedure::text
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND has_function_privilege('public', p.oid, 'EXECUTE')
$$, 'no function of schema inventory is executable by PUBLIC (has_function_privilege)');
SELECT is_empty($$
	SELECT p.oid::regprocedure::text
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND (p.proacl IS NULL
			OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) x
						WHERE x.grantee = 0 AND x.privilege_type = 'EXECUTE'))
$$, 'every function of schema inventory has an ACL without a PUBLIC EXECUTE entry (aclexplode)');
-- the functions of 0.5 by name (the queries above would pass if they were
-- missing altogether)
SELECT is_empty($$
	SELECT f FROM unnest(ARRAY[
		'inventory.set_location(text,text,integer,boolean)',
		'inventory.set_allocation_policy(text,boolean)',
		'inventory.set_stock_policy(text,text,text,bigint,bigint)',
		'inventory.restock_at(text,text,text,text,integer,text)',
		'inventory.adjust_at(text,text,text,text,bigint,text,text)',
		'inventory.availability(text,text[])',
		'inventory.extend(text,text,timestamptz)',
		'inventory.amend(text,text,jsonb)',
		'inventory.register_sku(text,text,text)',
		'inventory.purge_history(interval,integer,boolean)',
		'inventory.archive_ledger(interval,integer)',
		'inventory.clock()',
		'inventory.worker_status()',
		'inventory.requeue_dead_letters(bigint[],text)',
		'inventory.discard_dead_letters(bigint[],text)']) AS f
	 WHERE to_regprocedure(f) IS NULL
		OR has_function_privilege('public', to_regprocedure(f), 'EXECUTE')
		OR (SELECT proacl IS NULL FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(f))
		OR (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(f))
$$, 'every 0.5 function exists, is SECURITY INVOKER, and PUBLIC cannot execute it');
SELECT is_empty($$
	SELECT f FROM unnest(ARRAY[
		'inventory.is_reservation_state(text)',
		'inventory.is_event_type(text)',
		'inventory.slot_keep_units(integer,bigint)',
		'inventory.slot_level_watch(integer,bigint,bigint,text)']) AS f
	 WHERE to_regprocedure(f) IS NULL
		OR has_function_privilege('public', to_regprocedure(f), 'EXECUTE')
		OR (SELECT proacl IS NULL FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(f))
		OR (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(f))
$$, 'every 0.6 function exists, is SECURITY INVOKER, and PUBLIC cannot execute it');
SELECT is_empty($$
	SELECT f FROM unnest(ARRAY[
		'inventory.advance_outbox_low_water(boolean)',
		'inventory._next_event_id(regclass)', 'inventory._outbox_ring(regclass)',
		'inventory._reservation_id(regclass,regclass)']) AS f
	 WHERE to_regprocedure(f) IS NULL
		OR has_function_privilege('public', to_regprocedure(f), 'EXECUTE')
		OR (SELECT proacl IS NULL FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(f))
		OR (SELECT prosecdef FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(f))
$$, 'every 0.7 to 0.9 internal function exists, is SECURITY INVOKER, and PUBLIC cannot execute it');
SELECT is_empty($$
	SELECT c.oid::regclass::text, x.privilege_type
	  FROM pg_catalog.pg_class c,
		   aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) x
	 WHERE c.relnamespace = 'inventory'::regnamespace
	   AND c.relkind IN ('r', 'v', 'm', 'p', 'S')
	   AND x.grantee = 0
$$, 'PUBLIC has no privilege on any table, view or sequence of schema inventory');
SELECT is_empty($$
	SELECT x.privilege_type
	  FROM pg_catalog.pg_namespace n,
		   aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) x
	 WHERE n.nspname = 'inventory' AND x.grantee = 0
$$, 'PUBLIC has no privilege on schema inventory (USAGE is granted per role)');

/* ------------------------------------------------------------------
 * search_path: a SECURITY DEFINER function must pin it; wherever it is
 * pinned, pg_temp is listed last (else temporary objects come first)
 * ---------------------------------------------------------------- */
SELECT is_empty($$
	SELECT p.oid::regprocedure::text
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND p.prosecdef
	   AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) s
						WHERE s LIKE 'search\_path=%')
$$, 'every SECURITY DEFINER function of schema inventory pins search_path');
SELECT is_empty($$
	SELECT p.oid::regprocedure::text, s
	  FROM pg_catalog.pg_proc p, unnest(p.proconfig) s
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND s LIKE 'search\_path=%'
	   AND s !~ '^search_path=(pg_catalog, )?.*pg_temp"?$'
$$, 'every pinned search_path of schema inventory lists pg_temp last');
-- but the two C functions the CHECK constraints call (0.6): IMMUTABLE,
-- they read no table and run no SQL, and a SET clause would cost a GUC
-- save and restore for every row written
SELECT is_empty($$
	SELECT p.oid::regprocedure::text
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND p.proname !~ '^_'
	   -- 0.6: pure functions of their argument behind CHECK constraints:
	   -- they run no SQL, and a SET clause would cost every checked row
	   -- a save and restore of the setting
	   AND p.oid NOT IN ('inventory.is_reservation_state(text)'::regprocedure,
						 'inventory.is_event_type(text)'::regprocedure)
	   AND p.prolang = (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'c')
	   AND p.oid NOT IN ('inventory.is_reservation_state(text)'::regprocedure,
						 'inventory.is_event_type(text)'::regprocedure)
	   AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) s
						WHERE s LIKE 'search\_path=pg\_catalog, %pg\_temp')
$$, 'every C function of schema inventory (which runs SQL as the owner) pins search_path = pg_catalog, ..., pg_temp, but is_reservation_state and is_event_type');
SELECT results_eq($$
	SELECT p.proname::text COLLATE "default", p.provolatile::text, p.proconfig IS NULL
	  FROM pg_catalog.pg_proc p
	 WHERE p.pronamespace = 'inventory'::regnamespace
	   AND p.prolang = (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'c')
	   AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) s WHERE s LIKE 'search\_path=%')
	 ORDER BY 1
$$, $$ VALUES ('_next_event_id', 'v', true), ('_outbox_ring', 'v', true), ('_reservation_id', 'v', true), ('is_event_type', 'i', true), ('is_reservation_state', 'i', true) $$,
	'the C functions of schema inventory without a pinned search_path are the IMMUTABLE is_event_type and is_reservation_state (0.6) and the defaults of outbox.id, _next_event_id (0.7), of outbox.ring, _outbox_ring (0.8), and of reservation.id, _reservation_id (0.9): they run no SQL, and a SET clause would cost every row written a save and restore of the setting');

/* ------------------------------------------------------------------
 * Named constraints (a violation message reads as the rule)
 * ---------------------------------------------------------------- */
SELECT is_empty($$
	SELECT want.rel, want.conname, want.contype
	  FROM (VALUES
		('reservation', 'reservation_state_valid', 'c'),
		('reservation', 'reservation_expiry_unless_rejected', 'c'),
		('reservation', 'reservation_version_positive', 'c'),
		('reservation_line', 'reservation_line_quantity_positive', 'c'),
		('stock_ledger', 'stock_ledger_request_key_unique', 'u'),
		('stock_ledger', 'stock_ledger_kind_valid', 'c'),
		('stock_ledger', 'stock_ledger_delta_sign_matches_kind', 'c'),
		('reservation_transition', 'reservation_transition_state_valid', 'c'),
		('tenant_grant', 'tenant_grant_pkey', 'p'),
		('outbox', 'outbox_event_id_unique', 'u'),
		('outbox', 'outbox_event_type_valid', 'c'),
		('reservation_archive', 'reservation_archive_pkey', 'p'),
		('purged_confirmed', 'purged_confirmed_pkey', 'p'),
		('purged_confirmed', 'purged_confirmed_stock_location_fk', 'f'),
		('stock_ledger_archive', 'stock_ledger_archive_request_key_unique', 'u')
	  ) AS want(rel, conname, contype)
	 WHERE NOT EXISTS (
		SELECT 1 FROM pg_catalog.pg_constraint c
		 WHERE c.conrelid = format('inventory.%I', want.rel)::regclass
		   AND c.conname = want.conname
		   AND c.contype = want.contype::"char"
		   AND c.convalidated)
$$, 'the named, validated constraints of reservation, lines, ledger, transitions, grants and outbox exist');

-- the counters of stock carry their rule where the counts are stored: on
-- inventory.stock when it is a table (a view's base tables otherwise)
SELECT is_empty($$
	SELECT want.conname
	  FROM (VALUES ('stock_available_nonneg'), ('stock_reserved_nonneg'),
				   ('stock_consumed_nonneg')) AS want(conname)
	 WHERE NOT EXISTS (
		SELECT 1 FROM pg_catalog.pg_constraint c
		  JOIN pg_catalog.pg_class r ON r.oid = c.conrelid
		 WHERE r.relnamespace = 'inventory'::regnamespace
		   AND c.conname LIKE want.conname || '%'
		   AND c.contype = 'c' AND c.convalidated)
$$, 'stock_available_nonneg, stock_reserved_nonneg, stock_consumed_nonneg exist as validated CHECK constraints');
SELECT ok(
	(SELECT pg_get_constraintdef(c.oid) ~ 'available >= 0'
	   FROM pg_catalog.pg_constraint c
	  WHERE c.conname = 'stock_available_nonneg'
		AND c.connamespace = 'inventory'::regnamespace
	  LIMIT 1),
	'stock_available_nonneg checks available >= 0');
SELECT is(
	(SELECT array_agg(a.attname::text ORDER BY k.ord)
	   FROM pg_catalog.pg_constraint c,
			unnest(c.conkey) WITH ORDINALITY k(attnum, ord),
			pg_catalog.pg_attribute a
	  WHERE c.conname = 'stock_ledger_request_key_unique'
		AND c.conrelid = 'inventory.stock_ledger'::regclass
		AND a.attrelid = c.conrelid AND a.attnum = k.attnum),
	ARRAY['tenant', 'request_key'],
	'stock_ledger_request_key_unique is on (tenant, request_key): ledger keys are their own namespace');
SELECT is(
	(SELECT count(*)::int FROM pg_catalog.pg_constraint c
	  WHERE c.connamespace = 'inventory'::regnamespace
		AND c.conname ~ '^(\$|.*_check$|.*_fkey$)'),
	0, 'no constraint of schema inventory carries a generated name');

/* ------------------------------------------------------------------
 * pg_dump keeps the user data: every table and sequence of the
 * extension is registered with pg_extension_config_dump, unfiltered
 * ---------------------------------------------------------------- */
SELECT is_empty($$
	SELECT c.oid::regclass::text
	  FROM pg_catalog.pg_class c
	  JOIN pg_catalog.pg_depend d
		ON d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid
	   AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
	  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_inventory'
	 WHERE c.relkind IN ('r', 'S')
	   AND c.oid <> ALL (coalesce(e.extconfig, '{}'))
	   -- the low-water mark (0.7) is not data: pg_dump would read it after
	   -- its snapshot of the outbox, maybe past an event the snapshot sees
	   -- unpublished; restored at its start (1), it is safe; nor is the
	   -- outbox's current ring (0.8), nor the reservations' (0.9): any ring
	   -- is safe to write to
	   AND c.oid NOT IN ('inventory.outbox_low_water'::regclass, 'inventory.outbox_ring'::regclass,
						 'inventory.reservation_ring'::regclass)
$$, 'every table and sequence of pg_inventory but outbox_low_water, outbox_ring and reservation_ring is registered with pg_extension_config_dump (a partitioned table, which holds no rows, through its partitions)');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension e
					   WHERE e.extname = 'pg_inventory'
						 AND 'inventory.outbox_ring'::regclass = ANY (coalesce(e.extconfig, '{}'))),
	'the current ring is not dumped: a restored database starts at ring 0 (0.8)');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension e
					   WHERE e.extname = 'pg_inventory'
						 AND 'inventory.reservation_ring'::regclass = ANY (coalesce(e.extconfig, '{}'))),
	'the reservations'' current ring is not dumped: a restored database starts at ring 0 (0.9)');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension e
					   WHERE e.extname = 'pg_inventory'
						 AND 'inventory.outbox_low_water'::regclass = ANY (coalesce(e.extconfig, '{}'))),
	'the low-water mark is not dumped: a restored database starts it at 1 (0.7)');
SELECT is_empty($$
	SELECT want.rel
	  FROM (VALUES ('inventory.reservation_ring_0'), ('inventory.reservation_ring_1'),
				   ('inventory.reservation_ring_2'), ('inventory.reservation_ring_3'),
				   ('inventory.reservation_line_ring_0'), ('inventory.reservation_line_ring_1'),
				   ('inventory.reservation_line_ring_2'), ('inventory.reservation_line_ring_3'),
				   ('inventory.reservation_transition_ring_0'), ('inventory.reservation_transition_ring_1'),
				   ('inventory.reservation_transition_ring_2'), ('inventory.reservation_transition_ring_3'),
				   ('inventory.stock_ledger'),
				   ('inventory.tenant_grant'), ('inventory.outbox_ring_0'),
				   ('inventory.outbox_ring_1'), ('inventory.outbox_ring_2'),
				   ('inventory.location'), ('inventory.allocation_policy'),
				   ('inventory.stock_location'), ('inventory.reservation_archive'),
				   ('inventory.purged_confirmed'), ('inventory.stock_ledger_archive'),
				   ('inventory.reservation_id_seq'), ('inventory.stock_ledger_id_seq'),
				   ('inventory.reservation_transition_id_seq'),
				   ('inventory.outbox_id_seq')) AS want(rel),
		   pg_catalog.pg_extension e
	 WHERE e.extname = 'pg_inventory'
	   AND (to_regclass(want.rel) IS NULL
			OR NOT to_regclass(want.rel) = ANY (coalesce(e.extconfig, '{}')))
$$, 'the contract tables and their id sequences are in pg_extension.extconfig');
SELECT is_empty($$
	SELECT c.oid::regclass::text
	  FROM pg_catalog.pg_class c
	 WHERE c.relnamespace = 'inventory'::regnamespace
	   AND c.relkind = 'S'
	   AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
					WHERE d.classid = 'pg_catalog.pg_class'::regclass
					  AND d.objid = c.oid AND d.deptype IN ('a', 'i')
					  AND d.refobjid IN (SELECT unnest(extconfig) FROM pg_catalog.pg_extension
										  WHERE extname = 'pg_inventory'))
	   AND c.oid NOT IN (SELECT unnest(extconfig) FROM pg_catalog.pg_extension
						  WHERE extname = 'pg_inventory')
$$, 'every sequence owned by a registered table is registered too');
SELECT is_empty($$
	SELECT r::regclass::text, c
	  FROM pg_catalog.pg_extension e, unnest(e.extconfig, e.extcondition) AS x(r, c)
	 WHERE e.extname = 'pg_inventory' AND c <> ''
	   AND r <> 'inventory.tenant_grant'::regclass
$$, 'pg_dump keeps every row of the registered tables (no WHERE filter but the grants'')');
SELECT ok((SELECT c LIKE '%tenant_grantee%'
			 FROM pg_catalog.pg_extension e, unnest(e.extconfig, e.extcondition) AS x(r, c)
			WHERE e.extname = 'pg_inventory' AND r = 'inventory.tenant_grant'::regclass),
	'pg_dump keeps the grants whose role holds the marker');
SELECT ok(
	(SELECT 'inventory.stock'::regclass = ANY (extconfig)
			OR (SELECT relkind FROM pg_catalog.pg_class
				 WHERE oid = 'inventory.stock'::regclass) = 'v'
	   FROM pg_catalog.pg_extension WHERE extname = 'pg_inventory'),
	'inventory.stock is registered for pg_dump (or is a view over registered tables)');

-- 0.6: the CHECKs on states and event types call the C functions (the
-- lists are in src/validate.c)
SELECT results_eq($$
	SELECT c.conrelid::regclass::text, c.conname::text COLLATE "default", pg_get_constraintdef(c.oid)
	  FROM pg_catalog.pg_constraint c
	 WHERE c.connamespace = 'inventory'::regnamespace
	   AND c.conname IN ('reservation_state_valid', 'reservation_transition_state_valid',
						 'outbox_event_type_valid')
	   AND c.conislocal
	 ORDER BY 2
$$, $$ VALUES
	('inventory.outbox', 'outbox_event_type_valid', 'CHECK (inventory.is_event_type(event_type))'),
	('inventory.reservation', 'reservation_state_valid', 'CHECK (inventory.is_reservation_state(state))'),
	('inventory.reservation_transition', 'reservation_transition_state_valid', 'CHECK (inventory.is_reservation_state(to_state))')
$$, 'reservation_state_valid, reservation_transition_state_valid and outbox_event_type_valid call is_reservation_state and is_event_type (0.6)');

-- every event type and state of the README passes, others do not
SELECT is(
	(SELECT array_agg(t ORDER BY t) FROM unnest(ARRAY[
		'reservation.reserved', 'reservation.confirmed', 'reservation.cancelled',
		'reservation.expired', 'reservation.compensated', 'reservation.extended',
		'reservation.amended', 'stock.restocked', 'stock.adjusted',
		'stock.out_of_stock', 'stock.back_in_stock', 'stock.low',
		'stock.high', 'Stock.low', 'stock.low ', '']) AS t
	  WHERE inventory.is_event_type(t)),
	ARRAY['reservation.amended', 'reservation.cancelled', 'reservation.compensated',
		  'reservation.confirmed', 'reservation.expired', 'reservation.extended',
		  'reservation.reserved', 'stock.adjusted', 'stock.back_in_stock', 'stock.low',
		  'stock.out_of_stock', 'stock.restocked'],
	'is_event_type admits the twelve event types (those of 0.5 included) and nothing else');
SELECT is(
	(SELECT array_agg(s ORDER BY s) FROM unnest(ARRAY[
		'pending', 'confirmed', 'cancelled', 'expired', 'rejected', 'compensated',
		'Pending', 'pending ', 'reserved', '']) AS s
	  WHERE inventory.is_reservation_state(s)),
	ARRAY['cancelled', 'compensated', 'confirmed', 'expired', 'pending', 'rejected'],
	'is_reservation_state admits the six states and nothing else');
SELECT throws_ok($$
	INSERT INTO inventory.outbox (event_id, event_type, tenant, payload, created_at)
	VALUES (gen_random_uuid(), 'stock.high', 'pgtap', '{}', now())
$$, '23514', NULL, 'outbox_event_type_valid refuses an unknown event type, a superuser''s too');

SELECT * FROM finish();
ROLLBACK;
