-- test/pgtap/04_one_rule.sql
--
-- README "Roles and grants", the 0.4 rules "One authorisation rule" and
-- "Grants follow roles":
-- - EXECUTE alone never acts for a tenant: restock, adjust and
--   set_stock_slots check the tenant grant like every other function;
--   operators act for every tenant through a grant of '*';
-- - grant_tenant / revoke_tenant need the caller to act for the tenant
--   (for '*': a grant of '*'), so a role never gives more than it has;
-- - a grant belongs to a role: DROP ROLE of a granted role fails with
--   PostgreSQL's own dependency error (2BP01); DROP OWNED BY ends its
--   grants; a renamed role keeps them; a grant left behind by a dropped
--   role never applies to anyone and is deleted by the next grant change.
-- The roles are created inside the transaction; ROLLBACK removes them.

BEGIN;
SELECT plan(52);

CREATE ROLE rule_app NOLOGIN;
CREATE ROLE rule_other NOLOGIN;
CREATE ROLE rule_operator NOLOGIN;
CREATE ROLE rule_delegate NOLOGIN;
CREATE ROLE rule_gone NOLOGIN;
GRANT USAGE ON SCHEMA inventory
	TO rule_app, rule_other, rule_operator, rule_delegate, rule_gone;
-- the application role was (wrongly) given the operator's functions too
GRANT EXECUTE ON FUNCTION
	inventory.reserve(text, text, text, integer, interval),
	inventory.restock(text, text, text, integer, text),
	inventory.adjust(text, text, text, bigint, text, text),
	inventory.set_stock_slots(text, text, integer),
	inventory.grant_tenant(text, regrole),
	inventory.revoke_tenant(text, regrole),
	inventory.set_location(text, text, integer, boolean),
	inventory.set_allocation_policy(text, boolean),
	inventory.set_stock_policy(text, text, text, bigint, bigint),
	inventory.restock_at(text, text, text, text, integer, text),
	inventory.adjust_at(text, text, text, text, bigint, text, text),
	inventory.availability(text, text[]),
	inventory.extend(text, text, timestamptz),
	inventory.amend(text, text, jsonb),
	inventory.register_sku(text, text, text)
	TO rule_app, rule_operator, rule_delegate, rule_gone;
SELECT inventory.restock('rule-a', 'r', 'A', 10);
SELECT inventory.restock('rule-b', 'r', 'B', 10);
SELECT is(inventory.grant_tenant('rule-a', 'rule_app'), true, 'app granted tenant rule-a');

/* ------------------------------------------------------------------
 * EXECUTE alone acts for no tenant
 * ---------------------------------------------------------------- */
SET LOCAL ROLE rule_app;
SELECT is(inventory.restock('rule-a', 'r2', 'A', 1), 11::bigint,
	'app restocks its own tenant');
SELECT throws_ok($$SELECT inventory.restock('rule-b', 'r2', 'B', 1)$$, '42501', NULL,
	'app cannot restock another tenant (EXECUTE alone is not enough)');
SELECT throws_ok($$SELECT inventory.adjust('rule-b', 'j', 'B', -1, 'loss', 'x')$$, '42501', NULL,
	'app cannot adjust another tenant');
SELECT throws_ok($$SELECT inventory.set_stock_slots('rule-b', 'B', 4)$$, '42501', NULL,
	'app cannot change another tenant''s slots');
SELECT throws_ok($$SELECT inventory.restock('rule-new', 'r', 'N', 1)$$, '42501', NULL,
	'app cannot create a tenant it was not granted');
SELECT throws_ok($$SELECT inventory.grant_tenant('*', 'rule_app')$$, '42501', NULL,
	'app cannot grant itself every tenant');
SELECT throws_ok($$SELECT inventory.grant_tenant('rule-b', 'rule_app')$$, '42501', NULL,
	'app cannot grant itself another tenant');
SELECT throws_ok($$SELECT inventory.revoke_tenant('rule-b', 'rule_other')$$, '42501', NULL,
	'app cannot revoke another tenant''s grants');
SELECT is(inventory.grant_tenant('rule-a', 'rule_other'), true,
	'app grants its own tenant to another role');
-- 0.5: the functions that take a tenant follow the same rule
SELECT is(inventory.set_location('rule-a', 'hub', 1), true,
	'app sets a location of its own tenant');
SELECT throws_ok($$SELECT inventory.set_location('rule-b', 'hub', 1)$$, '42501', NULL,
	'app cannot set a location of another tenant');
SELECT throws_ok($$SELECT inventory.set_allocation_policy('rule-b', true)$$, '42501', NULL,
	'app cannot set another tenant''s allocation policy');
SELECT throws_ok($$SELECT inventory.set_stock_policy('rule-b', 'B', 'default', 1)$$, '42501', NULL,
	'app cannot set another tenant''s stock policy');
SELECT throws_ok($$SELECT inventory.restock_at('rule-b', 'r2', 'B', 'default', 1)$$, '42501', NULL,
	'app cannot restock another tenant at a location');
SELECT throws_ok($$SELECT inventory.adjust_at('rule-b', 'j', 'B', 'default', -1, 'loss', 'x')$$, '42501', NULL,
	'app cannot adjust another tenant at a location');
SELECT throws_ok($$SELECT * FROM inventory.availability('rule-b', ARRAY['B'])$$, '42501', NULL,
	'app cannot read another tenant''s availability');
SELECT throws_ok($$SELECT inventory.extend('rule-b', 'k', '2030-01-01 00:00:00+00')$$, '42501', NULL,
	'app cannot extend for another tenant');
SELECT throws_ok($$SELECT inventory.amend('rule-b', 'k', '[{"sku": "B", "quantity": 1}]')$$, '42501', NULL,
	'app cannot amend for another tenant');
SELECT throws_ok($$SELECT inventory.register_sku('rule-b', 'B2')$$, '42501', NULL,
	'app cannot register a SKU of another tenant');
RESET ROLE;
SELECT is((SELECT count(*) FROM inventory.location WHERE tenant = 'rule-b' AND location <> 'default'), 0::bigint,
	'no location of rule-b appeared');
SELECT results_eq($$SELECT available FROM inventory.stock WHERE tenant = 'rule-b'$$,
	$$VALUES (10::bigint)$$, 'nothing of rule-b changed');
SELECT is((SELECT count(*) FROM inventory.tenant_member WHERE tenant = 'rule-new'), 0::bigint,
	'no grant or tenant appeared');

-- an operator: EXECUTE and a grant of '*'
SET LOCAL ROLE rule_operator;
SELECT throws_ok($$SELECT inventory.restock('rule-b', 'r3', 'B', 1)$$, '42501', NULL,
	'an operator without a grant of * acts for no tenant');
RESET ROLE;
SELECT is(inventory.grant_tenant('*', 'rule_operator'), true, 'superuser grants * to the operator');
SET LOCAL ROLE rule_operator;
SELECT is(inventory.restock('rule-b', 'r3', 'B', 1), 11::bigint, 'the operator restocks any tenant');
SELECT is(inventory.set_stock_slots('rule-b', 'B', 2), 1, 'the operator sets slots of any tenant');
SELECT is(inventory.grant_tenant('*', 'rule_delegate'), true, 'a holder of * may grant *');
SELECT is(inventory.revoke_tenant('*', 'rule_delegate'), true, 'and revoke it');
RESET ROLE;

/* ------------------------------------------------------------------
 * Grants follow roles
 * ---------------------------------------------------------------- */
SELECT is(inventory.grant_tenant('rule-b', 'rule_gone'), true, 'rule_gone granted rule-b');
SELECT ok(has_type_privilege('rule_gone', 'inventory.tenant_grantee', 'USAGE'),
	'a granted role holds the marker');
SELECT throws_ok($$DROP ROLE rule_gone$$, '2BP01', NULL,
	'DROP ROLE of a granted role fails with PostgreSQL''s dependency error');
SELECT results_eq($$SELECT tenant::text COLLATE "default" FROM inventory.tenant_member WHERE member = 'rule_gone'::regrole$$,
	$$VALUES ('rule-b')$$, 'the grant is still there');

-- a renamed role keeps its grants
ALTER ROLE rule_other RENAME TO rule_renamed;
SELECT results_eq($$SELECT member::text FROM inventory.tenant_member WHERE tenant = 'rule-a' ORDER BY 1$$,
	$$VALUES ('rule_app'), ('rule_renamed')$$, 'tenant_member names the renamed role');
SET LOCAL ROLE rule_renamed;
SELECT throws_ok($$SELECT inventory.reserve('rule-a', 'k', 'A', 1)$$, '42501', NULL,
	'(the renamed role has no EXECUTE on reserve: the grant alone is not EXECUTE)');
RESET ROLE;

-- DROP OWNED BY ends the role's grants at once
DROP OWNED BY rule_gone;
SELECT is((SELECT count(*) FROM inventory.tenant_member WHERE member::oid = 'rule_gone'::regrole::oid),
	0::bigint, 'after DROP OWNED BY the role has no grant');
SELECT ok(NOT has_type_privilege('rule_gone', 'inventory.tenant_grantee', 'USAGE'),
	'nor the marker');
SET LOCAL ROLE rule_gone;
SELECT throws_ok($$SELECT inventory.restock('rule-b', 'r4', 'B', 1)$$, '42501', NULL,
	'and it can no longer act for the tenant');
RESET ROLE;
CREATE TEMP TABLE gone AS SELECT 'rule_gone'::regrole::oid AS oid;
DROP ROLE rule_gone;
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'rule_gone'),
	'DROP ROLE succeeds once its grants are gone');
-- the row it left behind is a bare OID that a later role could get: it is
-- not a grant (the view and pg_dump leave it out), and the next change of
-- grants deletes it
SELECT is((SELECT count(*) FROM inventory.tenant_grant g, gone WHERE g.member::oid = gone.oid),
	1::bigint, 'the dropped role''s row is still stored');
SELECT is((SELECT count(*) FROM inventory.tenant_member m, gone WHERE m.member::oid = gone.oid),
	0::bigint, 'but it is no grant');
SELECT is(inventory.grant_tenant('rule-b', 'rule_delegate'), true, 'another grant change');
SELECT is((SELECT count(*) FROM inventory.tenant_grant g, gone WHERE g.member::oid = gone.oid),
	0::bigint, 'deleted the left-behind row');

-- revoking a role's last grant takes the marker back, so DROP ROLE works
SELECT is(inventory.revoke_tenant('rule-b', 'rule_delegate'), true, 'revoke the delegate''s grant');
SELECT ok(NOT has_type_privilege('rule_delegate', 'inventory.tenant_grantee', 'USAGE'),
	'the last revoke takes the marker back');
SELECT lives_ok($$DROP OWNED BY rule_delegate; DROP ROLE rule_delegate$$,
	'a role without grants can be dropped');

/* ------------------------------------------------------------------
 * Long and multibyte tenant names; the wildcard's own rules
 * ---------------------------------------------------------------- */
SELECT is(inventory.grant_tenant(repeat('ü', 64), 'rule_app'), true,
	'a 64-character multibyte tenant can be granted');
SELECT is(inventory.grant_tenant(repeat('ü', 64), 'rule_app'), false,
	'granting it again changes nothing');
SELECT throws_ok($$SELECT inventory.grant_tenant(' rule-a', 'rule_app')$$, '22023', NULL,
	'a tenant with white space at an end cannot be granted');
SELECT is(inventory.revoke_tenant(repeat('ü', 64), 'rule_app'), true, 'and revoked');
SELECT is(inventory.revoke_tenant('rule-a', 'rule_app'), true, 'the app''s last grant revoked');
SELECT ok(NOT has_type_privilege('rule_app', 'inventory.tenant_grantee', 'USAGE'),
	'with its last grant the app lost the marker');

SELECT * FROM finish();
ROLLBACK;
