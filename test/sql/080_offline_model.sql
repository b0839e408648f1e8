-- 080_offline_model: the offline model of the reservation lifecycle,
-- re-expressed in SQL with the pinned clock: two synthetic units, one
-- reservation R-1 that is reserved once, replayed without effect, expired
-- once by expire_due, and leaves both units available.
\set VERBOSITY sqlstate

-- expire_due acts on every tenant: first expire what earlier test files
-- left pending, so that its counts below are this model's alone
\ir include/drain.sql

SET pg_inventory.frozen_now = '2026-07-01 00:00:00+00';
CREATE TEMP VIEW model AS
SELECT s.available, s.reserved, s.consumed,
       (SELECT count(*) FROM inventory.reservation r WHERE r.tenant = 't080') AS reservations,
       (SELECT count(*) FROM inventory.reservation_transition t
          JOIN inventory.reservation r ON r.id = t.reservation_id
         WHERE r.tenant = 't080') AS transitions,
       (SELECT count(*) FROM inventory.outbox o WHERE o.tenant = 't080') AS events
  FROM inventory.stock s WHERE s.tenant = 't080' AND s.sku = 'unit';

-- two synthetic units
SELECT inventory.restock('t080', 'stock-in', 'unit', 2);
SELECT * FROM model;

-- reserve R-1 (one unit, ttl 10 minutes) succeeds
SELECT status, state, applied, quantity,
       expires_at = timestamptz '2026-07-01 00:10:00+00' AS expires_at_t_plus_ttl
  FROM inventory.reserve('t080', 'R-1', 'unit', 1, '10 minutes');
SELECT * FROM model;

-- a second reserve of R-1 changes nothing
SELECT status, state, applied, quantity
  FROM inventory.reserve('t080', 'R-1', 'unit', 1, '10 minutes');
SELECT * FROM model;

-- not yet due: expire_due changes nothing
SET pg_inventory.frozen_now = '2026-07-01 00:09:59+00';
SELECT inventory.expire_due() AS expired;
SELECT * FROM model;

-- once R-1 is due, expire_due expires it, and a second call changes nothing
SET pg_inventory.frozen_now = '2026-07-01 00:10:01+00';
SELECT inventory.expire_due() AS expired;
SELECT * FROM model;
SELECT inventory.expire_due() AS expired;
SELECT * FROM model;

-- final state: R-1 expired, both units available
SELECT request_key, state, version FROM inventory.reservation
 WHERE tenant = 't080' ORDER BY request_key;
SELECT status, state, applied FROM inventory.lookup('t080', 'R-1');
SELECT status, state, applied FROM inventory.reserve('t080', 'R-1', 'unit', 1, '10 minutes');
SELECT * FROM model;
SELECT event_type FROM inventory.outbox WHERE tenant = 't080' ORDER BY id;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant = 't080' ORDER BY 1, 2, 3;
