#!/usr/bin/env bash
# test/scripts/reference_test.sh: the repository explains itself, and its
# reference agrees with the extension (README "Testing and development").
#
# In a fresh database of the running server (PGHOST, PGPORT, a superuser):
# - every public function (schema inventory, not "_"-prefixed, not a
#   trigger function) has a COMMENT, a "### name" entry in section 5 of the
#   README whose SQLSTATEs are exactly those of the comment, and a
#   has_function test in test/pgtap/01_catalog.sql;
# - every relation of the schema has a COMMENT and a row in the README's
#   table of relations;
# - the README's transition table is inventory.transition_rules();
# - the README's first steps run as written, then the examples of the
#   DBA's console (section 9) in the same database;
# - no file of the repository points outside it.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.."
# shellcheck source=test/scripts/tap.sh
source test/scripts/tap.sh
DB=reference_check
trap 'q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "DROP DATABASE IF EXISTS shop" -c "DROP ROLE IF EXISTS inventory_monitor" >/dev/null 2>&1' EXIT

plan 10
q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q -d "$DB" -c "CREATE EXTENSION pg_inventory" >/dev/null

functions=$(q -d "$DB" -c "SELECT p.proname FROM pg_proc p
	WHERE p.pronamespace = 'inventory'::regnamespace AND p.proname NOT LIKE '\\_%'
	  AND p.prorettype <> 'trigger'::regtype ORDER BY 1")
check "the extension has public functions ($(wc -w <<<"$functions"))" '[ "$(wc -w <<<"$functions")" -gt 15 ]'

# the README section of function $1: from its "### name" line to the next heading
readme_entry() {
	awk -v h="### $1" '$0 == h {on = 1; next} on && /^#/ {exit} on {print}' README.md
}
sqlstates() { grep -oE '\b(2[0-9A-Z]|4[0-9]|5[0-9]|IN)[0-9A-Z]{3}\b' | grep -E '[0-9]' | sort -u | tr '\n' ' '; }

missing_comment=
missing_entry=
differ=
missing_test=
for f in $functions; do
	comment=$(q -d "$DB" -c "SELECT obj_description(p.oid, 'pg_proc') FROM pg_proc p
		WHERE p.pronamespace = 'inventory'::regnamespace AND p.proname = '$f'")
	[ -n "$comment" ] || missing_comment+=" $f"
	entry=$(readme_entry "$f")
	if [ -z "$entry" ]; then
		missing_entry+=" $f"
	else
		# the errors the README names, against the errors the comment names
		r=$(grep -A1000 'Errors:' <<<"$entry" | sqlstates)
		c=$(sed -n 's/.*Errors: *//p' <<<"$comment" | sqlstates)
		[ "$r" = "$c" ] || differ+=" $f(README: ${r:-none}; comment: ${c:-none})"
	fi
	grep -q "has_function('inventory', '$f'" test/pgtap/01_catalog.sql || missing_test+=" $f"
done
check "every public function has a COMMENT" "" "$missing_comment"
check "every public function has a README entry" "" "$missing_entry"
check "each README entry names the SQLSTATEs of the function's COMMENT" "" "$differ"
check "every public function has a has_function test" "" "$missing_test"

relations=$(q -d "$DB" -c "SELECT c.relname || '|' || (obj_description(c.oid, 'pg_class') IS NOT NULL)
	FROM pg_class c WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind IN ('r', 'v') ORDER BY 1")
bad=
for r in $relations; do
	name=${r%|*}
	[ "${r#*|}" = true ] || bad+=" $name(no comment)"
	grep -qE "^\| \`$name\(" README.md || bad+=" $name(no README row)"
done
check "every relation has a COMMENT and a README row" "" "$bad"

# the transition table: rows "| call | from | to | moves from | to |"
readme_rules=$(awk '/^\| call \| from \| to \|/ {on = 1; next} on && /^\|---/ {next}
	on && /^\|/ {print; next} on {exit}' README.md |
	sed -E 's/^\| *//; s/ *\| *$//; s/ *\| */|/g; s/\(none\)//')
db_rules=$(q -d "$DB" -c "SELECT call || '|' || coalesce(from_state, '') || '|' || to_state || '|' ||
	coalesce(moves_from, '') || '|' || coalesce(moves_to, '') FROM inventory.transition_rules()")
check "the README's transition table is inventory.transition_rules()" "$db_rules" "$readme_rules"

# the first steps, as written (the sql block of section 3)
first_steps=$(awk '/^## 3\. First steps/ {s = 1} s && /^```sql/ {on = 1; next}
	on && /^```/ {exit} on {print}' README.md)
q -d postgres -c "DROP DATABASE IF EXISTS shop" >/dev/null 2>&1
out=$(printf '%s\n' "$first_steps" | "${PG_BIN:+$PG_BIN/}psql" -X -q -v ON_ERROR_STOP=1 -d postgres 2>&1 >/dev/null)
check "the README's first steps run as written" "" "$out"

# the DBA's console: every sql block of its subsection, in that database
q -d postgres -c "DROP ROLE IF EXISTS inventory_monitor" >/dev/null 2>&1
console=$(awk '/^### The DBA.s console/ {s = 1; next} s && /^#/ {exit}
	s && /^```sql/ {on = 1; next} on && /^```/ {on = 0; next} on {print}' README.md)
out=$( { [ -n "$console" ] || echo "no sql block found"; } ;
	printf '%s\n' "$console" | "${PG_BIN:+$PG_BIN/}psql" -X -q -v ON_ERROR_STOP=1 -d shop 2>&1 >/dev/null)
check "the examples of the DBA's console run as written" "" "$out"

outside=$(git grep -l -e '\.\./shared' -e 'CONTRACT\.md' -- . ':!.ci' 2>/dev/null | tr '\n' ' ')
check "no file points outside the repository" "" "$outside"
tap_done
