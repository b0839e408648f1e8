#!/usr/bin/env bash
# test/scripts/dump_restore_test.sh: README "Every table holding user
# data, and its sequences, is dumped by pg_dump: after a restore, new calls
# work."
#
# Needs a running server and a superuser connection (PGHOST, PGPORT, PGUSER
# exported, as pg_env.sh's pg_start does) with pg_inventory installed.  It
# creates the database dump_src, runs a workload in it (restocks, an
# adjustment, reserves including a rejection, confirm, cancel, compensate, a
# multi-line reserve, tenant grants to a role made for the test; since 0.5 a
# second location with a stock policy, the allocation policy, a receipt
# there and a pinned line), dumps it
# with `pg_dump -Fc`, restores into dump_dst with `pg_restore`, compares
# every table's rows and every sequence's position, then makes new calls in
# dump_dst.  Prints TAP (1..N, ok/not ok) and exits non-zero on any failure.
# Drops its databases and its role at the end.
#
#   DR_SRC, DR_DST   database names (default dump_src, dump_dst)
#   PG_BIN           PostgreSQL binaries (default /usr/lib/postgresql/15/bin)

set -u

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
SRC=${DR_SRC:-dump_src}
DST=${DR_DST:-dump_dst}
ROLE=dump_restore_app
PLAN=32
WORK=$(mktemp -d /tmp/pg_inventory_dump.XXXXXX)

# plan, ok, not_ok, check DESCRIPTION EXPECTED GOT, q DB SQL, tap_done
# shellcheck source=test/scripts/tap.sh
source "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

drop_all() {
	local db
	for db in "$SRC" "$DST"; do
		"$PG_BIN/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
	done
	"$PG_BIN/psql" -X -q -d postgres -c "DROP ROLE IF EXISTS $ROLE" >/dev/null 2>&1
}
trap 'drop_all; rm -rf "$WORK"' EXIT

plan "$PLAN"

# a clean start, even after an interrupted run
drop_all

out=$(q postgres "CREATE ROLE $ROLE NOLOGIN;
CREATE DATABASE $SRC;")$(q "$SRC" "CREATE EXTENSION pg_inventory;")
check "create $SRC with pg_inventory" "" "$out"
# node 5 of a cluster (0.10): its ids in node 5's ranges, kept by the
# restore with the node's number (inventory.node_identity)
check "$SRC is node 5" "5" "$(q "$SRC" "SELECT inventory.set_node_number(5);")"

# the reservations' rings (0.9): gone-order (ring 0) is archived and its
# ring truncated on 2025-12-01, when ring 2 becomes current; held-order
# (ring 1) stays pending; the workload below writes into ring 2
out=$(q "$SRC" "
SET pg_inventory.frozen_now = '2025-11-01 00:00:00+00';
SELECT inventory.restock('dr-c', 'rcpt-gone', 'C', 2);
SELECT status || ' ' || reservation_id % 4 FROM inventory.reserve('dr-c', 'gone-order', 'C', 1);
SELECT status FROM inventory.confirm('dr-c', 'gone-order');
SET pg_inventory.frozen_now = '2025-11-06 00:00:00+00';
SELECT inventory.purge_history('8 days');
SELECT status || ' ' || reservation_id % 4 FROM inventory.reserve('dr-c', 'held-order', 'C', 1, '1 hour');
SET pg_inventory.frozen_now = '2025-12-01 00:00:00+00';
SELECT inventory.purge_history('8 days', 100, archive => true);
SELECT last_value FROM inventory.reservation_ring;
")
check "the reservations' rings in $SRC: a ring archived and truncated, the current ring moved on (0.9)" \
	"$(printf '%s\n' 2 'reserved 0' confirmed 0 'reserved 1' 1 2)" "$out"

# the workload: every table and every sequence gets rows
out=$(q "$SRC" "
SET pg_inventory.frozen_now = '2026-01-01 00:00:00+00';
GRANT USAGE ON SCHEMA inventory TO $ROLE;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.confirm(text, text), inventory.cancel(text, text, text),
	inventory.lookup(text, text) TO $ROLE;
SELECT inventory.grant_tenant('dr-a', '$ROLE');
SELECT inventory.grant_tenant('*', 'pg_monitor');
SET pg_inventory.frozen_now = '2025-12-01 00:00:00+00';
SELECT inventory.restock('dr-c', 'rcpt-old', 'C', 5);
SELECT status FROM inventory.reserve('dr-c', 'old-order', 'C', 1);
SELECT status FROM inventory.confirm('dr-c', 'old-order');
SELECT inventory.relay_mark_published('dr', ARRAY(SELECT id FROM inventory.relay_claim('dr', 100)));
SELECT inventory.relay_mark_published('dr', ARRAY(SELECT id FROM inventory.relay_claim('dr', 100)));
-- the outbox's rings (0.8): each gets events; the current ring moves on
-- at 2025-12-06 (to 1) and at 2026-01-01 (to 2), removing nothing
SET pg_inventory.frozen_now = '2025-12-06 00:00:00+00';
SELECT inventory.purge_published('8 days');
SELECT inventory.restock('dr-c', 'rcpt-mid', 'C', 1);
SELECT inventory.relay_mark_published('dr', ARRAY(SELECT id FROM inventory.relay_claim('dr', 100)));
SET pg_inventory.frozen_now = '2026-01-01 00:00:00+00';
SELECT inventory.purge_published('40 days');
SELECT inventory.restock('dr-a', 'rcpt-1', 'A', 10, 'first delivery');
SELECT inventory.restock('dr-a', 'rcpt-2', 'B', 5);
SELECT inventory.restock('dr-b', 'rcpt-1', 'A', 3);
SELECT inventory.adjust('dr-a', 'adj-1', 'B', -1, 'loss', 'broken in the warehouse');
SELECT inventory.set_location('dr-a', 'north', 200);
SELECT inventory.set_allocation_policy('dr-a', true);
SELECT inventory.restock_at('dr-a', 'rcpt-n1', 'A', 'north', 4);
SELECT inventory.set_stock_policy('dr-a', 'A', 'north', 1);
SELECT status FROM inventory.reserve('dr-a', 'order-1', 'A', 2);
SELECT status FROM inventory.reserve('dr-a', 'order-2', 'A', 3);
SELECT status FROM inventory.reserve('dr-a', 'order-3', 'A', 100);
SELECT status FROM inventory.reserve_lines('dr-a', 'order-4',
	'[{\"sku\": \"A\", \"quantity\": 1}, {\"sku\": \"B\", \"quantity\": 2}]');
SELECT status FROM inventory.reserve('dr-b', 'order-1', 'A', 1, '1 hour');
SELECT status FROM inventory.confirm('dr-a', 'order-1');
SELECT status FROM inventory.cancel('dr-a', 'order-2', 'customer cancelled');
SELECT status FROM inventory.confirm('dr-a', 'order-4');
SELECT status FROM inventory.compensate('dr-a', 'order-4', 'parcel lost');
SELECT status FROM inventory.reserve('dr-a', 'order-5', 'B', 1);
SELECT status FROM inventory.reserve_lines('dr-a', 'order-6',
	'[{\"sku\": \"A\", \"quantity\": 2, \"location\": \"north\"}]');
SELECT inventory.purge_history('1 day', 100, archive => true);
SELECT inventory.archive_ledger('1 day', 100);
")
check "workload in $SRC: every call returns what the contract says" \
	"$(printf '%s\n' t t 5 reserved confirmed 7 2 0 5 1 0 10 5 3 4 t t 4 t reserved reserved insufficient \
		reserved reserved confirmed cancelled confirmed compensated reserved reserved 0 3)" "$out"

# snapshot DB: per table "name rows md5-of-ordered-rows", per sequence
# "name last_value is_called", in name order; but the outbox's low-water
# mark (0.7) and current ring (0.8), which are not data and not dumped
# (checked on their own below)
snapshot() {
	local rel kind
	q "$1" "SELECT c.relname || ' ' || c.relkind::text FROM pg_class c
		WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind IN ('r', 'S')
		  AND c.relname NOT IN ('outbox_low_water', 'outbox_ring', 'reservation_ring')
		ORDER BY c.relname" |
		while read -r rel kind; do
			if [ "$kind" == "S" ]; then
				q "$1" "SELECT '$rel ' || last_value || ' ' || is_called FROM inventory.$rel"
			else
				q "$1" "SELECT '$rel ' || count(*) || ' '
					|| md5(coalesce(string_agg(t::text, chr(10) ORDER BY t::text), ''))
					FROM inventory.$rel t"
			fi
		done
}
before=$(snapshot "$SRC")
printf '%s\n' "$before" | sed 's/^/# src: /'

# (but the reservations' rings 0 and 3: 0 truncated, 3 current since the
# last purge, with nothing yet)
check "every inventory table of $SRC has rows and every sequence was used" "" \
	"$(printf '%s\n' "$before" | awk '($2 == "0" && $1 !~ /^reservation(_line|_transition)?_ring_[03]$/) || $3 == "false"')"
check "every table and sequence of the schema is registered with pg_extension_config_dump" \
	"$(printf '%s\n' "$before" | wc -l)" \
	"$(q "$SRC" "SELECT count(*) FROM pg_extension e, unnest(e.extconfig) x WHERE e.extname = 'pg_inventory'")"

read -r max_res max_outbox max_tr max_ledger <<<"$(q "$SRC" "
	SELECT (SELECT max(id) FROM inventory.reservation) || ' ' ||
		   (SELECT max(id) FROM inventory.outbox) || ' ' ||
		   (SELECT max(id) FROM inventory.reservation_transition) || ' ' ||
		   (SELECT max(id) FROM inventory.stock_ledger)")"
old_order1=$(q "$SRC" "SELECT id FROM inventory.reservation WHERE tenant = 'dr-a' AND request_key = 'order-1'")

# dump and restore
out=$("$PG_BIN/pg_dump" -Fc -f "$WORK/src.dump" "$SRC" 2>&1 || echo "pg_dump exited with status $?")
check "pg_dump -Fc $SRC" "" "$out"
out=$(q postgres "CREATE DATABASE $DST;")
[ -z "$out" ] && out=$("$PG_BIN/pg_restore" --exit-on-error -d "$DST" "$WORK/src.dump" 2>&1 ||
	echo "pg_restore exited with status $?")
check "pg_restore -d $DST without errors or warnings" "" "$out"

check "extension pg_inventory exists in $DST at the source's version" \
	"$(q "$SRC" "SELECT extversion || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'pg_inventory'")" \
	"$(q "$DST" "SELECT extversion || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'pg_inventory'")"

after=$(snapshot "$DST")
printf '%s\n' "$after" | sed 's/^/# dst: /'
check "every table's rows and every sequence's position are the same after the restore" \
	"$before" "$after"
# pg_dump would read the mark after its snapshot of the outbox, maybe past
# an event the snapshot sees unpublished: restored at its start, it is safe
check "the outbox's low-water mark is not dumped: restored at its start (0.7)" \
	"1 false" "$(q "$DST" "SELECT last_value || ' ' || is_called FROM inventory.outbox_low_water")"
# any ring is safe to write to: the restored database starts at ring 0
check "the outbox's current ring is not dumped: restored at ring 0 (0.8)" \
	"2 true / 0 false" "$(q "$SRC" "SELECT last_value || ' ' || is_called FROM inventory.outbox_ring") / $(q "$DST" "SELECT last_value || ' ' || is_called FROM inventory.outbox_ring")"
check "the reservations' current ring is not dumped: restored at ring 0, every reservation in the ring of its id (0.9)" \
	"3 true 0 / 0 false 0" "$(q "$SRC" "SELECT last_value || ' ' || is_called || ' ' || (SELECT count(*) FROM inventory.reservation r WHERE r.tableoid <> ('inventory.reservation_ring_' || r.id % 4)::regclass) FROM inventory.reservation_ring") / $(q "$DST" "SELECT last_value || ' ' || is_called || ' ' || (SELECT count(*) FROM inventory.reservation r WHERE r.tableoid <> ('inventory.reservation_ring_' || r.id % 4)::regclass) FROM inventory.reservation_ring")"

# the rows themselves, in full text, table by table
diffs=""
for t in stock reservation reservation_line stock_ledger reservation_transition tenant_member outbox \
	location allocation_policy stock_location location_stock; do
	a=$(q "$SRC" "SELECT t::text FROM inventory.$t t ORDER BY 1")
	b=$(q "$DST" "SELECT t::text FROM inventory.$t t ORDER BY 1")
	[ -n "$a" ] && [ "$a" == "$b" ] || diffs="$diffs $t"
done
check "row by row, the contract tables and views are equal (locations too: 0.5)" "" "$diffs"

check "the extension's relations have no PUBLIC privileges after the restore" "0" \
	"$(q "$DST" "SELECT count(*) FROM pg_class c, aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) x
		WHERE c.relnamespace = 'inventory'::regnamespace AND x.grantee = 0")"
check "no function is executable by PUBLIC after the restore" "0" \
	"$(q "$DST" "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'inventory'::regnamespace
		AND has_function_privilege('public', p.oid, 'EXECUTE')")"
check "the role's EXECUTE grants survive the restore (reserve yes, restock no)" "true false" \
	"$(q "$DST" "SELECT has_function_privilege('$ROLE', 'inventory.reserve(text,text,text,integer,interval)', 'EXECUTE')
		|| ' ' || has_function_privilege('$ROLE', 'inventory.restock(text,text,text,integer,text)', 'EXECUTE')")"

# new calls in the restored database
check "check_invariants is empty after the restore" "" \
	"$(q "$DST" "SELECT * FROM inventory.check_invariants()")"

new=$(q "$DST" "SELECT status || ' ' || applied || ' ' || reservation_id FROM inventory.reserve('dr-a', 'order-new', 'A', 1)")
read -r st ap id <<<"$new"
if [ "$st $ap" == "reserved true" ] && [ -n "${id:-}" ] && [ -n "${max_res:-}" ] && [ "$id" -gt "$max_res" ]; then
	ok "a new key gets a new reservation id above every restored id ($id > $max_res)"
else
	not_ok "a new key gets a new reservation id above every restored id" \
		"got: $new, max before: ${max_res:-}"
	id=0
fi
check "the new reservation's event and transition ids follow the restored ones" "true true" \
	"$(q "$DST" "SELECT ((SELECT min(id) FROM inventory.outbox WHERE reservation_id = $id) > ${max_outbox:-0})
		|| ' ' || ((SELECT min(id) FROM inventory.reservation_transition WHERE reservation_id = $id) > ${max_tr:-0})")"
check "replaying an old key returns the stored outcome with applied = false" \
	"reserved confirmed false $old_order1" \
	"$(q "$DST" "SELECT status || ' ' || state || ' ' || applied || ' ' || reservation_id FROM inventory.reserve('dr-a', 'order-1', 'A', 2)")"
check "replaying the rejected key stays insufficient" "insufficient rejected false" \
	"$(q "$DST" "SELECT status || ' ' || state || ' ' || applied FROM inventory.reserve('dr-a', 'order-3', 'A', 100)")"
check "the old key with another payload raises IN001" "IN001" \
	"$(q "$DST" "SELECT inventory.reserve('dr-a', 'order-1', 'A', 7)")"
check "a restored pending reservation can be confirmed" "confirmed true" \
	"$(q "$DST" "SET pg_inventory.frozen_now = '2026-01-01 00:05:00+00';
		SELECT status || ' ' || applied FROM inventory.confirm('dr-a', 'order-5')")"
check "a restock replay returns the stored available; a new receipt adds to the restored count" \
	"10 10" \
	"$(q "$DST" "SELECT inventory.restock('dr-a', 'rcpt-1', 'A', 10) || ' ' || inventory.restock('dr-a', 'rcpt-3', 'A', 3)")"
check "new ledger rows get ids above the restored ones" "t" \
	"$(q "$DST" "SELECT min(id) > ${max_ledger:-0} FROM inventory.stock_ledger WHERE request_key = 'rcpt-3'")"

# 0.5: the restored locations, stock policy and allocation policy decide
check "restock_at a restored location adds to its restored count (4 - 2 held + 2)" "4" \
	"$(q "$DST" "SELECT inventory.restock_at('dr-a', 'rcpt-n2', 'A', 'north', 2)")"
check "a pinned line is held at its restored location" "reserved north 1" \
	"$(q "$DST" "SELECT status || ' ' || string_agg(l ->> 'location' || ' ' || (l ->> 'quantity'), ', ')
		FROM inventory.reserve_lines('dr-a', 'order-pin',
			'[{\"sku\": \"A\", \"quantity\": 1, \"location\": \"north\"}]') o,
			jsonb_array_elements(o.lines) l GROUP BY status")"
d=$(q "$DST" "SELECT sellable FROM inventory.location_stock
	WHERE tenant = 'dr-a' AND sku = 'A' AND location = 'default'")
check "a line no location can serve alone is split by the restored policy, safety stock kept" \
	"reserved default ${d:-?}, north 2" \
	"$(q "$DST" "SELECT status || ' ' || string_agg(l ->> 'location' || ' ' || (l ->> 'quantity'), ', '
			ORDER BY l ->> 'location')
		FROM inventory.reserve('dr-a', 'order-split', 'A', ${d:-0} + 2) o,
			jsonb_array_elements(o.lines) l GROUP BY status")"

# the restored tenant grants still decide
check "the role acts for its restored tenant grant in $DST" "reserved" \
	"$(q "$DST" "SET ROLE $ROLE; SELECT status FROM inventory.reserve('dr-a', 'order-role', 'B', 1)")"
check "the role is still refused for another tenant in $DST (42501)" "42501" \
	"$(q "$DST" "SET ROLE $ROLE; SELECT inventory.reserve('dr-b', 'order-role', 'A', 1)")"
check "check_invariants is empty after the new calls" "" \
	"$(q "$DST" "SELECT * FROM inventory.check_invariants()")"

tap_done
