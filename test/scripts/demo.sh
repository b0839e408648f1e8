#!/usr/bin/env bash
# test/scripts/demo.sh (`make demo`): pg_inventory under a realistic load,
# end to end, in about two minutes: reservations -> outbox -> inventory-relay ->
# RabbitMQ -> inventory-fulfiller -> fulfillment requests.
#
#  1. installs the packages (deps.sh), builds and installs the extension,
#     builds inventory-relay and inventory-fulfiller with cmake (build/);
#  2. starts a throwaway PostgreSQL 15 with the expiry worker preloaded
#     (pg_inventory.worker_database = 'demo'), creates database demo with
#     the extension and two roles:
#       shop_app            the application: reserve, reserve_lines, confirm,
#                           cancel, lookup, extend, amend, availability,
#                           granted tenants acme and globex
#       inventory_operator  restock, adjust, restock_at, adjust_at,
#                           set_location, set_allocation_policy,
#                           set_stock_policy, expire_due, check_invariants,
#                           grant_tenant, revoke_tenant, SELECT on the tables
#       outbox_relay        the relay functions and outbox_metrics only
#       fulfiller           lookup, compensate, every tenant, and its own
#                           schema fulfillment (made by its role with
#                           src/fulfiller/schema.sql, as README section 7
#                           has it)
#     and a throwaway RabbitMQ (test/scripts/rabbitmq.sh); the demo fails
#     if it cannot start;
#  3. the operator sets up each of 2 tenants (acme, globex) with three
#     locations, warehouse-a (priority 10), warehouse-b (20) and a store
#     (50) with little stock (set_location), lets globex split a line over
#     locations (set_allocation_policy; acme keeps the default: no split),
#     and stocks 300 SKUs per location (restock_at); the five best sellers
#     have little stock at every location, so they run out location by
#     location and some reservations come back `insufficient`; stock
#     policies (set_stock_policy): the best sellers are `low` at
#     warehouse-a from 15 sellable units, the store's SKUs from 1, and
#     sku-0002 keeps 2 display units at the store (safety stock);
#     then a short story, call by call as shop_app, with each outcome:
#     acme cannot hold 4 units that no single location has, globex splits
#     them, a click and collect cart pinned to the store, availability,
#     another split, amended (down: the lowest priority location gives
#     back first; then up beyond the stock: refused, nothing changed) and
#     extended;
#  4. two relays (one queue `inventory.audit` bound with '#' keeps every
#     event routable) and a fulfiller (queue `fulfillment`; the warehouse
#     cannot ship sku-0003 and sku-0009, and the fulfiller runs with
#     --compensate-unknown-sku, so those confirmations are compensated) run
#     through the workload; a fault drill a few seconds in
#     starts a relay that dies between the broker's confirm and marking the
#     batch published, and a fulfiller that dies between its commit and its
#     ack (the test hooks), so some events arrive twice and are deduplicated;
#     pgbench drives it AS shop_app (8 clients, 20 s, the scripts in
#     test/bench/demo/: single items and 2-4 line carts left to the
#     allocation policy, a fifth of the carts click and collect with a line
#     pinned to the store, each confirmed (some after an amend or an
#     extend), cancelled or left to expire after 2 s) while a second
#     pgbench AS inventory_operator sweeps expire_due and delivers small
#     restocks to one location (restock_at);
#  5. waits (bounded) until the reservations left behind have expired by
#     themselves and the relays and the fulfiller have caught up, scrapes
#     each program's /metrics and /healthz (they run with --metrics-address
#     127.0.0.1:0, curl), prints a report (with events published, consumed,
#     deduplicated, fulfillment requests, compensations, relay throughput,
#     end-to-end lag and a few lines of each scrape, and for 0.5: stock
#     and allocations per location, split lines, click and collect lines,
#     amends and extends, stock level events) and runs
#     inventory.check_invariants(), which must return no rows; the demo
#     fails if it returns any, if an event stays unpublished, if a
#     confirmation has no effect or more than one, if the outbox holds
#     other than one event per state change and ledger record plus the
#     stock level events (whose count must equal the stock versions less
#     the ledger records), if acme split a line or globex split none.
# The servers are stopped and removed on exit.
#
# Knobs: DEMO_SECONDS (20), DEMO_CLIENTS (8), DEMO_JOBS (2).
set -euo pipefail

cd "$(dirname "$0")/../.."
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
export PATH="$PG_BIN:$PATH"
BENCH=test/bench/demo
SECONDS_RUN=${DEMO_SECONDS:-20}
CLIENTS=${DEMO_CLIENTS:-8}
JOBS=${DEMO_JOBS:-2}
SKUS=300
HOT_SKUS=5
HOT_STOCK_A=40  # the five best sellers at warehouse-a,
HOT_STOCK_B=10  # at warehouse-b
HOT_LOW=15      # low_threshold of the best sellers at warehouse-a
STOCK_A=3000    # warehouse-a, the other SKUs
STOCK_B=2000    # warehouse-b
STORE_SKUS=40   # the store has sku-0001..sku-0040,
STORE_STOCK=4   # 4 units each
WORK=$(mktemp -d /tmp/pg_inventory_demo.XXXXXX)

step() { printf '\n== %s == (at %d s)\n' "$*" "$SECONDS"; }
sub() { printf -- '-- %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

# psql in database demo: as the superuser (setup), the operator (reports)
su_sql() { psql -X -q -v ON_ERROR_STOP=1 -d demo "$@"; }
op_sql() { psql -X -q -v ON_ERROR_STOP=1 -P footer=off -d demo -U inventory_operator "$@"; }
op_val() { psql -X -q -v ON_ERROR_STOP=1 -At -d demo -U inventory_operator "$@"; }
shop_sql() { psql -X -q -v ON_ERROR_STOP=1 -P footer=off -d demo -U shop_app "$@"; }

# shellcheck source=test/scripts/demo_build.sh
source test/scripts/demo_build.sh
trap demo_cleanup EXIT

# ------------------------------------------------------------------ 1
step "1. packages and build"
demo_build "$WORK"
echo "pg_inventory built and installed"
echo "inventory-relay and inventory-fulfiller built in build/"

# ------------------------------------------------------------------ 2
step "2. a throwaway PostgreSQL 15 with the expiry worker"
# shellcheck source=test/scripts/pg_env.sh
source test/scripts/pg_env.sh
# ports of our own, away from where the test suites start (55432, 5673)
PGI_PORT=$(pg_free_port 57432)
PGI_CONF="shared_preload_libraries = 'pg_inventory'
pg_inventory.worker_database = 'demo'
pg_inventory.worker_interval = 500" pg_start
echo "server on port $PGPORT (data, socket and log in $PGI_DIR)"
# shellcheck source=test/scripts/rabbitmq.sh
source test/scripts/rabbitmq.sh
unset RMQ_DIR RMQ_PORT RMQ_DIST_PORT RMQ_EPMD_PORT RMQ_NODENAME
RMQ_PORT=$(rmq_free_port 5873)
rmq_start >"$WORK/rabbitmq.log" 2>&1 || {
	tail -n 40 "$WORK/rabbitmq.log"
	die "RabbitMQ did not start"
}
echo "RabbitMQ on $INVENTORY_AMQP_URL (state in $RMQ_DIR)"

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'CREATE DATABASE demo'
su_sql <<'SQL'
CREATE EXTENSION pg_inventory;

-- the application: only the calls of a shop, and only for its tenants
CREATE ROLE shop_app LOGIN;
GRANT USAGE ON SCHEMA inventory TO shop_app;
GRANT EXECUTE ON FUNCTION
	inventory.reserve(text, text, text, integer, interval),
	inventory.reserve_lines(text, text, jsonb, interval),
	inventory.confirm(text, text),
	inventory.cancel(text, text, text),
	inventory.lookup(text, text),
	inventory.extend(text, text, timestamptz),
	inventory.amend(text, text, jsonb),
	inventory.availability(text, text[])
	TO shop_app;

-- the operator: stock movements, expiry, checks and tenant grants, and it
-- reads every table
CREATE ROLE inventory_operator LOGIN;
GRANT USAGE ON SCHEMA inventory TO inventory_operator;
GRANT EXECUTE ON FUNCTION
	inventory.restock(text, text, text, integer, text),
	inventory.adjust(text, text, text, bigint, text, text),
	inventory.restock_at(text, text, text, text, integer, text),
	inventory.adjust_at(text, text, text, text, bigint, text, text),
	inventory.set_location(text, text, integer, boolean),
	inventory.set_allocation_policy(text, boolean),
	inventory.set_stock_policy(text, text, text, bigint, bigint),
	inventory.expire_due(integer),
	inventory.check_invariants(),
	inventory.grant_tenant(text, regrole),
	inventory.revoke_tenant(text, regrole)
	TO inventory_operator;
GRANT SELECT ON ALL TABLES IN SCHEMA inventory TO inventory_operator;
GRANT EXECUTE ON FUNCTION
	inventory.requeue_dead_letters(bigint[], text),
	inventory.discard_dead_letters(bigint[], text),
	inventory.purge_published(interval, integer)
	TO inventory_operator;
GRANT SELECT ON inventory.outbox_metrics TO inventory_operator;
-- 0.4: stock calls need a tenant grant too; an operator acts for every
-- tenant through a grant of '*' (README section 8)
SELECT inventory.grant_tenant('*', 'inventory_operator') \gset

-- the relay: its four outbox functions and the metrics view, nothing else
CREATE ROLE outbox_relay LOGIN;
GRANT USAGE ON SCHEMA inventory TO outbox_relay;
GRANT EXECUTE ON FUNCTION
	inventory.relay_claim(text, integer, interval),
	inventory.relay_mark_published(text, bigint[]),
	inventory.relay_mark_failed(text, bigint[], text, integer, interval, interval),
	inventory.relay_release(text, bigint[])
	TO outbox_relay;
GRANT SELECT ON inventory.outbox_metrics TO outbox_relay;

-- the fulfillment consumer: lookup and compensate for every tenant, and
-- its own schema (src/fulfiller/schema.sql, run as this role below)
CREATE ROLE fulfiller LOGIN;
GRANT USAGE ON SCHEMA inventory TO fulfiller;
GRANT EXECUTE ON FUNCTION inventory.lookup(text, text),
	inventory.compensate(text, text, text) TO fulfiller;
SELECT inventory.grant_tenant('*', 'fulfiller') \gset
CREATE SCHEMA fulfillment AUTHORIZATION fulfiller;
SQL
echo "database demo: extension pg_inventory $(su_sql -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory'"), roles shop_app, inventory_operator, outbox_relay and fulfiller"

# ------------------------------------------------------------------ 3
step "3. the operator sets up locations, stocks the catalog and grants the shop its tenants"
op_sql -v skus=$SKUS -v hot=$HOT_SKUS -v hot_stock_a=$HOT_STOCK_A -v hot_stock_b=$HOT_STOCK_B -v hot_low=$HOT_LOW \
	-v stock_a=$STOCK_A -v stock_b=$STOCK_B -v store_skus=$STORE_SKUS -v store_stock=$STORE_STOCK <<'SQL'
SELECT bool_and(inventory.grant_tenant(t, 'shop_app')) AS granted
  FROM unnest(ARRAY['acme', 'globex']) AS t \gset
-- three locations per tenant: two warehouses and a store (the smaller
-- priority serves first)
SELECT count(inventory.set_location(t, l, p)) AS locations
  FROM unnest(ARRAY['acme', 'globex']) AS t,
	   (VALUES ('warehouse-a', 10), ('warehouse-b', 20), ('store', 50)) AS v(l, p) \gset
-- globex may fill a line from several locations; acme keeps the default
SELECT inventory.set_allocation_policy('globex', true) AS split \gset
-- opening stock: one receipt per SKU and location, each with its own key
SELECT count(inventory.restock_at(t, concat('opening-', l, '-', s), concat('sku-', lpad(s::text, 4, '0')), l,
		CASE WHEN l = 'warehouse-a' THEN CASE WHEN s <= :hot THEN :hot_stock_a ELSE :stock_a END
			 ELSE CASE WHEN s <= :hot THEN :hot_stock_b ELSE :stock_b END END,
		'opening stock')) AS receipts
  FROM unnest(ARRAY['acme', 'globex']) AS t, unnest(ARRAY['warehouse-a', 'warehouse-b']) AS l,
	   generate_series(1, :skus) AS s \gset
SELECT count(inventory.restock_at(t, concat('opening-store-', s), concat('sku-', lpad(s::text, 4, '0')),
		'store', :store_stock, 'opening stock')) AS receipts
  FROM unnest(ARRAY['acme', 'globex']) AS t, generate_series(1, :store_skus) AS s \gset
-- stock policies: the best sellers are low at warehouse-a from :hot_low
-- sellable units, the store's SKUs from 1; sku-0002 keeps 2 display units
-- at the store (safety stock: available, never reserved)
SELECT count(inventory.set_stock_policy(t, concat('sku-', lpad(s::text, 4, '0')), 'warehouse-a', 0, :hot_low))
	AS policies
  FROM unnest(ARRAY['acme', 'globex']) AS t, generate_series(1, :hot) AS s \gset
SELECT count(inventory.set_stock_policy(t, concat('sku-', lpad(s::text, 4, '0')), 'store',
		CASE WHEN s = 2 THEN 2 ELSE 0 END, 1)) AS policies
  FROM unnest(ARRAY['acme', 'globex']) AS t, generate_series(1, :store_skus) AS s \gset
SELECT l.tenant, l.location, l.priority, coalesce(p.allow_split, false) AS "tenant splits lines",
	   count(*) AS skus, sum(s.available) AS "units available", sum(s.safety_stock) AS "safety stock",
	   count(*) FILTER (WHERE s.low_threshold IS NOT NULL) AS "SKUs with a low threshold"
  FROM inventory.location AS l
  LEFT JOIN inventory.allocation_policy AS p ON p.tenant = l.tenant
  JOIN inventory.location_stock AS s ON s.tenant = l.tenant AND s.location = l.location
 GROUP BY l.tenant, l.location, l.priority, p.allow_split
 ORDER BY l.tenant, l.priority, l.location;
SELECT tenant, member::text AS "may act for it" FROM inventory.tenant_member ORDER BY 1, 2;
SQL

sub "authorisation is real: shop_app may not restock, nor act for another tenant"
expect_denied() { # expect_denied DESCRIPTION SQL
	local out
	out=$(psql -X -q -d demo -U shop_app -v VERBOSITY=terse -c "$2" 2>&1) &&
		die "shop_app was allowed to $1: $out"
	grep -q 'ERROR' <<<"$out" || die "unexpected: $out"
	printf '  %-40s refused: %s\n' "$1" "$(grep -m1 ERROR <<<"$out" | sed 's/^ERROR: *//')"
}
expect_denied "restock acme sku-0001" \
	"SELECT inventory.restock('acme', 'x', 'sku-0001', 1)"
expect_denied "reserve for tenant initech" \
	"SELECT inventory.reserve('initech', 'x', 'sku-0001', 1)"
expect_denied "read inventory.stock" \
	"SELECT count(*) FROM inventory.stock"

sub "the life of a hold, call by call as shop_app (stock: sku-0301 2 units at each warehouse and 1 at the store, sku-0302 5 at warehouse-b, sku-0303 1 at warehouse-a and 2 at warehouse-b)"
op_sql -c "SELECT count(inventory.restock_at(t, concat('story-', k, '-', l), k, l, q, 'story stock')) AS receipts
	FROM unnest(ARRAY['acme', 'globex']) AS t,
		 (VALUES ('sku-0301', 'warehouse-a', 2), ('sku-0301', 'warehouse-b', 2), ('sku-0301', 'store', 1),
				 ('sku-0302', 'warehouse-b', 5), ('sku-0303', 'warehouse-a', 1),
				 ('sku-0303', 'warehouse-b', 2)) AS v(k, l, q)" >/dev/null
story() { # story TITLE SQL: one call as shop_app, its outcome
	printf '  %s\n' "$1"
	shop_sql -c "$2" | sed 's/^/    /'
}
OUT="status, state, applied, quantity, lines"
story "acme reserves 4 x sku-0301: no location has 4 and acme does not split -> insufficient (lines: what was sellable)" \
	"SELECT $OUT FROM inventory.reserve_lines('acme', 'story-1', '[{\"sku\": \"sku-0301\", \"quantity\": 4}]', '1 hour')"
story "globex, the same: its policy splits the line over both warehouses (priority order)" \
	"SELECT $OUT FROM inventory.reserve_lines('globex', 'story-1', '[{\"sku\": \"sku-0301\", \"quantity\": 4}]', '1 hour')"
story "globex click and collect: sku-0301 pinned to the store, sku-0302 left to the policy" \
	"SELECT $OUT FROM inventory.reserve_lines('globex', 'story-2', '[{\"sku\": \"sku-0301\", \"quantity\": 1, \"location\": \"store\"}, {\"sku\": \"sku-0302\", \"quantity\": 2}]', '1 hour')"
story "availability: sellable per location, then the total (location empty)" \
	"SELECT * FROM inventory.availability('globex', ARRAY['sku-0301', 'sku-0302'])"
story "globex story-3, 3 x sku-0303: split again (1 at warehouse-a, 2 at warehouse-b)" \
	"SELECT $OUT FROM inventory.reserve_lines('globex', 'story-3', '[{\"sku\": \"sku-0303\", \"quantity\": 3}]', '1 hour')"
story "amend story-3 down to 2: one unit goes back, from the lowest priority location first (warehouse-b)" \
	"SELECT $OUT FROM inventory.amend('globex', 'story-3', '[{\"sku\": \"sku-0303\", \"quantity\": 2}]')"
story "amend story-3 up to 6: 4 more units are not there -> insufficient, nothing changed, still pending" \
	"SELECT $OUT FROM inventory.amend('globex', 'story-3', '[{\"sku\": \"sku-0303\", \"quantity\": 6}]')"
story "extend story-3 to two hours from now (expires_at moves, a reservation.extended event)" \
	"SELECT status, state, applied, expires_at FROM inventory.extend('globex', 'story-3', clock_timestamp() + interval '2 hours')"
story "confirm story-1, story-2 and story-3" \
	"SELECT o.status, o.state, o.applied, o.lines FROM unnest(ARRAY['story-1', 'story-2', 'story-3']) AS k, LATERAL inventory.confirm('globex', k) AS o"
printf '  %s\n' "the stock level events so far (sku-0301..sku-0303; as inventory_operator)"
op_sql -c "SELECT tenant, payload->>'sku' AS sku, event_type, payload->>'location' AS location, payload->>'level' AS level, payload->>'sellable' AS sellable, payload->>'version' AS version FROM inventory.outbox WHERE event_type IN ('stock.out_of_stock', 'stock.back_in_stock', 'stock.low') AND payload->>'sku' IN ('sku-0301', 'sku-0302', 'sku-0303') ORDER BY id" | sed 's/^/    /'

# ------------------------------------------------------------------ 4
step "4. relays and fulfiller, then the workload: pgbench as shop_app for ${SECONDS_RUN}s, $CLIENTS clients"
# the fulfiller's setup, as in README section 7: its schema (as its role) and
# what the warehouse ships: every SKU but sku-0003 and sku-0009 (and the
# story's sku-0301..sku-0303).  The
# fulfiller refuses to start while warehouse_sku is empty.
psql -X -q -v ON_ERROR_STOP=1 -d demo -U fulfiller -f src/fulfiller/schema.sql
psql -X -q -v ON_ERROR_STOP=1 -d demo -U fulfiller -c "INSERT INTO fulfillment.warehouse_sku
	SELECT tenant, sku FROM unnest(ARRAY['acme', 'globex']) AS tenant,
		LATERAL (SELECT concat('sku-', lpad(s::text, 4, '0')) AS sku
				   FROM generate_series(1, $SKUS + 3) AS s) AS k
	 WHERE sku NOT IN ('sku-0003', 'sku-0009')"
# undoing the sales the warehouse cannot ship is an explicit choice
# (--compensate-unknown-sku); without it they would be held
"$FULFILLER" --db "dbname=demo user=fulfiller" --queue fulfillment \
	--compensate-unknown-sku --metrics-address 127.0.0.1:0 2>"$WORK/fulfiller.log" &
PIDS+=($!)
FULFILLER_PID=$!
# its queue must be bound before the first confirmation is published
waited=0
until grep -q 'event=broker_connected' "$WORK/fulfiller.log"; do
	kill -0 "$FULFILLER_PID" 2>/dev/null || { cat "$WORK/fulfiller.log"; die "the fulfiller exited"; }
	[ "$waited" -ge 100 ] && { cat "$WORK/fulfiller.log"; die "the fulfiller did not connect within 10 s"; }
	sleep 0.1
	waited=$((waited + 1))
done
for r in a b; do
	"$RELAY" --db "dbname=demo user=outbox_relay" --name "relay-$r" \
		--audit-queue inventory.audit --stats-interval 5s \
		--metrics-address 127.0.0.1:0 2>"$WORK/relay-$r.log" &
	PIDS+=($!)
done
RELAY_PIDS=("${PIDS[@]:1:2}")
# the fault drill, a third of the way in: a relay killed between confirm and
# mark (its batch comes back when its 2 s lease runs out) and a fulfiller
# killed between commit and ack (the broker redelivers)
drill_at=$(awk "BEGIN{print $SECONDS_RUN / 3}")
(sleep "$drill_at"; INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM=1 exec "$RELAY" \
	--db "dbname=demo user=outbox_relay" --name relay-crash --lease 2s \
	2>"$WORK/relay-crash.log") &
PIDS+=($!)
DRILL_PIDS=($!)
disown $! # it dies by SIGKILL on purpose: no "Killed" line from the shell
(sleep "$drill_at"; INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT=1 exec "$FULFILLER" \
	--db "dbname=demo user=fulfiller" --queue fulfillment --skip-schema --compensate-unknown-sku \
	--once-idle-ms 3000 \
	2>"$WORK/fulfiller-crash.log") &
PIDS+=($!)
DRILL_PIDS+=($!)
disown $!
echo "  relays relay-a, relay-b (exchange inventory, queue inventory.audit bound with '#'), fulfiller (queue fulfillment), fault drill at ${drill_at}s"
cat <<EOF
  $BENCH/shop_reserve.sql  weight 7  reserve 1 item, then confirm 75% / cancel 15% / leave 10% to expire (ttl 2 s)
  $BENCH/shop_cart.sql     weight 3  reserve_lines 2-4 lines (20% click and collect: the first line pinned to the store),
                                     then confirm 70% (6% after amend +1 unit, 4% after extend) / cancel 15% / leave 15% to expire
  SKU popularity: random_exponential over $SKUS SKUs; sku-0001..sku-000$HOT_SKUS start with $HOT_STOCK_A units at warehouse-a
  and $HOT_STOCK_B at warehouse-b, the rest $STOCK_A (warehouse-a) and $STOCK_B (warehouse-b); the store has $STORE_STOCK units of sku-0001..sku-00$STORE_SKUS
  alongside, as inventory_operator (4 calls/s): expire_due(500) x3, a delivery of a best seller to one location x1
EOF
start_epoch=$(op_val -c 'SELECT extract(epoch FROM clock_timestamp())')
pgbench -n -M prepared demo -U inventory_operator -c 1 -j 1 -T "$SECONDS_RUN" -R 4 \
	-f "$BENCH/operator_expire.sql@3" -f "$BENCH/operator_restock.sql@1" \
	>"$WORK/operator.log" 2>&1 &
op_pid=$!
shop_rc=0
pgbench -n -M prepared demo -U shop_app -c "$CLIENTS" -j "$JOBS" -T "$SECONDS_RUN" -P 5 \
	-f "$BENCH/shop_reserve.sql@7" -f "$BENCH/shop_cart.sql@3" \
	>"$WORK/shop.log" 2>"$WORK/shop.err" || shop_rc=$?
op_rc=0
wait "$op_pid" || op_rc=$?
end_epoch=$(op_val -c 'SELECT extract(epoch FROM clock_timestamp())')
grep '^progress' "$WORK/shop.err" | sed 's/^/  /' || true
if [ "$shop_rc" -ne 0 ] || [ "$op_rc" -ne 0 ]; then
	cat "$WORK/shop.err" "$WORK/shop.log" "$WORK/operator.log"
	die "pgbench failed (shop exit $shop_rc, operator exit $op_rc)"
fi
tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$WORK/shop.log")
latency=$(sed -n 's/^latency average = \(.*\)$/\1/p' "$WORK/shop.log")
txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/shop.log")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/shop.log")
op_txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/operator.log")

# ------------------------------------------------------------------ 5
step "5. waiting for the abandoned reservations to expire by themselves"
# the abandoned ones have a 2 s ttl; the background worker (every 500 ms)
# and the operator's sweep expire them.  Bounded: 30 s.
waited=0
while :; do
	read -r due short < <(op_val -F ' ' -c "SELECT count(*) FILTER (WHERE expires_at <= clock_timestamp()),
		count(*) FILTER (WHERE expires_at - created_at <= interval '2 seconds')
		FROM inventory.reservation WHERE state = 'pending'")
	[ "$due" -eq 0 ] && [ "$short" -eq 0 ] && break
	[ "$waited" -ge 60 ] && die "after 30 s, $due pending reservations are past their expiry ($short short-lived ones left)"
	sleep 0.5
	waited=$((waited + 1))
done
echo "no pending reservation is past its expiry (waited $(awk "BEGIN{print $waited/2}") s)"

step "6. waiting for the relays and the fulfiller to catch up"
# every event published, and every published confirmation has exactly one
# effect (a request or a compensation) in the fulfiller's schema.  Bounded: 60 s
waited=0
while :; do
	read -r unpublished behind < <(su_sql -At -F ' ' -c "SELECT
		(SELECT unpublished FROM inventory.outbox_metrics),
		(SELECT count(*) FROM inventory.outbox WHERE event_type = 'reservation.confirmed')
		- (SELECT count(*) FROM fulfillment.inbox)")
	[ "$unpublished" -eq 0 ] && [ "$behind" -eq 0 ] && break
	[ "$waited" -ge 600 ] && die "after 60 s: $unpublished events unpublished, the fulfiller $behind confirmations behind"
	sleep 0.1
	waited=$((waited + 1))
done
echo "outbox drained and fulfiller caught up (waited $(awk "BEGIN{print $waited/10}") s)"

# each program's /metrics and /healthz while it still runs (port 0: the
# port each got is in its event=metrics_listening line)
metrics_port() { sed -n 's/.* event=metrics_listening .* port=\([0-9]*\).*/\1/p' "$WORK/$1" | head -n 1; }
scrape() { # scrape LOG NAME: /metrics into $WORK/NAME.metrics, /healthz into NAME.health
	local port
	port=$(metrics_port "$1")
	[ -n "$port" ] || die "$1 has no event=metrics_listening line"
	curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" >"$WORK/$2.metrics" ||
		die "scraping /metrics of $2 (port $port) failed"
	curl -sS --max-time 5 "http://127.0.0.1:$port/healthz" >"$WORK/$2.health" || true
	echo "$port" >"$WORK/$2.port"
}
# the relays' outbox gauges are read every 5 s: wait (bounded) for an
# empty backlog there too
for r in a b; do
	port=$(metrics_port "relay-$r.log")
	for _ in $(seq 100); do
		curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" 2>/dev/null |
			grep -qx 'inventory_relay_outbox_backlog_events 0' && break
		sleep 0.1
	done
	scrape "relay-$r.log" "relay-$r"
done
scrape fulfiller.log fulfiller
kill -TERM "${RELAY_PIDS[@]}" "$FULFILLER_PID"
for p in "${RELAY_PIDS[@]}" "$FULFILLER_PID"; do
	wait "$p" || die "a relay or the fulfiller exited with $? after SIGTERM"
done
# the fault drill's programs died by their hooks; if one found nothing to
# do it stops now
kill -TERM "${DRILL_PIDS[@]}" 2>/dev/null || true
for p in "${DRILL_PIDS[@]}"; do # disowned: poll (at most 10 s) instead of wait
	for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
done
# the last value of KEY in the stats_final line of log FILE
final() { sed -n "/ event=stats_final /s/.* $2=\([^ ]*\).*/\1/p" "$WORK/$1" | tail -n 1; }

# ------------------------------------------------------------------ report
step "report"
sub "reservations by state (rejected = the stored insufficient outcome; units = all lines summed)"
op_sql <<'SQL'
SELECT r.state,
	   count(*) FILTER (WHERE r.request_key LIKE 'item-%') AS "single items",
	   count(*) FILTER (WHERE r.request_key LIKE 'cart-%') AS carts,
	   count(*) AS total,
	   sum(u.units) AS units,
	   round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS "% of all"
  FROM inventory.reservation AS r
  CROSS JOIN LATERAL (SELECT sum(l.quantity) AS units FROM inventory.reservation_line AS l
					   WHERE l.reservation_id = r.id) AS u
 GROUP BY r.state
 ORDER BY total DESC;
SQL

sub "who expired the abandoned reservations (the transition log's actor; postgres = the background worker)"
op_sql <<'SQL'
SELECT actor AS "expired by", count(*) AS reservations
  FROM inventory.reservation_transition WHERE to_state = 'expired'
 GROUP BY actor ORDER BY 2 DESC;
SQL

sub "stock: units available / reserved (pending) / consumed (confirmed)"
op_sql <<'SQL'
SELECT coalesce(s.tenant, 'all') AS tenant, count(*) AS skus,
	   sum(s.available) AS available, sum(s.reserved) AS reserved, sum(s.consumed) AS consumed,
	   sum(s.available + s.reserved + s.consumed) AS "total on hand",
	   count(*) FILTER (WHERE s.available = 0) AS "sold out"
  FROM inventory.stock AS s
 GROUP BY ROLLUP (s.tenant)
 ORDER BY s.tenant NULLS LAST;
SQL

sub "stock per location (0.5): counters, safety stock, sellable and levels"
op_sql <<'SQL'
SELECT s.tenant, s.location, l.priority, count(*) AS skus, sum(s.available) AS available,
	   sum(s.reserved) AS reserved, sum(s.consumed) AS consumed, sum(s.safety_stock) AS "safety stock",
	   sum(s.sellable) AS sellable, count(*) FILTER (WHERE s.level = 'out_of_stock') AS "out of stock",
	   count(*) FILTER (WHERE s.level = 'low') AS low
  FROM inventory.location_stock AS s
  JOIN inventory.location AS l ON l.tenant = s.tenant AND l.location = s.location
 GROUP BY s.tenant, s.location, l.priority
 ORDER BY s.tenant, l.priority, s.location;
SQL

sub "allocation: lines and units held per location (every reservation that held stock; pinned = click and collect)"
op_sql <<'SQL'
WITH held AS (
	SELECT r.tenant, r.id, l.location, l.sku, l.quantity,
		   EXISTS (SELECT FROM jsonb_array_elements(r.request) AS e
					WHERE e->>'sku' = l.sku AND e->>'location' = l.location) AS pinned
	  FROM inventory.reservation AS r
	  JOIN inventory.reservation_line AS l ON l.reservation_id = r.id
	 WHERE r.state <> 'rejected')
SELECT h.tenant, h.location, count(DISTINCT h.id) AS reservations, count(*) AS lines,
	   sum(h.quantity) AS units, count(*) FILTER (WHERE h.pinned) AS "pinned lines",
	   round(100.0 * sum(h.quantity) / sum(sum(h.quantity)) OVER (PARTITION BY h.tenant), 1) AS "% of the tenant's units"
  FROM held AS h
  JOIN inventory.location AS c ON c.tenant = h.tenant AND c.location = h.location
 GROUP BY h.tenant, h.location, c.priority
 ORDER BY h.tenant, c.priority, h.location;
SQL

sub "one SKU of a reservation held at several locations (a split line, unless pinned)"
# MULTI: per (reservation, SKU) held at more than one location: pinned (a
# line of it named a location) and amended (an amend may take the
# increment elsewhere, whatever the policy)
MULTI="SELECT r.tenant, r.id, r.request_key, l.sku,
		   bool_or(EXISTS (SELECT FROM jsonb_array_elements(r.request) AS e
							WHERE e->>'sku' = l.sku AND e ? 'location')) AS pinned,
		   EXISTS (SELECT FROM inventory.reservation_transition AS t
					WHERE t.reservation_id = r.id AND t.reason = 'amended') AS amended
	  FROM inventory.reservation AS r
	  JOIN inventory.reservation_line AS l ON l.reservation_id = r.id
	 WHERE r.state <> 'rejected'
	 GROUP BY r.tenant, r.id, r.request_key, l.sku
	HAVING count(*) > 1"
op_sql <<SQL
WITH multi AS ($MULTI)
SELECT t.tenant, coalesce(p.allow_split, false) AS "may split",
	   count(m.id) FILTER (WHERE NOT m.pinned AND NOT m.amended) AS "split lines (by the policy)",
	   count(m.id) FILTER (WHERE NOT m.pinned AND m.amended) AS "after an amend",
	   count(m.id) FILTER (WHERE m.pinned) AS "same SKU pinned and left to the policy"
  FROM unnest(ARRAY['acme', 'globex']) AS t(tenant)
  LEFT JOIN inventory.allocation_policy AS p ON p.tenant = t.tenant
  LEFT JOIN multi AS m ON m.tenant = t.tenant
 GROUP BY t.tenant, p.allow_split
 ORDER BY t.tenant;
SQL
# acme may not split: a line at several locations there is pinned or amended
read -r acme_split globex_split < <(op_val -F ' ' -c "WITH multi AS ($MULTI)
	SELECT count(*) FILTER (WHERE tenant = 'acme' AND NOT pinned AND NOT amended),
		   count(*) FILTER (WHERE tenant = 'globex' AND NOT pinned AND NOT amended) FROM multi")
op_sql <<SQL
WITH multi AS ($MULTI),
first AS (SELECT id, sku FROM multi WHERE tenant = 'globex' AND NOT pinned
		   ORDER BY amended, request_key LIKE 'story-%', id LIMIT 1)
SELECT r.tenant, r.request_key, r.state, l.sku,
	   string_agg(concat(l.location, ' ', l.quantity), ', ' ORDER BY c.priority) AS "example split line: location units"
  FROM first AS f
  JOIN inventory.reservation AS r ON r.id = f.id
  JOIN inventory.reservation_line AS l ON l.reservation_id = f.id AND l.sku = f.sku
  JOIN inventory.location AS c ON c.tenant = l.tenant AND c.location = l.location
 GROUP BY r.tenant, r.request_key, r.state, l.sku;
SQL

sub "click and collect: lines pinned to the store"
op_sql <<'SQL'
SELECT r.tenant, count(*) FILTER (WHERE r.state <> 'rejected') AS "held at the store",
	   count(*) FILTER (WHERE r.state = 'rejected') AS "in refused carts",
	   sum(e.quantity) FILTER (WHERE r.state <> 'rejected') AS units
  FROM inventory.reservation AS r
  CROSS JOIN LATERAL jsonb_to_recordset(r.request) AS e(sku text, location text, quantity integer)
 WHERE e.location = 'store' AND (r.request_key LIKE 'cart-%' OR r.request_key LIKE 'story-%')
 GROUP BY r.tenant ORDER BY r.tenant;
SQL

sub "the life of a hold: amend and extend in the workload (transitions pending -> pending)"
op_sql <<'SQL'
SELECT r.tenant, t.reason AS "call", count(*) AS "applied",
	   count(*) FILTER (WHERE r.state = 'confirmed') AS "now confirmed"
  FROM inventory.reservation_transition AS t
  JOIN inventory.reservation AS r ON r.id = t.reservation_id
 WHERE t.from_state = 'pending' AND t.to_state = 'pending'
 GROUP BY r.tenant, t.reason ORDER BY r.tenant, t.reason;
SQL

sub "stock level events by location (stock.out_of_stock, stock.back_in_stock, stock.low)"
op_sql <<'SQL'
SELECT o.tenant, o.payload->>'location' AS location,
	   count(*) FILTER (WHERE o.event_type = 'stock.out_of_stock') AS out_of_stock,
	   count(*) FILTER (WHERE o.event_type = 'stock.back_in_stock') AS back_in_stock,
	   count(*) FILTER (WHERE o.event_type = 'stock.low') AS low,
	   count(DISTINCT o.payload->>'sku') AS skus
  FROM inventory.outbox AS o
  JOIN inventory.location AS c ON c.tenant = o.tenant AND c.location = o.payload->>'location'
 WHERE o.event_type IN ('stock.out_of_stock', 'stock.back_in_stock', 'stock.low')
 GROUP BY o.tenant, o.payload->>'location', c.priority
 ORDER BY o.tenant, c.priority;
SQL

sub "the most requested SKUs (the first five start with little stock and sell out)"
op_sql <<'SQL'
WITH demand AS (
	SELECT l.tenant, l.sku, sum(l.quantity) AS requested,
		   count(*) FILTER (WHERE r.state = 'rejected') AS rejected
	  FROM inventory.reservation_line AS l
	  JOIN inventory.reservation AS r ON r.id = l.reservation_id
	 GROUP BY l.tenant, l.sku),
received AS (
	SELECT tenant, sku, sum(delta) AS received
	  FROM inventory.stock_ledger GROUP BY tenant, sku)
SELECT s.tenant, s.sku, d.requested AS "units requested", g.received AS "units received",
	   s.available, s.reserved, s.consumed, d.rejected AS "lines in rejected reservations"
  FROM demand AS d
  JOIN inventory.stock AS s ON s.tenant = d.tenant AND s.sku = d.sku
  JOIN received AS g ON g.tenant = d.tenant AND g.sku = d.sku
 ORDER BY d.requested DESC, s.tenant, s.sku
 LIMIT 8;
SQL

sub "outbox events by type"
op_sql <<'SQL'
SELECT event_type, count(*) AS events
  FROM inventory.outbox GROUP BY event_type ORDER BY event_type;
SQL

sub "throughput"
read -r reservations calls < <(op_val -F ' ' -c "SELECT count(*),
	(SELECT count(*) FROM inventory.reservation_transition t
	  WHERE t.actor = 'shop_app' AND t.to_state IN ('confirmed', 'cancelled'))
	FROM inventory.reservation WHERE request_key LIKE 'item-%' OR request_key LIKE 'cart-%'")
elapsed=$(awk "BEGIN{printf \"%.1f\", $end_epoch - $start_epoch}")
printf '  %-44s %s\n' \
	"shop transactions (pgbench, $CLIENTS clients)" "$txns in ${SECONDS_RUN} s, ${failed:-0} failed" \
	"shop transactions per second (pgbench tps)" "$(awk "BEGIN{printf \"%.1f\", $tps}")" \
	"average latency of a shop transaction" "$latency" \
	"reserve/reserve_lines calls" "$reservations ($(awk "BEGIN{printf \"%.0f\", $reservations / $elapsed}")/s over $elapsed s)" \
	"confirm/cancel calls that changed state" "$calls" \
	"operator transactions (expire_due, restock)" "$op_txns"
echo

sub "delivery: outbox -> relays -> RabbitMQ -> fulfiller"
read -r published first_pub last_pub lag_max lag_p50 lag_p99 < <(su_sql -At -F ' ' -c "SELECT count(*),
	extract(epoch FROM min(published_at)), extract(epoch FROM max(published_at)),
	round(extract(epoch FROM max(published_at - created_at))::numeric * 1000, 1),
	round(extract(epoch FROM percentile_cont(0.5) WITHIN GROUP (ORDER BY published_at - created_at))::numeric * 1000, 1),
	round(extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY published_at - created_at))::numeric * 1000, 1)
	FROM inventory.outbox WHERE published_at IS NOT NULL")
read -r requests failures compensated_res confirmed_events < <(su_sql -At -F ' ' -c "SELECT
	(SELECT count(*) FROM fulfillment.request), (SELECT count(*) FROM fulfillment.failure),
	(SELECT count(*) FROM inventory.reservation WHERE state = 'compensated'),
	(SELECT count(*) FROM inventory.outbox WHERE event_type = 'reservation.confirmed')")
relay_pub=$(($(final relay-a.log published) + $(final relay-b.log published)))
relay_retried=$(($(final relay-a.log retried) + $(final relay-b.log retried)))
relay_dead=$(($(final relay-a.log dead_lettered) + $(final relay-b.log dead_lettered)))
crash_confirmed=$(sed -n 's/.*event=test_crash_after_confirm confirmed=\([0-9]*\).*/\1/p' "$WORK/relay-crash.log")
consumed=$(final fulfiller.log consumed)
dedup=$(final fulfiller.log deduplicated)
redelivered=$(final fulfiller.log redelivered)
crash_committed=$(grep -c 'event=test_crash_after_commit' "$WORK/fulfiller-crash.log" || true)
audit=$(rmq_ctl list_queues name messages | awk '$1 == "inventory.audit" {print $2}')
relay_span=$(awk "BEGIN{s = $last_pub - $first_pub; printf \"%.1f\", s}")
printf '  %-52s %s\n' \
	"events published (outbox rows with published_at)" "$published" \
	"  by relay-a + relay-b (confirmed, then marked)" "$relay_pub (retried $relay_retried, dead-lettered $relay_dead)" \
	"  relay throughput (published / first-to-last span)" "$(awk "BEGIN{printf \"%.0f\", $published / ($relay_span > 0 ? $relay_span : 1)}") events/s over $relay_span s" \
	"fault drill: relay killed after the broker confirmed" "${crash_confirmed:-0} events, published again after its lease ran out" \
	"messages in queue inventory.audit (bound with '#')" "${audit:-?} (events published + the drill's duplicates)" \
	"fault drill: fulfiller killed after its commit" "$crash_committed commit not acked, redelivered" \
	"messages consumed by the fulfiller" "$consumed ($redelivered redelivered)" \
	"  deduplicated by event_id (inbox)" "$dedup" \
	"reservation.confirmed events" "$confirmed_events" \
	"  fulfillment requests" "$requests" \
	"  compensations (warehouse cannot ship the SKU)" "$failures ($compensated_res reservations now compensated)" \
	"end-to-end lag created -> published: p50 / p99 / max" "$lag_p50 / $lag_p99 / $lag_max ms"
echo

sub "scraped from each program's /metrics (Prometheus text) and /healthz before it stopped"
# show SERIES... of the scrape NAME, one per line
show_metrics() {
	local name=$1
	shift
	printf '  %s on 127.0.0.1:%s, /healthz: %s\n' "$name" "$(cat "$WORK/$name.port")" "$(cat "$WORK/$name.health")"
	local m
	for m in "$@"; do
		grep -F -- "$m " "$WORK/$name.metrics" | grep -v '^#' | sed 's/^/    /' || true
	done
}
for r in a b; do
	show_metrics "relay-$r" inventory_relay_events_published_total \
		'inventory_relay_events_failed_total{reason="nacked"}' \
		'inventory_relay_events_failed_total{reason="returned"}' \
		inventory_relay_events_dead_lettered_total inventory_relay_outbox_backlog_events \
		inventory_relay_outbox_oldest_unpublished_age_seconds \
		inventory_relay_publish_lag_seconds_count inventory_relay_publish_lag_seconds_sum \
		'inventory_relay_publish_lag_seconds_bucket{le="0.1"}' \
		inventory_relay_batch_duration_seconds_count inventory_relay_batch_duration_seconds_sum
done
show_metrics fulfiller inventory_fulfiller_messages_consumed_total \
	inventory_fulfiller_messages_redelivered_total inventory_fulfiller_events_deduplicated_total \
	inventory_fulfiller_events_fulfilled_total inventory_fulfiller_compensations_total \
	inventory_fulfiller_events_held_total inventory_fulfiller_processing_duration_seconds_count
# the scrapes agree with the logs: what the relays counted as published
scraped_pub=$(cat "$WORK/relay-a.metrics" "$WORK/relay-b.metrics" |
	awk '$1 == "inventory_relay_events_published_total" {s += $2} END {print s + 0}')
printf '  %-52s %s\n' \
	"published: the relays' /metrics / their final stats" "$scraped_pub / $relay_pub"
echo

sub "SELECT * FROM inventory.check_invariants()   -- healthy: no rows"
op_sql -P footer=on -c 'SELECT * FROM inventory.check_invariants()'
problems=$(op_val -c 'SELECT count(*) FROM inventory.check_invariants()')

sub "every change wrote exactly one outbox event (stock level events counted apart)"
# a level event has no transition or ledger row; each stock event (ledger
# record or level change) bumps its (sku, location)'s stock version once
read -r events changes levels versions ledger < <(op_val -F ' ' -c "SELECT (SELECT count(*) FROM inventory.outbox),
	(SELECT count(*) FROM inventory.reservation_transition WHERE to_state <> 'rejected')
	+ (SELECT count(*) FROM inventory.stock_ledger),
	(SELECT count(*) FROM inventory.outbox
	  WHERE event_type IN ('stock.out_of_stock', 'stock.back_in_stock', 'stock.low')),
	(SELECT sum(version) FROM inventory.stock_location),
	(SELECT count(*) FROM inventory.stock_ledger)")
printf '  outbox events %s, state changes + ledger records %s + stock level events %s\n' "$events" "$changes" "$levels"
printf '  stock versions %s, ledger records %s + stock level events %s\n' "$versions" "$ledger" "$levels"

if [ "$scraped_pub" -ne "$relay_pub" ]; then
	die "the relays' /metrics say $scraped_pub events published, their final stats $relay_pub"
fi
if [ "$((requests + failures))" -ne "$confirmed_events" ]; then
	die "$confirmed_events confirmations, but $requests requests + $failures compensations"
fi
if [ "$published" -ne "$events" ]; then
	die "$((events - published)) of $events events were not published"
fi
if [ "$problems" -ne 0 ]; then
	die "check_invariants() returned $problems rows"
fi
if [ "$events" -ne "$((changes + levels))" ]; then
	die "outbox events ($events) differ from state changes + ledger records + stock level events ($changes + $levels)"
fi
if [ "$versions" -ne "$((ledger + levels))" ]; then
	die "stock versions ($versions) differ from ledger records + stock level events ($ledger + $levels)"
fi
if [ "$acme_split" -ne 0 ]; then
	die "acme may not split a line, yet $acme_split lines are held at several locations"
fi
if [ "$globex_split" -eq 0 ]; then
	die "globex may split a line, yet no line was split"
fi
echo
echo "demo OK: $reservations reservations under load, $published events relayed ($levels stock level events), $globex_split split lines, $requests fulfillment requests, $dedup duplicates absorbed, invariants hold"
