-- test/bench/scripts/confirm_floor.sql: the floor for confirm: one
-- statement, as superuser: the guarded update of the reservation (pending,
-- not due) with its version, the stock move reserved -> consumed of its
-- lines, the transition pending -> confirmed and the reservation.confirmed
-- event with the stored lines.  Variables as in confirm_ext.sql.
-- (The timestamp format is written replace('..#MI#SS..', '#', ':'): pgbench
-- would take ":MI" in a literal for a variable.  The planner folds it.)
\set n :n + 1
WITH r AS (
	UPDATE inventory.reservation r
	   SET state = 'confirmed', version = r.version + 1, updated_at = now()
	 WHERE r.tenant = 'bench' AND r.request_key = concat(:pfx::text, '-', :client_id::int, '-', :n::int)
	   AND r.state = 'pending' AND r.expires_at > now()
	RETURNING r.id, r.tenant, r.request_key, r.state, r.version, r.expires_at),
l AS (
	SELECT l.tenant, l.sku, l.location, l.quantity FROM inventory.reservation_line l
	  JOIN r ON l.reservation_id = r.id),
s AS (
	UPDATE inventory.stock_slot s
	   SET reserved = s.reserved - l.quantity, consumed = s.consumed + l.quantity,
		   updated_at = now()
	  FROM l WHERE s.slot = 0 AND s.tenant = l.tenant AND s.sku = l.sku AND s.location = l.location
	RETURNING s.sku),
t AS (
	INSERT INTO inventory.reservation_transition
		(reservation_id, from_state, to_state, reason, actor, version, created_at)
	SELECT r.id, 'pending', r.state, NULL, current_user, r.version, now() FROM r),
e AS (SELECT gen_random_uuid() AS event_id)
INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
SELECT e.event_id, 'reservation.confirmed', r.tenant, r.id,
	jsonb_build_object('event_id', e.event_id, 'event_type', 'reservation.confirmed',
		'tenant', r.tenant, 'request_key', r.request_key, 'reservation_id', r.id,
		'state', r.state, 'version', r.version, 'reason', NULL::text,
		'lines', (SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'location', l.location, 'quantity', l.quantity)
							 ORDER BY l.sku, l.location) FROM l),
		'expires_at', to_char(r.expires_at AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':')),
		'occurred_at', to_char(now() AT TIME ZONE 'UTC', replace('YYYY-MM-DD"T"HH24#MI#SS.US"Z"', '#', ':'))),
	now()
FROM r, e;
