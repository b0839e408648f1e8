-- 180_canonical_ttl: input that means something other than it shows
-- (README "Limits"; the 0.4 rules "ttl is a duration, not a calendar step"
-- and "Identifiers are canonical").
--
-- ttl: a months or years component raises 22023; days count as exactly
-- 24 hours; expires_at = clock + ttl, the same instant whatever the
-- session's TimeZone (also across a daylight-saving change); a hold never
-- starts expired.  Identifiers: a tenant, SKU or request key that is not in
-- Unicode NFC, or that begins or ends with white space, raises 22023 where
-- a call would create something; confirm, cancel, compensate and lookup
-- still find rows stored before the rule.
\set VERBOSITY sqlstate
SET pg_inventory.frozen_now = '2026-03-07 17:00:00+00';
SELECT inventory.restock('t180', 'r', 'A', 100);

/* ----------------------------------------------------------------------
 * ttl
 * ------------------------------------------------------------------- */
SELECT status FROM inventory.reserve('t180', 'ttl-month', 'A', 1, '1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t180', 'ttl-year', 'A', 1, '1 year');
\echo :LAST_ERROR_SQLSTATE
-- a month component that the days would "cancel" is still a calendar step
SELECT status FROM inventory.reserve('t180', 'ttl-mixed', 'A', 1, '1 month -29 days');
\echo :LAST_ERROR_SQLSTATE
-- zero or negative however it is written: the hold would start expired
SELECT status FROM inventory.reserve('t180', 'ttl-zero', 'A', 1, '1 day -24 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t180', 'ttl-neg', 'A', 1, '-1 day 23:59:59');
\echo :LAST_ERROR_SQLSTATE
-- at most 7 days of 24 hours
SELECT status FROM inventory.reserve('t180', 'ttl-long', 'A', 1, '6 days 24:00:00.000001');
\echo :LAST_ERROR_SQLSTATE
SELECT status, expires_at - '2026-03-07 17:00:00+00'::timestamptz AS hold
  FROM inventory.reserve('t180', 'ttl-7d', 'A', 1, '7 days');
SELECT status, expires_at - '2026-03-07 17:00:00+00'::timestamptz AS hold
  FROM inventory.reserve('t180', 'ttl-mix-ok', 'A', 1, '1 day -23 hours');

-- one day is 24 hours, also where the caller's clocks move: New York
-- switches to summer time on 2026-03-08, so its calendar day is 23 hours
SET TimeZone = 'America/New_York';
SELECT status, expires_at,
	   expires_at - '2026-03-07 17:00:00+00'::timestamptz AS hold,
	   expires_at = '2026-03-08 17:00:00+00'::timestamptz AS same_instant_as_utc
  FROM inventory.reserve('t180', 'ttl-dst', 'A', 1, '1 day');
SET TimeZone = 'Asia/Kathmandu';
SELECT status, expires_at = '2026-03-08 17:00:00+00'::timestamptz AS same_instant
  FROM inventory.reserve('t180', 'ttl-ktm', 'A', 1, '1 day');
RESET TimeZone;
-- replays keep the stored expiry (ttl is not part of the payload)
SELECT status, applied, expires_at = '2026-03-08 17:00:00+00'::timestamptz AS stored_expiry
  FROM inventory.reserve('t180', 'ttl-dst', 'A', 1, '2 days');

/* ----------------------------------------------------------------------
 * Canonical identifiers
 * ------------------------------------------------------------------- */
-- "é" as one code point (NFC) and as "e" + combining acute (NFD) look the same
SELECT inventory.restock('t180', 'r-nfc', U&'caf\00e9', 5);
SELECT inventory.restock('t180', 'r-nfd', U&'cafe\0301', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock(U&'t180-caf\0065\0301', 'r', 'A', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t180', U&'key-\0065\0301', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve_lines('t180', 'cart-nfd',
	jsonb_build_array(jsonb_build_object('sku', U&'cafe\0301', 'quantity', 1)));
\echo :LAST_ERROR_SQLSTATE
-- white space at either end, ASCII or not
SELECT status FROM inventory.reserve('t180', 'ws-1', ' A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t180', 'ws-2', 'A ', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t180', U&'ws-3\00a0', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve(U&'\3000t180', 'ws-4', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.adjust('t180', ' adj', 'A', 1, 'return', 'x');
\echo :LAST_ERROR_SQLSTATE
-- invisible characters anywhere (zero-width space, byte order mark, soft
-- hyphen, a C1 control, a filler, a tag), and a combining character first
SELECT inventory.restock('t180', 'r-zw', U&'A\200B', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t180', 'r-zw2', U&'A \200B', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t180', 'r-bom', U&'\FEFFA', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t180', 'r-shy', U&'A\00ADB', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t180', 'r-c1', U&'A\0080', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock(U&'t180\3164', 'r', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT status FROM inventory.reserve('t180', U&'key\+0E0041', 'A', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.restock('t180', 'r-comb', U&'\0301A', 1);
\echo :LAST_ERROR_SQLSTATE
-- a line's sku "*" is refused like reserve's
SELECT status FROM inventory.reserve_lines('t180', 'cart-star', '[{"sku": "*", "quantity": 1}]');
\echo :LAST_ERROR_SQLSTATE
-- inside is fine
SELECT status FROM inventory.reserve('t180', 'order 42', 'A', 1);
SELECT inventory.restock('t180', 'r-café', U&'caf\00e9', 1);
-- nothing of the refused calls was stored
SELECT sku, available FROM inventory.stock WHERE tenant LIKE '%t180%' ORDER BY sku;
SELECT count(*) AS reservations FROM inventory.reservation
 WHERE tenant = 't180' AND (request_key LIKE 'ws-%' OR request_key LIKE 'key-%'
	   OR request_key = 'cart-nfd');

-- rows stored before the rule (here by hand, as 0.3 could) are still found
-- by the functions that only look up
INSERT INTO inventory.reservation (tenant, request_key, state, expires_at, version,
								   created_at, updated_at)
VALUES ('t180', ' legacy ', 'pending', '2026-03-09 00:00:00+00', 1,
		'2026-03-07 16:00:00+00', '2026-03-07 16:00:00+00');
SELECT status, state FROM inventory.lookup('t180', ' legacy ');
SELECT status, state, applied FROM inventory.cancel('t180', ' legacy ', 'test');
SELECT status FROM inventory.confirm('t180', ' legacy ');
SELECT status FROM inventory.compensate('t180', ' legacy ', 'test');
-- (the hand-made row broke the transition log invariant, as check_invariants says)
SELECT check_name, count(*) FROM inventory.check_invariants()
 WHERE tenant = 't180' GROUP BY 1 ORDER BY 1;
-- leave no broken row behind
DELETE FROM inventory.outbox WHERE reservation_id IN
	(SELECT id FROM inventory.reservation WHERE tenant = 't180' AND request_key = ' legacy ');
DELETE FROM inventory.reservation_transition WHERE reservation_id IN
	(SELECT id FROM inventory.reservation WHERE tenant = 't180' AND request_key = ' legacy ');
DELETE FROM inventory.reservation WHERE tenant = 't180' AND request_key = ' legacy ';
SELECT * FROM inventory.check_invariants() WHERE tenant = 't180';
