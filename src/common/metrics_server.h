// src/common/metrics_server.h: the HTTP endpoint of both programs' metrics and
// health (--metrics-address, off by default), on prometheus-cpp 1.0 (its
// pull support, an embedded civetweb server).
//
//   GET /metrics  the Prometheus text exposition (format 0.0.4) of the
//                 program's registry (its counters, gauges and histograms;
//                 README section 9 lists them), plus prometheus-cpp's own
//                 exposer_* metrics about the scrapes
//   GET /healthz  200 `ok: database connected, broker connected` when both
//                 peers are connected, else 503 with the same kind of line
//                 naming what is not (`unavailable: database connected,
//                 broker not connected`); for load balancers and systemd
//                 or Kubernetes probes
//
// The program's loop sets the two flags of Health (Link::on_state) and
// updates the metrics; the server's threads only read them.
#ifndef PG_INVENTORY_COMMON_METRICS_SERVER_H
#define PG_INVENTORY_COMMON_METRICS_SERVER_H

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

namespace prometheus {
class Exposer;
}

namespace pgi {

/// Whether the database and the broker are connected now (written by the
/// loop's thread, read by the HTTP server's).
class Health {
 public:
  void set_database(bool up) { db_ = up; }
  void set_broker(bool up) { broker_ = up; }
  bool database() const { return db_; }
  bool broker() const { return broker_; }
  bool ok() const { return db_ && broker_; }
  /// The /healthz text: "ok: database connected, broker connected" or
  /// "unavailable: database not connected, broker connected" (and so on).
  std::string describe() const;

 private:
  std::atomic<bool> db_{false}, broker_{false};
};

/// The on_state callback of a connection (Link::on_state): reports it to
/// HEALTH through SET (&Health::set_database or &Health::set_broker) and
/// counts in RECONNECTS every connection after the first.
std::function<void(bool)> watch_link(Health &health,
                                     void (Health::*set)(bool),
                                     prometheus::Counter &reconnects);

/// Throws UsageError (naming WHAT) unless ADDRESS is HOST:PORT: an IPv4
/// address or a host name (localhost), and a port from 0 to 65535 (0: any
/// free port; the program logs the one it got).  "" (off) is accepted.
void check_metrics_address(const std::string &address,
                           const std::string &what);

/// Histogram bucket bounds in seconds from 1 ms to about 5 min, roughly
/// x2.5 apart: 0.001, 0.0025, 0.005, 0.01, ... 60, 120, 300.
std::vector<double> latency_buckets();

/// The /metrics and /healthz endpoint.  One per process.
class MetricsServer {
 public:
  /// Listens on ADDRESS (checked by check_metrics_address) and serves
  /// REGISTRY and HEALTH, which must outlive it.  Throws Fatal (exit 78)
  /// when it cannot listen there (address in use, not one of this host).
  MetricsServer(const std::string &address,
                const std::shared_ptr<prometheus::Registry> &registry,
                const Health &health);
  ~MetricsServer();
  MetricsServer(const MetricsServer &) = delete;
  MetricsServer &operator=(const MetricsServer &) = delete;

  /// The port it listens on (the one the system chose for port 0).
  int port() const { return port_; }

 private:
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

} // namespace pgi

#endif
