#!/usr/bin/env bash
# test/scripts/demo_cluster.sh (`make demo-cluster`): make demo's flow on
# three nodes behind one router (README "Several nodes"), end to end:
# shoppers -> router -> the tenant's node -> its outbox -> that node's
# relay -> RabbitMQ -> the fulfiller (through the router for compensate).
#
#  1. installs the packages, builds and installs pg_inventory and
#     pg_inventory_router (make install), builds inventory-relay and
#     inventory-fulfiller (build/);
#  2. starts three nodes (each with its expiry worker, node numbers 1-3)
#     and a router, passwords on every TCP connection
#     (test/scripts/cluster_env.sh), the roles of make demo on all four
#     (shop_app, inventory_operator, outbox_relay, fulfiller) and a
#     superuser mover, and a throwaway RabbitMQ;
#  3. the operator, through the router, grants the shop 12 tenants
#     (acme, globex, ... 12 in all, spread over the nodes by their partitions) and
#     stocks 100 SKUs for each;
#  4. one relay per node and one fulfiller (its schema in the router's
#     database) run while pgbench, as shop_app through the router
#     (test/bench/demo/cluster_shop.sql, 8 clients, DEMO_SECONDS = 20 s),
#     reserves, confirms, cancels and walks away; a third of the way in,
#     the mover moves acme's partition to another node under that load;
#  5. waits (bounded) until the walked-away holds expired on their nodes
#     and every node's outbox is relayed and the fulfiller caught up, then
#     reports per node (partitions, tenants, reservations, events) and
#     checks: pgbench had no failed call, every tenant's rows are on its
#     node only, inventory.check_invariants() through the router returns no
#     rows, every confirmation reached the fulfiller once.
# The servers are stopped and removed on exit.
#
# Knobs: DEMO_SECONDS (20), DEMO_CLIENTS (8), DEMO_JOBS (2).
set -euo pipefail

cd "$(dirname "$0")/../.."
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BIN:$PATH"
SECONDS_RUN=${DEMO_SECONDS:-20}
CLIENTS=${DEMO_CLIENTS:-8}
JOBS=${DEMO_JOBS:-2}
WORK=$(mktemp -d /tmp/pg_inventory_demo_cluster.XXXXXX)
chmod 755 "$WORK"
CLUSTER_DIR=$WORK/cluster
TENANTS="ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne',
	'tyrell', 'cyberdyne', 'soylent', 'wonka', 'duff']"

step() { printf '\n== %s == (at %d s)\n' "$*" "$SECONDS"; }
die() { echo "demo-cluster: $*" >&2; exit 1; }

# shellcheck source=test/scripts/demo_build.sh
source test/scripts/demo_build.sh
trap demo_cleanup EXIT

# ------------------------------------------------------------------ 1
step "1. packages and build"
demo_build "$WORK"
echo "pg_inventory, pg_inventory_router, inventory-relay and inventory-fulfiller built"

# ------------------------------------------------------------------ 2
step "2. three nodes and a router, roles, RabbitMQ"
# shellcheck source=test/scripts/cluster_env.sh
source test/scripts/cluster_env.sh
# shellcheck source=test/scripts/rabbitmq.sh
source test/scripts/rabbitmq.sh
CLUSTER_CONF="shared_preload_libraries = 'pg_inventory'
pg_inventory.worker_database = 'inventory'
pg_inventory.worker_interval = 500"
cluster_start 3 >"$WORK/cluster.log" 2>&1 || { cat "$WORK/cluster.log"; die "the cluster did not start"; }
for k in 1 2 3; do
	echo "  node$k: port ${CLUSTER_PORT[node$k]}, node number $(cluster_val "node$k" -c 'SELECT inventory.node_number()'), $(cluster_val router -c "SELECT count(*) || ' partitions (' || min(partition) || ', ' || min(partition) + 3 || ', ... ' || max(partition) || ')' FROM inventory_router.placement WHERE node = 'node$k'")"
done
echo "  router: port ${CLUSTER_PORT[router]}, database inventory_router"
for r in shop_app inventory_operator outbox_relay fulfiller; do cluster_role "$r" "$r-secret"; done
cluster_role mover mover-secret SUPERUSER
API_GRANTS="GRANT USAGE ON SCHEMA inventory TO shop_app, inventory_operator, fulfiller;
GRANT EXECUTE ON FUNCTION inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval), inventory.confirm(text, text),
	inventory.cancel(text, text, text), inventory.lookup(text, text),
	inventory.availability(text, text[]) TO shop_app;
GRANT EXECUTE ON FUNCTION inventory.restock(text, text, text, integer, text),
	inventory.expire_due(integer), inventory.check_invariants(), inventory.worker_status(),
	inventory.grant_tenant(text, regrole), inventory.revoke_tenant(text, regrole) TO inventory_operator;
GRANT SELECT ON inventory.outbox_metrics TO inventory_operator;
GRANT EXECUTE ON FUNCTION inventory.lookup(text, text), inventory.compensate(text, text, text) TO fulfiller;"
for s in node1 node2 node3 router; do cluster_sql "$s" -c "$API_GRANTS"; done
for k in 1 2 3; do
	cluster_sql "node$k" -c "GRANT USAGE ON SCHEMA inventory TO outbox_relay;
		GRANT EXECUTE ON FUNCTION inventory.relay_claim(text, integer, interval),
			inventory.relay_mark_published(text, bigint[]),
			inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval),
			inventory.relay_release(text, bigint[]) TO outbox_relay;
		GRANT SELECT ON inventory.outbox_metrics TO outbox_relay" \
		-c "SELECT inventory.grant_tenant('*', 'inventory_operator'), inventory.grant_tenant('*', 'fulfiller')" >/dev/null
done
cluster_sql router -c "CREATE SCHEMA fulfillment AUTHORIZATION fulfiller"
echo "  roles shop_app, inventory_operator, outbox_relay, fulfiller (README section 8) and mover on every server"
rmq_start >"$WORK/rabbitmq.log" 2>&1 || { tail -n 30 "$WORK/rabbitmq.log"; die "RabbitMQ did not start"; }
echo "  RabbitMQ on $INVENTORY_AMQP_URL"

# as ROLE on the router, over TCP with its password
router_sql() { # router_sql ROLE psql-args...
	local role=$1
	shift
	PGPASSWORD=$role-secret psql -X -q -v ON_ERROR_STOP=1 -P footer=off -h 127.0.0.1 \
		-p "${CLUSTER_PORT[router]}" -U "$role" -d inventory_router "$@"
}
router_val() { router_sql "$@" -A -t; }

# ------------------------------------------------------------------ 3
step "3. the operator grants the shop 12 tenants and stocks 100 SKUs each, through the router"
cluster_sql router -P footer=off -c "SELECT t AS tenant, inventory_router.partition_of(t) AS partition,
		inventory_router.node_of(t) AS node FROM unnest($TENANTS) AS t ORDER BY node, t" | sed 's/^/  /'
echo "  granted to shop_app: $(router_val inventory_operator -c "SELECT count(*) FILTER (WHERE inventory.grant_tenant(t, 'shop_app')) FROM unnest($TENANTS) AS t") tenants"
echo "  receipts: $(router_val inventory_operator -c "SELECT count(inventory.restock(t, concat('opening-', s), concat('sku-', lpad(s::text, 3, '0')), 500, 'opening stock'))
	FROM unnest($TENANTS) AS t, generate_series(1, 100) AS s")"

# ------------------------------------------------------------------ 4
step "4. one relay per node, the fulfiller, and the shoppers for ${SECONDS_RUN}s ($CLIENTS clients) through the router"
PGPASSWORD=fulfiller-secret psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" \
	-U fulfiller -d inventory_router -f src/fulfiller/schema.sql
PGPASSWORD=fulfiller-secret psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" \
	-U fulfiller -d inventory_router -c "INSERT INTO fulfillment.warehouse_sku
	SELECT t, concat('sku-', lpad(s::text, 3, '0')) FROM unnest($TENANTS) AS t, generate_series(1, 100) AS s
	 WHERE s <> 7"
# the relays' passwords, for programs running as root (libpq's passfile)
PASSFILE=$WORK/relay.pgpass
: >"$PASSFILE"
chmod 600 "$PASSFILE"
for k in 1 2 3; do echo "127.0.0.1:${CLUSTER_PORT[node$k]}:inventory:outbox_relay:outbox_relay-secret" >>"$PASSFILE"; done
echo "127.0.0.1:${CLUSTER_PORT[router]}:inventory_router:fulfiller:fulfiller-secret" >>"$PASSFILE"
export PGPASSFILE=$PASSFILE
"$FULFILLER" --db "host=127.0.0.1 port=${CLUSTER_PORT[router]} dbname=inventory_router user=fulfiller" \
	--queue fulfillment --compensate-unknown-sku 2>"$WORK/fulfiller.log" &
PIDS+=($!)
waited=0
until grep -q 'event=broker_connected' "$WORK/fulfiller.log"; do
	kill -0 "${PIDS[0]}" 2>/dev/null || { cat "$WORK/fulfiller.log"; die "the fulfiller exited"; }
	[ "$waited" -ge 100 ] && { cat "$WORK/fulfiller.log"; die "the fulfiller did not connect within 10 s"; }
	sleep 0.1
	waited=$((waited + 1))
done
for k in 1 2 3; do
	"$RELAY" --db "host=127.0.0.1 port=${CLUSTER_PORT[node$k]} dbname=inventory user=outbox_relay" \
		--name "relay-node$k" --audit-queue inventory.audit --stats-interval 5s \
		2>"$WORK/relay-node$k.log" &
	PIDS+=($!)
done
echo "  fulfiller on the router's database (compensate through the router), relay-node1..3 each on its node"
move_at=$(awk "BEGIN{print $SECONDS_RUN / 3}")
P=$(cluster_val router -c "SELECT inventory_router.partition_of('acme')")
FROM=$(cluster_val router -c "SELECT inventory_router.node_of('acme')")
TO=$(cluster_val router -c "SELECT name FROM inventory_router.node WHERE name <> '$FROM' ORDER BY name LIMIT 1")
(sleep "$move_at"; PGPASSWORD=mover-secret psql -X -q -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" -U mover \
	-d inventory_router -c "CALL inventory_router.move_partition($P, '$TO')" >"$WORK/move.log" 2>&1) &
move_pid=$!
echo "  at ${move_at}s: acme's partition $P moves from $FROM to $TO (its line follows the shoppers' progress)"
shop_rc=0
PGPASSWORD=shop_app-secret pgbench -n -h 127.0.0.1 -p "${CLUSTER_PORT[router]}" -U shop_app inventory_router \
	-c "$CLIENTS" -j "$JOBS" -T "$SECONDS_RUN" -P 5 -f test/bench/demo/cluster_shop.sql \
	>"$WORK/shop.log" 2>"$WORK/shop.err" || shop_rc=$?
grep '^progress' "$WORK/shop.err" | sed 's/^/  /' || true
wait "$move_pid" || true
[ "$shop_rc" -eq 0 ] || { cat "$WORK/shop.err" "$WORK/shop.log"; die "pgbench failed (exit $shop_rc)"; }
sed 's/^/  /' "$WORK/move.log"
grep -q "moved from $FROM to $TO" "$WORK/move.log" || die "the partition move failed"
txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/shop.log")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/shop.log")
tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/shop.log")
echo "  $txns shoppers ($tps/s through the router), $failed failed"
[ "${failed:-1}" -eq 0 ] || die "$failed shoppers' calls failed"

# ------------------------------------------------------------------ 5
step "5. waiting for the walked-away holds to expire on their nodes, and for the relays and the fulfiller"
nodes_sum() { # nodes_sum SQL: the sum of a count over the three nodes
	local k s=0 v
	for k in 1 2 3; do v=$(cluster_val "node$k" -c "$1"); s=$((s + v)); done
	echo "$s"
}
waited=0
while :; do
	due=$(nodes_sum "SELECT count(*) FROM inventory.reservation WHERE state = 'pending' AND expires_at <= clock_timestamp()")
	short=$(nodes_sum "SELECT count(*) FROM inventory.reservation WHERE state = 'pending' AND expires_at - created_at <= interval '2 seconds'")
	[ "$due" -eq 0 ] && [ "$short" -eq 0 ] && break
	[ "$waited" -ge 600 ] && die "after 60 s, $due pending reservations are past their expiry"
	sleep 0.1
	waited=$((waited + 1))
done
echo "  no pending reservation is past its expiry on any node (waited $(awk "BEGIN{print $waited/10}") s)"
waited=0
while :; do
	unpublished=$(router_val inventory_operator -c "SELECT unpublished FROM inventory.outbox_metrics")
	confirmed=$(nodes_sum "SELECT count(*) FROM inventory.outbox WHERE event_type = 'reservation.confirmed'")
	inbox=$(cluster_val router -c "SELECT count(*) FROM fulfillment.inbox")
	[ "$unpublished" -eq 0 ] && [ "$inbox" -ge "$confirmed" ] && break
	[ "$waited" -ge 600 ] && die "after 60 s: $unpublished events unpublished, the fulfiller has $inbox of $confirmed confirmations"
	sleep 0.1
	waited=$((waited + 1))
done
echo "  every node's outbox relayed, the fulfiller has every confirmation (waited $(awk "BEGIN{print $waited/10}") s)"
kill -TERM "${PIDS[@]}"
for p in "${PIDS[@]}"; do wait "$p" || die "a relay or the fulfiller exited with $? after SIGTERM"; done
PIDS=()

# ------------------------------------------------------------------ report
step "report"
echo "(per node: its tenants' reservations by state; made on node: the lowest and highest id >> 43, the"
echo " number of the node that made them; events: what is in the node's outbox at the end, published by"
echo " its relay; a moved tenant's events published before its move stayed, and were deleted, on the source)"
for k in 1 2 3; do
	echo "-- node$k: $(cluster_val router -c "SELECT count(*) FROM inventory_router.placement WHERE node = 'node$k'") partitions"
	cluster_sql "node$k" -P footer=off -c "SELECT r.tenant, count(*) AS reservations,
			count(*) FILTER (WHERE r.state = 'confirmed') AS confirmed,
			count(*) FILTER (WHERE r.state = 'cancelled') AS cancelled,
			count(*) FILTER (WHERE r.state = 'expired') AS expired,
			count(*) FILTER (WHERE r.state = 'compensated') AS compensated,
			min(r.id >> 43) || '-' || max(r.id >> 43) AS \"made on node\"
		FROM inventory.reservation r GROUP BY r.tenant ORDER BY r.tenant" | sed 's/^/   /'
	echo "   events: $(cluster_val "node$k" -c "SELECT count(*) || ' in the outbox, ' || count(*) FILTER (WHERE published_at IS NOT NULL) || ' published by ' || coalesce(string_agg(DISTINCT claimed_by, ', '), 'none') FROM inventory.outbox")"
done
echo "-- fulfiller: $(cluster_val router -c "SELECT count(*) FROM fulfillment.inbox") confirmations received once each: $(cluster_val router -c "SELECT count(*) FROM fulfillment.request") fulfillment requests, the rest compensated through the router (sku-007 is not shipped)"
misplaced=$(for k in 1 2 3; do
	cluster_val "node$k" -c "SELECT DISTINCT tenant FROM inventory.reservation UNION SELECT DISTINCT tenant FROM inventory.stock_slot" |
		while read -r t; do
			[ "$(cluster_val router -c "SELECT inventory_router.node_of('$t')")" = "node$k" ] || echo "$t on node$k"
		done
done)
[ -z "$misplaced" ] || die "tenants' rows on a node that does not own them: $misplaced"
echo "-- placement: every tenant's rows are on its node only (acme on $(cluster_val router -c "SELECT inventory_router.node_of('acme')") since the move)"
broken=$(router_val inventory_operator -c "SELECT count(*) FROM inventory.check_invariants()")
[ "$broken" -eq 0 ] || { router_sql inventory_operator -c "SELECT * FROM inventory.check_invariants()"; die "check_invariants reports $broken broken invariants"; }
echo "-- inventory.check_invariants() through the router: no rows on any node"
echo
echo "demo-cluster OK: $txns shoppers through the router on 3 nodes, acme's partition moved under load, $(nodes_sum "SELECT count(*) FROM inventory.outbox WHERE published_at IS NOT NULL") events in the outboxes relayed by 3 relays, invariants hold"
