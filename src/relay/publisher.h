// src/relay/publisher.h: the relay's AMQP side, the publisher.
//
// One broker connection under the shared policy (pgi::Link): at each
// connect the topology is declared (the exchange with its alternate
// exchange and unrouted queue: pgi::Topology), --audit-queue too, and the
// channel is put in publisher-confirm mode.  send() publishes a batch with
// the mandatory flag without waiting, and receive() reads the broker's
// verdicts on the batches in flight (several can be: the relay publishes
// the next batch while the broker persists one): ack, nack (single or
// // multiple=true, whatever the broker coalesces), or a basic.return
// (unroutable: it comes before the ack of the same message) that makes the
// event a failure (with the alternate exchange that happens only when the
// topology was changed behind the relay's back: it is logged with what to
// bind).  A lost connection or a missing confirm (--confirm-timeout) drops the
// connection: send() or receive() returns false and the events without a
// verdict stay pending.  A broker answer that retrying cannot fix
// (ACCESS_REFUSED, an exchange of another type) is Fatal.
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
#include <deque>
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

  /// Publishes the events of FLIGHT (mandatory, persistent) without
  /// waiting for the broker, numbering them with the connection's next
  /// delivery tags (FLIGHT.first_tag); sets FLIGHT.pending and sent_ms.
  /// Returns false when the broker went away (the connection is dropped;
  /// events already sent may still be unconfirmed: give FLIGHTS up with
  /// their verdicts as they are).  Throws Fatal.
  bool send(Flight &flight);

  /// Reads the broker's verdicts (basic.ack and basic.nack, single or
  /// multiple, and basic.return) into the events of FLIGHTS, the batches
  /// sent on this connection and not yet given up, in tag order.  Waits at
  /// most WAIT_MS milliseconds (0: only what has already come) and returns
  /// as soon as the oldest flight is done() or, when it is, after what
  /// has come.  Returns false when the broker went away or an event of a
  /// flight sent more than --confirm-timeout ago still has no verdict
  /// (counted as an outage: the connection is dropped; verdicts read so
  /// far stay).  Throws Fatal (the broker closed the channel for a reason
  /// retrying cannot fix).
  bool receive(std::deque<Flight> &flights, long long wait_ms);

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
  void settle(std::deque<Flight> &flights, uint64_t tag, bool multiple,
              Event::Verdict to);
  void read_return(std::deque<Flight> &flights, const amqp_basic_return_t &r);

  const Options &o_;
  pgi::Link<pgi::AmqpConnection> link_;
  uint64_t next_tag_ = 1;
  std::string source_;
};

} // namespace relay

#endif
