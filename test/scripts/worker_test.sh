#!/usr/bin/env bash
# test/scripts/worker_test.sh: the expiry worker and its launcher (README
# "Operations"): expiry in the named database, an error inside a pass,
# another tenant's broken row, automatic slotting (a split, a merge, a split
# tried again soon after a lock timeout), uninstall, a missing or dropped
# database, a terminated worker or launcher.
#
# Starts its own throwaway server on a free port (the shared server of
# `make test` has other settings) with
#   shared_preload_libraries = 'pg_inventory'
#   pg_inventory.worker_database = 'shop'       (does not exist at start)
#   pg_inventory.worker_interval = 200
# and removes it on exit.  Waits only by polling an observable condition
# (pg_stat_activity, a table, the server log) with a deadline, never by a
# fixed sleep.  The launcher shows in pg_stat_activity what it waits for and
# how many checks it made in that state ("... (check N)"), which is how the
# test knows that it went on checking without logging again.  Prints TAP
# (1..N, ok/not ok) and exits non-zero on any failure.
#
#   PG_BIN   PostgreSQL binaries (default /usr/lib/postgresql/15/bin); make
#            test points it at its private copy with the fresh extension

set -u

cd "$(dirname "$0")/../.."
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
# shellcheck source=test/scripts/pg_env.sh
source test/scripts/pg_env.sh
# plan, ok, not_ok, check DESCRIPTION EXPECTED GOT, q DB SQL, tap_done
# shellcheck source=test/scripts/tap.sh
source test/scripts/tap.sh

PLAN=35
DB=shop
TIMEOUT=60

# poll SECONDS COMMAND...: runs COMMAND until it succeeds; fails after SECONDS
poll() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.1
	done
}
# is DB SQL EXPECTED: the query's output equals EXPECTED (for poll)
is() { [ "$(q "$1" "$2")" == "$3" ]; }

LOG=
# log_mark: the current end of the server log; log_since MARK: what follows
log_mark() { wc -c <"$LOG"; }
log_since() { tail -c +$(($1 + 1)) "$LOG"; }
# log_count MARK TEXT: lines after MARK containing TEXT
log_count() { log_since "$1" | grep -cF -- "$2"; }
# logged MARK TEXT: TEXT is in the log after MARK (for poll)
logged() { [ "$(log_count "$1" "$2")" -gt 0 ]; }

# worker_pid: the expiry worker's pid in $DB, or nothing
worker_pid() {
	q postgres "SELECT pid FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory expiry worker' AND datname = '$DB'"
}
# launcher_checks TEXT: how many checks the launcher made while its activity
# says TEXT, 0 if it says something else
launcher_checks() {
	local c
	c=$(q postgres "SELECT substring(query from '\(check ([0-9]+)\)\$')
		FROM pg_stat_activity WHERE backend_type = 'pg_inventory launcher'
		AND strpos(query, \$\$$1\$\$) > 0")
	echo "${c:-0}"
}
# checks_at_least TEXT N (for poll)
checks_at_least() { [ "$(launcher_checks "$1")" -ge "$2" ]; }
# expired KEY: the worker has expired reservation KEY of tenant wt
expired() { is "$DB" "SELECT state FROM inventory.reservation WHERE tenant = 'wt' AND request_key = '$1'" expired; }

NO_DB="pg_inventory expiry worker: database \"$DB\" does not exist"
DB_BACK="database \"$DB\" exists now; starting the expiry worker"
NO_EXT="extension \"pg_inventory\" is not installed in database \"$DB\""
STARTED="pg_inventory expiry worker started in database \"$DB\""

PGI_DIR=$(mktemp -d /tmp/pg_inventory_worker.XXXXXX)
PGI_PORT=$(pg_free_port 57432)
PGI_CONF="shared_preload_libraries = 'pg_inventory'
pg_inventory.worker_database = '$DB'
pg_inventory.worker_interval = 200"
trap 'pg_destroy' EXIT

plan "$PLAN"
if ! pg_start >/dev/null; then
	not_ok "the throwaway server with the preloaded worker starts"
	exit 1
fi
LOG=$PGI_DIR/server.log

# --- the launcher, without the database --------------------------------
check "the launcher runs connected to no database, named in pg_stat_activity" \
	"pg_inventory launcher|true" \
	"$(q postgres "SELECT application_name || '|' || (datid IS NULL) FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory launcher'")"

if poll $TIMEOUT checks_at_least "database \"$DB\" does not exist" 2; then
	check "a missing database is logged once while the launcher checks again" \
		1 "$(log_count 0 "$NO_DB")"
else
	not_ok "the launcher reports the missing database in pg_stat_activity" \
		"$(q postgres "SELECT query FROM pg_stat_activity WHERE backend_type = 'pg_inventory launcher'")"
fi

# --- the worker expires in the named database --------------------------
mark=$(log_mark)
out=$(q postgres "CREATE DATABASE $DB")$(q "$DB" "CREATE EXTENSION pg_inventory")
check "create database $DB with pg_inventory" "" "$out"
if poll $TIMEOUT is postgres "SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory expiry worker' AND datname = '$DB'" 1; then
	ok "the launcher starts the expiry worker in $DB"
else
	not_ok "the launcher starts the expiry worker in $DB" "$(log_since "$mark")"
fi
check "the database's appearance is logged once" 1 "$(log_count "$mark" "$DB_BACK")"

out=$(q "$DB" "SELECT inventory.restock('wt', 'rcpt-1', 'A', 5);
	SELECT status FROM inventory.reserve('wt', 'r1', 'A', 2, '1 second');")
check "restock and a reserve with a one-second ttl" "5
reserved" "$out"
if poll $TIMEOUT expired r1; then
	ok "the worker expires the due reservation"
else
	not_ok "the worker expires the due reservation" "$(log_since "$mark")"
fi
check "its units are back" "5|0" \
	"$(q "$DB" "SELECT available || '|' || reserved FROM inventory.stock WHERE tenant = 'wt' AND sku = 'A'")"
check "pg_stat_activity shows the worker's name and its current step, or its last pass between passes" "pg_inventory expiry worker|true" \
	"$(q postgres "SELECT application_name || '|' || (query ~ '^pg_inventory expiry worker: (expiring: expire_due\(1000\)|purging: purge_published\(''[0-9]+ seconds'', [0-9]+\)|idle, last pass at .+, expired [0-9]+, purged [0-9]+, next in [0-9]+ ms)\$')
		FROM pg_stat_activity WHERE backend_type = 'pg_inventory expiry worker'")"

# --- an error in a pass is logged and the worker goes on -----------------
# As the superuser, replace the function the worker calls by one that fails
# with 22003, then put the real one back.
mark=$(log_mark)
pid=$(worker_pid)
def=$(q "$DB" "SELECT pg_get_functiondef('inventory.expire_due(integer)'::regprocedure)")
out=$(q "$DB" "CREATE OR REPLACE FUNCTION inventory.expire_due(max_rows integer DEFAULT 1000)
	RETURNS integer LANGUAGE plpgsql AS
	\$f\$BEGIN RAISE EXCEPTION 'fault injected by worker_test' USING ERRCODE = '22003'; END\$f\$")
check "inject a fault into expire_due" "" "$out"
if poll $TIMEOUT logged "$mark" "expire_due failed with SQLSTATE 22003: fault injected by worker_test"; then
	ok "the failed pass is logged with its SQLSTATE"
else
	not_ok "the failed pass is logged with its SQLSTATE" "$(log_since "$mark")"
fi
# the step text is written at the start of every step: wait for passes that
# began well after the error was logged
t0=$(q postgres "SELECT now()")
if poll $TIMEOUT is postgres "SELECT query_start > '$t0'::timestamptz + interval '1 second'
		FROM pg_stat_activity WHERE pid = $pid" t; then
	check "the worker carries on with more passes: same process, nothing exited, the repeated error logged once" \
		"$pid 0 1" \
		"$(worker_pid) $(log_count "$mark" "exited with exit code") $(log_count "$mark" "fault injected by worker_test")"
else
	not_ok "the worker carries on with more passes after the error" \
		"$(q postgres "SELECT pid, query_start, query FROM pg_stat_activity WHERE backend_type LIKE 'pg_inventory%'")"
fi
out=$(q "$DB" "$def")$(q "$DB" "SELECT status FROM inventory.reserve('wt', 'r2', 'A', 1, '1 second')")
check "put expire_due back and reserve again" "reserved" "$out"
if poll $TIMEOUT expired r2; then
	check "the same worker expires the next reservation" "$pid" "$(worker_pid)"
else
	not_ok "the same worker expires the next reservation" "$(log_since "$mark")"
fi

# --- one tenant's broken row stops no one else's expiry -----------------
# As the superuser, push a counter of tenant wt-bad to the top of bigint, so
# that expiring its reservation overflows (22003) at every pass.
mark=$(log_mark)
out=$(q "$DB" "SELECT inventory.restock('wt-bad', 'rcpt-1', 'A', 5);
	SELECT status FROM inventory.reserve('wt-bad', 'b1', 'A', 1, '1 second');
	UPDATE inventory.stock_slot SET available = 9223372036854775807 WHERE tenant = 'wt-bad';
	SELECT status FROM inventory.reserve('wt', 'r-good', 'A', 1, '1 second');")
check "break a counter row of another tenant, reserve for both" "5
reserved
reserved" "$out"
if poll $TIMEOUT expired r-good; then
	t0=$(q postgres "SELECT now()")
	if poll $TIMEOUT is postgres "SELECT query_start > '$t0'::timestamptz + interval '1 second'
			FROM pg_stat_activity WHERE pid = $pid" t; then
		check "the worker expires the good tenant's hold, leaves the broken one pending, goes on, and logs the repeated warning once" \
			"pending $pid 1" \
			"$(q "$DB" "SELECT state FROM inventory.reservation WHERE tenant = 'wt-bad' AND request_key = 'b1'") $(worker_pid) $(log_since "$mark" | grep -c 'WARNING: .*expire_due')"
	else
		not_ok "the worker goes on after the broken row" "$(log_since "$mark")"
	fi
else
	not_ok "the worker expires the good tenant's hold despite another tenant's broken row" \
		"$(log_since "$mark")"
fi

# --- automatic slotting: a contended one-slot SKU is split, then merged ---
# Session A holds H's only slot in an open transaction (fed through a fifo);
# two reserves wait for it.  The worker samples lock waits every 250 ms
# (the default) and, after 3 samples in a row (the default), calls
# set_stock_slots(16) (four times the 3 callers it saw, as a power of two), which
# waits for A's slot too; once A commits, the
# waiters and the split complete.  With pg_inventory.auto_slots_idle at 2
# seconds and nothing waiting any more, it merges H back into one slot.
# Both changes are audited with the worker's reason; stock is unchanged.
q postgres "ALTER SYSTEM SET pg_inventory.auto_slots_idle = '2s'; SELECT pg_reload_conf()" >/dev/null
q "$DB" "SELECT inventory.restock('wt-hot', 'rcpt-h', 'H', 100)" >/dev/null
FIFO=$PGI_DIR/hold.fifo
mkfifo "$FIFO"
${PG_BIN:+$PG_BIN/}psql -X -q -A -t -d "$DB" <"$FIFO" >"$PGI_DIR/hold.out" 2>&1 &
hold_pid=$!
exec 7>"$FIFO"
echo "BEGIN; SELECT status FROM inventory.reserve('wt-hot', 'h0', 'H', 1, '1 hour');" >&7
poll $TIMEOUT is "$DB" "SELECT count(*) FROM inventory.reservation WHERE tenant = 'wt-hot'" 0 >/dev/null
for k in h1 h2; do
	q "$DB" "SELECT status FROM inventory.reserve('wt-hot', '$k', 'H', 1, '1 hour')" >"$PGI_DIR/$k.out" &
done
if poll $TIMEOUT is postgres "SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory expiry worker'
		AND query LIKE '%slotting: set_stock_slots(16)%' AND wait_event_type = 'Lock'" 1; then
	ok "the worker notices the waits on H's slot and splits it, waiting for the slot like set_stock_slots"
else
	not_ok "the worker notices the waits on H's slot and splits it, waiting for the slot like set_stock_slots" \
		"$(q postgres "SELECT backend_type, wait_event_type, query FROM pg_stat_activity WHERE datname = '$DB'")"
fi
echo "COMMIT;" >&7
exec 7>&-
wait "$hold_pid"
wait
if poll $TIMEOUT is "$DB" "SELECT slots FROM inventory.sku WHERE tenant = 'wt-hot' AND sku = 'H'" 16; then
	# (the totals only: the merge may already have come, 2 s later)
	check "H is split over 16 slots, audited with the worker's reason; the three holds are reserved; stock unchanged" \
		"set_stock_slots|1|16|automatic slotting by the expiry worker: lock waits on the SKU's stock slot
reserved reserved
97|3" \
		"$(q "$DB" "SELECT action, detail->'old'->>'slots', detail->'new'->>'slots', split_part(reason, ' in ', 1)
			FROM inventory.operator_audit WHERE tenant = 'wt-hot' ORDER BY id LIMIT 1")
$(cat "$PGI_DIR/h1.out") $(cat "$PGI_DIR/h2.out")
$(q "$DB" "SELECT available || '|' || reserved FROM inventory.stock WHERE tenant = 'wt-hot'")"
else
	not_ok "H is split over 16 slots" "$(log_since 0 | grep -i slot | tail -5)"
fi
if poll $TIMEOUT is "$DB" "SELECT slots FROM inventory.sku WHERE tenant = 'wt-hot' AND sku = 'H'" 1; then
	check "without waiters for 2 s the worker merges H back into one slot (audited); invariants hold" \
		"16|1|automatic slotting by the expiry worker: no lock waits on the SKU's stock slots for 2 s
97|3|1
0" \
		"$(q "$DB" "SELECT detail->'old'->>'slots' || '|' || (detail->'new'->>'slots') || '|' || reason
			FROM inventory.operator_audit WHERE tenant = 'wt-hot' ORDER BY id DESC LIMIT 1")
$(q "$DB" "SELECT available || '|' || reserved || '|' || slots FROM inventory.stock WHERE tenant = 'wt-hot'")
$(q "$DB" "SELECT count(*) FROM inventory.check_invariants() WHERE tenant = 'wt-hot'")"
else
	not_ok "the worker merges H back into one slot" "$(log_since 0 | grep -i slot | tail -5)"
fi

# --- automatic slotting: a split that timed out is tried again soon ------
# The bench's flash sale at 64 buyers: the worker's set_stock_slots joins
# the queue on the slot behind the buyers, and a queue that long outlasts
# its lock wait.  Here A holds G's only slot, W1 (a transaction too) and W2
# queue behind it, and the worker's first split times out behind them
# (logged with SQLSTATE 55P03).  Then A commits: W1 holds the slot and W2
# waits for it, so the rush goes on.  The worker must try again within
# seconds (1 s after the first failure, doubling up to 30 s), not after
# 30 s, the rush's whole length in the bench: it waits for the slot again,
# W1 commits, and the split goes through.
q "$DB" "SELECT inventory.restock('wt-hot', 'rcpt-g', 'G', 100)" >/dev/null
mkfifo "$PGI_DIR/a.fifo" "$PGI_DIR/w1.fifo"
${PG_BIN:+$PG_BIN/}psql -X -q -A -t -d "$DB" <"$PGI_DIR/a.fifo" >"$PGI_DIR/a.out" 2>&1 &
a_pid=$!
exec 7>"$PGI_DIR/a.fifo"
${PG_BIN:+$PG_BIN/}psql -X -q -A -t -d "$DB" <"$PGI_DIR/w1.fifo" >"$PGI_DIR/w1.out" 2>&1 7>&- &
w1_pid=$!
exec 8>"$PGI_DIR/w1.fifo"
mark=$(log_mark)
echo "BEGIN; SELECT status FROM inventory.reserve('wt-hot', 'g0', 'G', 1, '1 hour');" >&7
poll $TIMEOUT is "$DB" "SELECT count(*) FROM pg_stat_activity WHERE datname = '$DB'
	AND query LIKE '%''g0''%' AND state = 'idle in transaction'" 1 >/dev/null
echo "BEGIN; SELECT status FROM inventory.reserve('wt-hot', 'g1', 'G', 1, '1 hour');" >&8
# (7>&- 8>&-: only this shell keeps the fifos open, so a closed one ends its psql)
q "$DB" "SELECT status FROM inventory.reserve('wt-hot', 'g2', 'G', 1, '1 hour')" >"$PGI_DIR/g2.out" 7>&- 8>&- &
g2_pid=$!
if poll $TIMEOUT logged "$mark" "automatic slotting (set_stock_slots) failed with SQLSTATE"; then
	ok "the worker's split of G times out behind the queue on its slot (57014 or 55P03, logged)"
else
	not_ok "the worker's split of G times out behind the queue on its slot" \
		"$(log_since "$mark" | grep -i slot | tail -5)"
fi
echo "COMMIT;" >&7
exec 7>&-
wait "$a_pid"
# W1 now holds the slot, W2 waits for it: the worker tries again
if poll 15 is postgres "SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory expiry worker'
		AND query LIKE '%slotting: set_stock_slots(%' AND wait_event_type = 'Lock'" 1; then
	ok "the worker tries the split again within 15 s, not after 30 s"
else
	not_ok "the worker tries the split again within 15 s, not after 30 s" \
		"$(log_since "$mark" | grep -i slot | tail -5)"
fi
echo "COMMIT;" >&8
exec 8>&-
wait "$w1_pid"
wait "$g2_pid"
if poll $TIMEOUT is "$DB" "SELECT slots > 1 FROM inventory.sku WHERE tenant = 'wt-hot' AND sku = 'G'" t; then
	check "G is split by the worker (audited); the three holds are reserved; stock unchanged; invariants hold" \
		"1|automatic slotting by the expiry worker: lock waits on the SKU's stock slot
reserved reserved reserved
97|3
0" \
		"$(q "$DB" "SELECT detail->'old'->>'slots' || '|' || split_part(reason, ' in ', 1)
			FROM inventory.operator_audit WHERE tenant = 'wt-hot' AND detail->>'sku' = 'G' ORDER BY id LIMIT 1")
$(tail -n 1 "$PGI_DIR/a.out") $(tail -n 1 "$PGI_DIR/w1.out") $(cat "$PGI_DIR/g2.out")
$(q "$DB" "SELECT available || '|' || reserved FROM inventory.stock WHERE tenant = 'wt-hot' AND sku = 'G'")
$(q "$DB" "SELECT count(*) FROM inventory.check_invariants() WHERE tenant = 'wt-hot'")"
else
	not_ok "the worker splits G once the queue moves" "$(log_since "$mark" | grep -i slot | tail -5)"
fi
q postgres "ALTER SYSTEM RESET pg_inventory.auto_slots_idle; SELECT pg_reload_conf()" >/dev/null

# --- uninstall: DROP EXTENSION, then a plain DROP DATABASE ---------------
# A one-hour interval shows that the worker leaves when the extension is
# dropped, not at its next pass.
mark=$(log_mark)
q postgres "ALTER SYSTEM SET pg_inventory.worker_interval = '1h'; SELECT pg_reload_conf()" >/dev/null
if poll $TIMEOUT is postgres "SELECT now() - query_start > interval '2 seconds'
		FROM pg_stat_activity WHERE backend_type = 'pg_inventory expiry worker'" t; then
	ok "the worker waits an hour between passes after a reload"
else
	not_ok "the worker waits an hour between passes after a reload" \
		"$(q postgres "SELECT now() - query_start FROM pg_stat_activity WHERE backend_type = 'pg_inventory expiry worker'")"
fi
out=$(q "$DB" "DROP EXTENSION pg_inventory")$(q postgres "DROP DATABASE $DB")
check "after DROP EXTENSION a plain DROP DATABASE succeeds" "" "$out"
check "the missing extension was logged once" 1 "$(log_count "$mark" "$NO_EXT")"
q postgres "ALTER SYSTEM RESET pg_inventory.worker_interval; SELECT pg_reload_conf()" >/dev/null

# --- the database comes back: logged once, and the worker works again ----
if poll $TIMEOUT checks_at_least "database \"$DB\" does not exist" 3; then
	ok "the launcher keeps checking for the dropped database"
else
	not_ok "the launcher keeps checking for the dropped database" \
		"$(q postgres "SELECT query FROM pg_stat_activity WHERE backend_type = 'pg_inventory launcher'")"
fi
q postgres "CREATE DATABASE $DB" >/dev/null
if poll $TIMEOUT checks_at_least "$NO_EXT" 2; then
	ok "without the extension the launcher checks again later"
else
	not_ok "without the extension the launcher checks again later" \
		"$(q postgres "SELECT query FROM pg_stat_activity WHERE backend_type = 'pg_inventory launcher'")"
fi
out=$(q "$DB" "CREATE EXTENSION pg_inventory;
	SELECT inventory.restock('wt', 'rcpt-1', 'A', 5);
	SELECT status FROM inventory.reserve('wt', 'r3', 'A', 1, '1 second');")
check "create the extension again, restock and reserve" "5
reserved" "$out"
if poll $TIMEOUT expired r3; then
	ok "the worker expires again after the database and the extension came back"
else
	not_ok "the worker expires again after the database and the extension came back" \
		"$(log_since "$mark")"
fi
# since the DROP EXTENSION: the missing extension once after it and once in
# the new database, the rest once
check "logged once each: database missing, database back, worker started; extension missing once per database" \
	"1 1 2 1" \
	"$(log_count "$mark" "$NO_DB") $(log_count "$mark" "$DB_BACK") $(log_count "$mark" "$NO_EXT") $(log_count "$mark" "$STARTED")"

# --- a terminated worker or launcher ------------------------------------
# pg_terminate_backend of the worker: the launcher starts a new one once
mark=$(log_mark)
pid=$(worker_pid)
q postgres "SELECT pg_terminate_backend($pid)" >/dev/null
if poll $TIMEOUT is postgres "SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory expiry worker' AND datname = '$DB' AND pid <> $pid" 1; then
	check "a terminated worker is started again by the launcher, once" \
		"1 1" "$(log_count "$mark" 'background worker "pg_inventory expiry worker" (PID') $(log_count "$mark" "$STARTED")"
else
	not_ok "a terminated worker is started again by the launcher" "$(log_since "$mark")"
fi
# pg_terminate_backend of the launcher: the postmaster starts a new one,
# which leaves the running worker alone and starts no second one
pid=$(worker_pid)
lpid=$(q postgres "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_inventory launcher'")
q postgres "SELECT pg_terminate_backend($lpid)" >/dev/null
if poll $TIMEOUT is postgres "SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'pg_inventory launcher' AND pid <> $lpid AND query LIKE '%earlier launcher%'" 1; then
	check "a restarted launcher keeps the running worker and starts no other" \
		"$pid" "$(worker_pid)"
else
	not_ok "a restarted launcher keeps the running worker and starts no other" \
		"$(q postgres "SELECT pid, backend_type, query FROM pg_stat_activity WHERE backend_type LIKE 'pg_inventory%'")"
fi

# --- DROP DATABASE ... WITH (FORCE): no restart loop ---------------------
mark=$(log_mark)
check "DROP DATABASE ... WITH (FORCE) while the worker runs" "" \
	"$(q postgres "DROP DATABASE $DB WITH (FORCE)")"
if poll $TIMEOUT checks_at_least "database \"$DB\" does not exist" 3; then
	check "no restart loop: no worker, the database reported once, nothing failing to connect" \
		"0 1 0 1" \
		"$(q postgres "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_inventory expiry worker'") $(log_count "$mark" "$NO_DB") $(log_since "$mark" | grep -cE 'FATAL: +database .* does not exist') $(log_count "$mark" 'background worker "pg_inventory expiry worker" (PID')"
else
	not_ok "the launcher notices the dropped database" "$(log_since "$mark")"
fi

check "the launcher exited only when it was terminated" 1 \
	"$(log_count 0 'background worker "pg_inventory launcher" (PID')"

tap_done
