// test/faults/support.cpp: helpers shared by the fault-injection tests
// (see support.h).
#include "support.h"

#include <cstdlib>
#include <ostream>

namespace pgi {

namespace {

/// A connection to the database the environment names (PGDATABASE, else
/// the user's): used to create and drop the test databases.
std::unique_ptr<pqxx::connection> admin_connection() {
  return std::make_unique<pqxx::connection>("");
}

} // namespace

bool have_server() {
  const char *host = std::getenv("PGHOST");
  return host != nullptr && *host != '\0';
}

std::string env_or(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string{v} : fallback;
}

TestDatabase::TestDatabase(const std::string &name) : name_{"fault_" + name} {
  auto admin = admin_connection();
  exec(*admin, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  exec(*admin, "CREATE DATABASE " + name_);
  try {
    auto cx = connect();
    exec(*cx, "CREATE EXTENSION pg_inventory");
  } catch (...) {
    // no destructor runs for a half-made object: drop it here
    exec(*admin, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    throw;
  }
}

TestDatabase::~TestDatabase() {
  try {
    auto admin = admin_connection();
    exec(*admin, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception &e) {
    ADD_FAILURE() << "could not drop database " << name_ << ": " << e.what();
  }
}

std::string TestDatabase::conninfo() const {
  return "dbname=" + name_;
}

std::unique_ptr<pqxx::connection> TestDatabase::connect() const {
  return std::make_unique<pqxx::connection>(conninfo());
}

std::string error_code(const std::exception &e) {
  if (auto *s = dynamic_cast<const pqxx::sql_error *>(&e))
    return s->sqlstate().empty()
             ? "sql_error without SQLSTATE: " + std::string{e.what()}
             : s->sqlstate();
  // libpqxx 6.4 throws these without a SQLSTATE; map them back
  if (dynamic_cast<const pqxx::deadlock_detected *>(&e)) return "40P01";
  if (dynamic_cast<const pqxx::serialization_failure *>(&e)) return "40001";
  if (dynamic_cast<const pqxx::statement_completion_unknown *>(&e))
    return "40003";
  if (dynamic_cast<const pqxx::transaction_rollback *>(&e)) return "40000";
  if (dynamic_cast<const pqxx::broken_connection *>(&e))
    return "broken_connection";
  if (dynamic_cast<const pqxx::in_doubt_error *>(&e)) return "in_doubt";
  return "other: " + std::string{e.what()};
}

std::string code_of(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const std::exception &e) {
    return error_code(e);
  }
  return "";
}

pqxx::result exec(pqxx::connection &cx, const std::string &sql) {
  pqxx::nontransaction tx{cx};
  return tx.exec(sql);
}

long long scalar(pqxx::connection &cx, const std::string &sql) {
  pqxx::nontransaction tx{cx};
  return tx.exec1(sql)[0].as<long long>();
}

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
  pqxx::nontransaction tx{cx};
  auto r = tx.exec("SELECT coalesce(tenant, '-') || '/' || coalesce(sku, '-')"
                   " || ' ' || check_name || ': ' || coalesce(detail, '')"
                   " FROM inventory.check_invariants()");
  std::vector<std::string> rows;
  for (const auto &row : r) rows.push_back(row[0].as<std::string>());
  return rows;
}

std::vector<std::string> accounting_mismatches(pqxx::connection &cx) {
  // One statement, so one snapshot, independent of check_invariants().
  static const char *const sql = R"SQL(
WITH lines AS (
  SELECT l.tenant, l.sku,
         coalesce(sum(l.quantity) FILTER (WHERE r.state = 'pending'), 0)
           AS pending,
         coalesce(sum(l.quantity) FILTER (WHERE r.state = 'confirmed'), 0)
           AS confirmed
    FROM inventory.reservation_line l
    JOIN inventory.reservation r ON r.id = l.reservation_id
   GROUP BY l.tenant, l.sku),
ledger AS (
  SELECT tenant, sku, sum(delta) AS net, count(*) AS records
    FROM inventory.stock_ledger GROUP BY tenant, sku),
stock_events AS (
  SELECT tenant, payload->>'sku' AS sku, count(*) AS events
    FROM inventory.outbox WHERE event_type LIKE 'stock.%'
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
  pqxx::nontransaction tx{cx};
  std::vector<std::string> rows;
  for (const auto &row : tx.exec(sql))
    rows.push_back(row[0].as<std::string>());
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

bool poll_until(const std::function<bool()> &fn,
                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (fn()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

bool waiting_on_advisory(pqxx::connection &cx, int pid, int key) {
  pqxx::nontransaction tx{cx};
  // a bigint advisory key shows as classid (high half), objid (low half),
  // objsubid 1
  auto r = tx.exec_params1(
    "SELECT count(*) FROM pg_catalog.pg_locks"
    " WHERE locktype = 'advisory'"
    "   AND database = (SELECT oid FROM pg_catalog.pg_database"
    "                    WHERE datname = current_database())"
    "   AND classid = 0 AND objid = $2::bigint::oid AND objsubid = 1"
    "   AND pid = $1 AND NOT granted",
    pid, key);
  return r[0].as<long long>() == 1;
}

AdvisoryLock::AdvisoryLock(pqxx::connection &cx, int key)
    : cx_{cx}, key_{key} {
  pqxx::nontransaction tx{cx_};
  tx.exec_params("SELECT pg_advisory_lock($1::bigint)", key_);
  held_ = true;
}

AdvisoryLock::~AdvisoryLock() {
  try {
    release();
  } catch (const std::exception &) {
    // the connection is gone, and with it the lock
  }
}

void AdvisoryLock::release() {
  if (!held_) return;
  held_ = false;
  pqxx::nontransaction tx{cx_};
  tx.exec_params("SELECT pg_advisory_unlock($1::bigint)", key_);
}

PausedCall::PausedCall(const TestDatabase &db, int key, Call call)
    : db_{db}, cx_{db.connect()} {
  pqxx::nontransaction tx{*cx_};
  tx.exec("SET pg_inventory.test_pause_lock = " + std::to_string(key));
  tx.commit();
  pid_ = cx_->backendpid();
  thread_ = std::thread{
    [this, call = std::move(call)] { code_ = code_of([&] { call(*cx_); }); }};
}

PausedCall::~PausedCall() {
  if (joined_) return;
  try {
    auto cx = db_.connect();
    terminate_backend(*cx, pid_);
  } catch (const std::exception &e) {
    ADD_FAILURE() << "could not end paused call: " << e.what();
  }
  thread_.join();
}

std::string PausedCall::result() {
  if (!joined_) {
    thread_.join();
    joined_ = true;
  }
  return code_;
}

bool terminate_backend(pqxx::connection &cx, int pid) {
  pqxx::nontransaction tx{cx};
  // PostgreSQL 14+: the timeout makes it wait until the backend has exited,
  // so its transaction has been rolled back and its locks are gone
  return tx.exec_params1("SELECT pg_terminate_backend($1, 10000)", pid)[0]
    .as<bool>();
}

bool cancel_backend(pqxx::connection &cx, int pid) {
  pqxx::nontransaction tx{cx};
  return tx.exec_params1("SELECT pg_cancel_backend($1)", pid)[0].as<bool>();
}

} // namespace pgi
