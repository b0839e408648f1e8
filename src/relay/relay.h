// src/relay/relay.h: the relay's loop, between the outbox client (SQL) and
// the publisher (AMQP).
//
// The loop is a pipeline of up to --in-flight batches: it leases a batch
// (relay_claim), publishes it without waiting, and, while the broker
// persists it, reads the verdicts that come, marks the batches that have
// all theirs (relay_mark_published for the confirmed events,
// relay_mark_failed for the nacked and returned ones, one statement each
// for every batch done so far) and leases and publishes the next batch.
// An event is marked only after the broker's verdict on it: at least once.
// After a full batch the next is claimed at once, even while batches are
// in flight; after one that was not full the relay claims again once the
// batches in flight are done, and sleeps --poll-interval-ms (or waits for
// a NOTIFY with --listen) only after a claim that found nothing.
//
// Broker outage: the rest of the batches in flight is released (relay_release:
// no attempt counted, nothing is dead-lettered because the broker was away)
// and what was acked is still marked published.  Lost leases: the marking
// functions act only on events whose lease the relay still holds; when
// they mark fewer than asked (a batch slower than --lease, whose events
// another relay claimed meanwhile), the relay logs event=lease_lost and
// counts them; it is never an error.  A Fatal (a permanent failure) ends
// the loop after the batches in flight were released and the marks
// written.  SIGTERM/SIGINT: no more claims; the batches in flight get
// their verdicts and marks, then the loop ends.
//
// Metrics (metrics.h): the counters move with the stats line's; the outbox
// gauges (outbox_metrics, read by a MetricsSampler on a connection of its
// own, so that counting a large backlog never stops the pipeline) and the
// unrouted queue's depth are read every --stats-interval or 5 s, whichever
// is shorter; with --metrics-address they are served with
// /healthz (the two connections' state).
//
// Test hooks: INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM=1 kills the process
// (SIGKILL) right after a batch was confirmed, before it is marked;
// INVENTORY_RELAY_TEST_PAUSE_BEFORE_MARK_MS=N sleeps N ms there instead (a
// batch slower than its lease).
#ifndef PG_INVENTORY_RELAY_RELAY_H
#define PG_INVENTORY_RELAY_RELAY_H

#include <deque>
#include <memory>

#include <prometheus/registry.h>

#include "batch.h"
#include "metrics.h"
#include "metrics_server.h"
#include "options.h"
#include "outbox.h"
#include "publisher.h"

namespace relay {

/// The counters of the stats lines.
struct Counters {
  long long claimed = 0, published = 0, retried = 0, dead_lettered = 0,
            returned = 0, nacked = 0, released = 0, batches = 0,
            lease_lost = 0, mark_errors = 0;
};

class Relay {
 public:
  explicit Relay(const Options &o);
  /// Runs until stopped (or drained with --once); returns the exit code.
  /// Throws Fatal.
  int run();

 private:
  void loop();
  void settle(const Batch &batch);
  void flush();
  void release(const Batch &batch);
  /// After a broker outage (or a Fatal from the broker): marks what was
  /// confirmed of the batches in flight and releases the rest.
  void give_up_flights();
  void stats(bool final);
  /// Reads outbox_metrics and the unrouted queue's depth into the gauges.
  /// FRESH: read outbox_metrics now on the relay's connection, instead of
  /// taking the sampler's last read.
  OutboxClient::Metrics sample(long long *unrouted, bool fresh = false);

  const Options &o_;
  std::shared_ptr<prometheus::Registry> registry_;
  Metrics m_;
  pgi::Health health_;
  OutboxClient outbox_;
  Publisher publisher_;
  Marks marks_;
  std::deque<Flight> flights_;              // published, oldest first
  std::unique_ptr<MetricsSampler> sampler_; // outbox_metrics, off the loop
  long long unrouted_ = -1; // the unrouted queue's depth, last read
  Counters n_;
  long long last_stats_ms_, last_sample_ms_ = 0;
  // after the rest: its threads read the registry and the health
  std::unique_ptr<pgi::MetricsServer> server_;
};

} // namespace relay

#endif
