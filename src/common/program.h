// src/common/program.h: the main() frame and the options both programs
// share.
#ifndef PG_INVENTORY_COMMON_PROGRAM_H
#define PG_INVENTORY_COMMON_PROGRAM_H

#include <functional>
#include <string>

#include "amqp_client.h"
#include "cli.h"

namespace pgi {

/// The version of both programs (the extension version of this tree).
extern const char *const version;

/// "PROGRAM VERSION (needs extension pg_inventory >= MIN_EXTENSION)".
std::string version_line(const std::string &program,
                         const std::string &min_extension);

/// The options both programs take.
struct CommonOptions {
  /// The database: libpq connection string.
  std::string db;
  /// The broker.
  BrokerSettings broker;
  /// The exchanges and the queue of unrouted events.
  Topology topology;
  /// How often the counters are logged.
  long long stats_ms = 10000;
  /// HOST:PORT of the /metrics and /healthz endpoint; "" (the default):
  /// none.
  std::string metrics_address;
  /// text or json (log.h).
  std::string log_format = "text";
};

/// Declares the shared options in SET: --db (environment variable DB_ENV),
/// --amqp-url (INVENTORY_AMQP_URL), the --tls-* files
/// (INVENTORY_AMQP_TLS_*), --exchange (INVENTORY_EXCHANGE),
/// --unrouted-queue (INVENTORY_UNROUTED_QUEUE), --unrouted-max-length
/// (INVENTORY_UNROUTED_MAX_LENGTH), --stats-interval (STATS_ENV),
/// --metrics-address (METRICS_ENV) and --log-format (INVENTORY_LOG_FORMAT),
/// with their checks; the log format is in force once they passed.
void add_common_options(OptionSet &set, CommonOptions &o, const char *db_env,
                        const char *stats_env, const char *metrics_env);

/// The main() of a program: sets the program name of the logs, parses
/// SET's options (--help, --version: exit 0; a UsageError: one line on
/// stderr, exit 64), installs the stop handlers and returns what RUN
/// returns.  A Fatal from RUN is logged (event=fatal) and its code
/// returned; any other exception is logged and gives 70.
int run_program(OptionSet &set, int argc, char **argv,
                const std::function<int()> &run);

} // namespace pgi

#endif
