-- test/router/contract_setup.sql: the stock and grants of contract.sql, run
-- as the operator role (ops: EXECUTE on the operator functions, a grant of
-- *) against one node, then against the router (router_test.sh).  The six
-- tenants lie on all three nodes of the test cluster.
\set ON_ERROR_STOP 1
SELECT t AS tenant,
	   inventory.restock(t, 'open-1', 'sku-1', 10, 'opening stock') AS sku_1,
	   inventory.restock(t, 'open-2', 'sku-2', 5, 'opening stock') AS sku_2,
	   inventory.grant_tenant(t, 'app') AS granted
  FROM unnest(ARRAY['acme', 'hooli', 'initech', 'tyrell', 'umbrella', 'globex']) AS t;
-- a replay of the receipt returns the same level, changes nothing
SELECT inventory.restock('acme', 'open-1', 'sku-1', 10, 'opening stock');
SELECT inventory.adjust('hooli', 'loss-1', 'sku-1', -2, 'loss', 'broken in the store');
