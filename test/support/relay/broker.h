// test/support/relay/broker.h: the test's own side of RabbitMQ: declare,
// publish, drain and delete (rabbitmq-c through src/common's
// pgi::AmqpConnection), and stopping and starting the broker.
#ifndef PG_INVENTORY_TEST_SUPPORT_RELAY_BROKER_H
#define PG_INVENTORY_TEST_SUPPORT_RELAY_BROKER_H

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support.h" // src/common: pgi::AmqpConnection

namespace pgi::test {

/// One message taken from a queue.
struct Message {
  std::string message_id, routing_key, body, content_type, type;
  int delivery_mode = 0;
  /// The headers (AMQP 1.0: application properties) whose values are
  /// strings, by name.
  std::map<std::string, std::string> headers;
};

/// Test-side broker access: one connection to the environment's broker
/// (INVENTORY_AMQP_URL) or to URL, channel 1, no confirms.
class Broker {
 public:
  explicit Broker(const std::string &url = "");
  /// Declares durable topic exchange X (idempotent) as the programs do:
  /// with UNROUTED, its alternate exchange and queue UNROUTED (see
  /// pgi::Topology); without (""), a plain topic exchange.
  void exchange(const std::string &x, const std::string &unrouted = "");
  /// Declares exchange X of TYPE with no arguments (to make a clash).
  void plain_exchange(const std::string &x, const std::string &type);
  /// Empties queue Q.
  void purge(const std::string &q);
  /// Messages now in queue Q.
  long long depth(const std::string &q);
  /// Deletes queue Q (best effort).
  void delete_queue(const std::string &q);
  /// Deletes exchange X (best effort).
  void delete_exchange(const std::string &x);
  /// Declares durable queue Q bound to X with KEY, and purges it.
  void queue(const std::string &q, const std::string &x,
             const std::string &key);
  /// Publishes BODY to X with routing key KEY and MESSAGE_ID, persistent.
  void publish(const std::string &x, const std::string &key,
               const std::string &message_id, const std::string &body);
  /// Takes every message now in Q (basic.get with ack), in queue order.
  std::vector<Message> drain(const std::string &q);

 private:
  std::unique_ptr<pgi::AmqpConnection> cx_;
};

/// Runs `source rabbitmq.sh && FUNCTION` (rmq_stop_app, rmq_start_app) on
/// the test broker, with test/scripts/rabbitmq.sh or RMQ_SCRIPT; true on
/// success.
bool rmq(const std::string &function);

} // namespace pgi::test

#endif
