// test/support/database.h: a throwaway database per test, SQL helpers,
// SQLSTATEs of exceptions, backend control, and waiting on a condition.
//
// libpqxx 6.4: pqxx::connection, pqxx::work / pqxx::nontransaction,
// exec_params, exec_prepared.
#ifndef PG_INVENTORY_TEST_SUPPORT_DATABASE_H
#define PG_INVENTORY_TEST_SUPPORT_DATABASE_H

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace pgi::test {

using namespace std::chrono_literals;

/// The database of one test, named NAME, with pg_inventory in it.  Made on
/// construction (after dropping a leftover of an interrupted run), dropped
/// WITH (FORCE) when this object goes, so that sessions the test left do
/// not keep it.  The tests are thus independent of each other and of
/// whatever else runs on the server.  The server is the one of the PG*
/// environment; the database is created and dropped from a connection to
/// PGDATABASE (else the user's database).
class TestDatabase {
 public:
  explicit TestDatabase(std::string name);
  ~TestDatabase();
  TestDatabase(const TestDatabase &) = delete;
  TestDatabase &operator=(const TestDatabase &) = delete;

  /// The database's name.
  const std::string &name() const { return name_; }
  /// A libpq connection string for it (the rest comes from PG* variables).
  std::string conninfo() const;
  /// A new connection to it.
  std::unique_ptr<pqxx::connection> connect() const;
  /// Runs SQL in autocommit on a new connection and returns the result.
  pqxx::result exec(const std::string &sql) const;
  /// Runs a one-row, one-column query on a new connection and returns the
  /// value as a bigint.
  long long scalar(const std::string &sql) const;

 private:
  std::string name_;
};

/// Runs SQL in autocommit on CX (several statements: one implicit
/// transaction) and returns the result of the last one.
pqxx::result exec(pqxx::connection &cx, const std::string &sql);

/// Runs a one-row, one-column query on CX and returns the value as a
/// bigint; throws unless the query returns exactly one row.
long long scalar(pqxx::connection &cx, const std::string &sql);

/// Runs a query on CX and returns its first column, one string per row:
/// for checks whose rows describe what is wrong (empty: all is well).
std::vector<std::string> text_rows(pqxx::connection &cx,
                                   const std::string &sql);

/// The code of an exception thrown by a database call: the SQLSTATE for
/// SQL errors (libpqxx 6.4 throws transaction_rollback subclasses and
/// insufficient_privilege without one, so those are mapped back: 40001,
/// 40P01, 40003, 40000, 42501), or
/// "broken_connection", "in_doubt", "other: <what>".
std::string error_code(const std::exception &e);

/// Runs FN and returns "" when it returned, else error_code() of what it
/// threw.
std::string code_of(const std::function<void()> &fn);

/// Calls FN every INTERVAL until it returns true or TIMEOUT has passed;
/// returns whether it did.  For waiting on an observable condition (a lock
/// wait, a committed row, a process's exit), never as a blind delay.
bool poll_until(const std::function<bool()> &fn,
                std::chrono::milliseconds timeout = 10s,
                std::chrono::milliseconds interval = 5ms);

/// poll_until() over SQL, a query of one boolean, run on one connection to
/// DB every 50 ms; returns whether it became true within TIMEOUT.
bool poll_sql(const TestDatabase &db, const std::string &sql,
              std::chrono::milliseconds timeout);

/// pg_terminate_backend(PID) from CX, waiting up to 10 s for it to exit;
/// returns whether it is gone.
bool terminate_backend(pqxx::connection &cx, int pid);

/// pg_cancel_backend(PID) from CX; returns whether the signal was sent.
bool cancel_backend(pqxx::connection &cx, int pid);

} // namespace pgi::test

#endif
