// src/relay/relay.h: the relay's loop, between the outbox client (SQL) and
// the publisher (AMQP).
//
// Each round: write what earlier rounds could not (marks), lease a batch,
// publish it and wait for the broker's verdicts, then one statement each:
// relay_mark_published for the confirmed events, relay_mark_failed for the
// nacked and returned ones.  A full batch is followed by the next one at
// once; otherwise the relay sleeps --poll-interval-ms (or waits for a
// NOTIFY with --listen).
//
// Broker outage: the rest of the batch is released (relay_release: no
// attempt counted, nothing is dead-lettered because the broker was away)
// and what was acked is still marked published.  Lost leases: the marking
// functions act only on events whose lease the relay still holds; when
// they mark fewer than asked (a batch slower than --lease, whose events
// another relay claimed meanwhile), the relay logs event=lease_lost and
// counts them; it is never an error.  A Fatal (a permanent failure) ends
// the loop after the batch in hand was released and the marks written.
//
// Metrics (metrics.h): the counters move with the stats line's; the outbox
// gauges and the unrouted queue's depth are read every --stats-interval or
// 5 s, whichever is shorter; with --metrics-address they are served with
// /healthz (the two connections' state).
//
// Test hooks: INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM=1 kills the process
// (SIGKILL) right after a batch was confirmed, before it is marked;
// INVENTORY_RELAY_TEST_PAUSE_BEFORE_MARK_MS=N sleeps N ms there instead (a
// batch slower than its lease).
#ifndef PG_INVENTORY_RELAY_RELAY_H
#define PG_INVENTORY_RELAY_RELAY_H

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
  void stats(bool final);
  /// Reads outbox_metrics and the unrouted queue's depth into the gauges.
  OutboxClient::Metrics sample(long long *unrouted);

  const Options &o_;
  std::shared_ptr<prometheus::Registry> registry_;
  Metrics m_;
  pgi::Health health_;
  OutboxClient outbox_;
  Publisher publisher_;
  Marks marks_;
  Counters n_;
  long long last_stats_ms_, last_sample_ms_ = 0;
  // after the rest: its threads read the registry and the health
  std::unique_ptr<pgi::MetricsServer> server_;
};

} // namespace relay

#endif
