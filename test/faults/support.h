// test/faults/support.h: helpers shared by the fault-injection tests.
//
// Every test makes its own database (fault_<name>) with pg_inventory in it
// and drops it at the end, so the tests are independent of each other and
// of whatever else runs on the server.  Connections take the server from
// the libpq environment (PGHOST, PGPORT, PGUSER); a test that needs the
// server calls PGI_REQUIRE_SERVER() first, which skips it without PGHOST.
#ifndef PG_INVENTORY_TEST_FAULTS_SUPPORT_H
#define PG_INVENTORY_TEST_FAULTS_SUPPORT_H

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

/// Skips the current test when no server is configured (PGHOST unset).
#define PGI_REQUIRE_SERVER()                                                  \
  do {                                                                        \
    if (!pgi::have_server())                                                  \
      GTEST_SKIP() << "PGHOST is not set: no PostgreSQL server to test";      \
  } while (0)

namespace pgi {

using namespace std::chrono_literals;

/// True when PGHOST is set, i.e. the runner gave the tests a server.
bool have_server();

/// The value of environment variable NAME, or FALLBACK when unset or empty.
std::string env_or(const char *name, const std::string &fallback);

/// A database of one test: fault_<name> with pg_inventory, dropped (with
/// FORCE, so leftover sessions do not keep it) when this object goes.
class TestDatabase {
 public:
  explicit TestDatabase(const std::string &name);
  ~TestDatabase();
  TestDatabase(const TestDatabase &) = delete;
  TestDatabase &operator=(const TestDatabase &) = delete;

  /// The database's name, fault_<name>.
  const std::string &name() const { return name_; }
  /// A libpq connection string for it (the rest comes from PG* variables).
  std::string conninfo() const;
  /// A new connection to it.
  std::unique_ptr<pqxx::connection> connect() const;

 private:
  std::string name_;
};

/// The code of an exception thrown by a database call: the SQLSTATE for
/// SQL errors (libpqxx 6.4 throws transaction_rollback subclasses without
/// one, so those are mapped back: 40001, 40P01, 40003, 40000), or
/// "broken_connection", "in_doubt", "other: <what>".
std::string error_code(const std::exception &e);

/// Runs FN and returns "" when it returned, else error_code() of what it
/// threw.
std::string code_of(const std::function<void()> &fn);

/// Runs one statement in autocommit on CX.
pqxx::result exec(pqxx::connection &cx, const std::string &sql);

/// Runs a one-row, one-column query and returns the value as a bigint.
long long scalar(pqxx::connection &cx, const std::string &sql);

/// The counters of one (tenant, sku); exists is false without a stock row.
struct StockCounts {
  bool exists = false;
  long long available = 0, reserved = 0, consumed = 0;
  bool operator==(const StockCounts &o) const {
    return exists == o.exists && available == o.available &&
           reserved == o.reserved && consumed == o.consumed;
  }
};
std::ostream &operator<<(std::ostream &os, const StockCounts &s);
StockCounts stock_counts(pqxx::connection &cx, const std::string &tenant,
                         const std::string &sku);

/// Row counts of every inventory table, keyed by table name.
std::map<std::string, long long> table_counts(pqxx::connection &cx);

/// The rows check_invariants() returns, one string each (empty: healthy).
std::vector<std::string> invariant_violations(pqxx::connection &cx);

/// An independent accounting of the whole database, one string per
/// mismatch (empty: consistent):
///  - per (tenant, sku): reserved = sum of the lines of pending
///    reservations, consumed = sum of confirmed lines, available + reserved
///    + consumed = sum of the ledger, available >= 0;
///  - per reservation: at least one line, transition rows = version (one
///    per version 1..version), outbox events = transitions, less one for a
///    stored rejection (which writes no event).
std::vector<std::string> accounting_mismatches(pqxx::connection &cx);

/// The outcome columns of a reservation function.
struct Outcome {
  std::string status;
  std::optional<std::string> state;
  bool applied = false;
  std::optional<long long> reservation_id;
  std::optional<long long> quantity;
};
/// Reads the outcome from the one row of R (SELECT * FROM inventory.f(...)).
Outcome outcome_of(const pqxx::result &r);

/// Calls FN every few milliseconds until it returns true or TIMEOUT
/// passes; returns whether it did.  For waiting on an observable condition
/// (a lock wait, a committed row), never as a blind delay.
bool poll_until(const std::function<bool()> &fn,
                std::chrono::milliseconds timeout = 10s);

/// Whether backend PID is waiting (not granted) on the advisory lock KEY
/// of CX's database, as the pause point makes it do.
bool waiting_on_advisory(pqxx::connection &cx, int pid, int key);

/// Holds pg_advisory_lock(KEY) on CX (exclusive) for its lifetime: every
/// call with pg_inventory.test_pause_lock = KEY stops at the pause point.
class AdvisoryLock {
 public:
  AdvisoryLock(pqxx::connection &cx, int key);
  ~AdvisoryLock();
  /// Lets paused calls go on.
  void release();

 private:
  pqxx::connection &cx_;
  int key_;
  bool held_ = false;
};

/// One call run in its own thread on its own connection of DB, with the
/// pause point armed (SET pg_inventory.test_pause_lock = KEY).  If it is
/// still running when this object goes, its backend is terminated first,
/// so a failed assertion never leaves the test waiting on it.
class PausedCall {
 public:
  using Call = std::function<void(pqxx::connection &)>;
  PausedCall(const TestDatabase &db, int key, Call call);
  ~PausedCall();
  PausedCall(const PausedCall &) = delete;
  PausedCall &operator=(const PausedCall &) = delete;

  /// The backend pid of the call's connection.
  int pid() const { return pid_; }
  /// Waits for the call to end; "" if it returned, else its error_code().
  std::string result();

 private:
  const TestDatabase &db_;
  std::unique_ptr<pqxx::connection> cx_;
  int pid_ = 0;
  std::string code_;
  std::thread thread_;
  bool joined_ = false;
};

/// pg_terminate_backend(PID) from CX, waiting up to 10 s for it to exit;
/// returns whether it is gone.
bool terminate_backend(pqxx::connection &cx, int pid);

/// pg_cancel_backend(PID) from CX; returns whether the signal was sent.
bool cancel_backend(pqxx::connection &cx, int pid);

/// A string of N copies of C.
inline std::string repeat(char c, std::size_t n) {
  return std::string(n, c);
}

} // namespace pgi

#endif
