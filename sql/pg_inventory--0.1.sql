/*
 * sql/pg_inventory--0.1.sql
 *
 * Full install script of pg_inventory 0.1.  The tables carry the invariants
 * as constraints; the functions (C, in src/) are the only write path.  Every
 * identifier column uses the "C" collation so that the (tenant, sku) lock
 * order in SQL (ORDER BY) is the byte order the C code sorts by (strcmp).
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_inventory" to load this file. \quit

-- The schema is created by CREATE EXTENSION (control file: schema =
-- inventory); it is not a member of the extension, so DROP EXTENSION leaves
-- it (empty) behind.
COMMENT ON SCHEMA inventory IS
	'pg_inventory: stock counters, reservations, the transition log, tenant grants and the outbox.';

/* ---------------------------------------------------------------------
 * Domains: the identifier limits of the contract, held by the database.
 * ------------------------------------------------------------------- */

-- Tenant and SKU names: 1 to 64 characters, no control characters.
CREATE DOMAIN inventory.name_id AS text COLLATE "C"
	CONSTRAINT name_id_length CHECK (char_length(VALUE) BETWEEN 1 AND 64)
	CONSTRAINT name_id_no_control CHECK (VALUE !~ '[\x01-\x1f\x7f]');
COMMENT ON DOMAIN inventory.name_id IS
	'A tenant or SKU name: 1 to 64 characters without control characters.';

-- Request (idempotency) keys: 1 to 200 characters, no control characters.
CREATE DOMAIN inventory.request_key AS text COLLATE "C"
	CONSTRAINT request_key_length CHECK (char_length(VALUE) BETWEEN 1 AND 200)
	CONSTRAINT request_key_no_control CHECK (VALUE !~ '[\x01-\x1f\x7f]');
COMMENT ON DOMAIN inventory.request_key IS
	'An idempotency key, scoped by tenant: 1 to 200 characters without control characters.';

/* ---------------------------------------------------------------------
 * stock: one row per (tenant, sku); the counters every call moves.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.stock (
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	available	bigint NOT NULL DEFAULT 0,
	reserved	bigint NOT NULL DEFAULT 0,
	consumed	bigint NOT NULL DEFAULT 0,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	updated_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT stock_pkey PRIMARY KEY (tenant, sku),
	CONSTRAINT stock_tenant_not_wildcard CHECK (tenant <> '*'),
	CONSTRAINT stock_available_nonneg CHECK (available >= 0),
	CONSTRAINT stock_reserved_nonneg CHECK (reserved >= 0),
	CONSTRAINT stock_consumed_nonneg CHECK (consumed >= 0)
);
COMMENT ON TABLE inventory.stock IS
	'Stock counters per (tenant, sku). available + reserved + consumed equals the sum of stock_ledger.delta; written only by the pg_inventory functions.';
COMMENT ON COLUMN inventory.stock.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.stock.sku IS 'Stock keeping unit, unique within the tenant.';
COMMENT ON COLUMN inventory.stock.available IS 'Units that can still be reserved (never negative).';
COMMENT ON COLUMN inventory.stock.reserved IS 'Units held by pending reservations.';
COMMENT ON COLUMN inventory.stock.consumed IS 'Units taken by confirmed reservations.';
COMMENT ON COLUMN inventory.stock.created_at IS 'When the SKU was first stocked (server clock).';
COMMENT ON COLUMN inventory.stock.updated_at IS 'When a counter last changed (pg_inventory clock).';

/* ---------------------------------------------------------------------
 * reservation: one row per (tenant, request_key).
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.reservation (
	id			bigserial NOT NULL,
	tenant		inventory.name_id NOT NULL,
	request_key inventory.request_key NOT NULL,
	state		text NOT NULL,
	expires_at	timestamptz,
	version		integer NOT NULL DEFAULT 1,
	reason		text,
	created_at	timestamptz NOT NULL,
	updated_at	timestamptz NOT NULL,
	CONSTRAINT reservation_pkey PRIMARY KEY (id),
	CONSTRAINT reservation_request_key_unique UNIQUE (tenant, request_key),
	CONSTRAINT reservation_state_valid CHECK (state IN ('pending', 'confirmed',
		'cancelled', 'expired', 'rejected', 'compensated')),
	CONSTRAINT reservation_expiry_unless_rejected
		CHECK ((state = 'rejected') = (expires_at IS NULL)),
	CONSTRAINT reservation_version_positive CHECK (version >= 1),
	CONSTRAINT reservation_reason_length CHECK (char_length(reason) <= 1000)
);
-- expire_due reads pending reservations oldest first: this partial index
-- holds only pending rows, so its size follows the open reservations, not
-- the history.
CREATE INDEX reservation_pending_due ON inventory.reservation (expires_at, id)
	WHERE state = 'pending';
COMMENT ON TABLE inventory.reservation IS
	'One reservation per (tenant, request_key); state moves only through the pg_inventory functions.';
COMMENT ON COLUMN inventory.reservation.id IS 'Surrogate key, referenced by lines, transitions and events.';
COMMENT ON COLUMN inventory.reservation.tenant IS 'Tenant that made the reservation.';
COMMENT ON COLUMN inventory.reservation.request_key IS 'Idempotency key of the reserve call that created it.';
COMMENT ON COLUMN inventory.reservation.state IS 'pending, confirmed, cancelled, expired, rejected (stored insufficient outcome) or compensated.';
COMMENT ON COLUMN inventory.reservation.expires_at IS 'When a pending reservation expires (inclusive); NULL for rejected ones.';
COMMENT ON COLUMN inventory.reservation.version IS 'Starts at 1, incremented by every state change.';
COMMENT ON COLUMN inventory.reservation.reason IS 'Reason given by the last cancel or compensate, if any.';
COMMENT ON COLUMN inventory.reservation.created_at IS 'When the reserve call ran (pg_inventory clock).';
COMMENT ON COLUMN inventory.reservation.updated_at IS 'When the state last changed (pg_inventory clock).';
COMMENT ON INDEX inventory.reservation_pending_due IS 'Pending reservations by expiry, for expire_due.';

/* ---------------------------------------------------------------------
 * reservation_line: one row per SKU of a reservation.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.reservation_line (
	reservation_id bigint NOT NULL,
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	quantity	integer NOT NULL,
	CONSTRAINT reservation_line_pkey PRIMARY KEY (reservation_id, sku),
	CONSTRAINT reservation_line_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation (id),
	CONSTRAINT reservation_line_stock_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.stock (tenant, sku),
	CONSTRAINT reservation_line_quantity_positive CHECK (quantity >= 1)
);
COMMENT ON TABLE inventory.reservation_line IS
	'The SKUs of a reservation, one row per SKU with the summed quantity; rejected reservations keep their requested lines.';
COMMENT ON COLUMN inventory.reservation_line.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.reservation_line.tenant IS 'The reservation''s tenant (kept for the stock foreign key).';
COMMENT ON COLUMN inventory.reservation_line.sku IS 'The SKU held.';
COMMENT ON COLUMN inventory.reservation_line.quantity IS 'Units of the SKU (all request lines of this SKU summed).';

/* ---------------------------------------------------------------------
 * stock_ledger: every receipt, return, loss and correction.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.stock_ledger (
	id			bigserial NOT NULL,
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	request_key inventory.request_key NOT NULL,
	kind		text NOT NULL,
	delta		bigint NOT NULL,
	reason		text,
	available_after bigint NOT NULL,
	actor		text NOT NULL,
	created_at	timestamptz NOT NULL,
	CONSTRAINT stock_ledger_pkey PRIMARY KEY (id),
	CONSTRAINT stock_ledger_request_key_unique UNIQUE (tenant, request_key),
	CONSTRAINT stock_ledger_stock_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.stock (tenant, sku),
	CONSTRAINT stock_ledger_kind_valid
		CHECK (kind IN ('receipt', 'return', 'loss', 'correction')),
	CONSTRAINT stock_ledger_delta_sign_matches_kind CHECK (
		CASE kind WHEN 'receipt' THEN delta > 0 WHEN 'return' THEN delta > 0
			 WHEN 'loss' THEN delta < 0 ELSE delta <> 0 END),
	CONSTRAINT stock_ledger_reason_length CHECK (char_length(reason) <= 1000),
	CONSTRAINT stock_ledger_available_after_nonneg CHECK (available_after >= 0)
);
CREATE INDEX stock_ledger_tenant_sku ON inventory.stock_ledger (tenant, sku);
COMMENT ON TABLE inventory.stock_ledger IS
	'Every receipt, return, loss and correction as its own record; the sum of delta per (tenant, sku) is the net received stock.';
COMMENT ON COLUMN inventory.stock_ledger.id IS 'Surrogate key in insertion order.';
COMMENT ON COLUMN inventory.stock_ledger.tenant IS 'Tenant of the stock.';
COMMENT ON COLUMN inventory.stock_ledger.sku IS 'SKU of the stock.';
COMMENT ON COLUMN inventory.stock_ledger.request_key IS 'Idempotency key of the restock or adjust call (its own namespace).';
COMMENT ON COLUMN inventory.stock_ledger.kind IS 'receipt (restock), return, loss or correction (adjust).';
COMMENT ON COLUMN inventory.stock_ledger.delta IS 'Units added (positive) or removed (negative).';
COMMENT ON COLUMN inventory.stock_ledger.reason IS 'Free-text reason given by the caller.';
COMMENT ON COLUMN inventory.stock_ledger.available_after IS 'stock.available right after this record; what a replay returns.';
COMMENT ON COLUMN inventory.stock_ledger.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.stock_ledger.created_at IS 'When the call ran (pg_inventory clock).';
COMMENT ON INDEX inventory.stock_ledger_tenant_sku IS 'Ledger sums per SKU for check_invariants.';

/* ---------------------------------------------------------------------
 * reservation_transition: the transition log.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.reservation_transition (
	id			bigserial NOT NULL,
	reservation_id bigint NOT NULL,
	from_state	text,
	to_state	text NOT NULL,
	reason		text,
	actor		text NOT NULL,
	version		integer NOT NULL,
	created_at	timestamptz NOT NULL,
	CONSTRAINT reservation_transition_pkey PRIMARY KEY (id),
	CONSTRAINT reservation_transition_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation (id),
	-- one log row per version: a transition cannot be logged twice
	CONSTRAINT reservation_transition_one_per_version
		UNIQUE (reservation_id, version),
	CONSTRAINT reservation_transition_state_valid CHECK (to_state IN ('pending',
		'confirmed', 'cancelled', 'expired', 'rejected', 'compensated'))
);
COMMENT ON TABLE inventory.reservation_transition IS
	'Transition log: one row per state change of a reservation, including the stored rejection (from NULL to rejected).';
COMMENT ON COLUMN inventory.reservation_transition.id IS 'Surrogate key in insertion order.';
COMMENT ON COLUMN inventory.reservation_transition.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.reservation_transition.from_state IS 'State before the change; NULL when the reservation was created.';
COMMENT ON COLUMN inventory.reservation_transition.to_state IS 'State after the change.';
COMMENT ON COLUMN inventory.reservation_transition.reason IS 'Reason given by the caller, or the rule that applied (expiry).';
COMMENT ON COLUMN inventory.reservation_transition.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.reservation_transition.version IS 'Reservation version after the change.';
COMMENT ON COLUMN inventory.reservation_transition.created_at IS 'When the change happened (pg_inventory clock).';

/* ---------------------------------------------------------------------
 * tenant_member: which roles may act for which tenants.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.tenant_member (
	tenant		text COLLATE "C" NOT NULL,
	member		regrole NOT NULL,
	granted_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT tenant_member_pkey PRIMARY KEY (tenant, member),
	CONSTRAINT tenant_member_tenant_valid CHECK (tenant = '*' OR (
		char_length(tenant) BETWEEN 1 AND 64 AND tenant !~ '[\x01-\x1f\x7f]'))
);
COMMENT ON TABLE inventory.tenant_member IS
	'Tenant grants: a member role (or a role it inherits from) may call the application and consumer functions for the tenant; tenant ''*'' means every tenant.';
COMMENT ON COLUMN inventory.tenant_member.tenant IS 'Tenant name, or * for every tenant.';
COMMENT ON COLUMN inventory.tenant_member.member IS 'Role granted.';
COMMENT ON COLUMN inventory.tenant_member.granted_at IS 'When the grant was made.';

/* ---------------------------------------------------------------------
 * outbox: one event per change of stock or state, written in the same
 * transaction as the change; a relay publishes it (at least once).
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.outbox (
	id			bigserial NOT NULL,
	event_id	uuid NOT NULL,
	event_type	text NOT NULL,
	tenant		inventory.name_id NOT NULL,
	reservation_id bigint,
	payload		jsonb NOT NULL,
	created_at	timestamptz NOT NULL,
	attempts	integer NOT NULL DEFAULT 0,
	next_attempt_at timestamptz,
	published_at timestamptz,
	last_error	text,
	dead_at		timestamptz,
	CONSTRAINT outbox_pkey PRIMARY KEY (id),
	CONSTRAINT outbox_event_id_unique UNIQUE (event_id),
	CONSTRAINT outbox_event_type_valid CHECK (event_type IN (
		'reservation.reserved', 'reservation.confirmed',
		'reservation.cancelled', 'reservation.expired',
		'reservation.compensated', 'stock.restocked', 'stock.adjusted')),
	CONSTRAINT outbox_attempts_nonneg CHECK (attempts >= 0),
	CONSTRAINT outbox_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation (id)
);
-- the relay's work queue: only unpublished, live events
CREATE INDEX outbox_unpublished ON inventory.outbox (id)
	WHERE published_at IS NULL AND dead_at IS NULL;
CREATE INDEX outbox_reservation ON inventory.outbox (reservation_id, id)
	WHERE reservation_id IS NOT NULL;
COMMENT ON TABLE inventory.outbox IS
	'Transactional outbox: one event per change of stock or state, committed with the change and published at least once by a relay.';
COMMENT ON COLUMN inventory.outbox.id IS 'Commit-order-compatible sequence within one reservation.';
COMMENT ON COLUMN inventory.outbox.event_id IS 'Unique event id; consumers deduplicate on it (AMQP message_id).';
COMMENT ON COLUMN inventory.outbox.event_type IS 'reservation.reserved|confirmed|cancelled|expired|compensated, stock.restocked|adjusted (AMQP routing key).';
COMMENT ON COLUMN inventory.outbox.tenant IS 'Tenant the event belongs to.';
COMMENT ON COLUMN inventory.outbox.reservation_id IS 'Reservation the event belongs to (NULL for stock events); events of one reservation are published in order.';
COMMENT ON COLUMN inventory.outbox.payload IS 'The event as JSON; can be acted on alone.';
COMMENT ON COLUMN inventory.outbox.created_at IS 'When the change happened (pg_inventory clock).';
COMMENT ON COLUMN inventory.outbox.attempts IS 'Publish attempts that failed so far.';
COMMENT ON COLUMN inventory.outbox.next_attempt_at IS 'Earliest time of the next publish attempt after a failure (NULL: now).';
COMMENT ON COLUMN inventory.outbox.published_at IS 'When the broker confirmed the event; NULL while unpublished.';
COMMENT ON COLUMN inventory.outbox.last_error IS 'Error of the last failed publish attempt.';
COMMENT ON COLUMN inventory.outbox.dead_at IS 'When the event was dead-lettered after too many attempts; NULL while live.';
COMMENT ON INDEX inventory.outbox_unpublished IS 'Unpublished live events in id order, for relays.';
COMMENT ON INDEX inventory.outbox_reservation IS 'Events of one reservation in order, for per-reservation ordering.';

/* ---------------------------------------------------------------------
 * Only the functions write: nobody but the owner has table privileges.
 * pg_dump keeps the user data (and sequence positions) of every table.
 * ------------------------------------------------------------------- */
REVOKE ALL ON ALL TABLES IN SCHEMA inventory FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA inventory FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('inventory.stock', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_ledger', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_ledger_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.tenant_member', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_id_seq', '');

/* ---------------------------------------------------------------------
 * The result type of the reservation functions.
 * ------------------------------------------------------------------- */
CREATE TYPE inventory.outcome AS (
	status		text,
	state		text,
	applied		boolean,
	reservation_id bigint,
	sku			text,
	quantity	integer,
	expires_at	timestamptz
);
COMMENT ON TYPE inventory.outcome IS
	'Result of the reservation functions: what the call amounts to (status), the effective state after it, whether it changed data, and the reservation it concerns.';
COMMENT ON COLUMN inventory.outcome.status IS 'What this call amounts to (reserved, insufficient, confirmed, expired, cancelled, compensated, pending, not_found).';
COMMENT ON COLUMN inventory.outcome.state IS 'The reservation''s effective state after the call; NULL if there is none.';
COMMENT ON COLUMN inventory.outcome.applied IS 'True only if this call changed data.';
COMMENT ON COLUMN inventory.outcome.reservation_id IS 'The reservation''s id; NULL if there is none.';
COMMENT ON COLUMN inventory.outcome.sku IS 'The SKU when the reservation has one distinct SKU; NULL for several.';
COMMENT ON COLUMN inventory.outcome.quantity IS 'Units of the reservation, all lines summed.';
COMMENT ON COLUMN inventory.outcome.expires_at IS 'When the reservation expires (NULL for a rejected one).';

/* ---------------------------------------------------------------------
 * Functions.  All are SECURITY INVOKER with a pinned search_path: the C
 * code checks the role in effect at the call (GetUserId(), so SET ROLE is
 * honoured) against the tenant grants, then runs its saved plans as the
 * extension owner (SetUserIdAndSecContext), as pg_cron does.
 * ------------------------------------------------------------------- */

CREATE FUNCTION inventory.reserve(tenant text, request_key text, sku text,
		quantity integer, ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_reserve';
COMMENT ON FUNCTION inventory.reserve(text, text, text, integer, interval) IS
	'Holds quantity units of sku for ttl (above zero, at most 7 days), idempotent on (tenant, request_key). Status reserved or insufficient (stored and frozen). Errors: 22023 bad argument, IN002 unknown SKU, IN001 key reused with another payload, 42501 tenant not granted.';

CREATE FUNCTION inventory.reserve_lines(tenant text, request_key text,
		lines jsonb, ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_reserve_lines';
COMMENT ON FUNCTION inventory.reserve_lines(text, text, jsonb, interval) IS
	'Holds every line of [{"sku": ..., "quantity": ...}, ...] (1 to 100 lines, same SKU summed) or none, idempotent on (tenant, request_key). Status reserved or insufficient. Errors: 22023, IN002, IN001, 42501.';

CREATE FUNCTION inventory.confirm(tenant text, request_key text)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_confirm';
COMMENT ON FUNCTION inventory.confirm(text, text) IS
	'Turns an unexpired pending reservation into confirmed (reserved units become consumed); a due one is expired instead. Status confirmed, expired, cancelled, insufficient, compensated or not_found. Errors: 22023, 42501.';

CREATE FUNCTION inventory.cancel(tenant text, request_key text,
		reason text DEFAULT NULL)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_cancel';
COMMENT ON FUNCTION inventory.cancel(text, text, text) IS
	'Releases a pending reservation''s units (state cancelled); a due one is expired instead; other states are reported unchanged. Status cancelled, expired, confirmed, insufficient, compensated or not_found. Errors: 22023, 42501.';

CREATE FUNCTION inventory.compensate(tenant text, request_key text,
		reason text)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_compensate';
COMMENT ON FUNCTION inventory.compensate(text, text, text) IS
	'After fulfillment failed: a confirmed reservation becomes compensated and its units return from consumed to available, once. Status compensated, pending, cancelled, expired, insufficient or not_found. Errors: 22023 (reason required), 42501.';

CREATE FUNCTION inventory.lookup(tenant text, request_key text)
	RETURNS inventory.outcome
	LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_lookup';
COMMENT ON FUNCTION inventory.lookup(text, text) IS
	'Reports the stored outcome of the reserve call with this key (reserved, insufficient or not_found) and the effective state; never changes data. Errors: 22023, 42501.';

CREATE FUNCTION inventory.expire_due(max_rows integer DEFAULT 1000)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_expire_due';
COMMENT ON FUNCTION inventory.expire_due(integer) IS
	'Expires at most max_rows (at least 1) due pending reservations, oldest first, skipping rows other transactions hold; returns how many it expired. Errors: 22023.';

CREATE FUNCTION inventory.restock(tenant text, request_key text, sku text,
		quantity integer, reason text DEFAULT NULL)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_restock';
COMMENT ON FUNCTION inventory.restock(text, text, text, integer, text) IS
	'Records a receipt of quantity units (creating the tenant''s SKU if new), idempotent on (tenant, request_key) among ledger keys; returns available after it. Errors: 22023, IN001.';

CREATE FUNCTION inventory.adjust(tenant text, request_key text, sku text,
		delta bigint, kind text, reason text)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_adjust';
COMMENT ON FUNCTION inventory.adjust(text, text, text, bigint, text, text) IS
	'Records a return (delta > 0), loss (delta < 0) or correction of available units with a reason, idempotent on (tenant, request_key) among ledger keys; returns available after it. Errors: 22023, IN002 unknown SKU, IN003 would make available negative, IN001.';

CREATE FUNCTION inventory.check_invariants()
	RETURNS TABLE(tenant text, sku text, check_name text, detail text)
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_check_invariants';
COMMENT ON FUNCTION inventory.check_invariants() IS
	'Returns one row per broken invariant (no rows when healthy): counts against the ledger, reserved against pending lines, consumed against confirmed lines, transition log rows against reservation versions. Reads one snapshot.';

CREATE FUNCTION inventory.grant_tenant(tenant text, member regrole)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_grant_tenant';
COMMENT ON FUNCTION inventory.grant_tenant(text, regrole) IS
	'Lets member (and roles that inherit from it) act for tenant (* for every tenant); returns whether a grant was added. Errors: 22023.';

CREATE FUNCTION inventory.revoke_tenant(tenant text, member regrole)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_revoke_tenant';
COMMENT ON FUNCTION inventory.revoke_tenant(text, regrole) IS
	'Removes the grant of exactly (tenant, member); revoking * removes the wildcard only; returns whether a grant was removed. Errors: 22023.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA inventory FROM PUBLIC;
