-- 160_caller_restored: an error raised while a function runs as the
-- extension's owner leaves the caller as it was (README "Roles and grants",
-- the 0.4 rule "Errors leave the caller as it was").
--
-- Every public function is called by a role with only its job's grants,
-- with an error injected at every step it reaches (the superuser-only fault
-- point pg_inventory.test_fault: the first step as the owner, inside the
-- internal subtransaction of the slot fast path, after the stock moved,
-- before the records, before the ledger record, before the release of
-- expired units, just before switching back) and of every kind: its own
-- (XX000), a serialization failure (40001), a lock timeout (55P03), a
-- deadlock (40P01), an out-of-range value (22003) and PostgreSQL's real
-- query cancel (57014).  The caller catches it in a PL/pgSQL EXCEPTION block
-- (and, below, under a client's SAVEPOINT): afterwards the role in effect is
-- the caller, the caller's own work in the same transaction commits, the
-- session goes on (no leftover subtransaction, no FATAL at COMMIT), and the
-- failed calls changed nothing.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-10-01 00:00:00+00';

SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t160_app;
DROP ROLE IF EXISTS regress_t160_consumer;
DROP ROLE IF EXISTS regress_t160_operator;
DROP ROLE IF EXISTS regress_t160_relay;
RESET client_min_messages;
CREATE ROLE regress_t160_app;
CREATE ROLE regress_t160_consumer;
CREATE ROLE regress_t160_operator;
CREATE ROLE regress_t160_relay;
GRANT USAGE ON SCHEMA inventory TO regress_t160_app, regress_t160_consumer,
	regress_t160_operator, regress_t160_relay;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.confirm(text, text), inventory.cancel(text, text, text),
	inventory.lookup(text, text), inventory.extend(text, text, timestamptz),
	inventory.amend(text, text, jsonb), inventory.availability(text, text[])
	TO regress_t160_app;
GRANT EXECUTE ON FUNCTION inventory.lookup(text, text),
	inventory.compensate(text, text, text) TO regress_t160_consumer;
GRANT EXECUTE ON FUNCTION inventory.restock(text, text, text, integer, text),
	inventory.adjust(text, text, text, bigint, text, text),
	inventory.expire_due(integer), inventory.check_invariants(),
	inventory.grant_tenant(text, regrole), inventory.revoke_tenant(text, regrole),
	inventory.requeue_dead_letters(bigint[], text), inventory.discard_dead_letters(bigint[], text),
	inventory.purge_published(interval, integer),
	inventory.set_stock_slots(text, text, integer),
	inventory.set_location(text, text, integer, boolean),
	inventory.set_allocation_policy(text, boolean),
	inventory.set_stock_policy(text, text, text, bigint, bigint),
	inventory.restock_at(text, text, text, text, integer, text),
	inventory.adjust_at(text, text, text, text, bigint, text, text)
	TO regress_t160_operator;
GRANT EXECUTE ON FUNCTION inventory.relay_claim(text, integer, interval),
	inventory.relay_mark_published(text, bigint[]),
	inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval),
	inventory.relay_release(text, bigint[]) TO regress_t160_relay;
SELECT inventory.grant_tenant('t160', 'regress_t160_app');
SELECT inventory.grant_tenant('t160', 'regress_t160_consumer');
SELECT inventory.grant_tenant('t160m', 'regress_t160_app');
SELECT inventory.grant_tenant('*', 'regress_t160_operator');

-- the data every call needs to reach each of its steps: A in one slot, S in
-- four (the slot fast path), a pending, a confirmed and a due reservation,
-- an outbox event leased to relay r160
SELECT inventory.restock('t160', 'rcpt-a', 'A', 100);
SELECT inventory.restock('t160', 'rcpt-s', 'S', 100);
SELECT inventory.set_stock_slots('t160', 'S', 4);
SELECT status FROM inventory.reserve('t160', 'pending', 'S', 1);
SELECT status FROM inventory.reserve('t160', 'pending-a', 'A', 1);
SELECT status FROM inventory.reserve('t160', 'sold', 'S', 1);
SELECT status FROM inventory.confirm('t160', 'sold');
SELECT status FROM inventory.reserve('t160', 'due', 'A', 1, '1 minute');
SELECT inventory.expire_due(100000) >= 0 AS drained_older_files;
-- t160m: two locations, so that allocation takes its first try (north,
-- short) and then its exact path (south); held-m, made at the clock the
-- probes run at, can be extended and amended
SELECT inventory.set_location('t160m', 'north', 1);
SELECT inventory.set_location('t160m', 'south', 2);
SELECT inventory.restock_at('t160m', 'rcpt-n', 'M', 'north', 1);
SELECT inventory.restock_at('t160m', 'rcpt-s', 'M', 'south', 10);
SET pg_inventory.frozen_now = '2026-10-01 00:00:00+00';
SELECT status, lines FROM inventory.reserve('t160m', 'held-m', 'M', 1, '1 hour');
RESET pg_inventory.frozen_now;
SELECT count(*) > 0 AS leased FROM inventory.relay_claim('r160', 10000);

-- the caller's own work, and what the extension's tables hold
CREATE TABLE t160_work (probe integer, done_as name);
GRANT INSERT, SELECT ON t160_work TO PUBLIC;
CREATE TEMP VIEW t160_state AS
SELECT (SELECT md5(string_agg(s::text, ',' ORDER BY s::text)) FROM inventory.stock_slot s) AS slots,
	   (SELECT md5(string_agg(r::text, ',' ORDER BY r.id)) FROM inventory.reservation r) AS reservations,
	   (SELECT count(*) FROM inventory.outbox) AS events,
	   (SELECT md5(string_agg(o.claimed_by || o.id, ',' ORDER BY o.id)) FROM inventory.outbox o) AS leases,
	   (SELECT count(*) FROM inventory.stock_ledger) AS ledger,
	   (SELECT count(*) FROM inventory.tenant_member) AS grants,
	   (SELECT md5(string_agg(l::text, ',' ORDER BY l::text)) FROM inventory.reservation_line l) AS lines,
	   (SELECT md5(string_agg(l::text, ',' ORDER BY l::text)) FROM inventory.stock_location l) AS stock_locations,
	   (SELECT md5(string_agg(l::text, ',' ORDER BY l::text)) FROM inventory.location l) AS locations,
	   (SELECT md5(string_agg(p::text, ',' ORDER BY p::text)) FROM inventory.allocation_policy p) AS policies,
	   (SELECT count(*) FROM inventory.operator_audit) AS audit_rows;
CREATE TEMP TABLE t160_before AS SELECT * FROM t160_state;

-- probe(n, role, call, step, code): as role, calls call with an error
-- injected at step; catches it; reports what was caught and who the caller
-- is afterwards, and does the caller's own work (an INSERT as that role)
CREATE FUNCTION pg_temp.probe(n integer, who name, call text, step text, code text)
RETURNS TABLE (caught text, role_after name, restored boolean)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_catalog.set_config('pg_inventory.test_fault', step || ':' || code, true);
	EXECUTE pg_catalog.format('SET LOCAL ROLE %I', who);
	caught := 'no error';
	BEGIN
		EXECUTE call;
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		caught := SQLSTATE;
	END;
	role_after := current_user;
	restored := current_user = who AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r
											 WHERE r.rolname = current_user);
	INSERT INTO t160_work VALUES (n, current_user);
	RESET ROLE;
	PERFORM pg_catalog.set_config('pg_inventory.test_fault', '', true);
	RETURN NEXT;
END
$$;

CREATE TEMP TABLE t160_call (fn text, who name, call text, steps text[]);
INSERT INTO t160_call VALUES
 ('reserve', 'regress_t160_app', $$SELECT * FROM inventory.reserve('t160', 'new', 'S', 1)$$,
  '{begin,slot_take,hold,end}'),
 ('reserve across slots', 'regress_t160_app', $$SELECT * FROM inventory.reserve('t160', 'new-big', 'S', 50)$$,
  '{begin,slot_take,slot_wait,hold,end}'),
 ('reserve_lines', 'regress_t160_app', $$SELECT * FROM inventory.reserve_lines('t160', 'new-cart', '[{"sku": "S", "quantity": 1}, {"sku": "A", "quantity": 1}]')$$,
  '{begin,slot_take,hold,end}'),
 ('confirm', 'regress_t160_app', $$SELECT * FROM inventory.confirm('t160', 'pending')$$,
  '{begin,slot_take,records,end}'),
 ('cancel', 'regress_t160_app', $$SELECT * FROM inventory.cancel('t160', 'pending-a', 'changed mind')$$,
  '{begin,records,end}'),
 ('cancel slotted', 'regress_t160_app', $$SELECT * FROM inventory.cancel('t160', 'pending', 'changed mind')$$,
  '{begin,slot_take,records,end}'),
 ('lookup', 'regress_t160_app', $$SELECT * FROM inventory.lookup('t160', 'pending')$$,
  '{begin,end}'),
 ('compensate', 'regress_t160_consumer', $$SELECT * FROM inventory.compensate('t160', 'sold', 'cannot ship')$$,
  '{begin,slot_take,records,end}'),
 ('restock', 'regress_t160_operator', $$SELECT inventory.restock('t160', 'rcpt-new', 'S', 5)$$,
  '{begin,ledger,end}'),
 ('adjust', 'regress_t160_operator', $$SELECT inventory.adjust('t160', 'adj-new', 'A', -1, 'loss', 'broken')$$,
  '{begin,ledger,end}'),
 ('expire_due', 'regress_t160_operator', $$SELECT inventory.expire_due(10)$$,
  '{begin,expire,end}'),
 ('check_invariants', 'regress_t160_operator', $$SELECT * FROM inventory.check_invariants()$$,
  '{begin,end}'),
 ('grant_tenant', 'regress_t160_operator', $$SELECT inventory.grant_tenant('t160', 'regress_t160_relay')$$,
  '{begin,end}'),
 ('revoke_tenant', 'regress_t160_operator', $$SELECT inventory.revoke_tenant('t160', 'regress_t160_app')$$,
  '{begin,end}'),
 ('set_stock_slots', 'regress_t160_operator', $$SELECT inventory.set_stock_slots('t160', 'S', 2)$$,
  '{begin,end}'),
 ('requeue_dead_letters', 'regress_t160_operator', $$SELECT inventory.requeue_dead_letters()$$,
  '{begin,end}'),
 ('discard_dead_letters', 'regress_t160_operator', $$SELECT inventory.discard_dead_letters('{1}', 'probe')$$,
  '{begin,end}'),
 ('purge_published', 'regress_t160_operator', $$SELECT inventory.purge_published('0', 10)$$,
  '{begin,end}'),
 ('relay_claim', 'regress_t160_relay', $$SELECT * FROM inventory.relay_claim('r160b', 10)$$,
  '{begin,end}'),
 ('relay_mark_published', 'regress_t160_relay', $$SELECT inventory.relay_mark_published('r160', ARRAY(SELECT id FROM inventory.outbox))$$,
  '{begin,end}'),
 ('relay_mark_failed', 'regress_t160_relay', $$SELECT inventory.relay_mark_failed('r160', ARRAY(SELECT id FROM inventory.outbox), 'nack')$$,
  '{begin,end}'),
 ('relay_release', 'regress_t160_relay', $$SELECT inventory.relay_release('r160', ARRAY(SELECT id FROM inventory.outbox))$$,
  '{begin,end}'),
 ('reserve_lines allocated', 'regress_t160_app', $$SELECT * FROM inventory.reserve_lines('t160m', 'new-m', '[{"sku": "M", "quantity": 5}]')$$,
  '{begin,slot_take,hold,end}'),
 ('reserve_lines pinned', 'regress_t160_app', $$SELECT * FROM inventory.reserve_lines('t160m', 'new-p', '[{"sku": "M", "quantity": 1, "location": "south"}]')$$,
  '{begin,slot_take,hold,end}'),
 ('extend', 'regress_t160_app', $$SELECT * FROM inventory.extend('t160m', 'held-m', '2026-10-01 02:00:00+00')$$,
  '{begin,end}'),
 ('amend', 'regress_t160_app', $$SELECT * FROM inventory.amend('t160m', 'held-m', '[{"sku": "M", "quantity": 2}]')$$,
  '{begin,slot_take,records,end}'),
 ('availability', 'regress_t160_app', $$SELECT * FROM inventory.availability('t160m', '{M}')$$,
  '{begin,end}'),
 ('set_location', 'regress_t160_operator', $$SELECT inventory.set_location('t160m', 'west', 3)$$,
  '{begin,end}'),
 ('set_allocation_policy', 'regress_t160_operator', $$SELECT inventory.set_allocation_policy('t160m', true)$$,
  '{begin,end}'),
 ('set_stock_policy', 'regress_t160_operator', $$SELECT inventory.set_stock_policy('t160m', 'M', 'south', 1, 2)$$,
  '{begin,end}'),
 ('restock_at', 'regress_t160_operator', $$SELECT inventory.restock_at('t160m', 'rcpt-m2', 'M', 'north', 3)$$,
  '{begin,ledger,end}'),
 ('adjust_at', 'regress_t160_operator', $$SELECT inventory.adjust_at('t160m', 'adj-m', 'M', 'south', -1, 'loss', 'broken')$$,
  '{begin,ledger,end}');
-- the relay role reads the ids it passes (the relay gets them from relay_claim)
GRANT SELECT ON inventory.outbox TO regress_t160_relay;

-- every function, every step it reaches, every kind of error; 'due' is at
-- its expiry from here on, so expire_due reaches its release
SET pg_inventory.frozen_now = '2026-10-01 00:05:00+00';
BEGIN;
CREATE TEMP TABLE t160_result AS
SELECT row_number() OVER (ORDER BY c.fn, s.step, k.code) AS n, c.fn, s.step, k.code,
	   p.caught, p.role_after = c.who AS same_role, p.restored
  FROM t160_call c
 CROSS JOIN LATERAL unnest(c.steps) AS s(step)
 CROSS JOIN unnest('{XX000,40001,55P03,40P01,22003,cancel}'::text[]) AS k(code)
 CROSS JOIN LATERAL pg_temp.probe(0, c.who, c.call, s.step, k.code) AS p
 ORDER BY c.fn, s.step, k.code;
-- still inside the caller's transaction, as the superuser that began it
SELECT current_user, count(*) AS probes FROM t160_result;
COMMIT;

-- every probe caught exactly the error injected, as the caller, and the
-- caller's own INSERT went through and committed.  The one exception is by
-- design: expire_due skips a reservation whose release fails with a data
-- error (class 22) with a WARNING, so that one bad row never stops expiry.
CREATE TEMP VIEW t160_expected AS
SELECT r.*, CASE WHEN fn = 'expire_due' AND step = 'expire' AND code LIKE '22%'
				 THEN 'no error'
				 WHEN code = 'cancel' THEN '57014' ELSE code END AS expected
  FROM t160_result r;
SELECT count(*) AS probes,
	   count(*) FILTER (WHERE caught = expected) AS caught_as_expected,
	   count(*) FILTER (WHERE same_role AND restored) AS caller_restored
  FROM t160_expected;
SELECT fn, step, code, caught, expected, same_role, restored
  FROM t160_expected
 WHERE caught <> expected OR NOT same_role OR NOT restored
 ORDER BY 1, 2, 3;
SELECT count(*) AS own_work_committed, bool_and(done_as LIKE 'regress\_t160\_%') AS done_as_caller
  FROM t160_work;
SELECT fn, array_agg(DISTINCT step ORDER BY step) AS steps_reached
  FROM t160_result GROUP BY fn ORDER BY fn;

-- and none of the failed calls changed anything
SELECT b IS NOT DISTINCT FROM a AS nothing_changed
  FROM t160_before b, t160_state a;

/* ----------------------------------------------------------------------
 * The same from a client: an error under a SAVEPOINT, rolled back to it
 * ------------------------------------------------------------------- */
BEGIN;
SET LOCAL pg_inventory.test_fault = 'slot_take:40001';
SET LOCAL ROLE regress_t160_app;
SAVEPOINT before_call;
SELECT status FROM inventory.reserve('t160', 'new', 'S', 1);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO SAVEPOINT before_call;
SELECT current_user;
INSERT INTO t160_work VALUES (-1, current_user);
-- the caller did not become the owner: no superuser's catalog for it
SAVEPOINT no_escalation;
SELECT count(*) FROM pg_catalog.pg_authid;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO SAVEPOINT no_escalation;
COMMIT;
SELECT probe, done_as FROM t160_work WHERE probe = -1;

/* ----------------------------------------------------------------------
 * Autocommit: the caught error leaves no open subtransaction behind, so
 * the next statements and transactions run as usual
 * ------------------------------------------------------------------- */
SET pg_inventory.test_fault = 'slot_take:40001';
SET ROLE regress_t160_app;
DO $$
BEGIN
	PERFORM inventory.reserve('t160', 'new', 'S', 1);
EXCEPTION WHEN serialization_failure THEN
	NULL;
END
$$;
SELECT current_user;
RESET ROLE;
RESET pg_inventory.test_fault;
BEGIN;
SELECT 1 AS still_connected;
COMMIT;

-- without a fault the same calls work, as the caller
SET ROLE regress_t160_app;
SELECT status, applied FROM inventory.reserve('t160', 'new', 'S', 1);
SELECT current_user;
RESET ROLE;
SELECT * FROM inventory.check_invariants();

-- the fault point itself is for superusers only
SET ROLE regress_t160_app;
SET pg_inventory.test_fault = 'begin';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET pg_inventory.test_fault = 'begin:4000';
\echo :LAST_ERROR_SQLSTATE

DROP TABLE t160_work;
DROP OWNED BY regress_t160_app, regress_t160_consumer, regress_t160_operator,
	regress_t160_relay;
DROP ROLE regress_t160_app, regress_t160_consumer, regress_t160_operator,
	regress_t160_relay;
