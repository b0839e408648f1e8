#!/usr/bin/env bash
# test/scripts/router_test.sh: pg_inventory on three nodes behind one
# router (pg_inventory_router, PL/Proxy; README "Several nodes").
#
# Starts its own cluster on loopback (cluster_env.sh: three node servers
# and a router server, passwords on every TCP connection, the router's
# passfile) and removes it on exit.  Checks:
#   - the contract's tenant-scoped calls (test/router/contract.sql), run as
#     the application role, give through the router exactly what they give
#     on one node, SQLSTATEs included;
#   - each tenant's rows are on the node its partition is placed on, and on
#     no other; reservation ids are unique across the nodes;
#   - grants made through the router: a tenant's on its node, * on every
#     node; the node checks the caller's role (42501 through the router);
#   - the fan-out calls see every node: check_invariants reports a counter
#     broken on one node, expire_due expires on all three, outbox_metrics
#     counts every node's events, worker_status has a row per node;
#   - with one node stopped, tenants on the others keep working and a call
#     for the stopped node's tenant fails within seconds; once it is back,
#     its data is there and calls work again;
#   - a partition moved (inventory_router.move_partition) while 8 clients
#     reserve and confirm through the router, 4 of them for a tenant of the
#     partition: every call completes, nothing is lost or doubled, the
#     events move along, the invariants hold; a refused move changes
#     nothing (unknown node, rows on the target, inside a transaction
#     block), nor one a direct write on the source aborts (40001);
#     resolve_moves finishes or undoes an interrupted move and leaves a
#     running one alone; a call at REPEATABLE READ (0A000); connection
#     strings that could name a user refused.
# Prints TAP (1..N, ok/not ok) and exits non-zero on any failure.
#
#   PG_BIN   PostgreSQL binaries (default /usr/lib/postgresql/15/bin); make
#            test points it at its private copy with the fresh extensions
#   KEEP_WORK=1  keep the outputs (contract runs, pgbench logs) in
#            /tmp/pg_inventory_router_test.*

set -u

cd "$(dirname "$0")/../.."
ROOT=$PWD
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
# shellcheck source=test/scripts/cluster_env.sh
source test/scripts/cluster_env.sh
# shellcheck source=test/scripts/tap.sh
source test/scripts/tap.sh

PLAN=42
WORK=$(mktemp -d /tmp/pg_inventory_router_test.XXXXXX)
chmod 755 "$WORK"   # the servers run as postgres under it
CLUSTER_DIR=$WORK/cluster
trap 'cluster_destroy; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

plan $PLAN

if ! cluster_start 3 >"$WORK/start.log" 2>&1; then
	cat "$WORK/start.log"
	not_ok "the cluster (3 nodes and a router) starts"
	tap_done
	exit 1
fi
ok "the cluster (3 nodes and a router) starts"

# the router as an operator who installed 0.1 and updates it later (below):
# the same nodes and placement
renodes=$(cluster_val router -c "SELECT string_agg(pg_catalog.format('SELECT inventory_router.set_node(%L, %L);', name, connstr), ' ' ORDER BY name)
	FROM inventory_router.node")
cluster_sql router -c 'DROP EXTENSION pg_inventory_router' \
	-c "CREATE EXTENSION pg_inventory_router VERSION '0.1'" -c "$renodes" \
	-c "SELECT inventory_router.place_partitions(ARRAY['node1', 'node2', 'node3'])" >/dev/null ||
	not_ok "pg_inventory_router 0.1 installed"

# a node of its own for the same calls on one server: node1's server, a
# database "single"
psql -X -q -h "$CLUSTER_DIR/node1" -p "${CLUSTER_PORT[node1]}" -U postgres -d postgres \
	-c 'CREATE DATABASE single'
psql -X -q -h "$CLUSTER_DIR/node1" -p "${CLUSTER_PORT[node1]}" -U postgres -d single \
	-c 'CREATE EXTENSION pg_inventory'

cluster_role app app-secret
cluster_role ops ops-secret
# the same grants on every database: the application's functions to app,
# the operator's to ops (README, "Roles"); ops acts for every tenant
GRANTS="GRANT USAGE ON SCHEMA inventory TO app, ops;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval), inventory.confirm(text, text),
	inventory.cancel(text, text, text), inventory.lookup(text, text),
	inventory.compensate(text, text, text), inventory.extend(text, text, timestamptz),
	inventory.amend(text, text, jsonb), inventory.availability(text, text[]) TO app;
GRANT EXECUTE ON FUNCTION inventory.restock(text, text, text, integer, text),
	inventory.adjust(text, text, text, bigint, text, text), inventory.expire_due(integer),
	inventory.check_invariants(), inventory.worker_status(),
	inventory.grant_tenant(text, regrole), inventory.revoke_tenant(text, regrole) TO ops;
GRANT SELECT ON inventory.outbox_metrics TO ops;"
for s in node1 node2 node3 router; do
	cluster_sql "$s" -c "$GRANTS" || not_ok "grants on $s"
done
psql -X -q -h "$CLUSTER_DIR/node1" -p "${CLUSTER_PORT[node1]}" -U postgres -d single -c "$GRANTS"
for s in node1 node2 node3; do
	cluster_sql "$s" -c "SELECT inventory.grant_tenant('*', 'ops')" >/dev/null
done
psql -X -q -h "$CLUSTER_DIR/node1" -p "${CLUSTER_PORT[node1]}" -U postgres -d single \
	-c "SELECT inventory.grant_tenant('*', 'ops')" >/dev/null

# ALTER EXTENSION pg_inventory_router UPDATE in a session that has called
# through the router (PL/Proxy's saved plans name functions the update
# replaces): its calls go on; then the router is the current version
check "the router updated from 0.1 while a session calls through it: its calls before and after succeed" \
	"0.1|5|0.2|10|0.2" "$(cluster_val router -v ON_ERROR_STOP=1 \
		-c "SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory_router'" \
		-c 'SET ROLE ops' -c "SELECT inventory.restock('upgraded', 'u-1', 'sku-u', 5)" \
		-c 'RESET ROLE' -c 'ALTER EXTENSION pg_inventory_router UPDATE' \
		-c "SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory_router'" \
		-c 'SET ROLE ops' -c "SELECT inventory.restock('upgraded', 'u-2', 'sku-u', 5)" \
		-c 'RESET ROLE' -c "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_inventory_router'" 2>&1 | paste -sd'|')"

# as ROLE through TCP with its password: on the router, or on the single node
as() { # as ROLE TARGET psql-args...
	local role=$1 target=$2 port db
	shift 2
	case $target in
	router) port=${CLUSTER_PORT[router]} db=inventory_router ;;
	single) port=${CLUSTER_PORT[node1]} db=single ;;
	node*) port=${CLUSTER_PORT[$target]} db=inventory ;;
	esac
	PGPASSWORD=$role-secret psql -X -h 127.0.0.1 -p "$port" -U "$role" -d "$db" "$@"
}
qa() { as "$@" -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=sqlstate; }
# hold SERVER SQL: a session on SERVER that runs BEGIN and SQL (a lock) and
# keeps its transaction open until release
hold() {
	rm -f "$WORK/hold.in"
	mkfifo "$WORK/hold.in"
	cluster_sql "$1" -c "BEGIN" -c "$2" -f "$WORK/hold.in" >/dev/null 2>&1 &
	hold_pid=$!
	exec 7>"$WORK/hold.in"
}
release() {
	echo "COMMIT;" >&7
	exec 7>&-
	wait "$hold_pid"
}
# until_prepared NODE NODE: wait (at most 30 s) until both nodes hold a
# prepared transaction (a move's halves)
until_prepared() {
	local deadline=$((SECONDS + 30))
	until [ "$(cluster_val "$1" -c "SELECT count(*) FROM pg_prepared_xacts")" -ge 1 ] &&
		[ "$(cluster_val "$2" -c "SELECT count(*) FROM pg_prepared_xacts")" -ge 1 ] ||
		[ $SECONDS -ge $deadline ]; do sleep 0.05; done
}

# ------------------------------------------------------------ the contract
for target in single router; do
	as ops "$target" -f test/router/contract_setup.sql >"$WORK/setup.$target.out" 2>&1
	as app "$target" -f test/router/contract.sql >"$WORK/contract.$target.out" 2>&1
done
check "the operator's set-up gives the same results through the router as on one node" \
	"diff -u $WORK/setup.single.out $WORK/setup.router.out"
check "the contract's calls give the same outcomes and SQLSTATEs through the router as on one node" \
	"diff -u $WORK/contract.single.out $WORK/contract.router.out"
check "the contract run raised the errors it is made to raise (IN001 2, IN002 1, 22023 7, 42501 3)" \
	"2 1 7 3" "$(for e in IN001 IN002 22023 42501; do grep -c "ERROR:  $e\$" "$WORK/contract.router.out"; done | tr '\n' ' ' | sed 's/ $//')"

# ------------------------------------------------------------ placement
TENANTS="'acme', 'hooli', 'initech', 'tyrell', 'umbrella', 'globex'"
# and the tenant the update check above restocked
expected=$(cluster_val router -c "SELECT string_agg(t || '=' || inventory_router.node_of(t), ' ' ORDER BY t)
	FROM unnest(ARRAY[$TENANTS, 'upgraded']) AS t")
got=$(for k in 1 2 3; do
	cluster_val "node$k" -c "SELECT t || '=node$k' FROM (
		SELECT tenant AS t FROM inventory.stock_slot UNION SELECT tenant FROM inventory.reservation
		UNION SELECT tenant FROM inventory.stock_ledger UNION SELECT tenant FROM inventory.outbox
		UNION SELECT tenant FROM inventory.tenant_grant WHERE tenant <> '*') AS x"
done | sort | tr '\n' ' ' | sed 's/ $//')
check "every tenant's rows (stock, reservations, ledger, events, grants) are on its node only" "$expected" "$got"
check "the tenants lie on all three nodes" \
	"[ \"\$(printf '%s\n' $expected | sed 's/.*=//' | sort -u | wc -l)\" = 3 ]"
ids=$(for k in 1 2 3; do cluster_val "node$k" -c "SELECT id FROM inventory.reservation"; done)
check "reservation ids are unique across the nodes (node numbers 1, 2, 3)" \
	"$(printf '%s\n' "$ids" | wc -l)" "$(printf '%s\n' "$ids" | sort -u | wc -l)"

# ------------------------------------------------------------ grants
check "a tenant not granted to app: 42501 through the router" \
	"42501" "$(qa app router -c "SELECT status FROM inventory.reserve('wayne', 'w-1', 'sku-1', 1)" 2>&1 | sed -n 's/^ERROR:  //p')"
qa ops router -c "SELECT inventory.restock('wayne', 'open-1', 'sku-1', 5)" >/dev/null
# the operator finds wayne's node as README section 10 grants it (node_of
# reads the placement as its owner)
cluster_sql router -c "GRANT EXECUTE ON FUNCTION inventory_router.node_of(text) TO ops"
check "ops grants wayne to app through the router: on wayne's node only, the node ops finds with node_of" \
	"t|$(qa ops router -c "SELECT inventory_router.node_of('wayne')" 2>&1)" \
	"$(qa ops router -c "SELECT inventory.grant_tenant('wayne', 'app')")|$(for k in 1 2 3; do
		cluster_val "node$k" -c "SELECT 'node$k' FROM inventory.tenant_grant WHERE tenant = 'wayne'"; done)"
check "then app reserves for wayne through the router" \
	"reserved" "$(qa app router -c "SELECT status FROM inventory.reserve('wayne', 'w-1', 'sku-1', 1)")"
check "revoked through the router: 42501 again" \
	"t|42501" "$(qa ops router -c "SELECT inventory.revoke_tenant('wayne', 'app')")|$(qa app router -c "SELECT status FROM inventory.lookup('wayne', 'w-1')" 2>&1 | sed -n 's/^ERROR:  //p')"
cluster_role auditor auditor-secret
for s in node1 node2 node3 router; do
	cluster_sql "$s" -c "GRANT USAGE ON SCHEMA inventory TO auditor;
		GRANT EXECUTE ON FUNCTION inventory.lookup(text, text) TO auditor"
done
check "a grant of * through the router reaches every node" \
	"t|3" "$(qa ops router -c "SELECT inventory.grant_tenant('*', 'auditor')")|$(for k in 1 2 3; do
		cluster_val "node$k" -c "SELECT 1 FROM inventory.tenant_grant WHERE tenant = '*' AND member = 'auditor'::regrole"; done | wc -l)"
check "then auditor looks up any tenant's reservation through the router" \
	"reserved|reserved|reserved" "$(for t in acme initech wayne; do
		k=$([ $t = wayne ] && echo w-1 || echo order-1)
		[ $t = initech ] && k=order-3
		qa auditor router -c "SELECT CASE WHEN status IN ('reserved', 'confirmed', 'compensated') THEN 'reserved' ELSE status END FROM inventory.lookup('$t', '$k')"
	done | tr '\n' '|' | sed 's/|$//')"

# ------------------------------------------------------------ fan-out
check "check_invariants through the router: clean on every node" \
	"" "$(qa ops router -c "SELECT * FROM inventory.check_invariants()")"
broken=$(cluster_val router -c "SELECT inventory_router.node_of('initech')")
cluster_sql "$broken" -c "ALTER TABLE inventory.stock_slot DISABLE TRIGGER USER" \
	-c "UPDATE inventory.stock_slot SET available = available + 1 WHERE tenant = 'initech' AND sku = 'sku-2'" \
	-c "ALTER TABLE inventory.stock_slot ENABLE TRIGGER USER" >/dev/null 2>&1
check "a counter broken on $broken: check_invariants through the router names it" \
	"initech|sku-2" "$(qa ops router -c "SELECT DISTINCT tenant, sku FROM inventory.check_invariants()")"
cluster_sql "$broken" -c "ALTER TABLE inventory.stock_slot DISABLE TRIGGER USER" \
	-c "UPDATE inventory.stock_slot SET available = available - 1 WHERE tenant = 'initech' AND sku = 'sku-2'" \
	-c "ALTER TABLE inventory.stock_slot ENABLE TRIGGER USER" >/dev/null 2>&1
pending=$(for k in 1 2 3; do cluster_val "node$k" -c "SELECT count(*) FROM inventory.reservation WHERE state = 'pending'"; done | tr '\n' ' ')
# the operator's sessions on the nodes see the clock two hours on: every
# pending hold is due (the nodes' own sessions are not touched)
for k in 1 2 3; do
	cluster_sql "node$k" -c "ALTER ROLE ops IN DATABASE inventory SET pg_inventory.frozen_now = '$(date -u -d '+2 hours' '+%Y-%m-%d %H:%M:%S+00')'"
done
total=$(echo "$pending" | awk '{ print $1 + $2 + $3 }')
check "expire_due through the router expires the due holds of all three nodes ($pending)" \
	"$total|0 0 0" "$(qa ops router -c "SELECT inventory.expire_due(1000)")|$(for k in 1 2 3; do cluster_val "node$k" -c "SELECT count(*) FROM inventory.reservation WHERE state = 'pending'"; done | tr '\n' ' ' | sed 's/ $//')"
check "outbox_metrics through the router counts every node's unpublished events" \
	"$(for k in 1 2 3; do cluster_val "node$k" -c "SELECT count(*) FROM inventory.outbox WHERE published_at IS NULL"; done | awk '{ s += $1 } END { print s }')" \
	"$(qa ops router -c "SELECT unpublished FROM inventory.outbox_metrics")"
check "worker_status through the router: a row per node" \
	"3" "$(qa ops router -c "SELECT count(*) FROM inventory.worker_status()")"

# ------------------------------------------------------------ a node stopped
# under load: one client per tenant of the other nodes reserves and
# confirms through the router for 4 s, and the node stops meanwhile
down=$(cluster_val router -c "SELECT inventory_router.node_of('umbrella')")
k_down=${down#node}
up_tenants=$(cluster_val router -c "SELECT string_agg(t, ' ' ORDER BY t) FROM unnest(ARRAY[$TENANTS]) AS t
	WHERE inventory_router.node_of(t) <> '$down'")
qa ops router -c "SELECT count(inventory.restock(t, 'down-load', 'sku-1', 1000))
	FROM unnest(string_to_array('$up_tenants', ' ')) AS t" >/dev/null
load_pids=()
for t in $up_tenants; do
	PGPASSWORD=app-secret "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" -U app \
		inventory_router -c 1 -T 4 -D tenant="'$t'" -D pfx="'down'" -D n=0 \
		-f test/router/reserve_confirm.sql >"$WORK/pgbench.down.$t.log" 2>&1 &
	load_pids+=($!)
done
deadline=$((SECONDS + 30))
until [ "$(qa app router -c "SELECT count(*) FROM unnest(string_to_array('$up_tenants', ' ')) AS t,
		LATERAL inventory.lookup(t, 'down-0-10') AS o WHERE o.status <> 'not_found'")" -ge 1 ] ||
	[ $SECONDS -ge $deadline ]; do sleep 0.05; done
cluster_stop_node "$k_down" fast
running=0
for p in "${load_pids[@]}"; do kill -0 "$p" 2>/dev/null && running=$((running + 1)); done
load_rc=0
for p in "${load_pids[@]}"; do wait "$p" || load_rc=1; done
load_failed=$(for t in $up_tenants; do
	sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/pgbench.down.$t.log"; done | tr '\n' ' ')
made=$(for t in $up_tenants; do
	qa app router -c "SELECT count(*) FILTER (WHERE o.state = 'confirmed') FROM generate_series(1, 20) AS g,
		LATERAL inventory.lookup('$t', 'down-0-' || g) AS o"; done | tr '\n' ' ')
check "$down stopped under load: the load still ran once it was down, and every call for the tenants of the other nodes completed ($up_tenants: no failed call, their first 20 confirmed)" \
	"running|0|$(for t in $up_tenants; do echo 0; done | tr '\n' ' ')|$(for t in $up_tenants; do echo 20; done | tr '\n' ' ')" \
	"$([ "$running" -ge 1 ] && echo running || echo finished)|$load_rc|$load_failed|$made"

t0=$SECONDS
err=$(qa app router -c "SELECT status FROM inventory.reserve('umbrella', 'while-down', 'sku-1', 1)" 2>&1)
check "$down stopped: a call for its tenant fails within 5 s, naming the connection" \
	"[ $((SECONDS - t0)) -le 5 ] && printf '%s' \"\$err\" | grep -q '^ERROR:  XX000'"
cluster_start_node "$k_down"
check "$down back: its tenant's data is there and calls work again" \
	"confirmed|reserved" "$(qa app router -c "SELECT state FROM inventory.lookup('umbrella', 'cart-1')")|$(qa app router -c "SELECT status FROM inventory.reserve('umbrella', 'while-down', 'sku-1', 1)")"
# ------------------------------------------------------------ moving a partition
cluster_role mover mover-secret SUPERUSER
P=$(cluster_val router -c "SELECT inventory_router.partition_of('acme')")
from=$(cluster_val router -c "SELECT inventory_router.node_of('acme')")
to=$(cluster_val router -c "SELECT name FROM inventory_router.node WHERE name <> '$from' ORDER BY name LIMIT 1")
check "a move to an unknown node is refused (22023), to a node that holds rows of the partition too (55000)" \
	"22023|55000" "$(qa mover router -c "CALL inventory_router.move_partition($P, 'nowhere')" 2>&1 | sed -n 's/^ERROR:  //p')|$(
		cluster_sql "$to" -c "INSERT INTO inventory.location (tenant, location, created_at, updated_at) VALUES ('acme', 'stray', now(), now())" &&
		qa mover router -c "CALL inventory_router.move_partition($P, '$to')" 2>&1 | sed -n 's/^ERROR:  //p';
		cluster_sql "$to" -c "DELETE FROM inventory.location WHERE tenant = 'acme'")"
qa ops router -c "SELECT inventory.restock(t, 'load', 'sku-1', 1000) FROM unnest(ARRAY['acme', 'hooli']) AS t" >/dev/null
# reserve + confirm for acme (partition $P) and for hooli (elsewhere) from
# 4 clients each through the router, while the partition moves
for t in acme hooli; do
	PGPASSWORD=app-secret "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" -U app \
		inventory_router -c 4 -j 2 -t 60 -D tenant="'$t'" -D pfx="'mv'" -D n=0 \
		-f test/router/reserve_confirm.sql >"$WORK/pgbench.$t.log" 2>&1 &
	eval "pid_$t=\$!"
done
# move once acme has confirmed 40 of its 240 (the load runs on both sides
# of the move: checked below)
deadline=$((SECONDS + 60))
until [ "$(cluster_val "$from" -c "SELECT count(*) FROM inventory.reservation
		WHERE tenant = 'acme' AND request_key LIKE 'mv-%' AND state = 'confirmed'")" -ge 40 ] ||
	[ $SECONDS -ge $deadline ]; do sleep 0.05; done
qa mover router -c "CALL inventory_router.move_partition($P, '$to')" >"$WORK/move.log" 2>&1
move_rc=$?
at_move=$(cluster_val "$to" -c "SELECT count(*) FROM inventory.reservation WHERE tenant = 'acme' AND request_key LIKE 'mv-%'")
wait "$pid_acme"; rc_acme=$?
wait "$pid_hooli"; rc_hooli=$?
check "partition $P (acme) moves from $from to $to under load" \
	"0|$to" "$move_rc|$(cluster_val router -c "SELECT inventory_router.node_of('acme')")"
check "every call of the load completed: 240 reserve+confirm for acme, 240 for hooli, none failed" \
	"0 0|240|240" "$rc_acme $rc_hooli|$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.acme.log")|$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.hooli.log")"
check "the load ran on both sides of the move (some of acme's calls after it)" \
	"[ $at_move -lt 240 ]"
check "nothing lost, nothing doubled: acme's 240 reservations are on $to once each, confirmed; none left on $from" \
	"240|240|0" "$(cluster_val "$to" -c "SELECT count(*), count(DISTINCT request_key) FILTER (WHERE state = 'confirmed') FROM inventory.reservation WHERE tenant = 'acme' AND request_key LIKE 'mv-%'" | tr '|' '|')|$(cluster_val "$from" -c "SELECT count(*) FROM inventory.partition_rows($P)")"
check "acme's events moved with it: one reserved and one confirmed event per reservation of the load, unpublished, on $to" \
	"240|240" "$(cluster_val "$to" -c "SELECT count(*) FILTER (WHERE event_type = 'reservation.reserved'), count(*) FILTER (WHERE event_type = 'reservation.confirmed') FROM inventory.outbox WHERE tenant = 'acme' AND payload->>'request_key' LIKE 'mv-%' AND published_at IS NULL")"
check "acme's stock after the move: the receipts less what the load and the contract consumed or hold" \
	"$(cluster_val "$to" -c "SELECT sum(delta) FROM inventory.stock_ledger WHERE tenant = 'acme' AND sku = 'sku-1'")" \
	"$(cluster_val "$to" -c "SELECT sum(available + reserved + consumed) FROM inventory.stock_slot WHERE tenant = 'acme' AND sku = 'sku-1'")"
check "check_invariants through the router: clean on every node after the move" \
	"" "$(qa ops router -c "SELECT * FROM inventory.check_invariants()")"
# an interrupted move: the source prepared its half, the router did not
# switch (resolve_moves undoes it), then one where it did (it commits it)
gid="pg_inventory_move.${P}.${to}.${from}"
before_total=$(cluster_val "$to" -c "SELECT count(*) FROM inventory.reservation WHERE tenant = 'acme'")
cluster_sql "$to" -c "BEGIN" -c "SELECT inventory.partition_freeze($P)" -c "SELECT inventory.partition_delete($P)" \
	-c "PREPARE TRANSACTION '$gid'" >/dev/null
qa mover router -c "CALL inventory_router.resolve_moves()" >/dev/null 2>&1
check "resolve_moves undoes the prepared half of a move the router did not switch: acme still whole on $to" \
	"0|$before_total" "$(cluster_val "$to" -c "SELECT count(*) FROM pg_prepared_xacts")|$(cluster_val "$to" -c "SELECT count(*) FROM inventory.reservation WHERE tenant = 'acme'")"
cluster_sql "$from" -c "BEGIN" -c "INSERT INTO inventory.location (tenant, location, created_at, updated_at) VALUES ('acme', 'stray', now(), now())" \
	-c "PREPARE TRANSACTION '$gid'" >/dev/null
cluster_sql router -c "UPDATE inventory_router.placement SET node = '$from' WHERE partition = $P" >/dev/null
qa mover router -c "CALL inventory_router.resolve_moves()" >/dev/null 2>&1
check "resolve_moves commits the prepared half where the router did switch" \
	"0|1" "$(cluster_val "$from" -c "SELECT count(*) FROM pg_prepared_xacts")|$(cluster_val "$from" -c "SELECT count(*) FROM inventory.location WHERE tenant = 'acme' AND location = 'stray'")"
cluster_sql "$from" -c "DELETE FROM inventory.location WHERE tenant = 'acme' AND location = 'stray'" >/dev/null
cluster_sql router -c "UPDATE inventory_router.placement SET node = '$to' WHERE partition = $P" >/dev/null

# acme is on $to again.  A move that cannot be done changes nothing:
# inside a transaction block (2D000), a direct write on the source while it
# copies (40001: the write would be deleted unseen)
acme_rows=$(cluster_val "$to" -c "SELECT count(*) FROM inventory.partition_rows($P)")
check "CALL move_partition inside a transaction block: 2D000 before anything, acme stays whole on $to" \
	"2D000|$to|$acme_rows|0" "$(qa mover router -c "BEGIN" -c "CALL inventory_router.move_partition($P, '$from')" 2>&1 | sed -n 's/^ERROR:  //p')|$(
		cluster_val router -c "SELECT inventory_router.node_of('acme')")|$(
		cluster_val "$to" -c "SELECT count(*) FROM inventory.partition_rows($P)")|$(
		cluster_val "$from" -c "SELECT count(*) FROM inventory.partition_rows($P)")"
# a share lock on the source's reservation_archive: the move copies, then
# waits to delete (in the snapshot it copied in); meanwhile ops restocks a
# new SKU directly on the source; then let the move go on
hold "$to" "LOCK TABLE inventory.reservation_archive IN SHARE MODE"
qa mover router -c "CALL inventory_router.move_partition($P, '$from')" >"$WORK/move2.log" 2>&1 &
move2_pid=$!
deadline=$((SECONDS + 30))
until [ "$(cluster_val "$to" -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_inventory_router_move' AND wait_event_type = 'Lock'")" -ge 1 ] ||
	[ $SECONDS -ge $deadline ]; do sleep 0.05; done
direct=$(qa ops "$to" -c "SELECT inventory.restock('acme', 'direct-1', 'sku-direct', 5)")
release
wait "$move2_pid"
check "a direct write on the source while the move copies: 40001, nothing moved, the write kept" \
	"5|40001|$to|0|1" "$direct|$(sed -n 's/^ERROR:  //p' "$WORK/move2.log")|$(cluster_val router -c "SELECT inventory_router.node_of('acme')")|$(
		cluster_val "$from" -c "SELECT count(*) FROM inventory.partition_rows($P)")|$(
		cluster_val "$to" -c "SELECT count(*) FROM inventory.stock_ledger WHERE tenant = 'acme' AND request_key = 'direct-1'")"
check "after it, no prepared transaction and no lock is left, calls for acme go on" \
	"0|0|reserved" "$(cluster_val "$to" -c "SELECT count(*) FROM pg_prepared_xacts")|$(cluster_val "$from" -c "SELECT count(*) FROM pg_prepared_xacts")|$(
		qa app router -c "SELECT status FROM inventory.reserve('acme', 'after-40001', 'sku-1', 1)")"
check "a call inside a REPEATABLE READ transaction on the router: 0A000 (it would route by an old placement)" \
	"0A000" "$(qa app router -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SELECT status FROM inventory.lookup('acme', 'after-40001')" 2>&1 | sed -n 's/^ERROR:  //p')"
check "a node's connection string as a URI or with service=: refused (22023)" \
	"22023|22023" "$(cluster_sql router -v VERBOSITY=sqlstate -c "SELECT inventory_router.set_node('node9', 'postgresql://127.0.0.1/inventory?user=mover')" 2>&1 | sed -n 's/^ERROR:  //p')|$(
		cluster_sql router -v VERBOSITY=sqlstate -c "SELECT inventory_router.set_node('node9', 'service=inv')" 2>&1 | sed -n 's/^ERROR:  //p')"
# a move held at its switch (a session holds the configuration's version
# row): both nodes have prepared their half; resolve_moves leaves the
# running move alone, then the move finishes; by a superuser whose name
# needs quoting
cluster_role Mover2 Mover2-secret SUPERUSER
hold router "SELECT * FROM inventory_router.cluster_version FOR UPDATE"
qa Mover2 router -c "CALL inventory_router.move_partition($P, '$from')" >"$WORK/move3.log" 2>&1 &
move3_pid=$!
until_prepared "$from" "$to"
resolved=$(as mover router -q -c "CALL inventory_router.resolve_moves()" 2>&1 | grep -c 'still running')
release
wait "$move3_pid"; rc3=$?
check "resolve_moves leaves a move that is still running alone; the move (by \"Mover2\") then finishes" \
	"2|0|$from|0|0" "$resolved|$rc3|$(cluster_val router -c "SELECT inventory_router.node_of('acme')")|$(
		cluster_val "$to" -c "SELECT count(*) FROM inventory.partition_rows($P)")|$(
		cluster_val "$from" -c "SELECT count(*) FROM pg_prepared_xacts")"

# a move killed after both nodes prepared, before its decision: a call
# for the partition then waits on the source (the prepared half holds the
# stock's row locks) with the partition's lock shared on the router;
# resolve_moves must not wait for it: it undoes both halves, the call
# completes on the source
hold router "SELECT * FROM inventory_router.cluster_version FOR UPDATE"
qa mover router -c "CALL inventory_router.move_partition($P, '$to')" >"$WORK/move4.log" 2>&1 &
move4_pid=$!
until_prepared "$from" "$to"
cluster_val router -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'CALL inventory_router.move_partition%'" >/dev/null
wait "$move4_pid"
release
qa app router -c "SELECT status FROM inventory.reserve('acme', 'during-prepared', 'sku-1', 1)" >"$WORK/blocked.out" 2>&1 &
blocked_pid=$!
deadline=$((SECONDS + 30))
until [ "$(cluster_val "$from" -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app' AND wait_event_type = 'Lock'")" -ge 1 ] ||
	[ $SECONDS -ge $deadline ]; do sleep 0.05; done
t0=$SECONDS
as mover router -q -c "CALL inventory_router.resolve_moves()" >/dev/null 2>&1
wait "$blocked_pid"
check "a move killed after both nodes prepared: resolve_moves undoes it without waiting for the calls blocked by it, which then complete" \
	"[ $((SECONDS - t0)) -le 5 ] && [ \"\$(cat $WORK/blocked.out)\" = reserved ] && [ \"\$(cluster_val $from -c 'SELECT count(*) FROM pg_prepared_xacts')|\$(cluster_val $to -c 'SELECT count(*) FROM pg_prepared_xacts')|\$(cluster_val router -c \"SELECT inventory_router.node_of('acme')\")\" = '0|0|$from' ]"

# a move interrupted after its decision (the router committed that the
# partition moves, the nodes have prepared their halves, the mover is gone):
# made by hand as move_partition leaves it; calls fail at once, naming the
# move, never read a half-committed copy; resolve_moves finishes it
gid="pg_inventory_move.${P}.${from}.${to}"
cluster_val "$from" -c "SELECT jsonb_agg(jsonb_build_object('table', table_name, 'row', row_data) ORDER BY step)
	FROM inventory.partition_rows($P)" >"$WORK/rows.json"
chmod 644 "$WORK/rows.json"
cluster_sql "$to" -c "BEGIN" -c "SELECT inventory.partition_import(pg_read_file('$WORK/rows.json')::jsonb)" \
	-c "PREPARE TRANSACTION '$gid'" >/dev/null
cluster_sql "$from" -c "BEGIN" -c "SELECT inventory.partition_freeze($P)" -c "SELECT inventory.partition_delete($P)" \
	-c "PREPARE TRANSACTION '$gid'" >/dev/null
cluster_sql router -c "UPDATE inventory_router.placement SET moving_to = '$to' WHERE partition = $P" >/dev/null
t0=$SECONDS
err=$(as app router -q -A -t -c "SELECT state FROM inventory.lookup('acme', 'after-40001')" 2>&1)
code=$(qa app router -c "SELECT state FROM inventory.lookup('acme', 'after-40001')" 2>&1 | sed -n 's/^ERROR:  //p')
check "a move interrupted after its decision: a call for the partition fails at once (XX000), naming the move" \
	"[ $((SECONDS - t0)) -le 2 ] && [ '$code' = XX000 ] && printf '%s' \"\$err\" | grep -q 'pg_inventory_partition_${P}_is_moving_to_$to'"
as mover router -q -c "CALL inventory_router.resolve_moves()" >/dev/null 2>&1
check "resolve_moves finishes it: both halves committed, the partition on $to, calls work, nothing left on $from" \
	"0|0|$to|pending|0" "$(cluster_val "$from" -c "SELECT count(*) FROM pg_prepared_xacts")|$(
		cluster_val "$to" -c "SELECT count(*) FROM pg_prepared_xacts")|$(
		cluster_val router -c "SELECT inventory_router.node_of('acme') || coalesce((SELECT moving_to FROM inventory_router.placement WHERE partition = $P), '')")|$(
		qa app router -c "SELECT state FROM inventory.lookup('acme', 'after-40001')")|$(
		cluster_val "$from" -c "SELECT count(*) FROM inventory.partition_rows($P)")"

check "check_invariants through the router: clean on every node at the end" \
	"" "$(qa ops router -c "SELECT * FROM inventory.check_invariants()")"

tap_done
