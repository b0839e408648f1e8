-- test/pgtap/02_authorisation.sql
--
-- README "Roles and grants": EXECUTE per job, tenant grants checked
-- against the role in effect (SET ROLE honoured, inherited grants count,
-- superusers act for every tenant), 42501 for everything else, and a
-- refused call writes nothing.  The roles are created inside the
-- transaction; the final ROLLBACK removes them again.

BEGIN;
SELECT plan(129);

SET LOCAL pg_inventory.frozen_now = '2026-01-01 00:00:00+00';

/* ------------------------------------------------------------------
 * Roles and the grants the README gives each job
 * ---------------------------------------------------------------- */
CREATE ROLE auth_app_a NOLOGIN;
CREATE ROLE auth_app_b NOLOGIN;
CREATE ROLE auth_consumer NOLOGIN;
CREATE ROLE auth_operator NOLOGIN;
CREATE ROLE auth_app_a_member NOLOGIN INHERIT IN ROLE auth_app_a;
CREATE ROLE auth_nobody NOLOGIN;

GRANT USAGE ON SCHEMA inventory
	TO auth_app_a, auth_app_b, auth_consumer, auth_operator, auth_nobody;
GRANT EXECUTE ON FUNCTION
	inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.confirm(text, text),
	inventory.cancel(text, text, text),
	inventory.lookup(text, text),
	inventory.extend(text, text, timestamptz),
	inventory.amend(text, text, jsonb),
	inventory.availability(text, text[])
	TO auth_app_a, auth_app_b;
GRANT EXECUTE ON FUNCTION
	inventory.lookup(text, text),
	inventory.compensate(text, text, text)
	TO auth_consumer;
GRANT EXECUTE ON FUNCTION
	inventory.restock(text, text, text, integer, text),
	inventory.adjust(text, text, text, bigint, text, text),
	inventory.expire_due(integer),
	inventory.check_invariants(),
	inventory.grant_tenant(text, regrole),
	inventory.revoke_tenant(text, regrole),
	inventory.set_location(text, text, integer, boolean),
	inventory.set_allocation_policy(text, boolean),
	inventory.set_stock_policy(text, text, text, bigint, bigint),
	inventory.restock_at(text, text, text, text, integer, text),
	inventory.adjust_at(text, text, text, text, bigint, text, text),
	inventory.availability(text, text[]),
	inventory.register_sku(text, text, text),
	inventory.purge_history(interval, integer, boolean),
	inventory.archive_ledger(interval, integer),
	inventory.clock(),
	inventory.worker_status(),
	inventory.requeue_dead_letters(bigint[], text),
	inventory.discard_dead_letters(bigint[], text)
	TO auth_operator;
GRANT SELECT ON ALL TABLES IN SCHEMA inventory TO auth_operator;

-- stock of both tenants, as the superuser
SELECT is(inventory.restock('auth-ta', 'rcpt-1', 'A', 10), 10::bigint,
	'superuser restocks tenant auth-ta');
SELECT is(inventory.restock('auth-tb', 'rcpt-1', 'B', 10), 10::bigint,
	'superuser restocks tenant auth-tb');

/* ------------------------------------------------------------------
 * grant_tenant / revoke_tenant: results and argument errors
 * ---------------------------------------------------------------- */
SELECT is(inventory.grant_tenant('auth-ta', 'auth_app_a'), true,
	'grant_tenant(auth-ta, app_a) adds a grant');
SELECT is(inventory.grant_tenant('auth-ta', 'auth_app_a'), false,
	'granting the same tenant again changes nothing');
SELECT is(inventory.grant_tenant('auth-tb', 'auth_app_b'), true,
	'grant_tenant(auth-tb, app_b) adds a grant');
SELECT is(inventory.grant_tenant('*', 'auth_consumer'), true,
	'grant_tenant(*, consumer) adds the wildcard');
SELECT is(inventory.grant_tenant('*', 'auth_operator'), true,
	'grant_tenant(*, operator): operators act for every tenant through *');
SELECT is(inventory.revoke_tenant('auth-tb', 'auth_app_a'), false,
	'revoking a grant that does not exist returns false');

SELECT throws_ok($$SELECT inventory.grant_tenant('auth-ta', NULL)$$, '22023',
	NULL, 'grant_tenant with a NULL member raises 22023');
SELECT throws_ok($$SELECT inventory.grant_tenant(NULL, 'auth_app_a')$$, '22023',
	NULL, 'grant_tenant with a NULL tenant raises 22023');
SELECT throws_ok($$SELECT inventory.grant_tenant('', 'auth_app_a')$$, '22023',
	NULL, 'grant_tenant with tenant '''' raises 22023');
SELECT throws_ok($$SELECT inventory.grant_tenant(repeat('t', 65), 'auth_app_a')$$,
	'22023', NULL, 'grant_tenant with a 65-character tenant raises 22023');
SELECT throws_ok($$SELECT inventory.grant_tenant(E'auth\x01', 'auth_app_a')$$,
	'22023', NULL, 'grant_tenant with a control character in the tenant raises 22023');
SELECT throws_ok($$SELECT inventory.revoke_tenant('auth-ta', NULL)$$, '22023',
	NULL, 'revoke_tenant with a NULL member raises 22023');
SELECT throws_ok($$SELECT inventory.revoke_tenant('', 'auth_app_a')$$, '22023',
	NULL, 'revoke_tenant with tenant '''' raises 22023');

SELECT results_eq($$
	SELECT tenant::text COLLATE "default", member::text FROM inventory.tenant_member
	 WHERE member::text LIKE 'auth\_%' ORDER BY 1, 2
$$, $$ VALUES ('*', 'auth_consumer'), ('*', 'auth_operator'),
			  ('auth-ta', 'auth_app_a'), ('auth-tb', 'auth_app_b') $$,
	'tenant_member holds exactly the four grants made');

/* ------------------------------------------------------------------
 * Application role app_a: its tenant only
 * ---------------------------------------------------------------- */
SET LOCAL ROLE auth_app_a;
SELECT results_eq($$
	SELECT status, state, applied, quantity FROM inventory.reserve('auth-ta', 'a-1', 'A', 2)
$$, $$ VALUES ('reserved', 'pending', true, 2) $$,
	'app_a reserves for its tenant auth-ta');
SELECT results_eq($$
	SELECT status, applied FROM inventory.reserve_lines('auth-ta', 'a-2', '[{"sku": "A", "quantity": 1}]')
$$, $$ VALUES ('reserved', true) $$,
	'app_a reserves lines for auth-ta');
SELECT results_eq($$
	SELECT status, applied FROM inventory.lookup('auth-ta', 'a-1')
$$, $$ VALUES ('reserved', false) $$, 'app_a looks up its reservation');
SELECT results_eq($$
	SELECT status, applied FROM inventory.confirm('auth-ta', 'a-1')
$$, $$ VALUES ('confirmed', true) $$, 'app_a confirms its reservation');
SELECT results_eq($$
	SELECT status, applied FROM inventory.cancel('auth-ta', 'a-2', 'changed mind')
$$, $$ VALUES ('cancelled', true) $$, 'app_a cancels its reservation');
-- 0.5: extend, amend, availability for its tenant (a-5 is cancelled again,
-- so the counts below stay those of a-1 and a-2)
SELECT results_eq($$
	SELECT status, applied FROM inventory.reserve('auth-ta', 'a-5', 'A', 1)
$$, $$ VALUES ('reserved', true) $$, 'app_a reserves a-5');
SELECT results_eq($$
	SELECT status, state, applied FROM inventory.extend('auth-ta', 'a-5', '2026-01-01 01:00:00+00')
$$, $$ VALUES ('extended', 'pending', true) $$, 'app_a extends its reservation');
SELECT results_eq($$
	SELECT status, state, applied, quantity FROM inventory.amend('auth-ta', 'a-5', '[{"sku": "A", "quantity": 2}]')
$$, $$ VALUES ('amended', 'pending', true, 2) $$, 'app_a amends its reservation');
SELECT results_eq($$
	SELECT status, applied FROM inventory.cancel('auth-ta', 'a-5', 'changed mind')
$$, $$ VALUES ('cancelled', true) $$, 'app_a cancels a-5');
SELECT results_eq($$
	SELECT location::text, sellable, available, reserved, consumed
	  FROM inventory.availability('auth-ta', ARRAY['A'])
$$, $$ VALUES ('default', 8::bigint, NULL::bigint, NULL::bigint, NULL::bigint),
			  (NULL, 8::bigint, NULL::bigint, NULL::bigint, NULL::bigint) $$,
	'app_a reads availability of its tenant: sellable only, the counters NULL');
RESET ROLE;

-- the snapshot of every table and sequence before the refused calls
CREATE TEMP TABLE auth_before AS
	SELECT (SELECT count(*) FROM inventory.reservation) AS reservations,
		   (SELECT count(*) FROM inventory.reservation_line) AS lines,
		   (SELECT count(*) FROM inventory.reservation_transition) AS transitions,
		   (SELECT count(*) FROM inventory.outbox) AS events,
		   (SELECT count(*) FROM inventory.stock_ledger) AS ledger,
		   (SELECT count(*) FROM inventory.tenant_member) AS grants,
		   (SELECT array_agg(row(tenant, sku, available, reserved, consumed)::text
							 ORDER BY tenant, sku) FROM inventory.stock) AS stock,
		   (SELECT last_value FROM inventory.reservation_id_seq) AS res_seq,
		   (SELECT last_value FROM inventory.outbox_id_seq) AS outbox_seq,
		   (SELECT last_value FROM inventory.reservation_transition_id_seq) AS tr_seq,
		   (SELECT last_value FROM inventory.stock_ledger_id_seq) AS ledger_seq;
GRANT SELECT ON auth_before TO PUBLIC;

SET LOCAL ROLE auth_app_a;
SELECT throws_ok($$SELECT inventory.reserve('auth-tb', 'a-x', 'B', 1)$$, '42501',
	NULL, 'app_a cannot reserve for auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.reserve_lines('auth-tb', 'a-x', '[{"sku": "B", "quantity": 1}]')$$,
	'42501', NULL, 'app_a cannot reserve lines for auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.lookup('auth-tb', 'b-1')$$, '42501',
	NULL, 'app_a cannot look up auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.confirm('auth-tb', 'b-1')$$, '42501',
	NULL, 'app_a cannot confirm for auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.cancel('auth-tb', 'b-1')$$, '42501',
	NULL, 'app_a cannot cancel for auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.reserve('auth-tc', 'a-x', 'A', 1)$$, '42501',
	NULL, 'app_a cannot reserve for a tenant nobody stocked (42501, not IN002)');
-- functions of other jobs: no EXECUTE
SELECT throws_ok($$SELECT inventory.restock('auth-ta', 'a-rcpt', 'A', 5)$$, '42501',
	NULL, 'app_a cannot restock (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.adjust('auth-ta', 'a-adj', 'A', -1, 'loss', 'broken')$$,
	'42501', NULL, 'app_a cannot adjust (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.compensate('auth-ta', 'a-1', 'failed')$$, '42501',
	NULL, 'app_a cannot compensate (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.expire_due()$$, '42501',
	NULL, 'app_a cannot call expire_due (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.grant_tenant('auth-tb', 'auth_app_a')$$, '42501',
	NULL, 'app_a cannot grant itself another tenant (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.extend('auth-tb', 'b-1', '2026-01-01 01:00:00+00')$$, '42501',
	NULL, 'app_a cannot extend for auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.amend('auth-tb', 'b-1', '[{"sku": "B", "quantity": 1}]')$$, '42501',
	NULL, 'app_a cannot amend for auth-tb (42501)');
SELECT throws_ok($$SELECT * FROM inventory.availability('auth-tb', ARRAY['B'])$$, '42501',
	NULL, 'app_a cannot read availability of auth-tb (42501)');
SELECT throws_ok($$SELECT inventory.set_location('auth-ta', 'hub', 1)$$, '42501',
	NULL, 'app_a cannot set a location (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.set_allocation_policy('auth-ta', true)$$, '42501',
	NULL, 'app_a cannot set the allocation policy (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.set_stock_policy('auth-ta', 'A', 'default', 1)$$, '42501',
	NULL, 'app_a cannot set a stock policy (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.restock_at('auth-ta', 'a-rcpt', 'A', 'default', 5)$$, '42501',
	NULL, 'app_a cannot restock at a location (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.adjust_at('auth-ta', 'a-adj', 'A', 'default', -1, 'loss', 'broken')$$,
	'42501', NULL, 'app_a cannot adjust at a location (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.register_sku('auth-ta', 'A-new')$$, '42501',
	NULL, 'app_a cannot register a SKU (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.purge_history()$$, '42501',
	NULL, 'app_a cannot purge history (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.archive_ledger()$$, '42501',
	NULL, 'app_a cannot archive the ledger (no EXECUTE)');
-- tables: no direct reads or writes
SELECT throws_ok($$SELECT * FROM inventory.stock$$, '42501',
	NULL, 'app_a cannot read inventory.stock');
SELECT throws_ok($$SELECT * FROM inventory.reservation$$, '42501',
	NULL, 'app_a cannot read inventory.reservation');
SELECT throws_ok($$SELECT * FROM inventory.outbox$$, '42501',
	NULL, 'app_a cannot read inventory.outbox');
SELECT throws_ok($$INSERT INTO inventory.tenant_grant (tenant, member) VALUES ('auth-tb', 'auth_app_a')$$,
	'42501', NULL, 'app_a cannot insert a grant directly');
SELECT throws_ok($$INSERT INTO inventory.stock_slot (tenant, sku, slot, available) VALUES ('auth-ta', 'Z', 0, 100)$$,
	'42501', NULL, 'app_a cannot insert stock directly');
SELECT throws_ok($$UPDATE inventory.stock SET available = available + 100$$, '42501',
	NULL, 'app_a cannot update stock directly');
-- 0.5: the console is for operators
SELECT throws_ok($$SELECT inventory.clock()$$, '42501',
	NULL, 'app_a cannot call clock (no EXECUTE)');
SELECT throws_ok($$SELECT * FROM inventory.worker_status()$$, '42501',
	NULL, 'app_a cannot call worker_status (no EXECUTE)');
SELECT throws_ok($$SELECT * FROM inventory.pending_hold$$, '42501',
	NULL, 'app_a cannot read inventory.pending_hold');
SELECT throws_ok($$SELECT * FROM inventory.operator_audit$$, '42501',
	NULL, 'app_a cannot read inventory.operator_audit');
SELECT throws_ok($$SELECT inventory.requeue_dead_letters()$$, '42501',
	NULL, 'app_a cannot requeue dead letters (no EXECUTE)');
SELECT throws_ok($$DELETE FROM inventory.reservation$$, '42501',
	NULL, 'app_a cannot delete reservations directly');
SELECT throws_ok($$SELECT nextval('inventory.reservation_id_seq')$$, '42501',
	NULL, 'app_a cannot use the id sequences');
RESET ROLE;

-- app_b: the opposite tenant
SET LOCAL ROLE auth_app_b;
SELECT results_eq($$
	SELECT status, applied FROM inventory.reserve('auth-tb', 'b-1', 'B', 3)
$$, $$ VALUES ('reserved', true) $$, 'app_b reserves for its tenant auth-tb');
SELECT throws_ok($$SELECT inventory.reserve('auth-ta', 'b-x', 'A', 1)$$, '42501',
	NULL, 'app_b cannot reserve for auth-ta (42501)');
SELECT throws_ok($$SELECT inventory.lookup('auth-ta', 'a-1')$$, '42501',
	NULL, 'app_b cannot look up auth-ta''s reservation (42501)');
SELECT throws_ok($$SELECT inventory.cancel('auth-ta', 'a-1')$$, '42501',
	NULL, 'app_b cannot cancel auth-ta''s reservation (42501)');
RESET ROLE;

-- the refused calls wrote nothing: b-1 is the only change since the snapshot
SELECT results_eq($$
	SELECT (SELECT count(*) FROM inventory.reservation) - reservations,
		   (SELECT count(*) FROM inventory.reservation_line) - lines,
		   (SELECT count(*) FROM inventory.reservation_transition) - transitions,
		   (SELECT count(*) FROM inventory.outbox) - events,
		   (SELECT count(*) FROM inventory.stock_ledger) - ledger,
		   (SELECT count(*) FROM inventory.tenant_member) - grants
	  FROM auth_before
$$, $$ VALUES (1::bigint, 1::bigint, 1::bigint, 1::bigint, 0::bigint, 0::bigint) $$,
	'refused calls wrote no reservation, line, transition, event, ledger row or grant');
SELECT is_empty($$
	SELECT 1 FROM inventory.reservation
	 WHERE (tenant, request_key) IN (('auth-tb', 'a-x'), ('auth-ta', 'b-x'), ('auth-tc', 'a-x'))
$$, 'no reservation exists under the refused keys');
SELECT is(
	(SELECT array_agg(row(tenant, sku, available, reserved, consumed)::text
					  ORDER BY tenant, sku) FROM inventory.stock),
	(SELECT array_replace(stock, '(auth-tb,B,10,0,0)', '(auth-tb,B,7,3,0)')
	   FROM auth_before),
	'stock changed only by app_b''s own reservation');
SELECT is(
	(SELECT last_value FROM inventory.reservation_id_seq) - res_seq,
	1::bigint, 'the refused calls consumed no reservation id')
  FROM auth_before;
SELECT is(
	(SELECT last_value FROM inventory.outbox_id_seq) - outbox_seq,
	1::bigint, 'the refused calls consumed no outbox id')
  FROM auth_before;

/* ------------------------------------------------------------------
 * Consumer: lookup and compensate for every tenant (wildcard grant)
 * ---------------------------------------------------------------- */
SET LOCAL ROLE auth_consumer;
SELECT results_eq($$
	SELECT status, state FROM inventory.lookup('auth-ta', 'a-1')
$$, $$ VALUES ('reserved', 'confirmed') $$, 'consumer looks up auth-ta');
SELECT results_eq($$
	SELECT status, state FROM inventory.lookup('auth-tb', 'b-1')
$$, $$ VALUES ('reserved', 'pending') $$, 'consumer looks up auth-tb');
SELECT results_eq($$
	SELECT status, state, applied FROM inventory.compensate('auth-ta', 'a-1', 'fulfillment failed')
$$, $$ VALUES ('compensated', 'compensated', true) $$,
	'consumer compensates auth-ta''s confirmed reservation');
SELECT results_eq($$
	SELECT status, applied FROM inventory.compensate('auth-tb', 'b-1', 'fulfillment failed')
$$, $$ VALUES ('pending', false) $$,
	'consumer may call compensate for auth-tb (a pending one stays pending)');
SELECT throws_ok($$SELECT inventory.reserve('auth-ta', 'c-1', 'A', 1)$$, '42501',
	NULL, 'consumer cannot reserve (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.confirm('auth-tb', 'b-1')$$, '42501',
	NULL, 'consumer cannot confirm (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.restock('auth-ta', 'c-rcpt', 'A', 1)$$, '42501',
	NULL, 'consumer cannot restock (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.extend('auth-tb', 'b-1', '2026-01-01 01:00:00+00')$$, '42501',
	NULL, 'consumer cannot extend (no EXECUTE)');
SELECT throws_ok($$SELECT inventory.amend('auth-tb', 'b-1', '[{"sku": "B", "quantity": 1}]')$$, '42501',
	NULL, 'consumer cannot amend (no EXECUTE)');
SELECT throws_ok($$SELECT count(*) FROM inventory.reservation$$, '42501',
	NULL, 'consumer cannot read inventory.reservation');
RESET ROLE;

/* ------------------------------------------------------------------
 * Operator: stock, expiry, invariants and grants for every tenant,
 * through its grant of '*'; reads every tenant's rows
 * ---------------------------------------------------------------- */
SET LOCAL ROLE auth_operator;
SELECT is(inventory.restock('auth-ta', 'rcpt-2', 'A', 5), 15::bigint,
	'operator restocks auth-ta through its grant of *');
SELECT is(inventory.restock('auth-tb', 'rcpt-2', 'B', 5), 12::bigint,
	'operator restocks auth-tb through its grant of *');
SELECT is(inventory.adjust('auth-tb', 'adj-1', 'B', -2, 'loss', 'water damage'), 10::bigint,
	'operator adjusts auth-tb');
SELECT lives_ok($$SELECT inventory.expire_due(10)$$, 'operator calls expire_due');
SELECT lives_ok($$SELECT inventory.purge_history('90 days', 10)$$, 'operator calls purge_history');
SELECT lives_ok($$SELECT inventory.archive_ledger('365 days', 10)$$, 'operator calls archive_ledger');
SELECT is_empty($$SELECT * FROM inventory.check_invariants()$$,
	'operator calls check_invariants: healthy');
SELECT results_eq($$
	SELECT tenant::text COLLATE "default", count(*) FROM inventory.reservation
	 WHERE tenant IN ('auth-ta', 'auth-tb') GROUP BY 1 ORDER BY 1
$$, $$ VALUES ('auth-ta', 3::bigint), ('auth-tb', 1::bigint) $$,
	'operator reads every tenant''s reservations');
SELECT results_eq($$
	SELECT tenant::text COLLATE "default", sku::text COLLATE "default", available, reserved, consumed FROM inventory.stock
	 WHERE tenant IN ('auth-ta', 'auth-tb') ORDER BY 1, 2
$$, $$ VALUES ('auth-ta', 'A', 15::bigint, 0::bigint, 0::bigint),
			  ('auth-tb', 'B', 10::bigint, 3::bigint, 0::bigint) $$,
	'operator reads every tenant''s stock');
SELECT throws_ok($$SELECT inventory.reserve('auth-ta', 'o-1', 'A', 1)$$, '42501',
	NULL, 'operator cannot reserve (no EXECUTE)');
SELECT throws_ok($$DELETE FROM inventory.outbox$$, '42501',
	NULL, 'operator cannot write tables directly (SELECT only)');
-- 0.5: the console, read by an operator with SELECT and EXECUTE on clock()
-- and worker_status(); its changes are audited under its own name
SELECT lives_ok($$SELECT * FROM inventory.pending_hold_summary$$,
	'operator reads pending_hold_summary');
SELECT lives_ok($$SELECT * FROM inventory.reservation_metrics$$,
	'operator reads reservation_metrics');
SELECT is((SELECT count(*) FROM inventory.worker_status), 1::bigint,
	'operator reads worker_status: one row');
SELECT is(inventory.requeue_dead_letters(ARRAY[-1]::bigint[], 'nothing to requeue'), 0,
	'operator requeues dead letters with a reason');
SELECT throws_ok($$INSERT INTO inventory.operator_audit (at, actor, action, detail) VALUES (now(), 'me', 'set_location', '{}')$$,
	'42501', NULL, 'operator cannot write the audit directly');
-- 0.5: locations, policies, stock at a location, availability with counters
SELECT is(inventory.set_location('auth-ta', 'hub', 10), true,
	'operator sets a location of auth-ta through its grant of *');
SELECT is(inventory.restock_at('auth-ta', 'rcpt-3', 'A', 'hub', 4), 4::bigint,
	'operator restocks auth-ta at hub');
SELECT is(inventory.adjust_at('auth-ta', 'adj-2', 'A', 'hub', -1, 'loss', 'dropped'), 3::bigint,
	'operator adjusts auth-ta at hub');
SELECT is(inventory.set_stock_policy('auth-ta', 'A', 'hub', 1, 2), true,
	'operator sets a stock policy of auth-ta');
SELECT is(inventory.register_sku('auth-ta', 'A-empty', 'hub'), true,
	'operator registers a SKU of auth-ta at hub with no stock');
SELECT is(inventory.register_sku('auth-ta', 'A-empty', 'hub'), false,
	'registering it again creates nothing');
SELECT results_eq($$
	SELECT action, tenant, actor FROM inventory.operator_audit
	 WHERE tenant = 'auth-ta' AND action IN ('set_location', 'set_stock_policy') ORDER BY id
$$, $$ VALUES ('set_location', 'auth-ta', 'auth_operator'),
			  ('set_stock_policy', 'auth-ta', 'auth_operator') $$,
	'the operator''s changes are audited under its name');
SELECT is(inventory.set_allocation_policy('auth-tb', true), true,
	'operator sets the allocation policy of auth-tb');
SELECT results_eq($$
	SELECT location::text, sellable, available, reserved, consumed
	  FROM inventory.availability('auth-ta', ARRAY['A'])
$$, $$ VALUES ('hub', 2::bigint, 3::bigint, 0::bigint, 0::bigint),
			  ('default', 15::bigint, 15::bigint, 0::bigint, 0::bigint),
			  (NULL, 17::bigint, 18::bigint, 0::bigint, 0::bigint) $$,
	'operator (grant of *) reads availability with the counters');
SELECT throws_ok($$SELECT inventory.extend('auth-tb', 'b-1', '2026-01-01 01:00:00+00')$$, '42501',
	NULL, 'operator cannot extend (no EXECUTE)');
RESET ROLE;

/* ------------------------------------------------------------------
 * Inherited grants, SET ROLE and SECURITY DEFINER callers
 * ---------------------------------------------------------------- */
SET LOCAL ROLE auth_app_a_member;
SELECT results_eq($$
	SELECT status, applied FROM inventory.reserve('auth-ta', 'm-1', 'A', 1)
$$, $$ VALUES ('reserved', true) $$,
	'a member (INHERIT) of app_a acts for auth-ta');
SELECT throws_ok($$SELECT inventory.reserve('auth-tb', 'm-x', 'B', 1)$$, '42501',
	NULL, 'a member of app_a cannot act for auth-tb');
RESET ROLE;
SELECT is(
	(SELECT t.actor FROM inventory.reservation_transition t
	   JOIN inventory.reservation r ON r.id = t.reservation_id
	  WHERE r.tenant = 'auth-ta' AND r.request_key = 'm-1'),
	'auth_app_a_member', 'the transition log names the role in effect as actor');

-- a superuser session that SET ROLEs to app_b is app_b
SET LOCAL ROLE auth_app_b;
SELECT throws_ok($$SELECT inventory.reserve('auth-ta', 'sr-1', 'A', 1)$$, '42501',
	NULL, 'superuser session after SET ROLE app_b: reserve for auth-ta raises 42501');
RESET ROLE;

-- a SECURITY DEFINER function owned by app_b, called by the superuser,
-- runs as app_b
CREATE FUNCTION pg_temp.auth_reserve_as_b(t text, k text, s text)
	RETURNS text LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
	AS $$ SELECT status FROM inventory.reserve(t, k, s, 1) $$;
ALTER FUNCTION pg_temp.auth_reserve_as_b(text, text, text) OWNER TO auth_app_b;
SELECT throws_ok($$SELECT pg_temp.auth_reserve_as_b('auth-ta', 'sd-1', 'A')$$, '42501',
	NULL, 'a SECURITY DEFINER function owned by app_b cannot act for auth-ta');
SELECT is(pg_temp.auth_reserve_as_b('auth-tb', 'sd-2', 'B'), 'reserved',
	'a SECURITY DEFINER function owned by app_b acts for auth-tb');

-- a role with USAGE but no EXECUTE and no grant gets 42501 everywhere
SET LOCAL ROLE auth_nobody;
SELECT throws_ok($$SELECT inventory.lookup('auth-ta', 'a-1')$$, '42501',
	NULL, 'a role without EXECUTE cannot look up');
RESET ROLE;

-- EXECUTE alone is not enough: a tenant grant is needed too
GRANT EXECUTE ON FUNCTION inventory.lookup(text, text) TO auth_nobody;
SET LOCAL ROLE auth_nobody;
SELECT throws_ok($$SELECT inventory.lookup('auth-ta', 'a-1')$$, '42501',
	NULL, 'EXECUTE without a tenant grant raises 42501');
RESET ROLE;

/* ------------------------------------------------------------------
 * Superusers act for every tenant without grants
 * ---------------------------------------------------------------- */
SELECT results_eq($$
	SELECT status, applied FROM inventory.reserve('auth-tb', 'su-1', 'B', 1)
$$, $$ VALUES ('reserved', true) $$, 'superuser reserves for auth-tb without a grant');
SELECT results_eq($$
	SELECT status FROM inventory.lookup('auth-ta', 'a-1')
$$, $$ VALUES ('reserved') $$, 'superuser looks up auth-ta without a grant');
SELECT results_eq($$
	SELECT location::text, available FROM inventory.availability('auth-tb', ARRAY['B'])
$$, $$ VALUES ('default', 8::bigint), (NULL, 8::bigint) $$,
	'superuser reads availability with the counters without a grant');

/* ------------------------------------------------------------------
 * Revoking: by the operator; '*' removes only the wildcard
 * ---------------------------------------------------------------- */
SET LOCAL ROLE auth_operator;
SELECT is(inventory.grant_tenant('auth-ta', 'auth_consumer'), true,
	'operator grants consumer auth-ta explicitly');
SELECT is(inventory.revoke_tenant('auth-ta', 'auth_app_a'), true,
	'operator revokes app_a''s grant of auth-ta');
SELECT is(inventory.revoke_tenant('auth-ta', 'auth_app_a'), false,
	'revoking it again returns false');
SELECT is(inventory.revoke_tenant('*', 'auth_consumer'), true,
	'revoking * from consumer removes the wildcard');
SELECT is(inventory.revoke_tenant('*', 'auth_consumer'), false,
	'revoking * again returns false');
SELECT results_eq($$
	SELECT tenant::text COLLATE "default" FROM inventory.tenant_member
	 WHERE member = 'auth_consumer'::regrole ORDER BY 1
$$, $$ VALUES ('auth-ta') $$,
	'revoking * left consumer''s explicit grant of auth-ta');
RESET ROLE;

SET LOCAL ROLE auth_app_a;
SELECT throws_ok($$SELECT inventory.reserve('auth-ta', 'a-3', 'A', 1)$$, '42501',
	NULL, 'after the revoke app_a cannot reserve for auth-ta');
SELECT throws_ok($$SELECT inventory.lookup('auth-ta', 'a-1')$$, '42501',
	NULL, 'after the revoke app_a cannot look up auth-ta');
RESET ROLE;
SET LOCAL ROLE auth_app_a_member;
SELECT throws_ok($$SELECT inventory.reserve('auth-ta', 'm-2', 'A', 1)$$, '42501',
	NULL, 'after the revoke a member of app_a cannot act for auth-ta either');
RESET ROLE;

SET LOCAL ROLE auth_consumer;
SELECT results_eq($$
	SELECT status FROM inventory.lookup('auth-ta', 'a-1')
$$, $$ VALUES ('reserved') $$,
	'consumer still acts for auth-ta (explicit grant)');
SELECT throws_ok($$SELECT inventory.lookup('auth-tb', 'b-1')$$, '42501',
	NULL, 'consumer no longer acts for auth-tb (wildcard revoked)');
RESET ROLE;

SELECT is_empty($$SELECT * FROM inventory.check_invariants()$$,
	'invariants hold after the whole authorisation run');

SELECT * FROM finish();
ROLLBACK;
