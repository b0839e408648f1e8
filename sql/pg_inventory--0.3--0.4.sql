/*
 * sql/pg_inventory--0.3--0.4.sql
 *
 * Upgrade step 0.3 -> 0.4, the trust release.  Most of 0.4 is in the
 * library (one authorisation rule for every function that takes a tenant,
 * arithmetic that never overflows, ttl as a duration, canonical
 * identifiers, owned relay leases, errors that leave the caller as it
 * was); the schema changes are:
 *	- grants follow roles: the table of grants is renamed tenant_grant,
 *	  every granted role gets USAGE on the new marker type tenant_grantee
 *	  (so PostgreSQL tracks its grants as a dependency of the role), and
 *	  inventory.tenant_member becomes the view of the live grants, with the
 *	  privileges the table had;
 *	- inventory.transition_rules(), the state machine as a table;
 *	- the comments of the functions say what 0.4 does.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pg_inventory UPDATE TO '0.4'" to load this file. \quit

-- At READ COMMITTED every statement below reads a snapshot taken after the
-- locks: a call that commits while this step waits is seen, never lost.
-- At REPEATABLE READ the snapshot would be older than the locks.
DO $$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		RAISE EXCEPTION 'pg_inventory can only be updated at READ COMMITTED'
			USING ERRCODE = 'active_sql_transaction',
				  HINT = 'Run ALTER EXTENSION pg_inventory UPDATE TO ''0.4'' in a transaction of its own at the default isolation level.';
	END IF;
END
$$;

-- every lock first, then every read: inventory.reservation first, which
-- every call locks (ACCESS SHARE) before anything else, so that the calls
-- in flight end and the calls that start meanwhile wait; then the others
LOCK TABLE inventory.reservation, inventory.tenant_member,
	inventory.reservation_line, inventory.sku, inventory.stock_slot,
	inventory.stock_ledger, inventory.reservation_transition, inventory.outbox
	IN ACCESS EXCLUSIVE MODE;

-- The extension's functions run as its owner and use the objects of this
-- schema by name: from 0.4 the schema must belong to a superuser (an older
-- install may have adopted a schema another role made): it is given to the
-- role that runs the update.
DO $$
DECLARE
	owner name;
BEGIN
	SELECT r.rolname INTO owner FROM pg_catalog.pg_namespace n
	  JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
	 WHERE n.nspname = 'inventory' AND NOT r.rolsuper;
	IF owner IS NOT NULL THEN
		RAISE WARNING 'schema "inventory" was owned by role "%", who is not a superuser; it now belongs to "%"',
			owner, current_user;
		ALTER SCHEMA inventory OWNER TO CURRENT_USER;
	END IF;
END
$$;

/* ---------------------------------------------------------------------
 * Grants follow roles (see the install script for the design).
 * ------------------------------------------------------------------- */
CREATE DOMAIN inventory.tenant_grantee AS boolean;
COMMENT ON DOMAIN inventory.tenant_grantee IS
	'Marker of tenant grants, never used as a type: grant_tenant gives a role USAGE on it with its first grant and revoke_tenant takes it back with the last, so that PostgreSQL keeps the grants as a dependency of the role.';
REVOKE ALL ON TYPE inventory.tenant_grantee FROM PUBLIC;


ALTER TABLE inventory.tenant_member RENAME TO tenant_grant;
ALTER TABLE inventory.tenant_grant RENAME CONSTRAINT tenant_member_pkey TO tenant_grant_pkey;
ALTER TABLE inventory.tenant_grant
	RENAME CONSTRAINT tenant_member_tenant_valid TO tenant_grant_tenant_valid;
COMMENT ON TABLE inventory.tenant_grant IS
	'Tenant grants as stored: a row is a live grant while its member holds USAGE on inventory.tenant_grantee (see the view inventory.tenant_member); written only by grant_tenant and revoke_tenant.';

-- every granted role that still exists gets the marker; a grant left
-- behind by a dropped role (a bare number that could name another role one
-- day) is deleted, and says so
DO $$
DECLARE
	g record;
	init aclitem[];
BEGIN
	SELECT p.initprivs INTO init FROM pg_catalog.pg_init_privs p
	 WHERE p.objoid = 'inventory.tenant_grantee'::regtype
	   AND p.classoid = 'pg_catalog.pg_type'::regclass AND p.objsubid = 0;
	FOR g IN SELECT t.tenant, t.member::oid AS member FROM inventory.tenant_grant t
			  WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.oid = t.member)
			  ORDER BY 1, 2
	LOOP
		RAISE WARNING 'the grant of tenant "%" to the dropped role with OID % is deleted',
			g.tenant, g.member;
		DELETE FROM inventory.tenant_grant t
		 WHERE t.tenant = g.tenant AND t.member::oid = g.member;
	END LOOP;
	FOR g IN SELECT DISTINCT r.rolname FROM inventory.tenant_grant t
			   JOIN pg_catalog.pg_roles r ON r.oid = t.member ORDER BY 1
	LOOP
		EXECUTE pg_catalog.format('GRANT USAGE ON TYPE inventory.tenant_grantee TO %I',
								  g.rolname);
	END LOOP;
	-- the markers are the DBA's grants, not the extension's initial
	-- privileges, so that pg_dump writes them
	UPDATE pg_catalog.pg_init_privs SET initprivs = init
	 WHERE objoid = 'inventory.tenant_grantee'::regtype
	   AND classoid = 'pg_catalog.pg_type'::regclass AND objsubid = 0;
END
$$;

-- only live grants: a row whose role lost the marker is left out
SELECT pg_catalog.pg_extension_config_dump('inventory.tenant_grant',
	'WHERE (SELECT pg_catalog.aclcontains(t.typacl, '
	'pg_catalog.makeaclitem(member, t.typowner, ''USAGE'', false)) '
	'FROM pg_catalog.pg_type t '
	'WHERE t.oid = ''inventory.tenant_grantee''::pg_catalog.regtype)');

CREATE VIEW inventory.tenant_member AS
SELECT g.tenant, g.member, g.granted_at
FROM inventory.tenant_grant g, pg_catalog.pg_type t
WHERE t.oid = 'inventory.tenant_grantee'::regtype
  AND pg_catalog.aclcontains(t.typacl,
		pg_catalog.makeaclitem(g.member, t.typowner, 'USAGE', false));
COMMENT ON VIEW inventory.tenant_member IS
	'Tenant grants, one row per (tenant, member): the member role (or a role that has its privileges) may act for the tenant; tenant ''*'' means every tenant. Managed with grant_tenant and revoke_tenant.';
COMMENT ON COLUMN inventory.tenant_member.tenant IS 'Tenant name, or * for every tenant.';
COMMENT ON COLUMN inventory.tenant_member.member IS 'Role granted.';
COMMENT ON COLUMN inventory.tenant_member.granted_at IS 'When the grant was made.';

REVOKE ALL ON inventory.tenant_member FROM PUBLIC;
DO $$
DECLARE
	dst regclass;
	a record;
	init aclitem[];
BEGIN
	FOREACH dst IN ARRAY ARRAY['inventory.tenant_member']::regclass[] LOOP
		SELECT p.initprivs INTO init FROM pg_catalog.pg_init_privs p
		 WHERE p.objoid = dst AND p.classoid = 'pg_catalog.pg_class'::regclass
		   AND p.objsubid = 0;
		FOR a IN SELECT x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) x
				  WHERE c.oid = 'inventory.tenant_grant'::regclass AND x.grantee <> c.relowner
					 AND x.privilege_type IN ('SELECT')
		LOOP
			EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', a.privilege_type, dst,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		FOR a IN SELECT c.attname, x.grantee, x.privilege_type, x.is_grantable
				   FROM pg_catalog.pg_attribute c, pg_catalog.aclexplode(c.attacl) x
				  WHERE c.attrelid = 'inventory.tenant_grant'::regclass AND c.attnum > 0
					AND NOT c.attisdropped
					AND x.privilege_type IN ('SELECT')
					AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute d
								 WHERE d.attrelid = dst AND d.attname = c.attname
								   AND d.attnum > 0 AND NOT d.attisdropped)
		LOOP
			EXECUTE pg_catalog.format('GRANT %s (%I) ON %s TO %s%s', a.privilege_type,
				a.attname, dst,
				CASE a.grantee WHEN 0 THEN 'PUBLIC'
					 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
				CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
		END LOOP;
		DELETE FROM pg_catalog.pg_init_privs
		 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
		   AND objsubid > 0;
		-- the carried grants are the DBA's, not the extension's initial
		-- privileges, so that pg_dump writes them
		IF init IS NULL THEN
			DELETE FROM pg_catalog.pg_init_privs
			 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
			   AND objsubid = 0;
		ELSE
			UPDATE pg_catalog.pg_init_privs SET initprivs = init
			 WHERE objoid = dst AND classoid = 'pg_catalog.pg_class'::regclass
			   AND objsubid = 0;
		END IF;
	END LOOP;
END
$$;

/* ---------------------------------------------------------------------
 * The state machine as a table.
 * ------------------------------------------------------------------- */
CREATE FUNCTION inventory.transition_rules()
	RETURNS TABLE(call text, from_state text, to_state text,
				  moves_from text, moves_to text)
	LANGUAGE C IMMUTABLE
	SET search_path = pg_catalog, pg_temp
	AS 'MODULE_PATHNAME', 'inventory_transition_rules';
REVOKE ALL ON FUNCTION inventory.transition_rules() FROM PUBLIC;

/* ---------------------------------------------------------------------
 * What each function does in 0.4.
 * ------------------------------------------------------------------- */
COMMENT ON FUNCTION inventory.reserve(text, text, text, integer, interval) IS
	'Holds quantity units (1 to 2147483647) of sku for tenant during ttl (a duration above zero and at most 7 days, without months or years; days of 24 hours), idempotent on (tenant, request_key): the same key and payload return the stored outcome with applied = false. Status reserved (state pending) or insufficient (state rejected, stored and frozen). Call it as SELECT * FROM inventory.reserve(...): (inventory.reserve(...)).* runs it once per column. Errors: 22023 bad argument (also a tenant, key or SKU not in Unicode NFC or with white space at either end), 42501 tenant not granted, IN002 SKU never stocked, IN001 key used with another payload.';
COMMENT ON FUNCTION inventory.reserve_lines(text, text, jsonb, interval) IS
	'Holds every line of [{"sku": ..., "quantity": ...}, ...] (1 to 100 lines, the same SKU summed, at most 2147483647 units in all) or none, during ttl as reserve, idempotent on (tenant, request_key) with the set of (sku, summed quantity) as payload. Status reserved or insufficient. Call it as SELECT * FROM inventory.reserve_lines(...). Errors: 22023, 42501, IN002, IN001.';
COMMENT ON FUNCTION inventory.confirm(text, text) IS
	'Turns an unexpired pending reservation into confirmed (reserved units become consumed); a due one is expired instead (applied); other states are reported unchanged. Status confirmed, expired, cancelled, insufficient, compensated or not_found. Errors: 22023, 42501.';
COMMENT ON FUNCTION inventory.cancel(text, text, text) IS
	'Releases a pending reservation''s units (state cancelled, reason at most 1000 characters or NULL); a due one is expired instead; other states are reported unchanged. Status cancelled, expired, confirmed, insufficient, compensated or not_found. Errors: 22023, 42501.';
COMMENT ON FUNCTION inventory.compensate(text, text, text) IS
	'After fulfillment failed: a confirmed reservation becomes compensated and its units return from consumed to available, once; reason (1 to 1000 characters) is required. Status compensated, pending, cancelled, expired, insufficient or not_found. Errors: 22023, 42501.';
COMMENT ON FUNCTION inventory.lookup(text, text) IS
	'Reports the stored outcome of the reserve call with this key (reserved, insufficient or not_found) and the effective state; never changes data. A client whose call timed out looks up, then retries with the same key. Errors: 22023, 42501.';
COMMENT ON FUNCTION inventory.expire_due(integer) IS
	'Expires at most max_rows (at least 1) due pending reservations (expires_at <= clock), oldest first, skipping rows other transactions hold, and returns their units to available; returns how many it expired. A reservation whose rows are broken is skipped with a WARNING, never stopping the others. Errors: 22023.';
COMMENT ON FUNCTION inventory.restock(text, text, text, integer, text) IS
	'Records a receipt of quantity units (1 to 2147483647) of sku for tenant, creating the SKU if new, idempotent on (tenant, request_key) among ledger keys; returns available after it (a replay returns the value stored with the record). Errors: 22023 bad argument, 42501 tenant not granted, IN001 key used with another payload, 22003 the SKU''s stock would pass the bigint range.';
COMMENT ON FUNCTION inventory.adjust(text, text, text, bigint, text, text) IS
	'Records a return (delta > 0), loss (delta < 0) or correction (either sign) of available units with a reason, idempotent on (tenant, request_key) among ledger keys; returns available after it. Units held by pending reservations are never adjusted away. Errors: 22023 bad argument, 42501 tenant not granted, IN002 SKU never stocked, IN003 available would go negative, IN001 key used with another payload, 22003 the SKU''s stock would pass the bigint range.';
COMMENT ON FUNCTION inventory.check_invariants() IS
	'Returns one row per broken invariant (no rows when healthy), read in one snapshot: counts against the ledger (counts_match_ledger, counts_in_range), counts_nonnegative, reserved against pending lines, consumed against confirmed lines, transition log rows against reservation versions, slots against the SKU catalog.';
COMMENT ON FUNCTION inventory.grant_tenant(text, regrole) IS
	'Lets member (and roles that have its privileges) act for tenant (* for every tenant); returns whether a grant was added. The caller must itself act for tenant (for *: hold a grant of *) or be a superuser. The grant follows the role: the role gets USAGE on inventory.tenant_grantee, so DROP ROLE fails until its grants are revoked (or DROP OWNED BY ends them). Errors: 22023, 42501.';
COMMENT ON FUNCTION inventory.revoke_tenant(text, regrole) IS
	'Removes the grant of exactly (tenant, member); revoking * removes the wildcard only; returns whether a grant was removed. The caller must act for tenant as for grant_tenant. Errors: 22023, 42501.';
COMMENT ON FUNCTION inventory.relay_claim(text, integer, interval) IS
	'Leases up to batch_size (1 to 10000) committed, unpublished, live events that are due, in id order, to relay (a name of 1 to 64 characters) for lease (above 0, at most 1 hour); only the first unpublished event of a reservation is handed out. Relays never wait for each other (SKIP LOCKED). Errors: 22023.';
COMMENT ON FUNCTION inventory.relay_mark_published(text, bigint[]) IS
	'Marks the events published; call only after the broker confirmed them (publisher confirms). Acts only on events whose lease relay still holds; returns how many it marked. Errors: 22023.';
COMMENT ON FUNCTION inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval) IS
	'Records a failed publish attempt of the events whose lease relay still holds: next attempt after backoff * 2^attempts (at most max_backoff) with jitter, or dead-letters the event at its max_attempts-th failure. Returns how many events it recorded. Errors: 22023.';
COMMENT ON FUNCTION inventory.relay_release(text, bigint[]) IS
	'Gives back the relay''s leases on unpublished events without counting an attempt (clean shutdown). Returns how many. Errors: 22023.';
COMMENT ON FUNCTION inventory.requeue_dead_letters(bigint[]) IS
	'Makes dead-lettered events (NULL: all) live again with a fresh attempt count. Returns how many.';
COMMENT ON FUNCTION inventory.discard_dead_letters(bigint[]) IS
	'Deletes dead-lettered events for good; later events of their reservations can then be published. Returns how many. Errors: 22023.';
COMMENT ON FUNCTION inventory.purge_published(interval, integer) IS
	'Retention: deletes at most max_rows (1 to 1000000) events published more than older_than ago, oldest first; never dead letters or unpublished events. The worker runs it with pg_inventory.outbox_retention. Returns how many. Errors: 22023.';
COMMENT ON FUNCTION inventory.set_stock_slots(text, text, integer) IS
	'Splits the SKU''s counters over slots (1 to 256) so that concurrent reservations of a hot SKU take units from different rows; available is spread evenly, totals are unchanged (no ledger record, no event). Returns the previous slot count. Errors: 22023, 42501 tenant not granted, IN002 SKU never stocked.';
COMMENT ON FUNCTION inventory.transition_rules() IS
	'The state machine of the reservation functions, one row per rule: the call (expire: expire_due, or any call that finds a due pending reservation), the state before (NULL: a new reservation), the state after, and the counters the units leave and enter (NULL: nothing moves).';
