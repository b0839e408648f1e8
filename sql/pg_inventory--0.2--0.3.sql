/*
 * sql/pg_inventory--0.2--0.3.sql
 *
 * Upgrade step 0.2 -> 0.3: slotted stock, so that a hot SKU is no longer one
 * row that every reservation of it waits for.
 *
 * A SKU's counters are split over slots (escrow buckets), rows of
 * inventory.stock_slot; concurrent calls take units from different slots
 * with SKIP LOCKED and fall back to locking all slots of the SKU in slot
 * order when no single slot holds enough.  inventory.sku is the catalog of
 * SKUs (the foreign-key target and the slot count an operator chooses), and
 * inventory.stock becomes a view that shows each SKU's totals, so readers
 * see what they saw before.  Every existing SKU keeps one slot (slot 0) with
 * its counters, so behaviour and rows are unchanged by the upgrade.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.3'" to load this file. \quit

/*
 * Amended in 0.4 (the objects this step makes are unchanged): the step
 * refuses to run above READ COMMITTED and takes its table locks before it
 * reads, inventory.reservation first (every call locks it first),
 * so a reservation committed while it waits is copied, not lost; and the
 * view that replaces the table inventory.stock, and the tables sku and
 * stock_slot that now hold its rows, get the privileges the table had
 * (on the table and on its columns).
 */
-- At READ COMMITTED every statement below reads a snapshot taken after the
-- locks: a call that commits while this step waits is seen, never lost.
-- At REPEATABLE READ the snapshot would be older than the locks.
DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.3'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- every lock first, then every read: inventory.reservation first, which
-- every call locks (ACCESS SHARE) before anything else, so that the calls
-- in flight end and the calls that start meanwhile wait; then the others
LOCK TABLE inventory.reservation, inventory.stock, inventory.reservation_line,
	inventory.stock_ledger, inventory.reservation_transition, inventory.outbox
	IN ACCESS EXCLUSIVE MODE;

/* ---------------------------------------------------------------------
 * The catalog of SKUs: one row per (tenant, sku), created by restock.
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
	CONSTRAINT stock_slot_pkey PRIMARY KEY (tenant, sku, slot),
	CONSTRAINT stock_slot_sku_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.sku (tenant, sku),
	CONSTRAINT stock_slot_slot_range CHECK (slot BETWEEN 0 AND 255),
	CONSTRAINT stock_available_nonneg CHECK (available >= 0),
	CONSTRAINT stock_reserved_nonneg CHECK (reserved >= 0),
	CONSTRAINT stock_consumed_nonneg CHECK (consumed >= 0)
);
COMMENT ON TABLE inventory.stock_slot IS
	'Stock counters of one slot of a SKU; a SKU''s counters are the sums over its slots (view inventory.stock). Written only by the pg_inventory functions.';
COMMENT ON COLUMN inventory.stock_slot.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.stock_slot.sku IS 'The SKU.';
COMMENT ON COLUMN inventory.stock_slot.slot IS 'Slot number, 0 to slots - 1.';
COMMENT ON COLUMN inventory.stock_slot.available IS 'Units of this slot that can still be reserved.';
COMMENT ON COLUMN inventory.stock_slot.reserved IS 'Units of this slot held by pending reservations.';
COMMENT ON COLUMN inventory.stock_slot.consumed IS 'Units of this slot taken by confirmed reservations.';
COMMENT ON COLUMN inventory.stock_slot.updated_at IS 'When a counter of this slot last changed (pg_inventory clock).';

-- every SKU keeps its counters, in slot 0
INSERT INTO inventory.sku (tenant, sku, slots, created_at)
	SELECT tenant, sku, 1, created_at FROM inventory.stock;
INSERT INTO inventory.stock_slot (tenant, sku, slot, available, reserved, consumed, updated_at)
	SELECT tenant, sku, 0, available, reserved, consumed, updated_at FROM inventory.stock;

-- lines and ledger records refer to the SKU catalog now
ALTER TABLE inventory.reservation_line
	DROP CONSTRAINT reservation_line_stock_fk,
	ADD CONSTRAINT reservation_line_sku_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.sku (tenant, sku);
ALTER TABLE inventory.stock_ledger
	DROP CONSTRAINT stock_ledger_stock_fk,
	ADD CONSTRAINT stock_ledger_sku_fk FOREIGN KEY (tenant, sku)
		REFERENCES inventory.sku (tenant, sku);

-- the old table makes way for the view (it leaves the extension below)
ALTER TABLE inventory.stock RENAME TO stock_0_2;

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
	'Stock counters per (tenant, sku): the sums over the SKU''s slots. available + reserved + consumed equals the sum of stock_ledger.delta.';
COMMENT ON COLUMN inventory.stock.tenant IS 'Tenant that owns the stock.';
COMMENT ON COLUMN inventory.stock.sku IS 'Stock keeping unit, unique within the tenant.';
COMMENT ON COLUMN inventory.stock.available IS 'Units that can still be reserved (never negative).';
COMMENT ON COLUMN inventory.stock.reserved IS 'Units held by pending reservations.';
COMMENT ON COLUMN inventory.stock.consumed IS 'Units taken by confirmed reservations.';
COMMENT ON COLUMN inventory.stock.slots IS 'Number of slots the counters are split over.';
COMMENT ON COLUMN inventory.stock.created_at IS 'When the SKU was first stocked.';
COMMENT ON COLUMN inventory.stock.updated_at IS 'When a counter last changed (pg_inventory clock).';

/*
 * A superuser repairing counters by hand (UPDATE inventory.stock SET ...)
 * changes the lowest slot by the difference; the functions never write
 * through the view.  Nobody else may write it (no privileges).
 */
CREATE FUNCTION inventory._stock_view_update()
	RETURNS trigger
	LANGUAGE plpgsql
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF NEW.tenant IS DISTINCT FROM OLD.tenant OR NEW.sku IS DISTINCT FROM OLD.sku
	   OR NEW.slots IS DISTINCT FROM OLD.slots THEN
		RAISE EXCEPTION 'only the counters of inventory.stock can be changed'
			USING ERRCODE = 'feature_not_supported',
				  HINT = 'Use inventory.set_stock_slots to change the slot count.';
	END IF;
	UPDATE inventory.stock_slot s
	   SET available = s.available + (NEW.available - OLD.available),
		   reserved = s.reserved + (NEW.reserved - OLD.reserved),
		   consumed = s.consumed + (NEW.consumed - OLD.consumed)
	 WHERE s.tenant = OLD.tenant AND s.sku = OLD.sku
	   AND s.slot = (SELECT min(m.slot) FROM inventory.stock_slot m
					  WHERE m.tenant = OLD.tenant AND m.sku = OLD.sku);
	RETURN NEW;
END
$$;
COMMENT ON FUNCTION inventory._stock_view_update() IS
	'INSTEAD OF UPDATE trigger of the view inventory.stock: applies a hand-made change of a counter to the SKU''s lowest slot (superusers only).';
REVOKE ALL ON FUNCTION inventory._stock_view_update() FROM PUBLIC;
CREATE TRIGGER stock_view_update INSTEAD OF UPDATE ON inventory.stock
	FOR EACH ROW EXECUTE FUNCTION inventory._stock_view_update();
COMMENT ON TRIGGER stock_view_update ON inventory.stock IS
	'Applies a superuser''s hand change of a counter in inventory.stock to the SKU''s lowest slot.';

REVOKE ALL ON inventory.sku, inventory.stock_slot, inventory.stock FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('inventory.sku', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.stock_slot', '');
DO $$
DECLARE
	dst regclass;
	a record;
	init aclitem[];
BEGIN
	FOREACH dst IN ARRAY ARRAY['inventory.stock', 'inventory.sku', 'inventory.stock_slot']::regclass[] LOOP
		SELECT p.initprivs INTO init FROM pg_catalog.pg_init_privs p
		 WHERE p.objoid = dst AND p.classoid = 'pg_catalog.pg_class'::regclass
		   AND p.objsubid = 0;
		FOR a IN SELECT x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) x
				  WHERE c.oid = 'inventory.stock_0_2'::regclass AND x.grantee <> c.relowner
		LOOP
			EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', a.privilege_type, dst,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		FOR a IN SELECT c.attname, x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_attribute c, pg_catalog.aclexplode(c.attacl) x
				  WHERE c.attrelid = 'inventory.stock_0_2'::regclass AND c.attnum > 0
					AND NOT c.attisdropped
					AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute d
								 WHERE d.attrelid = dst AND d.attname = c.attname
								   AND d.attnum > 0 AND NOT d.attisdropped)
		LOOP
			EXECUTE pg_catalog.format('GRANT %s (%I) ON %s TO %s%s', a.privilege_type,
				a.attname, dst,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
		   AND objsubid > 0;
		-- the carried grants are the DBA's, not the extension's initial
		-- privileges, so that pg_dump writes them
		IF init IS NULL THEN
			DELETE FROM pg_catalog.pg_init_privs
			 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
			   AND objsubid = 0;
		ELSE
			UPDATE pg_catalog.pg_init_privs SET initprivs = init
			 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
			   AND objsubid = 0;
		END IF;
	END LOOP;
END
$$;

-- the old table leaves the extension (and its pg_dump registration), then goes
ALTER EXTENSION pg_inventory DROP TABLE inventory.stock_0_2;
DROP TABLE inventory.stock_0_2;

/* ---------------------------------------------------------------------
 * The operator's choice of slot count.
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.set_stock_slots(tenant text, sku text, slots integer)
	RETURNS integer
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_set_stock_slots';
COMMENT ON FUNCTION inventory.set_stock_slots(text, text, integer) IS
	'Splits the SKU''s counters over slots (1 to 256) so that concurrent reservations of a hot SKU take units from different rows; available is spread evenly, totals are unchanged (no ledger record, no event). Returns the previous slot count. Errors: 22023, IN002 unknown SKU.';
REVOKE ALL ON FUNCTION inventory.set_stock_slots(text, text, integer) FROM PUBLIC;
