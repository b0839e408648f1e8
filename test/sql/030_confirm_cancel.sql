-- 030_confirm_cancel: every row of the status table of confirm, cancel
-- and compensate, the applied flag, and units moved exactly once
-- (README "Functions", "confirm", "cancel", "compensate").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-01-01 00:00:00+00';

-- this file's tenants are t030...: counts, stk and :oc (include/tenant.sql)
\set prefix t030
\ir include/tenant.sql

SELECT inventory.restock('t030', 'rcpt-1', 'A', 10);
SELECT inventory.restock('t030', 'rcpt-2', 'B', 10);

-- confirm: pending -> confirmed, reserved units become consumed
SELECT :oc FROM inventory.reserve('t030', 'c1', 'A', 3, '1 hour');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT :oc FROM inventory.confirm('t030', 'c1');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- confirm of a confirmed reservation: confirmed, applied false, nothing moves
SELECT :oc FROM inventory.confirm('t030', 'c1');
-- cancel cannot release a confirmed reservation: it reports confirmed
SELECT :oc FROM inventory.cancel('t030', 'c1', 'too late');
SELECT :oc FROM inventory.cancel('t030', 'c1');
-- the reserve replay reports the effective state
SELECT :oc FROM inventory.reserve('t030', 'c1', 'A', 3);
SELECT :oc FROM inventory.lookup('t030', 'c1');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- compensate needs a reason: NULL and empty are 22023, nothing changes
SELECT :oc FROM inventory.compensate('t030', 'c1', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.compensate('t030', 'c1', '');
\echo :LAST_ERROR_SQLSTATE
SELECT state, version FROM inventory.reservation WHERE tenant = 't030' AND request_key = 'c1';
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- compensate: confirmed -> compensated, units go from consumed back to
-- available exactly once
SELECT :oc FROM inventory.compensate('t030', 'c1', 'courier lost the parcel');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT :oc FROM inventory.compensate('t030', 'c1', 'courier lost the parcel');
SELECT :oc FROM inventory.compensate('t030', 'c1', 'another reason');
SELECT :oc FROM inventory.confirm('t030', 'c1');
SELECT :oc FROM inventory.cancel('t030', 'c1');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT state, version, reason FROM inventory.reservation
 WHERE tenant = 't030' AND request_key = 'c1';

-- cancel: pending -> cancelled, units go back to available; NULL reason ok
SELECT :oc FROM inventory.reserve('t030', 'x1', 'A', 4, '1 hour');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT :oc FROM inventory.cancel('t030', 'x1', NULL);
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT :oc FROM inventory.cancel('t030', 'x1', NULL);
SELECT :oc FROM inventory.cancel('t030', 'x1', 'again');
SELECT :oc FROM inventory.confirm('t030', 'x1');
SELECT :oc FROM inventory.compensate('t030', 'x1', 'nothing to compensate');
SELECT :oc FROM inventory.lookup('t030', 'x1');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- cancel with a reason (default argument list: reason given by name)
SELECT :oc FROM inventory.reserve('t030', 'x2', 'A', 1, '1 hour');
SELECT :oc FROM inventory.cancel('t030', 'x2', reason => 'customer changed their mind');
SELECT t.from_state, t.to_state, t.reason, t.version
  FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant = 't030' AND r.request_key = 'x2' ORDER BY t.version;
SELECT * FROM stk ORDER BY tenant, sku;

-- compensate of a pending reservation: status pending, nothing changes
SELECT :oc FROM inventory.reserve('t030', 'p1', 'B', 2, '1 hour');
SELECT * FROM counts;
SELECT :oc FROM inventory.compensate('t030', 'p1', 'not fulfilled yet');
SELECT state, version FROM inventory.reservation WHERE tenant = 't030' AND request_key = 'p1';
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- it can still be confirmed afterwards
SELECT :oc FROM inventory.confirm('t030', 'p1');
SELECT * FROM stk ORDER BY tenant, sku;

-- a stored rejection: every call reports insufficient, nothing changes
SELECT :oc FROM inventory.reserve('t030', 'r1', 'B', 100, '1 hour');
SELECT * FROM counts;
SELECT :oc FROM inventory.confirm('t030', 'r1');
SELECT :oc FROM inventory.cancel('t030', 'r1', 'no stock');
SELECT :oc FROM inventory.compensate('t030', 'r1', 'no stock');
SELECT state, version FROM inventory.reservation WHERE tenant = 't030' AND request_key = 'r1';
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- an expired reservation: every call reports expired; the first one (the
-- confirm that finds it due) performs the expiry (see 040_expiry)
SELECT :oc FROM inventory.reserve('t030', 'e1', 'B', 1, '1 minute');
SELECT * FROM stk ORDER BY tenant, sku;
SET pg_inventory.frozen_now = '2026-01-01 00:01:00+00';
SELECT :oc FROM inventory.confirm('t030', 'e1');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT :oc FROM inventory.confirm('t030', 'e1');
SELECT :oc FROM inventory.cancel('t030', 'e1');
SELECT :oc FROM inventory.compensate('t030', 'e1', 'expired anyway');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;

-- an unknown key: not_found, nothing stored
SELECT :oc FROM inventory.confirm('t030', 'nothing');
SELECT :oc FROM inventory.cancel('t030', 'nothing', 'why not');
SELECT :oc FROM inventory.compensate('t030', 'nothing', 'why not');
SELECT :oc FROM inventory.lookup('t030', 'nothing');
-- keys are scoped by tenant: t030's key is unknown to another tenant
SELECT :oc FROM inventory.confirm('t030-other', 'c1');
SELECT :oc FROM inventory.cancel('t030-other', 'x1');
SELECT * FROM counts;

-- the transition log of each reservation, in order
SELECT r.request_key, t.from_state, t.to_state, t.version
  FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant = 't030' ORDER BY r.request_key, t.version;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't030%' ORDER BY 1, 2, 3;
