-- 250_messages: what a caller reads when a call fails (issue #14, part B;
-- README "Errors", "reserve_lines", "register_sku", "Settings"): every
-- line error names the line and its key; a cart's unknown SKUs come in one
-- IN002 that lists them all; restock 0 points at register_sku, which
-- registers a SKU with no stock; the outbox functions refuse NULL ids; the
-- test settings are hidden and frozen_now takes explicit instants only;
-- CONTEXT lines name the extension's statement, never its SQL text.
-- Messages are the point here: full verbosity, as an application sees them.
\set VERBOSITY default
SET pg_inventory.frozen_now = '2026-09-01 00:00:00+00';

-- this file's tenants are t250...: counts, stk and :oc (include/tenant.sql)
\set prefix t250
\ir include/tenant.sql
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_t250_app;
RESET client_min_messages;
CREATE ROLE regress_t250_app;
GRANT USAGE ON SCHEMA inventory TO regress_t250_app;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.amend(text, text, jsonb), inventory.lookup(text, text) TO regress_t250_app;
SELECT inventory.grant_tenant('t250', 'regress_t250_app');
SELECT inventory.restock('t250', 'rcpt-a', 'A', 10);
SELECT inventory.restock('t250', 'rcpt-b', 'B', 10);
SELECT * FROM counts;

------------------------------------------------------------------------
-- reserve_lines: every bad line names its index (from 0) and key
------------------------------------------------------------------------
SET ROLE regress_t250_app;
-- an empty SKU on the third line
SELECT status FROM inventory.reserve_lines('t250', 'l-1',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1}, {"sku": "", "quantity": 1}]');
-- a key the line may not have, named
SELECT status FROM inventory.reserve_lines('t250', 'l-1',
  '[{"sku": "A", "quantity": 1, "colour": "red"}]');
-- a missing key
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A"}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"quantity": 1}]');
-- not an object
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A", "quantity": 1}, "B"]');
-- the SKU: its type, its length, the grant wildcard, white space, control
-- characters
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": 7, "quantity": 1}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1',
  jsonb_build_array(jsonb_build_object('sku', repeat('s', 65), 'quantity', 1)));
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "*", "quantity": 1}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A ", "quantity": 1}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A\tB", "quantity": 1}]');
-- the quantity: its type, whole, at least 1, at most 2147483647
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A", "quantity": "2"}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A", "quantity": 2.5}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A", "quantity": 0}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A", "quantity": -3}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[{"sku": "A", "quantity": 3000000000}]');
-- the location: its type, its name
SELECT status FROM inventory.reserve_lines('t250', 'l-1',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1, "location": 5}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1, "location": " north"}]');
SELECT status FROM inventory.reserve_lines('t250', 'l-1',
  '[{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1, "location": ""}]');
-- the array itself
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '{"sku": "A", "quantity": 1}');
SELECT status FROM inventory.reserve_lines('t250', 'l-1', '[]');
RESET ROLE;
SELECT * FROM counts;

------------------------------------------------------------------------
-- the unknown SKUs of a cart: one IN002, the first named, all listed in
-- byte order (each SKU once), nothing stored
------------------------------------------------------------------------
SET ROLE regress_t250_app;
SELECT status FROM inventory.reserve_lines('t250', 'u-1',
  '[{"sku": "zz-9", "quantity": 1}, {"sku": "A", "quantity": 1},
    {"sku": "Q-1", "quantity": 2}, {"sku": "zz-9", "quantity": 1},
    {"sku": "B", "quantity": 1}, {"sku": "a-lower", "quantity": 1}]');
-- one unknown SKU
SELECT status FROM inventory.reserve_lines('t250', 'u-1',
  '[{"sku": "A", "quantity": 1}, {"sku": "Q-1", "quantity": 1}]');
SELECT status FROM inventory.reserve('t250', 'u-1', 'Q-1', 1);
-- also when a line before them is short (the exact path of allocation)
SELECT status FROM inventory.reserve_lines('t250', 'u-1',
  '[{"sku": "A", "quantity": 11}, {"sku": "Q-1", "quantity": 1}, {"sku": "Q-2", "quantity": 1}]');
RESET ROLE;
SELECT * FROM counts;
-- amend: the new SKUs it names, all in one error; the hold is unchanged
SET ROLE regress_t250_app;
SELECT :oc FROM inventory.reserve('t250', 'h-1', 'A', 2, '1 hour');
SELECT status FROM inventory.amend('t250', 'h-1',
  '[{"sku": "A", "quantity": 1}, {"sku": "Q-2", "quantity": 1}, {"sku": "Q-1", "quantity": 1}]');
-- amend lines take no location: the key is named
SELECT status FROM inventory.amend('t250', 'h-1',
  '[{"sku": "A", "quantity": 1, "location": "default"}]');
SELECT status FROM inventory.amend('t250', 'h-1', '[{"sku": "A", "quantity": 0}]');
SELECT status, applied, lines FROM inventory.lookup('t250', 'h-1');
RESET ROLE;
SELECT status, applied, lines FROM inventory.lookup('t250', 'h-1');
SELECT * FROM counts;

------------------------------------------------------------------------
-- restock 0: no hint at adjust (that is for removals), a hint at
-- register_sku; a negative quantity still points at adjust
------------------------------------------------------------------------
SELECT inventory.restock('t250', 'r-0', 'C', 0);
SELECT inventory.restock('t250', 'r-0', 'C', -2);
SELECT inventory.restock_at('t250', 'r-0', 'C', 'default', 0);
SELECT inventory.restock_at('t250', 'r-0', 'C', 'default', -2);
SELECT * FROM counts;

------------------------------------------------------------------------
-- register_sku: a SKU with no stock; reserving it is insufficient, not
-- IN002; no ledger record, no event; true only when it created the
-- counters
------------------------------------------------------------------------
SELECT inventory.register_sku('t250', 'C') AS created;
SELECT inventory.register_sku('t250', 'C') AS created;
SELECT inventory.register_sku('t250', 'C', 'default') AS created;
SELECT * FROM counts;
SELECT sku, location, available, reserved, consumed, sellable, level, slots
  FROM inventory.location_stock WHERE tenant = 't250' AND sku = 'C';
SELECT * FROM stk WHERE sku = 'C';
SET ROLE regress_t250_app;
SELECT :oc FROM inventory.reserve('t250', 'c-1', 'C', 1);
RESET ROLE;
-- the first receipt: no level event from a level never computed
SELECT inventory.restock('t250', 'rcpt-c', 'C', 3);
SELECT event_type, payload ->> 'sku' AS sku FROM inventory.outbox
 WHERE tenant = 't250' AND payload ->> 'sku' = 'C' ORDER BY id;
-- a tenant without any location gets default, as restock makes it
SELECT inventory.register_sku('t250-new', 'N') AS created;
SELECT tenant, location, priority, active FROM inventory.location
 WHERE tenant = 't250-new';
SELECT count(*) AS events FROM inventory.outbox WHERE tenant = 't250-new';
-- at a named location: it must exist (IN004)
SELECT inventory.register_sku('t250', 'D', 'north');
SELECT inventory.set_location('t250', 'north', 10);
SELECT inventory.register_sku('t250', 'D', 'north') AS created;
SELECT inventory.register_sku('t250', 'A', 'north') AS created;
SELECT sku, location, available, reserved, level FROM inventory.location_stock
 WHERE tenant = 't250' AND location = 'north' ORDER BY sku;
-- bad arguments
SELECT inventory.register_sku('*', 'X');
SELECT inventory.register_sku('t250', NULL);
SELECT inventory.register_sku('t250', 'X ');
SELECT inventory.register_sku('t250', 'X', '');
-- the application role may not call it
SET ROLE regress_t250_app;
SELECT inventory.register_sku('t250', 'X');
RESET ROLE;
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't250%';

------------------------------------------------------------------------
-- the outbox functions: NULL ids (the array or an element) are 22023;
-- argument errors show the value given
------------------------------------------------------------------------
SELECT inventory.relay_mark_published('relay-250', NULL);
SELECT inventory.relay_mark_published('relay-250', ARRAY[1, NULL, 3]::bigint[]);
SELECT inventory.relay_mark_failed('relay-250', ARRAY[NULL]::bigint[], 'broker down');
SELECT inventory.relay_mark_failed('relay-250', ARRAY[1]::bigint[], NULL);
SELECT inventory.relay_release('relay-250', NULL);
SELECT inventory.relay_release('relay-250', ARRAY[2, NULL]::bigint[]);
SELECT inventory.requeue_dead_letters(ARRAY[NULL]::bigint[]);
SELECT inventory.discard_dead_letters(NULL, 'ids missing');
SELECT inventory.discard_dead_letters(ARRAY[NULL, 4]::bigint[], 'an id missing');
-- a required reason (discard, adjust, compensate) says why it is required;
-- white space only is no reason
SELECT inventory.discard_dead_letters(ARRAY[4]::bigint[], NULL);
SELECT inventory.discard_dead_letters(ARRAY[4]::bigint[], E' \t\n ');
SELECT inventory.adjust('t250', 'adj-blank', 'A', -1, 'loss', '   ');
SELECT inventory.adjust('t250', 'adj-blank', 'A', -1, 'loss', E'\u00a0\u3000\u200b\x01\x0b');
-- still accepted: no ids at all (requeue: NULL is every dead letter)
SELECT inventory.relay_release('relay-250', ARRAY[]::bigint[]);
SELECT inventory.requeue_dead_letters(ARRAY[-1]::bigint[]);
-- the other arguments
SELECT * FROM inventory.relay_claim('relay-250', 0);
SELECT * FROM inventory.relay_claim('relay-250', 10, '2 hours');
SELECT inventory.relay_mark_failed('relay-250', ARRAY[1]::bigint[], 'x', 10, '0 seconds');
SELECT inventory.purge_published('-1 day');
SELECT inventory.purge_published('1 day', 0);

------------------------------------------------------------------------
-- settings: the test settings are hidden; frozen_now takes explicit
-- instants only
------------------------------------------------------------------------
SELECT name FROM pg_settings
 WHERE name IN ('pg_inventory.frozen_now', 'pg_inventory.test_fault',
                'pg_inventory.test_pause_lock') ORDER BY name;
SHOW pg_inventory.test_fault;
SHOW pg_inventory.test_pause_lock;
SET pg_inventory.frozen_now = 'now';
SET pg_inventory.frozen_now = 'today';
SET pg_inventory.frozen_now = 'tomorrow';
SET pg_inventory.frozen_now = 'Yesterday';
SET pg_inventory.frozen_now = 'epoch';
SET pg_inventory.frozen_now = 'infinity';
SET pg_inventory.frozen_now = '-infinity';
SET pg_inventory.frozen_now = '2026-09-01 allballs';
SET pg_inventory.frozen_now = 'today 10:00';
SET pg_inventory.frozen_now = 'next tuesday';
SET pg_inventory.frozen_now = '12:00';
SHOW pg_inventory.frozen_now;
SET pg_inventory.frozen_now = '2026-09-02 12:30:00+02';
SELECT current_setting('pg_inventory.frozen_now')::timestamptz AT TIME ZONE 'UTC' AS pinned;
SET pg_inventory.frozen_now = '';
SET pg_inventory.frozen_now = '2026-09-01 00:00:00+00';

------------------------------------------------------------------------
-- CONTEXT: an error raised inside one of the extension's statements (here
-- a lock timeout, as an application meets it) names the statement, never
-- its SQL text.  A second session (dblink) holds a table lock.
------------------------------------------------------------------------
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SELECT dblink_connect('t250', format('dbname=%s user=%s port=%s host=%s',
       current_database(), current_user, current_setting('port'),
       coalesce(nullif(split_part(current_setting('unix_socket_directories'), ',', 1), ''),
                '127.0.0.1')));
SELECT dblink_exec('t250', 'BEGIN');
SELECT dblink_exec('t250', 'LOCK TABLE inventory.reservation IN EXCLUSIVE MODE');
SET lock_timeout = '100ms';
SET ROLE regress_t250_app;
SELECT status FROM inventory.reserve('t250', 'ctx-1', 'A', 1);
SELECT status FROM inventory.amend('t250', 'h-1', '[{"sku": "A", "quantity": 3}]');
RESET ROLE;
RESET lock_timeout;
SELECT dblink_exec('t250', 'ROLLBACK');
SELECT dblink_disconnect('t250');
SET client_min_messages = warning;
DROP EXTENSION dblink;
RESET client_min_messages;

------------------------------------------------------------------------
-- nothing of this file is left broken
------------------------------------------------------------------------
SELECT * FROM stk ORDER BY tenant, sku;
SELECT * FROM inventory.check_invariants() WHERE tenant LIKE 't250%';
SELECT inventory.revoke_tenant('t250', 'regress_t250_app');
REVOKE ALL ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.amend(text, text, jsonb), inventory.lookup(text, text) FROM regress_t250_app;
REVOKE USAGE ON SCHEMA inventory FROM regress_t250_app;
DROP ROLE regress_t250_app;
