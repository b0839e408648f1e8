// src/common/program.h: the command line and the main() frame that
// inventory-relay and inventory-fulfiller share.
//
// Both programs take `--flag value` or `--flag=value`, the same four flags
// (--db, --amqp-url, --exchange, --stats-interval, held by CommonOptions)
// and --help/-h; each adds its own flags through parse_command_line().
// run_program() is the whole of their main(): logs named after the program,
// exit code 2 with the usage for a bad command line, the stop handlers, and
// a `fatal` log line with exit code 1 for an exception that ends the run.
#ifndef PG_INVENTORY_COMMON_PROGRAM_H
#define PG_INVENTORY_COMMON_PROGRAM_H

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "support.h"

namespace pgi {

/// Reads a command line one option at a time: `--name=value` is split
/// into the name and an inline value; otherwise a value is the next
/// argument.
class ArgReader {
 public:
  /// Reads ARGV[1..ARGC-1].
  ArgReader(int argc, char **argv) : argc_{argc}, argv_{argv} {}

  /// Moves to the next option; false when there is none left.
  bool next();
  /// The name of the current option (without an inline `=value`).
  const std::string &name() const { return name_; }
  /// The value of the current option: the inline one, else the next
  /// argument (which is consumed).  Throws std::invalid_argument
  /// "NAME needs a value" when there is none.
  std::string value();
  /// value() as a whole non-negative integer (parse_count).
  long long count() { return parse_count(value(), name_); }
  /// value() as a duration in milliseconds (parse_duration_ms).
  long long duration_ms() { return parse_duration_ms(value(), name_); }

 private:
  int argc_;
  char **argv_;
  int i_ = 0;
  std::string name_;
  std::optional<std::string> inline_value_;
};

/// The options both programs take.  The database defaults to environment
/// variable DB_ENV (else the PG* environment), the broker to
/// INVENTORY_AMQP_URL (else amqp://guest:guest@127.0.0.1:5672), the
/// exchange to INVENTORY_EXCHANGE (else inventory).
struct CommonOptions {
  /// The defaults, with the database from environment variable DB_ENV.
  explicit CommonOptions(const char *db_env);

  /// Takes the current option of ARGS if it is one of --db, --amqp-url,
  /// --exchange, --stats-interval (true), else leaves it (false).
  bool read(ArgReader &args);

  std::string db;
  std::string amqp_url;
  std::string exchange;
  long long stats_ms = 10000;
};

/// Prints a program's usage text to an output stream.
using Usage = void (*)(std::ostream &);

/// Parses ARGV: --help or -h prints USAGE on stdout and returns false (the
/// program exits 0); the shared options go to COMMON; any other option is
/// offered to OWN_FLAG, which takes it (true) or does not know it (false:
/// std::invalid_argument "unknown option NAME").  True when the program
/// should run.
bool parse_command_line(int argc, char **argv, CommonOptions &common,
                        Usage usage,
                        const std::function<bool(ArgReader &)> &own_flag);

/// The main() of a program called NAME: sets the program name of the logs,
/// runs PARSE (false: exit 0, e.g. after --help; an exception: its message
/// and USAGE on stderr, exit 2), installs the stop handlers and returns
/// what RUN returns, or 1 after logging event=fatal when RUN throws.
int run_program(const std::string &name, Usage usage,
                const std::function<bool()> &parse,
                const std::function<int()> &run);

/// After a failed connection attempt: takes the next delay of BACKOFF,
/// logs EVENT with ERROR and retry_in_ms, and sleeps that long (less when a
/// stop is requested).
void wait_to_retry(Backoff &backoff, const std::string &event,
                   const std::string &error);

/// Connects to the broker of OPTIONS (heartbeat 30 s, TCP connect timeout
/// 5 s) and declares its exchange.  Throws AmqpError.
std::unique_ptr<AmqpConnection> connect_broker(const CommonOptions &options);

/// Logs event=broker_lost with WHY and closes MQ (if any) without the
/// polite close: the connection is broken.
void drop_broker(std::unique_ptr<AmqpConnection> &mq, const std::string &why);

} // namespace pgi

#endif
