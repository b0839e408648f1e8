// test/support/pause.h: the pause point, to stop a call in the middle of
// its transaction (test/faults/README.md, "The pause point").
//
// SET pg_inventory.test_pause_lock = K (superuser only) makes every stock
// change wait on the advisory lock K right after it updated the stock
// rows, holding their row locks.  A test holds the lock (AdvisoryLock),
// runs the call in a thread (PausedCall), waits until waiting_on_advisory()
// sees it stopped, and then kills, cancels or releases it.
#ifndef PG_INVENTORY_TEST_SUPPORT_PAUSE_H
#define PG_INVENTORY_TEST_SUPPORT_PAUSE_H

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <pqxx/pqxx>

#include "support/database.h"

namespace pgi::test {

/// Whether backend PID is waiting (not granted) on the advisory lock KEY
/// of CX's database, as the pause point makes it do.
bool waiting_on_advisory(pqxx::connection &cx, int pid, int key);

/// Holds pg_advisory_lock(KEY) on CX (exclusive) for its lifetime: every
/// call with pg_inventory.test_pause_lock = KEY stops at the pause point.
class AdvisoryLock {
 public:
  AdvisoryLock(pqxx::connection &cx, int key);
  ~AdvisoryLock();
  AdvisoryLock(const AdvisoryLock &) = delete;
  AdvisoryLock &operator=(const AdvisoryLock &) = delete;
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

} // namespace pgi::test

#endif
