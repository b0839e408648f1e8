-- test/pgtap/03_search_path.sql
--
-- A search_path hijack fails.  A non-superuser role with a tenant grant owns
-- a schema "evil" full of look-alikes: operators (=, <>, <, >, <=, >=, +, -)
-- for the types the extension compares, functions named like the built-ins
-- it may use (now, gen_random_uuid, jsonb_build_object, to_jsonb, ...) and
-- tables named like its own (stock, reservation, tenant_member with a
-- wildcard grant, ...), plus temporary tables with those names.  Every
-- look-alike writes to evil.hijack_log when it runs.  The role then calls
-- the extension with its session search_path pointing at them.  Expected:
-- the log stays empty, the real tables hold the writes, the outcomes are
-- right, and the fake grant gives nothing.
--
-- The calls run with the hostile search_path only around plain INSERT ...
-- SELECT statements (no operators), and the results are asserted after the
-- search_path is reset, so pgTAP itself never meets the look-alikes.

BEGIN;
SELECT plan(25);

SET LOCAL pg_inventory.frozen_now = '2026-01-01 00:00:00+00';

CREATE ROLE sp_attacker NOLOGIN;
GRANT USAGE ON SCHEMA inventory TO sp_attacker;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA inventory TO sp_attacker;
DO $$ BEGIN
	EXECUTE format('GRANT CREATE ON DATABASE %I TO sp_attacker', current_database());
END $$;
SELECT is(inventory.grant_tenant('sp-ta', 'sp_attacker'), true,
	'sp_attacker is granted tenant sp-ta only');

-- where the calls' outcomes are collected
CREATE TEMP TABLE sp_result (
	step text, status text, state text, applied boolean, quantity integer,
	n bigint);
GRANT ALL ON sp_result TO PUBLIC;

/* ------------------------------------------------------------------
 * The attacker builds its traps
 * ---------------------------------------------------------------- */
SET LOCAL ROLE sp_attacker;
CREATE SCHEMA evil;
CREATE TABLE evil.hijack_log (what text);
GRANT ALL ON SCHEMA evil TO PUBLIC;
GRANT ALL ON evil.hijack_log TO PUBLIC;

-- logging operators for every type the extension compares or adds
DO $do$
DECLARE
	t text;
	o text;
	ops text[] := ARRAY['=', '<>', '<', '>', '<=', '>='];
BEGIN
	FOREACH t IN ARRAY ARRAY['text', 'bigint', 'integer', 'timestamptz',
							 'interval', 'inventory.name_id',
							 'inventory.request_key', 'jsonb', 'uuid', 'regrole',
							 'oid', 'name']
	LOOP
		FOREACH o IN ARRAY ops || CASE WHEN t IN ('bigint', 'integer')
									   THEN ARRAY['+', '-'] ELSE '{}' END
		LOOP
			EXECUTE format($f$
				CREATE FUNCTION evil.%4$I(a %1$s, b %1$s)
					RETURNS %3$s LANGUAGE plpgsql AS $b$
				BEGIN
					INSERT INTO evil.hijack_log VALUES ('operator %2$s (%1$s)');
					RETURN a OPERATOR(pg_catalog.%2$s) b;
				END $b$ $f$,
				t, o, CASE WHEN o IN ('+', '-') THEN t ELSE 'boolean' END,
				'hj_' || md5(t || o));
			EXECUTE format('CREATE OPERATOR evil.%2$s (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = evil.%3$I)',
				t, o, 'hj_' || md5(t || o));
		END LOOP;
	END LOOP;
END $do$;

-- logging functions named like built-ins
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END $$;
CREATE FUNCTION evil.statement_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('statement_timestamp()'); RETURN pg_catalog.statement_timestamp(); END $$;
CREATE FUNCTION evil.gen_random_uuid() RETURNS uuid LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('gen_random_uuid()'); RETURN pg_catalog.gen_random_uuid(); END $$;
CREATE FUNCTION evil.jsonb_build_object(text, text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('jsonb_build_object(text, text)'); RETURN pg_catalog.jsonb_build_object($1, $2); END $$;
CREATE FUNCTION evil.jsonb_build_object(text, bigint) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('jsonb_build_object(text, bigint)'); RETURN pg_catalog.jsonb_build_object($1, $2); END $$;
CREATE FUNCTION evil.jsonb_build_object(VARIADIC text[]) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('jsonb_build_object(text[])'); RETURN pg_catalog.jsonb_build_object(VARIADIC $1); END $$;
CREATE FUNCTION evil.to_jsonb(anyelement) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('to_jsonb()'); RETURN pg_catalog.to_jsonb($1); END $$;
CREATE FUNCTION evil.jsonb_typeof(jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('jsonb_typeof()'); RETURN pg_catalog.jsonb_typeof($1); END $$;
CREATE FUNCTION evil.jsonb_array_elements(jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('jsonb_array_elements()'); RETURN QUERY SELECT pg_catalog.jsonb_array_elements($1); END $$;
CREATE FUNCTION evil.jsonb_array_length(jsonb) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('jsonb_array_length()'); RETURN pg_catalog.jsonb_array_length($1); END $$;
CREATE FUNCTION evil.char_length(text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('char_length()'); RETURN pg_catalog.char_length($1); END $$;
CREATE FUNCTION evil.lower(text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('lower()'); RETURN pg_catalog.lower($1); END $$;
CREATE FUNCTION evil.pg_has_role(oid, oid, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('pg_has_role()'); RETURN true; END $$;
CREATE FUNCTION evil.pg_has_role(name, name, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('pg_has_role(name)'); RETURN true; END $$;
CREATE FUNCTION evil.hashtext(text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('hashtext()'); RETURN pg_catalog.hashtext($1); END $$;
CREATE FUNCTION evil.pg_advisory_xact_lock(bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN INSERT INTO evil.hijack_log VALUES ('pg_advisory_xact_lock()'); END $$;

-- tables named like the extension's, with a fake wildcard grant
CREATE TABLE evil.tenant_member (tenant text, member regrole, granted_at timestamptz);
INSERT INTO evil.tenant_member VALUES ('*', 'sp_attacker', NULL);
CREATE TABLE evil.stock (tenant text, sku text, available bigint, reserved bigint,
	consumed bigint, created_at timestamptz, updated_at timestamptz);
INSERT INTO evil.stock VALUES ('sp-tb', 'B', 1000000, 0, 0, NULL, NULL);

-- the same names as temporary tables (pg_temp is searched for relations)
CREATE TEMP TABLE tenant_member (tenant text, member regrole, granted_at timestamptz);
INSERT INTO pg_temp.tenant_member VALUES ('*', 'sp_attacker', NULL);
CREATE TEMP TABLE stock (LIKE evil.stock);
INSERT INTO pg_temp.stock VALUES ('sp-tb', 'B', 1000000, 0, 0, NULL, NULL);
-- (LIKE needs SELECT on the model, which the attacker lacks: the
-- superuser copies the shapes and hands the copies over)
RESET ROLE;
DO $do$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['reservation', 'reservation_line', 'stock_ledger',
							 'reservation_transition', 'outbox']
	LOOP
		EXECUTE format('CREATE TABLE evil.%1$I (LIKE inventory.%1$I)', t);
		EXECUTE format('ALTER TABLE evil.%1$I OWNER TO sp_attacker', t);
		EXECUTE format('CREATE TEMP TABLE %1$I (LIKE inventory.%1$I)', t);
		EXECUTE format('ALTER TABLE pg_temp.%1$I OWNER TO sp_attacker', t);
	END LOOP;
END $do$;
SET LOCAL ROLE sp_attacker;

-- the traps work: with evil first, a plain text comparison and now() log
SET LOCAL search_path = evil, pg_catalog;
INSERT INTO pg_temp.sp_result (step, n)
	SELECT 'probe', count(*) FROM pg_catalog.generate_series(1, 1) g
	 WHERE 'x'::text = 'x'::text AND now() IS NOT NULL;
SET LOCAL search_path TO DEFAULT;
RESET ROLE;

SELECT is((SELECT n FROM sp_result WHERE step = 'probe'), 1::bigint,
	'the probe query ran');
SELECT results_eq($$ SELECT what FROM evil.hijack_log ORDER BY what $$,
	$$ VALUES ('now()'), ('operator = (text)') $$,
	'the look-alikes run and log when a query meets them');
DELETE FROM evil.hijack_log;

/* ------------------------------------------------------------------
 * 1. search_path = evil, pg_catalog (look-alikes before the catalog)
 * ---------------------------------------------------------------- */
SET LOCAL ROLE sp_attacker;
SET LOCAL search_path = evil, pg_catalog;
INSERT INTO pg_temp.sp_result (step, n)
	SELECT '1 restock', inventory.restock('sp-ta', 'sp-rcpt-1', 'A', 10);
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '1 reserve', r.status, r.state, r.applied, r.quantity
	  FROM inventory.reserve('sp-ta', 'sp-1', 'A', 3) r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '1 reserve replay', r.status, r.state, r.applied, r.quantity
	  FROM inventory.reserve('sp-ta', 'sp-1', 'A', 3) r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '1 confirm', r.status, r.state, r.applied, r.quantity
	  FROM inventory.confirm('sp-ta', 'sp-1') r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '1 reserve_lines', r.status, r.state, r.applied, r.quantity
	  FROM inventory.reserve_lines('sp-ta', 'sp-2',
			'[{"sku": "A", "quantity": 2}, {"sku": "A", "quantity": 1}]') r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '1 insufficient', r.status, r.state, r.applied, r.quantity
	  FROM inventory.reserve('sp-ta', 'sp-3', 'A', 100) r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '1 cancel', r.status, r.state, r.applied, r.quantity
	  FROM inventory.cancel('sp-ta', 'sp-2', 'hijack test') r;
INSERT INTO pg_temp.sp_result (step, n)
	SELECT '1 adjust', inventory.adjust('sp-ta', 'sp-adj-1', 'A', -1, 'loss', 'dropped');
-- the fake wildcard grants in evil.tenant_member must not count
DO $$ BEGIN
	PERFORM inventory.reserve('sp-tb', 'sp-x', 'B', 1);
	INSERT INTO pg_temp.sp_result (step, status) VALUES ('1 other tenant', 'no error');
EXCEPTION WHEN insufficient_privilege THEN
	INSERT INTO pg_temp.sp_result (step, status) VALUES ('1 other tenant', '42501');
END $$;
INSERT INTO pg_temp.sp_result (step, n)
	SELECT '1 expire_due', inventory.expire_due(10);
INSERT INTO pg_temp.sp_result (step, n)
	SELECT '1 check_invariants', count(*) FROM inventory.check_invariants();
SET LOCAL search_path TO DEFAULT;
RESET ROLE;

SELECT is_empty($$ SELECT what FROM evil.hijack_log $$,
	'search_path = evil, pg_catalog: no look-alike ran');
SELECT results_eq($$
	SELECT step, status, state, applied, quantity, n FROM sp_result
	 WHERE step LIKE '1 %' ORDER BY step
$$, $$ VALUES
	('1 adjust', NULL, NULL, NULL, NULL, 6::bigint),
	('1 cancel', 'cancelled', 'cancelled', true, 3, NULL),
	('1 check_invariants', NULL, NULL, NULL, NULL, 0::bigint),
	('1 confirm', 'confirmed', 'confirmed', true, 3, NULL),
	('1 expire_due', NULL, NULL, NULL, NULL, 0::bigint),
	('1 insufficient', 'insufficient', 'rejected', true, 100, NULL),
	('1 other tenant', '42501', NULL, NULL, NULL, NULL),
	('1 reserve', 'reserved', 'pending', true, 3, NULL),
	('1 reserve replay', 'reserved', 'pending', false, 3, NULL),
	('1 reserve_lines', 'reserved', 'pending', true, 3, NULL),
	('1 restock', NULL, NULL, NULL, NULL, 10::bigint)
$$, 'search_path = evil, pg_catalog: every outcome is right');
SELECT results_eq($$
	SELECT available, reserved, consumed FROM inventory.stock
	 WHERE tenant = 'sp-ta' AND sku = 'A'
$$, $$ VALUES (6::bigint, 0::bigint, 3::bigint) $$,
	'the real stock row holds the changes');
SELECT results_eq($$
	SELECT request_key::text COLLATE "default", state FROM inventory.reservation
	 WHERE tenant = 'sp-ta' ORDER BY request_key
$$, $$ VALUES ('sp-1', 'confirmed'), ('sp-2', 'cancelled'), ('sp-3', 'rejected') $$,
	'the real reservation table holds the reservations');
SELECT results_eq($$
	SELECT count(*) FROM inventory.reservation_transition t
	  JOIN inventory.reservation r ON r.id = t.reservation_id
	 WHERE r.tenant = 'sp-ta'
$$, $$ VALUES (5::bigint) $$,
	'the real transition log holds the five transitions');
SELECT results_eq($$
	SELECT event_type, count(*) FROM inventory.outbox WHERE tenant = 'sp-ta'
	 GROUP BY 1 ORDER BY 1
$$, $$ VALUES ('reservation.cancelled', 1::bigint), ('reservation.confirmed', 1::bigint),
			  ('reservation.reserved', 2::bigint), ('stock.adjusted', 1::bigint),
			  ('stock.restocked', 1::bigint) $$,
	'the real outbox holds the events');
SELECT is_empty($$ SELECT 1 FROM inventory.reservation WHERE tenant = 'sp-tb' $$,
	'nothing was written for the tenant the fake grant names');

/* ------------------------------------------------------------------
 * 2. search_path = pg_temp, evil, pg_catalog (temporary tables first)
 * ---------------------------------------------------------------- */
SET LOCAL ROLE sp_attacker;
SET LOCAL search_path = pg_temp, evil, pg_catalog;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '2 reserve', r.status, r.state, r.applied, r.quantity
	  FROM inventory.reserve('sp-ta', 'sp-4', 'A', 2) r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '2 lookup', r.status, r.state, r.applied, r.quantity
	  FROM inventory.lookup('sp-ta', 'sp-4') r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '2 confirm', r.status, r.state, r.applied, r.quantity
	  FROM inventory.confirm('sp-ta', 'sp-4') r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '2 compensate', r.status, r.state, r.applied, r.quantity
	  FROM inventory.compensate('sp-ta', 'sp-4', 'hijack test') r;
DO $$ BEGIN
	PERFORM inventory.lookup('sp-tb', 'sp-x');
	INSERT INTO pg_temp.sp_result (step, status) VALUES ('2 other tenant', 'no error');
EXCEPTION WHEN insufficient_privilege THEN
	INSERT INTO pg_temp.sp_result (step, status) VALUES ('2 other tenant', '42501');
END $$;
SET LOCAL search_path TO DEFAULT;
RESET ROLE;

SELECT is_empty($$ SELECT what FROM evil.hijack_log $$,
	'search_path = pg_temp, evil, pg_catalog: no look-alike ran');
SELECT results_eq($$
	SELECT step, status, state, applied, quantity FROM sp_result
	 WHERE step LIKE '2 %' ORDER BY step
$$, $$ VALUES
	('2 compensate', 'compensated', 'compensated', true, 2),
	('2 confirm', 'confirmed', 'confirmed', true, 2),
	('2 lookup', 'reserved', 'pending', false, 2),
	('2 other tenant', '42501', NULL, NULL, NULL),
	('2 reserve', 'reserved', 'pending', true, 2)
$$, 'search_path = pg_temp, evil, pg_catalog: every outcome is right');
SELECT results_eq($$
	SELECT available, reserved, consumed FROM inventory.stock
	 WHERE tenant = 'sp-ta' AND sku = 'A'
$$, $$ VALUES (6::bigint, 0::bigint, 3::bigint) $$,
	'the real stock row holds the changes (sp-4 held, consumed, compensated)');

/* ------------------------------------------------------------------
 * 3. search_path = evil (pg_catalog implicitly first, pg_temp before it
 *    for relations) and a per-role default search_path
 * ---------------------------------------------------------------- */
SET LOCAL ROLE sp_attacker;
SET LOCAL search_path = evil;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '3 reserve', r.status, r.state, r.applied, r.quantity
	  FROM inventory.reserve('sp-ta', 'sp-5', 'A', 1) r;
INSERT INTO pg_temp.sp_result (step, status, state, applied, quantity)
	SELECT '3 cancel', r.status, r.state, r.applied, r.quantity
	  FROM inventory.cancel('sp-ta', 'sp-5') r;
SET LOCAL search_path TO DEFAULT;
RESET ROLE;

SELECT is_empty($$ SELECT what FROM evil.hijack_log $$,
	'search_path = evil: no look-alike ran');
SELECT results_eq($$
	SELECT step, status, state, applied FROM sp_result
	 WHERE step LIKE '3 %' ORDER BY step
$$, $$ VALUES ('3 cancel', 'cancelled', 'cancelled', true),
			  ('3 reserve', 'reserved', 'pending', true) $$,
	'search_path = evil: every outcome is right');

/* ------------------------------------------------------------------
 * The look-alike tables are untouched; the real ones are healthy
 * ---------------------------------------------------------------- */
SELECT is((SELECT count(*) FROM evil.reservation), 0::bigint, 'evil.reservation is empty');
SELECT is((SELECT count(*) FROM evil.outbox), 0::bigint, 'evil.outbox is empty');
SELECT is((SELECT count(*) FROM evil.reservation_transition), 0::bigint, 'evil.reservation_transition is empty');
SELECT is((SELECT count(*) FROM evil.stock_ledger), 0::bigint, 'evil.stock_ledger is empty');
SELECT is((SELECT count(*) FROM pg_temp.reservation), 0::bigint, 'temporary reservation table is empty');
SELECT is((SELECT count(*) FROM pg_temp.outbox), 0::bigint, 'temporary outbox table is empty');
SELECT results_eq($$ SELECT available FROM evil.stock $$, $$ VALUES (1000000::bigint) $$,
	'evil.stock is unchanged');
SELECT results_eq($$ SELECT available FROM pg_temp.stock $$, $$ VALUES (1000000::bigint) $$,
	'temporary stock table is unchanged');
SELECT is_empty($$ SELECT * FROM inventory.check_invariants() $$,
	'invariants hold after the hijack attempts');
SELECT is_empty($$ SELECT what FROM evil.hijack_log $$,
	'no look-alike ran at any point');

SELECT * FROM finish();
ROLLBACK;
