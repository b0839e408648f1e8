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
	q -d postgres -c 'DROP DATABASE IF EXISTS upgrade_fresh' -c 'DROP DATABASE IF EXISTS upgrade_old' >/dev/null 2>&1
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
echo "1..$((count * 5))"

# one line per property of every object in schema inventory
catalog=$(cat <<'SQL'
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
       || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
       || coalesce(' comment ' || col_description(c.oid, a.attnum), '')
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relnamespace = 'inventory'::regnamespace
UNION ALL
SELECT 'relation ' || c.relname || ' ' || c.relkind::text || ' acl ' || coalesce(c.relacl::text, '-')
       || ' comment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
FROM pg_class c WHERE c.relnamespace = 'inventory'::regnamespace
UNION ALL
SELECT 'constraint ' || conrelid::regclass || '.' || conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = 'inventory'::regnamespace
UNION ALL
SELECT 'index ' || pg_get_indexdef(indexrelid)
FROM pg_index WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'inventory'::regnamespace)
UNION ALL
SELECT 'function ' || pg_get_functiondef(p.oid) || ' acl ' || coalesce(p.proacl::text, '-')
       || ' comment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
FROM pg_proc p WHERE p.pronamespace = 'inventory'::regnamespace
UNION ALL
SELECT 'view ' || c.relname || ' ' || pg_get_viewdef(c.oid)
FROM pg_class c WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind = 'v'
UNION ALL
SELECT 'type ' || t.typname || ' ' || coalesce(obj_description(t.oid, 'pg_type'), '-')
FROM pg_type t WHERE t.typnamespace = 'inventory'::regnamespace
ORDER BY 1
SQL
)

members='SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
  WHERE refclassid = $$pg_extension$$::regclass AND deptype = $$e$$
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = $$pg_inventory$$) ORDER BY 1'

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
	q -d upgrade_old -c 'ALTER EXTENSION pg_inventory UPDATE'
	check "$old -> $default: extversion is $default" \
		'[ "$(q -d upgrade_old -c "SELECT extversion FROM pg_extension WHERE extname = '"'pg_inventory'"'")" = "$default" ]'
	q -d upgrade_fresh -c "$catalog" >"$tmp/fresh.catalog"
	q -d upgrade_old -c "$catalog" >"$tmp/old.catalog"
	check "$old -> $default: same objects as a fresh install ($(wc -l <"$tmp/fresh.catalog") definitions)" \
		'[ -s "$tmp/fresh.catalog" ] && diff -u "$tmp/fresh.catalog" "$tmp/old.catalog"'
	q -d upgrade_fresh -c "$members" >"$tmp/fresh.members"
	q -d upgrade_old -c "$members" >"$tmp/old.members"
	check "$old -> $default: same extension members" \
		'diff -u "$tmp/fresh.members" "$tmp/old.members"'
	check "$old -> $default: rows kept" \
		'[ "$before" = "$(q -d upgrade_old -c "SELECT count(*) FROM inventory.outbox" -c "SELECT count(*) FROM inventory.reservation_transition")" ]'
	check "$old -> $default: new calls work and invariants hold" \
		'[ "$(q -d upgrade_old -c "SELECT status FROM inventory.reserve('"'t', 'k2', 'A', 1"')" -c "SELECT count(*) FROM inventory.check_invariants()")" = "$(printf "reserved\n0")" ]'
done
[ "$failed" -eq 0 ]
