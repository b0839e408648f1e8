-- test/bench/scripts/reserve_floor.sql: the floor.  The durable work of a
-- reserve as ONE statement (a data-modifying CTE), as superuser (only the
-- extension's owner may write the tables): the idempotency claim on the
-- (tenant, request_key) unique key, the guarded stock update (only if
-- enough, and only if the key was new), the line, the transition
-- NULL -> pending and the reservation.reserved event with the extension's
-- payload.  No authorisation check, no stored rejection (stock is ample).
-- Variables as in reserve_ext.sql.
-- (The timestamp format is written replace('..#MI#SS..', '#', ':'): pgbench
-- would take ":MI" in a literal for a variable.  The planner folds it.)
\set n :n + 1
\if :hot
\set s :hotsku
\else
\set s random(1, 10000)
\endif
WITH c AS (
	INSERT INTO inventory.reservation AS r
		(tenant, request_key, state, expires_at, version, created_at, updated_at)
	VALUES ('bench', concat(:pfx::text, '-', :client_id::int, '-', :n::int), 'pending',
		now() + interval '1 hour', 1, now(), now())
	ON CONFLICT DO NOTHING
	RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at),
s AS (
	UPDATE inventory.stock_slot s
	   SET available = s.available - 1, reserved = s.reserved + 1, updated_at = now()
	 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = 'bench' AND s.sku = concat('sku-', lpad(:s::text, 5, '0'))
	   AND s.available >= 1 AND EXISTS (SELECT 1 FROM c)
	RETURNING s.tenant, s.sku, s.location),
l AS (
	INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
	SELECT c.id, c.tenant, s.sku, s.location, 1 FROM c, s),
t AS (
	INSERT INTO inventory.reservation_transition
		(reservation_id, from_state, to_state, reason, actor, version, created_at)
	SELECT c.id, NULL, c.state, NULL, current_user, c.version, now() FROM c, s),
e AS (SELECT gen_random_uuid() AS event_id)
INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
SELECT e.event_id, 'reservation.reserved', c.tenant, c.id,
	jsonb_build_object('event_id', e.event_id, 'event_type', 'reservation.reserved',
		'tenant', c.tenant, 'request_key', c.request_key, 'reservation_id', c.id,
		'state', c.state, 'version', c.version, 'reason', NULL::text,
		'lines', jsonb_build_array(jsonb_build_object('sku', s.sku, 'location', s.location, 'quantity', 1)),
		'expires_at', to_char(c.expires_at AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':')),
		'occurred_at', to_char(now() AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':'))),
	now()
FROM c, s, e;
