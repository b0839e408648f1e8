-- 150_slots: slotted stock (0.3).  set_stock_slots: argument errors
-- (22023, IN002, 42501), the previous count returned, available spread
-- evenly, totals unchanged, no ledger record or event.  Reservations take
-- units from one slot, fall back to all slots (and rebalance) when no single
-- slot holds enough, and never hold more than the SKU's total; carts mixing
-- slotted and plain SKUs are all-or-nothing (the held lines undone exactly)
-- and IN002 on an unknown SKU.  confirm, cancel, compensate and expire_due
-- keep every slot's counters non-negative and the totals right; restock and
-- adjust spread available evenly (IN003 on the total); shrinking the slot
-- count gathers reserved and consumed into slot 0.  The view inventory.stock
-- refuses every hand change (0A000: counters, tenant, sku, slots), even a
-- superuser's; a slot written directly (bypassing the functions) is what
-- check_invariants reports.
-- (README "Words", "reserve", "reserve_lines", "Unknown SKU",
-- "Idempotency", "adjust", "Records", "Authorisation"; README slotted stock.)
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-09-01 00:00:00+00';

-- expire_due acts on every tenant: first expire what earlier test files
-- left due, so that the counts below are this file's own
SELECT inventory.expire_due(100000) >= 0 AS drained;

-- this file's tenants are t150...
CREATE TEMP VIEW slots AS
SELECT tenant, sku, slot, available, reserved, consumed
  FROM inventory.stock_slot WHERE tenant LIKE 't150%';
-- counts, and stk with the slot count (include/tenant.sql)
\set prefix t150
\set stk_extra ', slots'
\ir include/tenant.sql
-- every slot counter of this file's SKUs is non-negative, every SKU has
-- slots 0 .. slots - 1 exactly, and the view's totals are the slot sums
CREATE TEMP VIEW slots_ok AS
SELECT (SELECT count(*) FROM inventory.stock_slot s WHERE s.tenant LIKE 't150%'
          AND (s.available < 0 OR s.reserved < 0 OR s.consumed < 0)) AS negative_slots,
       (SELECT count(*) FROM inventory.sku k WHERE k.tenant LIKE 't150%'
          AND (SELECT array_agg(s.slot ORDER BY s.slot) FROM inventory.stock_slot s
                WHERE s.tenant = k.tenant AND s.sku = k.sku)
              IS DISTINCT FROM ARRAY(SELECT generate_series(0, k.slots - 1))) AS misnumbered_skus,
       (SELECT count(*) FROM inventory.stock v
          CROSS JOIN LATERAL (SELECT sum(s.available) AS a, sum(s.reserved) AS r,
                                     sum(s.consumed) AS c
                                FROM inventory.stock_slot s
                               WHERE s.tenant = v.tenant AND s.sku = v.sku) t
         WHERE v.tenant LIKE 't150%'
           AND ROW(v.available, v.reserved, v.consumed) IS DISTINCT FROM ROW(t.a, t.r, t.c))
         AS wrong_totals;
CREATE TEMP VIEW broken AS
SELECT tenant, sku, check_name
  FROM inventory.check_invariants() WHERE tenant LIKE 't150%';

------------------------------------------------------------------------
-- set_stock_slots: arguments
------------------------------------------------------------------------
SELECT inventory.restock('t150', 'rcpt-a', 'A', 10);
SELECT * FROM counts;
-- NULL in any argument, slots outside 1..256, the reserved tenant '*',
-- identifiers outside the limits: 22023
SELECT inventory.set_stock_slots(NULL, 'A', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150', NULL, 2);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150', 'A', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150', 'A', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150', 'A', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150', 'A', 257);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('*', 'A', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('', 'A', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150', repeat('x', 65), 2);
\echo :LAST_ERROR_SQLSTATE
-- a SKU the tenant never stocked, a tenant that has none: IN002
SELECT inventory.set_stock_slots('t150', 'Z', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_slots('t150-none', 'A', 2);
\echo :LAST_ERROR_SQLSTATE
-- nothing changed: one slot, no SKU made
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM slots ORDER BY tenant, sku, slot;
SELECT * FROM counts;

-- a role without EXECUTE: 42501; an operator granted EXECUTE acts for every
-- tenant without a tenant grant
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t150_app;
DROP ROLE IF EXISTS regress_t150_operator;
RESET client_min_messages;
CREATE ROLE regress_t150_app;
CREATE ROLE regress_t150_operator;
GRANT USAGE ON SCHEMA inventory TO regress_t150_app, regress_t150_operator;
GRANT EXECUTE ON FUNCTION inventory.set_stock_slots(text, text, integer)
  TO regress_t150_operator;
-- operators act for every tenant through a grant of '*' (EXECUTE alone is
-- not enough); the application role has EXECUTE but no grant
SELECT inventory.grant_tenant('*', 'regress_t150_operator');
SET ROLE regress_t150_app;
SELECT inventory.set_stock_slots('t150', 'A', 2);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT * FROM stk ORDER BY tenant, sku;

------------------------------------------------------------------------
-- set_stock_slots: spread evenly, totals unchanged, previous count
------------------------------------------------------------------------
-- 1 -> 4 returns 1; 10 units become 3, 3, 2, 2; the totals stay
SET ROLE regress_t150_operator;
SELECT inventory.set_stock_slots('t150', 'A', 4) AS previous;
RESET ROLE;
SELECT * FROM slots ORDER BY tenant, sku, slot;
SELECT * FROM stk ORDER BY tenant, sku;
-- no ledger record, no event
SELECT * FROM counts;
-- the same count again returns it and changes nothing here (even spread)
SELECT inventory.set_stock_slots('t150', 'A', 4) AS previous;
SELECT * FROM slots ORDER BY tenant, sku, slot;
-- 256 slots, the most: 10 units in slots 0..9, 1 each
SELECT inventory.restock('t150', 'rcpt-w', 'W', 10);
SELECT inventory.set_stock_slots('t150', 'W', 256) AS previous;
SELECT count(*) AS slots, sum(available) AS available,
       count(*) FILTER (WHERE available = 1) AS with_one,
       max(slot) FILTER (WHERE available = 1) AS last_with_one, max(slot) AS last
  FROM slots WHERE sku = 'W';
SELECT inventory.set_stock_slots('t150', 'W', 3) AS previous;
SELECT * FROM slots WHERE sku = 'W' ORDER BY tenant, sku, slot;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM slots_ok;

------------------------------------------------------------------------
-- reserve on slotted stock
------------------------------------------------------------------------
-- A: 3, 3, 2, 2.  2 units fit in slot 0, the lowest free slot with enough
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r1', 'A', 2, '1 hour');
SELECT * FROM slots WHERE sku = 'A' ORDER BY tenant, sku, slot;
-- 3 units: slot 0 has 1 left, slot 1 has 3
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r2', 'A', 3, '1 hour');
SELECT * FROM slots WHERE sku = 'A' ORDER BY tenant, sku, slot;
-- 3 units again: no slot holds 3 (1, 0, 2, 2) but the SKU holds 5: the
-- fallback takes 1 from slot 0 and 2 from slot 2, then spreads the 2 units
-- left evenly (1, 1, 0, 0)
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r3', 'A', 3, '1 hour');
SELECT * FROM slots WHERE sku = 'A' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'A' ORDER BY tenant, sku;
-- more than the SKU's 2 units: insufficient (stored), no slot changed
CREATE TEMP TABLE before AS SELECT * FROM slots;
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r4', 'A', 3, '1 hour');
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
SELECT * FROM stk WHERE sku = 'A' ORDER BY tenant, sku;
-- exactly the 2 left: fallback again, every slot drained
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r5', 'A', 2, '1 hour');
SELECT * FROM slots WHERE sku = 'A' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'A' ORDER BY tenant, sku;
-- replays return the stored outcome and change nothing
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r3', 'A', 3, '1 hour');
SELECT status, state, applied, sku, quantity FROM inventory.reserve('t150', 'r4', 'A', 3, '1 hour');
SELECT * FROM counts;
SELECT * FROM slots_ok;
SELECT * FROM broken ORDER BY tenant, sku, check_name;

------------------------------------------------------------------------
-- carts mixing slotted and plain SKUs (all or nothing)
------------------------------------------------------------------------
-- C: 12 units over 3 slots (4, 4, 4); P: a plain SKU (1 slot) with 3;
-- Q: 6 units over 2 slots (3, 3), named after P
SELECT inventory.restock('t150', 'rcpt-c', 'C', 12);
SELECT inventory.restock('t150', 'rcpt-p', 'P', 3);
SELECT inventory.restock('t150', 'rcpt-q', 'Q', 6);
SELECT inventory.set_stock_slots('t150', 'C', 3) AS previous;
SELECT inventory.set_stock_slots('t150', 'Q', 2) AS previous;
SELECT * FROM slots WHERE sku IN ('C', 'P', 'Q') ORDER BY tenant, sku, slot;
-- success: every line held
SELECT status, state, applied, sku, quantity FROM inventory.reserve_lines('t150', 'cart-1',
  '[{"sku": "P", "quantity": 1}, {"sku": "C", "quantity": 2}, {"sku": "Q", "quantity": 1}]', '1 hour');
SELECT * FROM slots WHERE sku IN ('C', 'P', 'Q') ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku IN ('C', 'P', 'Q') ORDER BY tenant, sku;
SELECT * FROM counts;
DROP TABLE before;
CREATE TEMP TABLE before AS SELECT * FROM slots;
-- the slotted line fits in one slot, the plain line after it is short:
-- insufficient, and C's slot is given back exactly
SELECT status, state, applied, sku, quantity FROM inventory.reserve_lines('t150', 'cart-2',
  '[{"sku": "C", "quantity": 2}, {"sku": "P", "quantity": 5}]', '1 hour');
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
-- the slotted line needs the fallback (6 units, no slot holds more than 4)
-- and rebalances all of C's slots, the plain line is short: every slot of
-- C is as before
SELECT status, state, applied, sku, quantity FROM inventory.reserve_lines('t150', 'cart-3',
  '[{"sku": "P", "quantity": 3}, {"sku": "C", "quantity": 6}]', '1 hour');
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
-- the plain line fits, the slotted line after it (Q: 5, in 2 + 3) is short:
-- P and C are given back, Q untouched
SELECT status, state, applied, sku, quantity FROM inventory.reserve_lines('t150', 'cart-4',
  '[{"sku": "C", "quantity": 3}, {"sku": "P", "quantity": 2}, {"sku": "Q", "quantity": 6}]', '1 hour');
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
-- the rejections are stored (state rejected, requested lines kept)
SELECT r.request_key, r.state, r.expires_at IS NULL AS no_expiry,
       (SELECT string_agg(l.sku || '=' || l.quantity, ',' ORDER BY l.sku)
          FROM inventory.reservation_line l WHERE l.reservation_id = r.id) AS lines
  FROM inventory.reservation r
 WHERE r.tenant = 't150' AND r.request_key LIKE 'cart-%' ORDER BY r.request_key;
SELECT * FROM counts;
-- a later line names a SKU the tenant never stocked: IN002, nothing stored
-- and no slot changed (also when the slotted line before it is short)
SELECT status FROM inventory.reserve_lines('t150', 'cart-5',
  '[{"sku": "C", "quantity": 1}, {"sku": "ZZ", "quantity": 1}]', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t150', 'cart-5',
  '[{"sku": "C", "quantity": 1000}, {"sku": "ZZ", "quantity": 1}]', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t150', 'cart-5',
  '[{"sku": "C", "quantity": 1}, {"sku": "P", "quantity": 1000}, {"sku": "ZZ", "quantity": 1}]', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
SELECT status FROM inventory.lookup('t150', 'cart-5');
SELECT * FROM counts;
SELECT * FROM slots_ok;
SELECT * FROM broken ORDER BY tenant, sku, check_name;

------------------------------------------------------------------------
-- confirm, cancel, compensate, expire_due on slotted reservations
------------------------------------------------------------------------
-- D: 6 units over 3 slots (2, 2, 2)
SELECT inventory.restock('t150', 'rcpt-d', 'D', 6);
SELECT inventory.set_stock_slots('t150', 'D', 3) AS previous;
-- d1: 3 units, fallback: 2 from slot 0, 1 from slot 1; the 3 left spread
-- 1, 1, 1; reserved is 2, 1, 0
SELECT status, quantity FROM inventory.reserve('t150', 'd1', 'D', 3, '1 hour');
SELECT * FROM slots WHERE sku = 'D' ORDER BY tenant, sku, slot;
-- d2: 1 unit, from slot 0
SELECT status, quantity FROM inventory.reserve('t150', 'd2', 'D', 1, '10 minutes');
-- d3: 1 unit, from slot 1 (slot 0 is empty)
SELECT status, quantity FROM inventory.reserve('t150', 'd3', 'D', 1, '10 minutes');
SELECT * FROM slots WHERE sku = 'D' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'D' ORDER BY tenant, sku;
-- confirm d1 (3 units): slot 0 reserves 3 (2 + d2's 1): one slot
SELECT status, state, applied FROM inventory.confirm('t150', 'd1');
SELECT * FROM slots WHERE sku = 'D' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'D' ORDER BY tenant, sku;
-- cancel d3 (1 unit): reserved -> available in one slot
SELECT status, state, applied FROM inventory.cancel('t150', 'd3', 'changed mind');
SELECT * FROM slots WHERE sku = 'D' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'D' ORDER BY tenant, sku;
-- compensate d1 (3 units consumed in slot 0): consumed -> available
SELECT status, state, applied FROM inventory.compensate('t150', 'd1', 'fulfillment failed');
SELECT * FROM slots WHERE sku = 'D' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'D' ORDER BY tenant, sku;
-- d2 expires (10 minutes): expire_due releases its unit
SET pg_inventory.frozen_now = '2026-09-01 00:10:00+00';
SELECT inventory.expire_due() AS expired;
SELECT status, state FROM inventory.lookup('t150', 'd2');
SELECT * FROM slots WHERE sku = 'D' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'D' ORDER BY tenant, sku;
SELECT * FROM slots_ok;

-- E: the units of one reservation spread over several slots, so that
-- confirm, cancel, compensate and expire_due each must take from several
-- (no single slot holds the reservation's units)
SELECT inventory.restock('t150', 'rcpt-e', 'E', 8);
SELECT inventory.set_stock_slots('t150', 'E', 4) AS previous;
-- e1..e4: 2 units each, from slots 0..3 (2 each): reserved 2, 2, 2, 2
SELECT status FROM inventory.reserve('t150', 'e1', 'E', 2, '1 hour');
SELECT status FROM inventory.reserve('t150', 'e2', 'E', 2, '1 hour');
SELECT status FROM inventory.reserve('t150', 'e3', 'E', 2, '1 hour');
SELECT status FROM inventory.reserve('t150', 'e4', 'E', 2, '1 minute');
SELECT * FROM slots WHERE sku = 'E' ORDER BY tenant, sku, slot;
-- restock 12: spread 3 each, reserved stays
SELECT inventory.restock('t150', 'rcpt-e2', 'E', 12);
SELECT * FROM slots WHERE sku = 'E' ORDER BY tenant, sku, slot;
-- e5: 9 units; no slot holds 9 (3 each): fallback over all four slots,
-- then the 3 left are spread (1, 1, 1, 0)
SELECT status, quantity FROM inventory.reserve('t150', 'e5', 'E', 9, '1 hour');
SELECT * FROM slots WHERE sku = 'E' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'E' ORDER BY tenant, sku;
-- cancel e1 (2), then confirm e5 (9 reserved units; the most one slot
-- reserves is 5): the fallback takes from several slots
SELECT status, state, applied FROM inventory.cancel('t150', 'e1');
SELECT status, state, applied FROM inventory.confirm('t150', 'e5');
SELECT * FROM slots WHERE sku = 'E' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'E' ORDER BY tenant, sku;
-- compensate e5: 9 consumed units, in several slots
SELECT status, state, applied FROM inventory.compensate('t150', 'e5', 'lost in transit');
SELECT * FROM slots WHERE sku = 'E' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'E' ORDER BY tenant, sku;
-- a second compensate, confirm, cancel change nothing
SELECT status, state, applied FROM inventory.compensate('t150', 'e5', 'lost in transit');
SELECT status, state, applied FROM inventory.confirm('t150', 'e5');
SELECT status, state, applied FROM inventory.cancel('t150', 'e5');
SELECT * FROM stk WHERE sku = 'E' ORDER BY tenant, sku;
-- e4 expires at 00:11; expire_due releases its 2 units
SET pg_inventory.frozen_now = '2026-09-01 00:11:00+00';
SELECT inventory.expire_due() AS expired;
SELECT inventory.expire_due() AS expired;
SELECT * FROM slots WHERE sku = 'E' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'E' ORDER BY tenant, sku;
SELECT * FROM slots_ok;
SELECT * FROM broken ORDER BY tenant, sku, check_name;

------------------------------------------------------------------------
-- restock and adjust on a slotted SKU
------------------------------------------------------------------------
-- F: 10 units over 4 slots (3, 3, 2, 2); one reservation of 2 from slot 0
SELECT inventory.restock('t150', 'rcpt-f', 'F', 10);
SELECT inventory.set_stock_slots('t150', 'F', 4) AS previous;
SELECT status FROM inventory.reserve('t150', 'f1', 'F', 2, '1 hour');
SELECT * FROM slots WHERE sku = 'F' ORDER BY tenant, sku, slot;
DROP TABLE before;
CREATE TEMP TABLE before AS SELECT * FROM counts;
-- restock 5: available 8 + 5 = 13 spread 4, 3, 3, 3; reserved stays
SELECT inventory.restock('t150', 'rcpt-f2', 'F', 5);
SELECT * FROM slots WHERE sku = 'F' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'F' ORDER BY tenant, sku;
-- one ledger record and one event
SELECT c.ledger - b.ledger AS ledger_added, c.events - b.events AS events_added
  FROM counts c, before b;
SELECT kind, delta, available_after FROM inventory.stock_ledger
 WHERE tenant = 't150' AND request_key = 'rcpt-f2';
SELECT payload->>'available' AS available, payload->>'delta' AS delta FROM inventory.outbox
 WHERE tenant = 't150' AND payload->>'request_key' = 'rcpt-f2';
-- a loss of 6 (more than any slot holds, less than the total): 7 left,
-- spread 2, 2, 2, 1
SELECT inventory.adjust('t150', 'adj-f1', 'F', -6, 'loss', 'water damage');
SELECT * FROM slots WHERE sku = 'F' ORDER BY tenant, sku, slot;
-- a return of 1: 8, spread 2, 2, 2, 2
SELECT inventory.adjust('t150', 'adj-f2', 'F', 1, 'return', 'returned');
SELECT * FROM slots WHERE sku = 'F' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'F' ORDER BY tenant, sku;
SELECT c.ledger - b.ledger AS ledger_added, c.events - b.events AS events_added
  FROM counts c, before b;
-- replays return the stored count and write nothing, after other changes
SELECT status FROM inventory.reserve('t150', 'f2', 'F', 1, '1 hour');
DROP TABLE before;
CREATE TEMP TABLE before AS SELECT * FROM counts;
SELECT inventory.restock('t150', 'rcpt-f2', 'F', 5);
SELECT inventory.adjust('t150', 'adj-f1', 'F', -6, 'loss', 'another reason');
SELECT inventory.adjust('t150', 'adj-f2', 'F', 1, 'return', 'returned');
SELECT c.ledger - b.ledger AS ledger_added, c.events - b.events AS events_added
  FROM counts c, before b;
SELECT * FROM stk WHERE sku = 'F' ORDER BY tenant, sku;
-- available is 7 in total (2 reserved by f1, 1 by f2): a loss of 8 would
-- make the total negative: IN003 (not taken from reserved), nothing changed
DROP TABLE before;
CREATE TEMP TABLE before AS SELECT * FROM slots;
CREATE TEMP TABLE before_counts AS SELECT * FROM counts;
SELECT inventory.adjust('t150', 'adj-f3', 'F', -8, 'loss', 'too much');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t150', 'adj-f3', 'F', -8, 'correction', 'too much');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
SELECT (SELECT row(c.*) FROM counts c) = (SELECT row(b.*) FROM before_counts b) AS counts_unchanged;
-- exactly the 7: every slot at 0 available, reserved kept
SELECT inventory.adjust('t150', 'adj-f3', 'F', -7, 'correction', 'stock count');
SELECT * FROM slots WHERE sku = 'F' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'F' ORDER BY tenant, sku;
SELECT inventory.adjust('t150', 'adj-f4', 'F', -1, 'loss', 'nothing left');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM slots_ok;
SELECT * FROM broken ORDER BY tenant, sku, check_name;

------------------------------------------------------------------------
-- shrinking the slot count with pending and confirmed reservations
------------------------------------------------------------------------
-- G: 8 units over 4 slots (2 each); g1..g4 hold 2 each in slots 0..3,
-- g2 and g4 are confirmed; restock 6 (spread 2, 2, 1, 1)
SELECT inventory.restock('t150', 'rcpt-g', 'G', 8);
SELECT inventory.set_stock_slots('t150', 'G', 4) AS previous;
SELECT status FROM inventory.reserve('t150', 'g1', 'G', 2, '1 hour');
SELECT status FROM inventory.reserve('t150', 'g2', 'G', 2, '1 hour');
SELECT status FROM inventory.reserve('t150', 'g3', 'G', 2, '1 hour');
SELECT status FROM inventory.reserve('t150', 'g4', 'G', 2, '1 hour');
SELECT status FROM inventory.confirm('t150', 'g2');
SELECT status FROM inventory.confirm('t150', 'g4');
SELECT inventory.restock('t150', 'rcpt-g2', 'G', 6);
SELECT * FROM slots WHERE sku = 'G' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'G' ORDER BY tenant, sku;
DROP TABLE before_counts;
CREATE TEMP TABLE before_counts AS SELECT * FROM counts;
-- 4 -> 2: slots 2 and 3 go; their reserved (2) and consumed (2) move to
-- slot 0; 6 available spread 3, 3
SELECT inventory.set_stock_slots('t150', 'G', 2) AS previous;
SELECT * FROM slots WHERE sku = 'G' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'G' ORDER BY tenant, sku;
-- 2 -> 1: everything in slot 0
SELECT inventory.set_stock_slots('t150', 'G', 1) AS previous;
SELECT * FROM slots WHERE sku = 'G' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'G' ORDER BY tenant, sku;
SELECT (SELECT row(c.*) FROM counts c) = (SELECT row(b.*) FROM before_counts b) AS counts_unchanged;
-- later transitions of those reservations still work
SELECT status, state, applied FROM inventory.confirm('t150', 'g1');
SELECT status, state, applied FROM inventory.cancel('t150', 'g3');
SELECT status, state, applied FROM inventory.compensate('t150', 'g4', 'returned to sender');
SELECT * FROM slots WHERE sku = 'G' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'G' ORDER BY tenant, sku;
-- and back to 4 slots: reserved and consumed stay in slot 0, the 10
-- available are spread 3, 3, 2, 2; new reservations take from one slot
SELECT inventory.set_stock_slots('t150', 'G', 4) AS previous;
SELECT status FROM inventory.reserve('t150', 'g5', 'G', 3, '1 hour');
SELECT status FROM inventory.reserve('t150', 'g6', 'G', 3, '1 hour');
SELECT * FROM slots WHERE sku = 'G' ORDER BY tenant, sku, slot;
SELECT status, state, applied FROM inventory.compensate('t150', 'g2', 'damaged');
SELECT status, state, applied FROM inventory.confirm('t150', 'g6');
SELECT status, state, applied FROM inventory.cancel('t150', 'g5');
SELECT * FROM slots WHERE sku = 'G' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'G' ORDER BY tenant, sku;
SELECT * FROM slots_ok;

------------------------------------------------------------------------
-- the end of the workload: healthy
------------------------------------------------------------------------
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM slots_ok;
SELECT * FROM broken ORDER BY tenant, sku, check_name;
-- cross-check: reserved and consumed against the reservations' lines
SELECT v.sku, v.reserved, v.consumed,
       coalesce(sum(l.quantity) FILTER (WHERE r.state = 'pending'), 0) AS pending_lines,
       coalesce(sum(l.quantity) FILTER (WHERE r.state = 'confirmed'), 0) AS confirmed_lines
  FROM inventory.stock v
  LEFT JOIN inventory.reservation_line l ON l.tenant = v.tenant AND l.sku = v.sku
  LEFT JOIN inventory.reservation r ON r.id = l.reservation_id
 WHERE v.tenant = 't150'
 GROUP BY v.sku, v.reserved, v.consumed ORDER BY v.sku;

------------------------------------------------------------------------
-- hand changes: a superuser writing A's lowest slot directly (bypassing
-- the functions); check_invariants reports the counts no longer matching
-- the ledger; undoing it clears the report
------------------------------------------------------------------------
UPDATE inventory.stock_slot SET available = available + 1
 WHERE tenant = 't150' AND sku = 'A' AND location = 'default' AND slot = 0;
SELECT * FROM slots WHERE sku = 'A' ORDER BY tenant, sku, slot;
SELECT * FROM stk WHERE sku = 'A' ORDER BY tenant, sku;
SELECT * FROM broken ORDER BY tenant, sku, check_name;
UPDATE inventory.stock_slot SET available = available - 1
 WHERE tenant = 't150' AND sku = 'A' AND location = 'default' AND slot = 0;
SELECT * FROM slots WHERE sku = 'A' ORDER BY tenant, sku, slot;
SELECT * FROM broken ORDER BY tenant, sku, check_name;
-- nothing can be changed through the view, not even by a superuser: 0A000
-- (a correction is adjust, with a reason), and nothing changed
DROP TABLE before;
CREATE TEMP TABLE before AS SELECT * FROM slots;
UPDATE inventory.stock SET available = available + 1 WHERE tenant = 't150' AND sku = 'A';
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory.stock SET tenant = 't150-moved' WHERE tenant = 't150' AND sku = 'A';
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory.stock SET sku = 'A2' WHERE tenant = 't150' AND sku = 'A';
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory.stock SET slots = 2 WHERE tenant = 't150' AND sku = 'A';
\echo :LAST_ERROR_SQLSTATE
UPDATE inventory.stock SET slots = 2, available = available + 1 WHERE tenant = 't150' AND sku = 'A';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS slots_changed FROM
  ((SELECT * FROM slots EXCEPT SELECT * FROM before)
   UNION ALL (SELECT * FROM before EXCEPT SELECT * FROM slots)) d;
SELECT * FROM stk WHERE sku = 'A' ORDER BY tenant, sku;
SELECT * FROM broken ORDER BY tenant, sku, check_name;

-- 0.5: the stock level events of this file's tenants (the counts' events
-- include them): a SKU whose sellable units reached 0 and came back
SELECT tenant, event_type, payload ->> 'sku' AS sku, payload -> 'available' AS available
  FROM inventory.outbox
 WHERE tenant LIKE :'tenants'
   AND event_type IN ('stock.out_of_stock', 'stock.back_in_stock', 'stock.low')
 ORDER BY id;

DROP TABLE before;
DROP TABLE before_counts;
DROP OWNED BY regress_t150_app, regress_t150_operator;
DROP ROLE regress_t150_app;
DROP ROLE regress_t150_operator;
RESET pg_inventory.frozen_now;
