-- test/bench/scripts/reserve_client.sql: the client-side way, as an ORM
-- would do it: one transaction of separate statements (each a round trip),
-- the stock row locked first, as superuser.  The event payload is built by
-- the server from the values the client holds (same shape as the
-- extension's).  Variables as in reserve_ext.sql.
-- (The timestamp format is written replace('..#MI#SS..', '#', ':'): pgbench
-- would take ":MI" in a literal for a variable.  The planner folds it.)
\set n :n + 1
\if :hot
\set s :hotsku
\else
\set s random(1, 10000)
\endif
BEGIN;
SELECT available FROM inventory.stock_slot
 WHERE slot = 0 AND location = 'default' AND tenant = 'bench' AND sku = concat('sku-', lpad(:s::text, 5, '0')) FOR UPDATE \gset
\if :available >= 1
UPDATE inventory.stock_slot SET available = available - 1, reserved = reserved + 1, updated_at = now()
 WHERE slot = 0 AND location = 'default' AND tenant = 'bench' AND sku = concat('sku-', lpad(:s::text, 5, '0'));
INSERT INTO inventory.reservation
	(tenant, request_key, state, expires_at, version, created_at, updated_at)
VALUES ('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int), 'pending',
	now() + interval '1 hour', 1, now(), now())
ON CONFLICT DO NOTHING RETURNING id AS rid, expires_at AS rexp \gset
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
VALUES (:rid::bigint, 'bench', concat('sku-', lpad(:s::text, 5, '0')), 'default', 1);
INSERT INTO inventory.reservation_transition
	(reservation_id, from_state, to_state, reason, actor, version, created_at)
VALUES (:rid::bigint, NULL, 'pending', NULL, current_user, 1, now());
INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
SELECT e.event_id, 'reservation.reserved', 'bench', :rid::bigint,
	jsonb_build_object('event_id', e.event_id, 'event_type', 'reservation.reserved',
		'tenant', 'bench', 'request_key', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
		'reservation_id', :rid::bigint, 'state', 'pending', 'version', 1, 'reason', NULL::text,
		'lines', jsonb_build_array(jsonb_build_object('sku',
			concat('sku-', lpad(:s::text, 5, '0')), 'location', 'default', 'quantity', 1)),
		'expires_at', to_char((:rexp)::timestamptz AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':')),
		'occurred_at', to_char(now() AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':'))),
	now()
FROM (SELECT gen_random_uuid() AS event_id) e;
COMMIT;
\else
ROLLBACK;
\endif
