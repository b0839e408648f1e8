// src/relay/publisher.cpp: the publisher (publisher.h).
#include "publisher.h"

#include <sys/time.h>

#include <algorithm>

#include "log.h"

namespace relay {

namespace {

const std::string specversion = "1.0";

} // namespace

Publisher::Publisher(const Options &o)
    : o_{o}, link_{"broker", [this] {
                     auto mq = std::make_unique<pgi::AmqpConnection>(o_.broker,
                                                                     30, 5000);
                     mq->declare_topology(o_.topology);
                     if (!o_.audit_queue.empty())
                       mq->declare_bound_queue(o_.audit_queue,
                                               o_.topology.exchange, "#");
                     mq->confirm_select();
                     next_tag_ = 1;
                     pgi::log("broker_connected",
                              {{"broker", mq->peer()},
                               {"exchange", o_.topology.exchange}});
                     return mq;
                   }} {
  link_.on_drop([](pgi::AmqpConnection &mq) { mq.mark_broken(); });
}

long long Publisher::unrouted_depth() {
  pgi::AmqpConnection *mq = link_.current();
  if (mq == nullptr || o_.topology.unrouted.empty()) return -1;
  try {
    return mq->queue_depth(o_.topology.unrouted);
  } catch (const pgi::AmqpError &e) {
    link_.lost(e.what());
  }
  return -1;
}

void Publisher::check() {
  pgi::AmqpConnection *mq = link_.current();
  if (mq == nullptr) return;
  try {
    for (;;) {
      struct timeval now = {0, 0}; // do not wait: only what has come
      amqp_frame_t frame;
      const int rc = amqp_simple_wait_frame_noblock(mq->state(), &frame, &now);
      if (rc == AMQP_STATUS_TIMEOUT) return;
      if (rc != AMQP_STATUS_OK)
        throw pgi::AmqpError(std::string("broker connection: ") +
                             amqp_error_string2(rc));
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;
      const amqp_method_number_t id = frame.payload.method.id;
      if (id == AMQP_CHANNEL_CLOSE_METHOD ||
          id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_rpc_reply_t reply;
        reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
        reply.reply = frame.payload.method;
        reply.library_error = 0;
        mq->check(reply, "idle connection"); // throws
      }
      // anything else (a late confirm of a batch given up): nothing to do
    }
  } catch (const pgi::AmqpError &e) {
    link_.lost(e.what());
  } catch (const pgi::Fatal &) {
    mq->mark_broken();
    link_.close();
    throw;
  }
}

bool Publisher::ready() {
  return link_.get() != nullptr;
}

bool Publisher::send(Flight &flight) {
  flight.first_tag = next_tag_;
  flight.pending = flight.events.size();
  flight.settled = 0;
  try {
    pgi::AmqpConnection &mq = *link_.current();
    const amqp_bytes_t exchange =
      amqp_cstring_bytes(o_.topology.exchange.c_str());
    for (auto &e : flight.events) {
      amqp_basic_properties_t props;
      props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG |
                     AMQP_BASIC_DELIVERY_MODE_FLAG |
                     AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TYPE_FLAG;
      props.content_type = amqp_cstring_bytes("application/json");
      props.delivery_mode = 2;
      props.message_id = amqp_cstring_bytes(e.event_id.c_str());
      props.type = amqp_cstring_bytes(e.event_type.c_str());
      // the CloudEvents AMQP binding, binary content mode (publisher.h)
      amqp_table_entry_t ce[5];
      if (o_.cloudevents) {
        const std::pair<const char *, const std::string *> attrs[] = {
          {"cloudEvents:specversion", &specversion},
          {"cloudEvents:id", &e.event_id},
          {"cloudEvents:source", &source_},
          {"cloudEvents:type", &e.event_type},
          {"cloudEvents:time", &e.occurred_at}};
        int n = 0;
        for (const auto &a : attrs) {
          if (a.second->empty()) continue; // no time: left out (optional)
          ce[n].key = amqp_cstring_bytes(a.first);
          ce[n].value.kind = AMQP_FIELD_KIND_UTF8;
          ce[n].value.value.bytes = amqp_cstring_bytes(a.second->c_str());
          ++n;
        }
        props._flags |= AMQP_BASIC_HEADERS_FLAG;
        props.headers.num_entries = n;
        props.headers.entries = ce;
      }
      amqp_bytes_t body;
      body.len = e.payload.size();
      body.bytes = const_cast<char *>(e.payload.data());
      const int rc = amqp_basic_publish(
        mq.state(), mq.channel, exchange,
        amqp_cstring_bytes(e.event_type.c_str()), 1, 0, &props, body);
      if (rc != AMQP_STATUS_OK)
        throw pgi::AmqpError(std::string("basic.publish: ") +
                             amqp_error_string2(rc));
      ++next_tag_;
    }
    flight.sent_ms = pgi::now_ms();
    return true;
  } catch (const pgi::AmqpError &e) {
    link_.lost(e.what());
    return false;
  }
}

void Publisher::read_return(std::deque<Flight> &flights,
                            const amqp_basic_return_t &r) {
  pgi::AmqpConnection &mq = *link_.current();
  const std::string why =
    "returned by the broker: " + std::to_string(r.reply_code) + " " +
    pgi::to_string(r.reply_text);
  const std::string routing_key = pgi::to_string(r.routing_key);
  const std::string exchange = pgi::to_string(r.exchange);
  amqp_message_t msg;
  pgi::check_reply(amqp_read_message(mq.state(), mq.channel, &msg, 0),
                   "read returned message");
  std::string message_id;
  if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
    message_id = pgi::to_string(msg.properties.message_id);
  amqp_destroy_message(&msg);
  for (auto &f : flights)
    for (auto &e : f.events) {
      if (e.event_id != message_id || e.returned) continue;
      e.returned = true;
      e.error = why;
      pgi::log("unroutable",
               {{"event_id", e.event_id},
                {"event_type", e.event_type},
                {"exchange", exchange},
                {"routing_key", routing_key},
                {"error", why},
                {"hint", "bind a queue to exchange " + exchange +
                           " with routing key " + routing_key +
                           " (or a pattern such as " +
                           routing_key.substr(0, routing_key.find('.')) +
                           ".#); the event is retried"}});
    }
}

void Publisher::settle(std::deque<Flight> &flights, uint64_t tag,
                       bool multiple, Event::Verdict to) {
  const long long now = pgi::now_ms();
  for (auto &f : flights) {
    if (f.first_tag > tag) break; // this flight and the later ones: after
    const uint64_t n = f.events.size();
    auto give = [&](std::size_t i) {
      Event &e = f.events[i];
      if (e.verdict != Event::Verdict::pending) return;
      e.verdict = to;
      e.acked_ms = now;
      --f.pending;
    };
    if (!multiple) {
      if (tag - f.first_tag < n)
        give(static_cast<std::size_t>(tag - f.first_tag));
    } else {
      // everything up to TAG: from the first event without a verdict on
      const std::size_t end =
        static_cast<std::size_t>(std::min<uint64_t>(n, tag - f.first_tag + 1));
      for (std::size_t i = f.settled; i < end; ++i) give(i);
    }
    while (f.settled < n &&
           f.events[f.settled].verdict != Event::Verdict::pending)
      ++f.settled;
  }
}

bool Publisher::receive(std::deque<Flight> &flights, long long wait_ms) {
  pgi::AmqpConnection *mqp = link_.current();
  if (mqp == nullptr) return false;
  pgi::AmqpConnection &mq = *mqp;
  const long long start = pgi::now_ms();
  try {
    for (;;) {
      // the oldest flight still waiting: its deadline bounds the wait
      const Flight *oldest = nullptr;
      for (const auto &f : flights)
        if (!f.done()) {
          oldest = &f;
          break;
        }
      if (oldest == nullptr || flights.front().done()) {
        // nothing to wait for: only what has already come
        wait_ms = 0;
      }
      const long long now = pgi::now_ms();
      long long left = std::max(0LL, start + wait_ms - now);
      bool overdue = false;
      if (oldest != nullptr) {
        const long long due = oldest->sent_ms + o_.confirm_timeout_ms;
        if (due - now <= left) {
          left = std::max(0LL, due - now);
          overdue = true;
        }
      }
      struct timeval tv;
      tv.tv_sec = left / 1000;
      tv.tv_usec = (left % 1000) * 1000;
      amqp_frame_t frame;
      const int rc = amqp_simple_wait_frame_noblock(mq.state(), &frame, &tv);
      if (rc == AMQP_STATUS_TIMEOUT) {
        if (overdue)
          throw pgi::AmqpError("no confirm from the broker within " +
                               std::to_string(o_.confirm_timeout_ms) + " ms");
        return true;
      }
      if (rc != AMQP_STATUS_OK)
        throw pgi::AmqpError(std::string("waiting for confirms: ") +
                             amqp_error_string2(rc));
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;
      switch (frame.payload.method.id) {
      case AMQP_BASIC_ACK_METHOD: {
        auto *m =
          static_cast<amqp_basic_ack_t *>(frame.payload.method.decoded);
        settle(flights, m->delivery_tag, m->multiple, Event::Verdict::acked);
        break;
      }
      case AMQP_BASIC_NACK_METHOD: {
        auto *m =
          static_cast<amqp_basic_nack_t *>(frame.payload.method.decoded);
        settle(flights, m->delivery_tag, m->multiple, Event::Verdict::nacked);
        break;
      }
      case AMQP_BASIC_RETURN_METHOD:
        read_return(flights, *static_cast<amqp_basic_return_t *>(
                               frame.payload.method.decoded));
        break;
      case AMQP_CHANNEL_CLOSE_METHOD:
      case AMQP_CONNECTION_CLOSE_METHOD: {
        amqp_rpc_reply_t reply;
        reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
        reply.reply = frame.payload.method;
        reply.library_error = 0;
        mq.check(reply, "publishing to exchange " + o_.topology.exchange);
        break;
      }
      default:
        break;
      }
      if (!flights.empty() && flights.front().done())
        amqp_maybe_release_buffers(mq.state());
    }
  } catch (const pgi::AmqpError &e) {
    link_.lost(e.what());
    return false;
  } catch (const pgi::Fatal &) {
    mq.mark_broken();
    link_.close(); // the broker closed the channel: nothing more to say
    throw;
  }
}

} // namespace relay
