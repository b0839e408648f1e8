// src/fulfiller/fulfiller.cpp: the fulfiller's loop (fulfiller.h).
#include "fulfiller.h"

#include <sys/time.h>

#include "log.h"

namespace fulfiller {

Fulfiller::Fulfiller(const Options &o)
    : o_{o}, registry_{std::make_shared<prometheus::Registry>()},
      m_{*registry_, pgi::version, o.queue}, store_{o},
      broker_{
        "broker",
        [this] {
          auto mq = std::make_unique<pgi::AmqpConnection>(o_.broker, 30, 5000);
          mq->declare_topology(o_.topology);
          mq->declare_bound_queue(o_.queue, o_.topology.exchange,
                                  confirmed_type);
          amqp_connection_state_t cx = mq->state();
          amqp_basic_qos(cx, mq->channel, 0,
                         static_cast<uint16_t>(o_.prefetch), 0);
          mq->check(amqp_get_rpc_reply(cx), "basic.qos");
          amqp_basic_consume(cx, mq->channel,
                             amqp_cstring_bytes(o_.queue.c_str()),
                             amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
          mq->check(amqp_get_rpc_reply(cx), "basic.consume");
          last_message_ms_ = pgi::now_ms();
          pgi::log("broker_connected", {{"broker", mq->peer()},
                                        {"queue", o_.queue},
                                        {"exchange", o_.topology.exchange}});
          return mq;
        }},
      last_stats_ms_{pgi::now_ms()}, last_message_ms_{pgi::now_ms()} {
  broker_.on_drop([](pgi::AmqpConnection &mq) { mq.mark_broken(); });
  store_.on_state(
    pgi::watch_link(health_, &pgi::Health::set_database, m_.db_reconnects));
  broker_.on_state(
    pgi::watch_link(health_, &pgi::Health::set_broker, m_.broker_reconnects));
}

Fulfiller::Verdict Fulfiller::handle(const amqp_envelope_t &env) {
  ++n_.consumed;
  m_.consumed.Increment();
  if (env.redelivered) {
    ++n_.redelivered;
    m_.redelivered.Increment();
  }
  const std::string type = pgi::to_string(env.routing_key);
  const amqp_basic_properties_t &p = env.message.properties;
  const std::string event_id = (p._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
                                 ? pgi::to_string(p.message_id)
                                 : std::string{};
  if (type != confirmed_type) {
    ++n_.ignored;
    m_.ignored.Increment();
    pgi::log("ignored", {{"reason", "unknown event type"},
                         {"event_type", type},
                         {"event_id", event_id}});
    return Verdict::ack;
  }
  if (event_id.empty()) {
    ++n_.rejected;
    m_.rejected.Increment();
    pgi::log("rejected", {{"reason", "no message_id"}, {"event_type", type}});
    return Verdict::ack;
  }
  switch (store_.process(event_id, type, pgi::to_string(env.message.body))) {
  case Outcome::fulfilled:
    ++n_.fulfilled;
    m_.fulfilled.Increment();
    return Verdict::ack;
  case Outcome::held:
    ++n_.held;
    m_.held.Increment();
    m_.held_now.Increment(); // exact again at the next recheck
    return Verdict::ack;
  case Outcome::compensated:
    ++n_.compensated;
    m_.compensations.Increment();
    return Verdict::ack;
  case Outcome::duplicate:
    ++n_.deduplicated;
    m_.deduplicated.Increment();
    return Verdict::ack;
  case Outcome::rejected:
    ++n_.rejected;
    m_.rejected.Increment();
    return Verdict::ack;
  case Outcome::retry:
    break;
  }
  return Verdict::requeue;
}

void Fulfiller::consume_one() {
  pgi::AmqpConnection &mq = *broker_.current();
  amqp_connection_state_t cx = mq.state();
  amqp_maybe_release_buffers(cx);
  amqp_envelope_t env;
  struct timeval tv = {0, 200000};
  const amqp_rpc_reply_t r = amqp_consume_message(cx, &env, &tv, 0);
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
      r.library_error == AMQP_STATUS_TIMEOUT) {
    // idle: look at the database connection now and then
    if (pgi::now_ms() - last_check_ms_ >= 1000) {
      store_.check();
      last_check_ms_ = pgi::now_ms();
    }
    return;
  }
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
      r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
    // not a delivery: a channel or connection close, a consumer cancel
    amqp_frame_t frame;
    if (amqp_simple_wait_frame(cx, &frame) != AMQP_STATUS_OK) {
      broker_.lost("reading a frame failed");
      return;
    }
    if (frame.frame_type != AMQP_FRAME_METHOD) return;
    const amqp_method_number_t id = frame.payload.method.id;
    if (id == AMQP_CHANNEL_CLOSE_METHOD ||
        id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_rpc_reply_t reply;
      reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
      reply.reply = frame.payload.method;
      reply.library_error = 0;
      try {
        mq.check(reply, "consuming from queue " + o_.queue);
      } catch (const pgi::AmqpError &e) {
        broker_.lost(e.what());
      }
    } else if (id == AMQP_BASIC_CANCEL_METHOD) {
      broker_.lost("the broker cancelled the consumer (queue " + o_.queue +
                   " deleted?)");
    }
    return;
  }
  if (r.reply_type != AMQP_RESPONSE_NORMAL) {
    try {
      mq.check(r, "consume");
      broker_.lost("consume failed");
    } catch (const pgi::AmqpError &e) {
      broker_.lost(e.what());
    }
    return;
  }
  last_message_ms_ = pgi::now_ms();
  const long long started_ms = last_message_ms_;
  const uint64_t tag = env.delivery_tag;
  const Verdict v = handle(env);
  amqp_destroy_envelope(&env);
  const int rc = v == Verdict::ack
                   ? amqp_basic_ack(cx, mq.channel, tag, 0)
                   : amqp_basic_nack(cx, mq.channel, tag, 0, 1);
  if (v == Verdict::requeue) {
    ++n_.requeued;
    m_.requeued.Increment();
  }
  m_.processing.Observe((pgi::now_ms() - started_ms) / 1000.0);
  if (rc != AMQP_STATUS_OK)
    broker_.lost(std::string("ack: ") + amqp_error_string2(rc));
}

void Fulfiller::stats(bool final) {
  pgi::log(final ? "stats_final" : "stats",
           {{"consumed", std::to_string(n_.consumed)},
            {"deduplicated", std::to_string(n_.deduplicated)},
            {"fulfilled", std::to_string(n_.fulfilled)},
            {"held", std::to_string(n_.held)},
            {"held_released", std::to_string(n_.held_released)},
            {"compensated", std::to_string(n_.compensated)},
            {"ignored", std::to_string(n_.ignored)},
            {"rejected", std::to_string(n_.rejected)},
            {"requeued", std::to_string(n_.requeued)},
            {"redelivered", std::to_string(n_.redelivered)},
            {"reconnects", std::to_string(broker_.reconnects())}});
  last_stats_ms_ = pgi::now_ms();
}

int Fulfiller::run() {
  pgi::log("start",
           {{"version", pgi::version},
            {"queue", o_.queue},
            {"unknown_sku", o_.compensate_unknown_sku ? "compensate" : "hold"},
            {"exchange", o_.topology.exchange}});
  if (!o_.metrics_address.empty()) {
    server_ = std::make_unique<pgi::MetricsServer>(o_.metrics_address,
                                                   registry_, health_);
    pgi::log("metrics_listening", {{"address", o_.metrics_address},
                                   {"port", std::to_string(server_->port())},
                                   {"paths", "/metrics,/healthz"}});
  }
  try {
    while (!pgi::stop_requested()) {
      if (pgi::now_ms() - last_stats_ms_ >= o_.stats_ms) stats(false);
      if (!store_.ready()) continue;
      if (pgi::now_ms() - last_recheck_ms_ >= o_.recheck_held_ms) {
        const long long n = store_.release_held();
        if (n >= 0) {
          n_.held_released += n;
          m_.held_released.Increment(static_cast<double>(n));
        }
        const long long held = store_.held_count();
        if (held >= 0) m_.held_now.Set(static_cast<double>(held));
        last_recheck_ms_ = pgi::now_ms();
      }
      if (broker_.get() == nullptr) continue;
      // idle: counted from the last message, or from the consumer's start
      if (o_.once_idle_ms > 0 &&
          pgi::now_ms() - last_message_ms_ >= o_.once_idle_ms)
        break;
      consume_one();
    }
  } catch (const pgi::Fatal &) {
    stats(true);
    throw;
  }
  stats(true);
  return pgi::exit_ok;
}

} // namespace fulfiller
