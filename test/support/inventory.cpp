// test/support/inventory.cpp: reading back pg_inventory's counters and
// checking its accounting (inventory.h).
#include "support/inventory.h"

#include <iterator>
#include <stdexcept>

#include "support/database.h"

namespace pgi::test {

std::ostream &operator<<(std::ostream &os, const StockCounts &s) {
  if (!s.exists) return os << "{no stock row}";
  return os << "{available " << s.available << ", reserved " << s.reserved
            << ", consumed " << s.consumed << "}";
}

StockCounts stock_counts(pqxx::connection &cx, const std::string &tenant,
                         const std::string &sku) {
  pqxx::nontransaction tx{cx};
  auto r = tx.exec_params("SELECT available, reserved, consumed"
                          " FROM inventory.stock"
                          " WHERE tenant = $1 AND sku = $2",
                          tenant, sku);
  StockCounts s;
  if (r.empty()) return s;
  s.exists = true;
  s.available = r[0][0].as<long long>();
  s.reserved = r[0][1].as<long long>();
  s.consumed = r[0][2].as<long long>();
  return s;
}

std::map<std::string, long long> table_counts(pqxx::connection &cx) {
  static const char *const tables[] = {"stock",
                                       "reservation",
                                       "reservation_line",
                                       "stock_ledger",
                                       "reservation_transition",
                                       "tenant_member",
                                       "outbox"};
  std::string sql = "SELECT ";
  bool first = true;
  for (const char *t : tables) {
    if (!first) sql += ", ";
    first = false;
    sql += "(SELECT count(*) FROM inventory." + std::string{t} + ")";
  }
  pqxx::nontransaction tx{cx};
  auto row = tx.exec1(sql); // one statement: one snapshot
  std::map<std::string, long long> counts;
  for (std::size_t i = 0; i < std::size(tables); ++i)
    counts[tables[i]] = row[static_cast<int>(i)].as<long long>();
  return counts;
}

std::vector<std::string> invariant_violations(pqxx::connection &cx) {
  return text_rows(cx,
                   "SELECT coalesce(tenant, '-') || '/' || coalesce(sku, '-')"
                   " || ' ' || check_name || ': ' || coalesce(detail, '')"
                   " FROM inventory.check_invariants()");
}

std::vector<std::string> accounting_mismatches(pqxx::connection &cx) {
  // One statement, so one snapshot, independent of check_invariants().
  static const char *const sql = R"SQL(
WITH lines AS (
  SELECT l.tenant, l.sku,
         coalesce(sum(l.quantity) FILTER (WHERE l.state = 'pending'), 0)
           AS pending,
         coalesce(sum(l.quantity) FILTER (WHERE l.state = 'confirmed'), 0)
           AS confirmed
    FROM (SELECT l.tenant, l.sku, l.quantity, r.state
            FROM inventory.reservation_line l
            JOIN inventory.reservation r ON r.id = l.reservation_id
          -- the confirmed units of reservations purge_history removed
          -- (0.5 on; none before)
          UNION ALL
          SELECT p.tenant, p.sku, p.quantity, 'confirmed'
            FROM inventory.purged_confirmed p) l
   GROUP BY l.tenant, l.sku),
ledger AS (
  SELECT tenant, sku, sum(delta) AS net, count(*) AS records
    FROM inventory.stock_ledger GROUP BY tenant, sku),
stock_events AS (
  SELECT tenant, payload->>'sku' AS sku, count(*) AS events
    FROM inventory.outbox
   WHERE event_type IN ('stock.restocked', 'stock.adjusted')
   GROUP BY 1, 2)
SELECT format('stock %s/%s: available %s reserved %s (pending lines %s) '
              'consumed %s (confirmed lines %s) ledger net %s; '
              'ledger records %s, stock events %s',
              s.tenant, s.sku, s.available, s.reserved,
              coalesce(l.pending, 0), s.consumed, coalesce(l.confirmed, 0),
              coalesce(g.net, 0), coalesce(g.records, 0),
              coalesce(e.events, 0))
  FROM inventory.stock s
  LEFT JOIN lines l ON l.tenant = s.tenant AND l.sku = s.sku
  LEFT JOIN ledger g ON g.tenant = s.tenant AND g.sku = s.sku
  LEFT JOIN stock_events e ON e.tenant = s.tenant AND e.sku = s.sku
 WHERE s.available < 0
    OR s.reserved <> coalesce(l.pending, 0)
    OR s.consumed <> coalesce(l.confirmed, 0)
    OR s.available + s.reserved + s.consumed <> coalesce(g.net, 0)
    OR coalesce(g.records, 0) <> coalesce(e.events, 0)
UNION ALL
SELECT format('reservation %s (%s/%s) %s version %s: %s lines, '
              '%s transitions (versions %s..%s), %s events',
              r.id, r.tenant, r.request_key, r.state, r.version, l.n, t.n,
              t.lo, t.hi, o.n)
  FROM inventory.reservation r
  CROSS JOIN LATERAL (SELECT count(*) AS n
                        FROM inventory.reservation_line
                       WHERE reservation_id = r.id) l
  CROSS JOIN LATERAL (SELECT count(*) AS n, min(version) AS lo,
                             max(version) AS hi
                        FROM inventory.reservation_transition
                       WHERE reservation_id = r.id) t
  CROSS JOIN LATERAL (SELECT count(*) AS n
                        FROM inventory.outbox
                       WHERE reservation_id = r.id) o
 WHERE l.n = 0 OR t.n <> r.version OR t.lo <> 1 OR t.hi <> r.version
    OR o.n <> t.n - CASE WHEN r.state = 'rejected' THEN 1 ELSE 0 END
)SQL";
  // 0.5 (inventory.stock_location): per (tenant, sku, location), every
  // stock event (ledger records and level changes) takes one stock version,
  // so their versions are 1..version, once each; and the level events
  // chain: an event follows an out_of_stock one exactly when its
  // previous_level is out_of_stock (entering and leaving out of stock
  // always write an event, low -> in_stock writes none)
  static const char *const located_sql = R"SQL(
WITH e AS (
  SELECT o.tenant, o.payload->>'sku' AS sku, o.payload->>'location' AS location,
         o.event_type, (o.payload->>'version')::bigint AS version,
         o.payload->>'level' AS level, o.payload->>'previous_level' AS previous
    FROM inventory.outbox o WHERE o.event_type LIKE 'stock.%'),
v AS (
  SELECT tenant, sku, location, count(*) AS n,
         count(DISTINCT version) AS distinct_versions, min(version) AS lo,
         max(version) AS hi
    FROM e GROUP BY 1, 2, 3),
chain AS (
  SELECT e.*, lag(e.level) OVER (PARTITION BY e.tenant, e.sku, e.location
                                 ORDER BY e.version) AS level_before
    FROM e WHERE e.level IS NOT NULL)
SELECT format('stock %s/%s at %s: version %s, %s stock events with versions '
              '%s..%s (%s distinct)', sl.tenant, sl.sku, sl.location,
              sl.version, coalesce(v.n, 0), v.lo, v.hi,
              coalesce(v.distinct_versions, 0))
  FROM inventory.stock_location sl
  LEFT JOIN v ON v.tenant = sl.tenant AND v.sku = sl.sku
   AND v.location = sl.location
 WHERE coalesce(v.n, 0) <> sl.version
    OR coalesce(v.distinct_versions, 0) <> sl.version
    OR coalesce(v.lo, 1) <> 1 OR coalesce(v.hi, 0) <> sl.version
UNION ALL
SELECT format('level event %s %s/%s at %s version %s: previous_level %s, '
              'but the level event before it says %s', c.event_type,
              c.tenant, c.sku, c.location, c.version, c.previous,
              c.level_before)
  FROM chain c
 WHERE c.level_before IS NOT NULL
   AND (c.level_before = 'out_of_stock') <>
       (c.previous IS NOT DISTINCT FROM 'out_of_stock')
)SQL";
  std::vector<std::string> rows = text_rows(cx, sql);
  if (text_rows(cx, "SELECT to_regclass('inventory.stock_location')"
                    " IS NOT NULL")
        .at(0) == "t") {
    std::vector<std::string> more = text_rows(cx, located_sql);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

Outcome outcome_of(const pqxx::result &r) {
  if (r.size() != 1)
    throw std::runtime_error("expected one outcome row, got " +
                             std::to_string(r.size()));
  const auto row = r[0];
  Outcome o;
  o.status = row["status"].as<std::string>();
  if (!row["state"].is_null()) o.state = row["state"].as<std::string>();
  o.applied = row["applied"].as<bool>();
  if (!row["reservation_id"].is_null())
    o.reservation_id = row["reservation_id"].as<long long>();
  if (!row["quantity"].is_null()) o.quantity = row["quantity"].as<long long>();
  return o;
}

} // namespace pgi::test
