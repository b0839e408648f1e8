// src/relay/publisher.h: the relay's AMQP side, the publisher.
//
// One broker connection under the shared policy (pgi::Link): at each
// connect the topology is declared (the exchange with its alternate
// exchange and unrouted queue: pgi::Topology), --audit-queue too, and the
// channel is put in publisher-confirm mode.  publish() sends a batch with the
// mandatory flag and waits for the broker's verdict on every event: ack,
// nack, or a basic.return (unroutable: it comes before the ack of the same
// message) that makes the event a failure (with the alternate exchange
// that happens only when the topology was changed behind the relay's back:
// it is logged with what to bind).  A lost connection or a missing
// confirm (--confirm-timeout) drops the connection: publish() returns
// false and the events without a verdict stay pending.  A broker answer
// that retrying cannot fix (ACCESS_REFUSED, an exchange of another type)
// is Fatal.
//
// With --cloudevents every message also carries the CloudEvents AMQP
// binding's attributes in binary content mode, as AMQP headers (RabbitMQ's
// AMQP 0-9-1 headers are the application properties of AMQP 1.0):
// cloudEvents:specversion "1.0", cloudEvents:id (the event_id),
// cloudEvents:source (--cloudevents-source, by default
// /pg_inventory/DATABASE), cloudEvents:type (the event type) and
// cloudEvents:time (occurred_at, RFC 3339), all strings; content_type
// application/json is the datacontenttype, and the body is the payload as
// without the option.
#ifndef PG_INVENTORY_RELAY_PUBLISHER_H
#define PG_INVENTORY_RELAY_PUBLISHER_H

#include <cstdint>
#include <functional>
#include <string>

#include "amqp_client.h"
#include "batch.h"
#include "options.h"
#include "retry.h"

namespace relay {

class Publisher {
 public:
  explicit Publisher(const Options &o);

  /// Connected and ready to publish, connecting now if needed (false after
  /// a transient failure, already logged and waited out).  Throws Fatal.
  bool ready();

  /// Publishes BATCH and records the broker's verdicts in its events (and
  /// when each ack came); false when the broker went away.  Throws Fatal.
  bool publish(Batch &batch);

  /// Between batches: reads what the broker sent meanwhile without
  /// waiting, so that a broker that closed the connection (a shutdown, a
  /// restart) is noticed while the relay is idle, not at the next batch.
  void check();

  /// The cloudEvents:source of the messages (with --cloudevents).
  void set_source(const std::string &source) { source_ = source; }
  const std::string &source() const { return source_; }

  /// Runs FN with true when connected, false when the connection was lost.
  void on_state(std::function<void(bool)> fn) {
    link_.on_state(std::move(fn));
  }

  /// Messages now in the unrouted queue (events no queue was bound for),
  /// or -1 when unknown (no connection, no unrouted queue).  The broker
  /// confirms an event routed to the alternate exchange like any other, so
  /// the relay cannot count them one by one: this depth is what it reports.
  long long unrouted_depth();

  /// Broker connections made again after one was lost.
  long long reconnects() const { return link_.reconnects(); }

 private:
  void send(Batch &batch);
  void await_confirms(Batch &batch, uint64_t first_tag);
  void read_return(Batch &batch, const amqp_basic_return_t &r);

  const Options &o_;
  pgi::Link<pgi::AmqpConnection> link_;
  uint64_t next_tag_ = 1;
  std::string source_;
};

} // namespace relay

#endif
