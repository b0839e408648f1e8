-- 130_upgrade: install 0.1, fill it, update to 0.2 and then to the default
-- version: every row is kept, the old functions go on working and the new
-- ones exist and work.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-03-01 12:00:00+00';

DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';

SELECT inventory.restock('up', 'rcpt-1', 'A', 10);
SELECT status, applied FROM inventory.reserve('up', 'k1', 'A', 2);
SELECT status, applied FROM inventory.confirm('up', 'k1');
SELECT status, applied FROM inventory.reserve('up', 'k2', 'A', 3);
SELECT status, applied FROM inventory.reserve('up', 'k3', 'A', 99);

-- every row of every table, as a fingerprint per table
CREATE TEMP TABLE fingerprint_before AS
SELECT 'stock' AS t, count(*) AS n, md5(string_agg(s::text, '|' ORDER BY s::text)) AS h FROM inventory.stock s
UNION ALL SELECT 'reservation', count(*), md5(string_agg(r::text, '|' ORDER BY r::text)) FROM inventory.reservation r
UNION ALL SELECT 'reservation_line', count(*), md5(string_agg(l::text, '|' ORDER BY l::text)) FROM inventory.reservation_line l
UNION ALL SELECT 'stock_ledger', count(*), md5(string_agg(g::text, '|' ORDER BY g::text)) FROM inventory.stock_ledger g
UNION ALL SELECT 'reservation_transition', count(*), md5(string_agg(x::text, '|' ORDER BY x::text)) FROM inventory.reservation_transition x
UNION ALL SELECT 'outbox', count(*), md5(string_agg((o.id, o.event_id, o.payload)::text, '|' ORDER BY o.id)) FROM inventory.outbox o;

ALTER EXTENSION pg_inventory UPDATE TO '0.2';
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';

-- nothing lost or changed
SELECT b.t, b.n, b.h = a.h AS same_rows
FROM fingerprint_before b
JOIN (
SELECT 'stock' AS t, md5(string_agg(s::text, '|' ORDER BY s::text)) AS h FROM inventory.stock s
UNION ALL SELECT 'reservation', md5(string_agg(r::text, '|' ORDER BY r::text)) FROM inventory.reservation r
UNION ALL SELECT 'reservation_line', md5(string_agg(l::text, '|' ORDER BY l::text)) FROM inventory.reservation_line l
UNION ALL SELECT 'stock_ledger', md5(string_agg(g::text, '|' ORDER BY g::text)) FROM inventory.stock_ledger g
UNION ALL SELECT 'reservation_transition', md5(string_agg(x::text, '|' ORDER BY x::text)) FROM inventory.reservation_transition x
UNION ALL SELECT 'outbox', md5(string_agg((o.id, o.event_id, o.payload)::text, '|' ORDER BY o.id)) FROM inventory.outbox o
) a USING (t)
ORDER BY b.t;

-- the 0.1 functions still work on the old rows, and replays still replay
SELECT status, applied FROM inventory.reserve('up', 'k1', 'A', 2);
SELECT status, applied FROM inventory.cancel('up', 'k2');
SELECT status, applied FROM inventory.reserve('up', 'k3', 'A', 99);
SELECT * FROM inventory.check_invariants();

-- the 0.2 functions: events created before the upgrade are published
SELECT count(*) AS claimed, bool_and(claimed_until IS NULL) AS none_leased_before
FROM inventory.relay_claim('upgrade-test', 100) c
JOIN inventory.outbox o USING (id);
SELECT unpublished, dead_lettered FROM inventory.outbox_metrics;

-- every function of the extension is commented and closed to PUBLIC
SELECT p.proname
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_inventory'
WHERE obj_description(p.oid, 'pg_proc') IS NULL
   OR has_function_privilege('public', p.oid, 'EXECUTE')
ORDER BY 1;

-- 0.2 -> 0.3: slotted stock; every SKU keeps its counters in slot 0
SELECT tenant, sku, available, reserved, consumed FROM inventory.stock ORDER BY 1, 2;
ALTER EXTENSION pg_inventory UPDATE TO '0.3';
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
SELECT tenant, sku, available, reserved, consumed, slots FROM inventory.stock ORDER BY 1, 2;
SELECT tenant, sku, slot, available, reserved, consumed FROM inventory.stock_slot ORDER BY 1, 2, 3;
SELECT b.t, b.n, b.h = a.h AS same_rows
FROM fingerprint_before b
JOIN (
SELECT 'reservation_line' AS t, md5(string_agg(l::text, '|' ORDER BY l::text)) AS h FROM inventory.reservation_line l
UNION ALL SELECT 'stock_ledger', md5(string_agg(g::text, '|' ORDER BY g::text)) FROM inventory.stock_ledger g
) a USING (t)
ORDER BY b.t;
-- the old table left the extension's dump list; the new ones are in it
SELECT c.relname
FROM pg_extension e, unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
WHERE e.extname = 'pg_inventory' ORDER BY 1;
SELECT status, applied FROM inventory.confirm('up', 'k1');
SELECT status, applied FROM inventory.reserve('up', 'k4', 'A', 1);
SELECT inventory.set_stock_slots('up', 'A', 3);
SELECT status, applied FROM inventory.reserve('up', 'k5', 'A', 2);
SELECT tenant, sku, available, reserved, consumed, slots FROM inventory.stock ORDER BY 1, 2;
SELECT * FROM inventory.check_invariants();

-- no update path beyond the default version
SELECT max(version) FROM pg_available_extension_versions WHERE name = 'pg_inventory';
