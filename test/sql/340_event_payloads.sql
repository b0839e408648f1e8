-- 340_event_payloads: the reservation.reserved event of a single-line
-- reserve is built in C (issue #12: the CPU of a call), that of a cart by
-- the statement's jsonb_build_object.  Both must write the payload the SQL
-- builder writes: the same keys and values (jsonb orders the keys), the
-- times in UTC as to_char(t AT TIME ZONE 'UTC',
-- 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') writes them whatever the session's
-- time zone, microseconds included, and a year past 9999 as to_char
-- writes it (more digits).  Checked by rebuilding every event here with
-- that SQL and comparing.
\set VERBOSITY sqlstate
SET TimeZone = 'America/New_York';
DROP EXTENSION pg_inventory CASCADE;
CREATE EXTENSION pg_inventory;
\set prefix t340
\ir include/tenant.sql
SET pg_inventory.frozen_now = '2030-01-01 12:34:56.000789+00';
SELECT inventory.restock('t340', 'open-a', 'sku-a', 100, 'opening stock') IS NOT NULL AS restocked;
SELECT inventory.restock('t340', 'open-b', 'sku-b', 100, 'opening stock') IS NOT NULL AS restocked;
-- tenant t340d has one location, depot, and t340m two (default and depot)
SELECT inventory.set_location('t340d', 'depot', 50) IS NOT NULL AS located;
SELECT inventory.restock_at('t340d', 'open-c', 'sku-c', 'depot', 100, 'opening stock') IS NOT NULL AS restocked;
SELECT inventory.restock('t340m', 'open-a', 'sku-a', 100, 'opening stock') IS NOT NULL AS restocked;
SELECT inventory.set_location('t340m', 'depot', 50) IS NOT NULL AS located;
SELECT inventory.restock_at('t340m', 'open-c', 'sku-c', 'depot', 100, 'opening stock') IS NOT NULL AS restocked;
-- one line at the tenant's only location (the take and the records in
-- one statement, the event built in C), a cart (built in SQL), one line
-- at another only location, one line of a tenant with two locations (the
-- allocation's path, the event built in C)
SELECT status FROM inventory.reserve('t340', 'k-one', 'sku-a', 2, interval '90 minutes 0.25 seconds');
SELECT status FROM inventory.reserve_lines('t340', 'k-cart',
	'[{"sku": "sku-b", "quantity": 1}, {"sku": "sku-a", "quantity": 3}]'::jsonb, interval '1 hour');
SELECT status FROM inventory.reserve('t340d', 'k-depot', 'sku-c', 1, interval '1 hour');
SELECT status FROM inventory.reserve('t340m', 'k-two-locations', 'sku-c', 1, interval '1 hour');
-- a replay of the first: the stored outcome, nothing written again
SELECT status, applied FROM inventory.reserve('t340', 'k-one', 'sku-a', 2, interval '90 minutes 0.25 seconds');
-- the clock in the last hour of year 9999: the hold expires in year 10000
SET pg_inventory.frozen_now = '9999-12-31 23:30:00+00';
SELECT status FROM inventory.reserve('t340', 'k-10000', 'sku-a', 1, interval '1 hour');
SELECT status FROM inventory.reserve_lines('t340', 'k-cart-10000',
	'[{"sku": "sku-a", "quantity": 1}, {"sku": "sku-b", "quantity": 1}]'::jsonb, interval '1 hour');
-- every reservation.reserved event against the SQL builder's payload
SELECT r.request_key,
       o.payload ->> 'expires_at' AS expires_at,
       o.payload ->> 'occurred_at' AS occurred_at,
       o.payload -> 'lines' AS lines,
       o.payload = jsonb_build_object('event_id', o.event_id,
           'event_type', 'reservation.reserved', 'tenant', r.tenant,
           'request_key', r.request_key, 'reservation_id', r.id,
           'state', 'pending', 'version', 1,
           'lines', (SELECT jsonb_agg(jsonb_build_object('sku', l.sku,
                         'location', l.location, 'quantity', l.quantity)
                         ORDER BY l.sku::text, l.location::text)
                       FROM inventory.reservation_line l WHERE l.reservation_id = r.id),
           'reason', NULL::text,
           'expires_at', to_char(r.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           'occurred_at', to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
         AS as_sql_builds_it
  FROM inventory.outbox o JOIN inventory.reservation r ON r.id = o.reservation_id
 WHERE o.tenant LIKE 't340%' AND o.event_type = 'reservation.reserved'
 ORDER BY o.id;
-- one line, one transition and one event per reservation
SELECT r.request_key,
       (SELECT count(*) FROM inventory.reservation_line l WHERE l.reservation_id = r.id) AS lines,
       (SELECT count(*) FROM inventory.reservation_transition t WHERE t.reservation_id = r.id) AS transitions,
       (SELECT count(*) FROM inventory.outbox o WHERE o.reservation_id = r.id) AS events
  FROM inventory.reservation r WHERE r.tenant LIKE 't340%' ORDER BY r.id;
SELECT * FROM counts;
SELECT count(*) AS broken_invariants FROM inventory.check_invariants() WHERE tenant LIKE 't340%';
