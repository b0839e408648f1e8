-- 040_expiry: the expiry boundary (clock >= expires_at, inclusive) with a
-- pinned clock; confirm, cancel and compensate performing the expiry of a
-- due reservation; lookup and replays reporting the effective state;
-- expire_due's boundary, order, max_rows and count (README "Expiry
-- boundary", "expire_due").
\set VERBOSITY sqlstate

-- expire_due acts on every tenant: first expire what earlier test files
-- left pending, so that the counts below are this file's alone
\ir include/drain.sql

SET pg_inventory.frozen_now = '2026-03-01 00:00:00+00';

-- this file's tenants are t040...: counts, stk and :oc (include/tenant.sql)
\set prefix t040
\ir include/tenant.sql
-- stored state of each reservation
CREATE TEMP VIEW res AS
SELECT tenant, request_key, state, version FROM inventory.reservation
 WHERE tenant LIKE 't040%';

SELECT inventory.restock('t040', 'rcpt-1', 'A', 10);
SELECT inventory.restock('t040-b', 'rcpt-1', 'A', 10);

-- T = 2026-03-01 00:00: two reservations expiring at T + 10 minutes
SELECT :oc FROM inventory.reserve('t040', 'a1', 'A', 1, '10 minutes');
SELECT :oc FROM inventory.reserve('t040', 'a2', 'A', 2, '10 minutes');
SELECT * FROM stk ORDER BY tenant, sku;

-- 1 microsecond before expiry: still pending, confirm succeeds
SET pg_inventory.frozen_now = '2026-03-01 00:09:59.999999+00';
SELECT :oc FROM inventory.lookup('t040', 'a1');
SELECT :oc FROM inventory.confirm('t040', 'a1');
SELECT :oc FROM inventory.lookup('t040', 'a2');
SELECT * FROM stk ORDER BY tenant, sku;

-- exactly at expiry: lookup and a reserve replay report the effective
-- state expired while the stored state is still pending, and write nothing
SET pg_inventory.frozen_now = '2026-03-01 00:10:00+00';
SELECT * FROM counts;
SELECT :oc FROM inventory.lookup('t040', 'a2');
SELECT :oc FROM inventory.reserve('t040', 'a2', 'A', 2, '10 minutes');
SELECT * FROM res WHERE request_key = 'a2';
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- a confirmed reservation does not expire
SELECT :oc FROM inventory.lookup('t040', 'a1');

-- confirm at expiry performs the expiry: status expired, applied true,
-- the units go back to available once, a log row and an event are written
SELECT :oc FROM inventory.confirm('t040', 'a2');
SELECT * FROM res WHERE request_key = 'a2';
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
-- and only once: a second confirm, a cancel and expire_due change nothing
SELECT :oc FROM inventory.confirm('t040', 'a2');
SELECT :oc FROM inventory.cancel('t040', 'a2');
SELECT inventory.expire_due() AS expired;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT o.payload ->> 'request_key' AS request_key, o.event_type, o.payload ->> 'state' AS state
  FROM inventory.outbox o
 WHERE o.tenant = 't040' AND o.reservation_id IS NOT NULL ORDER BY o.id;

-- cancel and compensate on a due pending reservation perform the expiry too
SET pg_inventory.frozen_now = '2026-03-01 01:00:00+00';
SELECT :oc FROM inventory.reserve('t040', 'c1', 'A', 1, '5 minutes');
SELECT :oc FROM inventory.reserve('t040', 'c2', 'A', 1, '5 minutes');
SELECT * FROM stk ORDER BY tenant, sku;
SET pg_inventory.frozen_now = '2026-03-01 01:05:00+00';
SELECT :oc FROM inventory.cancel('t040', 'c1', 'changed mind');
SELECT :oc FROM inventory.compensate('t040', 'c2', 'fulfillment failed');
SELECT * FROM res WHERE request_key IN ('c1', 'c2') ORDER BY request_key;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT :oc FROM inventory.cancel('t040', 'c1', 'changed mind');
SELECT :oc FROM inventory.compensate('t040', 'c2', 'fulfillment failed');
SELECT * FROM stk ORDER BY tenant, sku;
SELECT r.request_key, t.from_state, t.to_state, t.version
  FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant = 't040' AND r.request_key IN ('a2', 'c1', 'c2')
 ORDER BY r.request_key, t.version;

-- expire_due: due at exactly expires_at, not 1 microsecond before; oldest
-- first, at most max_rows; returns how many it expired
SET pg_inventory.frozen_now = '2026-03-01 02:00:00+00';
SELECT :oc FROM inventory.reserve('t040', 'b1', 'A', 1, '10 minutes');
SELECT :oc FROM inventory.reserve('t040-b', 'b2', 'A', 1, '20 minutes');
SELECT :oc FROM inventory.reserve('t040', 'b3', 'A', 1, '30 minutes');
SELECT :oc FROM inventory.reserve('t040', 'b4', 'A', 1, '40 minutes');
SELECT * FROM stk ORDER BY tenant, sku;
SET pg_inventory.frozen_now = '2026-03-01 02:09:59.999999+00';
SELECT inventory.expire_due() AS expired;
SELECT * FROM res WHERE request_key LIKE 'b%' ORDER BY request_key;
SET pg_inventory.frozen_now = '2026-03-01 02:10:00+00';
SELECT * FROM counts;
SELECT inventory.expire_due() AS expired;
SELECT * FROM res WHERE request_key LIKE 'b%' ORDER BY request_key;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT inventory.expire_due() AS expired;
SELECT * FROM counts;
SELECT :oc FROM inventory.lookup('t040', 'b1');
-- all three others due: max_rows 2 takes the two oldest (b2, b3)
SET pg_inventory.frozen_now = '2026-03-01 02:40:00+00';
SELECT inventory.expire_due(2) AS expired;
SELECT * FROM res WHERE request_key LIKE 'b%' ORDER BY request_key;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT inventory.expire_due(2) AS expired;
SELECT inventory.expire_due(2) AS expired;
SELECT * FROM res WHERE request_key LIKE 'b%' ORDER BY request_key;
SELECT * FROM stk ORDER BY tenant, sku;
SELECT r.request_key, t.from_state, t.to_state, t.version
  FROM inventory.reservation_transition t
  JOIN inventory.reservation r ON r.id = t.reservation_id
 WHERE r.tenant LIKE 't040%' AND r.request_key LIKE 'b%'
 ORDER BY r.request_key, t.version;
SELECT o.payload ->> 'request_key' AS request_key, o.event_type
  FROM inventory.outbox o
 WHERE o.tenant LIKE 't040%' AND o.payload ->> 'request_key' LIKE 'b%'
 ORDER BY 1, o.id;

-- max_rows must be at least 1: 22023, nothing changed
SELECT :oc FROM inventory.reserve('t040', 'd1', 'A', 1, '1 minute');
SET pg_inventory.frozen_now = '2026-03-01 02:41:00+00';
SELECT * FROM counts;
SELECT inventory.expire_due(0);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.expire_due(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.expire_due(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM res WHERE request_key = 'd1';
SELECT * FROM counts;
SELECT inventory.expire_due(1) AS expired;
SELECT * FROM res WHERE request_key = 'd1';

SELECT * FROM stk ORDER BY tenant, sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't040%' ORDER BY 1, 2, 3;
