-- test/bench/scripts/cart_client.sql: the client-side way for a 3-line
-- cart, as an ORM would do it: lock the three stock rows in sku order and
-- check them, one UPDATE per line, the reservation, one multi-row INSERT of
-- the lines, the transition and the event, each a round trip, as
-- superuser.  Variables as in cart_ext.sql.
-- (The timestamp format is written replace('..#MI#SS..', '#', ':'): pgbench
-- would take ":MI" in a literal for a variable.  The planner folds it.)
\set n :n + 1
\set s1 random(1, 3333)
\set s2 random(3334, 6666)
\set s3 random(6667, 10000)
BEGIN;
SELECT count(*) AS nok FROM (
	SELECT s.sku, s.available FROM inventory.stock_slot s
	 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = 'bench' AND s.sku IN (concat('sku-', lpad(:s1::text, 5, '0')),
		concat('sku-', lpad(:s2::text, 5, '0')), concat('sku-', lpad(:s3::text, 5, '0')))
	 ORDER BY s.sku FOR UPDATE) AS x
 WHERE x.available >= 1 \gset
\if :nok = 3
UPDATE inventory.stock_slot SET available = available - 1, reserved = reserved + 1, updated_at = now()
 WHERE slot = 0 AND location = 'default' AND tenant = 'bench' AND sku = concat('sku-', lpad(:s1::text, 5, '0'));
UPDATE inventory.stock_slot SET available = available - 1, reserved = reserved + 1, updated_at = now()
 WHERE slot = 0 AND location = 'default' AND tenant = 'bench' AND sku = concat('sku-', lpad(:s2::text, 5, '0'));
UPDATE inventory.stock_slot SET available = available - 1, reserved = reserved + 1, updated_at = now()
 WHERE slot = 0 AND location = 'default' AND tenant = 'bench' AND sku = concat('sku-', lpad(:s3::text, 5, '0'));
INSERT INTO inventory.reservation
	(tenant, request_key, state, expires_at, version, created_at, updated_at)
VALUES ('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int), 'pending',
	now() + interval '1 hour', 1, now(), now())
ON CONFLICT DO NOTHING RETURNING id AS rid, expires_at AS rexp \gset
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
VALUES (:rid::bigint, 'bench', concat('sku-', lpad(:s1::text, 5, '0')), 'default', 1),
	   (:rid::bigint, 'bench', concat('sku-', lpad(:s2::text, 5, '0')), 'default', 1),
	   (:rid::bigint, 'bench', concat('sku-', lpad(:s3::text, 5, '0')), 'default', 1);
INSERT INTO inventory.reservation_transition
	(reservation_id, from_state, to_state, reason, actor, version, created_at)
VALUES (:rid::bigint, NULL, 'pending', NULL, current_user, 1, now());
INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
SELECT e.event_id, 'reservation.reserved', 'bench', :rid::bigint,
	jsonb_build_object('event_id', e.event_id, 'event_type', 'reservation.reserved',
		'tenant', 'bench', 'request_key', concat(:pfx::text, '-', :client_id::int, '-', :n::int),
		'reservation_id', :rid::bigint, 'state', 'pending', 'version', 1, 'reason', NULL::text,
		'lines', jsonb_build_array(
			jsonb_build_object('sku', concat('sku-', lpad(:s1::text, 5, '0')), 'location', 'default', 'quantity', 1),
			jsonb_build_object('sku', concat('sku-', lpad(:s2::text, 5, '0')), 'location', 'default', 'quantity', 1),
			jsonb_build_object('sku', concat('sku-', lpad(:s3::text, 5, '0')), 'location', 'default', 'quantity', 1)),
		'expires_at', to_char((:rexp)::timestamptz AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':')),
		'occurred_at', to_char(now() AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':'))),
	now()
FROM (SELECT gen_random_uuid() AS event_id) e;
COMMIT;
\else
ROLLBACK;
\endif
