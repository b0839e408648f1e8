-- 280_slot_guards: each slot carries its guards (0.6): keep_units, what a
-- reservation taking from that slot alone must leave in available
-- (inventory.slot_keep_units: 0 without a safety stock, the safety stock
-- with one slot, NULL with several slots and a safety stock), and
-- level_watch (inventory.slot_level_watch: with one slot and the level
-- in_stock, safety_stock + low_threshold; else NULL), above which a take
-- from available skips the stock level.  The functions that change a
-- policy, a slot count or a level keep them; check_invariants compares
-- them (slot_guards_match_policy).  Also the C functions behind the CHECK
-- constraints on states and event types (is_reservation_state,
-- is_event_type).  README "Slotted stock", "Safety stock", "Levels",
-- check_invariants, "Upgrading".
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-10 00:00:00+00';

-- the slots of this file's tenants with their guards, policy and level
CREATE TEMP VIEW guards AS
SELECT s.tenant, s.sku, s.location, s.slot, s.available, s.keep_units, s.level_watch,
       l.safety_stock, l.low_threshold, l.level
  FROM inventory.stock_slot s
  JOIN inventory.stock_location l USING (tenant, sku, location)
 WHERE s.tenant LIKE 't280%';
-- the stock events written since the previous call of pg_temp.new_events()
CREATE TEMP VIEW sev AS
SELECT o.id, o.tenant, o.payload ->> 'sku' AS sku, o.payload ->> 'location' AS location,
       o.event_type, (o.payload ->> 'available')::bigint AS available,
       o.payload ->> 'level' AS level, (o.payload ->> 'sellable')::bigint AS sellable
  FROM inventory.outbox o
 WHERE o.tenant LIKE 't280%' AND o.event_type LIKE 'stock.%'
   AND o.event_type NOT IN ('stock.restocked', 'stock.adjusted');
CREATE TEMP TABLE seen (last_id bigint);
INSERT INTO seen VALUES (0);
CREATE FUNCTION pg_temp.new_events()
RETURNS TABLE(tenant text, sku text, location text, event_type text, available bigint,
              level text, sellable bigint)
LANGUAGE plpgsql AS $$
DECLARE
	prev bigint;
BEGIN
	SELECT last_id INTO prev FROM seen;
	UPDATE seen SET last_id = coalesce((SELECT max(id) FROM sev), prev);
	RETURN QUERY SELECT s.tenant::text, s.sku, s.location, s.event_type, s.available, s.level,
	                    s.sellable
	               FROM sev s WHERE s.id > prev ORDER BY s.id;
END
$$;
-- what check_invariants says about this file's tenants
CREATE TEMP VIEW broken AS
SELECT tenant, sku, check_name, detail FROM inventory.check_invariants()
 WHERE tenant LIKE 't280%';

------------------------------------------------------------------------
-- rule: a restock creates the slot with keep_units 0 (no safety stock)
-- and computes the level at once, so level_watch is set (0: no policy);
-- a SKU registered with no stock has keep_units 0 and level_watch NULL
-- (no level yet) until its first change of available computes the level
------------------------------------------------------------------------
SELECT inventory.restock('t280', 'r1', 'A', 10);
SELECT inventory.register_sku('t280', 'R');
SELECT sku, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' ORDER BY sku, slot;
SELECT inventory.restock('t280', 'r2', 'R', 4);
SELECT sku, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'R';
-- set_stock_policy where the SKU never was: counters made at 0, the level
-- computed out_of_stock there: keep_units 0, level_watch NULL
SELECT inventory.set_location('t280', 'shop', 20);
SELECT inventory.set_stock_policy('t280', 'R', 'shop', 0, 1) AS changed;
SELECT sku, location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'R' ORDER BY location;
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: set_stock_policy on a one-slot SKU sets keep_units to the safety
-- stock and level_watch to safety_stock + low_threshold (0 without one)
------------------------------------------------------------------------
SELECT inventory.set_stock_policy('t280', 'A', 'default', 3, 2) AS changed;
SELECT sku, slot, available, keep_units, level_watch, safety_stock, low_threshold, level
  FROM guards WHERE tenant = 't280' AND sku = 'A';
-- no low threshold: the watch is the safety stock alone
SELECT inventory.set_stock_policy('t280', 'A', 'default', 3) AS changed;
SELECT keep_units, level_watch FROM guards WHERE tenant = 't280' AND sku = 'A';
-- a threshold without safety stock
SELECT inventory.set_stock_policy('t280', 'A', 'default', 0, 4) AS changed;
SELECT keep_units, level_watch FROM guards WHERE tenant = 't280' AND sku = 'A';
-- a policy that makes the level low: the watch goes (NULL), keep stays
SELECT inventory.set_stock_policy('t280', 'A', 'default', 2, 8) AS changed;
SELECT keep_units, level_watch, level FROM guards WHERE tenant = 't280' AND sku = 'A';
SELECT * FROM pg_temp.new_events();
-- and back to in_stock (low -> in_stock writes no event): the watch is back
SELECT inventory.set_stock_policy('t280', 'A', 'default', 2, 7) AS changed;
SELECT keep_units, level_watch, level FROM guards WHERE tenant = 't280' AND sku = 'A';
SELECT * FROM pg_temp.new_events();
-- a threshold whose sum with the safety stock passes the bigint range:
-- the guards are written before the level is read again (from in_stock),
-- so slot_level_watch gives NULL rather than an overflow; then the level
-- is low (stock.low) and stays without a watch
SELECT inventory.set_stock_policy('t280', 'R', 'default', 2, 9223372036854775806) AS changed;
SELECT * FROM pg_temp.new_events();
SELECT keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'R' AND location = 'default';
SELECT inventory.slot_level_watch(1, 2, 9223372036854775805, 'in_stock') AS at_max,
       inventory.slot_level_watch(1, 2, 9223372036854775806, 'in_stock') AS past_max;
SELECT inventory.set_stock_policy('t280', 'R', 'default', 0) AS changed;
SELECT keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'R' AND location = 'default';
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: set_stock_slots: with several slots, keep_units is NULL where a
-- safety stock is kept (no slot alone may take from available), 0 where
-- none is; level_watch is NULL on every slot; back to one slot, both are
-- those of one slot again
------------------------------------------------------------------------
SELECT inventory.restock('t280', 'r3', 'B', 8);
SELECT inventory.set_stock_slots('t280', 'A', 4) AS old_slots;
SELECT inventory.set_stock_slots('t280', 'B', 4) AS old_slots;
SELECT sku, slot, available, keep_units, level_watch, safety_stock, level
  FROM guards WHERE tenant = 't280' AND sku IN ('A', 'B') ORDER BY sku, slot;
-- a policy set on the split SKU: keep_units follows it on every slot
SELECT inventory.set_stock_policy('t280', 'B', 'default', 1) AS changed;
SELECT slot, keep_units, level_watch FROM guards
 WHERE tenant = 't280' AND sku = 'B' ORDER BY slot;
SELECT inventory.set_stock_policy('t280', 'B', 'default', 0) AS changed;
SELECT slot, keep_units, level_watch FROM guards
 WHERE tenant = 't280' AND sku = 'B' ORDER BY slot;
SELECT * FROM broken;
SELECT inventory.set_stock_slots('t280', 'A', 1) AS old_slots;
SELECT inventory.set_stock_slots('t280', 'B', 1) AS old_slots;
SELECT sku, slot, available, keep_units, level_watch, safety_stock, low_threshold, level
  FROM guards WHERE tenant = 't280' AND sku IN ('A', 'B') ORDER BY sku, slot;
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: each level crossing of a one-slot SKU writes exactly one event
-- and moves level_watch with the level.  C: available 10, safety 2, low 3:
-- watch 5.  A take that leaves watch + 1 (6) crosses nothing and writes
-- nothing; one that leaves exactly the watch (5: sellable 3 <= 3) is the
-- crossing to low (stock.low) and must be seen
------------------------------------------------------------------------
SELECT inventory.restock('t280', 'r4', 'C', 10);
SELECT inventory.set_stock_policy('t280', 'C', 'default', 2, 3) AS changed;
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- leaves 6 = watch + 1: in_stock, no event, watch unchanged
SELECT status, lines FROM inventory.reserve('t280', 'c1', 'C', 4);
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- leaves 5 = watch: stock.low (sellable 3), the watch goes
SELECT status, lines FROM inventory.reserve('t280', 'c2', 'C', 1);
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- low -> low (sellable 1): no event
SELECT status, lines FROM inventory.reserve('t280', 'c3', 'C', 2);
SELECT * FROM pg_temp.new_events();
-- leaves 2 = the safety stock: stock.out_of_stock
SELECT status, lines FROM inventory.reserve('t280', 'c4', 'C', 1);
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- a cancel gives 1 back: sellable 1 <= 3: stock.back_in_stock, level low
SELECT status FROM inventory.cancel('t280', 'c4');
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- a receipt to sellable 5 > 3: low -> in_stock writes none; the watch is back
SELECT inventory.restock('t280', 'r5', 'C', 4);
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- units entering available while in_stock: the level stays, no event
SELECT status FROM inventory.cancel('t280', 'c3');
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- one take from 9 straight to the safety stock (in_stock -> out_of_stock):
-- one event, stock.out_of_stock, not stock.low as well
SELECT status, lines FROM inventory.reserve('t280', 'c5', 'C', 7);
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280' AND sku = 'C';
-- a confirm moves no available unit: nothing
SELECT status FROM inventory.confirm('t280', 'c5');
SELECT * FROM pg_temp.new_events();
-- exactly one event per crossing over the whole sequence
SELECT event_type, count(*) FROM sev WHERE tenant = 't280' AND sku = 'C'
 GROUP BY event_type ORDER BY event_type;
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: a reservation never takes the safety stock.  One slot (keep_units
-- = safety stock): with only the safety stock left, insufficient; with
-- one unit above it, 2 is insufficient and 1 is served.
------------------------------------------------------------------------
SELECT inventory.restock('t280b', 'r1', 'S', 5);
SELECT inventory.set_stock_policy('t280b', 'S', 'default', 5) AS changed;
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards WHERE tenant = 't280b' AND sku = 'S';
SELECT status, lines FROM inventory.reserve('t280b', 'k1', 'S', 1);
SELECT inventory.restock('t280b', 'r2', 'S', 1);
SELECT * FROM pg_temp.new_events();
SELECT available, keep_units, level_watch, level FROM guards WHERE tenant = 't280b' AND sku = 'S';
SELECT status, lines FROM inventory.reserve('t280b', 'k2', 'S', 2);
SELECT status, lines FROM inventory.reserve('t280b', 'k3', 'S', 1);
SELECT * FROM pg_temp.new_events();
SELECT status, lines FROM inventory.reserve('t280b', 'k4', 'S', 1);
SELECT sku, location, available, reserved, safety_stock, sellable, level
  FROM inventory.location_stock WHERE tenant = 't280b' AND sku = 'S';
-- several slots and a safety stock (keep_units NULL: no fast path from
-- available): the call falls back to every slot and checks the total.
-- T: 8 over 4 slots (2 each), safety 3: sellable 5, more than any slot
-- holds; 5 is served from several slots, then 1 more is insufficient
SELECT inventory.restock('t280b', 'r3', 'T', 8);
SELECT inventory.set_stock_slots('t280b', 'T', 4) AS old_slots;
SELECT inventory.set_stock_policy('t280b', 'T', 'default', 3) AS changed;
SELECT slot, available, keep_units, level_watch FROM guards
 WHERE tenant = 't280b' AND sku = 'T' ORDER BY slot;
-- 1 unit, which one slot holds: still served by the fallback (a slot
-- alone cannot know what the others hold)
SELECT status, lines FROM inventory.reserve('t280b', 'k5', 'T', 1);
-- the last sellable 4: out_of_stock (the fallback looks at the level)
SELECT status, lines FROM inventory.reserve('t280b', 'k6', 'T', 4);
SELECT * FROM pg_temp.new_events();
SELECT status, lines FROM inventory.reserve('t280b', 'k7', 'T', 1);
SELECT * FROM pg_temp.new_events();
SELECT sum(available) AS available, min(keep_units) AS keep_units
  FROM guards WHERE tenant = 't280b' AND sku = 'T';
SELECT sku, location, available, reserved, safety_stock, sellable, level
  FROM inventory.location_stock WHERE tenant = 't280b' AND sku = 'T';
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: the guards are per (sku, location): two locations of one SKU keep
-- their own, a policy at one leaves the other's alone, a crossing at one
-- moves its watch only; set_stock_slots (per SKU) moves both
------------------------------------------------------------------------
SELECT inventory.set_location('t280c', 'hub', 10);
SELECT inventory.set_location('t280c', 'shop', 20);
SELECT inventory.restock_at('t280c', 'r1', 'D', 'hub', 10);
SELECT inventory.restock_at('t280c', 'r2', 'D', 'shop', 6);
SELECT inventory.set_stock_policy('t280c', 'D', 'hub', 4, 1) AS changed;
SELECT location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280c' ORDER BY location, slot;
SELECT inventory.set_stock_policy('t280c', 'D', 'shop', 1, 2) AS changed;
SELECT location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280c' ORDER BY location, slot;
-- hub serves first: 5 from hub leaves 5 = its watch: stock.low at hub only
SELECT status, lines FROM inventory.reserve('t280c', 'k1', 'D', 5);
SELECT * FROM pg_temp.new_events();
SELECT location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280c' ORDER BY location, slot;
-- hub has sellable 1: 2 go to shop (leaves 4 > its watch 3: nothing)
SELECT status, lines FROM inventory.reserve('t280c', 'k2', 'D', 2);
SELECT * FROM pg_temp.new_events();
-- pinned at shop, 1 more leaves 3 = its watch: stock.low at shop
SELECT status, lines FROM inventory.reserve_lines('t280c', 'k3',
	'[{"sku": "D", "quantity": 1, "location": "shop"}]');
SELECT * FROM pg_temp.new_events();
SELECT location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280c' ORDER BY location, slot;
-- two slots: at both locations keep_units NULL (both keep a safety stock)
-- and no watch; back to one: each location's own guards again
SELECT inventory.set_stock_slots('t280c', 'D', 2) AS old_slots;
SELECT location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280c' ORDER BY location, slot;
SELECT inventory.set_stock_slots('t280c', 'D', 1) AS old_slots;
SELECT location, slot, available, keep_units, level_watch, level FROM guards
 WHERE tenant = 't280c' ORDER BY location, slot;
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: the fast path reads the slot's guard alone, so a guard changed by
-- hand is obeyed (a superuser can write stock_slot; nothing blocks it):
-- check_invariants reports it as slot_guards_match_policy, and
-- set_stock_policy (even with the same policy, which changes nothing and
-- returns false) writes the guards again
------------------------------------------------------------------------
SELECT available, keep_units, level_watch, safety_stock, level FROM guards
 WHERE tenant = 't280b' AND sku = 'S';
BEGIN;
UPDATE inventory.stock_slot SET keep_units = 0
 WHERE tenant = 't280b' AND sku = 'S' AND location = 'default';
-- the safety stock is taken: what a wrong guard does
SELECT status, lines FROM inventory.reserve('t280b', 'k8', 'S', 2);
ROLLBACK;
UPDATE inventory.stock_slot SET keep_units = 1
 WHERE tenant = 't280b' AND sku = 'S' AND location = 'default';
SELECT * FROM broken;
UPDATE inventory.stock_slot SET level_watch = 0
 WHERE tenant = 't280' AND sku = 'C' AND location = 'default';
SELECT * FROM broken;
SELECT inventory.set_stock_policy('t280b', 'S', 'default', 5) AS changed;
SELECT inventory.set_stock_policy('t280', 'C', 'default', 2, 3) AS changed;
SELECT * FROM broken;
SELECT available, keep_units, level_watch FROM guards
 WHERE (tenant, sku) IN (('t280b', 'S'), ('t280', 'C')) ORDER BY tenant;

------------------------------------------------------------------------
-- rule: the CHECK constraints on states and event types call
-- is_reservation_state and is_event_type: true for each listed value,
-- false for anything else (bytes compared: no case folding, no trimming),
-- NULL for NULL (STRICT)
------------------------------------------------------------------------
SELECT s, inventory.is_reservation_state(s) AS valid
  FROM unnest(ARRAY['pending', 'confirmed', 'cancelled', 'expired', 'rejected',
                    'compensated', 'Pending', 'pending ', ' pending', 'pend',
                    'pendingx', '', 'reserved', NULL]) AS s;
SELECT t, inventory.is_event_type(t) AS valid
  FROM unnest(ARRAY['reservation.reserved', 'reservation.confirmed',
                    'reservation.cancelled', 'reservation.expired',
                    'reservation.compensated', 'reservation.extended',
                    'reservation.amended', 'stock.restocked', 'stock.adjusted',
                    'stock.out_of_stock', 'stock.back_in_stock', 'stock.low',
                    'stock.LOW', 'stock.low ', 'stock', 'reservation.',
                    'reservation.rejected', 'stock.high', '', NULL]) AS t;
-- immutable and strict, as a CHECK constraint needs
SELECT p.oid::regprocedure, p.provolatile, p.proisstrict, p.proparallel
  FROM pg_proc p WHERE p.oid IN ('inventory.is_reservation_state(text)'::regprocedure,
                                 'inventory.is_event_type(text)'::regprocedure)
 ORDER BY p.proname;
SELECT conrelid::regclass, conname, pg_get_constraintdef(oid)
  FROM pg_constraint
 WHERE conname IN ('reservation_state_valid', 'reservation_transition_state_valid',
                   'outbox_event_type_valid')
   -- the outbox's partitions (0.8) inherit its constraints
   AND conislocal
 ORDER BY 2;
-- a superuser's INSERT of an unknown event type is refused (23514)
INSERT INTO inventory.outbox (event_id, event_type, tenant, payload, created_at)
VALUES (gen_random_uuid(), 'stock.high', 't280', '{}', '2026-07-10 00:00:00+00');
INSERT INTO inventory.outbox (event_id, event_type, tenant, payload, created_at)
VALUES (gen_random_uuid(), 'Stock.low', 't280', '{}', '2026-07-10 00:00:00+00');
-- a listed one passes the CHECK (rolled back)
BEGIN;
INSERT INTO inventory.outbox (event_id, event_type, tenant, payload, created_at)
VALUES (gen_random_uuid(), 'stock.low', 't280', '{}', '2026-07-10 00:00:00+00');
ROLLBACK;
-- and an unknown state (23514), in the reservation and in its log
UPDATE inventory.reservation SET state = 'on_hold'
 WHERE tenant = 't280' AND request_key = 'c1';
UPDATE inventory.reservation_transition t SET to_state = 'Pending'
  FROM inventory.reservation r
 WHERE r.id = t.reservation_id AND r.tenant = 't280' AND r.request_key = 'c1';
SELECT state FROM inventory.reservation WHERE tenant = 't280' AND request_key = 'c1';
SELECT * FROM broken;

------------------------------------------------------------------------
-- rule: the update 0.5 -> 0.6 computes every slot's guards from what is
-- stored: one slot with a policy, several slots with and without a safety
-- stock, a level not yet computed, a level low, two locations
------------------------------------------------------------------------
DROP VIEW broken;
DROP VIEW guards;
DROP VIEW sev;
DROP EXTENSION pg_inventory;
CREATE EXTENSION pg_inventory VERSION '0.5';
SELECT inventory.set_location('t280u', 'shop', 20);
SELECT inventory.restock('t280u', 'r1', 'A', 10);
SELECT inventory.set_stock_policy('t280u', 'A', 'default', 3, 2) AS changed;
SELECT inventory.restock_at('t280u', 'r2', 'A', 'shop', 4);
SELECT inventory.set_stock_policy('t280u', 'A', 'shop', 1, 3) AS changed;
SELECT inventory.restock('t280u', 'r3', 'B', 8);
SELECT inventory.set_stock_slots('t280u', 'B', 2) AS old_slots;
SELECT inventory.set_stock_policy('t280u', 'B', 'default', 1) AS changed;
SELECT inventory.restock('t280u', 'r4', 'E', 8);
SELECT inventory.set_stock_slots('t280u', 'E', 3) AS old_slots;
SELECT inventory.register_sku('t280u', 'R');
ALTER EXTENSION pg_inventory UPDATE TO '0.6';
SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory';
SELECT s.sku, s.location, s.slot, s.keep_units, s.level_watch, l.safety_stock,
       l.low_threshold, l.level
  FROM inventory.stock_slot s
  JOIN inventory.stock_location l USING (tenant, sku, location)
 WHERE s.tenant = 't280u' ORDER BY s.sku, s.location, s.slot;
SELECT tenant, sku, check_name FROM inventory.check_invariants();
-- and the 0.6 calls keep them: A at default leaves 5 = its watch: stock.low
SELECT status, lines FROM inventory.reserve('t280u', 'k1', 'A', 5);
SELECT event_type, payload ->> 'location' AS location, payload ->> 'sellable' AS sellable
  FROM inventory.outbox WHERE tenant = 't280u' AND event_type = 'stock.low' ORDER BY id;
SELECT s.keep_units, s.level_watch, l.level
  FROM inventory.stock_slot s JOIN inventory.stock_location l USING (tenant, sku, location)
 WHERE s.tenant = 't280u' AND s.sku = 'A' AND s.location = 'default';
SELECT tenant, sku, check_name FROM inventory.check_invariants();
