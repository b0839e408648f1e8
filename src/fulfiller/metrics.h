// src/fulfiller/metrics.h: the fulfiller's Prometheus metrics (served on
// --metrics-address by src/common's MetricsServer; README section 9 has
// the table).  Counters count what this fulfiller did since it started.
#ifndef PG_INVENTORY_FULFILLER_METRICS_H
#define PG_INVENTORY_FULFILLER_METRICS_H

#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace fulfiller {

struct Metrics {
  /// Registers every metric in REGISTRY; VERSION and QUEUE label
  /// inventory_fulfiller_info.
  Metrics(prometheus::Registry &registry, const std::string &version,
          const std::string &queue);

  prometheus::Counter &consumed, &redelivered, &deduplicated, &fulfilled,
    &held, &held_released, &compensations, &ignored, &rejected, &requeued;
  prometheus::Counter &db_reconnects, &broker_reconnects;
  prometheus::Gauge &held_now;       // rows in fulfillment.held
  prometheus::Histogram &processing; // delivery -> ack (or nack)
};

} // namespace fulfiller

#endif
