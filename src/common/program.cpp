// src/common/program.cpp: the main() frame and the shared options
// (program.h).
#include "program.h"

#include <iostream>

#include <pqxx/pqxx>

#include "log.h"
#include "metrics_server.h"
#include "pg_client.h"
#include "retry.h"

#ifndef PGI_VERSION
#error "PGI_VERSION must be defined (src/common/CMakeLists.txt)"
#endif

namespace pgi {

const char *const version = PGI_VERSION;

std::string version_line(const std::string &program,
                         const std::string &min_extension) {
  return program + " " + version +
         " (needs extension pg_inventory >= " + min_extension + ")";
}

void add_common_options(OptionSet &set, CommonOptions &o, const char *db_env,
                        const char *stats_env, const char *metrics_env) {
  set.text("--db", db_env, &o.db, "CONNINFO",
           "libpq connection string (keyword=value or postgresql:// URI; "
           "the PG* environment fills in what it leaves out); "
           "sslmode=verify-full for TLS");
  o.broker.url = "amqp://guest:guest@127.0.0.1:5672";
  set.text("--amqp-url", "INVENTORY_AMQP_URL", &o.broker.url, "URL",
           "broker, amqp://user:password@host:port[/vhost] (no trailing /: "
           "that names the empty vhost); amqps:// for TLS (port 5671 by "
           "default), the certificate verified, never plain text");
  set.text("--exchange", "INVENTORY_EXCHANGE", &o.topology.exchange, "NAME",
           "topic exchange, declared durable (with the alternate exchange "
           "of --unrouted-queue)");
  o.topology.unrouted.clear(); // EXCHANGE.unrouted unless given
  set.text("--unrouted-queue", "INVENTORY_UNROUTED_QUEUE",
           &o.topology.unrouted, "NAME|none",
           "alternate exchange and durable queue (both named NAME) that keep "
           "events no queue is bound for, so they never hold anything back; "
           "none: no alternate exchange, such events come back and are "
           "retried",
           "EXCHANGE.unrouted");
  set.count("--unrouted-max-length", "INVENTORY_UNROUTED_MAX_LENGTH",
            &o.topology.unrouted_max_length, 1, 1000000000,
            "most events the unrouted queue keeps (x-max-length; when full "
            "it drops its oldest: x-overflow drop-head)");
  set.duration("--stats-interval", stats_env, &o.stats_ms, 1, 86400000,
               "how often the counters are logged");
  set.text("--metrics-address", metrics_env, &o.metrics_address, "HOST:PORT",
           "serve Prometheus metrics on http://HOST:PORT/metrics and the "
           "health check on /healthz (200 when the database and the broker "
           "are connected, else 503); port 0: any free port (logged as "
           "event=metrics_listening)",
           "off");
  set.text("--log-format", "INVENTORY_LOG_FORMAT", &o.log_format, "text|json",
           "log lines as key=value (text) or as one JSON object per line "
           "with the same keys (json)");
  set.text("--tls-ca-file", "INVENTORY_AMQP_TLS_CA_FILE",
           &o.broker.tls.ca_file, "FILE",
           "with amqps://: the CA certificates (PEM) that the broker's "
           "certificate must chain to",
           "the system's trust store");
  set.text("--tls-cert-file", "INVENTORY_AMQP_TLS_CERT_FILE",
           &o.broker.tls.cert_file, "FILE",
           "with amqps://: a client certificate (PEM), with --tls-key-file");
  set.text("--tls-key-file", "INVENTORY_AMQP_TLS_KEY_FILE",
           &o.broker.tls.key_file, "FILE",
           "with amqps://: the client certificate's key (PEM, unencrypted)");
  set.check([&o] {
    const LogFormat format = parse_log_format(o.log_format, "--log-format");
    check_metrics_address(o.metrics_address, "--metrics-address");
    check_broker_settings(o.broker); // throws UsageError
    Topology &t = o.topology;
    if (t.exchange.empty() || t.exchange.size() > 255)
      throw UsageError("--exchange must have 1 to 255 bytes");
    if (t.unrouted.empty())
      t.unrouted = t.exchange + ".unrouted";
    else if (t.unrouted == "none")
      t.unrouted.clear();
    if (t.unrouted.size() > 255)
      throw UsageError("--unrouted-queue must have 1 to 255 bytes");
    if (t.unrouted == t.exchange)
      throw UsageError("--unrouted-queue must differ from --exchange");
    set_log_format(format);
  });
}

int run_program(OptionSet &set, int argc, char **argv,
                const std::function<int()> &run) {
  set_program(set.program());
  try {
    if (!set.parse(argc, argv)) return exit_ok;
  } catch (const UsageError &e) {
    std::cerr << set.program() << ": " << e.what() << " (see --help)\n";
    return exit_usage;
  }
  install_stop_handlers();
  try {
    return run();
  } catch (const Fatal &f) {
    log_fatal(f);
    return f.code();
  } catch (const UsageError &e) {
    log("fatal", {{"exit_code", std::to_string(exit_usage)},
                  {"error", e.what()},
                  {"hint", "see --help"}});
    return exit_usage;
  } catch (const pqxx::sql_error &e) {
    log("fatal", {{"exit_code", std::to_string(exit_software)},
                  {"sqlstate", sqlstate(e)},
                  {"error", e.what()},
                  {"hint", "an unexpected database error: report it"}});
  } catch (const std::exception &e) {
    log("fatal", {{"exit_code", std::to_string(exit_software)},
                  {"error", e.what()},
                  {"hint", "an unexpected error: report it"}});
  }
  return exit_software;
}

} // namespace pgi
