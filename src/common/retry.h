// src/common/retry.h: the one connection and retry policy of both
// programs, for PostgreSQL and RabbitMQ alike (failure.h says which
// failures are transient).
//
// A Link holds one connection.  get() connects when there is none: a
// transient failure is logged (`event=db_unavailable` /
// `broker_unavailable`, with the error and retry_in_ms) and waited out
// with exponential backoff and full jitter (a random delay between half
// and all of min(200 ms * 2^n, 10 s)); a permanent one (Fatal) goes up to
// the program's main and ends it.  lost() drops a connection that broke in
// use (`event=db_lost` / `broker_lost`); the next get() waits one backoff
// step before it connects again, so a peer that keeps failing is not
// hammered.  A stop request (SIGTERM/SIGINT) cuts every wait short.
#ifndef PG_INVENTORY_COMMON_RETRY_H
#define PG_INVENTORY_COMMON_RETRY_H

#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "failure.h"
#include "log.h"

namespace pgi {

/// Milliseconds since an arbitrary start (steady clock).
inline long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

/// Installs handlers for SIGTERM and SIGINT that set stop_requested(), and
/// ignores SIGPIPE.
void install_stop_handlers();

/// True after SIGTERM or SIGINT.
bool stop_requested();

/// Sleeps up to MS milliseconds, waking early (in 20 ms steps) when a stop
/// was requested.
void sleep_unless_stopped(long long ms);

/// Exponential backoff with full jitter: the n-th delay is a random value
/// between half and all of min(base * 2^n, cap) milliseconds.
class Backoff {
 public:
  Backoff(long long base_ms = 200, long long cap_ms = 10000);
  /// The next delay in milliseconds (and counts one more failure).
  long long next();
  /// After a success: the next delay starts from base again.
  void reset() { failures_ = 0; }
  /// Failures since the last reset().
  int failures() const { return failures_; }

 private:
  long long base_ms_, cap_ms_;
  int failures_ = 0;
  std::mt19937_64 rng_;
};

/// One connection (to PostgreSQL or RabbitMQ) kept up under the policy.
template <class Conn> class Link {
 public:
  /// Makes a connection ready for use, or throws: Fatal for a permanent
  /// failure, anything else for a transient one.
  using Connect = std::function<std::unique_ptr<Conn>()>;

  /// NAME ("db", "broker") prefixes the log events.
  Link(std::string name, Connect connect)
      : name_{std::move(name)}, connect_{std::move(connect)} {}

  /// The connection, made now if there is none; nullptr after a transient
  /// failure (logged and waited out: call again).  Throws Fatal.
  Conn *get() {
    if (conn_) return conn_.get();
    if (pause_first_) {
      pause_first_ = false;
      sleep_unless_stopped(backoff_.next());
      if (stop_requested()) return nullptr;
    }
    try {
      conn_ = connect_();
    } catch (const Fatal &) {
      throw;
    } catch (const std::exception &e) {
      const long long d = backoff_.next();
      log(name_ + "_unavailable",
          {{"error", e.what()}, {"retry_in_ms", std::to_string(d)}});
      sleep_unless_stopped(d);
      return nullptr;
    }
    if (was_lost_) ++reconnects_;
    was_lost_ = false;
    backoff_.reset();
    if (on_state_) on_state_(true);
    return conn_.get();
  }

  /// The connection if there is one (never connects).
  Conn *current() const { return conn_.get(); }

  /// Drops a connection that failed in use: logs NAME_lost with WHY; the
  /// next get() waits one backoff step first.  ON_DROP, if set, runs with
  /// the connection before it goes (e.g. to mark it broken).
  void lost(const std::string &why) {
    log(name_ + "_lost", {{"error", why}});
    if (conn_ && on_drop_) on_drop_(*conn_);
    conn_.reset();
    pause_first_ = true;
    was_lost_ = true;
    if (on_state_) on_state_(false);
  }

  /// Closes the connection normally (at the end of the program).
  void close() {
    conn_.reset();
    if (on_state_) on_state_(false);
  }

  /// Runs before a lost connection is destroyed.
  void on_drop(std::function<void(Conn &)> fn) { on_drop_ = std::move(fn); }

  /// Runs with true when a connection was made, with false when it was
  /// lost or closed (the health flags of metrics.h).
  void on_state(std::function<void(bool)> fn) { on_state_ = std::move(fn); }

  /// Connections made again after one was lost.
  long long reconnects() const { return reconnects_; }

 private:
  std::string name_;
  Connect connect_;
  std::function<void(Conn &)> on_drop_;
  std::function<void(bool)> on_state_;
  std::unique_ptr<Conn> conn_;
  Backoff backoff_;
  bool pause_first_ = false, was_lost_ = false;
  long long reconnects_ = 0;
};

} // namespace pgi

#endif
