// src/common/support.h: what inventory-relay and inventory-fulfiller share.
//
// One-line key=value logs on stderr, option values with environment
// fallbacks, an exponential backoff with jitter, a SIGTERM/SIGINT flag, and
// a small RAII wrapper over a rabbitmq-c 0.11 connection (one channel) that
// turns every failure into an AmqpError.
#ifndef PG_INVENTORY_COMMON_SUPPORT_H
#define PG_INVENTORY_COMMON_SUPPORT_H

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include <amqp.h>

namespace pgi {

/// A key and its value in a log line.
using Field = std::pair<std::string, std::string>;

/// Writes one line `ts=... prog=... event=EVENT k=v ...` to stderr; values
/// with spaces, quotes or '=' are double-quoted.  PROG is set once by
/// set_program().
void log(const std::string &event, std::initializer_list<Field> fields = {});

/// Sets the program name that every log line carries.
void set_program(const std::string &name);

/// The value of environment variable NAME, or FALLBACK when unset or empty.
std::string env_or(const char *name, const std::string &fallback);

/// True when environment variable NAME is set to something other than
/// "", "0" or "false" (the test hooks).
bool env_flag(const char *name);

/// Parses a whole non-negative integer (throws std::invalid_argument naming
/// WHAT otherwise).
long long parse_count(const std::string &text, const std::string &what);

/// Parses a duration: a number with an optional unit ms, s (default), m
/// or h, e.g. "30", "1.5s", "250ms".  Returns milliseconds; throws
/// std::invalid_argument naming WHAT.
long long parse_duration_ms(const std::string &text, const std::string &what);

/// hostname-pid: the default name of a relay or consumer.
std::string default_name();

/// Installs handlers for SIGTERM and SIGINT that set stop_requested().
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
  Backoff(long long base_ms, long long cap_ms);
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

/// A failure of the broker connection (or of the channel).
class AmqpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws AmqpError describing REPLY unless it is AMQP_RESPONSE_NORMAL.
void check_reply(const amqp_rpc_reply_t &reply, const std::string &what);

/// One connection to the broker with channel 1 open.  The destructor closes
/// it (politely when it is still up).
class AmqpConnection {
 public:
  /// Connects to URL (amqp://user:pass@host:port[/vhost]), logs in, opens
  /// channel 1.  HEARTBEAT in seconds (0: none); TIMEOUT_MS bounds the TCP
  /// connect.  Throws AmqpError.
  AmqpConnection(const std::string &url, int heartbeat, int timeout_ms);
  ~AmqpConnection();
  AmqpConnection(const AmqpConnection &) = delete;
  AmqpConnection &operator=(const AmqpConnection &) = delete;

  /// The rabbitmq-c connection state.
  amqp_connection_state_t state() const { return cx_; }
  /// The channel in use (1).
  static constexpr amqp_channel_t channel = 1;

  /// Declares a durable topic exchange NAME (idempotent).
  void declare_exchange(const std::string &name);
  /// Declares a durable queue NAME (idempotent) and binds it to EXCHANGE
  /// with KEY.
  void declare_bound_queue(const std::string &name,
                           const std::string &exchange,
                           const std::string &key);
  /// Puts the channel in publisher-confirm mode.
  void confirm_select();

  /// Marks the connection unusable: the destructor will not try to close
  /// it politely.
  void mark_broken() { broken_ = true; }

 private:
  amqp_connection_state_t cx_ = nullptr;
  bool broken_ = false;
};

/// The text of B.
inline std::string to_string(amqp_bytes_t b) {
  return std::string(static_cast<const char *>(b.bytes), b.len);
}

/// Milliseconds since an arbitrary start (steady clock).
inline long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

} // namespace pgi

#endif
