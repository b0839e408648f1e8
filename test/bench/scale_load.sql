-- test/bench/scale_load.sql: the scale of data of issue #12, goal 6, for
-- make bench (database bench_scale) and make bench-cpu (BENCH_CPU_SCALE=1):
-- tenant bench with :skus SKUs (sku-0000001 .. ), each with an opening
-- receipt of 1,000,000,000 units, and :history stored reservations
-- (hist-1 .. , cancelled, one unit of one SKU each, SKU ((r - 1) mod :skus)
-- + 1, with their line and both log rows).  :skus is 1 to 9,999,999 (the
-- SKU names have 7 digits) and :history at least 1; only the templates'
-- three calls write outbox events, the copies none.
--
--   psql -v ON_ERROR_STOP=1 -v skus=N -v history=M -d DB -f scale_load.sql
--
-- As a superuser, in a database with pg_inventory and nothing of tenant
-- bench yet.  The functions stock sku-0000001 and make and cancel hist-1;
-- those rows are the templates, copied set-based (minutes where the
-- functions would take hours) with the foreign-key triggers off
-- (session_replication_role = replica): every derived column (a slot's
-- guards, a location's level) is what the functions wrote, so the copies
-- stay right when a later schema changes them.  Run check_invariants
-- afterwards: both callers do.
SELECT pg_catalog.set_config('scale_load.skus', :'skus', false) AS skus_set,
	   pg_catalog.set_config('scale_load.history', :'history', false) AS history_set \gset
DO $$
BEGIN
	IF NOT (current_setting('scale_load.skus')::bigint BETWEEN 1 AND 9999999
			AND current_setting('scale_load.history')::bigint >= 1) THEN
		RAISE EXCEPTION 'scale_load.sql: skus must be 1 to 9999999 (7-digit SKU names) and history at least 1'
			USING ERRCODE = '22023';
	END IF;
END
$$;
SELECT inventory.restock('bench', 'open-1', 'sku-0000001', 1000000000, 'opening stock') AS available \gset
SELECT (inventory.reserve('bench', 'hist-1', 'sku-0000001', 1)).status AS reserved \gset
SELECT (inventory.cancel('bench', 'hist-1')).status AS cancelled \gset

SET synchronous_commit = off;
SET session_replication_role = replica;
SET maintenance_work_mem = '1GB';
BEGIN;
-- the catalog: SKU, (sku, location), slot and opening receipt of sku-0000001
-- again for every other SKU
CREATE TEMP TABLE k ON COMMIT DROP AS
	SELECT g, 'sku-' || lpad(g::text, 7, '0') AS sku FROM generate_series(2, :skus) AS g;
INSERT INTO inventory.sku (tenant, sku, slots, created_at)
SELECT s.tenant, k.sku, s.slots, s.created_at FROM inventory.sku s, k WHERE s.sku = 'sku-0000001';
INSERT INTO inventory.stock_location (tenant, sku, location, safety_stock, low_threshold, level, version, created_at)
SELECT s.tenant, k.sku, s.location, s.safety_stock, s.low_threshold, s.level, s.version, s.created_at
  FROM inventory.stock_location s, k WHERE s.sku = 'sku-0000001';
INSERT INTO inventory.stock_slot (tenant, sku, slot, available, reserved, consumed, updated_at, location,
	keep_units, level_watch)
SELECT s.tenant, k.sku, s.slot, s.available, s.reserved, s.consumed, s.updated_at, s.location,
	   s.keep_units, s.level_watch
  FROM inventory.stock_slot s, k WHERE s.sku = 'sku-0000001';
INSERT INTO inventory.stock_ledger (tenant, sku, request_key, kind, delta, reason, available_after, actor,
	created_at, location)
SELECT l.tenant, k.sku, 'open-' || k.g, l.kind, l.delta, l.reason, l.available_after, l.actor,
	   l.created_at, l.location
  FROM inventory.stock_ledger l, k WHERE l.sku = 'sku-0000001';
-- the history: hist-1 again as hist-2 .., ids after the sequence's last,
-- 1 ms apart, the later the id the later its times (hist-N at hist-1's)
-- (0.9: an id is a sequence number times 4 plus its ring; hist-N in the ring
-- of hist-1)
SELECT s.last_value AS base,
	   CASE WHEN to_regclass('inventory.reservation_ring') IS NULL THEN 1 ELSE 4 END AS mult,
	   CASE WHEN to_regclass('inventory.reservation_ring') IS NULL THEN 0 ELSE r.id % 4 END AS ring
  FROM inventory.reservation_id_seq s, inventory.reservation r WHERE r.request_key = 'hist-1' \gset
INSERT INTO inventory.reservation (id, tenant, request_key, state, expires_at, version, reason, created_at,
	updated_at, request)
SELECT (:base + g - 1) * :mult + :ring, r.tenant, 'hist-' || g, r.state, r.expires_at - (:history - g) * interval '1 millisecond',
	   r.version, r.reason, r.created_at - (:history - g) * interval '1 millisecond',
	   r.updated_at - (:history - g) * interval '1 millisecond', r.request
  FROM inventory.reservation r, generate_series(2, :history) AS g WHERE r.request_key = 'hist-1';
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, quantity, location, available)
SELECT (:base + g - 1) * :mult + :ring, l.tenant, 'sku-' || lpad(((g - 1) % :skus + 1)::text, 7, '0'), l.quantity,
	   l.location, l.available
  FROM inventory.reservation_line l JOIN inventory.reservation r ON r.id = l.reservation_id,
	   generate_series(2, :history) AS g WHERE r.request_key = 'hist-1';
INSERT INTO inventory.reservation_transition (reservation_id, from_state, to_state, reason, actor, version,
	created_at)
SELECT (:base + g - 1) * :mult + :ring, t.from_state, t.to_state, t.reason, t.actor, t.version,
	   t.created_at - (:history - g) * interval '1 millisecond'
  FROM inventory.reservation_transition t JOIN inventory.reservation r ON r.id = t.reservation_id,
	   generate_series(2, :history) AS g WHERE r.request_key = 'hist-1' ORDER BY g, t.version;
SELECT setval('inventory.reservation_id_seq', :base + :history - 1) AS last_id \gset
COMMIT;
RESET session_replication_role;
VACUUM ANALYZE;
