#!/usr/bin/env bash
# test/bench/cpu_profile.sh (`make bench-cpu`): the CPU cost of one reserve,
# measured in the server, and where it goes.  Not part of the test suite.
#
# pgbench figures on a shared 2-core machine move with everything else the
# machine runs.  This measures what the code costs instead: one backend runs
# ROUNDS x CALLS single-line reserves in a server-side loop (a DO block, one
# transaction per call, synchronous_commit = off, so no client, no network
# and no commit flush are in the figure) and the backend's own CPU time
# (utime + stime of /proc/PID/stat) is divided by the calls.  Competitors,
# interleaved round by round, each on the same catalog (tenant bench, 10,000
# SKUs, one location):
#
#   ext      inventory.reserve as the application role (tenant grant)
#   plpgsql  the PL/pgSQL baseline of test/bench/plpgsql_baseline.sql
#   floor    the durable work as ONE data-modifying CTE (reserve_floor.sql)
#   base     inventory.reserve of the older release BENCH_BASE (default
#            07eb55a, 0.4), built into a second private PostgreSQL copy and
#            run on a second server with the same settings; empty: none
#
# Then, where `perf` is installed, one more ext round under `perf record`
# and the share of the backend's time by phase (test/bench/cpu_phases.py).
# Then the memory of one backend over BENCH_CPU_MEMORY_CALLS reserves
# (1,000,000; 0: skipped), in chunks of a tenth: after each chunk the sum of
# its memory contexts (pg_backend_memory_contexts) and its private memory
# (RssAnon of /proc/PID/status; shared buffers it touched are not in it),
# so that growth per call shows (issue #12 asks for none).
# With BENCH_CPU_SCALE=1, the scale of data (issue #12): a third server of
# this build with BENCH_SCALE_SKUS SKUs (1,000,000) and BENCH_SCALE_HISTORY
# stored reservations (10,000,000, cancelled, with their lines and
# transitions; loaded in bulk by scale_load.sql, then check_invariants must
# find nothing), and competitor ext_big: the same reserve loop over all its SKUs,
# interleaved with the others.  The load takes minutes and gigabytes.
# Writes test/bench/CPU_PROFILE.md.  Knobs: BENCH_CPU_ROUNDS (5),
# BENCH_CPU_CALLS (4000), BENCH_CPU_MEMORY_CALLS (1000000), BENCH_BASE,
# BENCH_CPU_SCALE (0), BENCH_SCALE_SKUS, BENCH_SCALE_HISTORY,
# BENCH_CPU_SHARED_BUFFERS (2GB).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BENCH=$ROOT/test/bench
ROUNDS=${BENCH_CPU_ROUNDS:-5}
CALLS=${BENCH_CPU_CALLS:-4000}
MEM_CALLS=${BENCH_CPU_MEMORY_CALLS:-1000000}
SCALE=${BENCH_CPU_SCALE:-0}
SCALE_SKUS=${BENCH_SCALE_SKUS:-1000000}
SCALE_HISTORY=${BENCH_SCALE_HISTORY:-10000000}
BASE=${BENCH_BASE-07eb55a}
SYS_BIN=/usr/lib/postgresql/15/bin
WORK=$(mktemp -d /tmp/pg_inventory_cpu.XXXXXX)
chmod 755 "$WORK"
OUT=$BENCH/CPU_PROFILE.md
log() { printf '[bench-cpu %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
# shared_buffers: a quarter of this machine's memory would be 6 GB; 2 GB
# holds the working set of the scale database's catalog (1,000,000 SKUs:
# sku, stock_location and stock_slot with their indexes, about 500 MB) and
# the right-hand edges of the history's indexes (BENCH_CPU_SHARED_BUFFERS)
SETTINGS="shared_buffers = ${BENCH_CPU_SHARED_BUFFERS:-2GB}
synchronous_commit = off
max_wal_size = 8GB
checkpoint_timeout = 30min
autovacuum = off"

# build NAME REF: the extension from REF (empty: the working tree) into $WORK/NAME
# shellcheck source=test/bench/build.sh
source "$BENCH/build.sh"
build() {
	bench_build "$WORK/$1" "$WORK/src-$1" "$WORK/build-$1.log" "$2" ||
		die "build of ${2:-the working tree} failed"
}

# start NAME [BUILD]: a server NAME of build BUILD (default NAME) with a
# database bench and its catalog of 10,000 SKUs
start() {
	local b=${2:-$1}
	(
		PG_BIN=$WORK/$b/usr/lib/postgresql/15/bin PGI_DIR=$WORK/srv-$1
		PGI_PORT=$(pg_free_port 56532)
		PGI_CONF=$SETTINGS
		# shellcheck source=test/scripts/pg_env.sh
		source test/scripts/pg_env.sh
		PGI_PORT=$(pg_free_port 56532) pg_start >/dev/null
		echo "$PGPORT" >"$WORK/port-$1"
	)
	local q=(psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/srv-$1" -p "$(cat "$WORK/port-$1")" -U postgres)
	"${q[@]}" -d postgres -c 'CREATE DATABASE bench' -c 'CREATE ROLE bench_app LOGIN'
	"${q[@]}" -d bench <<'SQL'
CREATE EXTENSION pg_inventory;
GRANT USAGE ON SCHEMA inventory TO bench_app;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval) TO bench_app;
SELECT inventory.grant_tenant('bench', 'bench_app') \gset
SQL
	[ "$1" = big ] && return 0
	"${q[@]}" -d bench -c "SELECT count(inventory.restock('bench', concat('open-', s),
		concat('sku-', lpad(s::text, 5, '0')), 1000000000, 'opening stock')) FROM generate_series(1, 10000) s" >/dev/null
}
stop() {
	runuser -u postgres -- "$WORK/cur/usr/lib/postgresql/15/bin/pg_ctl" -D "$WORK/srv-$1/data" -w -m fast stop >/dev/null 2>&1 || true
}
cleanup() { stop cur; stop base; stop big; rm -rf "$WORK"; }

# load_big: SCALE_SKUS SKUs of tenant bench (named sku-0000001 on), each
# with an opening receipt of 1,000,000,000 units, and SCALE_HISTORY stored
# reservations over them with their lines and transitions: scale_load.sql
# (also make bench's database bench_scale), a bulk load by SQL of the rows
# the functions write (minutes where the functions would take hours);
# check_invariants checks the result
load_big() {
	psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/srv-big" -p "$(cat "$WORK/port-big")" -U postgres -d bench \
		-v skus="$SCALE_SKUS" -v history="$SCALE_HISTORY" -f "$BENCH/scale_load.sql"
	local broken
	broken=$(psql -X -q -At -h "$WORK/srv-big" -p "$(cat "$WORK/port-big")" -U postgres -d bench \
		-c "SELECT count(*) FROM inventory.check_invariants()")
	[ "$broken" = 0 ] || die "the bulk-loaded database breaks $broken invariant(s)"
}
trap cleanup EXIT
# shellcheck source=test/scripts/pg_env.sh
source test/scripts/pg_env.sh

# the loop of one competitor: N (default CALLS) reserves of distinct keys
# over the 10,000 SKUs, one transaction each
loop_sql() { # loop_sql COMPETITOR PREFIX [N]
	local call n=${3:-$CALLS}
	case $1 in
	ext | base | ext_big) call="PERFORM inventory.reserve('bench', v_key, v_sku, 1, interval '1 hour');" ;;
	plpgsql) call="PERFORM bench_plpgsql.reserve('bench', v_key, v_sku, 1, interval '1 hour');" ;;
	floor) call="$(sed -n '/^WITH c AS/,$p' "$BENCH/scripts/reserve_floor.sql" |
		sed -e "s/concat(:pfx::text, '-', :client_id::int, '-', :n::int)/v_key/" \
			-e "s/concat('sku-', lpad(:s::text, 5, '0'))/v_sku/")" ;;
	esac
	cat <<SQL
DO \$\$DECLARE i int; v_sku text; v_key text; BEGIN
	FOR i IN 1..$n LOOP
		v_key := '$2-' || i;
		v_sku := $(if [ "$1" = ext_big ]; then echo "'sku-' || lpad((1 + (i::bigint * 7919) % $SCALE_SKUS)::text, 7, '0')"; else echo "'sku-' || lpad((1 + (i * 7919) % 10000)::text, 5, '0')"; fi);
		$call
		COMMIT;
	END LOOP;
END\$\$;
SQL
}

# measure COMPETITOR ROUND: microseconds of backend CPU per call
measure() {
	local who=$1 srv=cur user=bench_app
	[ "$who" = base ] && srv=base
	[ "$who" = ext_big ] && srv=big
	[ "$who" = floor ] && user=postgres
	local q=(psql -X -q -v ON_ERROR_STOP=1 -At -h "$WORK/srv-$srv" -p "$(cat "$WORK/port-$srv")" -U postgres -d bench)
	rm -f "$WORK/cpu.a" "$WORK/cpu.b"
	{
		echo "SELECT pg_backend_pid() AS pid \\gset"
		echo "\\setenv BPID :pid"
		echo "\\! awk '{print \$14 + \$15}' /proc/\$BPID/stat > $WORK/cpu.a"
		if [ -n "${PERF_OUT:-}" ]; then echo "\\! (perf record -F 2000 -g -p \$BPID -o $PERF_OUT >/dev/null 2>&1 & echo \$! > $WORK/perf.pid; sleep 1)"; fi
		echo "SET ROLE $user;"
		loop_sql "$who" "$who-$2-$RANDOM"
		echo "RESET ROLE;"
		echo "\\! awk '{print \$14 + \$15}' /proc/\$BPID/stat > $WORK/cpu.b"
		if [ -n "${PERF_OUT:-}" ]; then echo "\\! kill -INT \$(cat $WORK/perf.pid); sleep 2"; fi
	} | "${q[@]}" -f - >/dev/null || die "the loop of $who failed"
	local a b tck
	a=$(cat "$WORK/cpu.a"); b=$(cat "$WORK/cpu.b"); tck=$(getconf CLK_TCK)
	echo $(((b - a) * 1000000 / tck / CALLS))
}

log "building the working tree${BASE:+ and $BASE}"
build cur ""
[ -n "$BASE" ] && build base "$BASE"
start cur
psql -X -q -v ON_ERROR_STOP=1 -h "$WORK/srv-cur" -p "$(cat "$WORK/port-cur")" -U postgres -d bench \
	-f "$BENCH/plpgsql_baseline.sql" \
	-c 'GRANT USAGE ON SCHEMA bench_plpgsql TO bench_app' \
	-c 'GRANT EXECUTE ON FUNCTION bench_plpgsql.reserve(text, text, text, integer, interval) TO bench_app' >/dev/null
COMPS="ext plpgsql floor"
if [ -n "$BASE" ]; then start base; COMPS="$COMPS base"; fi
if [ "$SCALE" = 1 ]; then
	log "scale: loading $SCALE_SKUS SKUs and $SCALE_HISTORY stored reservations into a third server"
	start big cur
	t0=$(date +%s)
	load_big
	LOAD_SECS=$(($(date +%s) - t0))
	BIG_SIZE=$(psql -X -At -h "$WORK/srv-big" -p "$(cat "$WORK/port-big")" -U postgres -d bench -c "SELECT pg_size_pretty(pg_database_size('bench'))")
	log "scale: loaded in $LOAD_SECS s, database $BIG_SIZE, check_invariants clean"
	COMPS="$COMPS ext_big"
fi
log "$ROUNDS rounds of $CALLS calls per competitor ($COMPS), interleaved"
: >"$WORK/res"
for r in $(seq "$ROUNDS"); do
	for c in $COMPS; do
		us=$(measure "$c" "$r") || die "round $r of $c failed"
		echo "$c $r $us" >>"$WORK/res"
		log "round $r $c: $us us CPU per call"
	done
done
median() { awk -v c="$1" '$1 == c {print $3}' "$WORK/res" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
spread() { awk -v c="$1" '$1 == c {print $3}' "$WORK/res" | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo "-" hi}'; }
best() { awk -v c="$1" '$1 == c {print $3}' "$WORK/res" | sort -n | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b / a}'; }
# both ratios of competitors a and b: of their best rounds (other load on
# the machine only adds CPU time to a round, so the best round is the least
# disturbed) and of their medians
ratios() { echo "**$(ratio "$(best "$1")" "$(best "$2")")x** of the best rounds ($(ratio "$(median "$1")" "$(median "$2")")x of the medians)"; }


PHASES=""
if command -v perf >/dev/null 2>&1; then
	log "one more ext round under perf record"
	PERF_OUT=$WORK/perf.data measure ext perf >/dev/null
	perf script -i "$WORK/perf.data" 2>/dev/null >"$WORK/perf.txt" || true
	PHASES=$(python3 "$BENCH/cpu_phases.py" "$WORK/perf.txt")
fi

# memory: one backend, MEM_CALLS reserves in ten chunks
MEMROWS=""
if [ "$MEM_CALLS" -gt 0 ]; then
	chunk=$((MEM_CALLS / 10))
	log "memory: $MEM_CALLS reserves in one backend, ten chunks of $chunk"
	{
		echo "SELECT pg_backend_pid() AS pid \\gset"
		echo "\\setenv BPID :pid"
		for k in $(seq 0 10); do
			if [ "$k" -gt 0 ]; then
				echo "SET ROLE bench_app;"
				loop_sql ext "mem-$k-$RANDOM" "$chunk"
				echo "RESET ROLE;"
			fi
			echo "SELECT $((k * chunk)) AS calls, sum(total_bytes) AS context_bytes FROM pg_backend_memory_contexts \\gset"
			echo "\\setenv CALLS :calls"
			echo "\\setenv CTX :context_bytes"
			echo "\\! echo \"\$CALLS \$CTX \$(awk '/^RssAnon/ {print \$2}' /proc/\$BPID/status)\" >> $WORK/mem"
		done
	} | psql -X -q -v ON_ERROR_STOP=1 -At -h "$WORK/srv-cur" -p "$(cat "$WORK/port-cur")" -U postgres -d bench -f - >/dev/null ||
		die "the memory run failed"
	MEMROWS=$(awk '{printf "| %d | %.1f | %.1f |\n", $1, $2 / 1048576, $3 / 1024}' "$WORK/mem")
	# growth from the end of the first chunk (caches warm) to the end
	MEMGROWTH=$(awk 'NR == 2 {c = $2; r = $3} END {printf "%.0f bytes of memory contexts and %.0f KiB of private memory over the last %d calls (%.3f bytes per call)", $2 - c, $3 - r, $1 - '"$chunk"', ($2 - c) / ($1 - '"$chunk"')}' "$WORK/mem")
fi

{
	echo "# pg_inventory: CPU per reserve call"
	echo
	echo "Generated by \`make bench-cpu\` (\`test/bench/cpu_profile.sh\`) on $(date -u '+%Y-%m-%d %H:%M') UTC from the working tree at $(git rev-parse --short HEAD); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo "$ROUNDS interleaved rounds of $CALLS single-line reserves per competitor, each in a server-side loop (one transaction per call, \`synchronous_commit = off\`, \`shared_buffers = ${BENCH_CPU_SHARED_BUFFERS:-2GB}\`): the backend's own CPU time (user + system) per call. No client, network or commit flush is in these figures; they are what the server spends on one call."
	echo
	echo "| competitor | best round us CPU per call | median | spread | calls per CPU-second (best) |"
	echo "|---|---|---|---|---|"
	for c in $COMPS; do
		b=$(best "$c")
		echo "| $c | $b | $(median "$c") | $(spread "$c") | $(awk -v m="$b" 'BEGIN {printf "%d", 1000000 / m}') |"
	done
	echo
	echo "Ratios (throughput per CPU, higher is better for pg_inventory):"
	echo
	echo "- pg_inventory against the PL/pgSQL baseline: $(ratios ext plpgsql) (issue #12 asks >= 1.3x)"
	echo "- pg_inventory against the one-statement floor: $(ratios ext floor) (issue #12 asks >= 0.8x)"
	[ "$SCALE" = 1 ] && echo "- with $SCALE_SKUS SKUs and $SCALE_HISTORY stored reservations (database $BIG_SIZE, bulk-loaded in $LOAD_SECS s, check_invariants clean) against 10,000 SKUs and no history: $(ratios ext_big ext) (issue #12 asks >= 0.8x)"
	[ -n "$BASE" ] && echo "- this build against $BASE ($(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$WORK/src-base/extension/pg_inventory.control")): $(ratios ext base) (issue #11 asks no slower beyond noise)"
	if [ -n "$MEMROWS" ]; then
		echo
		echo "## Memory of one backend over $MEM_CALLS calls"
		echo
		echo "One session as the application role, $MEM_CALLS reserves in ten chunks; after each, the sum of its memory contexts and its private resident memory (RssAnon: shared buffers are not in it)."
		echo
		echo "| calls | memory contexts MiB | private memory MiB |"
		echo "|---|---|---|"
		echo "$MEMROWS"
		echo
		echo "Growth after the first chunk: $MEMGROWTH."
	fi
	if [ -n "$PHASES" ]; then
		echo
		echo "## Where one call's time goes (perf, one more ext round)"
		echo
		echo "Share of the backend's samples by phase; a sample counts in the phase of the innermost frame of its stack that names one (test/bench/cpu_phases.py)."
		echo
		echo "$PHASES"
	fi
} >"$OUT"
cat "$OUT"
