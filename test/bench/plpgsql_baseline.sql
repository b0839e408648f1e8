-- test/bench/plpgsql_baseline.sql: a plain PL/pgSQL implementation of
-- reserve and reserve_lines, for the benchmark only (test/bench/run.sh).
--
-- It does the same durable work as inventory.reserve / reserve_lines, on the
-- same inventory tables: tenant authorisation against
-- inventory.tenant_member, the idempotency claim of (tenant, request_key)
-- under a lock on the key, as the extension's on the reservations' rings
-- (0.9; a replay returns the stored outcome, another payload raises IN001), the stock rows locked in sku order, all lines held
-- or none (a shortfall stores the rejection), the lines, the transition
-- NULL -> pending and the reservation.reserved outbox event with the
-- extension's payload shape.  SECURITY DEFINER owned by the superuser that
-- runs this file (only the extension's owner may write the tables), with a
-- pinned search_path like the extension's functions.  The actor is
-- session_user (the extension records the role in effect).
--
-- Schema 0.5: the stock of the benchmark's tenant is at the location
-- 'default' (the only one it has), so the baseline reads and writes the
-- slot 0 of that location and its lines name it; the outcome carries the
-- 0.5 attributes lines and reason (lines left NULL on the replay and
-- rejection paths, which the benchmark never takes).
--
-- Not part of the extension and never used outside the benchmark.

CREATE SCHEMA bench_plpgsql;

CREATE FUNCTION bench_plpgsql.reserve_lines(p_tenant text, p_key text,
		p_lines jsonb, p_ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_now		timestamptz := pg_catalog.now();
	v_expires	timestamptz := pg_catalog.now() + p_ttl;
	v_skus		text[];
	v_qtys		integer[];
	v_id		bigint;
	v_res		record;
	v_stored_skus text[];
	v_stored_qtys integer[];
	v_locked	integer := 0;
	v_enough	boolean := true;
	v_row		record;
	v_event		uuid;
	v_lines		jsonb;
BEGIN
	IF p_tenant IS NULL OR p_key IS NULL OR p_lines IS NULL
			OR p_ttl IS NULL OR p_ttl <= interval '0' OR p_ttl > interval '7 days' THEN
		RAISE EXCEPTION 'invalid argument' USING ERRCODE = '22023';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM inventory.tenant_member m
				   WHERE m.tenant IN (p_tenant, '*')
				   AND pg_catalog.pg_has_role(session_user, m.member::oid, 'USAGE')) THEN
		RAISE EXCEPTION 'role "%" may not act for tenant "%"', session_user, p_tenant
			USING ERRCODE = '42501';
	END IF;

	-- the lines: same SKU summed, sorted by sku (the lock order)
	SELECT pg_catalog.array_agg(x.sku ORDER BY x.sku), pg_catalog.array_agg(x.qty ORDER BY x.sku)
	  INTO v_skus, v_qtys
	  FROM (SELECT (e->>'sku') COLLATE "C" AS sku,
				   pg_catalog.sum((e->>'quantity')::numeric)::integer AS qty
			  FROM pg_catalog.jsonb_array_elements(p_lines) AS e
			 GROUP BY 1) AS x;
	IF v_skus IS NULL OR pg_catalog.array_length(v_skus, 1) > 100
			OR EXISTS (SELECT 1 FROM pg_catalog.unnest(v_qtys) AS q WHERE q < 1) THEN
		RAISE EXCEPTION 'invalid lines' USING ERRCODE = '22023';
	END IF;

	-- claim the key: unique per ring of the reservations (0.9), kept once
	-- across the rings by a lock on (tenant, key), as the extension does
	PERFORM pg_catalog.pg_advisory_xact_lock(
		pg_catalog.hashtextextended(p_tenant || pg_catalog.chr(1) || p_key, 0));
	INSERT INTO inventory.reservation AS r
		(tenant, request_key, state, expires_at, version, created_at, updated_at)
	SELECT p_tenant, p_key, 'pending', v_expires, 1, v_now, v_now
	 WHERE NOT EXISTS (SELECT 1 FROM inventory.reservation x
					   WHERE x.tenant = p_tenant AND x.request_key = p_key)
	RETURNING r.id INTO v_id;

	IF v_id IS NULL THEN
		-- replay (same lines) or refusal (IN001)
		SELECT r.id, r.state, r.expires_at INTO v_res
		  FROM inventory.reservation r
		 WHERE r.tenant = p_tenant AND r.request_key = p_key;
		SELECT pg_catalog.array_agg(l.sku::text ORDER BY l.sku),
			   pg_catalog.array_agg(l.quantity ORDER BY l.sku)
		  INTO v_stored_skus, v_stored_qtys
		  FROM inventory.reservation_line l WHERE l.reservation_id = v_res.id;
		IF v_stored_skus IS DISTINCT FROM v_skus OR v_stored_qtys IS DISTINCT FROM v_qtys THEN
			RAISE EXCEPTION 'request key "%" was already used with a different payload', p_key
				USING ERRCODE = 'IN001';
		END IF;
		RETURN ROW(CASE WHEN v_res.state = 'rejected' THEN 'insufficient' ELSE 'reserved' END,
				   CASE WHEN v_res.state = 'pending' AND v_res.expires_at <= v_now
						THEN 'expired' ELSE v_res.state END,
				   false, v_res.id,
				   CASE WHEN pg_catalog.array_length(v_skus, 1) = 1 THEN v_skus[1] END,
				   (SELECT pg_catalog.sum(q) FROM pg_catalog.unnest(v_qtys) AS q)::integer,
				   v_res.expires_at, NULL, NULL)::inventory.outcome;
	END IF;

	-- lock the stock rows in sku order
	FOR v_row IN
		SELECT s.sku, s.available, m.qty
		  FROM inventory.stock_slot s
		  JOIN unnest(v_skus, v_qtys) AS m(sku, qty) ON m.sku = s.sku
		 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = p_tenant
		 ORDER BY s.sku
		   FOR UPDATE OF s
	LOOP
		v_locked := v_locked + 1;
		IF v_row.available < v_row.qty THEN
			v_enough := false;
		END IF;
	END LOOP;
	IF v_locked <> pg_catalog.array_length(v_skus, 1) THEN
		RAISE EXCEPTION 'SKU not stocked for tenant "%"', p_tenant USING ERRCODE = 'IN002';
	END IF;

	IF NOT v_enough THEN
		-- the stored rejection
		UPDATE inventory.reservation SET state = 'rejected', expires_at = NULL
		 WHERE id = v_id;
		INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
		SELECT v_id, p_tenant, m.sku, NULL, m.qty FROM unnest(v_skus, v_qtys) AS m(sku, qty);
		INSERT INTO inventory.reservation_transition
			(reservation_id, from_state, to_state, reason, actor, version, created_at)
		VALUES (v_id, NULL, 'rejected', 'insufficient stock', session_user, 1, v_now);
		RETURN ROW('insufficient', 'rejected', true, v_id,
				   CASE WHEN pg_catalog.array_length(v_skus, 1) = 1 THEN v_skus[1] END,
				   (SELECT pg_catalog.sum(q) FROM pg_catalog.unnest(v_qtys) AS q)::integer,
				   NULL, NULL, NULL)::inventory.outcome;
	END IF;

	UPDATE inventory.stock_slot s
	   SET available = s.available - m.qty, reserved = s.reserved + m.qty, updated_at = v_now
	  FROM unnest(v_skus, v_qtys) AS m(sku, qty)
	 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = p_tenant AND s.sku = m.sku;
	INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
	SELECT v_id, p_tenant, m.sku, 'default', m.qty FROM unnest(v_skus, v_qtys) AS m(sku, qty);
	v_lines := (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('sku', m.sku,
					'location', 'default', 'quantity', m.qty) ORDER BY m.sku)
				  FROM unnest(v_skus, v_qtys) AS m(sku, qty));
	INSERT INTO inventory.reservation_transition
		(reservation_id, from_state, to_state, reason, actor, version, created_at)
	VALUES (v_id, NULL, 'pending', NULL, session_user, 1, v_now);
	v_event := pg_catalog.gen_random_uuid();
	INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
	VALUES (v_event, 'reservation.reserved', p_tenant, v_id,
		pg_catalog.jsonb_build_object('event_id', v_event, 'event_type', 'reservation.reserved',
			'tenant', p_tenant, 'request_key', p_key, 'reservation_id', v_id,
			'state', 'pending', 'version', 1, 'reason', NULL::text,
			'lines', v_lines,
			'expires_at', pg_catalog.to_char(v_expires AT TIME ZONE 'UTC',
				'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
			'occurred_at', pg_catalog.to_char(v_now AT TIME ZONE 'UTC',
				'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
		v_now);
	RETURN ROW('reserved', 'pending', true, v_id,
			   CASE WHEN pg_catalog.array_length(v_skus, 1) = 1 THEN v_skus[1] END,
			   (SELECT pg_catalog.sum(q) FROM pg_catalog.unnest(v_qtys) AS q)::integer,
			   v_expires, v_lines, NULL)::inventory.outcome;
END
$$;

-- reserve: one line, without the JSON parsing of reserve_lines
CREATE FUNCTION bench_plpgsql.reserve(p_tenant text, p_key text, p_sku text,
		p_quantity integer, p_ttl interval DEFAULT '15 minutes')
	RETURNS inventory.outcome
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	v_now		timestamptz := pg_catalog.now();
	v_expires	timestamptz := pg_catalog.now() + p_ttl;
	v_id		bigint;
	v_available	bigint;
	v_res		record;
	v_line		record;
	v_event		uuid;
	v_lines		jsonb;
BEGIN
	IF p_tenant IS NULL OR p_key IS NULL OR p_sku IS NULL OR p_quantity IS NULL
			OR p_quantity < 1 OR p_ttl IS NULL OR p_ttl <= interval '0'
			OR p_ttl > interval '7 days' THEN
		RAISE EXCEPTION 'invalid argument' USING ERRCODE = '22023';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM inventory.tenant_member m
				   WHERE m.tenant IN (p_tenant, '*')
				   AND pg_catalog.pg_has_role(session_user, m.member::oid, 'USAGE')) THEN
		RAISE EXCEPTION 'role "%" may not act for tenant "%"', session_user, p_tenant
			USING ERRCODE = '42501';
	END IF;

	-- claim the key: unique per ring of the reservations (0.9), kept once
	-- across the rings by a lock on (tenant, key), as the extension does
	PERFORM pg_catalog.pg_advisory_xact_lock(
		pg_catalog.hashtextextended(p_tenant || pg_catalog.chr(1) || p_key, 0));
	INSERT INTO inventory.reservation AS r
		(tenant, request_key, state, expires_at, version, created_at, updated_at)
	SELECT p_tenant, p_key, 'pending', v_expires, 1, v_now, v_now
	 WHERE NOT EXISTS (SELECT 1 FROM inventory.reservation x
					   WHERE x.tenant = p_tenant AND x.request_key = p_key)
	RETURNING r.id INTO v_id;

	IF v_id IS NULL THEN
		SELECT r.id, r.state, r.expires_at INTO v_res
		  FROM inventory.reservation r
		 WHERE r.tenant = p_tenant AND r.request_key = p_key;
		SELECT pg_catalog.count(*) AS n, pg_catalog.min(l.sku::text) AS sku,
			   pg_catalog.sum(l.quantity) AS qty
		  INTO v_line
		  FROM inventory.reservation_line l WHERE l.reservation_id = v_res.id;
		IF v_line.n <> 1 OR v_line.sku <> p_sku OR v_line.qty <> p_quantity THEN
			RAISE EXCEPTION 'request key "%" was already used with a different payload', p_key
				USING ERRCODE = 'IN001';
		END IF;
		RETURN ROW(CASE WHEN v_res.state = 'rejected' THEN 'insufficient' ELSE 'reserved' END,
				   CASE WHEN v_res.state = 'pending' AND v_res.expires_at <= v_now
						THEN 'expired' ELSE v_res.state END,
				   false, v_res.id, p_sku, p_quantity, v_res.expires_at, NULL, NULL)::inventory.outcome;
	END IF;

	SELECT s.available INTO v_available
	  FROM inventory.stock_slot s
	 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = p_tenant AND s.sku = p_sku
	   FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'SKU "%" is not stocked for tenant "%"', p_sku, p_tenant
			USING ERRCODE = 'IN002';
	END IF;

	IF v_available < p_quantity THEN
		UPDATE inventory.reservation SET state = 'rejected', expires_at = NULL
		 WHERE id = v_id;
		INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
		VALUES (v_id, p_tenant, p_sku, NULL, p_quantity);
		INSERT INTO inventory.reservation_transition
			(reservation_id, from_state, to_state, reason, actor, version, created_at)
		VALUES (v_id, NULL, 'rejected', 'insufficient stock', session_user, 1, v_now);
		RETURN ROW('insufficient', 'rejected', true, v_id, p_sku, p_quantity,
				   NULL, NULL, NULL)::inventory.outcome;
	END IF;

	UPDATE inventory.stock_slot s
	   SET available = s.available - p_quantity, reserved = s.reserved + p_quantity,
		   updated_at = v_now
	 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = p_tenant AND s.sku = p_sku;
	INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
	VALUES (v_id, p_tenant, p_sku, 'default', p_quantity);
	v_lines := pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('sku', p_sku,
					'location', 'default', 'quantity', p_quantity));
	INSERT INTO inventory.reservation_transition
		(reservation_id, from_state, to_state, reason, actor, version, created_at)
	VALUES (v_id, NULL, 'pending', NULL, session_user, 1, v_now);
	v_event := pg_catalog.gen_random_uuid();
	INSERT INTO inventory.outbox (event_id, event_type, tenant, reservation_id, payload, created_at)
	VALUES (v_event, 'reservation.reserved', p_tenant, v_id,
		pg_catalog.jsonb_build_object('event_id', v_event, 'event_type', 'reservation.reserved',
			'tenant', p_tenant, 'request_key', p_key, 'reservation_id', v_id,
			'state', 'pending', 'version', 1, 'reason', NULL::text,
			'lines', v_lines,
			'expires_at', pg_catalog.to_char(v_expires AT TIME ZONE 'UTC',
				'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
			'occurred_at', pg_catalog.to_char(v_now AT TIME ZONE 'UTC',
				'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
		v_now);
	RETURN ROW('reserved', 'pending', true, v_id, p_sku, p_quantity, v_expires, v_lines,
			   NULL)::inventory.outcome;
END
$$;

REVOKE ALL ON FUNCTION bench_plpgsql.reserve(text, text, text, integer, interval),
	bench_plpgsql.reserve_lines(text, text, jsonb, interval) FROM PUBLIC;
