// src/fulfiller/fulfiller.h: the fulfiller's loop and its AMQP side.
//
// One broker connection under the shared policy (pgi::Link): at each
// connect the exchange and the durable queue (bound with
// reservation.confirmed) are declared, then basic.qos (--prefetch) and
// basic.consume with manual acks.  Each delivery goes to the store (one
// transaction: inbox row + effect); only after its commit is it acked.  A
// database failure requeues the message (basic.nack, requeue).  Unknown
// event types and messages without a message_id are acked and logged,
// never requeued in a loop.  Held events (a SKU the warehouse does not ship)
// are looked at again at start and every --recheck-held.
//
// Metrics (metrics.h) move with the stats line's counters; with
// --metrics-address they are served with /healthz (the state of the two
// connections; an idle database connection is looked at every second).
#ifndef PG_INVENTORY_FULFILLER_FULFILLER_H
#define PG_INVENTORY_FULFILLER_FULFILLER_H

#include <memory>

#include <prometheus/registry.h>

#include "amqp_client.h"
#include "metrics.h"
#include "metrics_server.h"
#include "options.h"
#include "retry.h"
#include "store.h"

namespace fulfiller {

struct Counters {
  long long consumed = 0, deduplicated = 0, fulfilled = 0, held = 0,
            held_released = 0, compensated = 0, ignored = 0, rejected = 0,
            requeued = 0, redelivered = 0;
};

class Fulfiller {
 public:
  explicit Fulfiller(const Options &o);
  /// Runs until stopped (or idle for --once-idle-ms); returns the exit
  /// code.  Throws Fatal.
  int run();

 private:
  /// What to tell the broker about a message.
  enum class Verdict { ack, requeue };
  Verdict handle(const amqp_envelope_t &env);
  void consume_one();
  void stats(bool final);

  const Options &o_;
  std::shared_ptr<prometheus::Registry> registry_;
  Metrics m_;
  pgi::Health health_;
  Store store_;
  pgi::Link<pgi::AmqpConnection> broker_;
  Counters n_;
  long long last_stats_ms_, last_message_ms_, last_recheck_ms_ = 0,
                                              last_check_ms_ = 0;
  // after the rest: its threads read the registry and the health
  std::unique_ptr<pgi::MetricsServer> server_;
};

} // namespace fulfiller

#endif
