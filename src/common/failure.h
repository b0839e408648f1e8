// src/common/failure.h: how inventory-relay and inventory-fulfiller end.
//
// One policy for both programs and both peers (PostgreSQL, RabbitMQ):
//   - transient failures (a lost connection, a server or broker that is
//     restarting or not reachable yet, a serialization failure, a broker
//     closing the connection for shutdown) are retried with exponential
//     backoff and jitter (retry.h), for as long as it takes;
//   - permanent failures (what retrying cannot fix: wrong password, a
//     missing database, role, vhost, privilege or function, an exchange of
//     another type, a certificate that does not verify) are thrown as
//     Fatal, and the program ends within seconds with one log line
//     `event=fatal exit_code=N error=... hint=...`: what is wrong and what
//     to do.
// The exit codes follow sysexits.h:
//    0  stopped by SIGTERM/SIGINT, or --once / --once-idle-ms done, or
//       --help / --version
//   64  usage: a flag or environment value the program cannot use
//   70  software: an unexpected error (a bug, or a server answer the
//       program does not know); the log line has it
//   77  no permission: authentication failed (PostgreSQL or RabbitMQ), or
//       a missing privilege (EXECUTE, USAGE, CONNECT, a vhost's
//       configure/write/read permission)
//   78  configuration: something named in the configuration does not exist
//       or does not fit (database, role, extension or its version, vhost,
//       an exchange or queue declared otherwise, TLS that does not verify
//       or a port that does not speak TLS, the fulfiller's empty warehouse
//       table)
#ifndef PG_INVENTORY_COMMON_FAILURE_H
#define PG_INVENTORY_COMMON_FAILURE_H

#include <stdexcept>
#include <string>

namespace pgi {

/// The exit codes (sysexits.h names).
enum ExitCode : int {
  exit_ok = 0,
  exit_usage = 64,    // EX_USAGE
  exit_software = 70, // EX_SOFTWARE
  exit_noperm = 77,   // EX_NOPERM
  exit_config = 78,   // EX_CONFIG
};

/// A failure that retrying cannot fix: the program ends with code().
class Fatal : public std::runtime_error {
 public:
  /// CODE (an ExitCode), WHAT is wrong, HINT what to do about it.
  Fatal(int code, const std::string &what, const std::string &hint)
      : std::runtime_error{what}, code_{code}, hint_{hint} {}
  int code() const { return code_; }
  const std::string &hint() const { return hint_; }

 private:
  int code_;
  std::string hint_;
};

/// Logs the one `event=fatal` line of F (exit_code, error, hint).
void log_fatal(const Fatal &f);

} // namespace pgi

#endif
