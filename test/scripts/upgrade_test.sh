#!/usr/bin/env bash
# test/scripts/upgrade_test.sh: an upgraded database has the same objects as
# a fresh install of the newest version.  For every older version V: install
# V in one database, fill it, ALTER EXTENSION UPDATE; install the default
# version fresh in another; compare the definitions of every object in
# schema inventory (columns, constraints, indexes, functions, views,
# comments, privileges), and the extension's member objects.
# Prints TAP.  Needs PGHOST/PGPORT/PGUSER (a superuser) of a running server.
set -uo pipefail

# ok, not_ok, check DESCRIPTION COMMAND, q PSQL-OPTION...
# shellcheck source=test/scripts/tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
tmp=$(mktemp -d /tmp/pg_inventory_upgrade.XXXXXX)
cleanup() {
	q -d postgres -c 'DROP DATABASE IF EXISTS upgrade_fresh' -c 'DROP DATABASE IF EXISTS upgrade_old' \
		-c 'DROP DATABASE IF EXISTS upgrade_restored' >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

default=$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_inventory'")
olds=$(q -d postgres -c "SELECT version FROM pg_available_extension_versions WHERE name = 'pg_inventory' AND version <> '$default' ORDER BY string_to_array(version, '.')::int[]")
if [ -z "$default" ]; then
	echo "1..1"
	echo "not ok 1 - pg_inventory is available on the server"
	exit 1
fi
count=$(wc -w <<<"$olds")
# pg_inventory_router's released versions, updated the same way
rdefault=$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_inventory_router'")
rolds=$(q -d postgres -c "SELECT version FROM pg_available_extension_versions WHERE name = 'pg_inventory_router' AND version <> '$rdefault' ORDER BY string_to_array(version, '.')::int[]")
echo "1..$((count * 5 + $(wc -w <<<"$rolds") * 6))"

# one line per property of every object in schema inventory
catalog=$(cat <<'SQL'
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
       || coalesce(' comment ' || col_description(c.oid, a.attnum), '')
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@))
UNION ALL
SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' acl ' || coalesce(c.relacl::text, '-')
       || ' comment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
FROM pg_class c WHERE c.relnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@))
UNION ALL
SELECT 'constraint ' || conrelid::regclass || '.' || conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@))
UNION ALL
SELECT 'index ' || pg_get_indexdef(indexrelid)
FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@)))
UNION ALL
SELECT 'function ' || pg_get_functiondef(p.oid) || ' acl ' || coalesce(p.proacl::text, '-')
       || ' comment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
FROM pg_proc p WHERE p.pronamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@))
UNION ALL
SELECT 'view ' || c.relname || ' ' || pg_get_viewdef(c.oid)
FROM pg_class c WHERE c.relnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@)) AND c.relkind = 'v'
UNION ALL
SELECT 'type ' || t.typname || ' ' || coalesce(obj_description(t.oid, 'pg_type'), '-')
FROM pg_type t WHERE t.typnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@))
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal AND c.relnamespace IN (SELECT oid FROM pg_namespace WHERE nspname IN (@NS@))
ORDER BY 1
SQL
)

# the schemas of pg_inventory, and of pg_inventory_router
ns_router="'inventory', 'inventory_router', 'plproxy'"
ns="'inventory'"
catalog_router=${catalog//@NS@/$ns_router}
catalog=${catalog//@NS@/$ns}

members='SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
  WHERE refclassid = $$pg_extension$$::regclass AND deptype = $$e$$
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = $$pg_inventory$$) ORDER BY 1'
router_ext='$$pg_inventory_router$$'
members_router=${members//\$\$pg_inventory\$\$/$router_ext}

# updated EXT LABEL CATALOG MEMBERS: upgrade_old (filled at an older
# version) updated to EXT's default version, then three checks: its
# version, the same objects (CATALOG) and the same extension members
# (MEMBERS) as upgrade_fresh
updated() {
	local ext=$1 label=$2 cat=$3 mem=$4 want
	want=$(q -d postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = '$ext'")
	q -d upgrade_old -c "ALTER EXTENSION $ext UPDATE"
	check "$label -> $want: extversion is $want" \
		"$want" "$(q -d upgrade_old -c "SELECT extversion FROM pg_extension WHERE extname = '$ext'")"
	q -d upgrade_fresh -c "$cat" >"$tmp/fresh.catalog"
	q -d upgrade_old -c "$cat" >"$tmp/old.catalog"
	check "$label -> $want: same objects as a fresh install ($(wc -l <"$tmp/fresh.catalog") definitions)" \
		'[ -s "$tmp/fresh.catalog" ] && diff -u "$tmp/fresh.catalog" "$tmp/old.catalog"'
	q -d upgrade_fresh -c "$mem" >"$tmp/fresh.members"
	q -d upgrade_old -c "$mem" >"$tmp/old.members"
	check "$label -> $want: same extension members" \
		'diff -u "$tmp/fresh.members" "$tmp/old.members"'
}

for old in $olds; do
	cleanup
	mkdir -p "$tmp"
	q -d postgres -c 'CREATE DATABASE upgrade_fresh' -c 'CREATE DATABASE upgrade_old'
	q -d upgrade_fresh -c 'CREATE EXTENSION pg_inventory'
	q -d upgrade_old -c "CREATE EXTENSION pg_inventory VERSION '$old'" \
		-c "SELECT inventory.restock('t', 'r', 'A', 5)" \
		-c "SELECT inventory.reserve('t', 'k', 'A', 2)" \
		-c "SELECT inventory.confirm('t', 'k')" >/dev/null
	before=$(q -d upgrade_old -c 'SELECT count(*) FROM inventory.outbox' -c 'SELECT count(*) FROM inventory.reservation_transition')
	updated pg_inventory "$old" "$catalog" "$members"
	check "$old -> $default: rows kept" \
		'[ "$before" = "$(q -d upgrade_old -c "SELECT count(*) FROM inventory.outbox" -c "SELECT count(*) FROM inventory.reservation_transition")" ]'
	check "$old -> $default: new calls work and invariants hold" \
		'[ "$(q -d upgrade_old -c "SELECT status FROM inventory.reserve('"'t', 'k2', 'A', 1"')" -c "SELECT count(*) FROM inventory.check_invariants()")" = "$(printf "reserved\n0")" ]'
done

# pg_inventory_router: a router database with nodes and a placement (no
# node is reached: PL/Proxy connects at the first call only)
for old in $rolds; do
	cleanup
	mkdir -p "$tmp"
	q -d postgres -c 'CREATE DATABASE upgrade_fresh' -c 'CREATE DATABASE upgrade_old'
	q -d upgrade_fresh -c 'SET client_min_messages = warning' -c 'CREATE EXTENSION pg_inventory_router CASCADE'
	q -d upgrade_old -c 'SET client_min_messages = warning' \
		-c "CREATE EXTENSION pg_inventory_router VERSION '$old' CASCADE" \
		-c "SELECT inventory_router.set_node('node_a', 'host=127.0.0.1 port=1 dbname=a')" \
		-c "SELECT inventory_router.set_node('node_b', 'host=127.0.0.1 port=2 dbname=b')" \
		-c "SELECT inventory_router.place_partitions(ARRAY['node_a', 'node_b'])" >/dev/null
	kept="SELECT count(*), string_agg(node || ' ' || partition, ',' ORDER BY partition) FROM inventory_router.placement"
	before=$(q -d upgrade_old -c "$kept" -c 'SELECT version FROM inventory_router.cluster_version')
	updated pg_inventory_router "router $old" "$catalog_router" "$members_router"
	check "router $old -> $rdefault: nodes, placement and configuration version kept" \
		'[ "$before" = "$(q -d upgrade_old -c "$kept" -c "SELECT version FROM inventory_router.cluster_version")" ]'
	# pg_dump writes the configuration's rows: a restored router has the
	# same nodes and placement
	q -d postgres -c 'CREATE DATABASE upgrade_restored'
	"${PG_BIN:+$PG_BIN/}pg_dump" -Fc -f "$tmp/router.dump" upgrade_old &&
		"${PG_BIN:+$PG_BIN/}pg_restore" -d upgrade_restored "$tmp/router.dump"
	check "router $old -> $rdefault: pg_dump and pg_restore keep the nodes and the placement" \
		"$(q -d upgrade_old -c "$kept" -c 'SELECT count(*) FROM inventory_router.node')" \
		"$(q -d upgrade_restored -c "$kept" -c 'SELECT count(*) FROM inventory_router.node')"
	# a DBA who gave PL/Proxy's version function to one role instead of
	# PUBLIC keeps that through the step that replaces the function
	q -d upgrade_old -c 'SET client_min_messages = warning' -c 'DROP ROLE IF EXISTS upgrade_router_app' \
		-c 'CREATE ROLE upgrade_router_app' -c 'DROP EXTENSION pg_inventory_router' \
		-c "CREATE EXTENSION pg_inventory_router VERSION '$old'" \
		-c 'REVOKE EXECUTE ON FUNCTION plproxy.get_cluster_version(text) FROM PUBLIC' \
		-c 'GRANT EXECUTE ON FUNCTION plproxy.get_cluster_version(text) TO upgrade_router_app' \
		-c "ALTER FUNCTION inventory.reserve(text, text, text, integer, interval) SET statement_timeout = '5s'" \
		-c 'ALTER EXTENSION pg_inventory_router UPDATE' >/dev/null
	check "router $old -> $rdefault: a site's privileges on plproxy.get_cluster_version (replaced by the step) and settings of a proxy are kept" \
		"f|t|{statement_timeout=5s}" "$(q -d upgrade_old -c "SELECT has_function_privilege('public', 'plproxy.get_cluster_version(text)', 'EXECUTE'),
			has_function_privilege('upgrade_router_app', 'plproxy.get_cluster_version(text)', 'EXECUTE'),
			(SELECT proconfig FROM pg_proc WHERE oid = 'inventory.reserve(text, text, text, integer, interval)'::regprocedure)" \
			-c 'DROP EXTENSION pg_inventory_router' -c 'DROP ROLE upgrade_router_app')"
done
[ "$failed" -eq 0 ]
