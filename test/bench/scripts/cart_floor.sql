-- test/bench/scripts/cart_floor.sql: the floor for a 3-line cart: one
-- statement, as superuser.  Claims the key, locks the three stock rows in
-- sku order, holds all lines only if every line has enough (all or
-- nothing), writes the lines, the transition and the event with the
-- extension's payload.  Variables as in cart_ext.sql.
-- (The timestamp format is written replace('..#MI#SS..', '#', ':'): pgbench
-- would take ":MI" in a literal for a variable.  The planner folds it.)
\set n :n + 1
\set s1 random(1, 3333)
\set s2 random(3334, 6666)
\set s3 random(6667, 10000)
WITH m(sku, qty) AS (
	VALUES (concat('sku-', lpad(:s1::text, 5, '0')), 1),
		   (concat('sku-', lpad(:s2::text, 5, '0')), 1),
		   (concat('sku-', lpad(:s3::text, 5, '0')), 1)),
c AS (
	INSERT INTO inventory.reservation AS r
		(tenant, request_key, state, expires_at, version, created_at, updated_at)
	VALUES ('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int), 'pending',
		now() + interval '1 hour', 1, now(), now())
	ON CONFLICT DO NOTHING
	RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at),
lk AS (
	SELECT s.sku, s.available FROM inventory.stock_slot s
	 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = 'bench' AND s.sku IN (SELECT m.sku FROM m) AND EXISTS (SELECT 1 FROM c)
	 ORDER BY s.sku FOR UPDATE OF s),
ok AS (
	SELECT count(*) = 3 AS ok FROM lk JOIN m ON m.sku = lk.sku WHERE lk.available >= m.qty),
s AS (
	UPDATE inventory.stock_slot s
	   SET available = s.available - m.qty, reserved = s.reserved + m.qty, updated_at = now()
	  FROM lk JOIN m ON m.sku = lk.sku, ok
	 WHERE ok.ok AND s.slot = 0 AND s.location = 'default' AND s.tenant = 'bench' AND s.sku = lk.sku
	RETURNING s.tenant, s.sku, s.location, m.qty),
l AS (
	INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
	SELECT c.id, c.tenant, s.sku, s.location, s.qty FROM c, s),
t AS (
	INSERT INTO inventory.reservation_transition
		(reservation_id, from_state, to_state, reason, actor, version, created_at)
	SELECT c.id, NULL, c.state, NULL, current_user, c.version, now()
	  FROM c WHERE EXISTS (SELECT 1 FROM s)),
e AS (SELECT gen_random_uuid() AS event_id)
INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
SELECT e.event_id, 'reservation.reserved', c.tenant, c.id,
	jsonb_build_object('event_id', e.event_id, 'event_type', 'reservation.reserved',
		'tenant', c.tenant, 'request_key', c.request_key, 'reservation_id', c.id,
		'state', c.state, 'version', c.version, 'reason', NULL::text,
		'lines', (SELECT jsonb_agg(jsonb_build_object('sku', s.sku, 'location', s.location, 'quantity', s.qty)
							 ORDER BY s.sku) FROM s),
		'expires_at', to_char(c.expires_at AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':')),
		'occurred_at', to_char(now() AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':'))),
	now()
FROM c, e WHERE EXISTS (SELECT 1 FROM s);
