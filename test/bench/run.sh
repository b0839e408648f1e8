#!/usr/bin/env bash
# test/bench/run.sh (`make bench`): the performance benchmark of pg_inventory.
# Never part of the pass/fail test suite.
#
# Starts its own PostgreSQL 15 (test/scripts/pg_env.sh; settings below),
# loads a catalog (tenant 'bench': 10,000 SKUs with ample stock plus one hot
# SKU, sku-00000) and runs competitors that do the same durable work, in
# turn and interleaved (A B C D A B C D ...) so that drift on a shared
# machine cancels out; reports medians, min-max spreads and ratios:
#
#   ext      pg_inventory's functions, as the application role bench_app
#            (USAGE, EXECUTE and a tenant grant, as a real application)
#   ext_su   the same as the superuser (uniform reserve at 8 clients only)
#   ext_slots  pg_inventory on a second hot SKU split over BENCH_HOT_SLOTS
#            stock slots (0.3's inventory.set_stock_slots), hot SKU only
#   floor    the same writes as ONE data-modifying CTE (superuser)
#   client   the same writes as separate statements in one transaction
#            from the client, as an ORM would (superuser)
#   plpgsql  a plain PL/pgSQL implementation (plpgsql_baseline.sql),
#            SECURITY DEFINER, called as bench_app
#
#   ext_loc3 pg_inventory on 3-line carts of tenant multi, whose three
#            locations each stock one band of the SKUs: every cart is
#            served from three locations (0.5)
#   ext_v04  pg_inventory 0.4 (BENCH_BASE, the 0.4 release 07eb55a), built
#            into a second private PostgreSQL copy and run on a second
#            server with the same settings; uniform reserve at 8 clients,
#            interleaved with this build on a fresh database of the same
#            catalog (scenario v04)
#
# Scenarios: uniform reserve over 10,000 SKUs (1, 8, 16, 32, 64 clients;
# 64: pg_inventory only, the flash-sale chart's reference), the same at 8
# clients with synchronous_commit = off (scenario async: CPU per call;
# pg_inventory, floor and PL/pgSQL), one hot SKU (16,
# 32, 64 clients; 32: pg_inventory with one slot and in BENCH_HOT_SLOTS
# slots only), the flash sale without tuning (a new one-slot SKU per round
# bought by 16, 32 and 64 clients with the expiry worker's automatic
# slotting; the 64-buyer rounds sample what the buyers wait on), 3-line
# carts (8 clients; one location and three locations), this build against 0.4 (uniform reserve, 8 clients), the
# availability read (inventory.availability for 100 SKUs per call, as
# bench_app, BENCH_READERS clients) alone and side by side with uniform
# reserve at 8 clients, confirm (8 clients),
# expire_due draining BENCH_EXPIRE_ROWS due reservations (rows/s), the
# scale of data (uniform reserve at 8 clients on BENCH_SCALE_SKUS SKUs and
# BENCH_SCALE_HISTORY stored reservations against 10,000 SKUs), NOTIFY's
# cost to producers (uniform reserve at 8 clients with and without a NOTIFY
# trigger on the outbox), the relay end to end (optional: needs
# build/src/relay/inventory-relay and RabbitMQ): a backlog drain (events/s,
# median of the rounds; goal >= 20,000 events/s from 1,000,000 events) and
# after each drain round the broker's ceiling (bench-broker-ceiling: the
# relay's publisher, the same batches, no database), the
# lag at a steady 2,000 reservations/s (p50/p99/max, polling and --listen;
# goal p99 < 100 ms) and the relay's resident memory, the outbox and the
# history under a snapshot held open elsewhere (producers reserving and
# cancelling at BENCH_HOLD_RATE/s and one relay, without and with the
# snapshot: producer tps, a claim probe, the relay's lag, the outbox's and
# the history's size and dead rows; issue #12, goal 4), and a profiling
# pass with pg_stat_statements (reserve at 8 clients).
#
# Writes test/bench/RESULTS.md, test/bench/throughput.png and
# test/bench/flash_sale.png, and (test/bench/cluster.sh, at the end)
# test/bench/CLUSTER.md.
#
# Knobs:
#   BENCH_QUICK=1        1 round of 5 s points, 100,000 expire rows (development)
#   BENCH_ROUNDS         rounds per point (full: 3)
#   BENCH_SECONDS        seconds per point and round (full: 10)
#   BENCH_EXPIRE_ROWS    due reservations expire_due drains (full: 1,000,000)
#   BENCH_SCALE_SKUS     SKUs of database bench_scale (issue #12 goal 6;
#                        full: 1,000,000; quick: 100,000)
#   BENCH_SCALE_HISTORY  finished reservations stored in it before its
#                        reserve points (full: 10,000,000; quick: 1,000,000);
#                        the goal is judged only at the full sizes
#   BENCH_RELAY_EVENTS   outbox events of the backlog the relay drains, at
#                        least (the catalog's restock events count; full:
#                        1,000,000; quick: 20,000); the goal is judged only
#                        on a backlog of 1,000,000 or more.  The held-
#                        snapshot runs follow the drain, and run only when
#                        it succeeded
#   BENCH_RELAY_BATCH    --batch-size of the backlog drain (2000)
#   BENCH_HOLD_SECONDS   how long the outbox runs hold a snapshot open
#                        (full 60, quick 20)
#   BENCH_HOLD_RATE      producers' reservations/s in those runs (500;
#                        each reserved and cancelled: two events)
#   BENCH_HOLD_RETENTION purge_published's and purge_history's retention in
#                        seconds in those runs, run every second beside the
#                        relay (full 10, quick 4)
#   BENCH_RELAY_BIN      the inventory-relay binary to measure (default
#                        build/src/relay/inventory-relay; another build,
#                        e.g. an older one, for a comparison)
#   BENCH_CEILING_EVENTS messages bench-broker-ceiling (the relay's
#                        publisher without the database, built with the
#                        programs: build/test/bench) publishes after each
#                        drain round (default: the backlog, at most 200,000)
#   BENCH_STEADY_RATE    reservations/s of the steady-rate runs (2000)
#   BENCH_PG_PORT        first port to try for the server (56432)
#   BENCH_RMQ_PORT       first AMQP port to try for RabbitMQ (5773); its
#                        Erlang ports: BENCH_RMQ_DIST_PORT, BENCH_RMQ_EPMD_PORT
#                        (default: found from the AMQP port, as rabbitmq.sh)
#   BENCH_WORK_DIR       folder for the work folder (/tmp)
#   BENCH_REF            build this git commit instead of the working tree
#                        (a 0.5 build: the scripts write the 0.5 schema)
#   BENCH_BASE           the commit of the older release to compare with
#                        (07eb55a, 0.4); empty: no comparison
#   BENCH_READERS        clients of the availability reader (2)
#   BENCH_HOT_SLOTS      slots of the slotted hot SKU (16)
#   BENCH_ONLY=relay     run only the relay scenarios (backlog drain, steady
#                        rate lag, NOTIFY cost, relay memory, held snapshot);
#                        the other sections of RESULTS.md stay empty (their
#                        goals read "not measured") and the charts are not
#                        redrawn (development of the relay part)
#   BENCH_STEADY_SECONDS seconds of the steady-rate relay run (full: 20)
#   BENCH_HOLD_SECONDS   seconds of each run of the held-snapshot scenario
#                        (full: 60, the goal's figure; quick: 20)
#   BENCH_HOLD_RATE      reservations/s of its producers (500)
#
# The competitors write the 0.5 schema: counters in inventory.stock_slot
# at the location 'default' (the only location of tenant bench; slot 0:
# every SKU has one slot unless an operator splits it), lines naming it.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BENCH=$ROOT/test/bench
SCRIPTS=$BENCH/scripts
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BIN:$PATH"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	MODE="quick (BENCH_QUICK=1)"
	ROUNDS=${BENCH_ROUNDS:-1}
	SECS=${BENCH_SECONDS:-5}
	EXPIRE_ROWS=${BENCH_EXPIRE_ROWS:-100000}
	RELAY_EVENTS=${BENCH_RELAY_EVENTS:-20000}
	STEADY_SECS=${BENCH_STEADY_SECONDS:-8}
	HOLD_SECS=${BENCH_HOLD_SECONDS:-20}
	HOLD_RATE=${BENCH_HOLD_RATE:-500}
	HOLD_RETENTION=${BENCH_HOLD_RETENTION:-4}
	SCALE_SKUS=${BENCH_SCALE_SKUS:-100000}
	SCALE_RES=${BENCH_SCALE_HISTORY:-1000000}
else
	MODE="full"
	ROUNDS=${BENCH_ROUNDS:-3}
	SECS=${BENCH_SECONDS:-10}
	EXPIRE_ROWS=${BENCH_EXPIRE_ROWS:-1000000}
	RELAY_EVENTS=${BENCH_RELAY_EVENTS:-1000000}
	STEADY_SECS=${BENCH_STEADY_SECONDS:-20}
	HOLD_SECS=${BENCH_HOLD_SECONDS:-60}
	HOLD_RATE=${BENCH_HOLD_RATE:-500}
	HOLD_RETENTION=${BENCH_HOLD_RETENTION:-10}
	SCALE_SKUS=${BENCH_SCALE_SKUS:-1000000}
	SCALE_RES=${BENCH_SCALE_HISTORY:-10000000}
fi
ONLY=${BENCH_ONLY:-}
case $ONLY in
"" | relay) ;;
*) echo "BENCH_ONLY: only 'relay' is known (got '$ONLY')" >&2; exit 2 ;;
esac
[ -n "$ONLY" ] && MODE="$MODE, only $ONLY (BENCH_ONLY=$ONLY)"
# everything but the relay part
all() { [ -z "$ONLY" ]; }
STEADY_RATE=${BENCH_STEADY_RATE:-2000}
RELAY_BATCH=${BENCH_RELAY_BATCH:-2000}
# the relay goals (issue #12, goal 5)
DRAIN_GOAL=20000
DRAIN_GOAL_EVENTS=1000000
LAG_GOAL_MS=100
NSKUS=10000
HOT_SLOTS=${BENCH_HOT_SLOTS:-16}
BASE=${BENCH_BASE-07eb55a}
READERS=${BENCH_READERS:-2}
RELAY_BIN=${BENCH_RELAY_BIN:-$ROOT/build/src/relay/inventory-relay}
CEILING_BIN=$ROOT/build/test/bench/bench-broker-ceiling
RMQ_SH=$ROOT/test/scripts/rabbitmq.sh

# the server's settings (documented in RESULTS.md)
SETTINGS="shared_buffers = 512MB
synchronous_commit = on
fsync = on
full_page_writes = on
max_connections = 200
jit = off
max_wal_size = 8GB
min_wal_size = 1GB
checkpoint_timeout = 30min"
SHOWN_SETTINGS="shared_buffers synchronous_commit fsync full_page_writes wal_sync_method
max_connections jit max_wal_size checkpoint_timeout autovacuum work_mem
max_locks_per_transaction shared_preload_libraries"

WORK=$(mktemp -d "${BENCH_WORK_DIR:-/tmp}/pg_inventory_bench.XXXXXX")
chmod 755 "$WORK"   # the server runs as postgres from the private copy in here
RES=$WORK/results.tsv      # scenario clients competitor round tps txns applied
: >"$RES"
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

cleanup() {
	# background work of a run that stopped early (relay, probe, samplers)
	local j
	for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
	if declare -F base_stop >/dev/null; then base_stop; fi
	if declare -F rmq_destroy >/dev/null; then rmq_destroy >/dev/null 2>&1 || true; fi
	if declare -F pg_destroy >/dev/null; then pg_destroy >/dev/null 2>&1 || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
# median [FORMAT]: the median of the numbers on standard input, one per
# line (the mean of the middle two for an even count), printed with FORMAT
# (default %.2f); n/a when there is none
median() {
	sort -g | awk -v f="${1:-%.2f}" '{ v[NR] = $1 } END {
		if (NR == 0) { print "n/a"; exit }
		printf f "\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
val() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

label() {
	case $1 in
	ext) echo "pg_inventory (app role)" ;;
	ext_su) echo "pg_inventory (superuser)" ;;
	ext_slots) echo "pg_inventory (app role), hot SKU in $HOT_SLOTS slots" ;;
	ext_auto) echo "pg_inventory (app role), a new one-slot SKU, expiry worker running (automatic slotting)" ;;
	ext_notify) echo "pg_inventory (app role), NOTIFY trigger on inventory.outbox" ;;
	floor) echo "floor: one CTE statement" ;;
	client) echo "client-side: statements in a transaction" ;;
	plpgsql) echo "PL/pgSQL baseline" ;;
	ext_loc3) echo "pg_inventory (app role), each line at another of 3 locations" ;;
	ext_v04) echo "pg_inventory $BASE_VERSION, $BASE_BUILT (app role)" ;;
	ext_read) echo "pg_inventory reserve (app role), availability reader beside it" ;;
	reader) echo "availability, 100 SKUs per call (app role), alone" ;;
	reader_w) echo "availability, 100 SKUs per call (app role), beside reserve" ;;
	ext_scale) echo "pg_inventory (app role), $SCALE_N_SKUS SKUs and $SCALE_N_RES stored reservations" ;;
	esac
}

# ------------------------------------------------------------------ build
# The extension is built from a copy of the sources (the working tree, or
# the commit BENCH_REF) and installed into a private copy of the
# PostgreSQL 15 installation under $WORK (PostgreSQL finds its share and
# lib folders relative to its binaries), so the benchmark measures exactly
# that code and never touches the system's installation that other test
# runs use.
SYS_BIN=$PG_BIN
PREFIX=$WORK/pg
SRC=$WORK/src
# shellcheck source=test/bench/build.sh
source "$BENCH/build.sh"
bash test/scripts/deps.sh >/dev/null
if [ -n "${BENCH_REF:-}" ]; then
	BUILT="commit $(git rev-parse --short "$BENCH_REF") ($BENCH_REF)"
else
	BUILT="working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql extension Makefile || echo ' with uncommitted changes')"
fi
log "building pg_inventory from the $BUILT into a private PostgreSQL copy"
bench_build "$PREFIX" "$SRC" "$WORK/build.log" "${BENCH_REF:-}" || die "build failed"
# the older release to compare with (BENCH_BASE), the same way into a
# second private copy: two builds of one extension cannot share one
# installation
BASE_VERSION=""
BASE_BUILT=""
BASE_PREFIX=$WORK/pg-base
BASE_DIR=$WORK/srv-base
BASE_PORT=""
if [ -n "$BASE" ]; then
	BASE_BUILT="commit $(git rev-parse --short "$BASE")"
	log "building pg_inventory from the $BASE_BUILT into a second private PostgreSQL copy"
	bench_build "$BASE_PREFIX" "$WORK/src-base" "$WORK/build-base.log" "$BASE" ||
		die "build of $BASE failed"
	BASE_VERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$WORK/src-base/extension/pg_inventory.control")
fi
PG_BIN=$PREFIX/usr/lib/postgresql/15/bin
export PATH="$PG_BIN:$PATH"
EXTVERSION=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$SRC/extension/pg_inventory.control")

# ------------------------------------------------------------------ server
# shellcheck source=test/scripts/pg_env.sh
source test/scripts/pg_env.sh
# a port of our own, away from the ports other test runs start at
PGI_DIR=$WORK/server # not $WORK/pg: that is the private copy of PostgreSQL
PGI_PORT=$(pg_free_port "${BENCH_PG_PORT:-56432}")
PGI_CONF="$SETTINGS" pg_start
log "server on port $PGPORT ($PGI_DIR)"

# the second server, of the BENCH_BASE build, for scenario v04 only (it
# runs only while that scenario runs): same settings, a port of its own
base_sql() { psql -X -q -v ON_ERROR_STOP=1 -h "$BASE_DIR" -p "$BASE_PORT" "$@"; }
base_start() {
	BASE_PORT=$(pg_free_port $((PGPORT + 1)))
	(
		PG_BIN=$BASE_PREFIX/usr/lib/postgresql/15/bin PGI_DIR=$BASE_DIR PGI_PORT=$BASE_PORT
		PGI_CONF="$SETTINGS"
		pg_start
	)
}
base_stop() {
	[ -f "$BASE_DIR/data/postmaster.pid" ] || return 0
	runuser -u postgres -- "$BASE_PREFIX/usr/lib/postgresql/15/bin/pg_ctl" -D "$BASE_DIR/data" \
		-w -t 60 -m fast stop >/dev/null 2>&1 || true
}

log "database bench: extension, roles, PL/pgSQL baseline, catalog"
sql -d postgres -c 'CREATE DATABASE bench'
sql -d bench -f - <<'SQL'
CREATE EXTENSION pg_inventory;
CREATE ROLE bench_app LOGIN;
GRANT USAGE ON SCHEMA inventory TO bench_app;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.confirm(text, text), inventory.availability(text, text[]) TO bench_app;
SELECT inventory.grant_tenant('bench', 'bench_app') \gset
SELECT inventory.grant_tenant('multi', 'bench_app') \gset
SQL
sql -d bench -f "$BENCH/plpgsql_baseline.sql"
sql -d bench -f - <<'SQL'
GRANT USAGE ON SCHEMA bench_plpgsql TO bench_app;
GRANT EXECUTE ON FUNCTION bench_plpgsql.reserve(text, text, text, integer, interval),
	bench_plpgsql.reserve_lines(text, text, jsonb, interval) TO bench_app;
SQL

# catalog: sku-00001..sku-10000 and the hot sku-00000, each restocked once
# (through the extension, so the ledger matches and check_invariants holds)
# app_db PSQL-FUNCTION DB: a new database DB with pg_inventory and what the
# application role bench_app needs to reserve (and cancel: the held runs)
# for tenant bench
app_db() {
	"$1" -d postgres -c "CREATE DATABASE $2"
	"$1" -d "$2" -f - <<'SQL'
CREATE EXTENSION pg_inventory;
GRANT USAGE ON SCHEMA inventory TO bench_app;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.cancel(text, text, text) TO bench_app;
SELECT inventory.grant_tenant('bench', 'bench_app') \gset
SQL
}
load_catalog() { # load_catalog DB
	sql -d "$1" -c "SELECT count(inventory.restock('bench', concat('open-', s),
		concat('sku-', lpad(s::text, 5, '0')), 2000000000, 'opening stock'))
		FROM generate_series(0, $NSKUS) AS s" >/dev/null
	sql -d "$1" -c 'VACUUM ANALYZE'
}
load_catalog bench
# a second hot SKU, sku-99999, split over HOT_SLOTS stock slots (0.3's
# slotted stock: what an operator does for a flash sale); sku-00000 keeps
# one slot like every other SKU
sql -d bench -c "SELECT inventory.restock('bench', 'open-hot-slotted', 'sku-99999', 2000000000, 'opening stock')" \
	-c "SELECT inventory.set_stock_slots('bench', 'sku-99999', $HOT_SLOTS)" -c 'VACUUM ANALYZE' >/dev/null
# tenant multi (0.5 locations): loc-a (priority 10), loc-b (20), loc-c (30);
# sku-00001..03333 stocked at loc-a only, 03334..06666 at loc-b only,
# 06667..10000 at loc-c only, so a cart with one SKU of each band (the cart
# scripts draw them so) is served from three locations: the first try at
# the first location does not fit, the policy locks the cart's slots at
# every location, plans, and holds one line at each
sql -d bench -c "SELECT count(inventory.set_location('multi', l, p))
		FROM (VALUES ('loc-a', 10), ('loc-b', 20), ('loc-c', 30)) AS v(l, p)" \
	-c "SELECT count(inventory.restock_at('multi', concat('open-', s), concat('sku-', lpad(s::text, 5, '0')),
		CASE WHEN s <= 3333 THEN 'loc-a' WHEN s <= 6666 THEN 'loc-b' ELSE 'loc-c' END,
		2000000000, 'opening stock')) FROM generate_series(1, $NSKUS) AS s" -c 'VACUUM ANALYZE' >/dev/null
log "catalog: $(val -d bench -c "SELECT count(*) FROM inventory.stock") SKUs, $(val -d bench -c "SELECT count(*) FROM inventory.location_stock") (SKU, location) counters"

# ------------------------------------------------------------------ points
# run_point SCENARIO CLIENTS COMPETITOR ROUND: one pgbench run; appends a
# line to $RES.  The key prefix names the point, so every key is unique.
run_point() {
	local scen=$1 clients=$2 comp=$3 round=$4
	local script user=postgres hot=0 hotsku=0 pfx state=pending jobs=2 out
	local db=bench tenant=bench conn=() reader_pid="" rout="" options=${PGOPTIONS:-}
	case $scen in
	uniform | async | hot | notify | v04 | avail | flash | scale) script=$SCRIPTS/reserve_${comp%_*}.sql ;;
	cart) script=$SCRIPTS/cart_${comp%_loc3}.sql ;;
	confirm) script=$SCRIPTS/confirm_$comp.sql; state=confirmed ;;
	esac
	[ "$comp" = reader ] && script=$SCRIPTS/avail_ext.sql
	[ "$scen" = hot ] && hot=1
	# flash: a new SKU per round and number of buyers (flash_point)
	[ "$scen" = flash ] && { hot=1; hotsku=$((FLASH_SKU0 + (64 - clients) / 16 * 100 + round)); }
	case $comp in ext | ext_* | plpgsql | reader) user=bench_app ;; esac
	[ "$comp" = ext_su ] && user=postgres
	[ "$comp" = ext_loc3 ] && tenant=multi
	[ "$scen" = v04 ] && db=bench_v
	[ "$comp" = ext_v04 ] && { conn=(-h "$BASE_DIR" -p "$BASE_PORT"); db=bench; }
	[ "$comp" = ext_slots ] && hotsku=99999
	# scale: ext on bench (10,000 SKUs), ext_scale on bench_scale
	[ "$comp" = ext_scale ] && { script=$SCRIPTS/reserve_scale.sql; db=bench_scale; }
	# async: the same calls as uniform without the commit's WAL flush, so
	# the figure is the CPU per call (issue #12, goal 1)
	[ "$scen" = async ] && options="$options -c synchronous_commit=off"
	[ "$clients" -lt 2 ] && jobs=1
	pfx="$scen.$comp.c$clients.r$round"
	[ "$scen" = confirm ] && pfx="cf.$comp.r$round"
	out=$WORK/pgbench.$pfx.log
	if [ "$comp" = ext_read ]; then
		# the availability reader, side by side for the same time
		rout=$WORK/pgbench.$pfx.reader.log
		pgbench -n -M prepared bench -U bench_app -c "$READERS" -j "$READERS" -T "$SECS" \
			-D tenant=bench -f "$SCRIPTS/avail_ext.sql" >"$rout" 2>&1 &
		reader_pid=$!
	fi
	if ! PGOPTIONS=$options pgbench "${conn[@]}" -n -M prepared "$db" -U "$user" -c "$clients" -j "$jobs" -T "$SECS" \
		-D pfx="$pfx" -D n=0 -D hot=$hot -D hotsku=$hotsku -D tenant=$tenant -D nskus="$SCALE_SKUS" \
		-f "$script" >"$out" 2>&1; then
		tail -n 20 "$out"
		die "pgbench $pfx"
	fi
	if [ -n "$reader_pid" ]; then
		wait "$reader_pid" || { tail -n 20 "$rout"; die "pgbench $pfx (reader)"; }
		local rtps rtxns
		rtps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$rout")
		rtxns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$rout")
		[ -n "$rtps" ] || { cat "$rout"; die "no tps in pgbench output of $pfx (reader)"; }
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$scen" "$READERS" reader_w "$round" "$rtps" \
			"$rtxns" "$rtxns" >>"$RES"
		log "$(printf '%-8s %3s clients  %-8s round %s  %9.1f tps  (%s calls)' \
			"$scen" "$READERS" reader_w "$round" "$rtps" "$rtxns")"
	fi
	local tps txns failed applied
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$out")
	txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out")
	[ -n "$tps" ] || { cat "$out"; die "no tps in pgbench output of $pfx"; }
	[ "${failed:-0}" = 0 ] || { cat "$out"; die "$failed failed transactions in $pfx"; }
	# what the point really did: reservations with this prefix in the state
	# the call leads to (C collation: the range is the prefix)
	if [ "$comp" = reader ]; then
		applied=$txns   # a read: nothing to count in the tables
	else
		applied=$(val "${conn[@]}" -d "$db" -c "SELECT count(*) FROM inventory.reservation
			WHERE tenant = '$tenant' AND request_key >= '$pfx-' AND request_key < '$pfx.'
			AND state = '$state'")
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$scen" "$clients" "$comp" "$round" "$tps" \
		"$txns" "$applied" >>"$RES"
	log "$(printf '%-8s %3s clients  %-8s round %s  %9.1f tps  (%s txns, %s applied)' \
		"$scen" "$clients" "$comp" "$round" "$tps" "$txns" "$applied")"
}

# run_group SCENARIO CLIENTS COMPETITOR...: the rounds of one point,
# interleaved: A B C D A B C D ...
run_group() {
	local scen=$1 clients=$2 r comp
	shift 2
	sql -d bench -c CHECKPOINT
	[ "$scen" = v04 ] && base_sql -d postgres -c CHECKPOINT
	for r in $(seq 1 "$ROUNDS"); do
		for comp in "$@"; do
			run_point "$scen" "$clients" "$comp" "$r"
		done
	done
}

if all; then
# ------------------------------------------------------------------ reserve
log "uniform reserve and hot SKU: $ROUNDS round(s) of ${SECS}s per point"
run_group uniform 1 ext floor client plpgsql
run_group uniform 8 ext ext_su floor client plpgsql
run_group async 8 ext floor plpgsql
run_group uniform 16 ext floor client plpgsql
run_group uniform 32 ext floor client plpgsql
run_group hot 16 ext ext_slots floor client plpgsql
run_group hot 32 ext ext_slots
run_group hot 64 ext ext_slots floor client plpgsql
# the reference line of the flash-sale chart: uniform demand at 64 buyers
run_group uniform 64 ext

# ------------------------------------------------------------------ flash sale
# Issue #12, goal 2: one SKU, 64 buyers, no operator step.  Each round
# restocks a new SKU (sku-77771, -77772, ...; 32 buyers: sku-77971..,
# 16 buyers: sku-78071..) with one slot and no set_stock_slots, and 16, 32 or 64
# clients reserve it for SECS (the goal is judged at 64); the server is
# restarted for these points only with the expiry worker in database bench
# (shared_preload_libraries = 'pg_inventory', worker_database = 'bench', the
# worker's other settings at their defaults), so automatic slotting must
# notice the queue and split the SKU while the round runs: the round's tps
# include the time before the split.  Then the server goes back to the
# settings above for the rest of the run.
FLASH_SKU0=77770
bench_restart() {
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGI_DIR/data" -l "$PGI_DIR/server.log" \
		-w -t 60 -m fast restart >/dev/null || { tail -n 20 "$PGI_DIR/server.log"; die "restart"; }
}
log "flash sale: a new one-slot SKU per round, 64 clients, expiry worker running (restart)"
# (a file of its own, included while it exists: ALTER SYSTEM knows no
# pg_inventory.* setting before the library is preloaded)
printf '%s\n' "shared_preload_libraries = 'pg_inventory'" "pg_inventory.worker_database = 'bench'" \
	>"$PGI_DIR/data/flash.conf"
echo "include_if_exists = 'flash.conf'" >>"$PGI_DIR/data/postgresql.conf"
bench_restart
[ "$(val -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_inventory launcher'")" = 1 ] ||
	die "no pg_inventory launcher after the restart"
: >"$WORK/flash.tsv"   # round, seconds to the split, slots after the round
sql -d bench -c CHECKPOINT
# flash_point BUYERS ROUND: one round on a new SKU (as run_point names it)
flash_point() {
	local buyers=$1 r=$2 fsku
	fsku=sku-$((FLASH_SKU0 + (64 - buyers) / 16 * 100 + r))
	sql -d bench -c "SELECT inventory.restock('bench', 'open-$fsku', '$fsku', 2000000000, 'opening stock')" >/dev/null
	run_point flash "$buyers" ext_auto "$r"
}
for r in $(seq 1 "$ROUNDS"); do
	flash_point 16 "$r"
	flash_point 32 "$r"
	fsku=sku-$((FLASH_SKU0 + r))
	sql -d bench -c "SELECT inventory.restock('bench', 'open-$fsku', '$fsku', 2000000000, 'opening stock')" >/dev/null
	t0=$(val -d bench -c "SELECT clock_timestamp()")
	# what the buyers wait on, sampled every 200 ms during the round
	rm -f "$WORK/flash.stop"
	(
		while [ -d "$WORK" ] && [ ! -e "$WORK/flash.stop" ]; do
			val -d postgres -c "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
				FROM pg_stat_activity WHERE usename = 'bench_app' AND state = 'active'" || true
			sleep 0.2
		done >>"$WORK/flash_waits.txt"
	) &
	FLASH_SAMPLER=$!
	run_point flash 64 ext_auto "$r"
	touch "$WORK/flash.stop"
	wait "$FLASH_SAMPLER" || true
	printf '%s\t%s\t%s\n' "$r" \
		"$(val -d bench -c "SELECT COALESCE(round(extract(epoch FROM min(at) - '$t0'::timestamptz)::numeric, 1)::text, 'none')
			FROM inventory.operator_audit WHERE action = 'set_stock_slots' AND detail->>'sku' = '$fsku'
			AND reason LIKE 'automatic slotting%' AND (detail->'new'->>'slots')::int > 1")" \
		"$(val -d bench -c "SELECT slots FROM inventory.sku WHERE tenant = 'bench' AND sku = '$fsku'")" >>"$WORK/flash.tsv"
	log "flash round $r: split after $(cut -f2 "$WORK/flash.tsv" | tail -n 1) s, $(cut -f3 "$WORK/flash.tsv" | tail -n 1) slots at the end"
done
FLASH_AUDIT=$(val -d bench -c "SELECT count(*) FROM inventory.operator_audit WHERE reason LIKE 'automatic slotting%'")
# the most frequent waits of the 64-buyer rounds, as shares of the samples
FLASH_WAITS=$(sort "$WORK/flash_waits.txt" 2>/dev/null | uniq -c | sort -rn |
	awk '{ n[NR] = $1; w[NR] = $2; t += $1 } END { for (i = 1; i <= NR && i <= 4; i++) printf "%s%s %.0f%%", (i > 1 ? ", " : ""), w[i], 100 * n[i] / t; if (NR == 0) printf "n/a" }')
rm -f "$PGI_DIR/data/flash.conf"
bench_restart
run_group cart 8 ext ext_loc3 floor client plpgsql

# ------------------------------------------------------------------ availability
log "availability: $READERS reader client(s), 100 SKUs per call, alone and beside uniform reserve at 8 clients"
run_group avail 8 ext ext_read
for r in $(seq 1 "$ROUNDS"); do
	run_point avail "$READERS" reader "$r"
done

# ------------------------------------------------------------------ 0.4
V04_VERSIONS=n/a
V04_INV=n/a
V04_LOAD_NEW=n/a
V04_LOAD_OLD=n/a
if [ -n "$BASE" ]; then
	log "v04: this build against $BASE_VERSION ($BASE_BUILT) on a second server, uniform reserve at 8 clients"
	# a fresh database of the same catalog on each server, used by this
	# scenario only
	bench_db() { # bench_db PSQL-FUNCTION DB: extension, grant, catalog
		app_db "$1" "$2"
		local t0 t1
		t0=$(date +%s.%N)
		"$1" -d "$2" -c "SELECT count(inventory.restock('bench', concat('open-', s),
			concat('sku-', lpad(s::text, 5, '0')), 2000000000, 'opening stock'))
			FROM generate_series(0, $NSKUS) AS s" >/dev/null
		t1=$(date +%s.%N)
		"$1" -d "$2" -c 'VACUUM ANALYZE' >/dev/null
		LOAD_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	}
	base_start || die "the $BASE_VERSION server did not start"
	log "v04: $BASE_VERSION server on port $BASE_PORT ($BASE_DIR)"
	base_sql -d postgres -c 'CREATE ROLE bench_app LOGIN'
	bench_db base_sql bench
	V04_LOAD_OLD=$LOAD_SECS
	bench_db sql bench_v
	V04_LOAD_NEW=$LOAD_SECS
	log "v04: catalog load ($((NSKUS + 1)) restocks of new SKUs in one statement): $V04_LOAD_NEW s ($EXTVERSION), $V04_LOAD_OLD s ($BASE_VERSION)"
	V04_VERSIONS="$(val -d bench_v -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory'") / $(base_sql -At -d bench -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory'")"
	run_group v04 8 ext ext_v04
	V04_INV="$(val -d bench_v -c 'SELECT count(*) FROM inventory.check_invariants()') / $(base_sql -At -d bench -c 'SELECT count(*) FROM inventory.check_invariants()')"
	base_stop
	sql -d postgres -c 'DROP DATABASE bench_v'
	log "v04: extension versions $V04_VERSIONS, check_invariants rows $V04_INV"
fi

# ------------------------------------------------------------------ confirm
# pending reservations to confirm, made in bulk (FK triggers off: the rows
# are consistent by construction): keys cf.<comp>.r<round>-<client>-<n>,
# one line of 1 unit each, transition NULL -> pending, stock moved from
# available to reserved so that check_invariants stays clean.
CONFIRM_CLIENTS=8
CONFIRM_PER_CLIENT=$((2000 * SECS))
log "confirm: creating $((2 * ROUNDS * CONFIRM_CLIENTS * CONFIRM_PER_CLIENT)) pending reservations"
pfxs=""
for r in $(seq 1 "$ROUNDS"); do pfxs="$pfxs,cf.ext.r$r,cf.floor.r$r"; done
sql -d bench -v pfxs="{${pfxs#,}}" -v clients=$CONFIRM_CLIENTS -v per=$CONFIRM_PER_CLIENT \
	-v nskus=$NSKUS -f - <<'SQL'
SET session_replication_role = replica;
BEGIN;
CREATE TEMP TABLE pre ON COMMIT DROP AS
	SELECT inventory._reservation_id('inventory.reservation_id_seq', 'inventory.reservation_ring') AS id,
		   concat(p, '-', c, '-', n) AS key,
		   concat('sku-', lpad((1 + floor(random() * :nskus))::int::text, 5, '0')) AS sku
	  FROM unnest(:'pfxs'::text[]) AS p, generate_series(0, :clients - 1) AS c,
		   generate_series(1, :per) AS n;
INSERT INTO inventory.reservation
	(id, tenant, request_key, state, expires_at, version, created_at, updated_at)
SELECT id, 'bench', key, 'pending', now() + interval '1 day', 1, now(), now() FROM pre;
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
SELECT id, 'bench', sku, 'default', 1 FROM pre;
INSERT INTO inventory.reservation_transition
	(reservation_id, from_state, to_state, reason, actor, version, created_at)
SELECT id, NULL, 'pending', NULL, current_user, 1, now() FROM pre;
UPDATE inventory.stock_slot s SET available = s.available - g.n, reserved = s.reserved + g.n
  FROM (SELECT sku, count(*) AS n FROM pre GROUP BY sku) AS g
 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = 'bench' AND s.sku = g.sku;
COMMIT;
SQL
sql -d bench -c 'VACUUM ANALYZE inventory.reservation' -c 'VACUUM ANALYZE inventory.reservation_line' \
	-c 'VACUUM ANALYZE inventory.stock_slot'
run_group confirm $CONFIRM_CLIENTS ext floor

# ------------------------------------------------------------------ checks
log "work check and check_invariants on database bench"
# one point per scenario and competitor (round 1): rows written per call
WORKCHECK_PFX=""
for p in uniform.ext.c8 uniform.ext_su.c8 uniform.floor.c8 uniform.client.c8 uniform.plpgsql.c8 \
	hot.ext.c16 hot.ext_slots.c16 hot.floor.c16 hot.client.c16 hot.plpgsql.c16 \
	cart.ext.c8 cart.ext_loc3.c8 cart.floor.c8 cart.client.c8 cart.plpgsql.c8; do
	WORKCHECK_PFX="$WORKCHECK_PFX,$p.r1"
done
WORKCHECK_PFX="$WORKCHECK_PFX,cf.ext.r1,cf.floor.r1"
val -d bench -F $'\t' -v pfxs="{${WORKCHECK_PFX#,}}" -f - >"$WORK/workcheck.tsv" <<'SQL'
WITH p AS (SELECT pfx, ord FROM unnest(:'pfxs'::text[]) WITH ORDINALITY AS u(pfx, ord)),
r AS (
	SELECT p.pfx, p.ord, r.id, r.version, r.state
	  FROM p JOIN inventory.reservation r
		ON r.tenant IN ('bench', 'multi') AND r.request_key >= p.pfx || '-' AND r.request_key < p.pfx || '.')
SELECT r.pfx, count(*),
	   round(avg((SELECT count(*) FROM inventory.reservation_line l WHERE l.reservation_id = r.id)), 2),
	   round(avg((SELECT count(DISTINCT l.location) FROM inventory.reservation_line l WHERE l.reservation_id = r.id)), 2),
	   round(avg((SELECT count(*) FROM inventory.reservation_transition t WHERE t.reservation_id = r.id)), 2),
	   round(avg((SELECT count(*) FROM inventory.outbox o WHERE o.reservation_id = r.id)), 2),
	   (SELECT string_agg(k, ' ' ORDER BY k) FROM jsonb_object_keys(
		   (SELECT o.payload FROM inventory.outbox o WHERE o.reservation_id = min(r.id)
			 ORDER BY o.id DESC LIMIT 1)) AS k)
  FROM r GROUP BY r.pfx, r.ord ORDER BY r.ord
SQL
INV_BENCH=$(val -d bench -c 'SELECT count(*) FROM inventory.check_invariants()')
val -d bench -c 'SELECT * FROM inventory.check_invariants() LIMIT 10' >"$WORK/inv_bench.txt"
log "check_invariants on bench: $INV_BENCH row(s)"

# ------------------------------------------------------------------ expire_due
# The goal (issue #12, goal 3): expire_due >= 40,000 rows/s over 1,000,000
# due reservations spread over 10,000 SKUs.  The due reservations are made
# set-based in one transaction (no function call per row; the FK triggers
# off: the rows are consistent by construction), so the set-up grows
# linearly with BENCH_EXPIRE_ROWS; most of it is the catalog (10,001
# restock calls), the same for any number of rows.
EXP_GOAL=40000
EXP_GOAL_ROWS=1000000
log "expire_due: creating $EXPIRE_ROWS due reservations in database bench_expire"
EXP_SETUP_START=$(date +%s)
sql -d postgres -c 'CREATE DATABASE bench_expire'
sql -d bench_expire -c 'CREATE EXTENSION pg_inventory'
load_catalog bench_expire
sql -d bench_expire -v rows="$EXPIRE_ROWS" -v nskus=$NSKUS -f - <<'SQL'
SET session_replication_role = replica;
BEGIN;
CREATE TEMP TABLE pre ON COMMIT DROP AS
	SELECT inventory._reservation_id('inventory.reservation_id_seq', 'inventory.reservation_ring') AS id, concat('due-', g) AS key,
		   concat('sku-', lpad((1 + g % :nskus)::text, 5, '0')) AS sku,
		   1 + g % 3 AS qty,
		   now() - interval '1 hour' + g * interval '1 millisecond' AS expires_at
	  FROM generate_series(1, :rows) AS g;
INSERT INTO inventory.reservation
	(id, tenant, request_key, state, expires_at, version, created_at, updated_at)
SELECT id, 'bench', key, 'pending', expires_at, 1, now() - interval '2 hours',
	   now() - interval '2 hours' FROM pre;
INSERT INTO inventory.reservation_line (reservation_id, tenant, sku, location, quantity)
SELECT id, 'bench', sku, 'default', qty FROM pre;
INSERT INTO inventory.reservation_transition
	(reservation_id, from_state, to_state, reason, actor, version, created_at)
SELECT id, NULL, 'pending', NULL, current_user, 1, now() - interval '2 hours' FROM pre;
UPDATE inventory.stock_slot s SET available = s.available - g.n, reserved = s.reserved + g.n
  FROM (SELECT sku, sum(qty) AS n FROM pre GROUP BY sku) AS g
 WHERE s.slot = 0 AND s.location = 'default' AND s.tenant = 'bench' AND s.sku = g.sku;
COMMIT;
SQL
sql -d bench_expire -c 'VACUUM ANALYZE' -c CHECKPOINT
EXP_SETUP_SECS=$(( $(date +%s) - EXP_SETUP_START ))
EXP_SKUS=$(val -d bench_expire -c "SELECT count(DISTINCT sku) FROM inventory.reservation_line")
EXP_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
log "expire_due: set-up took ${EXP_SETUP_SECS}s ($EXP_SKUS SKUs); draining with SELECT inventory.expire_due(10000) until 0 (load $EXP_LOAD)"
EXP_START=$(date +%s.%N)
EXPIRED=0
BATCHES=0
: >"$WORK/expire_batches.txt"   # seconds per batch, in order
while :; do
	b0=$(date +%s.%N)
	n=$(val -d bench_expire -c 'SELECT inventory.expire_due(10000)')
	[ "$n" -eq 0 ] && break
	awk -v a="$b0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }' >>"$WORK/expire_batches.txt"
	EXPIRED=$((EXPIRED + n))
	BATCHES=$((BATCHES + 1))
done
EXP_END=$(date +%s.%N)
EXP_SECS=$(awk -v a="$EXP_START" -v b="$EXP_END" 'BEGIN { printf "%.2f", b - a }')
EXP_RATE=$(awk -v n="$EXPIRED" -v s="$EXP_SECS" 'BEGIN { printf "%.0f", n / s }')
# the first and the last tenth of the batches: a drain whose batches slow
# down as it goes (work that grows with what was expired before) shows here
EXP_SPLIT=$(awk '{ t[NR] = $1 } END { k = int(NR / 10); if (k < 1) k = 1
	for (i = 1; i <= k; i++) { a += t[i]; b += t[NR - k + i] }
	printf "%.0f ms per batch in the first %d batches, %.0f ms in the last %d", 1000 * a / k, k, 1000 * b / k, k }' \
	"$WORK/expire_batches.txt")
EXP_LEFT=$(val -d bench_expire -c "SELECT count(*) FROM inventory.reservation WHERE state = 'pending'")
EXP_EVENTS=$(val -d bench_expire -c "SELECT count(*) FROM inventory.outbox WHERE event_type = 'reservation.expired'")
INV_EXPIRE=$(val -d bench_expire -c 'SELECT count(*) FROM inventory.check_invariants()')
log "expire_due: $EXPIRED rows in ${EXP_SECS}s = $EXP_RATE rows/s ($BATCHES batches, $EXP_SPLIT; invariants: $INV_EXPIRE rows)"
sql -d postgres -c 'DROP DATABASE bench_expire'

# ------------------------------------------------------------------ scale of data
# Issue #12, goal 6: reserve throughput with 1,000,000 SKUs and 10,000,000
# stored reservations >= 0.8x the 10,000-SKU figure.  Database bench_scale
# gets SCALE_SKUS SKUs and SCALE_RES stored reservations from
# scale_load.sql (the rows the functions write for one SKU and one
# reservation, copied set-based; make bench-cpu's BENCH_CPU_SCALE=1 loads
# the same), checked by check_invariants.  Then uniform reserve at 8
# clients as bench_app on bench (10,000 SKUs) and on bench_scale,
# interleaved A B A B over the rounds.
SCALE_GOAL=0.8
SCALE_GOAL_SKUS=1000000
SCALE_GOAL_RES=10000000
log "scale: database bench_scale with $SCALE_SKUS SKUs and $SCALE_RES stored reservations"
SCALE_SETUP_START=$(date +%s)
app_db sql bench_scale
sql -d bench_scale -v skus="$SCALE_SKUS" -v history="$SCALE_RES" -f "$BENCH/scale_load.sql"
sql -d bench_scale -c CHECKPOINT
SCALE_SETUP_SECS=$(( $(date +%s) - SCALE_SETUP_START ))
read -r SCALE_N_SKUS SCALE_N_RES <<<"$(val -d bench_scale -F ' ' -c "SELECT (SELECT count(*) FROM inventory.sku), (SELECT count(*) FROM inventory.reservation)")"
SCALE_SIZE=$(val -d bench_scale -c "SELECT pg_size_pretty(pg_database_size(current_database()))")
INV_SCALE=$(val -d bench_scale -c 'SELECT count(*) FROM inventory.check_invariants()')
log "scale: set-up took ${SCALE_SETUP_SECS}s: $SCALE_N_SKUS SKUs, $SCALE_N_RES reservations, $SCALE_SIZE; check_invariants: $INV_SCALE row(s)"
run_group scale 8 ext ext_scale
sql -d postgres -c 'DROP DATABASE bench_scale'
else
	log "BENCH_ONLY=$ONLY: reserve, hot SKU, carts, confirm, checks and expire_due skipped"
	V04_VERSIONS=n/a; V04_INV=n/a; V04_LOAD_NEW=n/a; V04_LOAD_OLD=n/a
	CONFIRM_PER_CLIENT=n/a; INV_BENCH=n/a; EXPIRED=n/a; EXP_RATE=n/a; EXP_SECS=n/a
	BATCHES=n/a; EXP_LEFT=n/a; EXP_EVENTS=n/a; INV_EXPIRE=n/a
	EXP_GOAL=40000; EXP_GOAL_ROWS=1000000; EXP_SETUP_SECS=n/a; EXP_SKUS=n/a
	EXP_LOAD=n/a; EXP_SPLIT=n/a
	SCALE_GOAL=0.8; SCALE_GOAL_SKUS=1000000; SCALE_GOAL_RES=10000000
	SCALE_SETUP_SECS=n/a; SCALE_N_SKUS=n/a; SCALE_N_RES=n/a; SCALE_SIZE=n/a; INV_SCALE=n/a
	: >"$WORK/workcheck.tsv"
	: >"$WORK/inv_bench.txt"
fi

# ------------------------------------------------------------------ relay
# The relay (src/relay, README §6) and what delivery costs:
#   1. NOTIFY's cost to producers (database bench, no broker needed):
#      uniform reserve at 8 clients as bench_app, unthrottled, without and
#      with a statement-level AFTER INSERT trigger on inventory.outbox that
#      runs pg_notify('inventory_outbox', '') (made here as superuser: the
#      extension never notifies), interleaved A B A B over the rounds.
#   With RabbitMQ (test/scripts/rabbitmq.sh) and the relay binary, in
#   database bench_relay (the catalog of bench and the bench_app grants):
#   2. backlog: one relay drains RELAY_EVENTS events (--once, batch
#      RELAY_BATCH), ROUNDS times (the outbox is put back between rounds);
#   3. steady rate: producers reserve at STEADY_RATE/s (pgbench --rate,
#      8 clients, bench_app, uniform reserve) for STEADY_SECS while one
#      relay runs in the default poll mode (100 ms, batch 100); lag per
#      event = published_at - created_at of inventory.outbox (both the
#      server's clock), over the events created after the first second;
#   4. the same with the NOTIFY trigger and the relay with --listen and a
#      2 s poll interval: the wake-up latency;
#   5. the relay's resident memory: VmRSS and VmHWM (peak) of
#      /proc/PID/status, sampled every 50 ms, during 2, 3 and 4.
#   6. an outbox under a snapshot held open (issue #12, goal 4): producers
#      at HOLD_RATE/s and one relay, HOLD_SECS without and with a REPEATABLE
#      READ transaction open elsewhere, interleaved over the rounds
#      (held_run): producer tps, the claim's latency (probe) in the first
#      and last third of the run, the outbox's size and dead rows at the end.
NOTIFY_FN="CREATE OR REPLACE FUNCTION public.bench_outbox_notify() RETURNS trigger
	LANGUAGE plpgsql AS \$\$BEGIN PERFORM pg_catalog.pg_notify('inventory_outbox', ''); RETURN NULL; END\$\$"
notify_trigger() { # notify_trigger DB on|off
	if [ "$2" = on ]; then
		sql -d "$1" -c "$NOTIFY_FN" -c 'CREATE TRIGGER bench_outbox_notify AFTER INSERT ON inventory.outbox
			FOR EACH STATEMENT EXECUTE FUNCTION public.bench_outbox_notify()'
	else
		sql -d "$1" -c 'DROP TRIGGER IF EXISTS bench_outbox_notify ON inventory.outbox'
	fi
}

log "relay 1/6: NOTIFY's cost, uniform reserve at 8 clients without / with a NOTIFY trigger"
notify_trigger bench off
# a short warm-up (not counted), so that round 1's first point does not
# pay alone for a cold start
pgbench -n -M prepared bench -U bench_app -c 8 -j 2 -T 3 -D pfx=notify.warmup -D n=0 \
	-D hot=0 -D hotsku=0 -f "$SCRIPTS/reserve_ext.sql" >"$WORK/pgbench.notify.warmup.log" 2>&1 ||
	{ tail -n 20 "$WORK/pgbench.notify.warmup.log"; die "pgbench notify warm-up"; }
sql -d bench -c CHECKPOINT
for r in $(seq 1 "$ROUNDS"); do
	notify_trigger bench off
	run_point notify 8 ext "$r"
	notify_trigger bench on
	run_point notify 8 ext_notify "$r"
done
notify_trigger bench off

# sample_mem PID FILE: "VmRSS VmHWM" (kB) of PID every 50 ms while it runs
sample_mem() {
	local line
	: >"$2"
	while line=$(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { if (r != "") print r, h }' \
		"/proc/$1/status" 2>/dev/null) && [ -n "$line" ]; do
		echo "$line" >>"$2"
		sleep 0.05
	done
}
# mem_peak FILE: "peak-VmRSS-MiB peak-VmHWM-MiB samples"
mem_peak() {
	awk '{ if ($1 > r) r = $1; if ($2 > h) h = $2 } END { printf "%.1f %.1f %d\n", r / 1024, h / 1024, NR }' "$1"
}
# beam_cpu: CPU seconds (user + system) the broker's Erlang VM has used so
# far (rabbitmq-server writes the VM's pid to RMQ_DIR/rmq.pid); 0 when
# unknown
beam_cpu() {
	local pid
	pid=$(cat "$RMQ_DIR/rmq.pid" 2>/dev/null) || true
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/${pid:-0}/stat" 2>/dev/null || echo 0
}
# us_each N CPU0 CPU1: microseconds of the broker's CPU per message, from
# two beam_cpu readings around N messages (0 for none)
us_each() {
	awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", (n > 0 ? (b - a) * 1e6 / n : 0) }'
}
# relay_bg LOG ARGS...: one relay in the background against bench_relay;
# RELAY_PID.  Beside it, what the expiry worker does for the outbox of its
# database every pass (1 s by default): advance_outbox_low_water (0.7), so
# that claims start at the low-water mark, and, when PURGE_RETENTION is set
# (seconds), purge_published and purge_history with that retention (0.8,
# 0.9: a ring at a time);
# the worker of this server serves database bench (flash sale), not
# bench_relay.  ADVANCER_PID.
relay_bg() {
	local logf=$1
	shift
	"$RELAY_BIN" --db "host=$PGHOST port=$PGPORT user=postgres dbname=bench_relay" \
		--amqp-url "$INVENTORY_AMQP_URL" --audit-queue bench_audit "$@" >"$logf" 2>&1 &
	RELAY_PID=$!
	(
		while [ -d "$WORK" ]; do
			psql -X -q -d bench_relay -c 'SELECT inventory.advance_outbox_low_water()' >/dev/null 2>&1 || true
			if [ -n "${PURGE_RETENTION:-}" ]; then
				# the lag of the events published lately, kept before the
				# purge can remove them (it keeps PURGE_RETENTION s)
				psql -X -q -d bench_relay -c "$LAG_SAMPLE AND published_at >= now() - interval '$PURGE_RETENTION seconds'" \
					-c "SELECT inventory.purge_published(interval '$PURGE_RETENTION seconds')" \
					-c "SELECT inventory.purge_history(interval '$PURGE_RETENTION seconds')" \
					>/dev/null 2>&1 || true
			fi
			sleep 1
		done
	) &
	ADVANCER_PID=$!
}
# the relay's lag (ms) of published events, kept in public.bench_lag by id
# (held_run: the purge removes published events during the run)
LAG_SAMPLE="INSERT INTO public.bench_lag SELECT id, extract(epoch FROM published_at - created_at) * 1000
	FROM inventory.outbox WHERE published_at IS NOT NULL ON CONFLICT (id) DO NOTHING"
# relay_stop: stops the relay of relay_bg (SIGTERM: it finishes its batch) and its advancer
relay_stop() {
	kill -TERM "$RELAY_PID" 2>/dev/null || true
	kill "$ADVANCER_PID" 2>/dev/null || true
	wait "$ADVANCER_PID" 2>/dev/null || true
}

# steady_run NAME RELAY_ARGS...: producers at STEADY_RATE/s for STEADY_SECS
# with one relay; writes $WORK/steady.NAME.tsv (events, published,
# events/s, p50, p99, max ms), .mem and the pgbench log
steady_run() {
	local name=$1 mark t0 t1 left i rc=0 sampler out
	shift
	rmq_ctl purge_queue bench_audit >/dev/null 2>&1 || true
	sql -d bench_relay -c CHECKPOINT
	mark=$(val -d bench_relay -c 'SELECT coalesce(max(id), 0) FROM inventory.outbox')
	relay_bg "$WORK/relay.$name.log" --name "bench-$name" "$@"
	sample_mem "$RELAY_PID" "$WORK/steady.$name.mem" &
	sampler=$!
	out=$WORK/pgbench.steady.$name.log
	t0=$(val -d bench_relay -c 'SELECT extract(epoch FROM clock_timestamp())')
	pgbench -n -M prepared bench_relay -U bench_app -c 8 -j 2 -T "$STEADY_SECS" \
		--rate="$STEADY_RATE" -D pfx="steady.$name" -D n=0 -D hot=0 -D hotsku=0 \
		-f "$SCRIPTS/reserve_ext.sql" >"$out" 2>&1 || rc=$?
	t1=$(val -d bench_relay -c 'SELECT extract(epoch FROM clock_timestamp())')
	# the relay publishes what the producers left (its next polls), then stops
	for i in $(seq 1 150); do
		left=$(val -d bench_relay -c "SELECT count(*) FROM inventory.outbox
			WHERE id > $mark AND published_at IS NULL")
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	relay_stop
	wait "$RELAY_PID" || log "relay $name exited with $? ($(tail -n 2 "$WORK/relay.$name.log" | tr '\n' ' '))"
	wait "$sampler" || true
	[ "$rc" = 0 ] || { tail -n 20 "$out"; die "pgbench steady.$name"; }
	STEADY_TPS=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$out" |
		awk '{ printf "%.1f", $1 }')
	val -d bench_relay -F $'\t' -v mark="$mark" -v t0="$t0" -v t1="$t1" -f - \
		>"$WORK/steady.$name.tsv" <<'SQL'
WITH e AS (
	SELECT extract(epoch FROM o.published_at - o.created_at) * 1000 AS ms, o.published_at,
		   o.created_at
	  FROM inventory.outbox o
	 WHERE o.id > :mark AND o.created_at >= to_timestamp(:t0 + 1)
	   AND o.created_at < to_timestamp(:t1))
SELECT count(*), count(published_at),
	   round(count(*) / extract(epoch FROM max(created_at) - to_timestamp(:t0 + 1))),
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
	   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1),
	   round(max(ms)::numeric, 1)
  FROM e
SQL
	log "steady $name: $(tr '\t' ' ' <"$WORK/steady.$name.tsv") (events published events/s p50 p99 max ms), pgbench $STEADY_TPS tps, relay memory $(mem_peak "$WORK/steady.$name.mem") (VmRSS VmHWM MiB, samples)"
}

# held_run NAME HOLD: issue #12, goal 4.  Producers at a steady HOLD_RATE
# reservations/s (uniform reserve, 8 clients, bench_app, pgbench --rate: a
# rate the relay keeps up with, so that both runs start and end with
# nothing unpublished) for HOLD_SECS while one relay publishes in
# the default poll mode and the claim probe (scripts/claim_probe.sql, 5 per
# second, pgbench -l) samples what a claim costs; with HOLD=1 a session
# holds a REPEATABLE READ snapshot open for the whole run (as a report, a
# pg_dump or a forgotten BEGIN would), so that no row deleted or updated
# meanwhile can be cleaned up.  Every run starts from the same outbox: the
# published events purged (purge_published) and VACUUMed.  Appends to
# $WORK/held.tsv: name hold tps probe-p50-first-third probe-p99-first-third
# probe-p50-last-third probe-p99-last-third outbox-MiB-after dead-tuples
# events-left producer-latency-ms relay-lag-p50-ms relay-lag-p99-ms
# events-in-the-outbox-at-the-end events-written-during-the-run
# history-MiB history-dead-tuples reservations-kept reservations-made
# (the producers reserve and cancel: every reservation finishes, and
# purge_history runs beside purge_published).
held_run() {
	local name=$1 hold=$2 rc=0 out probe i left holder_pid=""
	rmq_ctl purge_queue bench_audit >/dev/null 2>&1 || true
	local purged
	for i in $(seq 1 100); do
		purged=$(val -d bench_relay -c "SELECT inventory.purge_published(interval '0', 1000000)")
		[ "$purged" = 0 ] && break
	done
	[ "$purged" = 0 ] || die "held_run: the outbox still held published events after 100 purges"
	# and no history: what earlier scenarios left pending expires on a clock
	# two hours ahead, and every ring goes on a clock three hours ahead
	# (after the expiries: a retention of 0 keeps what changed at its
	# clock's instant) (0.9: rings; before, row by row)
	sql -d bench_relay -c "SET pg_inventory.frozen_now = '$(date -u -d '+2 hours' '+%Y-%m-%d %H:%M:%S+00')'" \
		-c 'SELECT inventory.expire_due(1000000)' \
		-c "SET pg_inventory.frozen_now = '$(date -u -d '+3 hours' '+%Y-%m-%d %H:%M:%S+00')'" \
		-c "SELECT inventory.purge_history(interval '0', 1000000)" \
		-c "SELECT inventory.purge_history(interval '0', 1000000)" >/dev/null
	[ "$(val -d bench_relay -c 'SELECT count(*) FROM inventory.reservation')" = 0 ] ||
		die "held_run: reservations were left after the history was purged"
	sql -d bench_relay -c 'VACUUM ANALYZE inventory.outbox' -c 'VACUUM ANALYZE inventory.reservation' \
		-c 'VACUUM ANALYZE inventory.reservation_line' -c 'VACUUM ANALYZE inventory.reservation_transition' \
		-c CHECKPOINT
	if [ "$hold" = 1 ]; then
		PGAPPNAME=bench_hold psql -X -q -d bench_relay -c 'BEGIN ISOLATION LEVEL REPEATABLE READ' \
			-c 'SELECT count(*) FROM inventory.sku' -c "SELECT pg_sleep($HOLD_SECS + 30)" \
			>/dev/null 2>&1 &
		holder_pid=$!
		# the snapshot is held once the session shows an xmin
		for i in $(seq 1 100); do
			[ "$(val -d bench_relay -c "SELECT count(*) FROM pg_stat_activity
				WHERE application_name = 'bench_hold' AND backend_xmin IS NOT NULL")" = 1 ] && break
			sleep 0.1
		done
	fi
	# the last id drawn before the run (the outbox is empty now)
	local mark rmark
	mark=$(val -d bench_relay -c 'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM inventory.outbox_id_seq')
	rmark=$(val -d bench_relay -c 'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM inventory.reservation_id_seq')
	sql -d bench_relay -c 'DROP TABLE IF EXISTS public.bench_lag' \
		-c 'CREATE TABLE public.bench_lag (id bigint PRIMARY KEY, ms float8)'
	# the worker's purge beside the relay, with a retention of HOLD_RETENTION s
	PURGE_RETENTION=$HOLD_RETENTION relay_bg "$WORK/relay.held.$name.log" --name "bench-held-$name"
	probe=$WORK/probe.$name
	pgbench -n -M extended bench_relay -U postgres -c 1 -R 5 -T "$HOLD_SECS" -l --log-prefix="$probe" \
		-f "$SCRIPTS/claim_probe.sql" >"$WORK/probeout.$name" 2>&1 &
	local probe_pid=$!
	out=$WORK/pgbench.held.$name.log
	pgbench -n -M prepared bench_relay -U bench_app -c 8 -j 2 -T "$HOLD_SECS" \
		--rate="$HOLD_RATE" -D pfx="held.$name" -D n=0 \
		-f "$SCRIPTS/reserve_cancel_ext.sql" >"$out" 2>&1 || rc=$?
	wait "$probe_pid" || rc=$?
	# measured while the snapshot is still held: the outbox's size and the
	# dead rows nothing could clean up
	# (0.8: the outbox is partitioned; its partitions' sizes and dead rows,
	# and the events it still holds against those the run wrote)
	local size dead rows made
	size=$(val -d bench_relay -c "SELECT round(sum(pg_total_relation_size(t.relid)) / 1048576.0, 1)
		FROM pg_partition_tree('inventory.outbox') t")
	dead=$(val -d bench_relay -c "SELECT coalesce(sum(s.n_dead_tup), 0) FROM pg_stat_user_tables s
		WHERE s.relid IN (SELECT t.relid FROM pg_partition_tree('inventory.outbox') t)")
	rows=$(val -d bench_relay -c "SELECT count(*) FROM inventory.outbox")
	made=$(val -d bench_relay -c "SELECT last_value - $mark FROM inventory.outbox_id_seq")
	# the same of the history (0.9: the reservations' rings): size and dead
	# rows of reservation, reservation_line and reservation_transition, the
	# reservations kept, those made during the run
	local hsize hdead hrows hmade
	hsize=$(val -d bench_relay -c "SELECT round(sum(pg_total_relation_size(t.relid)) / 1048576.0, 1)
		FROM (SELECT relid FROM pg_partition_tree('inventory.reservation')
			  UNION ALL SELECT relid FROM pg_partition_tree('inventory.reservation_line')
			  UNION ALL SELECT relid FROM pg_partition_tree('inventory.reservation_transition')) t")
	hdead=$(val -d bench_relay -c "SELECT coalesce(sum(s.n_dead_tup), 0) FROM pg_stat_user_tables s
		WHERE s.relid IN (SELECT relid FROM pg_partition_tree('inventory.reservation')
			  UNION ALL SELECT relid FROM pg_partition_tree('inventory.reservation_line')
			  UNION ALL SELECT relid FROM pg_partition_tree('inventory.reservation_transition'))")
	hrows=$(val -d bench_relay -c "SELECT count(*) FROM inventory.reservation")
	hmade=$(val -d bench_relay -c "SELECT last_value - $rmark FROM inventory.reservation_id_seq")
	[ -n "$holder_pid" ] && {
		sql -d bench_relay -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_hold'" >/dev/null
		wait "$holder_pid" 2>/dev/null || true
	}
	for i in $(seq 1 600); do
		left=$(val -d bench_relay -c "SELECT count(*) FROM inventory.outbox WHERE published_at IS NULL AND dead_at IS NULL")
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	relay_stop
	wait "$RELAY_PID" || log "relay held.$name exited with $? ($(tail -n 2 "$WORK/relay.held.$name.log" | tr '\n' ' '))"
	[ "$rc" = 0 ] || { tail -n 20 "$out" "$WORK/probeout.$name"; die "pgbench held.$name"; }
	local tps plat lag
	# the relay's lag over the run's events (published_at - created_at),
	# sampled during the run and now for those still in the outbox
	sql -d bench_relay -c "$LAG_SAMPLE"
	lag=$(val -d bench_relay -F ' ' -c "SELECT coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1)::text, 'n/a'),
			coalesce(round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1)::text, 'n/a')
		  FROM public.bench_lag WHERE id > $mark")
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$out" | awk '{ printf "%.1f", $1 }')
	plat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$out")
	# pgbench -l lines with --rate: client transaction latency-us script
	# epoch-s epoch-us schedule-lag-us; the latency counts from the
	# scheduled start, so the claim's own time is latency - lag
	cat "$probe".* 2>/dev/null | awk -v name="$name" -v hold="$hold" -v tps="$tps" \
		-v size="$size" -v dead="$dead" -v left="$left" -v plat="${plat:-n/a}" -v lag="${lag:-n/a n/a}" \
		-v rows="${rows:-n/a}" -v made="${made:-n/a}" \
		-v hist="${hsize:-n/a} ${hdead:-n/a} ${hrows:-n/a} ${hmade:-n/a}" '
		{ t[NR] = $5 + $6 / 1e6; l[NR] = ($3 - $7) / 1000 }
		END {
			if (NR == 0) { print name, hold, tps, "n/a n/a n/a n/a", size, dead, left, plat, lag, rows, made, hist; exit }
			t0 = t[1]; t1 = t[1]
			for (i = 1; i <= NR; i++) { if (t[i] < t0) t0 = t[i]; if (t[i] > t1) t1 = t[i] }
			third = (t1 - t0) / 3
			for (i = 1; i <= NR; i++) {
				if (t[i] <= t0 + third) a[++na] = l[i]
				else if (t[i] >= t1 - third) b[++nb] = l[i]
			}
			printf "%s %s %s %s %s %s %s %s %s %s %s %s %s %s %s\n", name, hold, tps,
				pct(a, na, 0.5), pct(a, na, 0.99), pct(b, nb, 0.5), pct(b, nb, 0.99), size, dead, left, plat, lag, rows, made, hist
		}
		function pct(v, n, p,   i, j, x, k) {
			if (n == 0) return "n/a"
			for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
			k = int(p * n + 0.999999); if (k < 1) k = 1; if (k > n) k = n
			return sprintf("%.2f", v[k])
		}' >>"$WORK/held.tsv"
	rm -f "$probe".*
	log "held $name (snapshot held: $hold): $(tail -n 1 "$WORK/held.tsv") (name hold tps claim-p50/p99 ms first third, last third, outbox MiB, dead rows, events left, producer latency ms, relay lag p50 p99 ms, events in the outbox at the end, events written, history MiB, history dead rows, reservations kept, reservations made)"
}

RELAY_NOTE=""
RELAY_RATE=""
CEILING_NOTE=""
CEIL_RATE=""
RELAY_TOTAL="n/a"
RELAY_OK=0
if [ ! -x "$RELAY_BIN" ]; then
	RELAY_NOTE="skipped: the relay binary $(realpath --relative-to="$ROOT" "$RELAY_BIN" 2>/dev/null || echo build/src/relay/inventory-relay) is not built (cmake -S . -B build && cmake --build build)."
elif [ ! -f "$RMQ_SH" ]; then
	RELAY_NOTE="skipped: test/scripts/rabbitmq.sh is missing."
else
	# shellcheck source=test/scripts/rabbitmq.sh
	source "$RMQ_SH"
	# ports of our own, away from 5673 where the test suites' brokers start
	RMQ_PORT=$(rmq_free_port "${BENCH_RMQ_PORT:-5773}")
	RMQ_DIR=$WORK/rmq
	[ -n "${BENCH_RMQ_DIST_PORT:-}" ] && RMQ_DIST_PORT=$BENCH_RMQ_DIST_PORT
	[ -n "${BENCH_RMQ_EPMD_PORT:-}" ] && RMQ_EPMD_PORT=$BENCH_RMQ_EPMD_PORT
	if ! rmq_start >"$WORK/rmq.log" 2>&1; then
		RELAY_NOTE="skipped: RabbitMQ did not start ($(tail -n 1 "$WORK/rmq.log"))."
	else
		log "relay: database bench_relay (catalog, bench_app) and a backlog of $RELAY_EVENTS events"
		app_db sql bench_relay
		load_catalog bench_relay
		log "relay: catalog loaded"
		# the backlog: the catalog's restock events plus reservations over
		# the catalog, 10,000 per transaction (many updates of one stock row
		# in one transaction get slower with each one)
		left=$((RELAY_EVENTS - $(val -d bench_relay -c 'SELECT count(*) FROM inventory.outbox')))
		g0=0
		while [ "$left" -gt 0 ]; do
			n=$((left < 10000 ? left : 10000))
			sql -d bench_relay -c "SELECT count(inventory.reserve('bench', concat('relay-', g), concat('sku-', lpad((1 + g % $NSKUS)::text, 5, '0')), 1, interval '1 hour'))
				FROM generate_series($g0 + 1, $g0 + $n) AS g" >/dev/null
			g0=$((g0 + n))
			left=$((left - n))
		done
		log "relay: backlog made"
		# every round drains the same backlog: a copy of the outbox before
		# the first drain, put back before the next one
		sql -d bench_relay -c 'CREATE TABLE public.bench_outbox_backlog AS SELECT * FROM inventory.outbox'
		RELAY_TOTAL=$(val -d bench_relay -c 'SELECT count(*) FROM inventory.outbox WHERE published_at IS NULL')
		: >"$WORK/drain.tsv" # round seconds published events/s broker-CPU-us/event
		: >"$WORK/ceiling.tsv" # round messages seconds messages/s broker-CPU-us/message
		# the events' average body, for the ceiling's messages
		PAYLOAD_BYTES=$(val -d bench_relay -c 'SELECT round(avg(octet_length(payload::text))) FROM inventory.outbox')
		CEIL_N=${BENCH_CEILING_EVENTS:-$((RELAY_TOTAL < 200000 ? RELAY_TOTAL : 200000))}
		rc=0
		for r in $(seq 1 "$ROUNDS"); do
			if [ "$r" -gt 1 ]; then
				# events put back by hand below the low-water mark: the
				# mark is computed again from the start (README section 7)
				sql -d bench_relay -c 'TRUNCATE inventory.outbox' \
					-c 'INSERT INTO inventory.outbox SELECT * FROM public.bench_outbox_backlog' \
					-c 'SELECT inventory.advance_outbox_low_water(true)'
			fi
			sql -d bench_relay -c 'VACUUM ANALYZE inventory.outbox' -c CHECKPOINT
			rmq_ctl purge_queue bench_audit >/dev/null 2>&1 || true
			log "relay 2/6: one relay drains $RELAY_TOTAL events (--once, batch $RELAY_BATCH), round $r of $ROUNDS"
			R_START=$(date +%s.%N)
			B0=$(beam_cpu)
			relay_bg "$WORK/relay.log" --batch-size "$RELAY_BATCH" --name bench-relay --once
			sample_mem "$RELAY_PID" "$WORK/backlog.mem.$r" &
			SAMPLER=$!
			wait "$RELAY_PID" || rc=$?
			R_END=$(date +%s.%N)
			B1=$(beam_cpu)
			relay_stop
			wait "$SAMPLER" || true
			cat "$WORK/backlog.mem.$r" >>"$WORK/backlog.mem"
			[ "$rc" = 0 ] || break
			R_SECS=$(awk -v a="$R_START" -v b="$R_END" 'BEGIN { printf "%.2f", b - a }')
			R_PUB=$(val -d bench_relay -c 'SELECT count(*) FROM inventory.outbox WHERE published_at IS NOT NULL')
			R_QUEUED=$(rmq_ctl list_queues name messages 2>/dev/null | awk '$1 == "bench_audit" { print $2 }')
			printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$R_SECS" "$R_PUB" \
				"$(awk -v n="$R_PUB" -v s="$R_SECS" 'BEGIN { printf "%.0f", n / s }')" \
				"$(us_each "$R_PUB" "$B0" "$B1")" >>"$WORK/drain.tsv"
			log "relay drain round $r: $R_PUB of $RELAY_TOTAL events in ${R_SECS}s = $(tail -n 1 "$WORK/drain.tsv" | cut -f 4) events/s, broker CPU $(tail -n 1 "$WORK/drain.tsv" | cut -f 5) us per event (${R_QUEUED:-?} messages in the queue afterwards; load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
			# the ceiling: the relay's publisher, the same batches, a
			# topology of the same shape under its own exchange
			# (bench-ceiling) bound to the same queue, no database
			# (test/bench/broker_ceiling.cpp)
			if [ -x "$CEILING_BIN" ]; then
				rmq_ctl purge_queue bench_audit >/dev/null 2>&1 || true
				B0=$(beam_cpu)
				if C_OUT=$("$CEILING_BIN" --amqp-url "$INVENTORY_AMQP_URL" --audit-queue bench_audit \
					--batch-size "$RELAY_BATCH" --messages "$CEIL_N" --payload-bytes "$PAYLOAD_BYTES" 2>>"$WORK/ceiling.log"); then
					B1=$(beam_cpu)
					# messages=N confirmed=N seconds=S rate=R
					read -r C_N C_SECS C_RATE <<<"$(echo "$C_OUT" | sed -E 's/.*confirmed=([0-9]+) seconds=([0-9.]+) rate=([0-9]+).*/\1 \2 \3/')"
					printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$C_N" "$C_SECS" "$C_RATE" \
						"$(us_each "$C_N" "$B0" "$B1")" >>"$WORK/ceiling.tsv"
					log "broker ceiling round $r: $C_N messages in ${C_SECS}s = $C_RATE messages/s, broker CPU $(tail -n 1 "$WORK/ceiling.tsv" | cut -f 5) us per message (the relay's publisher, batch $RELAY_BATCH, no database)"
				else
					log "broker ceiling round $r failed: $C_OUT (see $WORK/ceiling.log)"
				fi
				rmq_ctl purge_queue bench_audit >/dev/null 2>&1 || true
			fi
		done
		rmq_ctl purge_queue bench_audit >/dev/null 2>&1 || true
		sql -d bench_relay -c 'DROP TABLE public.bench_outbox_backlog'
		if [ "$rc" = 0 ]; then
			RELAY_RATE=$(cut -f 4 "$WORK/drain.tsv" | median %.0f)
			RELAY_RATES=$(cut -f 4 "$WORK/drain.tsv" | paste -sd ' ' | sed 's/ /, /g')
			RELAY_ALL=$(awk -v t="$RELAY_TOTAL" '$3 != t { bad = 1 } END { print bad ? 0 : 1 }' "$WORK/drain.tsv")
			RELAY_NOTE="$RELAY_TOTAL events drained in each of $ROUNDS round(s): **$RELAY_RATE events/s** (median; rounds: $RELAY_RATES events/s; one relay, \`--batch-size $RELAY_BATCH\`, default \`--in-flight\`, publisher confirms, persistent messages into one durable queue bound with '#')."
			DRAIN_US=$(cut -f 5 "$WORK/drain.tsv" | median %.0f)
			if [ -s "$WORK/ceiling.tsv" ]; then
				CEIL_RATE=$(cut -f 4 "$WORK/ceiling.tsv" | median %.0f)
				CEIL_US=$(cut -f 5 "$WORK/ceiling.tsv" | median %.0f)
				# cores the broker alone would need at the goal's rate
				CEIL_CORES=$(awk -v u="$CEIL_US" -v g="$DRAIN_GOAL" 'BEGIN { printf "%.2f", u * g / 1e6 }')
				CEILING_NOTE="**The broker's ceiling.** After each drain, \`bench-broker-ceiling\` (test/bench/broker_ceiling.cpp: the relay's own publisher, a topology of the same shape under its own exchange, batches of $RELAY_BATCH, publisher confirms, persistent messages of the backlog's average size, $PAYLOAD_BYTES bytes, and no database) published $CEIL_N messages: **$CEIL_RATE messages/s** (median of $(wc -l <"$WORK/ceiling.tsv") round(s)), the broker's Erlang VM using **$CEIL_US µs of CPU per message** (during the drains: $DRAIN_US µs per event). At that cost the broker alone needs $CEIL_CORES cores for $DRAIN_GOAL messages/s, before the server's claim and mark and the relay's own work; this machine has $(nproc). The drain reached $(awk -v a="$RELAY_RATE" -v b="$CEIL_RATE" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')x of the ceiling."
			else
				CEILING_NOTE="**The broker's ceiling.** Not measured: $(realpath --relative-to="$ROOT" "$CEILING_BIN" 2>/dev/null || echo build/test/bench/bench-broker-ceiling) is not built or failed (cmake -S . -B build && cmake --build build)."
			fi
			log "relay 3/6: steady rate, $STEADY_RATE reservations/s for ${STEADY_SECS}s, relay polling"
			steady_run poll
			STEADY_POLL_TPS=$STEADY_TPS
			log "relay 4/6: the same with a NOTIFY trigger and the relay with --listen, poll interval 2 s"
			notify_trigger bench_relay on
			steady_run listen --listen --poll-interval-ms 2000
			STEADY_LISTEN_TPS=$STEADY_TPS
			notify_trigger bench_relay off
			log "relay 6/6 (5/6, the relay's memory, is sampled during 2-4): producers and one relay with and without a snapshot held open ${HOLD_SECS}s, $ROUNDS round(s)"
			: >"$WORK/held.tsv"
			for r in $(seq 1 "$ROUNDS"); do
				held_run "free.$r" 0
				held_run "held.$r" 1
			done
			RELAY_OK=1
		else
			RELAY_NOTE="failed: the relay exited with an error: $(tail -n 3 "$WORK/relay.log" | tr '\n' ' ')"
		fi
		rmq_destroy >/dev/null 2>&1 || true
		sql -d postgres -c 'DROP DATABASE bench_relay'
	fi
fi
log "relay: $RELAY_NOTE"

# ------------------------------------------------------------------ profile
PROF_TPS=n/a
: >"$WORK/profile.tsv"
if all; then
log "profile: pg_stat_statements (track = all), pg_inventory reserve at 8 clients"
printf "%s\n" "shared_preload_libraries = 'pg_stat_statements'" "pg_stat_statements.track = all" \
	>>"$PGI_DIR/data/postgresql.conf"
pg_stop fast
pg_start
sql -d bench -c 'CREATE EXTENSION pg_stat_statements' -c 'SELECT pg_stat_statements_reset()' >/dev/null
PROF_OUT=$WORK/pgbench.profile.log
pgbench -n -M prepared bench -U bench_app -c 8 -j 2 -T "$SECS" -D pfx=profile.ext.c8 -D n=0 \
	-D hot=0 -D hotsku=0 -f "$SCRIPTS/reserve_ext.sql" >"$PROF_OUT" 2>&1 || { cat "$PROF_OUT"; die "profile pgbench"; }
PROF_TPS=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$PROF_OUT")
val -d bench -F $'\t' -f - >"$WORK/profile.tsv" <<'SQL'
WITH s AS (
	SELECT s.* FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
	 WHERE d.datname = 'bench' AND s.query NOT LIKE '%pg_stat_statements%'),
top AS (SELECT max(total_exec_time) AS t FROM s WHERE toplevel)
SELECT CASE WHEN toplevel THEN 'top' ELSE 'nested' END, calls,
	   round(total_exec_time::numeric, 0), round(mean_exec_time::numeric, 3),
	   round((100 * total_exec_time / NULLIF((SELECT t FROM top), 0))::numeric, 1),
	   round(rows::numeric / NULLIF(calls, 0), 2),
	   round(shared_blks_hit::numeric / NULLIF(calls, 0), 1),
	   round(shared_blks_dirtied::numeric / NULLIF(calls, 0), 2),
	   round(wal_bytes / NULLIF(calls, 0), 0),
	   regexp_replace(regexp_replace(query, '\s+', ' ', 'g'), '\|', '\\|', 'g')
  FROM s ORDER BY total_exec_time DESC LIMIT 12
SQL
fi

# ------------------------------------------------------------------ several nodes
# issue #13: the router's cost and 1, 2, 3 nodes (test/bench/cluster.sh,
# its own throwaway servers from this build; it writes CLUSTER.md)
CLUSTER_LINE="not measured (BENCH_ONLY=$ONLY)"
if all; then
	log "several nodes: test/bench/cluster.sh (writes CLUSTER.md)"
	if CLUSTER_PG_BIN=$PREFIX/usr/lib/postgresql/15/bin BENCH_ROUNDS=$ROUNDS BENCH_SECONDS=$SECS \
		bash "$BENCH/cluster.sh"; then
		CLUSTER_LINE=$(sed -n 's/^\*\*\([0-9.]*x\)\*\* direct: \(.*\) (goal 0.7x).*/\1 | \2/p' "$BENCH/CLUSTER.md")
	else
		CLUSTER_LINE="n/a | **FAILED** (see the log)"
	fi
fi

# ------------------------------------------------------------------ report
log "writing RESULTS.md and throughput.png"
PGVERSION=$(val -d bench -c 'SELECT version()')
SETTINGS_TABLE=$(val -d bench -F $'\t' -c "SELECT name, current_setting(name) FROM pg_settings
	WHERE name = ANY (string_to_array('$(echo $SHOWN_SETTINGS)', ' ')) ORDER BY name" |
	awk -F'\t' '{ printf "| `%s` | %s |\n", $1, $2 }')
pg_destroy
T1=$(date +%s)
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# stat SCEN CLIENTS COMP: "median min max rounds" of tps (empty if no data)
stat() {
	awk -F'\t' -v s="$1" -v c="$2" -v m="$3" '$1 == s && $2 == c && $3 == m { print $5 }' "$RES" |
		sort -g | awk '{ v[NR] = $1 } END {
			if (NR == 0) exit
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.1f %.1f %.1f %d\n", med, v[1], v[NR], NR }'
}
med() { stat "$@" | awk '{ print $1 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && a != "n/a" && b != "" && b != "n/a" && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a != "n/a" && a + 0 < b + 0) }'; }
# verdict VALUE GOAL: MET / NOT MET, or "not measured" for a value that is
# empty or n/a (a scenario BENCH_ONLY skipped: awk would compare the text)
verdict() {
	case $1 in
	"" | n/a) echo "not measured" ;;
	*) if ge "$1" "$2"; then echo "**MET**"; else echo "**NOT MET**"; fi ;;
	esac
}
applied_total() { # applied/txns over every round of a point
	awk -F'\t' -v s="$1" -v c="$2" -v m="$3" '$1 == s && $2 == c && $3 == m { t += $6; a += $7 }
		END { printf "%d/%d", a, t }' "$RES"
}

# point_note SCEN CLIENTS COMP MEDIAN MIN MAX: warnings about one point
point_note() {
	local note=""
	awk -v m="$4" -v a="$5" -v b="$6" 'BEGIN { exit !(m > 0 && (b - a) > 0.5 * m) }' &&
		note="noisy: spread over 50% of the median"
	awk -F'\t' -v s="$1" -v c="$2" -v m="$3" '$1 == s && $2 == c && $3 == m && $7 < $6 { bad = 1 }
		END { exit !bad }' "$RES" &&
		note="${note:+$note; }some calls found nothing to do (tps overstated)"
	echo "$note"
}

# scenario_table SCEN "CLIENTS..." COMP...: markdown table
scenario_table() {
	local scen=$1 clients=$2 c comp st ext m mn mx n
	shift 2
	echo "| competitor | clients | median tps | min-max | rounds | pg_inventory (app) ÷ this | applied/transactions | note |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|"
	for c in $clients; do
		ext=$(med "$scen" "$c" ext)
		for comp in "$@"; do
			st=$(stat "$scen" "$c" "$comp")
			[ -n "$st" ] || continue
			read -r m mn mx n <<<"$st"
			printf '| %s | %s | %s | %s-%s | %s | %s | %s | %s |\n' "$(label "$comp")" "$c" "$m" "$mn" "$mx" "$n" \
				"$(ratio "$ext" "$m")" "$(applied_total "$scen" "$c" "$comp")" "$(point_note "$scen" "$c" "$comp" "$m" "$mn" "$mx")"
		done
	done
}

U8_EXT=$(med uniform 8 ext); U8_SU=$(med uniform 8 ext_su); U8_FLOOR=$(med uniform 8 floor)
U8_CLIENT=$(med uniform 8 client); U8_PLPGSQL=$(med uniform 8 plpgsql)
U16_EXT=$(med uniform 16 ext); H16_EXT=$(med hot 16 ext); H16_SLOTS=$(med hot 16 ext_slots)
F64_AUTO=$(med flash 64 ext_auto); R_FLASH=$(ratio "$F64_AUTO" "$U16_EXT"); H64_EXT=$(med hot 64 ext)
R_FLOOR=$(ratio "$U8_EXT" "$U8_FLOOR"); R_CLIENT=$(ratio "$U8_EXT" "$U8_CLIENT")
A8_EXT=$(med async 8 ext); A8_FLOOR=$(med async 8 floor); A8_PLPGSQL=$(med async 8 plpgsql)
R_A_FLOOR=$(ratio "$A8_EXT" "$A8_FLOOR"); R_A_PLPGSQL=$(ratio "$A8_EXT" "$A8_PLPGSQL")
R_PLPGSQL=$(ratio "$U8_EXT" "$U8_PLPGSQL"); R_HOT=$(ratio "$H16_EXT" "$U16_EXT"); R_HOT_SLOTS=$(ratio "$H16_SLOTS" "$U16_EXT")
R_SU=$(ratio "$U8_EXT" "$U8_SU")
# 0.5: carts at three locations, the availability reader, 0.4
C8_EXT=$(med cart 8 ext); C8_LOC3=$(med cart 8 ext_loc3); R_LOC3=$(ratio "$C8_LOC3" "$C8_EXT")
AV_ALONE=$(med avail 8 ext); AV_WITH=$(med avail 8 ext_read); R_AV=$(ratio "$AV_WITH" "$AV_ALONE")
AV_READER=$(med avail "$READERS" reader); AV_READER_W=$(med avail "$READERS" reader_w)
V04_NEW=$(med v04 8 ext); V04_OLD=$(med v04 8 ext_v04); R_V04=$(ratio "$V04_NEW" "$V04_OLD")
# the 0.4 comparison is judged round by round: rounds interleave A B, so
# each round's ratio compares two runs a few seconds apart, and the drift
# of a shared machine (which widens each point's min-max) mostly cancels.
# "No slower beyond noise": the median of the per-round ratios is at least
# 0.97, or the per-round ratios fall on both sides of 1.
V04_ROUNDS=$(awk -F'\t' '$1 == "v04" && $3 == "ext" { a[$4] = $5 } $1 == "v04" && $3 == "ext_v04" { b[$4] = $5 }
	END { for (r in a) if (b[r] > 0) printf "%.2f\n", a[r] / b[r] }' "$RES" | sort -g | tr '\n' ' ')
read -r V04_RMED V04_RMIN V04_RMAX <<<"$(echo "$V04_ROUNDS" | tr ' ' '\n' | grep . | awk '{ v[NR] = $1 } END {
	if (NR == 0) { print "n/a n/a n/a"; exit }
	printf "%.2f %.2f %.2f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }')"
V04_NOISE="per-round ratios ${V04_ROUNDS% }"
if [ -z "$V04_NEW" ] || [ -z "$V04_OLD" ]; then
	V04_VERDICT="not measured"
	V04_WHY="BENCH_BASE was empty or the scenario did not run"
elif ge "$V04_RMED" 0.97 || { lt "$V04_RMIN" 1 && ge "$V04_RMAX" 1; }; then
	V04_VERDICT="**MET**"
	V04_WHY="no slower beyond the noise (median per-round ratio $V04_RMED, rounds $V04_RMIN-$V04_RMAX): on one active location the claim returns the allocation policy and the take needs no subtransaction, so a 0.5 reserve does the 0.4 work plus the location column and a level look only where a move may have changed it"
else
	V04_VERDICT="**NOT MET**"
	V04_WHY="this build was slower in every round (per-round ratios $V04_RMIN-$V04_RMAX, median $V04_RMED): see the 0.4 section"
fi

# relay figures
NOTIFY_OFF=$(med notify 8 ext); NOTIFY_ON=$(med notify 8 ext_notify)
R_NOTIFY=$(ratio "$NOTIFY_ON" "$NOTIFY_OFF")
notify_row() { # notify_row COMP
	local st m mn mx n
	st=$(stat notify 8 "$1")
	[ -n "$st" ] || return 0
	read -r m mn mx n <<<"$st"
	printf '| %s | 8 | %s | %s-%s | %s | %s |\n' "$(label "$1")" "$m" "$mn" "$mx" "$n" "$(applied_total notify 8 "$1")"
}
# steady NAME: "events published events/s p50 p99 max" (n/a if not run)
steady() {
	if [ -s "$WORK/steady.$1.tsv" ]; then tr '\t' ' ' <"$WORK/steady.$1.tsv"; else echo "n/a n/a n/a n/a n/a n/a"; fi
}
read -r SP_N SP_PUB SP_RATE SP_P50 SP_P99 SP_MAX <<<"$(steady poll)"
read -r SL_N SL_PUB SL_RATE SL_P50 SL_P99 SL_MAX <<<"$(steady listen)"
mem() { if [ -s "$WORK/$1.mem" ]; then mem_peak "$WORK/$1.mem"; else echo "n/a n/a 0"; fi; }
read -r MB_RSS MB_HWM MB_N <<<"$(mem backlog)"
read -r MP_RSS MP_HWM MP_N <<<"$(mem steady.poll)"
read -r ML_RSS ML_HWM ML_N <<<"$(mem steady.listen)"
MEM_PEAK=$(printf '%s\n' "$MB_HWM" "$MP_HWM" "$ML_HWM" | grep -v n/a | sort -g | tail -n 1 || true)
MEM_PEAK=${MEM_PEAK:-n/a}
# the lag goal needs the rate too: 95% of STEADY_RATE at least
RATE_MIN=$((STEADY_RATE * 95 / 100))
LAG_OK=0
if lt "$SP_P99" "$LAG_GOAL_MS" && ge "$SP_RATE" "$RATE_MIN" && [ "$SP_N" = "$SP_PUB" ]; then LAG_OK=1; fi
LAG_VERDICT=$([ $LAG_OK = 1 ] && echo "**MET**" || echo "**NOT MET**")
if [ "$SP_N" = n/a ]; then
	LAG_WHY="not measured: $RELAY_NOTE"
elif [ $LAG_OK = 1 ]; then
	LAG_WHY="the relay claims again at once after a batch that was not full and sleeps the poll interval (100 ms) only after a claim found nothing, so at a steady rate an event waits for the batch in hand to finish (claim, publish with confirms: RabbitMQ writes persistent messages to disk, mark published), then one batch of its own"
elif [ "$SP_N" != "$SP_PUB" ]; then
	LAG_WHY="$((SP_N - SP_PUB)) event(s) of the window were still unpublished when the relay was stopped"
elif ! ge "$SP_RATE" "$RATE_MIN"; then
	LAG_WHY="the producers reached only $SP_RATE events/s (pgbench ${STEADY_POLL_TPS:-?} tps): the machine did not sustain the rate"
else
	LAG_WHY="p99 at or above $LAG_GOAL_MS ms: an event waits for the batch in hand and one of its own (two claims, publishes with confirms and marks), and each waits on the broker's disk writes, the server's commits and the 2 cores shared by the producers, the server, the broker and the relay"
fi
# the drain goal: DRAIN_GOAL events/s, every event published, from a
# backlog of DRAIN_GOAL_EVENTS at least
DRAIN_OK=0
if [ -z "$RELAY_RATE" ]; then
	DRAIN_WHY="not measured: $RELAY_NOTE"
elif [ "${RELAY_ALL:-0}" != 1 ]; then
	DRAIN_WHY="a round left events unpublished (rounds: $(cut -f 3 "$WORK/drain.tsv" | paste -sd ' ') of $RELAY_TOTAL)"
elif [ "$RELAY_TOTAL" -lt "$DRAIN_GOAL_EVENTS" ]; then
	DRAIN_WHY="not judged: the backlog had $RELAY_TOTAL events, the goal is about $DRAIN_GOAL_EVENTS (BENCH_RELAY_EVENTS)"
elif ge "$RELAY_RATE" "$DRAIN_GOAL"; then
	DRAIN_OK=1
	DRAIN_WHY="batches of $RELAY_BATCH pipelined: the broker persists one batch while the relay marks the previous one and claims and publishes the next; confirms are read as they come (multiple=true acks settle a range)"
else
	DRAIN_WHY="below $DRAIN_GOAL events/s: every event costs the server two row updates of inventory.outbox (the claim and the mark, neither a HOT update: the claim finds the heap pages full, the mark changes an indexed column) and the broker one persistent message; on 2 cores shared by the server, the broker, the relay and (on a shared machine) other work, the CPU they need per event bounds the rate, not the relay's waiting (load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg))"
	if [ -n "$CEIL_RATE" ]; then
		DRAIN_WHY="$DRAIN_WHY. Blocked on this machine: the broker alone, fed by the relay's publisher with no database at all, confirms **$CEIL_RATE messages/s** at $CEIL_US µs of its CPU per persistent message ($CEIL_CORES cores for $DRAIN_GOAL/s); see The broker's ceiling"
	fi
fi
DRAIN_VERDICT=$([ $DRAIN_OK = 1 ] && echo "**MET**" || echo "**NOT MET**")
MEM_OK=0
if lt "$MEM_PEAK" 30; then MEM_OK=1; fi
MEM_VERDICT=$([ $MEM_OK = 1 ] && echo "**MET**" || echo "**NOT MET**")
if [ "$MEM_PEAK" = n/a ]; then
	MEM_WHY="not measured: $RELAY_NOTE"
elif [ $MEM_OK = 1 ]; then
	MEM_WHY="the relay holds the batches in flight (by default 2, at most 2 x $RELAY_BATCH payloads in the backlog drain) and keeps nothing between batches; the rest is libpq, librabbitmq and the C++ runtime"
else
	MEM_WHY="the peak is above 30 MB: see the memory table below for the run (the backlog drain holds batches of $RELAY_BATCH payloads and their unconfirmed messages)"
fi

# the outbox under a held snapshot (goal 4): medians over the rounds of
# held.tsv's columns per kind of run (hold 0 or 1)
held_med() { # held_med HOLD COLUMN
	[ -s "$WORK/held.tsv" ] || { echo n/a; return; }
	awk -v h="$1" -v c="$2" '$2 == h && $c != "n/a" { print $c }' "$WORK/held.tsv" | median
}
HF_TPS=$(held_med 0 3); HH_TPS=$(held_med 1 3)
HF_P99A=$(held_med 0 5); HF_P99B=$(held_med 0 7); HH_P99A=$(held_med 1 5); HH_P99B=$(held_med 1 7)
HF_P50B=$(held_med 0 6); HH_P50B=$(held_med 1 6)
HF_MIB=$(held_med 0 8); HH_MIB=$(held_med 1 8); HF_DEAD=$(held_med 0 9); HH_DEAD=$(held_med 1 9)
HF_LAT=$(held_med 0 11); HH_LAT=$(held_med 1 11)
HF_LAG99=$(held_med 0 13); HH_LAG99=$(held_med 1 13)
R_HELD=$(ratio "$HH_TPS" "$HF_TPS")
R_CLAIM=$(ratio "$HH_P50B" "$HF_P50B")
R_LAG=$(ratio "$HH_LAG99" "$HF_LAG99")
HELD_ROWS=$(if [ -s "$WORK/held.tsv" ]; then awk '{ printf "| %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %s | %s | %s / %s | %s | %s | %s | %s / %s |\n", $1, ($2 == 1 ? "held" : "none"), $3, $11, $4, $5, $6, $7, $12, $13, $8, $9, $14, $15, $10, $16, $17, $18, $19 }' "$WORK/held.tsv"; fi)
if [ "$HF_TPS" = n/a ] || [ "$HH_TPS" = n/a ]; then
	HELD_TPS_VERDICT="not measured"
	HELD_TPS_WHY="not measured: ${RELAY_NOTE:-the relay part did not run}"
	HELD_CLAIM_VERDICT="not measured"
	HELD_CLAIM_WHY=$HELD_TPS_WHY
else
	HELD_TPS_VERDICT=$(verdict "$R_HELD" 0.8)
	if ge "$R_HELD" 0.8; then
		HELD_TPS_WHY="producers insert and update rows no older snapshot needs: the held snapshot costs them little; what it costs is the outbox's reader, the relay (next row)"
	else
		HELD_TPS_WHY="the held snapshot keeps every row version changed meanwhile: the producers' index insertions and the relay's claims and marks step over more of them as the run goes on"
	fi
	# which of the two criteria failed, named as measured
	HELD_FAILED=""
	ge 2 "$R_CLAIM" || HELD_FAILED="the claim probe's median grew ${R_CLAIM}x"
	ge 2 "$R_LAG" || HELD_FAILED="${HELD_FAILED:+$HELD_FAILED and }the relay fell behind (lag p99 ${R_LAG}x)"
	if [ -z "$HELD_FAILED" ]; then
		HELD_CLAIM_VERDICT="**MET**"
		HELD_CLAIM_WHY="the claim's median in the last third of the held run, and the relay's lag p99, are within 2x the free run's: claims start at the outbox's low-water mark (0.7), above the row versions and index entries the held snapshot keeps, and the outbox's statements keep to their indexes (a claim planned on an emptied outbox no longer scans it whole); what the snapshot still holds back is the outbox's size (next row)"
	else
		HELD_CLAIM_VERDICT="**NOT MET**"
		HELD_CLAIM_WHY="$HELD_FAILED while the snapshot was held. Every claim and mark rewrites an outbox row, and the held snapshot keeps every old version and its index entries (VACUUM may not remove what the snapshot can still see); claims start at the low-water mark (0.7), above them, but what holds the mark (an open writer, a retrying event) and the marks' own index probes still meet them; on a shared 2-core machine one round is noisy: see the table"
	fi
fi
# the outbox's size (0.8: rings): the events it holds at the end of a held
# run against what the retention allows (3 x HOLD_RETENTION s of the run's
# rate: each ring is current for about half a retention and truncated a
# retention after, so it holds 1 to 1.5 retentions of events, and the purge
# runs once a second), and its dead row versions against 3 per such event
# (the insert, the claim, the mark): what the held snapshot keeps comes
# from the last few retentions, not from the run's history
HF_ROWS=$(held_med 0 14); HH_ROWS=$(held_med 1 14); HH_MADE=$(held_med 1 15)
# retention_bound MADE: 3 retentions of a held run's rate (MADE rows in
# HOLD_SECS), or n/a
retention_bound() {
	awk -v m="$1" -v s="$HOLD_SECS" -v r="$HOLD_RETENTION" 'BEGIN { if (m == "" || m == "n/a") print "n/a"; else printf "%.0f", 3 * r * m / s }'
}
HH_BOUND=$(retention_bound "$HH_MADE")
R_MIB=$(ratio "$HH_MIB" "$HF_MIB")
if [ "$HH_ROWS" = n/a ] || [ "$HH_BOUND" = n/a ] || [ "$R_MIB" = n/a ]; then
	HELD_SIZE_VERDICT="not measured"
	HELD_SIZE_WHY="not measured: ${RELAY_NOTE:-the relay part did not run}"
elif ge "$HH_BOUND" "$HH_ROWS" && ge "$((3 * HH_BOUND))" "$HH_DEAD"; then
	HELD_SIZE_VERDICT="**MET**"
	HELD_SIZE_WHY="published events leave a ring at a time (0.8): purge_published, run every second with a retention of ${HOLD_RETENTION} s, truncates a ring once all its events were published more than the retention ago, so the outbox holds a few retentions' worth of events ($HH_ROWS at the end of a held run, within the bound of $HH_BOUND; $HH_MADE written during it) whatever the history, and what a truncation removes leaves no dead row behind; the held snapshot still keeps the claims' and marks' row versions in the rings in use (${HH_DEAD} dead rows at the end of a held run, at most 3 per event of the bound; ${HF_DEAD} without), hence ${R_MIB}x the free run's size, which a longer run does not increase"
else
	HELD_SIZE_VERDICT="**NOT MET**"
	HELD_SIZE_WHY="the outbox held $HH_ROWS events at the end of a held run (bound: $HH_BOUND, 3 retentions of ${HOLD_RETENTION} s at the run's rate) and ${R_MIB}x the free run's size: a ring could not be truncated while some transaction held it (a writer not yet committed, a reader of the outbox), or the held snapshot's dead row versions (${HH_DEAD} against ${HF_DEAD} without) are more than 3 per event of the bound"
fi

# the history's size (0.9: the reservations' rings): the reservations kept
# at the end of a held run against 3 retentions of the run's rate, as for
# the outbox, and the dead row versions of reservation, reservation_line
# and reservation_transition against 3 per reservation of that bound
HF_HMIB=$(held_med 0 16); HH_HMIB=$(held_med 1 16); HF_HDEAD=$(held_med 0 17); HH_HDEAD=$(held_med 1 17)
HF_HROWS=$(held_med 0 18); HH_HROWS=$(held_med 1 18); HH_HMADE=$(held_med 1 19)
HH_HBOUND=$(retention_bound "$HH_HMADE")
R_HMIB=$(ratio "$HH_HMIB" "$HF_HMIB")
if [ "$HH_HROWS" = n/a ] || [ "$HH_HBOUND" = n/a ] || [ "$R_HMIB" = n/a ]; then
	HIST_SIZE_VERDICT="not measured"
	HIST_SIZE_WHY="not measured: ${RELAY_NOTE:-the relay part did not run}"
elif ge "$HH_HBOUND" "$HH_HROWS" && ge "$((3 * HH_HBOUND))" "$HH_HDEAD"; then
	HIST_SIZE_VERDICT="**MET**"
	HIST_SIZE_WHY="finished reservations leave a ring at a time (0.9): purge_history, run every second with a retention of ${HOLD_RETENTION} s, truncates a ring's three partitions (reservations, lines, transitions) once every reservation in it finished more than the retention ago, so the history holds a few retentions' worth of reservations ($HH_HROWS at the end of a held run, within the bound of $HH_HBOUND; $HH_HMADE made during it) whatever was made before, and what a truncation removes leaves no dead row behind; the held snapshot keeps the cancels' old row versions in the rings still in use (${HH_HDEAD} dead rows at the end of a held run, at most 3 per reservation of the bound; ${HF_HDEAD} without), hence ${R_HMIB}x the free run's size, which a longer run does not increase"
else
	HIST_SIZE_VERDICT="**NOT MET**"
	HIST_SIZE_WHY="the history held $HH_HROWS reservations at the end of a held run (bound: $HH_HBOUND, 3 retentions of ${HOLD_RETENTION} s at the run's rate) and ${R_HMIB}x the free run's size: a ring could not be taken (a transaction held it beyond the purge's 200 ms wait, or one older than 200 ms did), or the held snapshot's dead row versions (${HH_HDEAD} against ${HF_HDEAD} without) are more than 3 per reservation of the bound"
fi

# goal 4 as a whole: the outbox's three rows and the history's
if [ "$HELD_TPS_VERDICT" = "not measured" ]; then
	GOAL4_VERDICT="not measured"
elif [ "$HELD_TPS_VERDICT" = "**MET**" ] && [ "$HELD_CLAIM_VERDICT" = "**MET**" ] &&
	[ "$HELD_SIZE_VERDICT" = "**MET**" ] && [ "$HIST_SIZE_VERDICT" = "**MET**" ]; then
	GOAL4_VERDICT="**MET**"
else
	GOAL4_VERDICT="**NOT MET**"
fi

# chart data: clients and the medians per competitor
for scen in uniform hot; do
	for c in 1 8 16 32 64; do
		line="$c"
		any=0
		for comp in ext floor client plpgsql ext_slots; do
			m=$(med "$scen" "$c" "$comp")
			[ -n "$m" ] && any=1
			line="$line ${m:-NaN}"
		done
		[ $any = 1 ] && echo "$line"
	done >"$WORK/$scen.dat"
done
# the flash-sale chart: buyers of one SKU, one line per design, and
# uniform demand at as many clients for reference
for c in 16 32 64; do
	line="$c"
	for pt in hot:ext hot:ext_slots flash:ext_auto uniform:ext; do
		m=$(med "${pt%%:*}" "$c" "${pt#*:}")
		line="$line ${m:-NaN}"
	done
	echo "$line"
done >"$WORK/flash.dat"
if ! all; then
	log "BENCH_ONLY=$ONLY: throughput.png and flash_sale.png not redrawn"
else
gnuplot <<EOF || log "gnuplot failed: no chart"
set terminal pngcairo size 1200,520 font "DejaVu Sans,10" noenhanced
set output "$BENCH/throughput.png"
set multiplot layout 1,2 title "pg_inventory reserve throughput ($(nproc) cores, median of $ROUNDS x ${SECS}s, synchronous_commit on)"
set logscale x 2
set xlabel "clients"
set ylabel "transactions per second"
set yrange [0:*]
set grid
set key top left
set style data linespoints
set title "uniform demand over 10,000 SKUs"
set xtics (1, 8, 16, 32)
set xrange [0.8:40]
plot "$WORK/uniform.dat" using 1:2 lw 2 pt 7 title "pg_inventory (app role)", \
	"" using 1:3 lw 2 pt 5 title "floor (one CTE)", \
	"" using 1:4 lw 2 pt 9 title "client-side (statements)", \
	"" using 1:5 lw 2 pt 11 title "PL/pgSQL baseline"
set title "one hot SKU (every call reserves the same row)"
set xtics (16, 64)
set xrange [12:85]
plot "$WORK/hot.dat" using 1:2 lw 2 pt 7 title "pg_inventory (app role)", \
	"" using 1:3 lw 2 pt 5 title "floor (one CTE)", \
	"" using 1:4 lw 2 pt 9 title "client-side (statements)", \
	"" using 1:5 lw 2 pt 11 title "PL/pgSQL baseline", \
	"" using 1:6 lw 2 pt 13 dt 2 title "pg_inventory, hot SKU in $HOT_SLOTS slots"
unset multiplot
EOF
gnuplot <<EOF || log "gnuplot failed: no flash-sale chart"
set terminal pngcairo size 760,520 font "DejaVu Sans,10" noenhanced
set output "$BENCH/flash_sale.png"
set title "flash sale: buyers of one SKU ($(nproc) cores, median of $ROUNDS x ${SECS}s, synchronous_commit on)"
set logscale x 2
set xlabel "buyers (clients)"
set ylabel "reservations per second"
set yrange [0:*]
set grid
set key top right
set style data linespoints
set xtics (16, 32, 64)
set xrange [12:85]
plot "$WORK/flash.dat" using 1:2 lw 2 pt 7 title "one slot (the default, no worker)", \
	"" using 1:3 lw 2 pt 5 title "$HOT_SLOTS slots set by an operator", \
	"" using 1:4 lw 2 pt 9 title "automatic slotting (the worker splits the SKU)", \
	"" using 1:5 lw 2 pt 11 dt 2 title "uniform demand over 10,000 SKUs (reference)"
EOF
fi

workcheck_table() {
	local ext_keys
	ext_keys=$(awk -F'\t' '$1 == "uniform.ext.c8.r1" { print $7 }' "$WORK/workcheck.tsv")
	echo "| point (round 1) | reservations | lines per reservation | locations per reservation | transitions per reservation | outbox events per reservation | payload keys of the last event |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	awk -F'\t' -v ek="$ext_keys" '{ printf "| `%s` | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6,
		($7 == ek ? "same as pg_inventory reserve" : "`" $7 "`") }' "$WORK/workcheck.tsv"
	echo
	echo "pg_inventory reserve's payload keys: \`$ext_keys\`."
}

profile_table() {
	echo "| level | calls | total ms | mean ms | % of top-level reserve time | rows/call | shared blks hit/call | blks dirtied/call | WAL bytes/call | statement |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
	awk -F'\t' '{ q = $10; if (length(q) > 230) q = substr(q, 1, 230) "…"
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | `%s` |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, q }' \
		"$WORK/profile.tsv"
}

MEM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
# expire_due: the goal counts only over its 1,000,000 rows
if [ "$EXPIRED" = n/a ]; then
	EXP_VERDICT="not run"
	EXP_WHY="BENCH_ONLY=$ONLY"
elif ge "$EXPIRED" "$EXP_GOAL_ROWS" && ge "$EXP_RATE" "$EXP_GOAL"; then
	EXP_VERDICT="**MET**"
	EXP_WHY="per batch of 10,000: one statement locks the due rows (SKIP LOCKED), changes them and writes their transitions and returns their lines; the events are built in C and written by one INSERT; the units go back per (sku, location, slot) in 3 statements; see the expire_due section"
elif ! ge "$EXPIRED" "$EXP_GOAL_ROWS"; then
	EXP_VERDICT="**NOT MET**"
	EXP_WHY="measured over $EXPIRED rows only (BENCH_EXPIRE_ROWS=$EXPIRE_ROWS): the goal is over $EXP_GOAL_ROWS rows; run the full mode"
else
	EXP_VERDICT="**NOT MET**"
	EXP_WHY="each row still costs a locked and updated reservation (3 index entries), a transition row (3 index entries, one of them BRIN, and a foreign key check) and an event (4 index entries and a foreign key check): about 10 index insertions and 2 FK checks per row that the schema requires, on 2 shared cores (load $EXP_LOAD when the drain began); $EXP_SPLIT; see the expire_due section"
fi
# scale of data (goal 6): judged only at its full sizes
SC_SMALL=$(med scale 8 ext)
SC_LARGE=$(med scale 8 ext_scale)
R_SCALE=$(ratio "$SC_LARGE" "$SC_SMALL")
SCALE_MEASURED="$SC_LARGE / $SC_SMALL tps = **${R_SCALE}x** ($SCALE_N_SKUS SKUs, $SCALE_N_RES stored reservations, $SCALE_SIZE)"
if [ "$SCALE_N_SKUS" = n/a ] || [ -z "$SC_LARGE" ]; then
	SCALE_VERDICT="not run"
	SCALE_WHY="BENCH_ONLY=$ONLY"
	SCALE_MEASURED="n/a"
elif ! ge "$SCALE_N_SKUS" "$SCALE_GOAL_SKUS" || ! ge "$SCALE_N_RES" "$SCALE_GOAL_RES"; then
	SCALE_VERDICT="**NOT MET**"
	SCALE_WHY="not judged: the goal is at $SCALE_GOAL_SKUS SKUs and $SCALE_GOAL_RES stored reservations, this run had $SCALE_N_SKUS and $SCALE_N_RES (BENCH_SCALE_SKUS, BENCH_SCALE_HISTORY; the full mode has both); see Scale of data"
elif ge "$R_SCALE" "$SCALE_GOAL"; then
	SCALE_VERDICT="**MET**"
	SCALE_WHY="a reserve reads and writes by index only (the SKU's slot, the request key, the reservation's id), so a larger catalog and history cost it deeper indexes and colder pages, not work per call; here the $SCALE_SIZE database fits in the page cache ($MEM of memory): with indexes larger than memory, calls would wait on reads; see Scale of data"
else
	SCALE_VERDICT="**NOT MET**"
	SCALE_WHY="below ${SCALE_GOAL}x: the larger tables' index pages (the request keys, the reservation ids, the slots of a million SKUs) no longer stay in shared_buffers, so calls read and write colder pages; see Scale of data"
fi
{
cat <<EOF
# pg_inventory benchmark results

Generated by \`make bench\` (\`bash test/bench/run.sh\`) on $(date -u '+%Y-%m-%d %H:%M UTC'),
mode **$MODE**: $ROUNDS round(s) of ${SECS} s per point, expire_due over $EXPIRE_ROWS rows;
the whole run took $(( (T1 - T0) / 60 )) min $(( (T1 - T0) % 60 )) s.
Not part of the pass/fail test suite. \`BENCH_QUICK=1 make bench\` is the
development mode (1 round of 5 s, 100,000 expire rows).

## Machine and server

| | |
|---|---|
| CPU | $CPU, $(nproc) cores (\`nproc\`) |
| memory | $MEM |
| load average (1, 5, 15 min) | $LOAD_START at the start, $LOAD_END at the end (other work on the machine shows here: every figure is relative to it) |
| kernel | $(uname -r) |
| PostgreSQL | $PGVERSION |
| pg_inventory | $EXTVERSION, built from the $BUILT |
| pgbench | $(pgbench --version) (\`-M prepared\`, \`-j 2\`, one thread for 1 client), on the same machine |

A throwaway server (\`test/scripts/pg_env.sh\`) with these settings (from
\`pg_settings\` during the run; everything else is the default):

| setting | value |
|---|---|
$SETTINGS_TABLE

## Method

- Tenant \`bench\`: 10,000 SKUs (\`sku-00001\`..\`sku-10000\`) and the hot
  \`sku-00000\`, each restocked once with 2,000,000,000 units through
  \`inventory.restock\`, so stock never runs out.
- Every call reserves 1 unit per line with a TTL of 1 hour and a new request
  key (\`<point>-<client>-<n>\`, unique per call: every call does the full
  idempotency claim on the \`(tenant, request_key)\` unique key and writes).
- Competitors, each doing the same durable work (stock update only if
  enough, reservation row + line rows, transition-log row, outbox row with
  the extension's JSON payload, idempotency on the unique key; see
  "Work check" below):
  - **pg_inventory (app role)**: \`inventory.reserve\` / \`reserve_lines\` /
    \`confirm\` called as \`bench_app\` (USAGE, EXECUTE, a tenant grant: a
    real application). **pg_inventory (superuser)**: the same as
    \`postgres\` (skips the tenant-grant query), uniform reserve at 8 clients.
  - **floor**: the same writes as ONE statement (a data-modifying CTE) sent
    by pgbench, as superuser (\`test/bench/scripts/*_floor.sql\`). It skips
    what the extension does besides the writes: authorisation, argument
    checks, storing a rejection, the returned outcome.
  - **client-side**: the same work as separate statements in one
    transaction from the client, as an ORM would (BEGIN; SELECT ... FOR
    UPDATE; UPDATE stock; INSERT reservation; INSERT line; INSERT
    transition; INSERT outbox; COMMIT: 8 round trips), as superuser
    (\`*_client.sql\`).
  - **PL/pgSQL baseline**: \`test/bench/plpgsql_baseline.sql\`, SECURITY
    DEFINER owned by the superuser, with the same authorisation query,
    called as \`bench_app\`.
- Interleaving: for each point (scenario, clients) the competitors run in
  turn, A B C D, then again, for $ROUNDS round(s) of ${SECS} s each, so drift
  of the shared 2-core machine (and of the growing tables) spreads over all
  of them. A CHECKPOINT runs before each point. Figures are the median tps
  over the rounds (pgbench's "without initial connection time"), with the
  min-max spread; ratios are of medians from the same run. pgbench runs on
  the same 2 cores as the server, as every client would here.
- "applied/transactions": reservations with the point's key prefix in the
  state the call leads to, against the transactions pgbench counted: equal
  numbers mean every call did its work.

## Goals

| goal | measured | verdict | why |
|---|---|---|---|
| uniform reserve at 8 clients >= 0.95x the floor (issue #12, goal 1, with the commit flush) | $U8_EXT / $U8_FLOOR tps = **${R_FLOOR}x** | $(verdict "$R_FLOOR" 0.95) | $(if ge "$R_FLOOR" 0.95; then echo "the extension's statements cost about as much as the one-statement floor"; else echo "a single-line reserve runs 2 statements through SPI (the key's claim; the take from a free slot with the line, transition and event) where the floor runs 1, takes a lock on the request key, and runs the take in a subtransaction (rolled back when it takes nothing, so no stray slot lock is held while falling back); argument checks, the tenant check, the returned outcome and the function-call frame (pinned search_path, owner switch) add the rest; see Profile"; fi) |
| CPU per call: uniform reserve at 8 clients with \`synchronous_commit = off\` >= 0.8x the floor (issue #12, goal 1) | $A8_EXT / $A8_FLOOR tps = **${R_A_FLOOR}x** | $(verdict "$R_A_FLOOR" 0.8) | $(if ge "$R_A_FLOOR" 0.8; then echo "without the flush the figure is CPU per call: the extension's statements cost nearly what the one-statement floor's do"; else echo "without the commit's flush (which hides much of the difference in the row above) the extension's 2 SPI statements, key lock, subtransaction and function frame per call against the floor's one statement show whole; CPU per call by phase: \`make bench-cpu\` (CPU_PROFILE.md)"; fi) |
| CPU per call: uniform reserve at 8 clients with \`synchronous_commit = off\` >= 1.3x the PL/pgSQL baseline (issue #12, goal 1) | $A8_EXT / $A8_PLPGSQL tps = **${R_A_PLPGSQL}x** | $(verdict "$R_A_PLPGSQL" 1.3) | $(if ge "$R_A_PLPGSQL" 1.3; then echo "saved plans in C against PL/pgSQL's interpreter"; else echo "the baseline does the same writes in 4 statements with no subtransaction, no slot fallback and no per-call argument checks; the extension runs 2 (the claim; the take with its records, the event built in C) in a subtransaction: what is left is the executor's work on the same rows (partition routing into the rings, CHECK constraints read again for each statement, foreign-key checks, index entries), which both pay; see \`make bench-cpu\`"; fi) |
| uniform reserve at 8 clients >= 2x the client-side way | $U8_EXT / $U8_CLIENT tps = **${R_CLIENT}x** | $(verdict "$R_CLIENT" 2) | $(if ge "$R_CLIENT" 2; then echo "one round trip instead of 8, and the stock row lock is held for less time"; else echo "the client-side way's 8 round trips cost less than expected against the commit (WAL flush) on this machine"; fi) |
| uniform reserve at 8 clients faster than PL/pgSQL | $U8_EXT / $U8_PLPGSQL tps = **${R_PLPGSQL}x** | $(verdict "$R_PLPGSQL" 1.0000001) | $(if ge "$R_PLPGSQL" 1.0000001; then echo "saved SPI plans in C against PL/pgSQL's interpreter"; else echo "the baseline does the same writes as plain single-row statements on slot 0 with no subtransaction and no slot fallback; the extension's general slotted path (SKIP LOCKED take in a subtransaction, fallback) costs more than it saves on uniform demand"; fi) |
| hot SKU at 16 clients >= 0.7x uniform reserve at 16 clients, hot SKU in $HOT_SLOTS slots (0.3) | $H16_SLOTS / $U16_EXT tps = **${R_HOT_SLOTS}x** | $(verdict "$R_HOT_SLOTS" 0.7) | $(if ge "$R_HOT_SLOTS" 0.7; then echo "concurrent calls take units from different slots (SKIP LOCKED), so they no longer queue on one row lock"; else echo "even split over $HOT_SLOTS slots, the calls still queue: see the hot-SKU table"; fi) |
| flash sale without tuning: one SKU, 64 buyers, no set_stock_slots, >= 0.7x uniform reserve at 16 clients (issue #12) | $F64_AUTO / $U16_EXT tps = **${R_FLASH}x** (one slot, no worker, 64 clients: $H64_EXT tps) | $(verdict "$R_FLASH" 0.7) | $(if ge "$R_FLASH" 0.7; then echo "the worker saw callers queue on the SKU's slot and split it (see Flash sale); buyers then take free slots (SKIP LOCKED) or wait for one busy slot each, not for all"; else echo "the worker split the SKU (see Flash sale) but 64 buyers on $(nproc) shared cores still queue. The ceiling: uniform demand over 10,000 SKUs at 64 clients reaches $(ratio "$(med uniform 64 ext)" "$U16_EXT")x the 16-client figure here, without any hot row. Below it: the time before the split, then the split SKU's slot rows share a few heap and index pages, whose content locks the buyers queue on, and every commit's WAL flush (what the 64 buyers waited on, sampled: ${FLASH_WAITS:-n/a})"; fi) |
| the same with the hot SKU in one slot (the default) | $H16_EXT / $U16_EXT tps = **${R_HOT}x** | $(verdict "$R_HOT" 0.7) | $(if ge "$R_HOT" 0.7; then echo "one row is enough here"; else echo "every call locks the same stock row until commit, so calls serialise on one row lock plus one WAL flush each; slotted stock is the remedy (row above)"; fi) |
| 3-line carts served from 3 locations >= 0.8x the 3-line cart at one location (8 clients) | $C8_LOC3 / $C8_EXT tps = **${R_LOC3}x** | $(verdict "$R_LOC3" 0.8) | $(if ge "$R_LOC3" 0.8; then echo "the first try (every line at the first location) fails at once, then one locking pass over the cart's slots at every location, a plan in memory and one hold per line: the extra work is one rolled-back subtransaction and a few more rows read"; else echo "the first try at the first location is rolled back (a subtransaction), then every slot of the cart's SKUs at every location is locked and read before the plan: more statements and lock time per cart than the single-location path"; fi) |
| uniform reserve at 8 clients, this build ($EXTVERSION) against $BASE_VERSION: no slower beyond noise | $V04_NEW / $V04_OLD tps = **${R_V04}x** (noise: $V04_NOISE) | $V04_VERDICT | $V04_WHY |
| reserve through pg_inventory_router against directly on a node, 8 clients (issue #13) | $CLUSTER_LINE | one more hop per call: the router's CPU (PL/Proxy's lookups, the call over TCP) taken from the same cores, and at that lower rate each call costs the node more (fewer commits share a WAL flush); the node's cost at equal rates, 1, 2 and 3 nodes and the model for N machines: [CLUSTER.md](CLUSTER.md) |
| availability (100 SKUs per call, $READERS clients) beside uniform reserve at 8 clients | reader $AV_READER_W calls/s beside reserve ($AV_READER alone); reserve $AV_WITH tps with the reader, $AV_ALONE without = **${R_AV}x** | no target set | the reader takes no row locks and writes nothing, so it slows reserve only through the 2 shared cores: see the availability section |
| expire_due >= 40,000 rows/s over 1,000,000 due reservations spread over 10,000 SKUs | $EXP_RATE rows/s over $EXPIRED rows ($EXP_SKUS SKUs) | $EXP_VERDICT | $EXP_WHY |
| scale of data (issue #12, goal 6): uniform reserve at 8 clients with 1,000,000 SKUs and 10,000,000 stored reservations >= 0.8x the same with 10,000 SKUs | $SCALE_MEASURED | $SCALE_VERDICT | $SCALE_WHY; a backend's memory over many calls: \`make bench-cpu\` (CPU_PROFILE.md) |
| an outbox and a history that never bloat (issue #12, goal 4): with a snapshot held open ${HOLD_SECS} s, producers >= 0.8x and the claim's latency flat; the outbox's and the history's size bounded by the retention window | producers **${R_HELD}x**, claim median **${R_CLAIM}x**, relay lag p99 $HH_LAG99 ms held against $HF_LAG99 ms free; events left $HH_ROWS (bound $HH_BOUND); reservations left $HH_HROWS (bound $HH_HBOUND) | $GOAL4_VERDICT | producers $HELD_TPS_VERDICT, claim latency $HELD_CLAIM_VERDICT, outbox size $HELD_SIZE_VERDICT (the outbox's rings, 0.8), history size $HIST_SIZE_VERDICT (the reservations' rings, 0.9); see Outbox and history under a held snapshot |

Superuser figure: pg_inventory as the superuser at 8 clients:
$U8_SU tps; the app role runs at ${R_SU}x of it (the difference is the
tenant-grant query, \`pg_has_role\` over \`inventory.tenant_member\`).

![throughput by clients](throughput.png)

## Uniform reserve (random SKU of 10,000, unique keys)

$(scenario_table uniform "1 8 16 32 64" ext ext_su floor client plpgsql)

The same at 8 clients with \`synchronous_commit = off\` for the benchmark's
sessions (\`PGOPTIONS\`): no commit waits for its WAL flush, so the
figures are bound by CPU per call (issue #12, goal 1):

$(scenario_table async 8 ext floor plpgsql)

## Hot SKU (flash sale: every call reserves 1 unit of sku-00000)

$(scenario_table hot "16 32 64" ext ext_slots floor client plpgsql)

Hot ÷ uniform at 16 clients, per competitor:
$(for comp in ext floor client plpgsql; do printf '%s %s; ' "$(label "$comp")" "$(ratio "$(med hot 16 $comp)" "$(med uniform 16 $comp)")x"; done)
$(label ext_slots) ÷ pg_inventory uniform: ${R_HOT_SLOTS}x.
The floor, the client-side way and PL/pgSQL write slot 0 of the SKU's
\`inventory.stock_slot\` row (every SKU has one slot unless an operator
splits it), so they and pg_inventory on sku-00000 do the same work; the
slotted row shows what \`inventory.set_stock_slots\` buys.

## Flash sale without tuning (issue #12)

![flash sale by buyers](flash_sale.png)

$(scenario_table flash "16 32 64" ext_auto)

The chart: the same SKU bought by 16, 32 and 64 clients in three designs
(one slot and no worker: \`hot\` with pg_inventory; $HOT_SLOTS slots set by an
operator beforehand: \`hot\`, \`sku-99999\`; automatic slotting: the rows
above), and uniform reserve over 10,000 SKUs at as many clients as the
ceiling a hot SKU could reach on this machine (uniform at 64 clients:
$(med uniform 64 ext) tps, $(ratio "$(med uniform 64 ext)" "$U16_EXT")x the
16-client figure the goal compares with).

Each round restocks a new SKU (one slot, no \`set_stock_slots\`) and runs
64 clients on it for ${SECS} s with the expiry worker running in database
bench (the server restarted for these points with
\`shared_preload_libraries = 'pg_inventory'\` and
\`pg_inventory.worker_database = 'bench'\`; automatic slotting at its
defaults: \`auto_slots\` 64 at most, \`auto_slots_samples\` 3,
\`auto_slots_interval\` 250 ms). The worker split the SKU after (seconds
from the start of the round, slots at its end):
$([ -f "$WORK/flash.tsv" ] && awk -F'\t' '{ printf "round %s: %s s, %s slots; ", $1, $2, $3 }' "$WORK/flash.tsv")
${FLASH_AUDIT:-n/a} audit rows by the worker. What the 64 buyers were doing,
sampled from \`pg_stat_activity\` every 200 ms during those rounds (CPU: no
wait): ${FLASH_WAITS:-n/a}. Against uniform reserve at 16
clients: **${R_FLASH}x**; one-slot hot SKU at 64 clients without the
worker: $H64_EXT tps.

## 3-line carts (reserve_lines, 8 clients)

$(scenario_table cart 8 ext ext_loc3 floor client plpgsql)

Three locations ÷ one location (pg_inventory, app role): **${R_LOC3}x**.
Tenant \`multi\` has three active locations, loc-a (priority 10), loc-b (20)
and loc-c (30); each stocks one band of the SKUs only (sku-00001..03333,
03334..06666, 06667..10000), and every cart takes one SKU of each band, so
the allocation policy must serve its three lines from three locations (the
work check below shows 3 locations per reservation). Tenant \`bench\` has
only the location \`default\`.

## Availability beside reserve (8 reserve clients, $READERS reader clients)

$(scenario_table avail 8 ext ext_read)
$(scenario_table avail "$READERS" reader reader_w | tail -n +3)

\`inventory.availability('bench', <100 consecutive SKUs from a random
start>)\` as \`bench_app\` (\`test/bench/scripts/avail_ext.sql\`: 200 rows
per call, one per SKU and location plus one total per SKU; available,
reserved and consumed are NULL for an application role). "beside
reserve": the reader's pgbench runs for the same ${SECS} s as the reserve
pgbench of the row above it, in the same round. Rounds interleave reserve
alone, reserve with the reader, then the reader alone.
Reserve with the reader ÷ without: **${R_AV}x**; the reader makes
$AV_READER_W calls/s beside reserve and $AV_READER calls/s alone
($(awk -v a="${AV_READER:-0}" 'BEGIN { printf "%.0f", a * 100 }') SKUs/s).

## This build against $BASE_VERSION (uniform reserve, 8 clients)

$(scenario_table v04 8 ext ext_v04)

Each build on its own server (same settings; the $BASE_VERSION one built from
$BASE_BUILT into a second private PostgreSQL copy, started only for this
scenario) and a fresh database with the same catalog (tenant \`bench\`,
10,001 SKUs at one location), interleaved A B A B; extension versions
(this / base): $V04_VERSIONS; \`check_invariants()\` rows afterwards:
$V04_INV. This build ÷ $BASE_VERSION: **${R_V04}x** (medians); round by round
(A B pairs a few seconds apart): $V04_NOISE. The goal counts as met when
the median of the per-round ratios is at least 0.97 or the rounds fall on
both sides of 1.

Loading that catalog (one statement of $((NSKUS + 1)) \`restock\` calls, each
creating a SKU, one after the other, before the rounds; one measurement
each, not interleaved): $V04_LOAD_NEW s on $EXTVERSION, $V04_LOAD_OLD s on
$BASE_VERSION.

## Confirm (8 clients, pre-created pending reservations)

$(scenario_table confirm 8 ext floor)

Each call confirms a different pending reservation created in bulk before
the scenario ($CONFIRM_PER_CLIENT per client and round, more than a client
can confirm in ${SECS} s).

## expire_due

$EXPIRED due reservations (1 line of 1-3 units each over $EXP_SKUS SKUs, made
in bulk in a separate database in $EXP_SETUP_SECS s, then VACUUM ANALYZE and
CHECKPOINT) drained by a loop of \`SELECT inventory.expire_due(10000)\`,
one transaction per call, a new session per call: **$EXP_RATE rows/s**
($EXPIRED rows in $EXP_SECS s, $BATCHES batches; $EXP_SPLIT; load $EXP_LOAD
when the drain began) — $EXP_VERDICT against the goal of 40,000 rows/s over
1,000,000 due reservations spread over 10,000 SKUs. Pending left:
$EXP_LEFT; reservation.expired events written: $EXP_EVENTS;
\`check_invariants()\` afterwards: $INV_EXPIRE row(s).

## Scale of data

Uniform reserve at 8 clients as \`bench_app\`, interleaved over the rounds:
on database bench (10,000 SKUs) and on database bench_scale,
$SCALE_N_SKUS SKUs (\`sku-0000001\`..) and $SCALE_N_RES stored
(cancelled) reservations with one line and two log rows each, $SCALE_SIZE
in all, made by \`scale_load.sql\` (the rows the functions write for one
SKU and one reservation, copied set-based with the foreign-key triggers
off), then VACUUM ANALYZE and CHECKPOINT ($SCALE_SETUP_SECS s);
\`check_invariants()\` on it: $INV_SCALE row(s). Each call reserves 1 unit of a SKU drawn uniformly
from the whole catalog (\`scripts/reserve_scale.sql\`).

$(scenario_table scale 8 ext ext_scale)

## Relay end to end

| goal | measured | verdict | why |
|---|---|---|---|
| relay drains a backlog of $DRAIN_GOAL_EVENTS events at >= $DRAIN_GOAL events/s, publisher confirms | **${RELAY_RATE:-n/a} events/s** (median of $ROUNDS round(s) over $RELAY_TOTAL events) | $DRAIN_VERDICT | $DRAIN_WHY |
| relay lag p99 < $LAG_GOAL_MS ms at $STEADY_RATE events/s, polling | p50 $SP_P50 ms, p99 **$SP_P99 ms**, max $SP_MAX ms at $SP_RATE events/s (the goal asks p99 < $LAG_GOAL_MS ms, every event of the window published and at least $RATE_MIN events/s) | $LAG_VERDICT | $LAG_WHY |
| relay resident memory < 30 MB | peak VmHWM **$MEM_PEAK MiB** | $MEM_VERDICT | $MEM_WHY |

**Backlog.** $RELAY_NOTE

$CEILING_NOTE

**Lag at a steady rate, polling.** Producers reserve at a steady
$STEADY_RATE reservations/s (\`pgbench --rate=$STEADY_RATE\`, 8 clients,
uniform reserve as \`bench_app\`, ${STEADY_SECS} s; pgbench achieved
${STEADY_POLL_TPS:-n/a} tps) in database bench_relay while one relay runs in
the default poll mode (\`--poll-interval-ms 100\`, \`--batch-size 100\`, \`--in-flight 2\`) and
publishes into one durable queue bound with \`#\` (\`--audit-queue\`). Lag per
event = \`published_at - created_at\` of \`inventory.outbox\` (both are the
server's clock; \`created_at\` is read at the call, so the lag includes the
producer's own commit), over the events created after the first second
(the relay connecting) up to the end of the run; after the producers stop,
the relay publishes the rest and then gets SIGTERM.

| relay mode | events in window | published | events/s | p50 lag ms | p99 lag ms | max lag ms |
|---|---:|---:|---:|---:|---:|---:|
| poll every 100 ms (default) | $SP_N | $SP_PUB | $SP_RATE | $SP_P50 | $SP_P99 | $SP_MAX |
| \`--listen\`, poll every 2 s, NOTIFY trigger on the outbox | $SL_N | $SL_PUB | $SL_RATE | $SL_P50 | $SL_P99 | $SL_MAX |

The second row is the wake-up latency of \`--listen\`: the same producers
(pgbench achieved ${STEADY_LISTEN_TPS:-n/a} tps) with the NOTIFY trigger
described below on \`inventory.outbox\`; with a 2 s poll interval and no
notifications an event would wait about 1 s on average.

**NOTIFY's cost to producers.** The extension does not notify. To measure
what it would cost, the benchmark adds (as superuser, in its own database
only) a statement-level \`AFTER INSERT\` trigger on \`inventory.outbox\`
that runs \`pg_notify('inventory_outbox', '')\`, and runs the uniform
reserve at 8 clients as \`bench_app\`, unthrottled, without and with it,
interleaved A B A B over $ROUNDS round(s) of ${SECS} s (database bench):

| producers | clients | median tps | min-max | rounds | applied/transactions |
|---|---:|---:|---:|---:|---:|
$(notify_row ext)
$(notify_row ext_notify)

With NOTIFY ÷ without: **${R_NOTIFY}x**. In PostgreSQL 15 a transaction
that ran NOTIFY takes a database-wide lock (\`LockSharedObject\` on the
database, in \`PreCommit_Notify\`) to append its notifications to the
shared queue in commit order, and holds it until its commit record is
flushed; so notifying transactions commit one at a time and lose the group
commit that lets concurrent clients share a WAL flush. This is why the
relay polls by default and \`--listen\` stays an option.

**Relay resident memory** (\`VmRSS\` and \`VmHWM\`, the peak, of
\`/proc/PID/status\`, sampled every 50 ms while the relay ran):

| run | samples | peak VmRSS MiB | VmHWM MiB |
|---|---:|---:|---:|
| backlog drain (batch $RELAY_BATCH, every round) | $MB_N | $MB_RSS | $MB_HWM |
| steady rate, polling (batch 100) | $MP_N | $MP_RSS | $MP_HWM |
| steady rate, \`--listen\` | $ML_N | $ML_RSS | $ML_HWM |

## Outbox and history under a held snapshot (issue #12, goal 4)

| goal | measured | verdict | why |
|---|---|---|---|
| producer throughput with a snapshot held open ${HOLD_SECS} s >= 0.8x the same run without | $HH_TPS / $HF_TPS tps = **${R_HELD}x** at a target of $HOLD_RATE/s (medians of $ROUNDS round(s)); producer latency (pgbench's average, which counts the wait for a late schedule) $HH_LAT ms held, $HF_LAT ms free | $HELD_TPS_VERDICT | $HELD_TPS_WHY |
| the relay's claim latency stays flat | claim probe median in the last third: **$HH_P50B ms** held against $HF_P50B ms free = **${R_CLAIM}x** (p99 last third: $HH_P99B against $HF_P99B ms; first third held: p99 $HH_P99A ms); the relay's lag p99: **$HH_LAG99 ms** held against $HF_LAG99 ms free = **${R_LAG}x**; flat counts as both at most 2x the free run's | $HELD_CLAIM_VERDICT | $HELD_CLAIM_WHY |
| the outbox's size bounded by the retention window; published events leave by whole partitions, never row by row | outbox $HH_MIB MiB at the end of a held run, $HF_MIB MiB without = **${R_MIB}x** (each run starts from a purged, VACUUMed outbox); events in it at the end: **$HH_ROWS** held (bound $HH_BOUND), $HF_ROWS free; retention ${HOLD_RETENTION} s (\`BENCH_HOLD_RETENTION\`), purge_published every second | $HELD_SIZE_VERDICT | $HELD_SIZE_WHY |
| the history's size bounded by the retention window; finished reservations and the transition log leave by whole partitions, never row by row | reservation, reservation_line and reservation_transition $HH_HMIB MiB at the end of a held run, $HF_HMIB MiB without = **${R_HMIB}x** (each run starts with no history); reservations in them at the end: **$HH_HROWS** held (bound $HH_HBOUND), $HF_HROWS free; purge_history every second with the same retention | $HIST_SIZE_VERDICT | $HIST_SIZE_WHY |

Each run: producers reserve and then cancel at a steady $HOLD_RATE
reservations/s (uniform reserve and cancel as \`bench_app\`, 8 clients,
\`test/bench/scripts/reserve_cancel_ext.sql\`, \`pgbench --rate=$HOLD_RATE -T
$HOLD_SECS\`: a rate the relay keeps up with here, so that every run
starts and ends with nothing unpublished; two events per reservation) in database bench_relay while one relay
publishes in the default poll mode (with the worker's
\`advance_outbox_low_water()\` every second beside it, 0.7, its
\`purge_published\` with a retention of $HOLD_RETENTION s, 0.8, and its
\`purge_history\` with the same retention, 0.9) and a probe
(\`test/bench/scripts/claim_probe.sql\`, 5 per second) claims at most one
event and gives it back, so that pgbench's per-transaction log times what
one claim costs as the run goes on. A held run has one more session that
opened a \`REPEATABLE READ\` transaction and read a table before the
producers started, and keeps it open until they stop; runs with and
without alternate over the rounds. Outbox size, events and dead rows
(\`pg_stat_user_tables.n_dead_tup\`, summed over the rings), and the same
of the history (reservation, reservation_line and reservation_transition,
summed over their rings) are read at the end, before the snapshot is let
go; the relay's lag
(\`published_at - created_at\`) over the run's events, sampled every
second before the purge and once more after the relay has published them
all.

| run | snapshot | producer tps | producer latency ms (average) | claim p50 / p99 ms, first third | claim p50 / p99 ms, last third | relay lag p50 / p99 ms | outbox MiB | dead rows | events in the outbox at the end / written | events left unpublished | history MiB | history dead rows | reservations kept / made |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
$HELD_ROWS

## Work check

Rows each competitor wrote per call, counted in the tables after the run
(round 1 of each point), and the keys of the JSON payload of its event:

$(workcheck_table)

\`inventory.check_invariants()\` over database bench after every scenario:
**$INV_BENCH row(s)** (0 = every competitor kept the counts, the ledger, the
pending/confirmed lines and the transition log consistent).
$(if [ "$INV_BENCH" != 0 ]; then echo; echo '```'; cat "$WORK/inv_bench.txt"; echo '```'; fi)

## Profile

A separate pass after the measurements: the server restarted with
\`shared_preload_libraries = 'pg_stat_statements'\` and
\`pg_stat_statements.track = all\` (so the statements the extension runs
through SPI are counted as nested statements), then pg_inventory reserve
as \`bench_app\` at 8 clients for ${SECS} s ($PROF_TPS tps with tracking on).
Top statements by total execution time:

$(profile_table)

"top" is the statement pgbench sent; its time includes the nested ones.
The time not in any nested statement is the C code itself, the function
call (\`SET search_path\`), and the parse/bind of pgbench's statement.
EOF
} >"$BENCH/RESULTS.md"

log "done in $(( (T1 - T0) / 60 )) min $(( (T1 - T0) % 60 )) s: test/bench/RESULTS.md$(all && echo ', test/bench/throughput.png, test/bench/flash_sale.png')"
