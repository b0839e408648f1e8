// test/support/relay/broker.cpp: the test side of RabbitMQ (broker.h).
#include "support/relay/broker.h"

#include <cstdlib>

#include <amqp.h>

#include "support/environment.h"

namespace pgi::test {

namespace {

pgi::BrokerSettings settings(const std::string &url) {
  pgi::BrokerSettings s;
  s.url = url;
  return s;
}

} // namespace

Broker::Broker(const std::string &url)
    : cx_{std::make_unique<pgi::AmqpConnection>(
        settings(url.empty() ? environment().amqp_url : url), 0, 5000)} {}

void Broker::exchange(const std::string &x, const std::string &unrouted) {
  pgi::Topology t;
  t.exchange = x;
  t.unrouted = unrouted;
  cx_->declare_topology(t);
}

void Broker::plain_exchange(const std::string &x, const std::string &type) {
  cx_->declare_exchange(x, type);
}

long long Broker::depth(const std::string &q) {
  return cx_->queue_depth(q);
}

void Broker::queue(const std::string &q, const std::string &x,
                   const std::string &key) {
  cx_->declare_bound_queue(q, x, key);
  purge(q);
}

void Broker::purge(const std::string &q) {
  amqp_queue_purge(cx_->state(), cx_->channel, amqp_cstring_bytes(q.c_str()));
  pgi::check_reply(amqp_get_rpc_reply(cx_->state()), "queue.purge");
}

void Broker::publish(const std::string &x, const std::string &key,
                     const std::string &message_id, const std::string &body) {
  amqp_basic_properties_t p;
  p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
             AMQP_BASIC_MESSAGE_ID_FLAG;
  p.content_type = amqp_cstring_bytes("application/json");
  p.delivery_mode = 2;
  p.message_id = amqp_cstring_bytes(message_id.c_str());
  amqp_bytes_t b;
  b.len = body.size();
  b.bytes = const_cast<char *>(body.data());
  int rc = amqp_basic_publish(cx_->state(), cx_->channel,
                              amqp_cstring_bytes(x.c_str()),
                              amqp_cstring_bytes(key.c_str()), 0, 0, &p, b);
  if (rc != AMQP_STATUS_OK)
    throw pgi::AmqpError(std::string("publish: ") + amqp_error_string2(rc));
}

std::vector<Message> Broker::drain(const std::string &q) {
  std::vector<Message> out;
  for (;;) {
    amqp_rpc_reply_t r = amqp_basic_get(cx_->state(), cx_->channel,
                                        amqp_cstring_bytes(q.c_str()), 1);
    pgi::check_reply(r, "basic.get " + q);
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) break;
    auto *ok = static_cast<amqp_basic_get_ok_t *>(r.reply.decoded);
    Message m;
    m.routing_key = pgi::to_string(ok->routing_key);
    amqp_message_t msg;
    pgi::check_reply(amqp_read_message(cx_->state(), cx_->channel, &msg, 0),
                     "read");
    if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
      m.message_id = pgi::to_string(msg.properties.message_id);
    if (msg.properties._flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
      m.content_type = pgi::to_string(msg.properties.content_type);
    if (msg.properties._flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
      m.delivery_mode = msg.properties.delivery_mode;
    if (msg.properties._flags & AMQP_BASIC_TYPE_FLAG)
      m.type = pgi::to_string(msg.properties.type);
    if (msg.properties._flags & AMQP_BASIC_HEADERS_FLAG)
      for (int i = 0; i < msg.properties.headers.num_entries; ++i) {
        const amqp_table_entry_t &h = msg.properties.headers.entries[i];
        if (h.value.kind == AMQP_FIELD_KIND_UTF8 ||
            h.value.kind == AMQP_FIELD_KIND_BYTES)
          m.headers[pgi::to_string(h.key)] =
            pgi::to_string(h.value.value.bytes);
      }
    m.body = pgi::to_string(msg.body);
    amqp_destroy_message(&msg);
    amqp_maybe_release_buffers(cx_->state());
    out.push_back(std::move(m));
  }
  return out;
}

void Broker::delete_queue(const std::string &q) {
  try {
    amqp_queue_delete(cx_->state(), cx_->channel,
                      amqp_cstring_bytes(q.c_str()), 0, 0);
    pgi::check_reply(amqp_get_rpc_reply(cx_->state()), "queue.delete");
  } catch (const std::exception &) {
  }
}

void Broker::delete_exchange(const std::string &x) {
  try {
    amqp_exchange_delete(cx_->state(), cx_->channel,
                         amqp_cstring_bytes(x.c_str()), 0);
    pgi::check_reply(amqp_get_rpc_reply(cx_->state()), "exchange.delete");
  } catch (const std::exception &) {
  }
}

bool rmq(const std::string &function) {
  const std::string cmd = "bash -c 'source \"" +
                          pgi::env_or("RMQ_SCRIPT", RABBITMQ_SCRIPT) +
                          "\" && " + function + "'";
  return std::system(cmd.c_str()) == 0;
}

} // namespace pgi::test
