-- test/router/contract.sql: the tenant-scoped calls of the SQL contract,
-- run as the application role (app) against one node, then against the
-- router, by router_test.sh; the two outputs must be the same.  Only
-- what a node decides is printed: statuses, states, quantities, lines,
-- and each error's SQLSTATE (VERBOSITY sqlstate: the router's messages
-- carry PL/Proxy's prefix, the SQLSTATE is the node's).  Reservation ids
-- and instants differ between runs and are left out.
\set VERBOSITY sqlstate
\pset null '(null)'

-- reserve, its replay, a changed payload, a shortfall, an unknown SKU
SELECT status, state, applied, sku, quantity, lines, reason
  FROM inventory.reserve('acme', 'order-1', 'sku-1', 3);
SELECT status, state, applied, sku, quantity FROM inventory.reserve('acme', 'order-1', 'sku-1', 3);
SELECT status FROM inventory.reserve('acme', 'order-1', 'sku-1', 4);
SELECT status, state, applied, quantity FROM inventory.reserve('hooli', 'order-1', 'sku-1', 9);
SELECT status FROM inventory.reserve('initech', 'order-1', 'sku-9', 1);
-- bad arguments
SELECT status FROM inventory.reserve('initech', 'order-2', 'sku-1', 0);
SELECT status FROM inventory.reserve('initech', 'order-2', 'sku-1', 1, interval '1 month');
SELECT status FROM inventory.reserve('initech', NULL, 'sku-1', 1);
SELECT status FROM inventory.reserve(NULL, 'order-2', 'sku-1', 1);
-- a tenant the role is not granted
SELECT status FROM inventory.reserve('wayne', 'order-1', 'sku-1', 1);
SELECT status FROM inventory.lookup('wayne', 'order-1');

-- the life of reservations on every node
SELECT status, state, applied FROM inventory.reserve('initech', 'order-3', 'sku-1', 2);
SELECT status, state, applied FROM inventory.confirm('initech', 'order-3');
SELECT status, state, applied FROM inventory.confirm('initech', 'order-3');
SELECT status, state, applied FROM inventory.cancel('initech', 'order-3', 'too late');
SELECT status, state, applied FROM inventory.compensate('initech', 'order-3', 'carrier lost it');
SELECT status, state, applied FROM inventory.compensate('initech', 'order-3', 'carrier lost it');
SELECT status FROM inventory.compensate('initech', 'order-3', '');
SELECT status, state, applied FROM inventory.reserve('tyrell', 'order-1', 'sku-2', 5);
SELECT status, state, applied FROM inventory.cancel('tyrell', 'order-1', 'customer left');
SELECT status, state, applied FROM inventory.lookup('tyrell', 'order-1');
SELECT status, state, applied FROM inventory.lookup('tyrell', 'order-404');
SELECT status, state, applied FROM inventory.confirm('tyrell', 'order-404');
SELECT status, state, applied, lines
  FROM inventory.reserve_lines('umbrella', 'cart-1',
	'[{"sku": "sku-1", "quantity": 2}, {"sku": "sku-2", "quantity": 1}]');
SELECT status, state, applied FROM inventory.reserve_lines('umbrella', 'cart-1',
	'[{"sku": "sku-1", "quantity": 2}, {"sku": "sku-2", "quantity": 1}]');
SELECT status, state, applied FROM inventory.reserve_lines('umbrella', 'cart-1',
	'[{"sku": "sku-1", "quantity": 3}]');
SELECT status, state, applied FROM inventory.reserve_lines('umbrella', 'cart-2',
	'[{"sku": "sku-1", "quantity": 8}, {"sku": "sku-2", "quantity": 1}]');
SELECT status FROM inventory.reserve_lines('umbrella', 'cart-3', '[]');
SELECT status, state, applied, lines
  FROM inventory.amend('umbrella', 'cart-1', '[{"sku": "sku-1", "quantity": 1}]');
SELECT status, state, applied
  FROM inventory.extend('umbrella', 'cart-1', clock_timestamp() + interval '1 hour');
SELECT status FROM inventory.extend('umbrella', 'cart-1', clock_timestamp() + interval '30 days');
SELECT status, state, applied FROM inventory.confirm('umbrella', 'cart-1');
SELECT status, state, applied FROM inventory.reserve('globex', 'order-1', 'sku-2', 1, interval '1 minute');

-- what is left: every tenant's stock as its node counts it
SELECT t AS tenant, a.sku, a.location, a.sellable, a.available, a.reserved, a.consumed
  FROM unnest(ARRAY['acme', 'hooli', 'initech', 'tyrell', 'umbrella', 'globex']) AS t,
	   inventory.availability(t, ARRAY['sku-1', 'sku-2', 'sku-9']) AS a
 ORDER BY 1, 2;
SELECT count(*) FROM inventory.availability('wayne', ARRAY['sku-1']);
