// src/relay/metrics.h: the relay's Prometheus metrics (served on
// --metrics-address by src/common's MetricsServer; README section 9 has
// the table).
//
// Counters count what this relay did since it started; the outbox gauges
// are the database's view (inventory.outbox_metrics, the same for every
// relay of the database), read every --stats-interval or 5 s, whichever is
// shorter, and left at their last value while the database is away.
#ifndef PG_INVENTORY_RELAY_METRICS_H
#define PG_INVENTORY_RELAY_METRICS_H

#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace relay {

struct Metrics {
  /// Registers every metric in REGISTRY; RELAY, VERSION and EXCHANGE label
  /// inventory_relay_info.
  Metrics(prometheus::Registry &registry, const std::string &relay,
          const std::string &version, const std::string &exchange);

  // counters
  prometheus::Counter &published;       // confirmed, then marked by us
  prometheus::Counter &failed_nacked;   // failed{reason="nacked"}
  prometheus::Counter &failed_returned; // failed{reason="returned"}
  prometheus::Counter &dead_lettered;   // of the failed: at max_attempts
  prometheus::Counter &released;        // given back in a broker outage
  prometheus::Counter &lease_lost;      // marks refused: another relay's
  prometheus::Counter &mark_errors;     // marks given up (sent again)
  prometheus::Counter &db_reconnects, &broker_reconnects;
  // gauges
  prometheus::Gauge &backlog;     // outbox_metrics.unpublished
  prometheus::Gauge &retrying;    // outbox_metrics.retrying
  prometheus::Gauge &outbox_dead; // outbox_metrics.dead_lettered
  prometheus::Gauge &oldest_age;  // outbox_metrics.lag_seconds
  prometheus::Gauge &below_low_water; // outbox_metrics.below_low_water
  prometheus::Gauge &published_age;   // now() - oldest_published_at
  prometheus::Gauge &unrouted;    // depth of the unrouted queue
  // histograms
  prometheus::Histogram &publish_lag;    // occurred_at -> broker confirm
  prometheus::Histogram &batch_duration; // claim -> marks written
};

} // namespace relay

#endif
