#!/usr/bin/env bash
# test/scripts/dump_restore_roles_test.sh: grants follow roles across a dump
# and a restore into another cluster (README "Roles and grants", "Backups";
# the 0.4 rule "Grants follow roles").
#
# In the running server (PGHOST, PGPORT, a superuser, as pg_env.sh's
# pg_start exports them) it grants tenants to two roles and dumps the
# database with pg_dump -Fc.  It then starts a second, throwaway cluster
# where roles of the same names exist with other OIDs (made in another
# order, after others), restores the dump there, and checks that every grant
# applies to the role of the same name (and to no other), that the granted
# role can act and the others cannot, and that DROP ROLE of a granted role
# fails there too.  Prints TAP.
#
#   PG_BIN   PostgreSQL binaries (default /usr/lib/postgresql/15/bin)

set -u
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
SRC=grants_src
DST=grants_dst
WORK=$(mktemp -d /tmp/pg_inventory_grants.XXXXXX)

# shellcheck source=test/scripts/tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
# shellcheck source=test/scripts/pg_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/pg_env.sh"

# the second cluster, addressed explicitly; the first stays in PGHOST/PGPORT
OTHER_DIR=$WORK/other
OTHER_PORT=$(pg_free_port 57532)
other() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$OTHER_DIR" -p "$OTHER_PORT" -U postgres "$@"; }

cleanup() {
	q -d postgres -c "DROP DATABASE IF EXISTS $SRC" >/dev/null 2>&1
	q -d postgres -c "DROP ROLE IF EXISTS grants_app" -c "DROP ROLE IF EXISTS grants_fulfiller" >/dev/null 2>&1
	if [ -f "$OTHER_DIR/data/postmaster.pid" ]; then
		runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$OTHER_DIR/data" -w -m immediate stop >/dev/null 2>&1
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

plan 10
cleanup
mkdir -p "$WORK"
chmod 755 "$WORK"

# the source: two roles, a tenant grant each, EXECUTE for the application
out=$(q -d postgres -c "CREATE ROLE grants_app" -c "CREATE ROLE grants_fulfiller" \
	-c "CREATE DATABASE $SRC" 2>&1 &&
	q -d "$SRC" <<'SQL' 2>&1
CREATE EXTENSION pg_inventory;
GRANT USAGE ON SCHEMA inventory TO grants_app, grants_fulfiller;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.lookup(text, text) TO grants_app;
GRANT EXECUTE ON FUNCTION inventory.lookup(text, text) TO grants_fulfiller;
SELECT inventory.restock('acme', 'r', 'A', 10) = 10;
SELECT inventory.restock('globex', 'r', 'G', 10) = 10;
SELECT inventory.grant_tenant('acme', 'grants_app');
SELECT inventory.grant_tenant('*', 'grants_fulfiller');
SQL
)
check "a database with two grants" "$(printf 't\nt\nt\nt')" "$out"

out=$("$PG_BIN/pg_dump" -Fc -f "$WORK/grants.dump" "$SRC" 2>&1) && ok "pg_dump -Fc" ||
	not_ok "pg_dump -Fc" "$out"

# the other cluster: the same role names, other OIDs
mkdir -p "$OTHER_DIR" && chown postgres:postgres "$OTHER_DIR"
if runuser -u postgres -- "$PG_BIN/initdb" -D "$OTHER_DIR/data" -U postgres -A trust \
	-E UTF8 --locale=C.UTF-8 --no-sync >"$WORK/initdb.log" 2>&1 &&
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$OTHER_DIR/data" -l "$OTHER_DIR/log" -w \
		-o "-p $OTHER_PORT -k $OTHER_DIR -c listen_addresses=''" start >/dev/null 2>&1; then
	ok "a second cluster on port $OTHER_PORT"
else
	not_ok "a second cluster on port $OTHER_PORT" "$(cat "$WORK/initdb.log" "$OTHER_DIR/log" 2>/dev/null)"
fi
other -d postgres -c "CREATE ROLE grants_filler_1" -c "CREATE ROLE grants_filler_2" \
	-c "CREATE ROLE grants_fulfiller" -c "CREATE ROLE grants_app" -c "CREATE DATABASE $DST" >/dev/null
src_oids=$(q -d postgres -c "SELECT string_agg(oid::text, ',' ORDER BY rolname) FROM pg_roles WHERE rolname IN ('grants_app', 'grants_fulfiller')")
dst_oids=$(other -d postgres -c "SELECT string_agg(oid::text, ',' ORDER BY rolname) FROM pg_roles WHERE rolname IN ('grants_app', 'grants_fulfiller')")
check "the roles have other OIDs there ($src_oids / $dst_oids)" '[ "$src_oids" != "$dst_oids" ] && [ -n "$dst_oids" ]'

out=$("$PG_BIN/pg_restore" --exit-on-error -h "$OTHER_DIR" -p "$OTHER_PORT" -U postgres \
	-d "$DST" "$WORK/grants.dump" 2>&1) && ok "pg_restore into the other cluster" ||
	not_ok "pg_restore into the other cluster" "$out"

check "every grant names the role of the same name" "$(printf '*|grants_fulfiller\nacme|grants_app')" \
	"$(other -d "$DST" -c "SELECT tenant || '|' || member::text FROM inventory.tenant_member ORDER BY 1")"
check "the grants are the roles' (by OID), marker included" "t" \
	"$(other -d "$DST" -c "SELECT bool_and(m.member::oid = r.oid AND has_type_privilege(r.oid, 'inventory.tenant_grantee', 'USAGE'))
	   FROM inventory.tenant_member m JOIN pg_roles r ON r.rolname = m.member::text")"
check "the application acts for its tenant there" "reserved" \
	"$(other -d "$DST" -c "SET ROLE grants_app" -c "SELECT status FROM inventory.reserve('acme', 'k', 'A', 1)")"
check "and for no other" "42501" \
	"$(other -d "$DST" -v VERBOSITY=sqlstate -c "SET ROLE grants_app" \
		-c "SELECT status FROM inventory.lookup('globex', 'k')" 2>&1 | sed -n 's/^.*ERROR: *\([0-9A-Z]\{5\}\).*$/\1/p')"
check "DROP ROLE of a granted role fails there too" "2BP01" \
	"$(other -d "$DST" -v VERBOSITY=sqlstate -c "DROP ROLE grants_app" 2>&1 | sed -n 's/^.*ERROR: *\([0-9A-Z]\{5\}\).*$/\1/p')"
tap_done
