// test/support/pause.cpp: the pause point (pause.h).
#include "support/pause.h"

#include <gtest/gtest.h>

namespace pgi::test {

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

} // namespace pgi::test
