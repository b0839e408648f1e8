// src/fulfiller/metrics.cpp: the fulfiller's metrics (metrics.h).
#include "metrics.h"

#include "metrics_server.h"

namespace fulfiller {

namespace {

// registered once per label value: prometheus-cpp's registry
// (InsertBehavior::Merge, its default) hands back the family of the same
// name
const char *const reconnects_help =
  "Connections made again after one was lost, by peer.";

prometheus::Counter &counter(prometheus::Registry &r, const std::string &name,
                             const std::string &help,
                             const prometheus::Labels &labels = {}) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(
    labels);
}

} // namespace

Metrics::Metrics(prometheus::Registry &r, const std::string &version,
                 const std::string &queue)
    : consumed{counter(r, "inventory_fulfiller_messages_consumed_total",
                       "Messages delivered to the fulfiller (redeliveries "
                       "and duplicates included).")},
      redelivered{counter(r, "inventory_fulfiller_messages_redelivered_total",
                          "Messages the broker marked redelivered (a "
                          "consumer died or requeued before its ack).")},
      deduplicated{counter(r, "inventory_fulfiller_events_deduplicated_total",
                           "Events processed before (their inbox row was "
                           "there): acked, nothing written.")},
      fulfilled{counter(r, "inventory_fulfiller_events_fulfilled_total",
                        "Confirmed reservations that became a "
                        "fulfillment.request.")},
      held{counter(r, "inventory_fulfiller_events_held_total",
                   "Events held in fulfillment.held: a SKU the warehouse "
                   "does not ship (the sale stands).")},
      held_released{counter(r, "inventory_fulfiller_held_released_total",
                            "Held events that became requests once their "
                            "SKUs were added to warehouse_sku.")},
      compensations{counter(r, "inventory_fulfiller_compensations_total",
                            "Reservations compensated because the warehouse "
                            "cannot ship a SKU (--compensate-unknown-sku).")},
      ignored{counter(r, "inventory_fulfiller_messages_ignored_total",
                      "Messages of an event type the fulfiller does not "
                      "handle: acked.")},
      rejected{counter(r, "inventory_fulfiller_messages_rejected_total",
                       "Malformed messages (no message_id, SQLSTATE class "
                       "22): acked and logged.")},
      requeued{counter(r, "inventory_fulfiller_messages_requeued_total",
                       "Messages given back to the queue after a database "
                       "failure (basic.nack with requeue).")},
      db_reconnects{counter(r, "inventory_fulfiller_reconnects_total",
                            reconnects_help, {{"peer", "database"}})},
      broker_reconnects{counter(r, "inventory_fulfiller_reconnects_total",
                                reconnects_help, {{"peer", "broker"}})},
      held_now{prometheus::BuildGauge()
                 .Name("inventory_fulfiller_held_events")
                 .Help("Rows in fulfillment.held now (read at start and "
                       "every --recheck-held).")
                 .Register(r)
                 .Add({})},
      processing{prometheus::BuildHistogram()
                   .Name("inventory_fulfiller_processing_duration_seconds")
                   .Help("From a delivery to its ack or nack (the inbox row "
                         "and the effect committed in between).")
                   .Register(r)
                   .Add({}, pgi::latency_buckets())} {
  prometheus::BuildGauge()
    .Name("inventory_fulfiller_info")
    .Help("The fulfiller's version and queue (always 1).")
    .Register(r)
    .Add({{"version", version}, {"queue", queue}})
    .Set(1);
}

} // namespace fulfiller
