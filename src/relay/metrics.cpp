// src/relay/metrics.cpp: the relay's metrics (metrics.h).
#include "metrics.h"

#include "metrics_server.h"

namespace relay {

namespace {

// a family with labels is registered once per label value: prometheus-cpp's
// registry (InsertBehavior::Merge, its default) hands back the family of
// the same name, so the help texts must agree
const char *const failed_help =
  "Failed publishes, by reason: nacked by the broker, or returned "
  "unroutable (each counts an attempt; the event is retried with backoff, "
  "or dead-lettered at --max-attempts).";
const char *const reconnects_help =
  "Connections made again after one was lost, by peer.";

prometheus::Family<prometheus::Counter> &counter(prometheus::Registry &r,
                                                 const std::string &name,
                                                 const std::string &help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

prometheus::Gauge &gauge(prometheus::Registry &r, const std::string &name,
                         const std::string &help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Histogram &histogram(prometheus::Registry &r,
                                 const std::string &name,
                                 const std::string &help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add(
    {}, pgi::latency_buckets());
}

} // namespace

Metrics::Metrics(prometheus::Registry &r, const std::string &relay,
                 const std::string &version, const std::string &exchange)
    : published{counter(r, "inventory_relay_events_published_total",
                        "Events the broker confirmed and this relay marked "
                        "published.")
                  .Add({})},
      failed_nacked{
        counter(r, "inventory_relay_events_failed_total", failed_help)
          .Add({{"reason", "nacked"}})},
      failed_returned{
        counter(r, "inventory_relay_events_failed_total", failed_help)
          .Add({{"reason", "returned"}})},
      dead_lettered{counter(r, "inventory_relay_events_dead_lettered_total",
                            "Failed events this relay dead-lettered at "
                            "their max_attempts-th failure.")
                      .Add({})},
      released{counter(r, "inventory_relay_events_released_total",
                       "Claimed events given back unpublished because the "
                       "broker went away (no attempt counted).")
                 .Add({})},
      lease_lost{counter(r, "inventory_relay_events_lease_lost_total",
                         "Events another relay had claimed by the time this "
                         "one marked them (a batch slower than --lease).")
                   .Add({})},
      mark_errors{counter(r, "inventory_relay_mark_errors_total",
                          "Events whose marks could not be written for a "
                          "reason other than a lost connection (their "
                          "leases run out; they are published again).")
                    .Add({})},
      db_reconnects{
        counter(r, "inventory_relay_reconnects_total", reconnects_help)
          .Add({{"peer", "database"}})},
      broker_reconnects{
        counter(r, "inventory_relay_reconnects_total", reconnects_help)
          .Add({{"peer", "broker"}})},
      backlog{gauge(r, "inventory_relay_outbox_backlog_events",
                    "Live events not yet published "
                    "(inventory.outbox_metrics.unpublished).")},
      retrying{gauge(r, "inventory_relay_outbox_retrying_events",
                     "Live unpublished events with at least one failed "
                     "attempt (inventory.outbox_metrics.retrying).")},
      outbox_dead{gauge(r, "inventory_relay_outbox_dead_lettered_events",
                        "Dead-lettered events in the outbox "
                        "(inventory.outbox_metrics.dead_lettered).")},
      oldest_age{gauge(r,
                       "inventory_relay_outbox_oldest_unpublished_age_seconds",
                       "Age of the oldest live unpublished event, 0 when none "
                       "(inventory.outbox_metrics.lag_seconds).")},
      below_low_water{
        gauge(r, "inventory_relay_outbox_below_low_water_events",
              "Live events below the outbox's low-water mark that a relay "
              "could publish but never claims, changed by hand: alert above "
              "0 (inventory.outbox_metrics.below_low_water; 0 before "
              "schema 0.7).")},
      published_age{
        gauge(r, "inventory_relay_outbox_oldest_published_age_seconds",
              "Age of the oldest published event still in the outbox, 0 when "
              "none: above twice pg_inventory.outbox_retention plus a minute, "
              "retention is held back (inventory.outbox_metrics."
              "oldest_published_at; 0 before schema 0.8).")},
      unrouted{gauge(r, "inventory_relay_unrouted_queue_messages",
                     "Messages in the unrouted queue: events no queue was "
                     "bound for (the broker confirms them like any other, "
                     "so they are counted by the queue's depth).")},
      publish_lag{histogram(r, "inventory_relay_publish_lag_seconds",
                            "From an event's occurred_at (its commit) to "
                            "the broker's confirm, per confirmed event.")},
      batch_duration{histogram(r, "inventory_relay_batch_duration_seconds",
                               "From the claim of a batch to its marks "
                               "written (publish and confirms included).")} {
  prometheus::BuildGauge()
    .Name("inventory_relay_info")
    .Help("The relay's version, name and exchange (always 1).")
    .Register(r)
    .Add({{"version", version}, {"relay", relay}, {"exchange", exchange}})
    .Set(1);
}

} // namespace relay
