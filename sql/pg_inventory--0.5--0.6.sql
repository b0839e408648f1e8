/*
 * sql/pg_inventory--0.5--0.6.sql
 *
 * Upgrade step 0.5 -> 0.6: a cheaper reservation (issues #11 and #12).
 *	- the CHECK constraints on states and event types call the immutable C
 *	  functions inventory.is_reservation_state and inventory.is_event_type
 *	  instead of listing the values (PostgreSQL reads a CHECK's stored tree
 *	  back from text for every statement that writes the table);
 *	- inventory.stock_slot gains keep_units and level_watch, the guards of
 *	  a slot derived from its (sku, location)'s policy and level and the
 *	  SKU's slot count (inventory.slot_keep_units, inventory.slot_level_watch),
 *	  so that a reservation's fast path reads the slot row alone;
 *	- the index location_allocation_order (a tenant's active locations in
 *	  allocation order, read by every reservation);
 *	- the statement triggers tenant_grant_changed on inventory.tenant_grant
 *	  and location_changed on inventory.location (trigger function
 *	  inventory._table_changed), which let a backend remember the tenant
 *	  grants its checks let through (src/auth.c) and each tenant's first
 *	  locations (src/allocate.c), and forget them when those change.
 * Every row is kept; the guards are computed for every slot.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.6'" to load this file. \quit

-- At READ COMMITTED every statement below reads a snapshot taken after the
-- locks: a call that commits while this step waits is seen, never lost.
DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.6'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- every lock first, then every read: inventory.reservation first, which
-- every call locks (ACCESS SHARE) before anything else, so that the calls
-- in flight end and the calls that start meanwhile wait; then the others
LOCK TABLE inventory.reservation, inventory.reservation_transition,
	inventory.outbox, inventory.sku, inventory.stock_location,
	inventory.stock_slot, inventory.tenant_grant, inventory.location
	IN ACCESS EXCLUSIVE MODE;

/* ---------------------------------------------------------------------
 * The closed lists of states and event types as C functions.
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

ALTER TABLE inventory.reservation
	DROP CONSTRAINT reservation_state_valid,
	ADD CONSTRAINT reservation_state_valid
		CHECK (inventory.is_reservation_state(state));
ALTER TABLE inventory.reservation_transition
	DROP CONSTRAINT reservation_transition_state_valid,
	ADD CONSTRAINT reservation_transition_state_valid
		CHECK (inventory.is_reservation_state(to_state));
ALTER TABLE inventory.outbox
	DROP CONSTRAINT outbox_event_type_valid,
	ADD CONSTRAINT outbox_event_type_valid
		CHECK (inventory.is_event_type(event_type));

/* ---------------------------------------------------------------------
 * The guards of a slot.
 * ------------------------------------------------------------------- */
ALTER TABLE inventory.stock_slot
	ADD COLUMN keep_units bigint,
	ADD COLUMN level_watch bigint;
COMMENT ON COLUMN inventory.stock_slot.keep_units IS 'Units of available that a reservation taking from this slot alone must leave (0.6): inventory.slot_keep_units(sku.slots, safety_stock) of its (sku, location). NULL: none may take from available in this slot alone (several slots and a safety stock; only a call that locks every slot and checks the total may). Kept by the pg_inventory functions; check_invariants compares.';
COMMENT ON COLUMN inventory.stock_slot.level_watch IS 'Units (0.6): a take from available that leaves more than this in the slot cannot change the stock level, so the call does not look at it: inventory.slot_level_watch(sku.slots, safety_stock, low_threshold, level) of its (sku, location). NULL: the level is looked at after every change of available. Kept by the pg_inventory functions; check_invariants compares.';

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

COMMENT ON FUNCTION inventory.check_invariants() IS
	'Returns one row per broken invariant (no rows when healthy), read in one snapshot: counts against the ledger (counts_match_ledger, counts_in_range), counts_nonnegative, reserved against pending lines, consumed against confirmed lines, transition log rows against reservation versions, slots against the SKU catalog, and the same per (sku, location); each slot''s guards (keep_units, level_watch) against the policy, level and slot count (slot_guards_match_policy, 0.6). The ledger is stock_ledger with stock_ledger_archive (records moved by archive_ledger); the confirmed lines include those of confirmed reservations purge_history removed (purged_confirmed). Errors: none of its own.';

COMMENT ON TABLE inventory.stock_slot IS
	'Stock counters of one slot of a SKU at a location (each location of a SKU has sku.slots slots); a SKU''s counters at a location are the sums over its slots there (view inventory.location_stock), its counters the sums over all its slots (view inventory.stock). Each slot also carries its guards (keep_units, level_watch, 0.6). Written only by the pg_inventory functions.';
COMMENT ON FUNCTION inventory.set_stock_slots(text, text, integer) IS
	'Splits the SKU''s counters over slots (1 to 256) at every location it is stocked at, so that concurrent reservations of a hot SKU take units from different rows; available is spread evenly within each location, totals are unchanged (no ledger record, no event); writes the slots'' guards (0.6) and re-evaluates the levels, which may write a level event. With the current count it rebalances and repairs the guards. Returns the previous slot count. Errors: 22023, 42501 tenant not granted, IN002 SKU never stocked.';
COMMENT ON FUNCTION inventory.set_stock_policy(text, text, text, bigint, bigint) IS
	'Sets the stock policy of sku at location: safety_stock (units, 0 or more) counts as available but is never reserved; low_threshold (units, 0 or more, NULL: never low) makes the level low when sellable is at most it. Creates the SKU''s counters at the location (all 0) if it was never stocked there. Writes the guards of the SKU''s slots (0.6: keep_units, level_watch; also repairs wrong ones). Re-evaluates the level, which may write stock.out_of_stock, stock.back_in_stock or stock.low. Returns true when the policy changed or the counters were created (the guards and the level may be written either way). Errors: 22023 bad argument, 42501 tenant not granted, IN002 SKU never stocked, IN004 unknown location.';

UPDATE inventory.stock_slot s
   SET keep_units = inventory.slot_keep_units(k.slots, l.safety_stock),
	   level_watch = inventory.slot_level_watch(k.slots, l.safety_stock,
												l.low_threshold, l.level)
  FROM inventory.stock_location l
  JOIN inventory.sku k ON k.tenant = l.tenant AND k.sku = l.sku
 WHERE s.tenant = l.tenant AND s.sku = l.sku AND s.location = l.location;

/* ---------------------------------------------------------------------
 * The tenant's locations in allocation order.
 * ------------------------------------------------------------------- */
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

/* ---------------------------------------------------------------------
 * The grant cache's trigger.
 * ------------------------------------------------------------------- */
CREATE TRIGGER tenant_grant_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON inventory.tenant_grant
	FOR EACH STATEMENT EXECUTE FUNCTION inventory._table_changed();
ALTER TABLE inventory.tenant_grant ENABLE ALWAYS TRIGGER tenant_grant_changed;
COMMENT ON TRIGGER tenant_grant_changed ON inventory.tenant_grant IS
	'Makes every backend forget the tenant grants it remembered when a grant row changes (0.6; README "Roles and grants").';

-- like every function of the schema: no EXECUTE for PUBLIC (the CHECKs and
-- the calls run them as the extension's owner)
REVOKE ALL ON FUNCTION inventory.is_reservation_state(text),
	inventory.is_event_type(text), inventory.slot_keep_units(integer, bigint),
	inventory.slot_level_watch(integer, bigint, bigint, text),
	inventory._table_changed() FROM PUBLIC;
