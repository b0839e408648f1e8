// test/support/database.cpp: a database per test, SQL helpers, SQLSTATEs,
// backend control and polling (database.h).
#include "support/database.h"

#include <thread>

#include <gtest/gtest.h>

namespace pgi::test {

namespace {

/// Drops database NAME, WITH (FORCE): sessions left in it are ended.  Runs
/// on a connection to the database the environment names (PGDATABASE, else
/// the user's), as CREATE DATABASE does.
void drop_database(const std::string &name) {
  pqxx::connection admin{""};
  exec(admin,
       "DROP DATABASE IF EXISTS " + admin.quote_name(name) + " WITH (FORCE)");
}

} // namespace

TestDatabase::TestDatabase(std::string name) : name_{std::move(name)} {
  drop_database(name_); // a leftover of an interrupted run
  {
    pqxx::connection admin{""};
    pgi::test::exec(admin, "CREATE DATABASE " + admin.quote_name(name_));
  }
  try {
    exec("CREATE EXTENSION pg_inventory");
  } catch (...) {
    // no destructor runs for a half-made object: drop it here
    drop_database(name_);
    throw;
  }
}

TestDatabase::~TestDatabase() {
  try {
    drop_database(name_);
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

pqxx::result TestDatabase::exec(const std::string &sql) const {
  auto cx = connect();
  return pgi::test::exec(*cx, sql);
}

long long TestDatabase::scalar(const std::string &sql) const {
  auto cx = connect();
  return pgi::test::scalar(*cx, sql);
}

pqxx::result exec(pqxx::connection &cx, const std::string &sql) {
  pqxx::nontransaction tx{cx};
  return tx.exec(sql);
}

long long scalar(pqxx::connection &cx, const std::string &sql) {
  pqxx::nontransaction tx{cx};
  return tx.exec1(sql)[0].as<long long>();
}

std::vector<std::string> text_rows(pqxx::connection &cx,
                                   const std::string &sql) {
  std::vector<std::string> rows;
  for (const auto &row : exec(cx, sql))
    rows.push_back(row[0].as<std::string>());
  return rows;
}

std::string error_code(const std::exception &e) {
  if (auto *s = dynamic_cast<const pqxx::sql_error *>(&e)) {
    if (!s->sqlstate().empty()) return s->sqlstate();
    // libpqxx 6.4 throws insufficient_privilege without its SQLSTATE
    if (dynamic_cast<const pqxx::insufficient_privilege *>(&e)) return "42501";
    return "sql_error without SQLSTATE: " + std::string{e.what()};
  }
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

bool poll_until(const std::function<bool()> &fn,
                std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (fn()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

bool poll_sql(const TestDatabase &db, const std::string &sql,
              std::chrono::milliseconds timeout) {
  auto cx = db.connect();
  return poll_until([&] { return exec(*cx, sql).at(0).at(0).as<bool>(); },
                    timeout, 50ms);
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

} // namespace pgi::test
