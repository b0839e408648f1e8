#!/usr/bin/env bash
# test/bench/cluster.sh (`make bench-cluster`, and the end of `make bench`):
# pg_inventory on several nodes behind pg_inventory_router (issue #13,
# README "Several nodes"), measured on this machine.  Writes
# test/bench/CLUSTER.md.
#
#   router cost   reserve through the router against reserve directly on
#                 a node, the same tenants (those of node1), 8 clients,
#                 interleaved rounds: goal >= 0.7x direct; and directly on
#                 the node again, paced (pgbench -R) to the rate the router
#                 reached: what a call costs the node at that rate
#   1, 2, 3 nodes reserve through the router over 64 tenants (one per
#                 partition), 8 clients, on a fresh cluster of 1, 2 and 3
#                 nodes each round
#   CPU per call  of the router's server and of the nodes' servers, from
#                 their postmasters' children times (utime + stime of the
#                 backends, reaped when pgbench's connections close), for
#                 the model of N machines
#
# Every server is a throwaway one on loopback (test/scripts/cluster_env.sh,
# passwords on every TCP connection), synchronous_commit on, built from
# the working tree into a private copy of PostgreSQL (test/bench/build.sh)
# unless CLUSTER_PG_BIN names one already built (make bench passes its own).
#
# Knobs: BENCH_ROUNDS (3), BENCH_SECONDS (10; BENCH_QUICK=1: 5), BENCH_CLIENTS (8)
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
BENCH=$ROOT/test/bench
if [ -n "${BENCH_QUICK:-}" ]; then
	ROUNDS=${BENCH_ROUNDS:-1}
	SECS=${BENCH_SECONDS:-5}
else
	ROUNDS=${BENCH_ROUNDS:-3}
	SECS=${BENCH_SECONDS:-10}
fi
CLIENTS=${BENCH_CLIENTS:-8}
WORK=$(mktemp -d /tmp/pg_inventory_bench_cluster.XXXXXX)
chmod 755 "$WORK"
OUT=$BENCH/CLUSTER.md
RES=$WORK/results.tsv   # what nodes round tps router_us node_us
: >"$RES"
log() { printf '[bench-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

if [ -n "${CLUSTER_PG_BIN:-}" ]; then
	PG_BIN=$CLUSTER_PG_BIN
else
	SYS_BIN=/usr/lib/postgresql/15/bin
	# shellcheck source=test/bench/build.sh
	source "$BENCH/build.sh"
	bash test/scripts/deps.sh >/dev/null
	log "building pg_inventory and pg_inventory_router from the working tree into a private PostgreSQL copy"
	bench_build "$WORK/pg" "$WORK/src" "$WORK/build.log" || die "build failed"
	PG_BIN=$WORK/pg/usr/lib/postgresql/15/bin
fi
export PG_BIN PATH="$PG_BIN:$PATH"
# shellcheck source=test/scripts/cluster_env.sh
source test/scripts/cluster_env.sh
CLUSTER_CONF="shared_buffers = 256MB
synchronous_commit = on
jit = off"
trap 'cluster_destroy; rm -rf "$WORK"' EXIT


# cpu_ticks SERVER: utime + stime + cutime + cstime of its postmaster (the
# backends' times once they exited and were reaped), in clock ticks
cpu_ticks() {
	local pid
	pid=$(head -n 1 "$CLUSTER_DIR/$1/data/postmaster.pid")
	awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pid/stat"
}
# no_clients SERVER: wait (at most 10 s) until no client backend is left
no_clients() {
	local i
	for i in $(seq 100); do
		[ "$(cluster_val "$1" -c "SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# a fresh cluster of N nodes with the 64 tenants, 100 SKUs each
setup() { # setup N
	CLUSTER_DIR=$WORK/cluster
	cluster_destroy
	CLUSTER_DIR=$WORK/cluster cluster_start "$1" >"$WORK/start.log" 2>&1 || { cat "$WORK/start.log"; die "cluster of $1 did not start"; }
	cluster_role app app-secret
	cluster_role ops ops-secret
	local s
	for s in router $(for k in $(seq 1 "$1"); do echo "node$k"; done); do
		cluster_sql "$s" -c "GRANT USAGE ON SCHEMA inventory TO app, ops;
			GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval) TO app;
			GRANT EXECUTE ON FUNCTION inventory.restock(text, text, text, integer, text),
				inventory.grant_tenant(text, regrole) TO ops"
	done
	for k in $(seq 1 "$1"); do
		cluster_sql "node$k" -c "SELECT inventory.grant_tenant('*', 'ops')" >/dev/null
	done
	cluster_val router -c "SELECT string_agg(quote_literal(t), ', ' ORDER BY p) FROM (
		SELECT DISTINCT ON (inventory_router.partition_of(t)) inventory_router.partition_of(t) AS p, t
		  FROM (SELECT 'tenant-' || i AS t FROM generate_series(1, 5000) AS i) AS x
		 ORDER BY inventory_router.partition_of(t), t) AS y" >"$WORK/tenants"
	[ "$(tr ',' '\n' <"$WORK/tenants" | wc -l)" = 64 ] || die "not 64 tenants"
	PGPASSWORD=ops-secret psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" -U ops \
		-d inventory_router -c "SELECT count(inventory.grant_tenant(t, 'app')),
			count(inventory.restock(t, concat('open-', s), concat('sku-', s), 1000000000))
		FROM unnest(ARRAY[$(cat "$WORK/tenants")]) AS t, generate_series(1, 100) AS s" >/dev/null
	for s in router $(for k in $(seq 1 "$1"); do echo "node$k"; done); do
		[ "$s" = router ] || cluster_sql "$s" -c 'VACUUM ANALYZE' -c CHECKPOINT
	done
}

# the pgbench script: a reserve of one unit for a tenant of the list
script() { # script FILE TENANT-LIST
	local n
	n=$(tr ',' '\n' <<<"$2" | wc -l)
	cat >"$1" <<EOF
\\set t random(1, $n)
\\set s random(1, 100)
\\set n :n + 1
SELECT status FROM inventory.reserve((ARRAY[$2])[:t], concat(:pfx::text, '-', :client_id::int, '-', :n::int),
	concat('sku-', :s::int), 1, interval '1 hour');
EOF
}

# run WHAT NODES ROUND TARGET SCRIPT [RATE]: 8 clients for SECS seconds
# against TARGET (router or node1), at most RATE calls per second if given,
# with the CPU per call of the router's server and of the servers of nodes
# 1..NODES
run() {
	local what=$1 n=$2 round=$3 target=$4 sc=$5 rate=${6:-} port db r0 r1 nodes0=0 nodes1=0 k tps txns
	case $target in
	router) port=${CLUSTER_PORT[router]} db=inventory_router ;;
	*) port=${CLUSTER_PORT[$target]} db=inventory ;;
	esac
	r0=$(cpu_ticks router)
	for k in $(seq 1 "$n"); do nodes0=$((nodes0 + $(cpu_ticks "node$k"))); done
	PGPASSWORD=app-secret pgbench -n -M prepared -h 127.0.0.1 -p "$port" -U app "$db" \
		-c "$CLIENTS" -j 2 -T "$SECS" ${rate:+-R "$rate"} -D pfx="'$what.$n.$round'" -D n=0 -f "$sc" \
		>"$WORK/pgbench.$what.$n.$round.log" 2>&1 || { cat "$WORK/pgbench.$what.$n.$round.log"; die "pgbench $what $n $round"; }
	no_clients router || true
	for k in $(seq 1 "$n"); do no_clients "node$k" || true; done
	r1=$(cpu_ticks router)
	for k in $(seq 1 "$n"); do nodes1=$((nodes1 + $(cpu_ticks "node$k"))); done
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/pgbench.$what.$n.$round.log")
	txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.$what.$n.$round.log")
	local hz
	hz=$(getconf CLK_TCK)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$what" "$n" "$round" "$tps" \
		"$(awk -v a="$r0" -v b="$r1" -v t="$txns" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) * 1e6 / hz / t }')" \
		"$(awk -v a="$nodes0" -v b="$nodes1" -v t="$txns" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) * 1e6 / hz / t }')" >>"$RES"
	log "$(printf '%-8s %s node(s) round %s  %8.1f tps' "$what" "$n" "$round" "$tps")"
}

for r in $(seq 1 "$ROUNDS"); do
	for n in 1 2 3; do
		log "round $r: a cluster of $n node(s), 64 tenants x 100 SKUs"
		setup "$n"
		script "$WORK/all.sql" "$(cat "$WORK/tenants")"
		run spread "$n" "$r" router "$WORK/all.sql"
		if [ "$n" = 3 ]; then
			# node1's tenants, through the router and directly on node1
			mine=$(cluster_val router -c "SELECT string_agg(quote_literal(t), ', ') FROM unnest(ARRAY[$(cat "$WORK/tenants")]) AS t
				WHERE inventory_router.node_of(t) = 'node1'")
			script "$WORK/node1.sql" "$mine"
			# (the nodes' CPU: node1's, the node these calls run on)
			run direct 1 "$r" node1 "$WORK/node1.sql"
			run routed 1 "$r" router "$WORK/node1.sql"
			run paced 1 "$r" node1 "$WORK/node1.sql" \
				"$(awk -F'\t' -v r="$r" '$1 == "routed" && $3 == r { printf "%d", $4 }' "$RES")"
		fi
	done
done
cluster_destroy

med() { # med WHAT N COLUMN: the median over the rounds
	awk -F'\t' -v w="$1" -v n="$2" -v c="$3" '$1 == w && $2 == n { print $c }' "$RES" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit }
			printf "%.1f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
DIRECT=$(med direct 1 4); ROUTED=$(med routed 1 4); PACED=$(med paced 1 4)
RATIO=$(awk -v a="$ROUTED" -v b="$DIRECT" 'BEGIN { printf "%.2f", a / b }')
VERDICT=$(awk -v r="$RATIO" 'BEGIN { print (r >= 0.7) ? "**MET**" : "**NOT MET**" }')
R_US=$(med routed 1 5); D_US=$(med direct 1 6); N_US=$(med routed 1 6); P_US=$(med paced 1 6)
# a node's CPU per routed call on a machine of its own: a direct call at
# full rate plus the difference at equal rates
N_MODEL=$(awk -v d="$D_US" -v n="$N_US" -v p="$P_US" 'BEGIN { x = n - p; if (x < 0) x = 0; printf "%.1f", d + x }')
CORES=$(nproc)
{
	cat <<EOF
# pg_inventory on several nodes: benchmark

Written by \`make bench-cluster\` (test/bench/cluster.sh; also run by \`make
bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql extension test/bench/cluster.sh || echo ' with uncommitted changes'); $CORES cores, $ROUNDS round(s) of $SECS s per point, $CLIENTS clients,
medians over the rounds. Every server runs on this machine
(test/scripts/cluster_env.sh: passwords on every TCP connection,
synchronous_commit on); the router reaches the nodes over loopback.

## The router's cost (issue #13: >= 0.7x direct)

reserve of one unit, random SKU of 100, for the tenants node1 owns
(node1's share of the 64), 8 clients: through the router against directly
on node1, in the same round of a 3-node cluster; then directly on node1
again, paced (pgbench -R) to the rate the router reached in that round.
The nodes' CPU is node1's, where these calls run.

| path | median tps | router CPU per call | node1's CPU per call |
|---|---:|---:|---:|
| directly on node1 | $DIRECT | - | $D_US µs |
| through the router | $ROUTED | $R_US µs | $N_US µs |
| directly, paced to the router's rate | $PACED | - | $P_US µs |

**${RATIO}x** direct: $VERDICT (goal 0.7x).

Every server and pgbench share this machine's $CORES cores, so the ratio is
the machine's CPU per direct call over its CPU per routed call: about
$(awk -v t="$DIRECT" -v c="$CORES" 'BEGIN { printf "%.0f", c * 1e6 / t }') µs against $(awk -v t="$ROUTED" -v c="$CORES" 'BEGIN { printf "%.0f", c * 1e6 / t }') µs. Of the difference, the router's
server spends $R_US µs per call: the proxy function, PL/Proxy's three
lookups (the cluster's name, which takes the partition's lock in share
mode; the configuration's version; the partition: each a saved plan into
which pg_inventory_router 0.2 inlines its SQL), the call sent on a kept
connection over TCP and its result decoded. The rest is the node's: a
routed call costs node1 $N_US µs, a direct call $D_US µs at full rate but
$P_US µs at the router's rate. A call costs the node more at a lower rate
(fewer commits share a WAL flush; more wake-ups per call), and it is the
router's CPU, taken from the same cores, that lowers the rate. At equal
rates a routed call costs the node $(awk -v n="$N_US" -v p="$P_US" 'BEGIN { printf "%.0f", n - p }') µs more than a direct one
(PL/Proxy sends each call as a query the node parses and plans, over
TCP). With the
router on machines of its own, as in production, a node would serve routed
calls at about $(awk -v d="$D_US" -v m="$N_MODEL" 'BEGIN { printf "%.2f", d / m }')x its direct rate (its CPU per direct call over that
plus the difference at equal rates: the model below).

## 1, 2 and 3 nodes

reserve through the router over 64 tenants (one per partition), the
partitions spread evenly over the nodes, 8 clients:

| nodes | median tps | router CPU per call | nodes' CPU per call |
|---:|---:|---:|---:|
EOF
	for n in 1 2 3; do
		echo "| $n | $(med spread "$n" 4) | $(med spread "$n" 5) µs | $(med spread "$n" 6) µs |"
	done
	cat <<EOF

On one machine of $CORES cores, more nodes add no CPU: every node and the
router share the same cores. Here the throughput goes from $(med spread 1 4)
tps on 1 node to $(med spread 3 4) tps on 3, and the nodes' CPU per call
from $(med spread 1 6) to $(med spread 3 6) µs: each added server brings its
own background processes and cache, and each router backend keeps a
connection to every node, all scheduled on the same cores. These figures
cannot show scaling; what they do show is that routing does not
serialise the tenants (the router takes a partition's lock in share mode
only; a move takes it exclusively) and what a call costs each server,
which the model below turns into N machines.

## The model for N machines

A node serves C / (its CPU per call) calls per second on C cores; a router
C / (its CPU per call). On a node machine of its own a node runs at its
full rate: a routed call costs it what a direct call costs at full rate
($D_US µs) plus what a routed call costs more at equal rates (above):
$N_MODEL µs, commit flushes included; the router $R_US µs. A cluster of N
node machines of C cores behind R router machines of C cores serves about

    min(N x C / ${N_MODEL}µs, R x C / ${R_US}µs)

reserves per second, as long as the tenants spread over the partitions
(one tenant's calls always go to one node: a single tenant is served at
most at one node's rate) and the nodes' disks keep up with their commits.
For example, with C = 8: $(awk -v n="$N_MODEL" -v c=8 'BEGIN { printf "%.0f", c * 1e6 / n }') calls/s per node machine and
$(awk -v r="$R_US" -v c=8 'BEGIN { printf "%.0f", c * 1e6 / r }') per router machine: about $(awk -v n="$N_MODEL" -v r="$R_US" 'BEGIN { printf "%.1f", n / r }') node machines per router machine.
Routers hold no state but the placement: run several behind a pooler and
add them as nodes are added.

## Raw figures

| point | nodes | round | tps | router µs/call | nodes µs/call |
|---|---:|---:|---:|---:|---:|
EOF
	awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$RES"
} >"$OUT"
log "done: test/bench/CLUSTER.md (router ${RATIO}x direct)"
