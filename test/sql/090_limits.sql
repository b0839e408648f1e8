-- 090_limits: the limits of every argument (README "Limits",
-- "Errors"): identifiers, reasons, ttl, NULLs; values the server refuses
-- before the function runs keep the server's SQLSTATE; and no error
-- changes anything.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-08-01 00:00:00+00';

-- every row of every table, any tenant: an error must leave all of them
-- as they were.  delta() returns what changed since its previous call.
CREATE TEMP TABLE seen (stock bigint, units numeric, reservations bigint,
                        transitions bigint, events bigint, ledger bigint,
                        grants bigint);
CREATE FUNCTION pg_temp.now_counts(OUT stock bigint, OUT units numeric,
                                   OUT reservations bigint, OUT transitions bigint,
                                   OUT events bigint, OUT ledger bigint,
                                   OUT grants bigint)
LANGUAGE sql AS $$
SELECT (SELECT count(*) FROM inventory.stock),
       (SELECT coalesce(sum(available * 1000000 + reserved * 1000 + consumed), 0)
          FROM inventory.stock),
       (SELECT count(*) FROM inventory.reservation),
       (SELECT count(*) FROM inventory.reservation_transition),
       (SELECT count(*) FROM inventory.outbox),
       (SELECT count(*) FROM inventory.stock_ledger),
       (SELECT count(*) FROM inventory.tenant_member)
$$;
INSERT INTO seen SELECT * FROM pg_temp.now_counts();
CREATE FUNCTION pg_temp.delta(OUT changed boolean)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT NOT EXISTS (SELECT * FROM seen INTERSECT SELECT * FROM pg_temp.now_counts())
	  INTO changed;
	DELETE FROM seen;
	INSERT INTO seen SELECT * FROM pg_temp.now_counts();
END
$$;
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t090_member;
RESET client_min_messages;
CREATE ROLE regress_t090_member;

SELECT inventory.restock('t090', 'rcpt-1', 'A', 100);
SELECT status FROM inventory.reserve('t090', 'pend', 'A', 1, '1 hour');
SELECT status FROM inventory.reserve('t090', 'conf', 'A', 1, '1 hour');
SELECT status FROM inventory.confirm('t090', 'conf');
SELECT * FROM pg_temp.delta();

------------------------------------------------------------------------
-- identifiers: 1 to 64 (tenant, SKU) or 200 (key) characters, no control
-- characters; "*" is reserved for grants
------------------------------------------------------------------------

-- at the limits: accepted (characters, not bytes, are counted)
SELECT inventory.restock(repeat('t', 64), 'rcpt-1', repeat('s', 64), 5);
SELECT status, applied FROM inventory.reserve(repeat('t', 64), repeat('k', 200), repeat('s', 64), 1);
SELECT status, applied FROM inventory.confirm(repeat('t', 64), repeat('k', 200));
SELECT inventory.restock('t090', repeat('k', 200), repeat('é', 64), 5);
SELECT status, applied FROM inventory.reserve(repeat('é', 64), 'k', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status, applied FROM inventory.reserve('t090', 'one', 'é', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status, applied FROM inventory.reserve('t090', 'x', 'A', 1);
SELECT status, applied FROM inventory.reserve('t090', 'with space', 'A', 1);
SELECT inventory.adjust('t090', 'adj-é', repeat('é', 64), 1, 'return', 'ok');
SELECT * FROM pg_temp.delta();
SELECT tenant, char_length(sku) AS sku_chars, octet_length(sku) AS sku_bytes, available
  FROM inventory.stock WHERE tenant IN ('t090', repeat('t', 64)) ORDER BY 1, 2;

-- past the limits: 22023 from every function
SELECT inventory.restock(repeat('t', 65), 'rcpt-1', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-x', repeat('s', 65), 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-x', repeat('é', 65), 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', repeat('k', 201), 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve(repeat('t', 65), 'k', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'k', repeat('s', 65), 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', repeat('k', 201), 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines(repeat('t', 65), 'k', '[{"sku": "A", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', repeat('k', 201), '[{"sku": "A", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm(repeat('t', 65), 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm('t090', repeat('k', 201));
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel(repeat('t', 65), 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel('t090', repeat('k', 201));
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate(repeat('t', 65), 'conf', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('t090', repeat('k', 201), 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup(repeat('t', 65), 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup('t090', repeat('k', 201));
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust(repeat('t', 65), 'adj-x', 'A', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', repeat('s', 65), 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', repeat('k', 201), 'A', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.grant_tenant(repeat('t', 65), 'regress_t090_member');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.revoke_tenant(repeat('t', 65), 'regress_t090_member');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- empty strings: 22023
SELECT inventory.restock('', 'rcpt-x', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', '', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-x', '', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('', 'k', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', '', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'k', '', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm('t090', '');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel('', 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('t090', '', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup('t090', '');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', '', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.grant_tenant('', 'regress_t090_member');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- control characters (U+0001, U+001F, U+007F, tab, newline): 22023
SELECT inventory.restock(E't090\x01', 'rcpt-x', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', E'rcpt\x7f', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-x', E'A\n', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve(E't090\n', 'k', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', E'k\x01', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', E'k\t', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', E'k\x1f', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'k', E'A\x7f', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm('t090', E'pend\n');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel(E't090\x7f', 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('t090', E'conf\x01', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup('t090', E'pend\x7f');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', E'A\x01', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.grant_tenant(E't090\n', 'regress_t090_member');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- "*" is only for grants
SELECT inventory.restock('*', 'rcpt-x', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('*', 'k', '[{"sku": "A", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm('*', 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel('*', 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('*', 'conf', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup('*', 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('*', 'adj-x', 'A', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();
SELECT inventory.grant_tenant('*', 'regress_t090_member');
SELECT inventory.revoke_tenant('*', 'regress_t090_member');
SELECT * FROM pg_temp.delta();

------------------------------------------------------------------------
-- reasons: at most 1000 characters
------------------------------------------------------------------------
SELECT status FROM inventory.reserve('t090', 'reason-1', 'A', 1, '1 hour');
SELECT status FROM inventory.reserve('t090', 'reason-2', 'A', 1, '1 hour');
SELECT status FROM inventory.confirm('t090', 'reason-2');
SELECT * FROM pg_temp.delta();
SELECT status FROM inventory.cancel('t090', 'reason-1', repeat('r', 1001));
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('t090', 'reason-2', repeat('r', 1001));
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-r', 'A', 1, repeat('r', 1001));
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-r', 'A', 1, 'return', repeat('r', 1001));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();
SELECT status, applied FROM inventory.cancel('t090', 'reason-1', repeat('r', 1000));
SELECT status, applied FROM inventory.compensate('t090', 'reason-2', repeat('é', 1000));
SELECT inventory.restock('t090', 'rcpt-r', 'A', 1, repeat('r', 1000));
SELECT inventory.adjust('t090', 'adj-r', 'A', 1, 'return', repeat('é', 1000));
SELECT * FROM pg_temp.delta();
-- cancel's and restock's reason may be NULL
SELECT status FROM inventory.reserve('t090', 'reason-3', 'A', 1, '1 hour');
SELECT status, applied FROM inventory.cancel('t090', 'reason-3', NULL);
SELECT inventory.restock('t090', 'rcpt-n', 'A', 1, NULL);
SELECT * FROM pg_temp.delta();

------------------------------------------------------------------------
-- ttl: above zero, at most 7 days
------------------------------------------------------------------------
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '0');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '-7 days');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '7 days 00:00:00.000001');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '8 days');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '1 year');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'ttl', 'A', 1, '1 day -25 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', 'ttl', '[{"sku": "A", "quantity": 1}]', '0');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', 'ttl', '[{"sku": "A", "quantity": 1}]', '1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', 'ttl', '[{"sku": "A", "quantity": 1}]', '7 days 00:00:00.000001');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();
-- the limits themselves: 1 microsecond and exactly 7 days
SELECT status, expires_at - timestamptz '2026-08-01 00:00:00+00' AS ttl
  FROM inventory.reserve('t090', 'ttl-min', 'A', 1, '00:00:00.000001');
SELECT status, expires_at - timestamptz '2026-08-01 00:00:00+00' AS ttl
  FROM inventory.reserve('t090', 'ttl-max', 'A', 1, '7 days');
SELECT status, expires_at - timestamptz '2026-08-01 00:00:00+00' AS ttl
  FROM inventory.reserve('t090', 'ttl-hours', 'A', 1, '168 hours');
SELECT status, expires_at - timestamptz '2026-08-01 00:00:00+00' AS ttl
  FROM inventory.reserve_lines('t090', 'ttl-lines', '[{"sku": "A", "quantity": 1}]', '6 days 23:59:59.999999');
SELECT * FROM pg_temp.delta();

------------------------------------------------------------------------
-- quantities of reserve and restock: at least 1
------------------------------------------------------------------------
SELECT status FROM inventory.reserve('t090', 'q', 'A', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'q', 'A', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-q', 'A', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-q', 'A', -5);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

------------------------------------------------------------------------
-- NULL in every required argument: 22023
------------------------------------------------------------------------
SELECT status FROM inventory.reserve(NULL, 'k', 'A', 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', NULL, 'A', 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'k', NULL, 1, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'k', 'A', NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'k', 'A', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines(NULL, 'k', '[{"sku": "A", "quantity": 1}]', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', NULL, '[{"sku": "A", "quantity": 1}]', '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', 'k', NULL, '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', 'k', '[{"sku": "A", "quantity": 1}]', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm(NULL, 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.confirm('t090', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel(NULL, 'pend', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.cancel('t090', NULL, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate(NULL, 'conf', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('t090', NULL, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.compensate('t090', 'conf', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup(NULL, 'pend');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.lookup('t090', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock(NULL, 'rcpt-x', 'A', 1, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', NULL, 'A', 1, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-x', NULL, 1, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-x', 'A', NULL, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust(NULL, 'adj-x', 'A', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', NULL, 'A', 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', NULL, 1, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', 'A', NULL, 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', 'A', 1, NULL, 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-x', 'A', 1, 'return', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.expire_due(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.grant_tenant(NULL, 'regress_t090_member');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.grant_tenant('t090', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.revoke_tenant(NULL, 'regress_t090_member');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.revoke_tenant('t090', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

------------------------------------------------------------------------
-- values the server refuses before the function runs keep its SQLSTATE
------------------------------------------------------------------------
-- an integer literal out of range: 22003 (numeric_value_out_of_range)
SELECT status FROM inventory.reserve('t090', 'big', 'A', '2147483648');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'big', 'A', quantity => '2147483648');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t090', 'big', 'A', 2147483648::integer);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t090', 'rcpt-big', 'A', '2147483648');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t090', 'adj-big', 'A', '9223372036854775808', 'return', 'r');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.expire_due('2147483648');
\echo :LAST_ERROR_SQLSTATE
-- an interval that does not parse: 22007 (invalid_datetime_format)
SELECT status FROM inventory.reserve('t090', 'soon', 'A', 1, 'soon');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t090', 'soon', '[{"sku": "A", "quantity": 1}]', 'infinity');
\echo :LAST_ERROR_SQLSTATE
-- text that is not JSON: 22P02 (invalid_text_representation)
SELECT status FROM inventory.reserve_lines('t090', 'json', '[{"sku": "A", "quantity": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.delta();

-- an error inside a transaction leaves nothing behind either: the stored
-- reservations of this file are as they were
SELECT request_key, state, version FROM inventory.reservation
 WHERE tenant = 't090' ORDER BY request_key;
SELECT sku, available, reserved, consumed FROM inventory.stock
 WHERE tenant = 't090' ORDER BY sku;
SELECT tenant, sku, check_name FROM inventory.check_invariants()
 WHERE tenant LIKE 't090%' OR tenant = repeat('t', 64) ORDER BY 1, 2, 3;
DROP ROLE regress_t090_member;
