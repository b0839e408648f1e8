/*
 * sql/pg_inventory.sql
 *
 * The full install script of the current version of pg_inventory (the
 * Makefile installs it as pg_inventory--<default_version>.sql; the control
 * file states the version).  This is the one file to edit for the current
 * version: CREATE EXTENSION runs it alone.  The released versions stay
 * installable and upgradable through the frozen scripts beside it
 * (pg_inventory--0.1.sql and the steps pg_inventory--W--X.sql), and the
 * step into this version must give an upgraded database exactly the objects
 * this script gives a fresh one (test/scripts/upgrade_test.sh compares
 * them).
 *
 * The tables carry the invariants as constraints; the functions (C, in
 * src/) are the only write path.  Every identifier column uses the "C"
 * collation so that the (tenant, sku) lock order in SQL (ORDER BY) is the
 * byte order the C code sorts by (strcmp).
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_inventory" to load this file. \quit

-- The schema is created by CREATE EXTENSION (control file: schema =
-- inventory); it is not a member of the extension, so DROP EXTENSION leaves
-- it (empty) behind.
-- The extension's functions run as its owner and use the objects of this
-- schema by name: a role that owns the schema could rename it and put
-- objects of its own in their place.  So the schema must belong to a
-- superuser (CREATE EXTENSION creates it so when it does not exist).
DO $$
BEGIN
	IF (SELECT r.rolsuper FROM pg_catalog.pg_namespace n
		  JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
		 WHERE n.nspname = 'inventory') IS NOT TRUE THEN
		RAISE EXCEPTION 'schema "inventory" is owned by a role that is not a superuser'
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'Its owner could replace the objects that the extension''s functions use while they run as the extension''s owner.',
				  HINT = 'Drop the schema, or make a superuser its owner (ALTER SCHEMA inventory OWNER TO ...), before CREATE EXTENSION pg_inventory.';
	END IF;
END
$$;

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
	'A tenant, SKU or location name: 1 to 64 characters without control characters.';

-- Request (idempotency) keys: 1 to 200 characters, no control characters.
CREATE DOMAIN inventory.request_key AS text COLLATE "C"
	CONSTRAINT request_key_length CHECK (char_length(VALUE) BETWEEN 1 AND 200)
	CONSTRAINT request_key_no_control CHECK (VALUE !~ '[\x01-\x1f\x7f]');
COMMENT ON DOMAIN inventory.request_key IS
	'An idempotency key, scoped by tenant: 1 to 200 characters without control characters.';

/* ---------------------------------------------------------------------
 * 0.6: the closed lists of states and event types, as C functions for the
 * CHECK constraints.  A CHECK written as IN ('pending', ...) is stored as a
 * parse tree that PostgreSQL reads back from text for every statement that
 * writes the table (thousands of characters for the event types); a call
 * of an immutable function is a short tree and a string comparison.
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.is_reservation_state(state text)
	RETURNS boolean
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'inventory_is_reservation_state';
COMMENT ON FUNCTION inventory.is_reservation_state(text) IS
	'Whether state is a reservation state: pending, confirmed, cancelled, expired, rejected or compensated (the state machine of the README). NULL for NULL. Used by the CHECK constraints reservation_state_valid and reservation_transition_state_valid (0.6).';

CREATE FUNCTION inventory.is_event_type(event_type text)
	RETURNS boolean
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	AS 'MODULE_PATHNAME', 'inventory_is_event_type';
COMMENT ON FUNCTION inventory.is_event_type(text) IS
	'Whether event_type is an outbox event type: reservation.reserved, .confirmed, .cancelled, .expired, .compensated, .extended, .amended, stock.restocked, stock.adjusted, stock.out_of_stock, stock.back_in_stock or stock.low (README section 7, Outbox and delivery). NULL for NULL. Used by the CHECK constraint outbox_event_type_valid (0.6).';

-- 0.6: a backend remembers the tenant grants its checks let through
-- (README "Roles and grants") and each tenant's first active locations;
-- every change of those tables, whoever makes it, tells the other backends
-- to forget them (statement triggers tenant_grant_changed, location_changed)
CREATE FUNCTION inventory._table_changed()
	RETURNS trigger
	LANGUAGE C
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_table_changed';
COMMENT ON FUNCTION inventory._table_changed() IS
	'Trigger function of tenant_grant_changed and location_changed (0.6): sends an invalidation of the table, so that every backend drops what it remembered of it (tenant grants, a tenant''s locations in allocation order) once the change commits. Not callable otherwise (XX000).';

/* ---------------------------------------------------------------------
 * sku: the catalog of SKUs, one row per (tenant, sku), created by restock,
 * and stock_slot: their counters, split over one or more slots.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.sku (
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	slots		integer NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT sku_pkey PRIMARY KEY (tenant, sku),
	CONSTRAINT sku_tenant_not_wildcard CHECK (tenant <> '*'),
	CONSTRAINT sku_slots_range CHECK (slots BETWEEN 1 AND 256)
);
COMMENT ON TABLE inventory.sku IS
	'The SKUs of each tenant (created by restock) and the number of stock slots their counters are split over.';
COMMENT ON COLUMN inventory.sku.tenant IS 'Tenant that owns the SKU.';
COMMENT ON COLUMN inventory.sku.sku IS 'Stock keeping unit, unique within the tenant.';
COMMENT ON COLUMN inventory.sku.slots IS 'Number of stock slots (1 to 256), set with inventory.set_stock_slots.';
COMMENT ON COLUMN inventory.sku.created_at IS 'When the SKU was first stocked.';

/* ---------------------------------------------------------------------
 * location: the places a tenant keeps stock; allocation_policy: how
 * reservations are spread over them; stock_location: one row per
 * (sku, location) ever stocked, the catalog of the counters.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.location (
	tenant		inventory.name_id NOT NULL,
	location	inventory.name_id NOT NULL,
	priority	integer NOT NULL DEFAULT 100,
	active		boolean NOT NULL DEFAULT true,
	created_at	timestamptz NOT NULL,
	updated_at	timestamptz NOT NULL,
	CONSTRAINT location_pkey PRIMARY KEY (tenant, location),
	CONSTRAINT location_tenant_not_wildcard CHECK (tenant <> '*'),
	CONSTRAINT location_priority_range CHECK (priority BETWEEN -1000000 AND 1000000)
);
COMMENT ON TABLE inventory.location IS
	'The places each tenant keeps stock (warehouse, store, drop-shipper), set with inventory.set_location; the location named default is created (priority 100, active) when first needed. Reservations are served by active locations in (priority, location) order.';
COMMENT ON COLUMN inventory.location.tenant IS 'Tenant that owns the location.';
COMMENT ON COLUMN inventory.location.location IS 'Location name, unique within the tenant (same rules as a SKU name).';
COMMENT ON COLUMN inventory.location.priority IS 'Allocation order, -1000000 to 1000000: the smaller serves first; ties by name in byte order.';
COMMENT ON COLUMN inventory.location.active IS 'Whether reservations may take units here; an inactive location keeps its stock and can be restocked and adjusted.';
COMMENT ON COLUMN inventory.location.created_at IS 'When the location was created (pg_inventory clock).';
COMMENT ON COLUMN inventory.location.updated_at IS 'When its priority or active flag last changed (pg_inventory clock).';

-- 0.6: a reservation reads the tenant's first two active locations in
-- allocation order: this index gives them without a sort
CREATE INDEX location_allocation_order ON inventory.location (tenant, priority, location)
	WHERE active;
COMMENT ON INDEX inventory.location_allocation_order IS
	'The active locations of each tenant in allocation order (priority, then name): a reservation reads the first two (0.6).';
CREATE TRIGGER location_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON inventory.location
	FOR EACH STATEMENT EXECUTE FUNCTION inventory._table_changed();
-- also under session_replication_role = replica (logical replication's
-- apply, a sync tool): the caches must hear of every change
ALTER TABLE inventory.location ENABLE ALWAYS TRIGGER location_changed;
COMMENT ON TRIGGER location_changed ON inventory.location IS
	'Makes every backend forget the tenants'' locations it remembered when a location changes (0.6).';

CREATE TABLE inventory.allocation_policy (
	tenant		inventory.name_id NOT NULL,
	allow_split boolean NOT NULL DEFAULT false,
	updated_at	timestamptz NOT NULL,
	CONSTRAINT allocation_policy_pkey PRIMARY KEY (tenant),
	CONSTRAINT allocation_policy_tenant_not_wildcard CHECK (tenant <> '*')
);
COMMENT ON TABLE inventory.allocation_policy IS
	'Per tenant, how reservations are allocated over locations, set with inventory.set_allocation_policy; a tenant without a row has allow_split false.';
COMMENT ON COLUMN inventory.allocation_policy.tenant IS 'Tenant the policy applies to.';
COMMENT ON COLUMN inventory.allocation_policy.allow_split IS 'Whether a line that no single active location can serve whole may be filled from several, in (priority, location) order.';
COMMENT ON COLUMN inventory.allocation_policy.updated_at IS 'When the policy last changed (pg_inventory clock).';

CREATE TABLE inventory.stock_location (
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	location	inventory.name_id NOT NULL,
	safety_stock bigint NOT NULL DEFAULT 0,
	low_threshold bigint,
	level		text,
	version		bigint NOT NULL DEFAULT 0,
	created_at	timestamptz NOT NULL,
	CONSTRAINT stock_location_pkey PRIMARY KEY (tenant, sku, location),
	CONSTRAINT stock_location_sku_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.sku (tenant, sku),
	CONSTRAINT stock_location_location_fk FOREIGN KEY (tenant, location)
		REFERENCES inventory.location (tenant, location),
	CONSTRAINT stock_location_safety_stock_nonneg CHECK (safety_stock >= 0),
	CONSTRAINT stock_location_low_threshold_nonneg CHECK (low_threshold >= 0),
	CONSTRAINT stock_location_level_valid
		CHECK (level IN ('in_stock', 'low', 'out_of_stock')),
	CONSTRAINT stock_location_version_nonneg CHECK (version >= 0)
);
COMMENT ON TABLE inventory.stock_location IS
	'One row per (tenant, sku, location) ever stocked: the catalog of the counters (stock_slot), with the stock policy set by inventory.set_stock_policy and the stock level. sellable = greatest(available - safety_stock, 0).';
COMMENT ON COLUMN inventory.stock_location.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.stock_location.sku IS 'The SKU.';
COMMENT ON COLUMN inventory.stock_location.location IS 'The location.';
COMMENT ON COLUMN inventory.stock_location.safety_stock IS 'Units (0 or more) that count as available here but that reservations never take.';
COMMENT ON COLUMN inventory.stock_location.low_threshold IS 'Units (0 or more): the level is low when sellable is at most this and above 0; NULL: never low.';
COMMENT ON COLUMN inventory.stock_location.level IS 'out_of_stock (sellable = 0), low (sellable <= low_threshold) or in_stock; NULL until first computed. A change writes stock.out_of_stock, stock.back_in_stock or stock.low.';
COMMENT ON COLUMN inventory.stock_location.version IS 'Stock version (0 or more), incremented by every stock event of this (sku, location); carried in the events'' "version".';
COMMENT ON COLUMN inventory.stock_location.created_at IS 'When the SKU was first stocked at this location (pg_inventory clock).';

/* ---------------------------------------------------------------------
 * The counters, one row per slot.  Per slot, as per SKU, no counter is
 * negative; the SKU's totals are the sums over its slots.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.stock_slot (
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	slot		integer NOT NULL,
	available	bigint NOT NULL DEFAULT 0,
	reserved	bigint NOT NULL DEFAULT 0,
	consumed	bigint NOT NULL DEFAULT 0,
	updated_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	location	inventory.name_id NOT NULL,
	keep_units	bigint,
	level_watch bigint,
	CONSTRAINT stock_slot_pkey PRIMARY KEY (tenant, sku, location, slot),
	CONSTRAINT stock_slot_stock_location_fk FOREIGN KEY (tenant, sku, location)
		REFERENCES inventory.stock_location (tenant, sku, location),
	CONSTRAINT stock_slot_slot_range CHECK (slot BETWEEN 0 AND 255),
	CONSTRAINT stock_available_nonneg CHECK (available >= 0),
	CONSTRAINT stock_reserved_nonneg CHECK (reserved >= 0),
	CONSTRAINT stock_consumed_nonneg CHECK (consumed >= 0)
);
COMMENT ON TABLE inventory.stock_slot IS
	'Stock counters of one slot of a SKU at a location (each location of a SKU has sku.slots slots); a SKU''s counters at a location are the sums over its slots there (view inventory.location_stock), its counters the sums over all its slots (view inventory.stock). Each slot also carries its guards (keep_units, level_watch, 0.6). Written only by the pg_inventory functions.';
COMMENT ON COLUMN inventory.stock_slot.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.stock_slot.sku IS 'The SKU.';
COMMENT ON COLUMN inventory.stock_slot.slot IS 'Slot number, 0 to slots - 1, at the location.';
COMMENT ON COLUMN inventory.stock_slot.available IS 'Units of this slot that can still be reserved.';
COMMENT ON COLUMN inventory.stock_slot.reserved IS 'Units of this slot held by pending reservations.';
COMMENT ON COLUMN inventory.stock_slot.consumed IS 'Units of this slot taken by confirmed reservations.';
COMMENT ON COLUMN inventory.stock_slot.updated_at IS 'When a counter of this slot last changed (pg_inventory clock).';
COMMENT ON COLUMN inventory.stock_slot.location IS 'The location the units are at.';
COMMENT ON COLUMN inventory.stock_slot.keep_units IS 'Units of available that a reservation taking from this slot alone must leave (0.6): inventory.slot_keep_units(sku.slots, safety_stock) of its (sku, location). NULL: none may take from available in this slot alone (several slots and a safety stock; only a call that locks every slot and checks the total may). Kept by the pg_inventory functions; check_invariants compares.';
COMMENT ON COLUMN inventory.stock_slot.level_watch IS 'Units (0.6): a take from available that leaves more than this in the slot cannot change the stock level, so the call does not look at it: inventory.slot_level_watch(sku.slots, safety_stock, low_threshold, level) of its (sku, location). NULL: the level is looked at after every change of available. Kept by the pg_inventory functions; check_invariants compares.';

/*
 * 0.6: the guards of a slot, derived from its (sku, location)'s stock
 * policy and level and the SKU's slot count, so that the fast path of a
 * reservation reads one row (stock_slot) instead of joining stock_location
 * and sku.  The pg_inventory functions that change a policy, a level or a
 * slot count write them in the same statement or transaction, under the
 * slots' row locks.
 */
CREATE FUNCTION inventory.slot_keep_units(slots integer, safety_stock bigint)
	RETURNS bigint
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	RETURN CASE WHEN safety_stock = 0 THEN 0 WHEN slots = 1 THEN safety_stock END;
COMMENT ON FUNCTION inventory.slot_keep_units(integer, bigint) IS
	'The keep_units of each slot of a (sku, location) (0.6): 0 without a safety stock; the safety stock (units) when the SKU has one slot, which then holds all of it; NULL with several slots and a safety stock (a slot cannot know what the others hold). See stock_slot.keep_units.';

CREATE FUNCTION inventory.slot_level_watch(slots integer, safety_stock bigint,
	low_threshold bigint, level text)
	RETURNS bigint
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	RETURN CASE WHEN slots = 1 AND level = 'in_stock' AND safety_stock >= 0
		AND COALESCE(low_threshold, 0) BETWEEN 0 AND 9223372036854775807 - safety_stock
		THEN safety_stock + COALESCE(low_threshold, 0) END;
COMMENT ON FUNCTION inventory.slot_level_watch(integer, bigint, bigint, text) IS
	'The level_watch of each slot of a (sku, location) (0.6): with one slot and the level in_stock, safety_stock + low_threshold (a missing threshold counts as 0), in units: while more than that stays available the level stays in_stock. NULL otherwise (also when the sum would exceed bigint, or for a negative argument, which the tables forbid). See stock_slot.level_watch.';

/* ---------------------------------------------------------------------
 * inventory.stock: each SKU's totals, as the table showed them before.
 * ------------------------------------------------------------------- */
CREATE VIEW inventory.stock AS
SELECT k.tenant, k.sku, t.available, t.reserved, t.consumed, k.slots,
	   k.created_at, t.updated_at
FROM inventory.sku k
CROSS JOIN LATERAL (
	SELECT COALESCE(sum(s.available), 0)::bigint AS available,
		   COALESCE(sum(s.reserved), 0)::bigint AS reserved,
		   COALESCE(sum(s.consumed), 0)::bigint AS consumed,
		   max(s.updated_at) AS updated_at
	FROM inventory.stock_slot s
	WHERE s.tenant = k.tenant AND s.sku = k.sku) t;
COMMENT ON VIEW inventory.stock IS
	'Stock counters per (tenant, sku): the sums over the SKU''s slots at every location (per location: inventory.location_stock). available + reserved + consumed equals the sum of delta over stock_ledger and stock_ledger_archive.';
COMMENT ON COLUMN inventory.stock.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.stock.sku IS 'Stock keeping unit, unique within the tenant.';
COMMENT ON COLUMN inventory.stock.available IS 'Units that are not held by a reservation (never negative), at every location, active or not, safety stock included.';
COMMENT ON COLUMN inventory.stock.reserved IS 'Units held by pending reservations.';
COMMENT ON COLUMN inventory.stock.consumed IS 'Units taken by confirmed reservations.';
COMMENT ON COLUMN inventory.stock.slots IS 'Number of slots the counters are split over.';
COMMENT ON COLUMN inventory.stock.created_at IS 'When the SKU was first stocked.';
COMMENT ON COLUMN inventory.stock.updated_at IS 'When a counter last changed (pg_inventory clock).';

/* ---------------------------------------------------------------------
 * inventory.location_stock: the counters per (sku, location).
 * ------------------------------------------------------------------- */
CREATE VIEW inventory.location_stock AS
SELECT l.tenant, l.sku, l.location, t.available, t.reserved, t.consumed,
	   l.safety_stock, GREATEST(t.available - l.safety_stock, 0)::bigint AS sellable,
	   l.low_threshold, l.level, l.version, k.slots, t.updated_at
FROM inventory.stock_location l
JOIN inventory.sku k ON k.tenant = l.tenant AND k.sku = l.sku
CROSS JOIN LATERAL (
	SELECT COALESCE(sum(s.available), 0)::bigint AS available,
		   COALESCE(sum(s.reserved), 0)::bigint AS reserved,
		   COALESCE(sum(s.consumed), 0)::bigint AS consumed,
		   max(s.updated_at) AS updated_at
	FROM inventory.stock_slot s
	WHERE s.tenant = l.tenant AND s.sku = l.sku AND s.location = l.location) t;
COMMENT ON VIEW inventory.location_stock IS
	'Stock counters per (tenant, sku, location): the sums over the slots of the SKU at the location, with its stock policy and level. The rows of a SKU sum to its row of inventory.stock.';
COMMENT ON COLUMN inventory.location_stock.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.location_stock.sku IS 'The SKU.';
COMMENT ON COLUMN inventory.location_stock.location IS 'The location.';
COMMENT ON COLUMN inventory.location_stock.available IS 'Units at the location not held by a reservation (never negative), safety stock included.';
COMMENT ON COLUMN inventory.location_stock.reserved IS 'Units at the location held by pending reservations.';
COMMENT ON COLUMN inventory.location_stock.consumed IS 'Units at the location taken by confirmed reservations.';
COMMENT ON COLUMN inventory.location_stock.safety_stock IS 'Units of available that reservations never take.';
COMMENT ON COLUMN inventory.location_stock.sellable IS 'Units reservations can take here: greatest(available - safety_stock, 0).';
COMMENT ON COLUMN inventory.location_stock.low_threshold IS 'Units: the level is low when sellable is at most this and above 0; NULL: never low.';
COMMENT ON COLUMN inventory.location_stock.level IS 'in_stock, low or out_of_stock as last computed; NULL until first computed.';
COMMENT ON COLUMN inventory.location_stock.version IS 'Stock version, incremented by every stock event of this (sku, location).';
COMMENT ON COLUMN inventory.location_stock.slots IS 'Number of slots the counters are split over at the location (the SKU''s slot count).';
COMMENT ON COLUMN inventory.location_stock.updated_at IS 'When a counter at the location last changed (pg_inventory clock).';

/*
 * 0.5: no hand repairs through the view (issue #14).  UPDATE inventory.stock
 * is refused, even for a superuser: a correction is adjust or adjust_at,
 * with a reason, a ledger record and its event.  Nobody else may write the
 * view anyway (no privileges).
 */
CREATE FUNCTION inventory._stock_view_update()
	RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	RAISE EXCEPTION 'inventory.stock cannot be changed by hand'
		USING ERRCODE = 'feature_not_supported',
			  DETAIL = 'A counter changed outside the functions has no ledger record and no event; check_invariants would report it.',
			  HINT = 'Correct available units with inventory.adjust (or inventory.adjust_at at a location), which records the reason, a ledger record and its event; change the slot count with inventory.set_stock_slots.';
END
$$;
COMMENT ON FUNCTION inventory._stock_view_update() IS
	'INSTEAD OF UPDATE trigger of the view inventory.stock: refuses every hand change (0A000); counters change only through the functions (a correction: adjust or adjust_at).';
REVOKE ALL ON FUNCTION inventory._stock_view_update() FROM PUBLIC;
CREATE TRIGGER stock_view_update INSTEAD OF UPDATE ON inventory.stock
	FOR EACH ROW EXECUTE FUNCTION inventory._stock_view_update();
COMMENT ON TRIGGER stock_view_update ON inventory.stock IS
	'Refuses a hand change of inventory.stock (0A000): a correction is inventory.adjust or inventory.adjust_at.';


/* ---------------------------------------------------------------------
 * The reservations' rings (0.9; README "History retention: rings").
 * reservation, reservation_line and reservation_transition are each
 * partitioned into four rings by the reservation id modulo 4: a
 * reservation's lines and log rows are in the ring of its id, and the ring
 * is written in the id itself (the id is a sequence number times 4 plus
 * the ring current when it was made), so every statement that names a
 * reservation by id reaches its ring without knowing about rings, and the
 * ring of a reservation never changes.  purge_history removes the finished
 * history a ring at a time, by truncating the ring's three partitions once
 * every reservation in it finished before the retention, and makes the
 * next ring current once it is empty: finished reservations and the
 * transition log leave whole, never by DELETE, so no dead rows are left
 * whatever transaction is held open elsewhere (PgQ's rotating tables).
 * ------------------------------------------------------------------- */
CREATE SEQUENCE inventory.reservation_ring AS smallint MINVALUE 0 MAXVALUE 3 START 0 NO CYCLE;
COMMENT ON SEQUENCE inventory.reservation_ring IS
	'The reservations'' current ring (its last_value, 0 to 3): new reservation ids end in it (id modulo 4). Moved on by purge_history only; never set it by hand. Not dumped by pg_dump: a restored database starts at ring 0 (any ring is safe to write to).';
CREATE SEQUENCE inventory.reservation_id_seq AS bigint MINVALUE 1 START 1 NO CYCLE;
COMMENT ON SEQUENCE inventory.reservation_id_seq IS
	'Sequence numbers of reservation ids (0.9): a new id is the next value times 4 plus the current ring (inventory._reservation_id).';

CREATE FUNCTION inventory._reservation_id(id_sequence regclass, ring_sequence regclass)
	RETURNS bigint
	LANGUAGE C VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'inventory_reservation_id';
COMMENT ON FUNCTION inventory._reservation_id(regclass, regclass) IS
	'Default of reservation.id (0.9), called with inventory.reservation_id_seq and inventory.reservation_ring: the next value of the first times 4 plus the current ring (the last value of the second, read once per transaction), so that the id names its ring (id % 4) and ids still grow in the order they are drawn. Any ring is safe to write to: purge_history truncates a ring only while it holds its partitions exclusively, so never under a writer that has not committed, and only when every reservation in it finished before the retention. Internal: runs as the extension''s owner inside reserve. Errors: those of nextval, 42501 without SELECT or USAGE on the ring sequence, 22003 past the largest id (2^61 reservations).';

/* ---------------------------------------------------------------------
 * reservation: one row per (tenant, request_key).
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.reservation (
	id			bigint NOT NULL DEFAULT inventory._reservation_id(
		'inventory.reservation_id_seq'::regclass, 'inventory.reservation_ring'::regclass),
	tenant		inventory.name_id NOT NULL,
	request_key inventory.request_key NOT NULL,
	state		text NOT NULL,
	expires_at	timestamptz,
	version		integer NOT NULL DEFAULT 1,
	reason		text,
	created_at	timestamptz NOT NULL,
	updated_at	timestamptz NOT NULL,
	request		jsonb,
	CONSTRAINT reservation_state_valid
		CHECK (inventory.is_reservation_state(state)),
	CONSTRAINT reservation_expiry_unless_rejected
		CHECK ((state = 'rejected') = (expires_at IS NULL)),
	CONSTRAINT reservation_version_positive CHECK (version >= 1),
	CONSTRAINT reservation_reason_length CHECK (char_length(reason) <= 1000),
	CONSTRAINT reservation_request_array CHECK (pg_catalog.jsonb_typeof(request) = 'array')
) PARTITION BY LIST ((id % 4));
ALTER SEQUENCE inventory.reservation_id_seq OWNED BY inventory.reservation.id;
-- expire_due reads pending reservations oldest first: this partial index
-- holds only pending rows, so its size follows the open reservations, not
-- the history.
CREATE INDEX reservation_pending_due ON inventory.reservation (expires_at, id)
	WHERE state = 'pending';
COMMENT ON TABLE inventory.reservation IS
	'One reservation per (tenant, request_key); state moves only through the pg_inventory functions. 0.9: partitioned by id % 4 into reservation_ring_0 to reservation_ring_3, so that purge_history removes finished reservations a ring at a time (TRUNCATE), never row by row; the id is unique and the request key is unique per tenant in every ring and, through reserve, across the rings.';
COMMENT ON COLUMN inventory.reservation.id IS 'Surrogate key, referenced by lines, transitions and events. 0.9: a sequence number times 4 plus the ring (id % 4) current when the reservation was made (inventory._reservation_id); ids grow but are not consecutive.';
COMMENT ON COLUMN inventory.reservation.tenant IS 'Tenant that made the reservation.';
COMMENT ON COLUMN inventory.reservation.request_key IS 'Idempotency key of the reserve call that created it.';
COMMENT ON COLUMN inventory.reservation.state IS 'pending, confirmed, cancelled, expired, rejected (stored insufficient outcome) or compensated.';
COMMENT ON COLUMN inventory.reservation.expires_at IS 'When a pending reservation expires (inclusive); NULL for rejected ones.';
COMMENT ON COLUMN inventory.reservation.version IS 'Starts at 1, incremented by every state change.';
COMMENT ON COLUMN inventory.reservation.reason IS 'Reason given by the last cancel or compensate, if any.';
COMMENT ON COLUMN inventory.reservation.created_at IS 'When the reserve call ran (pg_inventory clock).';
COMMENT ON COLUMN inventory.reservation.updated_at IS 'When the state last changed (pg_inventory clock).';
COMMENT ON COLUMN inventory.reservation.request IS
	'The idempotency payload of the reserve call when the lines do not say it (a request with pinned locations, or after amend): [{"sku": s, "quantity": n[, "location": l]}, ...] sorted by (sku, location, no location first); NULL otherwise.';
COMMENT ON INDEX inventory.reservation_pending_due IS 'Pending reservations by expiry, for expire_due.';

/* ---------------------------------------------------------------------
 * reservation_line: one row per (SKU, location) of a reservation.
 * ------------------------------------------------------------------- */
CREATE TABLE inventory.reservation_line (
	reservation_id bigint NOT NULL,
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	quantity	integer NOT NULL,
	location	inventory.name_id,
	available	bigint,
	CONSTRAINT reservation_line_sku_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.sku (tenant, sku),
	CONSTRAINT reservation_line_location_fk FOREIGN KEY (tenant, location)
		REFERENCES inventory.location (tenant, location),
	CONSTRAINT reservation_line_quantity_positive CHECK (quantity >= 1),
	CONSTRAINT reservation_line_available_nonneg CHECK (available >= 0)
) PARTITION BY LIST ((reservation_id % 4));
COMMENT ON TABLE inventory.reservation_line IS
	'The lines of a reservation: one row per (sku, location) of its allocation with the units held there; rejected reservations keep their requested lines, one per (sku, pinned location or none). 0.9: partitioned by reservation_id % 4 into reservation_line_ring_0 to reservation_line_ring_3, beside their reservation''s ring.';
COMMENT ON COLUMN inventory.reservation_line.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.reservation_line.tenant IS 'The reservation''s tenant (kept for the stock foreign key).';
COMMENT ON COLUMN inventory.reservation_line.sku IS 'The SKU held.';
COMMENT ON COLUMN inventory.reservation_line.quantity IS 'Units of the SKU at the location (request lines of the same SKU and location summed); for a rejected line, the units requested.';
COMMENT ON COLUMN inventory.reservation_line.location IS 'Where the units are held; for a rejected line the pinned location, NULL when the line did not pin one.';
COMMENT ON COLUMN inventory.reservation_line.available IS 'Rejected lines only: the sellable units the line could use when it was refused (at its pinned location, else over all active locations); NULL otherwise.';

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
	location	inventory.name_id NOT NULL,
	CONSTRAINT stock_ledger_pkey PRIMARY KEY (id),
	CONSTRAINT stock_ledger_request_key_unique UNIQUE (tenant, request_key),
	CONSTRAINT stock_ledger_stock_location_fk FOREIGN KEY (tenant, sku, location)
		REFERENCES inventory.stock_location (tenant, sku, location),
	CONSTRAINT stock_ledger_kind_valid
		CHECK (kind IN ('receipt', 'return', 'loss', 'correction')),
	CONSTRAINT stock_ledger_delta_sign_matches_kind CHECK (
		CASE kind WHEN 'receipt' THEN delta > 0 WHEN 'return' THEN delta > 0
			 WHEN 'loss' THEN delta < 0 ELSE delta <> 0 END),
	CONSTRAINT stock_ledger_reason_length CHECK (char_length(reason) <= 1000),
	CONSTRAINT stock_ledger_available_after_nonneg CHECK (available_after >= 0)
);
CREATE INDEX stock_ledger_tenant_sku ON inventory.stock_ledger (tenant, sku, location);
COMMENT ON TABLE inventory.stock_ledger IS
	'Every receipt, return, loss and correction as its own record; the sum of delta per (tenant, sku, location) over this table and stock_ledger_archive (old records moved there by archive_ledger) is the net received stock at that location.';
COMMENT ON COLUMN inventory.stock_ledger.id IS 'Surrogate key in insertion order.';
COMMENT ON COLUMN inventory.stock_ledger.tenant IS 'Tenant of the stock.';
COMMENT ON COLUMN inventory.stock_ledger.sku IS 'SKU of the stock.';
COMMENT ON COLUMN inventory.stock_ledger.request_key IS 'Idempotency key of the restock or adjust call (its own namespace).';
COMMENT ON COLUMN inventory.stock_ledger.kind IS 'receipt (restock), return, loss or correction (adjust).';
COMMENT ON COLUMN inventory.stock_ledger.delta IS 'Units added (positive) or removed (negative).';
COMMENT ON COLUMN inventory.stock_ledger.reason IS 'Free-text reason given by the caller.';
COMMENT ON COLUMN inventory.stock_ledger.available_after IS 'Units available at the location right after this record; what a replay returns.';
COMMENT ON COLUMN inventory.stock_ledger.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.stock_ledger.created_at IS 'When the call ran (pg_inventory clock).';
COMMENT ON COLUMN inventory.stock_ledger.location IS 'Location of the stock.';
COMMENT ON INDEX inventory.stock_ledger_tenant_sku IS 'Ledger sums per (SKU, location) for check_invariants.';

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
	CONSTRAINT reservation_transition_state_valid
		CHECK (inventory.is_reservation_state(to_state))
) PARTITION BY LIST ((reservation_id % 4));
COMMENT ON TABLE inventory.reservation_transition IS
	'Transition log: one row per state change of a reservation, including the stored rejection (from NULL to rejected). 0.9: partitioned by reservation_id % 4 into reservation_transition_ring_0 to reservation_transition_ring_3, beside their reservation''s ring.';
COMMENT ON COLUMN inventory.reservation_transition.id IS 'Surrogate key in insertion order.';
COMMENT ON COLUMN inventory.reservation_transition.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.reservation_transition.from_state IS 'State before the change; NULL when the reservation was created.';
COMMENT ON COLUMN inventory.reservation_transition.to_state IS 'State after the change.';
COMMENT ON COLUMN inventory.reservation_transition.reason IS 'Reason given by the caller, or the rule that applied (expiry).';
COMMENT ON COLUMN inventory.reservation_transition.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.reservation_transition.version IS 'Reservation version after the change.';
COMMENT ON COLUMN inventory.reservation_transition.created_at IS 'When the change happened (pg_inventory clock).';

/*
 * The rings' partitions (0.9): ring k of each table holds the rows whose
 * reservation id is k modulo 4.  The keys are declared on each partition
 * (a partitioned table's keys must contain its partition key, here an
 * expression): since the ring is a function of the reservation id, unique
 * per partition on the id is unique over the table.  The foreign keys go
 * from partition to partition of the same ring, so that purge_history can
 * truncate a ring's three partitions together.  The request key is unique
 * per ring here and across the rings through reserve (a lock on the key,
 * reservation.c).
 */
DO $rings$
DECLARE
	k integer;
BEGIN
	FOR k IN 0..3 LOOP
		EXECUTE pg_catalog.format($f$
CREATE TABLE inventory.reservation_ring_%1$s PARTITION OF inventory.reservation
	(CONSTRAINT reservation_ring_%1$s_pkey PRIMARY KEY (id),
	 CONSTRAINT reservation_ring_%1$s_request_key_unique UNIQUE (tenant, request_key))
	FOR VALUES IN (%1$s);
CREATE TABLE inventory.reservation_line_ring_%1$s PARTITION OF inventory.reservation_line
	(CONSTRAINT reservation_line_ring_%1$s_unique
		UNIQUE NULLS NOT DISTINCT (reservation_id, sku, location),
	 CONSTRAINT reservation_line_ring_%1$s_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation_ring_%1$s (id))
	FOR VALUES IN (%1$s);
CREATE TABLE inventory.reservation_transition_ring_%1$s PARTITION OF inventory.reservation_transition
	(CONSTRAINT reservation_transition_ring_%1$s_pkey PRIMARY KEY (id),
	 -- one log row per version: a transition cannot be logged twice
	 CONSTRAINT reservation_transition_ring_%1$s_one_per_version
		UNIQUE (reservation_id, version),
	 CONSTRAINT reservation_transition_ring_%1$s_reservation_fk FOREIGN KEY (reservation_id)
		REFERENCES inventory.reservation_ring_%1$s (id))
	FOR VALUES IN (%1$s);
COMMENT ON TABLE inventory.reservation_ring_%1$s IS 'Ring %1$s of inventory.reservation (0.9): the reservations whose id %% 4 is %1$s; a partition, read and written through inventory.reservation. purge_history truncates it with its lines and transitions when every reservation in it finished before the retention.';
COMMENT ON TABLE inventory.reservation_line_ring_%1$s IS 'Ring %1$s of inventory.reservation_line (0.9): the lines of the reservations of reservation_ring_%1$s; a partition, read and written through inventory.reservation_line.';
COMMENT ON TABLE inventory.reservation_transition_ring_%1$s IS 'Ring %1$s of inventory.reservation_transition (0.9): the transitions of the reservations of reservation_ring_%1$s; a partition, read and written through inventory.reservation_transition.';
COMMENT ON CONSTRAINT reservation_ring_%1$s_request_key_unique ON inventory.reservation_ring_%1$s IS 'A request key once per tenant in the ring (reserve keeps it once across the rings).';
$f$, k);
	END LOOP;
END
$rings$;

/* ---------------------------------------------------------------------
 * Tenant grants: which roles may act for which tenants.  A grant is a row
 * of tenant_grant whose member also holds USAGE on the marker type
 * tenant_grantee: the privilege makes PostgreSQL track the grant as a
 * dependency of the role (pg_shdepend).  DROP ROLE of a granted role fails
 * with PostgreSQL's own error until revoke_tenant or DROP OWNED BY (which
 * revokes the marker) ends its grants; pg_dump writes the rows with role
 * names and the marker as a GRANT, and leaves out rows whose role lost the
 * marker.  The view tenant_member shows the live grants; grant_tenant and
 * revoke_tenant are the only writers.
 * ------------------------------------------------------------------- */
CREATE DOMAIN inventory.tenant_grantee AS boolean;
COMMENT ON DOMAIN inventory.tenant_grantee IS
	'Marker of tenant grants, never used as a type: grant_tenant gives a role USAGE on it with its first grant and revoke_tenant takes it back with the last, so that PostgreSQL keeps the grants as a dependency of the role.';
REVOKE ALL ON TYPE inventory.tenant_grantee FROM PUBLIC;

CREATE TABLE inventory.tenant_grant (
	tenant		text COLLATE "C" NOT NULL,
	member		regrole NOT NULL,
	granted_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	CONSTRAINT tenant_grant_pkey PRIMARY KEY (tenant, member),
	CONSTRAINT tenant_grant_tenant_valid CHECK (tenant = '*' OR (
		char_length(tenant) BETWEEN 1 AND 64 AND tenant !~ '[\x01-\x1f\x7f]'))
);
COMMENT ON TABLE inventory.tenant_grant IS
	'Tenant grants as stored: a row is a live grant while its member holds USAGE on inventory.tenant_grantee (see the view inventory.tenant_member); written only by grant_tenant and revoke_tenant.';
COMMENT ON COLUMN inventory.tenant_grant.tenant IS 'Tenant name, or * for every tenant.';
COMMENT ON COLUMN inventory.tenant_grant.member IS 'Role granted.';
COMMENT ON COLUMN inventory.tenant_grant.granted_at IS 'When the grant was made.';

CREATE TRIGGER tenant_grant_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON inventory.tenant_grant
	FOR EACH STATEMENT EXECUTE FUNCTION inventory._table_changed();
ALTER TABLE inventory.tenant_grant ENABLE ALWAYS TRIGGER tenant_grant_changed;
COMMENT ON TRIGGER tenant_grant_changed ON inventory.tenant_grant IS
	'Makes every backend forget the tenant grants it remembered when a grant row changes (0.6; README "Roles and grants").';

CREATE VIEW inventory.tenant_member AS
SELECT g.tenant, g.member, g.granted_at
FROM inventory.tenant_grant g, pg_catalog.pg_type t
WHERE t.oid = 'inventory.tenant_grantee'::regtype
  AND pg_catalog.aclcontains(t.typacl,
		pg_catalog.makeaclitem(g.member, t.typowner, 'USAGE', false));
COMMENT ON VIEW inventory.tenant_member IS
	'Tenant grants, one row per (tenant, member): the member role (or a role that has its privileges) may act for the tenant; tenant ''*'' means every tenant. Managed with grant_tenant and revoke_tenant.';
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
	claimed_until timestamptz,
	claimed_by	text,
	ring		smallint NOT NULL,
	CONSTRAINT outbox_pkey PRIMARY KEY (id, ring),
	CONSTRAINT outbox_event_id_unique UNIQUE (event_id, ring),
	CONSTRAINT outbox_event_type_valid
		CHECK (inventory.is_event_type(event_type)),
	CONSTRAINT outbox_attempts_nonneg CHECK (attempts >= 0),
	CONSTRAINT outbox_dead_unpublished
		CHECK (dead_at IS NULL OR published_at IS NULL),
	CONSTRAINT outbox_claimed_by_length CHECK (char_length(claimed_by) <= 64)
) PARTITION BY LIST (ring);
-- the relay's work queue: only unpublished, live events
CREATE INDEX outbox_unpublished ON inventory.outbox (id)
	WHERE published_at IS NULL AND dead_at IS NULL;
CREATE INDEX outbox_reservation ON inventory.outbox (reservation_id, id)
	WHERE reservation_id IS NOT NULL;
COMMENT ON TABLE inventory.outbox IS
	'Transactional outbox: one event per change of stock or state, committed with the change and published at least once by a relay. 0.8: partitioned by ring into outbox_ring_0, outbox_ring_1 and outbox_ring_2, so that purge_published removes published events a ring at a time (TRUNCATE), never row by row.';
COMMENT ON COLUMN inventory.outbox.id IS 'Commit-order-compatible sequence within one reservation; drawn by inventory._next_event_id(regclass) (0.7), which holds the writing transaction''s marker for the low-water mark.';
COMMENT ON COLUMN inventory.outbox.event_id IS 'Unique event id; consumers deduplicate on it (AMQP message_id).';
COMMENT ON COLUMN inventory.outbox.event_type IS 'reservation.reserved|confirmed|cancelled|expired|compensated|extended|amended, stock.restocked|adjusted|out_of_stock|back_in_stock|low (AMQP routing key).';
COMMENT ON COLUMN inventory.outbox.tenant IS 'Tenant the event belongs to.';
COMMENT ON COLUMN inventory.outbox.reservation_id IS 'Reservation the event belongs to (NULL for stock events); events of one reservation are published in order.';
COMMENT ON COLUMN inventory.outbox.payload IS 'The event as JSON; can be acted on alone.';
COMMENT ON COLUMN inventory.outbox.created_at IS 'When the change happened (pg_inventory clock).';
COMMENT ON COLUMN inventory.outbox.attempts IS 'Publish attempts that failed so far.';
COMMENT ON COLUMN inventory.outbox.next_attempt_at IS 'Earliest time of the next publish attempt after a failure (NULL: now).';
COMMENT ON COLUMN inventory.outbox.published_at IS 'When the broker confirmed the event; NULL while unpublished.';
COMMENT ON COLUMN inventory.outbox.last_error IS 'Error of the last failed publish attempt.';
COMMENT ON COLUMN inventory.outbox.dead_at IS 'When the event was dead-lettered after too many attempts; NULL while live.';
COMMENT ON COLUMN inventory.outbox.claimed_until IS
	'End of the lease of the relay that claimed the event; NULL or past: free to claim.';
COMMENT ON COLUMN inventory.outbox.claimed_by IS
	'Name of the relay that last claimed the event.';
COMMENT ON INDEX inventory.outbox_unpublished IS 'Unpublished live events in id order, for relays.';
COMMENT ON INDEX inventory.outbox_reservation IS 'Events of one reservation in order, for per-reservation ordering.';

-- dead letters, for operators and the metrics view
CREATE INDEX outbox_dead ON inventory.outbox (id) WHERE dead_at IS NOT NULL;
COMMENT ON INDEX inventory.outbox_dead IS 'Dead-lettered events, for operators.';
-- retention deletes by publication time
CREATE INDEX outbox_published_at ON inventory.outbox (published_at)
	WHERE published_at IS NOT NULL;
COMMENT ON INDEX inventory.outbox_published_at IS 'Published events by time, for purge_published.';

/* ---------------------------------------------------------------------
 * The outbox's low-water mark (0.7; README "Long transactions and the
 * outbox").  Each claim and mark rewrites an event row, so the partial
 * index outbox_unpublished keeps an entry for every event published since
 * the oldest snapshot still open; a claim that scanned from the lowest id
 * stepped over all of them.  Every event below the mark is published or
 * dead-lettered: claims start at the mark.
 * ------------------------------------------------------------------- */
CREATE SEQUENCE inventory.outbox_low_water AS bigint MINVALUE 1 START 1 NO CYCLE;
COMMENT ON SEQUENCE inventory.outbox_low_water IS
	'The outbox''s low-water mark (its last_value): every event with a lower id is published, dead-lettered or waits behind a dead letter of its reservation, so relay_claim and outbox_metrics scan from it. Set by advance_outbox_low_water (the expiry worker, every pass; it may also lower it) and lowered by requeue_dead_letters and discard_dead_letters; never set it by hand (advance_outbox_low_water(true) recomputes it). A sequence, not a row: reading and moving it leaves no dead row behind. Not dumped by pg_dump: a restored database starts it at 1.';

CREATE FUNCTION inventory._next_event_id(sequence regclass)
	RETURNS bigint
	LANGUAGE C VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'inventory_next_event_id';
COMMENT ON FUNCTION inventory._next_event_id(regclass) IS
	'Default of outbox.id (0.7), called with inventory.outbox_id_seq (a constant of the default: no lookup per row, and the sequence cannot be dropped while the default uses it): the next value of sequence. At the first event of a transaction it first reads the last id drawn from that sequence (its marker) and holds a share lock on the marker until the transaction (or the prepared transaction) ends: pg_locks shows it as an advisory lock with objsubid 20553, classid and objid the marker''s high and low 32 bits. advance_outbox_low_water never moves the mark past a held marker, so no event that may still commit falls below it. Internal: runs as the extension''s owner inside the write functions. Errors: those of nextval.';
ALTER TABLE inventory.outbox ALTER COLUMN id
	SET DEFAULT inventory._next_event_id('inventory.outbox_id_seq'::regclass);

CREATE FUNCTION inventory.advance_outbox_low_water(from_start boolean DEFAULT false)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_advance_outbox_low_water';
COMMENT ON FUNCTION inventory.advance_outbox_low_water(boolean) IS
	'Sets the outbox''s low-water mark (sequence inventory.outbox_low_water) to the lowest of: the first live unpublished event at or above the mark that does not wait behind a dead letter of its reservation, the lowest marker a running or prepared transaction holds (_next_event_id), and the last id drawn plus one; this can lower it. from_start: look from id 1 instead of from the mark (after outbox rows were changed by hand; the worker does it every 60th pass). Reads the latest committed data, whatever the isolation level. While another advance, a requeue_dead_letters or a discard_dead_letters holds the low-water lock (advisory, objsubid 20554), does nothing. Returns the mark. The expiry worker calls it every pass; without the worker, schedule it as often as you can. Errors: none of its own.';

/* ---------------------------------------------------------------------
 * The outbox's rings (0.8; README "Outbox retention: rings").  The outbox
 * is partitioned by ring (0, 1, 2): new events go to the current ring
 * (sequence inventory.outbox_ring); purge_published removes the published
 * events of another ring by truncating its partition once all of them are
 * older than the retention, after moving its unpublished events and dead
 * letters into the current ring, and makes the next ring current once it
 * is empty.  Published events thus leave whole, never by DELETE: no dead
 * rows, whatever transaction is held open elsewhere (PgQ's rotating
 * tables).
 * ------------------------------------------------------------------- */
CREATE SEQUENCE inventory.outbox_ring AS smallint MINVALUE 0 MAXVALUE 2 START 0 NO CYCLE;
COMMENT ON SEQUENCE inventory.outbox_ring IS
	'The outbox''s current ring (its last_value, 0 to 2): the partition new events go to (outbox.ring''s default). Moved on by purge_published only; never set it by hand. Not dumped by pg_dump: a restored database starts at ring 0 (any ring is safe to write to).';

CREATE FUNCTION inventory._outbox_ring(sequence regclass)
	RETURNS smallint
	LANGUAGE C VOLATILE STRICT
	AS 'MODULE_PATHNAME', 'inventory_outbox_ring';
COMMENT ON FUNCTION inventory._outbox_ring(regclass) IS
	'Default of outbox.ring (0.8), called with inventory.outbox_ring: the current ring, read once per transaction (every event of a transaction goes to the ring current at its first event). Any ring is safe to write to: purge_published truncates a ring only while it holds it exclusively, so never under a writer that has not committed, and moves its unpublished events first. Internal: runs as the extension''s owner inside the write functions. Errors: 42501 without SELECT or USAGE on the sequence.';
ALTER TABLE inventory.outbox ALTER COLUMN ring
	SET DEFAULT inventory._outbox_ring('inventory.outbox_ring'::regclass);
COMMENT ON COLUMN inventory.outbox.ring IS 'The partition (ring 0, 1 or 2) that holds the event (0.8): the ring current when its transaction wrote its first event, or the current ring of the purge_published that moved it there. Set by its default; part of the primary key (id, ring), since a partitioned table''s keys include the partition key; the id alone is unique as before.';

CREATE TABLE inventory.outbox_ring_0 PARTITION OF inventory.outbox FOR VALUES IN (0);
CREATE TABLE inventory.outbox_ring_1 PARTITION OF inventory.outbox FOR VALUES IN (1);
CREATE TABLE inventory.outbox_ring_2 PARTITION OF inventory.outbox FOR VALUES IN (2);
COMMENT ON TABLE inventory.outbox_ring_0 IS 'Ring 0 of inventory.outbox (0.8): a partition, read and written through the outbox; purge_published truncates it when every event it holds is published more than the retention ago.';
COMMENT ON TABLE inventory.outbox_ring_1 IS 'Ring 1 of inventory.outbox (0.8): a partition, read and written through the outbox; purge_published truncates it when every event it holds is published more than the retention ago.';
COMMENT ON TABLE inventory.outbox_ring_2 IS 'Ring 2 of inventory.outbox (0.8): a partition, read and written through the outbox; purge_published truncates it when every event it holds is published more than the retention ago.';

/* ---------------------------------------------------------------------
 * Metrics an operator (and the relay) reads.  Each figure comes from a
 * partial index, so the view stays cheap on a large outbox.  A view runs
 * with its owner's privileges: granting SELECT on it shows the figures,
 * not the events.
 * ------------------------------------------------------------------- */
CREATE VIEW inventory.outbox_metrics AS
SELECT
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL) AS unpublished,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.attempts > 0) AS retrying,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.dead_at IS NOT NULL) AS dead_lettered,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at >= pg_catalog.now() - interval '1 minute') AS published_last_minute,
	(SELECT o.created_at FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w)
	  ORDER BY o.id LIMIT 1) AS oldest_unpublished_at,
	COALESCE(EXTRACT(epoch FROM pg_catalog.now() - (SELECT o.created_at
	  FROM inventory.outbox o WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id >= (SELECT w.last_value FROM inventory.outbox_low_water w)
	  ORDER BY o.id LIMIT 1)), 0)::double precision AS lag_seconds,
	(SELECT count(*) FROM inventory.outbox o
	  WHERE o.published_at IS NULL AND o.dead_at IS NULL
		AND o.id < (SELECT w.last_value FROM inventory.outbox_low_water w)
		AND (o.reservation_id IS NULL OR NOT EXISTS (SELECT 1 FROM inventory.outbox p
			  WHERE p.reservation_id = o.reservation_id
				AND (p.reservation_id, p.id) < (o.reservation_id, o.id)
				AND p.dead_at IS NOT NULL))) AS below_low_water,
	(SELECT min(o.published_at) FROM inventory.outbox o
	  WHERE o.published_at IS NOT NULL) AS oldest_published_at;
COMMENT ON VIEW inventory.outbox_metrics IS
	'Relay health: live unpublished events, those retrying, dead letters, events published in the last minute, and the age of the oldest unpublished event (lag_seconds), looked for from the low-water mark on (0.7), the live events below the mark a relay could publish but does not see (below_low_water, 0.7), and when the oldest published event still kept was published (oldest_published_at, 0.8).';
COMMENT ON COLUMN inventory.outbox_metrics.unpublished IS 'Live events not yet published.';
COMMENT ON COLUMN inventory.outbox_metrics.retrying IS 'Live unpublished events with at least one failed attempt.';
COMMENT ON COLUMN inventory.outbox_metrics.dead_lettered IS 'Events dead-lettered after too many failed attempts.';
COMMENT ON COLUMN inventory.outbox_metrics.published_last_minute IS 'Events published in the last minute.';
COMMENT ON COLUMN inventory.outbox_metrics.oldest_unpublished_at IS 'created_at of the oldest live unpublished event.';
COMMENT ON COLUMN inventory.outbox_metrics.lag_seconds IS 'Age in seconds of the oldest live unpublished event (0 when none).';
COMMENT ON COLUMN inventory.outbox_metrics.below_low_water IS 'Live unpublished events below the low-water mark that do not wait behind a dead letter: relays do not see them (changed by hand, 0.7); advance_outbox_low_water(true) brings them back. Alert when above 0.';
COMMENT ON COLUMN inventory.outbox_metrics.oldest_published_at IS 'When the oldest published event still in the outbox was published (0.8; NULL when none): purge_published keeps published events between the retention and about twice that, so now() minus it above twice pg_inventory.outbox_retention plus a few worker passes means a ring could not be truncated (a transaction holds it: see pg_locks on inventory.outbox_ring_0..2).';
/* ---------------------------------------------------------------------
 * Retention of history (0.5; README "Retention"): purge_history removes
 * finished reservations with their lines, transitions and published
 * events, oldest first, optionally keeping one document of each in
 * reservation_archive; the units of the confirmed ones it removes stay
 * counted in purged_confirmed, so that consumed still matches confirmed
 * reservations.  archive_ledger moves old ledger records into
 * stock_ledger_archive, where they still count (check_invariants sums
 * ledger and archive) and their keys still replay (restock, adjust).
 * ------------------------------------------------------------------- */
-- purge_history reads finished reservations by their last change: this
-- partial index holds only finished rows
CREATE INDEX reservation_finished ON inventory.reservation (updated_at, id)
	WHERE state <> 'pending';
COMMENT ON INDEX inventory.reservation_finished IS 'Finished reservations by their last change, for purge_history.';

CREATE TABLE inventory.reservation_archive (
	reservation_id bigint NOT NULL,
	tenant		inventory.name_id NOT NULL,
	request_key inventory.request_key NOT NULL,
	state		text NOT NULL,
	finished_at timestamptz NOT NULL,
	document	jsonb NOT NULL,
	archived_at timestamptz NOT NULL,
	CONSTRAINT reservation_archive_pkey PRIMARY KEY (reservation_id),
	CONSTRAINT reservation_archive_state_finished CHECK (state IN ('confirmed',
		'cancelled', 'expired', 'rejected', 'compensated')),
	CONSTRAINT reservation_archive_document_object
		CHECK (pg_catalog.jsonb_typeof(document) = 'object')
);
CREATE INDEX reservation_archive_request_key
	ON inventory.reservation_archive (tenant, request_key);
COMMENT ON TABLE inventory.reservation_archive IS
	'Reservations that purge_history removed with archive => true: one row each, with the reservation, its lines and its transitions as one jsonb document. 0.9: written before their ring goes, at most max_rows a call, so it may also hold documents of reservations whose ring is still there (written again if they change). Nothing reads it but operators; a request key found here no longer replays once its reservation is gone (a reserve with it makes a new reservation).';
COMMENT ON COLUMN inventory.reservation_archive.reservation_id IS 'The id the reservation had.';
COMMENT ON COLUMN inventory.reservation_archive.tenant IS 'Tenant that made the reservation.';
COMMENT ON COLUMN inventory.reservation_archive.request_key IS 'Idempotency key of the reserve call that created it.';
COMMENT ON COLUMN inventory.reservation_archive.state IS 'Its final state: confirmed, cancelled, expired, rejected or compensated.';
COMMENT ON COLUMN inventory.reservation_archive.finished_at IS 'Its last change (reservation.updated_at, pg_inventory clock).';
COMMENT ON COLUMN inventory.reservation_archive.document IS 'The reservation row as a jsonb object (its columns by name) with "lines" (the reservation_line rows by sku, location) and "transitions" (the reservation_transition rows by version).';
COMMENT ON COLUMN inventory.reservation_archive.archived_at IS 'When purge_history archived it (pg_inventory clock).';
COMMENT ON INDEX inventory.reservation_archive_request_key IS 'Archived reservations by request key, for operators.';

CREATE TABLE inventory.purged_confirmed (
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	location	inventory.name_id NOT NULL,
	quantity	bigint NOT NULL,
	updated_at	timestamptz NOT NULL,
	CONSTRAINT purged_confirmed_pkey PRIMARY KEY (tenant, sku, location),
	CONSTRAINT purged_confirmed_stock_location_fk FOREIGN KEY (tenant, sku, location)
		REFERENCES inventory.stock_location (tenant, sku, location),
	CONSTRAINT purged_confirmed_quantity_nonneg CHECK (quantity >= 0)
);
COMMENT ON TABLE inventory.purged_confirmed IS
	'Per (tenant, sku, location): the units of the confirmed reservations that purge_history removed. They stay in consumed; check_invariants counts them with the lines of confirmed reservations.';
COMMENT ON COLUMN inventory.purged_confirmed.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.purged_confirmed.sku IS 'The SKU.';
COMMENT ON COLUMN inventory.purged_confirmed.location IS 'The location the units were consumed at.';
COMMENT ON COLUMN inventory.purged_confirmed.quantity IS 'Units of removed confirmed reservations there, summed.';
COMMENT ON COLUMN inventory.purged_confirmed.updated_at IS 'When purge_history last added to it (pg_inventory clock).';

CREATE TABLE inventory.stock_ledger_archive (
	id			bigint NOT NULL,
	tenant		inventory.name_id NOT NULL,
	sku			inventory.name_id NOT NULL,
	request_key inventory.request_key NOT NULL,
	kind		text NOT NULL,
	delta		bigint NOT NULL,
	reason		text,
	available_after bigint NOT NULL,
	actor		text NOT NULL,
	created_at	timestamptz NOT NULL,
	location	inventory.name_id NOT NULL,
	CONSTRAINT stock_ledger_archive_pkey PRIMARY KEY (id),
	CONSTRAINT stock_ledger_archive_request_key_unique UNIQUE (tenant, request_key),
	CONSTRAINT stock_ledger_archive_stock_location_fk FOREIGN KEY (tenant, sku, location)
		REFERENCES inventory.stock_location (tenant, sku, location)
);
COMMENT ON TABLE inventory.stock_ledger_archive IS
	'Ledger records that archive_ledger moved out of stock_ledger, with the same columns and values. They still count: the sum of delta per (tenant, sku, location) over stock_ledger and this table is the net received stock there (check_invariants); their request keys still replay.';
COMMENT ON COLUMN inventory.stock_ledger_archive.id IS 'The id the record had in stock_ledger.';
COMMENT ON COLUMN inventory.stock_ledger_archive.tenant IS 'Tenant of the stock.';
COMMENT ON COLUMN inventory.stock_ledger_archive.sku IS 'SKU of the stock.';
COMMENT ON COLUMN inventory.stock_ledger_archive.request_key IS 'Idempotency key of the restock or adjust call; a replay still finds it.';
COMMENT ON COLUMN inventory.stock_ledger_archive.kind IS 'receipt (restock), return, loss or correction (adjust).';
COMMENT ON COLUMN inventory.stock_ledger_archive.delta IS 'Units added (positive) or removed (negative).';
COMMENT ON COLUMN inventory.stock_ledger_archive.reason IS 'Free-text reason given by the caller.';
COMMENT ON COLUMN inventory.stock_ledger_archive.available_after IS 'Units available at the location right after the record; what a replay returns.';
COMMENT ON COLUMN inventory.stock_ledger_archive.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.stock_ledger_archive.created_at IS 'When the call ran (pg_inventory clock).';
COMMENT ON COLUMN inventory.stock_ledger_archive.location IS 'Location of the stock.';

SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_archive', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.purged_confirmed', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_ledger_archive', '');
/* ------------------------------ end of retention of history (tables) */

/* ---------------------------------------------------------------------
 * Only the functions write: nobody but the owner has table privileges.
 * pg_dump keeps the user data (and sequence positions) of every table, and
 * the grants' marker privileges (as GRANT statements to role names).
 * ------------------------------------------------------------------- */
REVOKE ALL ON ALL TABLES IN SCHEMA inventory FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA inventory FROM PUBLIC;

SELECT pg_catalog.pg_extension_config_dump('inventory.sku', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_slot', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_ring_3', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_line_ring_3', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_ring_3', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_ledger', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_ledger_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.reservation_transition_id_seq', '');
-- only live grants: a row whose role lost the marker is left out
SELECT pg_catalog.pg_extension_config_dump('inventory.tenant_grant',
	'WHERE (SELECT pg_catalog.aclcontains(t.typacl, '
	'pg_catalog.makeaclitem(member, t.typowner, ''USAGE'', false)) '
	'FROM pg_catalog.pg_type t '
	'WHERE t.oid = ''inventory.tenant_grantee''::pg_catalog.regtype)');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_ring_0', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_ring_1', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_ring_2', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.outbox_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.location', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.allocation_policy', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_location', '');

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
	expires_at	timestamptz,
	lines		jsonb,
	reason		text
);
COMMENT ON TYPE inventory.outcome IS
	'Result of the reservation functions: what the call amounts to (status), the effective state after it, whether it changed data, and the reservation it concerns.';
COMMENT ON COLUMN inventory.outcome.status IS 'What this call amounts to (reserved, insufficient, confirmed, expired, cancelled, compensated, extended, amended, pending, not_found).';
COMMENT ON COLUMN inventory.outcome.state IS 'The reservation''s effective state after the call; NULL if there is none.';
COMMENT ON COLUMN inventory.outcome.applied IS 'True only if this call changed data.';
COMMENT ON COLUMN inventory.outcome.reservation_id IS 'The reservation''s id; NULL if there is none.';
COMMENT ON COLUMN inventory.outcome.sku IS 'The SKU when the reservation has one distinct SKU; NULL for several.';
COMMENT ON COLUMN inventory.outcome.quantity IS 'Units of the reservation, all lines summed.';
COMMENT ON COLUMN inventory.outcome.expires_at IS 'When the reservation expires (NULL for a rejected one).';
COMMENT ON COLUMN inventory.outcome.lines IS 'The reservation''s lines: pending or finished, [{"sku", "location", "quantity"}] by (sku, location); rejected, [{"sku", "location" (pinned or null), "quantity", "available"}]; NULL if there is none.';
COMMENT ON COLUMN inventory.outcome.reason IS 'The reason given to the last cancel or compensate (reservation.reason); NULL if none.';

/* ---------------------------------------------------------------------
 * Functions.  All are SECURITY INVOKER with a pinned search_path: the C
 * code checks the role in effect at the call (GetUserId(), so SET ROLE is
 * honoured) against the tenant grants, then runs its statements as the
 * extension owner (SetUserIdAndSecContext), as pg_cron does.  The comments
 * are the reference of each function (README "SQL API" says the same).
 * ------------------------------------------------------------------- */

CREATE FUNCTION inventory.reserve(tenant text, request_key text, sku text,
		quantity integer, ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_reserve';
COMMENT ON FUNCTION inventory.reserve(text, text, text, integer, interval) IS
	'Holds quantity units (1 to 2147483647) of sku for tenant during ttl (a duration above zero and at most 7 days, without months or years; days of 24 hours), at the active locations the allocation policy chooses, never taking safety stock; idempotent on (tenant, request_key): the same key and payload return the stored outcome with applied = false. Status reserved (state pending) or insufficient (state rejected, stored and frozen). Call it as SELECT * FROM inventory.reserve(...): (inventory.reserve(...)).* runs it once per column. Errors: 22023 bad argument (also a tenant, key or SKU not in Unicode NFC or with white space at either end), 42501 tenant not granted, IN002 SKU never stocked, IN001 key used with another payload.';

CREATE FUNCTION inventory.reserve_lines(tenant text, request_key text,
		lines jsonb, ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_reserve_lines';
COMMENT ON FUNCTION inventory.reserve_lines(text, text, jsonb, interval) IS
	'Holds every line of [{"sku": ..., "quantity": ...[, "location": ...]}, ...] (1 to 100 lines, the same SKU and location summed, at most 2147483647 units in all) or none, during ttl as reserve: a line with "location" is held only at that location, the others where the allocation policy chooses; idempotent on (tenant, request_key) with the set of (sku, location, summed quantity) as payload. Status reserved or insufficient. Call it as SELECT * FROM inventory.reserve_lines(...). Errors: 22023, 42501, IN002, IN004 unknown location, IN001.';

CREATE FUNCTION inventory.confirm(tenant text, request_key text)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_confirm';
COMMENT ON FUNCTION inventory.confirm(text, text) IS
	'Turns an unexpired pending reservation into confirmed (reserved units become consumed); a due one is expired instead (applied); other states are reported unchanged. Status confirmed, expired, cancelled, insufficient, compensated or not_found. Errors: 22023, 42501.';

CREATE FUNCTION inventory.cancel(tenant text, request_key text,
		reason text DEFAULT NULL)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_cancel';
COMMENT ON FUNCTION inventory.cancel(text, text, text) IS
	'Releases a pending reservation''s units (state cancelled, reason at most 1000 characters or NULL); a due one is expired instead; other states are reported unchanged. Status cancelled, expired, confirmed, insufficient, compensated or not_found. Errors: 22023, 42501.';

CREATE FUNCTION inventory.compensate(tenant text, request_key text,
		reason text)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_compensate';
COMMENT ON FUNCTION inventory.compensate(text, text, text) IS
	'After fulfillment failed: a confirmed reservation becomes compensated and its units return from consumed to available, once; reason (1 to 1000 characters) is required. Status compensated, pending, cancelled, expired, insufficient or not_found. Errors: 22023, 42501.';

CREATE FUNCTION inventory.lookup(tenant text, request_key text)
	RETURNS inventory.outcome
	LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_lookup';
COMMENT ON FUNCTION inventory.lookup(text, text) IS
	'Reports the stored outcome of the reserve call with this key (reserved, insufficient or not_found) and the effective state; never changes data. A client whose call timed out looks up, then retries with the same key. Errors: 22023, 42501.';

CREATE FUNCTION inventory.expire_due(max_rows integer DEFAULT 1000)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_expire_due';
COMMENT ON FUNCTION inventory.expire_due(integer) IS
	'Expires at most max_rows (at least 1) due pending reservations (expires_at <= clock), oldest first, skipping rows other transactions hold, and returns their units to available; returns how many it expired. A reservation whose rows are broken is skipped with a WARNING, never stopping the others. Errors: 22023.';

CREATE FUNCTION inventory.restock(tenant text, request_key text, sku text,
		quantity integer, reason text DEFAULT NULL)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_restock';
COMMENT ON FUNCTION inventory.restock(text, text, text, integer, text) IS
	'Records a receipt of quantity units (1 to 2147483647) of sku for tenant at the location default (created, priority 100, active, when first needed), creating the SKU if new, idempotent on (tenant, request_key) among ledger keys; returns available at the location default after it (a replay returns the value stored with the record). Errors: 22023 bad argument, 42501 tenant not granted, IN001 key used with another payload, 22003 the SKU''s stock would pass the bigint range.';

CREATE FUNCTION inventory.adjust(tenant text, request_key text, sku text,
		delta bigint, kind text, reason text)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_adjust';
COMMENT ON FUNCTION inventory.adjust(text, text, text, bigint, text, text) IS
	'Records a return (delta > 0), loss (delta < 0) or correction (either sign) of available units at the location default, with a reason, idempotent on (tenant, request_key) among ledger keys; returns available at the location default after it. Units held by pending reservations are never adjusted away. Errors: 22023 bad argument, 42501 tenant not granted, IN002 SKU never stocked, IN003 available would go negative, IN001 key used with another payload, 22003 the SKU''s stock would pass the bigint range.';

CREATE FUNCTION inventory.check_invariants()
	RETURNS TABLE(tenant text, sku text, check_name text, detail text)
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_check_invariants';
COMMENT ON FUNCTION inventory.check_invariants() IS
	'Returns one row per broken invariant (no rows when healthy), read in one snapshot: counts against the ledger (counts_match_ledger, counts_in_range), counts_nonnegative, reserved against pending lines, consumed against confirmed lines, transition log rows against reservation versions, one reservation per request key (request_key_once, 0.9: the rings keep a key unique per ring, reserve across them), slots against the SKU catalog, and the same per (sku, location); each slot''s guards (keep_units, level_watch) against the policy, level and slot count (slot_guards_match_policy, 0.6). The ledger is stock_ledger with stock_ledger_archive (records moved by archive_ledger); the confirmed lines include those of confirmed reservations purge_history removed (purged_confirmed). Errors: none of its own.';

CREATE FUNCTION inventory.grant_tenant(tenant text, member regrole)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_grant_tenant';
COMMENT ON FUNCTION inventory.grant_tenant(text, regrole) IS
	'Lets member (and roles that have its privileges) act for tenant (* for every tenant); returns whether a grant was added. The caller must itself act for tenant (for *: hold a grant of *) or be a superuser. The grant follows the role: the role gets USAGE on inventory.tenant_grantee, so DROP ROLE fails until its grants are revoked (or DROP OWNED BY ends them). Errors: 22023, 42501.';

CREATE FUNCTION inventory.revoke_tenant(tenant text, member regrole)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_revoke_tenant';
COMMENT ON FUNCTION inventory.revoke_tenant(text, regrole) IS
	'Removes the grant of exactly (tenant, member); revoking * removes the wildcard only; returns whether a grant was removed. The caller must act for tenant as for grant_tenant. Errors: 22023, 42501.';

CREATE FUNCTION inventory.relay_claim(relay text, batch_size integer DEFAULT 100,
		lease interval DEFAULT '30 seconds')
	RETURNS TABLE(id bigint, event_id uuid, event_type text, tenant text,
				  reservation_id bigint, payload jsonb, attempts integer)
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_claim';
COMMENT ON FUNCTION inventory.relay_claim(text, integer, interval) IS
	'Leases up to batch_size (1 to 10000) committed, unpublished, live events that are due, in id order, to relay (a name of 1 to 64 characters) for lease (above 0, at most 1 hour); only the first unpublished event of a reservation is handed out. Relays never wait for each other (SKIP LOCKED). Looks from the outbox''s low-water mark on (0.7, sequence inventory.outbox_low_water). Errors: 22023.';

CREATE FUNCTION inventory.relay_mark_published(relay text, ids bigint[])
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_mark_published';
COMMENT ON FUNCTION inventory.relay_mark_published(text, bigint[]) IS
	'Marks the events published; call only after the broker confirmed them (publisher confirms). Acts only on events whose lease relay still holds; returns how many it marked. Errors: 22023 (also ids or an element of it NULL).';

CREATE FUNCTION inventory.relay_mark_failed(relay text, ids bigint[], error text,
		max_attempts integer DEFAULT 10, backoff interval DEFAULT '1 second',
		max_backoff interval DEFAULT '5 minutes')
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_mark_failed';
COMMENT ON FUNCTION inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval) IS
	'Records a failed publish attempt of the events whose lease relay still holds: next attempt after backoff * 2^attempts (at most max_backoff) with jitter, or dead-letters the event at its max_attempts-th failure. Returns how many events it recorded. Errors: 22023 (also ids or an element of it NULL).';

CREATE FUNCTION inventory.relay_release(relay text, ids bigint[])
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_relay_release';
COMMENT ON FUNCTION inventory.relay_release(text, bigint[]) IS
	'Gives back the relay''s leases on unpublished events without counting an attempt (clean shutdown). Returns how many. Errors: 22023 (also ids or an element of it NULL).';

-- 0.5: the reason goes into inventory.operator_audit with what was changed
CREATE FUNCTION inventory.requeue_dead_letters(ids bigint[] DEFAULT NULL,
		reason text DEFAULT NULL)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_requeue_dead_letters';
COMMENT ON FUNCTION inventory.requeue_dead_letters(bigint[], text) IS
	'Makes dead-lettered events (ids; NULL: all) live again with a fresh attempt count. When it requeues any, it writes a row of inventory.operator_audit with their ids and reason (at most 1000 characters, or NULL). 0.7: it holds the low-water lock (advisory, objsubid 20554) until its transaction ends, and lowers the outbox''s low-water mark to the lowest id requeued. Returns how many. Errors: 22023 (an element of ids NULL, a reason over 1000 characters).';

CREATE FUNCTION inventory.discard_dead_letters(ids bigint[], reason text)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_discard_dead_letters';
COMMENT ON FUNCTION inventory.discard_dead_letters(bigint[], text) IS
	'Deletes dead-lettered events for good; later events of their reservations can then be published. reason (1 to 1000 characters) is required: the events deleted (ids, types, tenants, payloads) and the reason are kept in inventory.operator_audit. 0.7: it holds the low-water lock (advisory, objsubid 20554) until its transaction ends, and lowers the outbox''s low-water mark to the lowest id deleted (the later events of their reservations are above it). Returns how many. Errors: 22023 (ids or an element of it NULL; reason NULL, empty or over 1000 characters).';

CREATE FUNCTION inventory.purge_published(older_than interval DEFAULT '7 days',
		max_rows integer DEFAULT 10000)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_purge_published';
COMMENT ON FUNCTION inventory.purge_published(interval, integer) IS
	'Retention: removes the events published more than older_than ago, never dead letters or unpublished events. 0.8: a ring at a time (partitions outbox_ring_0 to outbox_ring_2): a ring other than the current one none of whose events was published within older_than is truncated, after its unpublished events and dead letters move into the current ring; the next ring becomes current once it is empty and the current ring holds an event published more than older_than / 2 ago. Published events thus stay between older_than and about twice that, and leave without leaving dead rows, whatever transaction is open elsewhere. A ring another transaction holds (a writer that has not committed, a reader of the outbox) is left for the next call: it never waits; while another purge_published holds the ring-purge lock (advisory, objsubid 20555, until its transaction ends) it does nothing. max_rows (1 to 1000000), since 0.8: the most live unpublished events a ring may hold to be emptied (they are moved row by row while the ring is locked; a ring with more, behind a slow relay, waits until they are published; dead letters move whatever their number). The worker runs it with pg_inventory.outbox_retention. Returns how many published events it removed. Errors: 22023; 25001 when called in a REPEATABLE READ or SERIALIZABLE transaction.';

CREATE FUNCTION inventory.set_stock_slots(tenant text, sku text, slots integer)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_set_stock_slots';
COMMENT ON FUNCTION inventory.set_stock_slots(text, text, integer) IS
	'Splits the SKU''s counters over slots (1 to 256) at every location it is stocked at, so that concurrent reservations of a hot SKU take units from different rows; available is spread evenly within each location, totals are unchanged (no ledger record, no event); writes the slots'' guards (0.6) and re-evaluates the levels, which may write a level event. With the current count it rebalances and repairs the guards. Returns the previous slot count. Errors: 22023, 42501 tenant not granted, IN002 SKU never stocked.';

CREATE FUNCTION inventory.transition_rules()
	RETURNS TABLE(call text, from_state text, to_state text,
				  moves_from text, moves_to text)
	LANGUAGE C IMMUTABLE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_transition_rules';
COMMENT ON FUNCTION inventory.transition_rules() IS
	'The state machine of the reservation functions, one row per rule: the call (expire: expire_due, or any call that finds a due pending reservation), the state before (NULL: a new reservation), the state after, and the counters the units leave and enter (NULL: nothing moves).';

CREATE FUNCTION inventory.set_location(tenant text, location text,
		priority integer DEFAULT 100, active boolean DEFAULT true)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_set_location';
COMMENT ON FUNCTION inventory.set_location(text, text, integer, boolean) IS
	'Creates the location of tenant, or sets its priority (-1000000 to 1000000; the smaller serves reservations first, ties by name in byte order) and active flag (an inactive location serves no reservation but keeps its stock, holds and ledger); location is a name of 1 to 64 characters like a SKU. Returns true when something changed, false when the location already was so. Errors: 22023 bad argument (also a name not in Unicode NFC or with white space at either end, a priority out of range), 42501 tenant not granted.';

CREATE FUNCTION inventory.set_allocation_policy(tenant text, allow_split boolean)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_set_allocation_policy';
COMMENT ON FUNCTION inventory.set_allocation_policy(text, boolean) IS
	'Sets whether a reservation line of tenant that no single active location can serve whole may be filled from several active locations in (priority, location) order (allow_split; default false). Returns true when the policy changed. Errors: 22023 bad argument, 42501 tenant not granted.';

CREATE FUNCTION inventory.set_stock_policy(tenant text, sku text, location text,
		safety_stock bigint DEFAULT 0, low_threshold bigint DEFAULT NULL)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_set_stock_policy';
COMMENT ON FUNCTION inventory.set_stock_policy(text, text, text, bigint, bigint) IS
	'Sets the stock policy of sku at location: safety_stock (units, 0 or more) counts as available but is never reserved; low_threshold (units, 0 or more, NULL: never low) makes the level low when sellable is at most it. Creates the SKU''s counters at the location (all 0) if it was never stocked there. Writes the guards of the SKU''s slots (0.6: keep_units, level_watch; also repairs wrong ones). Re-evaluates the level, which may write stock.out_of_stock, stock.back_in_stock or stock.low. Returns true when the policy changed or the counters were created (the guards and the level may be written either way). Errors: 22023 bad argument, 42501 tenant not granted, IN002 SKU never stocked, IN004 unknown location.';

CREATE FUNCTION inventory.restock_at(tenant text, request_key text, sku text,
		location text, quantity integer, reason text DEFAULT NULL)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_restock_at';
COMMENT ON FUNCTION inventory.restock_at(text, text, text, text, integer, text) IS
	'Records a receipt of quantity units (1 to 2147483647) of sku at location for tenant, creating the SKU and its counters at the location if new, idempotent on (tenant, request_key) among ledger keys; returns available at the location after it (a replay returns the value stored with the record). Writes stock.restocked and, when the level changes, a level event. Errors: 22023 bad argument, 42501 tenant not granted, IN004 unknown location, IN001 key used with another payload, 22003 the SKU''s stock would pass the bigint range.';

CREATE FUNCTION inventory.adjust_at(tenant text, request_key text, sku text,
		location text, delta bigint, kind text, reason text)
	RETURNS bigint
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_adjust_at';
COMMENT ON FUNCTION inventory.adjust_at(text, text, text, text, bigint, text, text) IS
	'Records a return (delta > 0), loss (delta < 0) or correction (either sign) of delta available units of sku at location, with a reason, idempotent on (tenant, request_key) among ledger keys; returns available at the location after it. Units held by pending reservations are never adjusted away. Writes stock.adjusted and, when the level changes, a level event. Errors: 22023 bad argument, 42501 tenant not granted, IN002 SKU never stocked, IN004 unknown location, IN003 available at the location would go negative, IN001 key used with another payload, 22003 the SKU''s stock would pass the bigint range.';

CREATE FUNCTION inventory.availability(tenant text, skus text[])
	RETURNS TABLE(sku text, location text, sellable bigint, available bigint,
				  reserved bigint, consumed bigint)
	LANGUAGE C STABLE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_availability';
COMMENT ON FUNCTION inventory.availability(text, text[]) IS
	'For 1 to 1000 SKUs of tenant: one row per (sku, active location) the SKU is stocked at, in (sku, priority, location) order, then one total row of the SKU over those locations (location NULL); SKUs never stocked are absent. sellable: units reservations can take (greatest(available - safety_stock, 0)); available, reserved and consumed (units) are NULL unless the caller acts for every tenant (grant of *) or is a superuser. A plain snapshot read, no row locks. Errors: 22023 bad argument, 42501 tenant not granted.';

CREATE FUNCTION inventory.extend(tenant text, request_key text,
		expires_at timestamptz)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_extend';
COMMENT ON FUNCTION inventory.extend(text, text, timestamptz) IS
	'Moves the expiry of an unexpired pending reservation later, to expires_at (at most 7 days after the reservation was created): status extended, applied, event reservation.extended; a target not after the current expiry changes nothing (extended, not applied). A due one is expired instead (applied); other states are reported unchanged. Status extended, expired, confirmed, cancelled, insufficient, compensated or not_found. Errors: 22023 bad argument (also expires_at not after the clock or past created_at + 7 days), 42501 tenant not granted.';

CREATE FUNCTION inventory.amend(tenant text, request_key text, lines jsonb)
	RETURNS inventory.outcome
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_amend';
COMMENT ON FUNCTION inventory.amend(text, text, jsonb) IS
	'Sets the units a pending reservation holds to lines, [{"sku": ..., "quantity": ...}, ...] as for reserve_lines without "location" (SKUs not named are released): fewer units are released from the lowest-priority locations first, more are taken with the allocation policy; all or nothing. Status amended (applied, event reservation.amended), amended not applied (same target), insufficient (state pending, nothing changed); other states are reported unchanged. Errors: 22023 bad argument (also a "location" key), 42501 tenant not granted, IN002 SKU never stocked.';

/* ---------------------------------------------------------------------
 * Retention of history (0.5): the functions.
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.purge_history(older_than interval DEFAULT '90 days',
		max_rows integer DEFAULT 10000, archive boolean DEFAULT false)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_purge_history';
COMMENT ON FUNCTION inventory.purge_history(interval, integer, boolean) IS
	'Retention: removes finished reservations (confirmed, cancelled, expired, rejected, compensated) with their lines and transitions, a ring at a time (0.9): every ring but the current one all of whose reservations finished (last change) more than older_than (0 to 10 years) ago by the pg_inventory clock is truncated, its three partitions together, never row by row; then the next ring becomes current once it is empty and the current ring''s oldest reservation was made more than older_than/2 ago. Finished reservations thus stay between older_than and about twice that, longer while a pending or recently changed reservation keeps its ring. With archive, first keeps each as one document in reservation_archive, at most max_rows (1 to 1000000) new documents per call: a ring goes once all its reservations are archived (without archive max_rows is not used: a ring goes whole). The units of removed confirmed reservations stay counted in purged_confirmed. Events stay: they leave by purge_published. A ring another transaction holds is left for a later call: every open transaction that touched the reservations holds every ring; the purge waits for such a holder at most 200 ms in the lock queue (calls wait behind it meanwhile), not at all for one older than 200 ms or prepared; one purge at a time (advisory lock, objsubid 20557). Run it in a transaction of its own: the rings it truncates stay locked until its transaction ends. A request key it removed no longer replays. Must run at READ COMMITTED. The worker runs it with pg_inventory.history_retention. Returns how many reservations it removed. Errors: 22023 bad argument, 25001 in a REPEATABLE READ or SERIALIZABLE transaction, 0A000 schema before 0.5.';

CREATE FUNCTION inventory.archive_ledger(older_than interval DEFAULT '365 days',
		max_rows integer DEFAULT 10000)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_archive_ledger';
COMMENT ON FUNCTION inventory.archive_ledger(interval, integer) IS
	'Retention of the ledger: moves at most max_rows (1 to 1000000) records made more than older_than (1 day to 10 years) ago by the pg_inventory clock, oldest (lowest id) first, from stock_ledger into stock_ledger_archive, unchanged and in one transaction; check_invariants sums both, and restock and adjust still replay their keys. Skips records another transaction holds (SKIP LOCKED). Returns how many it moved. Errors: 22023 bad argument, 0A000 schema before 0.5.';
/* --------------------------- end of retention of history (functions) */

/* ---------------------------------------------------------------------
 * Issue #14, part B (messages and settings): register_sku, a SKU with no
 * stock (the same block ends the step from 0.4).
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.register_sku(tenant text, sku text,
		location text DEFAULT NULL)
	RETURNS boolean
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_register_sku';
COMMENT ON FUNCTION inventory.register_sku(text, text, text) IS
	'Creates the SKU of tenant with no stock, with its counters (all 0) at location (NULL: the location default, created when missing as restock creates it), so that a reservation of it is insufficient rather than IN002. Nothing was received: no ledger record, no event; the level is first computed at the first change of available. Returns whether it created the counters (false: the SKU was already stocked there). Errors: 22023 bad argument, 42501 tenant not granted, IN004 unknown location.';

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA inventory FROM PUBLIC;

/* ---------------------------------------------------------------------
 * The DBA's console (0.5, issue #14 part A): the clock, the pending
 * holds, the reservation metrics, the worker's status and the operator
 * audit.  A view runs with its owner's table privileges but calls its
 * functions with the reader's: who reads pending_hold,
 * pending_hold_summary or reservation_metrics needs EXECUTE on
 * inventory.clock(), who reads worker_status EXECUTE on
 * inventory.worker_status() as well.
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.clock()
	RETURNS timestamptz
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_clock';
COMMENT ON FUNCTION inventory.clock() IS
	'The instant pg_inventory uses for expiry and for every time it writes: pg_inventory.frozen_now when set, else the server''s clock at the call (like clock_timestamp(), not the transaction start). A reservation is due when expires_at <= inventory.clock(). Errors: none.';

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
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_worker_status';
COMMENT ON FUNCTION inventory.worker_status() IS
	'One row: the status of the expiry worker''s launcher and of the expiry worker, kept in shared memory (view inventory.worker_status). enabled is false when the server does not preload pg_inventory with a pg_inventory.worker_database (then the states are stopped, the counts 0, the rest NULL). launcher_state: stopped, checking, no_database, worker_running, no_extension or retry; worker_state: stopped, starting, idle, expiring, purging (purge_published), purging_history (purge_history), advancing (advance_outbox_low_water, 0.7) or slotting (splitting or merging a SKU''s slots, 0.7); worker_exit (why the last worker stopped): NULL, no_extension, extension_dropped or terminated. Counts run from the server''s start; pids and times are NULL when there is none. Errors: none.';

CREATE VIEW inventory.worker_status AS
SELECT s.enabled, s.database, s.launcher_state, s.launcher_pid,
	   s.launcher_checks, s.launcher_next_check, s.worker_state, s.worker_pid,
	   s.worker_started_at, s.worker_exit, s.last_pass_at, s.last_pass_expired,
	   s.last_pass_purged, s.last_pass_history_purged, s.total_passes,
	   s.total_expired, s.total_purged, s.total_history_purged,
	   s.total_errors, s.last_error_at, s.last_error_sqlstate,
	   s.last_error_message
  FROM inventory.worker_status() s;
COMMENT ON VIEW inventory.worker_status IS
	'The expiry worker and its launcher, one row (inventory.worker_status()): states, pids, the last pass and the totals since the server started, the last error caught in a pass. Readers need EXECUTE on inventory.worker_status() too.';
COMMENT ON COLUMN inventory.worker_status.enabled IS 'Whether the server preloads pg_inventory with a pg_inventory.worker_database (else nothing runs and the rest is empty).';
COMMENT ON COLUMN inventory.worker_status.database IS 'pg_inventory.worker_database: the database the worker expires in (NULL when not enabled).';
COMMENT ON COLUMN inventory.worker_status.launcher_state IS 'stopped, checking, no_database (waits for the database), worker_running, no_extension (waits for CREATE EXTENSION there) or retry.';
COMMENT ON COLUMN inventory.worker_status.launcher_pid IS 'Process id of the launcher; NULL when it is not running.';
COMMENT ON COLUMN inventory.worker_status.launcher_checks IS 'Checks in a row with the launcher''s current outcome (no_database, no_extension, retry); 0 while a worker runs.';
COMMENT ON COLUMN inventory.worker_status.launcher_next_check IS 'When the launcher looks again; NULL when it waits to be woken.';
COMMENT ON COLUMN inventory.worker_status.worker_state IS 'stopped, starting, idle (between passes), expiring (in expire_due), purging (in purge_published), purging_history (in purge_history), advancing (in advance_outbox_low_water, 0.7) or slotting (splitting or merging a SKU''s slots, 0.7).';
COMMENT ON COLUMN inventory.worker_status.worker_pid IS 'Process id of the expiry worker; NULL when it is not running.';
COMMENT ON COLUMN inventory.worker_status.worker_started_at IS 'When the current (or last) expiry worker started.';
COMMENT ON COLUMN inventory.worker_status.worker_exit IS 'Why the last expiry worker stopped: no_extension, extension_dropped or terminated; NULL while it runs.';
COMMENT ON COLUMN inventory.worker_status.last_pass_at IS 'When the last pass (expire_due in batches, purge_published, then purge_history when pg_inventory.history_retention is set) ended; NULL before the first.';
COMMENT ON COLUMN inventory.worker_status.last_pass_expired IS 'Reservations expired by the last pass.';
COMMENT ON COLUMN inventory.worker_status.last_pass_purged IS 'Published outbox events deleted by the last pass.';
COMMENT ON COLUMN inventory.worker_status.last_pass_history_purged IS 'Finished reservations removed by purge_history in the last pass (0 while pg_inventory.history_retention is 0).';
COMMENT ON COLUMN inventory.worker_status.total_passes IS 'Passes since the server started.';
COMMENT ON COLUMN inventory.worker_status.total_expired IS 'Reservations the worker expired since the server started.';
COMMENT ON COLUMN inventory.worker_status.total_purged IS 'Outbox events the worker deleted since the server started.';
COMMENT ON COLUMN inventory.worker_status.total_history_purged IS 'Finished reservations the worker removed (purge_history) since the server started.';
COMMENT ON COLUMN inventory.worker_status.total_errors IS 'Errors caught in passes since the server started (each rolled back its step; the worker carried on).';
COMMENT ON COLUMN inventory.worker_status.last_error_at IS 'When the last caught error happened; NULL if none.';
COMMENT ON COLUMN inventory.worker_status.last_error_sqlstate IS 'SQLSTATE of the last caught error.';
COMMENT ON COLUMN inventory.worker_status.last_error_message IS 'Message of the last caught error (its first 255 bytes).';

CREATE VIEW inventory.pending_hold WITH (security_barrier) AS
SELECT r.tenant, r.request_key, r.id AS reservation_id, l.sku, l.location,
	   l.quantity, r.expires_at,
	   r.expires_at <= (SELECT inventory.clock()) AS due, r.created_at
  FROM inventory.reservation r
  JOIN inventory.reservation_line l ON l.reservation_id = r.id
 WHERE r.state = 'pending';
COMMENT ON VIEW inventory.pending_hold IS
	'One row per line of a pending reservation: the units it holds at a location until it expires. due: expired by the clock (inventory.clock()) but not yet swept by expire_due (or a call that finds it). Readers need EXECUTE on inventory.clock().';
COMMENT ON COLUMN inventory.pending_hold.tenant IS 'Tenant of the reservation.';
COMMENT ON COLUMN inventory.pending_hold.request_key IS 'Idempotency key of the reserve call.';
COMMENT ON COLUMN inventory.pending_hold.reservation_id IS 'The reservation.';
COMMENT ON COLUMN inventory.pending_hold.sku IS 'The SKU held.';
COMMENT ON COLUMN inventory.pending_hold.location IS 'Where the units are held.';
COMMENT ON COLUMN inventory.pending_hold.quantity IS 'Units held.';
COMMENT ON COLUMN inventory.pending_hold.expires_at IS 'When the reservation expires (inclusive).';
COMMENT ON COLUMN inventory.pending_hold.due IS 'expires_at <= inventory.clock(): expired, its units not yet back in available.';
COMMENT ON COLUMN inventory.pending_hold.created_at IS 'When the reservation was made (pg_inventory clock).';

CREATE VIEW inventory.pending_hold_summary WITH (security_barrier) AS
SELECT h.tenant, h.sku, h.location, count(*) AS holds,
	   sum(h.quantity)::bigint AS units, min(h.expires_at) AS earliest_expiry,
	   count(*) FILTER (WHERE h.due) AS due_holds,
	   COALESCE(sum(h.quantity) FILTER (WHERE h.due), 0)::bigint AS due_units
  FROM inventory.pending_hold h
 GROUP BY h.tenant, h.sku, h.location;
COMMENT ON VIEW inventory.pending_hold_summary IS
	'The pending holds per (tenant, sku, location): how many reservations hold units there, how many units, the earliest expiry, and how many of them are due (expired by inventory.clock(), not yet swept). Readers need EXECUTE on inventory.clock().';
COMMENT ON COLUMN inventory.pending_hold_summary.tenant IS 'Tenant of the holds.';
COMMENT ON COLUMN inventory.pending_hold_summary.sku IS 'The SKU held.';
COMMENT ON COLUMN inventory.pending_hold_summary.location IS 'Where the units are held.';
COMMENT ON COLUMN inventory.pending_hold_summary.holds IS 'Pending reservations holding the SKU there.';
COMMENT ON COLUMN inventory.pending_hold_summary.units IS 'Units they hold (the reserved units of the SKU at the location).';
COMMENT ON COLUMN inventory.pending_hold_summary.earliest_expiry IS 'The earliest expires_at of those reservations.';
COMMENT ON COLUMN inventory.pending_hold_summary.due_holds IS 'Of those reservations, the ones due (expired by inventory.clock(), not yet swept).';
COMMENT ON COLUMN inventory.pending_hold_summary.due_units IS 'Units held by the due ones.';

-- the transitions of the last hour, for reservation_metrics: rows come in
-- time order, so a block range index stays small and exact enough
CREATE INDEX reservation_transition_created_at
	ON inventory.reservation_transition USING brin (created_at);
COMMENT ON INDEX inventory.reservation_transition_created_at IS
	'Transitions by time (block ranges), for reservation_metrics.';

CREATE VIEW inventory.reservation_metrics AS
WITH c AS MATERIALIZED (SELECT inventory.clock() AS now)
SELECT p.pending, p.due_unswept,
	   t.confirmed_last_minute, t.cancelled_last_minute,
	   t.expired_last_minute, t.rejected_last_minute,
	   t.compensated_last_minute,
	   t.confirmed_last_hour, t.cancelled_last_hour, t.expired_last_hour,
	   t.rejected_last_hour, t.compensated_last_hour,
	   p.oldest_pending_at
  FROM c
 CROSS JOIN LATERAL (
	SELECT count(*) AS pending,
		   count(*) FILTER (WHERE r.expires_at <= c.now) AS due_unswept,
		   min(r.created_at) AS oldest_pending_at
	  FROM inventory.reservation r
	 WHERE r.state = 'pending') p
 CROSS JOIN LATERAL (
	SELECT count(*) FILTER (WHERE x.to_state = 'confirmed' AND x.last_minute) AS confirmed_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'cancelled' AND x.last_minute) AS cancelled_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'expired' AND x.last_minute) AS expired_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'rejected' AND x.last_minute) AS rejected_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'compensated' AND x.last_minute) AS compensated_last_minute,
		   count(*) FILTER (WHERE x.to_state = 'confirmed') AS confirmed_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'cancelled') AS cancelled_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'expired') AS expired_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'rejected') AS rejected_last_hour,
		   count(*) FILTER (WHERE x.to_state = 'compensated') AS compensated_last_hour
	  FROM (SELECT y.to_state, y.created_at > c.now - interval '1 minute' AS last_minute
			  FROM inventory.reservation_transition y
			 WHERE y.created_at > c.now - interval '1 hour'
			   AND y.created_at <= c.now) x) t;
COMMENT ON VIEW inventory.reservation_metrics IS
	'Reservation health, one row, by inventory.clock(): pending reservations, those due but not yet swept (due_unswept: growing means nothing runs expire_due), the reservations confirmed, cancelled, expired, rejected (insufficient) and compensated in the last minute and the last hour (from the transition log), and the oldest pending one. The counterpart of outbox_metrics. Readers need EXECUTE on inventory.clock().';
COMMENT ON COLUMN inventory.reservation_metrics.pending IS 'Pending reservations (units held).';
COMMENT ON COLUMN inventory.reservation_metrics.due_unswept IS 'Pending reservations past their expiry (expires_at <= inventory.clock()) that nothing has expired yet.';
COMMENT ON COLUMN inventory.reservation_metrics.confirmed_last_minute IS 'Reservations confirmed in the last minute.';
COMMENT ON COLUMN inventory.reservation_metrics.cancelled_last_minute IS 'Reservations cancelled in the last minute.';
COMMENT ON COLUMN inventory.reservation_metrics.expired_last_minute IS 'Reservations expired in the last minute.';
COMMENT ON COLUMN inventory.reservation_metrics.rejected_last_minute IS 'Reserve calls refused as insufficient (stored rejected) in the last minute.';
COMMENT ON COLUMN inventory.reservation_metrics.compensated_last_minute IS 'Reservations compensated in the last minute.';
COMMENT ON COLUMN inventory.reservation_metrics.confirmed_last_hour IS 'Reservations confirmed in the last hour.';
COMMENT ON COLUMN inventory.reservation_metrics.cancelled_last_hour IS 'Reservations cancelled in the last hour.';
COMMENT ON COLUMN inventory.reservation_metrics.expired_last_hour IS 'Reservations expired in the last hour.';
COMMENT ON COLUMN inventory.reservation_metrics.rejected_last_hour IS 'Reserve calls refused as insufficient in the last hour.';
COMMENT ON COLUMN inventory.reservation_metrics.compensated_last_hour IS 'Reservations compensated in the last hour.';
COMMENT ON COLUMN inventory.reservation_metrics.oldest_pending_at IS 'created_at of the oldest pending reservation; NULL when none.';

CREATE TABLE inventory.operator_audit (
	id			bigserial NOT NULL,
	at			timestamptz NOT NULL,
	actor		text NOT NULL,
	action		text NOT NULL,
	tenant		text,
	detail		jsonb NOT NULL,
	reason		text,
	CONSTRAINT operator_audit_pkey PRIMARY KEY (id),
	CONSTRAINT operator_audit_action_valid CHECK (action IN (
		'grant_tenant', 'revoke_tenant', 'set_location',
		'set_allocation_policy', 'set_stock_policy', 'set_stock_slots',
		'requeue_dead_letters', 'discard_dead_letters')),
	CONSTRAINT operator_audit_detail_object
		CHECK (pg_catalog.jsonb_typeof(detail) = 'object'),
	CONSTRAINT operator_audit_reason_length CHECK (char_length(reason) <= 1000)
);
COMMENT ON TABLE inventory.operator_audit IS
	'What operators changed by hand, one row per call that changed something, written in the same transaction by grant_tenant, revoke_tenant, set_location, set_allocation_policy, set_stock_policy, set_stock_slots, requeue_dead_letters and discard_dead_letters. Never written by business calls (their records are the ledger, the transition log and the outbox).';
COMMENT ON COLUMN inventory.operator_audit.id IS 'Surrogate key in insertion order.';
COMMENT ON COLUMN inventory.operator_audit.at IS 'When the call ran (pg_inventory clock).';
COMMENT ON COLUMN inventory.operator_audit.actor IS 'Role in effect when the call ran.';
COMMENT ON COLUMN inventory.operator_audit.action IS 'The function called: grant_tenant, revoke_tenant, set_location, set_allocation_policy, set_stock_policy, set_stock_slots, requeue_dead_letters or discard_dead_letters.';
COMMENT ON COLUMN inventory.operator_audit.tenant IS 'The tenant the change concerns (* for a wildcard grant); NULL for outbox events, which may be of several.';
COMMENT ON COLUMN inventory.operator_audit.detail IS 'What changed, as a JSON object: the names, ids and counts, and the old and new values.';
COMMENT ON COLUMN inventory.operator_audit.reason IS 'The reason the operator gave (required to discard dead letters); NULL if none.';

REVOKE ALL ON FUNCTION inventory.clock(), inventory.worker_status() FROM PUBLIC;
REVOKE ALL ON inventory.worker_status, inventory.pending_hold,
	inventory.pending_hold_summary, inventory.reservation_metrics,
	inventory.operator_audit FROM PUBLIC;
REVOKE ALL ON SEQUENCE inventory.operator_audit_id_seq FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('inventory.operator_audit', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.operator_audit_id_seq', '');

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
