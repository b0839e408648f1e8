#!/usr/bin/env bash
# test/scripts/demo.sh (`make demo`): pg_inventory under a realistic load,
# end to end, in about a minute.
#
#  1. installs the packages (deps.sh), builds and installs the extension;
#  2. starts a throwaway PostgreSQL 15 with the expiry worker preloaded
#     (pg_inventory.worker_database = 'demo'), creates database demo with
#     the extension and two roles:
#       shop_app            the application: reserve, reserve_lines, confirm,
#                           cancel, lookup, granted tenants acme and globex
#       inventory_operator  restock, adjust, expire_due, check_invariants,
#                           grant_tenant, revoke_tenant, SELECT on the tables
#  3. the operator stocks a catalog: 2 tenants x 300 SKUs; the five best
#     sellers have little stock, so they run out and some reservations
#     come back `insufficient`;
#  4. pgbench drives it AS shop_app (8 clients, 20 s, the scripts in
#     test/bench/demo/: single items and 2-4 line carts, each confirmed,
#     cancelled or left to expire after 2 s) while a second pgbench AS
#     inventory_operator sweeps expire_due and delivers small restocks;
#  5. waits (bounded) until the reservations left behind have expired by
#     themselves, prints a report and runs inventory.check_invariants(),
#     which must return no rows; the demo fails if it returns any.
# The server is stopped and removed on exit.
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
HOT_STOCK=150
STOCK=5000
WORK=$(mktemp -d /tmp/pg_inventory_demo.XXXXXX)

step() { printf '\n== %s ==\n' "$*"; }
sub() { printf -- '-- %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

# psql in database demo: as the superuser (setup), the operator (reports)
su_sql() { psql -X -q -v ON_ERROR_STOP=1 -d demo "$@"; }
op_sql() { psql -X -q -v ON_ERROR_STOP=1 -P footer=off -d demo -U inventory_operator "$@"; }
op_val() { psql -X -q -v ON_ERROR_STOP=1 -At -d demo -U inventory_operator "$@"; }

cleanup() {
	if declare -F pg_destroy >/dev/null; then pg_destroy 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# ------------------------------------------------------------------ 1
step "1. packages and build"
bash test/scripts/deps.sh
if ! { make -s && make -s install; } >"$WORK/build.log" 2>&1; then
	tail -n 60 "$WORK/build.log"
	die "build failed"
fi
echo "pg_inventory built and installed"

# ------------------------------------------------------------------ 2
step "2. a throwaway PostgreSQL 15 with the expiry worker"
# shellcheck source=test/scripts/pg_env.sh
source test/scripts/pg_env.sh
PGI_CONF="shared_preload_libraries = 'pg_inventory'
pg_inventory.worker_database = 'demo'
pg_inventory.worker_interval = 500" pg_start
echo "server on port $PGPORT (data, socket and log in $PGI_DIR)"

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
	inventory.lookup(text, text)
	TO shop_app;

-- the operator: stock movements, expiry, checks and tenant grants, and it
-- reads every table
CREATE ROLE inventory_operator LOGIN;
GRANT USAGE ON SCHEMA inventory TO inventory_operator;
GRANT EXECUTE ON FUNCTION
	inventory.restock(text, text, text, integer, text),
	inventory.adjust(text, text, text, bigint, text, text),
	inventory.expire_due(integer),
	inventory.check_invariants(),
	inventory.grant_tenant(text, regrole),
	inventory.revoke_tenant(text, regrole)
	TO inventory_operator;
GRANT SELECT ON ALL TABLES IN SCHEMA inventory TO inventory_operator;
SQL
echo "database demo: extension pg_inventory $(su_sql -At -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_inventory'"), roles shop_app and inventory_operator"

# ------------------------------------------------------------------ 3
step "3. the operator stocks the catalog and grants the shop its tenants"
op_sql -v skus=$SKUS -v hot=$HOT_SKUS -v hot_stock=$HOT_STOCK -v stock=$STOCK <<'SQL'
SELECT bool_and(inventory.grant_tenant(t, 'shop_app')) AS granted
  FROM unnest(ARRAY['acme', 'globex']) AS t \gset
-- opening stock: one receipt per SKU, each with its own request key
SELECT count(inventory.restock(t, concat('opening-', s), concat('sku-', lpad(s::text, 4, '0')),
		CASE WHEN s <= :hot THEN :hot_stock ELSE :stock END, 'opening stock')) AS receipts
  FROM unnest(ARRAY['acme', 'globex']) AS t, generate_series(1, :skus) AS s \gset
SELECT tenant, count(*) AS skus, sum(available) AS "units available",
	   count(*) FILTER (WHERE available <= :hot_stock) AS "SKUs with little stock"
  FROM inventory.stock GROUP BY tenant ORDER BY tenant;
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

# ------------------------------------------------------------------ 4
step "4. the workload: pgbench as shop_app for ${SECONDS_RUN}s, $CLIENTS clients"
cat <<EOF
  $BENCH/shop_reserve.sql  weight 7  reserve 1 item, then confirm 75% / cancel 15% / leave 10% to expire (ttl 2 s)
  $BENCH/shop_cart.sql     weight 3  reserve_lines 2-4 lines, then confirm 70% / cancel 15% / leave 15% to expire
  SKU popularity: random_exponential over $SKUS SKUs; sku-0001..sku-000$HOT_SKUS start with $HOT_STOCK units, the rest $STOCK
  alongside, as inventory_operator (4 calls/s): expire_due(500) x3, a 20-unit delivery of a best seller x1
EOF
start_epoch=$(op_val -c 'SELECT extract(epoch FROM clock_timestamp())')
pgbench -n -M prepared -d demo -U inventory_operator -c 1 -j 1 -T "$SECONDS_RUN" -R 4 \
	-f "$BENCH/operator_expire.sql@3" -f "$BENCH/operator_restock.sql@1" \
	>"$WORK/operator.log" 2>&1 &
op_pid=$!
shop_rc=0
pgbench -n -M prepared -d demo -U shop_app -c "$CLIENTS" -j "$JOBS" -T "$SECONDS_RUN" -P 5 \
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

sub "SELECT * FROM inventory.check_invariants()   -- healthy: no rows"
op_sql -P footer=on -c 'SELECT * FROM inventory.check_invariants()'
problems=$(op_val -c 'SELECT count(*) FROM inventory.check_invariants()')

sub "every change wrote exactly one outbox event"
read -r events changes < <(op_val -F ' ' -c "SELECT (SELECT count(*) FROM inventory.outbox),
	(SELECT count(*) FROM inventory.reservation_transition WHERE to_state <> 'rejected')
	+ (SELECT count(*) FROM inventory.stock_ledger)")
printf '  outbox events %s, state changes + ledger records %s\n' "$events" "$changes"

if [ "$problems" -ne 0 ]; then
	die "check_invariants() returned $problems rows"
fi
if [ "$events" -ne "$changes" ]; then
	die "outbox events ($events) differ from state changes + ledger records ($changes)"
fi
echo
echo "demo OK: $reservations reservations under load, invariants hold"
