-- 200_allocation: the allocation policy, every branch, on three locations
-- hub (priority 10), store-b and store-a (both priority 20: store-a serves
-- before store-b by name, although store-b was made first):
--   1. one location serves every unpinned line (the first by priority, then
--      name), even when a line alone could come from an earlier one;
--   2. else each line from its own first location that can serve it whole;
--   3. else, with allow_split, a line no location can serve whole is filled
--      from the locations in order;
--   4. else insufficient, with per line what was requested and what was
--      sellable (outcome.lines, lookup, reservation_line);
-- pinned lines (also at an inactive location, an unknown one: IN004),
-- inactive locations never allocated, safety stock never taken, replays
-- returning the stored allocation, and the idempotency payload: a pinned
-- location is part of it (IN001), the policy's allocation is not
-- (README "Locations and allocation", "The allocation policy",
-- "reserve_lines", "set_allocation_policy", "set_stock_policy").
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-07-02 00:00:00+00';

-- this file's tenants are t200...: counts, stk and :oc (include/tenant.sql)
\set prefix t200
\ir include/tenant.sql
CREATE TEMP VIEW lstk AS
SELECT tenant, sku, location, available, reserved, safety_stock, sellable
  FROM inventory.location_stock WHERE tenant LIKE 't200%';
-- the stored lines of a reservation, with where they are held and, for a
-- rejected one, what was sellable
CREATE TEMP VIEW rlines AS
SELECT r.tenant, r.request_key, r.state, l.sku, l.location, l.quantity, l.available
  FROM inventory.reservation_line l
  JOIN inventory.reservation r ON r.id = l.reservation_id
 WHERE r.tenant LIKE 't200%';

-- a tenant with the three locations and P, Q stocked at each as given (0:
-- never stocked there); store-b is made before store-a
CREATE FUNCTION pg_temp.shop(t text, hub_p int, hub_q int, a_p int, a_q int,
                             b_p int, b_q int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	s record;
BEGIN
	PERFORM inventory.set_location(t, 'hub', 10);
	PERFORM inventory.set_location(t, 'store-b', 20);
	PERFORM inventory.set_location(t, 'store-a', 20);
	FOR s IN SELECT * FROM (VALUES ('hub', 'P', hub_p), ('hub', 'Q', hub_q),
	                               ('store-a', 'P', a_p), ('store-a', 'Q', a_q),
	                               ('store-b', 'P', b_p), ('store-b', 'Q', b_q)) v(loc, sku, n)
	          WHERE n > 0 LOOP
		PERFORM inventory.restock_at(t, 'rcpt-' || s.loc || '-' || s.sku, s.sku, s.loc, s.n);
	END LOOP;
END
$$;

------------------------------------------------------------------------
-- 1. one location serves the whole cart: the first by priority
------------------------------------------------------------------------
SELECT pg_temp.shop('t200-all', 5, 5, 5, 5, 5, 5);
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-all', 'c1',
  '[{"sku": "P", "quantity": 2}, {"sku": "Q", "quantity": 2}]');
SELECT * FROM rlines WHERE tenant = 't200-all' ORDER BY request_key, sku, location;
SELECT * FROM lstk WHERE tenant = 't200-all' ORDER BY sku, location;
-- an unpinned request stores no separate request payload
SELECT request_key, request FROM inventory.reservation WHERE tenant = 't200-all';
-- the single-line reserve follows the same policy
SELECT :oc, lines FROM inventory.reserve('t200-all', 'c2', 'Q', 3);

-- 1b. ties by name, and one location for all before one per line: hub
-- could give P but not Q; store-a and store-b (same priority) could give
-- both: store-a (name order) gives both, nothing comes from hub
SELECT pg_temp.shop('t200-tie', 5, 1, 5, 5, 5, 5);
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-tie', 'c1',
  '[{"sku": "Q", "quantity": 2}, {"sku": "P", "quantity": 2}]');
SELECT * FROM lstk WHERE tenant = 't200-tie' ORDER BY sku, location;

------------------------------------------------------------------------
-- 2. no location can give every line: each line from its own first
-- location that can serve it whole (P: hub; Q: hub has 1, store-a none,
-- store-b 5)
------------------------------------------------------------------------
SELECT pg_temp.shop('t200-each', 5, 1, 1, 0, 0, 5);
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-each', 'c1',
  '[{"sku": "P", "quantity": 2}, {"sku": "Q", "quantity": 2}]');
SELECT * FROM rlines WHERE tenant = 't200-each' ORDER BY request_key, sku, location;
SELECT * FROM lstk WHERE tenant = 't200-each' ORDER BY sku, location;

------------------------------------------------------------------------
-- 3./4. a line no single location can serve: insufficient unless the
-- tenant allows splitting.  P: 2 at each location (6); Q: 3 at store-b
------------------------------------------------------------------------
SELECT pg_temp.shop('t200-split', 2, 0, 2, 0, 2, 3);
-- no policy row: allow_split is false
SELECT * FROM inventory.allocation_policy WHERE tenant = 't200-split';
SELECT :oc, lines FROM inventory.reserve_lines('t200-split', 'no-split',
  '[{"sku": "P", "quantity": 5}, {"sku": "Q", "quantity": 1}]');
-- the rejection keeps per line what was asked and what was sellable over
-- all active locations (P 6, Q 3); lookup says the same
SELECT :oc, lines FROM inventory.lookup('t200-split', 'no-split');
SELECT * FROM rlines WHERE tenant = 't200-split' ORDER BY request_key, sku, location;
SELECT * FROM lstk WHERE tenant = 't200-split' ORDER BY sku, location;
SELECT * FROM counts;

-- set_allocation_policy: true when it changed something
SELECT inventory.set_allocation_policy('t200-split', true) AS changed;
SELECT inventory.set_allocation_policy('t200-split', true) AS changed;
SELECT tenant, allow_split FROM inventory.allocation_policy WHERE tenant = 't200-split';
SELECT inventory.set_allocation_policy('t200-split', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_allocation_policy('*', true);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_allocation_policy('', true);
\echo :LAST_ERROR_SQLSTATE

-- with allow_split: Q whole from store-b (its first location with 3), P
-- split over hub 2, store-a 2, store-b 1 (in policy order)
SELECT :oc, lines FROM inventory.reserve_lines('t200-split', 'split',
  '[{"sku": "P", "quantity": 5}, {"sku": "Q", "quantity": 1}]');
SELECT * FROM rlines WHERE tenant = 't200-split' AND request_key = 'split'
 ORDER BY sku, location;
SELECT * FROM lstk WHERE tenant = 't200-split' ORDER BY sku, location;
-- the earlier rejection stays frozen
SELECT :oc, lines FROM inventory.reserve_lines('t200-split', 'no-split',
  '[{"sku": "P", "quantity": 5}, {"sku": "Q", "quantity": 1}]');
-- splitting cannot make more than there is: 1 P left in all
SELECT :oc, lines FROM inventory.reserve('t200-split', 'too-many', 'P', 2);
SELECT inventory.set_allocation_policy('t200-split', false) AS changed;
SELECT tenant, allow_split FROM inventory.allocation_policy WHERE tenant = 't200-split';

------------------------------------------------------------------------
-- pinned lines: held only at their location
------------------------------------------------------------------------
SELECT pg_temp.shop('t200-pin', 5, 5, 5, 5, 5, 5);
-- P pinned at store-b, Q by the policy (hub)
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-pin', 'pin1',
  '[{"sku": "P", "quantity": 2, "location": "store-b"}, {"sku": "Q", "quantity": 2}]');
-- the request keeps the pin (canonical: sku, then location with NULL first)
SELECT request_key, request FROM inventory.reservation
 WHERE tenant = 't200-pin' AND request_key = 'pin1';
-- 4 P pinned at hub leave 1 there: the unpinned P (2) goes to store-a
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-pin', 'pin2',
  '[{"sku": "P", "quantity": 2}, {"sku": "P", "quantity": 4, "location": "hub"}]');
SELECT request FROM inventory.reservation WHERE tenant = 't200-pin' AND request_key = 'pin2';
SELECT * FROM lstk WHERE tenant = 't200-pin' ORDER BY sku, location;
-- a pinned line short at its location is insufficient, whatever the others
-- hold (hub has 1 P, store-a 3, store-b 3); the available is the pinned
-- location's
SELECT :oc, lines FROM inventory.reserve_lines('t200-pin', 'pin3',
  '[{"sku": "P", "quantity": 2, "location": "hub"}]');
-- a pinned and an unpinned line of one SKU that end at one location are
-- one stored line (Q at hub: 3 left; pinned 1 leaves 2 for the unpinned 2)
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-pin', 'pin4',
  '[{"sku": "Q", "quantity": 1, "location": "hub"}, {"sku": "Q", "quantity": 2}]');
SELECT * FROM rlines WHERE tenant = 't200-pin' AND request_key = 'pin4' ORDER BY sku, location;
SELECT request FROM inventory.reservation WHERE tenant = 't200-pin' AND request_key = 'pin4';
-- an unknown pinned location: IN004, nothing stored
SELECT :oc FROM inventory.reserve_lines('t200-pin', 'pin5',
  '[{"sku": "P", "quantity": 1, "location": "nowhere"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.lookup('t200-pin', 'pin5');
-- a bad location value: 22023
SELECT :oc FROM inventory.reserve_lines('t200-pin', 'pin5',
  '[{"sku": "P", "quantity": 1, "location": ""}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t200-pin', 'pin5',
  '[{"sku": "P", "quantity": 1, "location": 7}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t200-pin', 'pin5',
  '[{"sku": "P", "quantity": 1, "location": null}]');
\echo :LAST_ERROR_SQLSTATE
SELECT :oc FROM inventory.reserve_lines('t200-pin', 'pin5',
  '[{"sku": "P", "quantity": 1, "location": "hub", "note": "x"}]');
\echo :LAST_ERROR_SQLSTATE
-- a pinned line at an inactive location is insufficient (store-b still
-- holds 3 P); the unpinned Q line alone would have fitted
SELECT inventory.set_location('t200-pin', 'store-b', 20, false) AS changed;
SELECT :oc, lines FROM inventory.reserve_lines('t200-pin', 'pin6',
  '[{"sku": "P", "quantity": 1, "location": "store-b"}, {"sku": "Q", "quantity": 1}]');
SELECT * FROM rlines WHERE tenant = 't200-pin' AND request_key = 'pin6' ORDER BY sku, location;
SELECT * FROM lstk WHERE tenant = 't200-pin' ORDER BY sku, location;

------------------------------------------------------------------------
-- inactive locations are never allocated, not even by a split
------------------------------------------------------------------------
SELECT pg_temp.shop('t200-off', 5, 0, 1, 0, 5, 0);
SELECT inventory.set_location('t200-off', 'hub', 10, false) AS changed;
SELECT status, lines FROM inventory.reserve('t200-off', 'o1', 'P', 2);
-- store-a 1 + store-b 3 = 4 sellable: 5 is insufficient, available 4
SELECT status, lines FROM inventory.reserve('t200-off', 'o2', 'P', 5);
SELECT inventory.set_allocation_policy('t200-off', true) AS changed;
SELECT status, lines FROM inventory.reserve('t200-off', 'o3', 'P', 5);
SELECT status, lines FROM inventory.reserve('t200-off', 'o4', 'P', 4);
-- hub's 5 untouched
SELECT * FROM lstk WHERE tenant = 't200-off' ORDER BY sku, location;
-- active again: hub (priority 10) serves first
SELECT inventory.set_location('t200-off', 'hub', 10, true) AS changed;
SELECT status, lines FROM inventory.reserve('t200-off', 'o5', 'P', 1);

------------------------------------------------------------------------
-- safety stock: counted as available, never reserved
------------------------------------------------------------------------
SELECT pg_temp.shop('t200-safe', 5, 0, 2, 0, 0, 0);
SELECT inventory.set_stock_policy('t200-safe', 'P', 'hub', 3) AS changed;
SELECT inventory.set_stock_policy('t200-safe', 'P', 'hub', 3) AS changed;
SELECT * FROM lstk WHERE tenant = 't200-safe' ORDER BY sku, location;
-- 3 fits neither hub (sellable 2) nor store-a (2): insufficient, available 4
SELECT status, lines FROM inventory.reserve('t200-safe', 's1', 'P', 3);
-- 2: hub; then 1: hub has nothing sellable left, store-a gives it
SELECT status, lines FROM inventory.reserve('t200-safe', 's2', 'P', 2);
SELECT status, lines FROM inventory.reserve('t200-safe', 's3', 'P', 1);
SELECT status, lines FROM inventory.reserve('t200-safe', 's4', 'P', 2);
SELECT * FROM lstk WHERE tenant = 't200-safe' ORDER BY sku, location;
-- a pinned line cannot take safety stock either
SELECT status, lines FROM inventory.reserve_lines('t200-safe', 's5',
  '[{"sku": "P", "quantity": 1, "location": "hub"}]');
-- lowering the safety stock frees units
SELECT inventory.set_stock_policy('t200-safe', 'P', 'hub', 1) AS changed;
SELECT status, lines FROM inventory.reserve_lines('t200-safe', 's6',
  '[{"sku": "P", "quantity": 2, "location": "hub"}]');
SELECT * FROM lstk WHERE tenant = 't200-safe' ORDER BY sku, location;
-- set_stock_policy's errors
SELECT inventory.set_stock_policy('t200-safe', 'NOPE', 'hub', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_policy('t200-safe', 'P', 'nowhere', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_policy('t200-safe', 'P', 'hub', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_policy('t200-safe', 'P', 'hub', 0, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.set_stock_policy('t200-safe', 'P', 'hub', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM lstk WHERE tenant = 't200-safe' ORDER BY sku, location;

------------------------------------------------------------------------
-- replays: the stored allocation; the payload: pins count, the policy's
-- allocation does not
------------------------------------------------------------------------
-- t200-all's c1 is held at hub; with hub inactive the policy would now
-- pick store-a, but a replay returns the stored allocation (hub), in any
-- line order or split
SELECT inventory.set_location('t200-all', 'hub', 10, false) AS changed;
SELECT status, state, applied, lines FROM inventory.reserve_lines('t200-all', 'c1',
  '[{"sku": "Q", "quantity": 2}, {"sku": "P", "quantity": 1}, {"sku": "P", "quantity": 1}]');
SELECT status, state, applied, lines FROM inventory.lookup('t200-all', 'c1');
-- pinning the very location it was allocated to is another payload: IN001
SELECT status FROM inventory.reserve_lines('t200-all', 'c1',
  '[{"sku": "P", "quantity": 2, "location": "hub"}, {"sku": "Q", "quantity": 2}]');
\echo :LAST_ERROR_SQLSTATE
-- a pinned request: the same pins replay; without the pin, or pinned
-- elsewhere, IN001
SELECT status, applied, lines FROM inventory.reserve_lines('t200-pin', 'pin1',
  '[{"sku": "Q", "quantity": 2}, {"sku": "P", "quantity": 2, "location": "store-b"}]');
SELECT status FROM inventory.reserve_lines('t200-pin', 'pin1',
  '[{"sku": "P", "quantity": 2}, {"sku": "Q", "quantity": 2}]');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t200-pin', 'pin1',
  '[{"sku": "P", "quantity": 2, "location": "store-a"}, {"sku": "Q", "quantity": 2}]');
\echo :LAST_ERROR_SQLSTATE
-- the unpinned part of a request is the policy's: pinning Q at hub, where
-- the policy put it, is still IN001
SELECT status FROM inventory.reserve_lines('t200-pin', 'pin1',
  '[{"sku": "P", "quantity": 2, "location": "store-b"}, {"sku": "Q", "quantity": 2, "location": "hub"}]');
\echo :LAST_ERROR_SQLSTATE
-- a pinned and an unpinned line: their split is the payload (pin4)
SELECT status, applied FROM inventory.reserve_lines('t200-pin', 'pin4',
  '[{"sku": "Q", "quantity": 2}, {"sku": "Q", "quantity": 1, "location": "hub"}]');
SELECT status FROM inventory.reserve_lines('t200-pin', 'pin4',
  '[{"sku": "Q", "quantity": 3}]');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t200-pin', 'pin4',
  '[{"sku": "Q", "quantity": 3, "location": "hub"}]');
\echo :LAST_ERROR_SQLSTATE
-- a rejected pinned request replays as insufficient with its lines
SELECT :oc, lines FROM inventory.reserve_lines('t200-pin', 'pin3',
  '[{"sku": "P", "quantity": 2, "location": "hub"}]');
SELECT status FROM inventory.reserve_lines('t200-pin', 'pin3',
  '[{"sku": "P", "quantity": 2}]');
\echo :LAST_ERROR_SQLSTATE

------------------------------------------------------------------------
-- the end: nothing held twice, everything accounted for
------------------------------------------------------------------------
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM counts;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't200%' ORDER BY 1, 2, 3;
