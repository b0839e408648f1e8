-- 240_console: the DBA's console of 0.5 (README "The DBA's console",
-- issue #14): inventory.clock() under pg_inventory.frozen_now and without
-- it; the views pending_hold and pending_hold_summary (due by the clock);
-- reservation_metrics (pending, due and not swept, transitions of the last
-- minute and hour); the shape of worker_status (the worker after a pass:
-- 110_worker); the operator audit written by each audited function when,
-- and only when, it changed something; the reason of discard_dead_letters;
-- and the one rule for hand repairs: UPDATE inventory.stock is refused.
\set VERBOSITY sqlstate
-- every pending reservation of earlier files expires (at 2100, for that
-- transaction only): reservation_metrics counts every tenant
\ir include/drain.sql
SET pg_inventory.frozen_now = '2031-03-03 12:00:00+00';

-- this file's tenants are t240...: counts, stk and :oc (include/tenant.sql)
\set prefix t240
\ir include/tenant.sql
-- the audit rows of this file: those after the last one written before it
SELECT coalesce(max(id), 0) AS audit_start FROM inventory.operator_audit \gset
CREATE TEMP VIEW audit AS
SELECT action, tenant, detail, reason, actor = current_user AS by_me,
       at = inventory.clock() AS at_clock
  FROM inventory.operator_audit WHERE id > :audit_start;
SELECT count(*) AS audit_rows FROM audit;

------------------------------------------------------------------------
-- inventory.clock(): frozen_now when set, else the real clock at the call
------------------------------------------------------------------------
SELECT inventory.clock() = '2031-03-03 12:00:00+00'::timestamptz AS frozen;
BEGIN;
RESET pg_inventory.frozen_now;
SELECT clock_timestamp() AS before_call \gset
SELECT inventory.clock() BETWEEN :'before_call' AND clock_timestamp() AS real_clock,
       inventory.clock() > now() AS not_the_transaction_start;
ROLLBACK;
SELECT inventory.clock() = '2031-03-03 12:00:00+00'::timestamptz AS frozen_again;
SELECT provolatile, pg_get_function_result(oid) AS result
  FROM pg_proc WHERE oid = 'inventory.clock()'::regprocedure;

------------------------------------------------------------------------
-- pending_hold, pending_hold_summary: the lines of pending reservations
------------------------------------------------------------------------
SELECT inventory.restock('t240', 'rcpt-a', 'A', 10);
SELECT inventory.set_location('t240', 'east', 50);
SELECT inventory.restock_at('t240', 'rcpt-b', 'B', 'east', 5);
SELECT :oc FROM inventory.reserve('t240', 'short', 'A', 3, '1 minute');
SELECT :oc FROM inventory.reserve_lines('t240', 'cart',
	'[{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}]', '1 hour');
SELECT :oc FROM inventory.reserve('t240', 'too-many', 'A', 100);
SELECT :oc FROM inventory.reserve('t240', 'to-confirm', 'A', 1);
SELECT :oc FROM inventory.reserve('t240', 'to-cancel', 'B', 1);
SELECT :oc FROM inventory.reserve('t240', 'to-compensate', 'B', 1);
SELECT status FROM inventory.confirm('t240', 'to-confirm');
SELECT status FROM inventory.cancel('t240', 'to-cancel', 'changed mind');
SELECT status FROM inventory.confirm('t240', 'to-compensate');
SELECT status FROM inventory.compensate('t240', 'to-compensate', 'lost in transit');

-- two minutes later: 'short' is due, not yet swept
SET pg_inventory.frozen_now = '2031-03-03 12:02:00+00';
SELECT tenant, request_key, sku, location, quantity,
       expires_at - inventory.clock() AS expires_in, due,
       created_at = '2031-03-03 12:00:00+00' AS created_then,
       reservation_id = (SELECT id FROM inventory.reservation r
                          WHERE r.tenant = h.tenant AND r.request_key = h.request_key) AS id_ok
  FROM inventory.pending_hold h WHERE tenant LIKE 't240%'
 ORDER BY request_key, sku, location;
SELECT tenant, sku, location, holds, units,
       earliest_expiry - inventory.clock() AS earliest_in, due_holds, due_units
  FROM inventory.pending_hold_summary WHERE tenant LIKE 't240%'
 ORDER BY tenant, sku, location;
-- the summary's units are the reserved counters at each location
SELECT l.sku, l.location, l.reserved, coalesce(s.units, 0) AS held_units
  FROM inventory.location_stock l
  LEFT JOIN inventory.pending_hold_summary s USING (tenant, sku, location)
 WHERE l.tenant = 't240' ORDER BY 1, 2;

------------------------------------------------------------------------
-- reservation_metrics: one row for every tenant, by the clock
------------------------------------------------------------------------
SELECT * FROM inventory.reservation_metrics;
-- a minute later the last minute is empty, the last hour is not
SET pg_inventory.frozen_now = '2031-03-03 12:03:00+00';
SELECT confirmed_last_minute, cancelled_last_minute, rejected_last_minute,
       compensated_last_minute, confirmed_last_hour, cancelled_last_hour,
       rejected_last_hour, compensated_last_hour
  FROM inventory.reservation_metrics;
-- the sweep: nothing due any more, one expiry in the last minute
SELECT inventory.expire_due() AS expired;
SELECT pending, due_unswept, expired_last_minute, expired_last_hour,
       oldest_pending_at = '2031-03-03 12:00:00+00' AS oldest_then
  FROM inventory.reservation_metrics;
SELECT request_key, due FROM inventory.pending_hold
 WHERE tenant LIKE 't240%' ORDER BY request_key, sku;
-- an hour and more later: nothing in the window
SET pg_inventory.frozen_now = '2031-03-03 13:03:00+00';
SELECT pending, due_unswept, expired_last_hour, confirmed_last_hour
  FROM inventory.reservation_metrics;
SELECT inventory.expire_due() AS expired;
SELECT pending, due_unswept, oldest_pending_at FROM inventory.reservation_metrics;
SET pg_inventory.frozen_now = '2031-03-03 12:03:00+00';

------------------------------------------------------------------------
-- worker_status: one row of a fixed shape, whether the worker runs or not
-- (110_worker checks it after a pass of a running worker)
------------------------------------------------------------------------
SELECT pg_get_function_result('inventory.worker_status()'::regprocedure) AS result;
SELECT count(*) AS rows,
       bool_and(launcher_state IN ('stopped', 'checking', 'no_database',
                                   'worker_running', 'no_extension', 'retry')) AS launcher_state_known,
       bool_and(worker_state IN ('stopped', 'starting', 'idle', 'expiring', 'purging',
                                 'purging_history', 'advancing', 'slotting')) AS worker_state_known,
       bool_and(worker_exit IS NULL OR worker_exit IN ('no_extension', 'extension_dropped', 'terminated')) AS exit_known,
       bool_and(enabled = (database IS NOT NULL)) AS database_when_enabled,
       bool_and(total_expired >= last_pass_expired AND total_purged >= last_pass_purged) AS totals_include_last_pass
  FROM inventory.worker_status;
SELECT (SELECT count(*) FROM inventory.worker_status()) = 1 AS function_one_row;

------------------------------------------------------------------------
-- the operator audit: one row per call that changed something
------------------------------------------------------------------------
-- the set_location of the setup above
SELECT action, tenant, detail, reason, by_me FROM audit;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;
CREATE ROLE regress_t240_operator NOLOGIN;
SELECT inventory.grant_tenant('t240', 'regress_t240_operator') AS granted;
SELECT inventory.grant_tenant('t240', 'regress_t240_operator') AS granted_again;
SELECT inventory.grant_tenant('*', 'regress_t240_operator') AS granted_all;
SELECT inventory.revoke_tenant('t240-none', 'regress_t240_operator') AS revoked_nothing;
SELECT inventory.revoke_tenant('*', 'regress_t240_operator') AS revoked_all;
SELECT action, tenant, detail, reason, by_me, at_clock FROM audit ORDER BY 1, 2;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- locations: created (old null), changed (old and new), the same (no row);
-- by an operator role, the actor is that role
GRANT USAGE ON SCHEMA inventory TO regress_t240_operator;
GRANT EXECUTE ON FUNCTION inventory.set_location(text, text, integer, boolean)
	TO regress_t240_operator;
SELECT inventory.set_location('t240', 'west') AS created;
SET ROLE regress_t240_operator;
SELECT inventory.set_location('t240', 'west', 200, false) AS changed;
SELECT inventory.set_location('t240', 'west', 200, false) AS unchanged;
RESET ROLE;
SELECT action, tenant, detail, reason, by_me, at_clock FROM audit ORDER BY detail->'old' NULLS FIRST;
SELECT actor FROM inventory.operator_audit
 WHERE id > :audit_start AND actor <> current_user;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- the allocation policy: false to true, the same, back
SELECT inventory.set_allocation_policy('t240', false) AS unchanged_default;
SELECT inventory.set_allocation_policy('t240', true) AS to_split;
SELECT inventory.set_allocation_policy('t240', true) AS unchanged;
SELECT inventory.set_allocation_policy('t240', false) AS back;
SELECT action, tenant, detail FROM audit ORDER BY detail->'new'->>'allow_split' DESC;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- the stock policy: counters made at a new location (old null), changed,
-- the same, a threshold cleared
SELECT inventory.set_stock_policy('t240', 'A', 'west', 2) AS created_there;
SELECT inventory.set_stock_policy('t240', 'A', 'default', 1, 3) AS changed;
SELECT inventory.set_stock_policy('t240', 'A', 'default', 1, 3) AS unchanged;
SELECT inventory.set_stock_policy('t240', 'A', 'default', 1) AS threshold_cleared;
SELECT action, tenant, detail FROM audit ORDER BY detail->>'location' DESC, detail->'new'->'low_threshold';
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- slots: a new count, the same count (a rebalance, no row)
SELECT inventory.set_stock_slots('t240', 'A', 4) AS old_slots;
SELECT inventory.set_stock_slots('t240', 'A', 4) AS old_slots;
SELECT inventory.set_stock_slots('t240', 'A', 1) AS old_slots;
SELECT action, tenant, detail FROM audit ORDER BY detail->'new'->'slots' DESC;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- dead letters (made by hand here: the relay's path is 140_outbox_relay):
-- the two stock.restocked events of t240
UPDATE inventory.outbox SET dead_at = inventory.clock(), attempts = 10,
       last_error = 'NO_ROUTE'
 WHERE tenant = 't240' AND event_type = 'stock.restocked' AND published_at IS NULL;
SELECT min(id) AS dead_a, max(id) AS dead_b FROM inventory.outbox
 WHERE tenant = 't240' AND dead_at IS NOT NULL \gset
-- discard needs a reason of 1 to 1000 characters; nothing is deleted else
SELECT inventory.discard_dead_letters(ARRAY[:dead_a]::bigint[], NULL);
SELECT inventory.discard_dead_letters(ARRAY[:dead_a]::bigint[], '');
SELECT inventory.discard_dead_letters(ARRAY[:dead_a]::bigint[], '   ');
SELECT inventory.discard_dead_letters(ARRAY[:dead_a]::bigint[], repeat('x', 1001));
SELECT inventory.discard_dead_letters(ARRAY[:dead_a]::bigint[]);
SELECT inventory.requeue_dead_letters(ARRAY[:dead_a]::bigint[], repeat('x', 1001));
SELECT count(*) AS dead_letters FROM inventory.outbox
 WHERE tenant = 't240' AND dead_at IS NOT NULL;
SELECT count(*) AS audit_rows FROM audit;
-- requeue one with a reason, discard the other with one
SELECT inventory.requeue_dead_letters(ARRAY[:dead_a]::bigint[], 'route bound again') AS requeued;
SELECT inventory.requeue_dead_letters(ARRAY[:dead_a]::bigint[], 'again') AS requeued_again;
SELECT inventory.discard_dead_letters(ARRAY[:dead_b, -1]::bigint[], 'restock entered twice, see ticket 42') AS discarded;
SELECT inventory.discard_dead_letters(ARRAY[:dead_b]::bigint[], 'again') AS discarded_again;
SELECT action, tenant, reason,
       detail->'ids' = to_jsonb(CASE action WHEN 'requeue_dead_letters' THEN ARRAY[:dead_a]
                                ELSE ARRAY[:dead_b, -1] END::bigint[]) AS ids_asked,
       coalesce(detail->'requeued', detail->'discarded') AS how_many,
       detail->'events'->0->>'id' = CASE action WHEN 'requeue_dead_letters' THEN :dead_a
                                    ELSE :dead_b END::text AS event_id_ok,
       detail->'events'->0->>'event_type' AS event_type,
       detail->'events'->0->>'tenant' AS event_tenant,
       detail->'events'->0->>'last_error' AS last_error,
       detail->'events'->0->'payload'->>'sku' AS payload_sku,
       by_me, at_clock
  FROM audit ORDER BY action DESC;
SELECT id = :dead_a AS requeued_one, dead_at IS NULL AS live, attempts
  FROM inventory.outbox WHERE tenant = 't240' AND event_type = 'stock.restocked';
-- requeue with no ids and no reason still works (every dead letter)
SELECT inventory.requeue_dead_letters() >= 0 AS requeued_all;
-- the one-argument discard of 0.4 is gone; its grants went to the new one
SELECT to_regprocedure('inventory.discard_dead_letters(bigint[])') IS NULL AS old_discard_gone,
       to_regprocedure('inventory.requeue_dead_letters(bigint[])') IS NULL AS old_requeue_gone;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- nobody but the owner writes the audit; config dump keeps it
SELECT has_table_privilege('regress_t240_operator', 'inventory.operator_audit', 'INSERT') AS operator_inserts;
SELECT count(*) AS dumped FROM pg_extension e, unnest(e.extconfig) c
 WHERE e.extname = 'pg_inventory'
   AND c IN ('inventory.operator_audit'::regclass, 'inventory.operator_audit_id_seq'::regclass);

------------------------------------------------------------------------
-- readers of the views: SELECT on the view, EXECUTE on the functions it
-- calls (a view calls functions with the reader's privileges)
------------------------------------------------------------------------
GRANT SELECT ON inventory.pending_hold, inventory.reservation_metrics,
	inventory.worker_status TO regress_t240_operator;
SET ROLE regress_t240_operator;
SELECT count(*) FROM inventory.pending_hold;
SELECT count(*) FROM inventory.worker_status;
RESET ROLE;
GRANT EXECUTE ON FUNCTION inventory.clock(), inventory.worker_status()
	TO regress_t240_operator;
SET ROLE regress_t240_operator;
SELECT count(*) >= 0 AS reads_pending_hold FROM inventory.pending_hold;
SELECT pending >= 0 AS reads_metrics FROM inventory.reservation_metrics;
SELECT count(*) AS reads_worker_status FROM inventory.worker_status;
-- the tables behind them stay closed
SELECT count(*) FROM inventory.reservation;
RESET ROLE;

------------------------------------------------------------------------
-- hand repairs: UPDATE inventory.stock is refused, even for a superuser;
-- a correction is adjust with a reason (a ledger record and its event)
------------------------------------------------------------------------
SELECT * FROM stk ORDER BY sku;
\set VERBOSITY default
UPDATE inventory.stock SET available = available + 1 WHERE tenant = 't240' AND sku = 'A';
\set VERBOSITY sqlstate
UPDATE inventory.stock SET slots = 2 WHERE tenant = 't240' AND sku = 'A';
SELECT * FROM stk ORDER BY sku;
SELECT inventory.adjust('t240', 'count-1', 'A', 1, 'correction', 'found one on the shelf') AS available;
SELECT * FROM stk ORDER BY sku;
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't240%';

-- leave no role behind
SELECT inventory.revoke_tenant('t240', 'regress_t240_operator') AS revoked;
DROP OWNED BY regress_t240_operator;
DROP ROLE regress_t240_operator;
DELETE FROM inventory.operator_audit WHERE id > :audit_start;

-- found by review: the audit's old values are the ones the call replaced,
-- also for a location another call created (restock makes 'default')
SELECT inventory.restock('t240-audit', 'rcpt-1', 'A', 1);
SELECT inventory.set_location('t240-audit', 'default', 500);
SELECT detail->'old' AS old, detail->'new' AS new
  FROM inventory.operator_audit
 WHERE action = 'set_location' AND tenant = 't240-audit' ORDER BY id;
-- and the views that filter rows are security barriers: a reader's own
-- function in a WHERE never sees the rows they leave out
SELECT c.relname, c.reloptions FROM pg_catalog.pg_class c
 WHERE c.relnamespace = 'inventory'::regnamespace
   AND c.relname IN ('pending_hold', 'pending_hold_summary') ORDER BY 1;
DELETE FROM inventory.operator_audit WHERE tenant = 't240-audit';
