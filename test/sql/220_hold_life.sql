-- 220_hold_life: extend and amend a pending hold, and the reason of a
-- cancel or compensate in lookup and in the events (README "The life of a
-- hold", "extend", "amend", "Outbox and delivery").
--   extend: a later target applies; the same or an earlier one does not;
--   beyond 7 days after creation: 22023; a due hold is expired instead; a
--   finished one is reported unchanged;
--   amend: lower releases (lowest priority location first), higher takes
--   with the allocation policy, a new SKU is taken, a dropped SKU released;
--   the same target does not apply; short: insufficient, nothing changed;
--   a location key: 22023; the original reserve still replays.
\set VERBOSITY sqlstate
SET TimeZone = 'UTC';
\ir include/drain.sql
SET pg_inventory.frozen_now = '2026-07-04 00:00:00+00';

-- this file's tenants are t220...: counts, stk and :oc (include/tenant.sql)
\set prefix t220
\ir include/tenant.sql
\set ec 'status, state, applied, expires_at, lines, reason'
CREATE TEMP VIEW res AS
SELECT request_key, state, version, expires_at, reason
  FROM inventory.reservation WHERE tenant LIKE 't220%';
CREATE TEMP VIEW rlines AS
SELECT r.request_key, l.sku, l.location, l.quantity
  FROM inventory.reservation_line l
  JOIN inventory.reservation r ON r.id = l.reservation_id
 WHERE r.tenant LIKE 't220%';
CREATE TEMP VIEW log AS
SELECT r.request_key, t.from_state, t.to_state, t.reason, t.version
  FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant LIKE 't220%';
CREATE TEMP VIEW events AS
SELECT o.payload ->> 'request_key' AS request_key, o.event_type,
       (o.payload ->> 'version')::int AS version, o.payload ->> 'state' AS state,
       o.payload ->> 'expires_at' AS expires_at, o.payload -> 'lines' AS lines,
       o.payload ->> 'reason' AS reason
  FROM inventory.outbox o
 WHERE o.tenant LIKE 't220%' AND o.reservation_id IS NOT NULL;
CREATE TEMP VIEW lstk AS
SELECT sku, location, available, reserved, consumed
  FROM inventory.location_stock WHERE tenant = 't220';

-- hub (10): A 10, B 5; shop (20): A 10, C 5
SELECT inventory.set_location('t220', 'hub', 10);
SELECT inventory.set_location('t220', 'shop', 20);
SELECT inventory.restock_at('t220', 'r1', 'A', 'hub', 10);
SELECT inventory.restock_at('t220', 'r2', 'A', 'shop', 10);
SELECT inventory.restock_at('t220', 'r3', 'B', 'hub', 5);
SELECT inventory.restock_at('t220', 'r4', 'C', 'shop', 5);

------------------------------------------------------------------------
-- extend
------------------------------------------------------------------------
-- e1 created at 00:00, expires at 00:10
SELECT :ec FROM inventory.reserve('t220', 'e1', 'A', 2, '10 minutes');
SET pg_inventory.frozen_now = '2026-07-04 00:01:00+00';
-- a later target: applied, version 2, a pending -> pending log row
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-04 00:30:00+00');
SELECT * FROM res WHERE request_key = 'e1';
-- the same target again, an earlier one, one in the past: nothing changes
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-04 00:30:00+00');
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-04 00:20:00+00');
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-03 00:00:00+00');
SELECT * FROM res WHERE request_key = 'e1';
-- at most 7 days after creation: exactly 7 days applies, a microsecond
-- more is 22023 (whatever the current expiry)
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-11 00:00:00.000001+00');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-11 00:00:00+00');
SELECT :ec FROM inventory.extend('t220', 'e1', '2026-07-11 00:00:00.000001+00');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.extend('t220', 'e1', 'infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.extend('t220', 'e1', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM res WHERE request_key = 'e1';
SELECT * FROM log WHERE request_key = 'e1' ORDER BY version;
SELECT request_key, event_type, version, state, expires_at FROM events
 WHERE request_key = 'e1' ORDER BY version;
-- the units stay held; no ledger row
SELECT * FROM stk ORDER BY tenant, sku;
-- unknown key
SELECT :ec FROM inventory.extend('t220', 'nope', '2026-07-04 01:00:00+00');

-- a due hold: extend expires it (applied), the units come back
SELECT :ec FROM inventory.reserve('t220', 'e2', 'A', 1, '5 minutes');
SELECT * FROM lstk WHERE sku = 'A' ORDER BY location;
SET pg_inventory.frozen_now = '2026-07-04 00:06:00+00';
SELECT :ec FROM inventory.extend('t220', 'e2', '2026-07-04 01:00:00+00');
SELECT :ec FROM inventory.extend('t220', 'e2', '2026-07-04 01:00:00+00');
SELECT * FROM res WHERE request_key = 'e2';
SELECT * FROM lstk WHERE sku = 'A' ORDER BY location;
-- finished holds are reported unchanged
SELECT status FROM inventory.reserve('t220', 'e3', 'A', 1, '1 hour');
SELECT status FROM inventory.confirm('t220', 'e3');
SELECT :ec FROM inventory.extend('t220', 'e3', '2026-07-04 02:00:00+00');
SELECT status FROM inventory.reserve('t220', 'e4', 'A', 1, '1 hour');
SELECT status FROM inventory.cancel('t220', 'e4', 'not wanted');
SELECT :ec FROM inventory.extend('t220', 'e4', '2026-07-04 02:00:00+00');
SELECT status FROM inventory.reserve('t220', 'e5', 'A', 1000, '1 hour');
SELECT :ec FROM inventory.extend('t220', 'e5', '2026-07-04 02:00:00+00');
SELECT * FROM res WHERE request_key IN ('e3', 'e4', 'e5') ORDER BY request_key;
SELECT * FROM counts;

------------------------------------------------------------------------
-- amend
------------------------------------------------------------------------
SET pg_inventory.frozen_now = '2026-07-04 00:10:00+00';
-- m1: A 3, B 2, both at hub
SELECT :ec FROM inventory.reserve_lines('t220', 'm1',
  '[{"sku": "A", "quantity": 3}, {"sku": "B", "quantity": 2}]', '1 hour');
SELECT * FROM lstk ORDER BY sku, location;
SELECT request FROM inventory.reservation WHERE tenant = 't220' AND request_key = 'm1';
-- lower A: 2 units go back to hub; version 2
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 2}]');
SELECT * FROM lstk ORDER BY sku, location;
-- the original request is kept for replays of the reserve
SELECT request FROM inventory.reservation WHERE tenant = 't220' AND request_key = 'm1';
-- the same target (in another order, split): not applied, nothing written
SELECT * FROM counts;
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "B", "quantity": 1}, {"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1}]');
SELECT * FROM counts;
-- higher A (+3): hub can give them
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 4}, {"sku": "B", "quantity": 2}]');
-- a new SKU: C (only at shop)
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 4}, {"sku": "B", "quantity": 2}, {"sku": "C", "quantity": 1}]');
-- a dropped SKU: B's 2 go back to hub
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 4}, {"sku": "C", "quantity": 1}]');
SELECT * FROM rlines WHERE request_key = 'm1' ORDER BY sku, location;
SELECT * FROM lstk ORDER BY sku, location;
-- higher A (+6): hub has 3 left (10 - e1's 2 - e3's 1 - m1's 4), so the
-- 6 come whole from shop
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 10}, {"sku": "C", "quantity": 1}]');
SELECT * FROM rlines WHERE request_key = 'm1' ORDER BY sku, location;
-- lower A by 5: released from the lowest priority location first (shop)
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 5}, {"sku": "C", "quantity": 1}]');
SELECT * FROM rlines WHERE request_key = 'm1' ORDER BY sku, location;
-- lower A by 3: shop's last 1, then 2 from hub
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 2}, {"sku": "C", "quantity": 1}]');
SELECT * FROM rlines WHERE request_key = 'm1' ORDER BY sku, location;
SELECT * FROM lstk ORDER BY sku, location;
-- short (C: 5 at shop, 1 held by m1): insufficient, still pending, nothing
-- changed
SELECT * FROM counts;
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 2}, {"sku": "C", "quantity": 6}]');
SELECT * FROM rlines WHERE request_key = 'm1' ORDER BY sku, location;
SELECT * FROM lstk ORDER BY sku, location;
SELECT * FROM res WHERE request_key = 'm1';
SELECT * FROM counts;
-- refused: a location key, an unknown SKU, bad lines; nothing changed
SELECT :ec FROM inventory.amend('t220', 'm1',
  '[{"sku": "A", "quantity": 2, "location": "hub"}, {"sku": "C", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.amend('t220', 'm1', '[{"sku": "NOPE", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.amend('t220', 'm1', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.amend('t220', 'm1', '[{"sku": "A", "quantity": 0}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.amend('t220', 'm1', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM counts;
-- the log and the events: one pending -> pending row and one
-- reservation.amended event per applied amend, versions 2..8
SELECT * FROM log WHERE request_key = 'm1' ORDER BY version;
SELECT request_key, event_type, version, state, lines FROM events
 WHERE request_key = 'm1' ORDER BY version;
-- a replay of the original reserve still matches (the stored outcome,
-- applied false); the amended lines as a reserve are another payload
SELECT :ec FROM inventory.reserve_lines('t220', 'm1',
  '[{"sku": "B", "quantity": 2}, {"sku": "A", "quantity": 3}]', '1 hour');
SELECT :ec FROM inventory.reserve_lines('t220', 'm1',
  '[{"sku": "A", "quantity": 2}, {"sku": "C", "quantity": 1}]', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT :ec FROM inventory.lookup('t220', 'm1');
-- confirm takes what the hold holds now
SELECT :ec FROM inventory.confirm('t220', 'm1');
SELECT * FROM lstk ORDER BY sku, location;
-- a finished hold: reported, not changed
SELECT :ec FROM inventory.amend('t220', 'm1', '[{"sku": "A", "quantity": 1}]');
SELECT :ec FROM inventory.amend('t220', 'e4', '[{"sku": "A", "quantity": 1}]');
SELECT :ec FROM inventory.amend('t220', 'e5', '[{"sku": "A", "quantity": 1}]');
SELECT :ec FROM inventory.amend('t220', 'nope', '[{"sku": "A", "quantity": 1}]');
-- a due hold: amend expires it, as confirm would
SELECT status FROM inventory.reserve('t220', 'm2', 'A', 1, '5 minutes');
SET pg_inventory.frozen_now = '2026-07-04 00:15:00+00';
SELECT :ec FROM inventory.amend('t220', 'm2', '[{"sku": "A", "quantity": 2}]');
SELECT * FROM res WHERE request_key = 'm2';
-- an amended hold expires with what it holds now
SELECT status FROM inventory.reserve('t220', 'm3', 'A', 1, '5 minutes');
SELECT :ec FROM inventory.amend('t220', 'm3',
  '[{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}]');
SET pg_inventory.frozen_now = '2026-07-04 00:20:00+00';
SELECT inventory.expire_due() AS expired;
SELECT * FROM res WHERE request_key = 'm3';
SELECT * FROM lstk ORDER BY sku, location;
-- an expiry reads the same whoever performed it (extend, amend, expire_due)
SELECT request_key, event_type, version, reason FROM events
 WHERE event_type = 'reservation.expired' ORDER BY request_key;
-- an extended hold's version follows its amends, and the reverse
SELECT status FROM inventory.reserve('t220', 'm4', 'B', 1, '5 minutes');
SELECT :ec FROM inventory.extend('t220', 'm4', '2026-07-04 01:00:00+00');
SELECT :ec FROM inventory.amend('t220', 'm4', '[{"sku": "B", "quantity": 2}]');
SELECT :ec FROM inventory.extend('t220', 'm4', '2026-07-04 02:00:00+00');
SELECT * FROM log WHERE request_key = 'm4' ORDER BY version;
SELECT request_key, event_type, version, state, expires_at FROM events
 WHERE request_key = 'm4' ORDER BY version;

------------------------------------------------------------------------
-- reasons: outcome.reason, lookup and the events carry the reason given
-- to cancel and compensate
------------------------------------------------------------------------
SELECT status FROM inventory.reserve('t220', 'c1', 'A', 1, '1 hour');
SELECT :ec FROM inventory.cancel('t220', 'c1', 'changed mind');
SELECT :ec FROM inventory.lookup('t220', 'c1');
SELECT status FROM inventory.reserve('t220', 'c2', 'A', 1, '1 hour');
SELECT status FROM inventory.confirm('t220', 'c2');
SELECT :ec FROM inventory.compensate('t220', 'c2', 'fulfillment failed');
SELECT :ec FROM inventory.lookup('t220', 'c2');
SELECT status FROM inventory.reserve('t220', 'c3', 'A', 1, '1 hour');
SELECT :ec FROM inventory.cancel('t220', 'c3');
SELECT :ec FROM inventory.lookup('t220', 'c3');
SELECT request_key, event_type, version, reason FROM events
 WHERE request_key IN ('c1', 'c2', 'c3') ORDER BY request_key, version;

------------------------------------------------------------------------
-- healthy afterwards
------------------------------------------------------------------------
SELECT * FROM stk ORDER BY tenant, sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't220%' ORDER BY 1, 2, 3;
