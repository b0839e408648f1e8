// src/fulfiller/main.cpp: inventory-fulfiller, the fulfillment consumer.
//
// Consumes reservation.confirmed events from a durable queue (default
// `fulfillment`) bound to the inventory exchange, with manual acks.  For
// each message, in ONE transaction:
//   - INSERT the inbox row (event_id = message_id) ON CONFLICT DO NOTHING;
//     if it was there, the event was processed before: nothing else is
//     written (counted as deduplicated);
//   - otherwise the business effect: a fulfillment.request row, or, when a
//     SKU of the event is not in fulfillment.warehouse_sku (a permanent
//     failure), inventory.compensate(...) and a fulfillment.failure row;
// then COMMIT, and only then basic.ack.  A crash between the commit and the
// ack redelivers the message, and the inbox row makes it a no-op.
// Database errors: reconnect and basic.nack with requeue (the message comes
// back).  Unknown event types and malformed messages are acked and logged,
// never requeued in a loop.
//
// Test hook: INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT=1 kills the
// process (SIGKILL) after the first commit of an effect, before the ack.
#include <csignal>
#include <iostream>
#include <memory>
#include <string>

#include <amqp.h>
#include <pqxx/pqxx>

#include "program.h"
#include "schema.h"
#include "support.h"

namespace {

using pgi::AmqpConnection;
using pgi::AmqpError;
using pgi::log;

const char *const confirmed_type = "reservation.confirmed";

/// Command-line options (see usage()); the shared ones in CommonOptions.
struct Options : pgi::CommonOptions {
  Options() : pgi::CommonOptions{"INVENTORY_FULFILLER_DB"} {}
  std::string queue = "fulfillment";
  long long prefetch = 50;
  long long once_idle_ms = 0;
  bool skip_schema = false;
};

void usage(std::ostream &out) {
  out << R"(usage: inventory-fulfiller [options]

Consumes reservation.confirmed events and writes fulfillment requests,
exactly once per event_id (inbox table, ack after commit).

  --db CONNINFO          libpq connection string (env INVENTORY_FULFILLER_DB,
                         else the PG* environment)
  --amqp-url URL         amqp://user:pass@host:port[/vhost] (env
                         INVENTORY_AMQP_URL; default
                         amqp://guest:guest@127.0.0.1:5672)
  --exchange NAME        topic exchange (default inventory, env
                         INVENTORY_EXCHANGE); declared durable if missing
  --queue NAME           durable queue bound with reservation.confirmed
                         (default fulfillment)
  --prefetch N           unacked messages in flight (default 50)
  --once-idle-ms N       exit after N ms without a message (tests)
  --stats-interval DURATION  counters in the log (default 10s)
  --skip-schema          do not run the schema script at start (when the
                         role may not create it; setup scripts ran it)
  --help                 this text
SIGTERM/SIGINT: finish the message in hand, print the counters, exit 0.
)";
}

/// Parses ARGV into O; returns false after printing the usage for --help.
bool parse_args(int argc, char **argv, Options &o) {
  if (!pgi::parse_command_line(argc, argv, o, usage, [&o](pgi::ArgReader &a) {
        const std::string &arg = a.name();
        if (arg == "--queue")
          o.queue = a.value();
        else if (arg == "--prefetch")
          o.prefetch = a.count();
        else if (arg == "--once-idle-ms")
          o.once_idle_ms = a.count();
        else if (arg == "--skip-schema")
          o.skip_schema = true;
        else
          return false;
        return true;
      }))
    return false;
  if (o.prefetch < 1 || o.prefetch > 65535)
    throw std::invalid_argument("--prefetch must be 1..65535");
  return true;
}

struct Counters {
  long long consumed = 0, deduplicated = 0, fulfilled = 0, compensated = 0,
            ignored = 0, rejected = 0, requeued = 0, redelivered = 0;
};

/// What to tell the broker about a message.
enum class Verdict { ack, requeue };

class Fulfiller {
 public:
  explicit Fulfiller(const Options &o)
      : o_{o}, db_backoff_{200, 10000}, mq_backoff_{200, 10000} {}
  int run();

 private:
  bool ensure_db();
  bool ensure_mq();
  void drop_db(const std::string &why);
  void drop_mq(const std::string &why);
  Verdict handle(const amqp_envelope_t &env);
  Verdict process(const std::string &event_id, const std::string &type,
                  const std::string &payload);
  void stats(bool final);

  Options o_;
  std::unique_ptr<pqxx::connection> db_;
  std::unique_ptr<AmqpConnection> mq_;
  pgi::Backoff db_backoff_, mq_backoff_;
  Counters n_;
  bool crash_hook_ =
    pgi::env_flag("INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT");
  long long last_stats_ms_ = pgi::now_ms();
};

bool Fulfiller::ensure_db() {
  if (db_) return true;
  try {
    db_ = std::make_unique<pqxx::connection>(o_.db);
    if (!o_.skip_schema) {
      pqxx::work tx{*db_};
      // one schema set-up at a time (several consumers may start at once)
      tx.exec("SELECT pg_advisory_xact_lock(hashtext('fulfillment.schema'))");
      tx.exec(fulfillment_schema_sql);
      tx.commit();
    }
    db_->prepare("inbox", "INSERT INTO fulfillment.inbox (event_id, "
                          "event_type) VALUES ($1::uuid, $2) "
                          "ON CONFLICT (event_id) DO NOTHING RETURNING 1");
    db_->prepare("missing_sku",
                 "SELECT l.value->>'sku' FROM jsonb_array_elements("
                 "$1::jsonb->'lines') AS l WHERE NOT EXISTS (SELECT 1 "
                 "FROM fulfillment.warehouse_sku w WHERE w.tenant = "
                 "$1::jsonb->>'tenant' AND w.sku = l.value->>'sku') "
                 "ORDER BY 1 LIMIT 1");
    db_->prepare("request",
                 "INSERT INTO fulfillment.request (event_id, tenant, "
                 "request_key, reservation_id, version, lines) "
                 "SELECT $1::uuid, p->>'tenant', p->>'request_key', "
                 "(p->>'reservation_id')::bigint, (p->>'version')::integer, "
                 "p->'lines' FROM (SELECT $2::jsonb AS p) AS s");
    db_->prepare("compensate",
                 "SELECT c.status, c.state FROM inventory.compensate("
                 "$1::jsonb->>'tenant', $1::jsonb->>'request_key', $2) AS c");
    db_->prepare("failure",
                 "INSERT INTO fulfillment.failure (event_id, tenant, "
                 "request_key, reservation_id, reason, compensated_status, "
                 "compensated_state) SELECT $1::uuid, p->>'tenant', "
                 "p->>'request_key', (p->>'reservation_id')::bigint, $3, $4, "
                 "$5 FROM (SELECT $2::jsonb AS p) AS s");
    db_backoff_.reset();
    log("db_connected");
    return true;
  } catch (const pqxx::broken_connection &e) {
    db_.reset();
    pgi::wait_to_retry(db_backoff_, "db_unavailable", e.what());
    return false;
  }
}

void Fulfiller::drop_db(const std::string &why) {
  log("db_lost", {{"error", why}});
  db_.reset();
  pgi::sleep_unless_stopped(db_backoff_.next());
}

bool Fulfiller::ensure_mq() {
  if (mq_) return true;
  try {
    auto mq = pgi::connect_broker(o_);
    mq->declare_bound_queue(o_.queue, o_.exchange, confirmed_type);
    amqp_connection_state_t cx = mq->state();
    amqp_basic_qos(cx, mq->channel, 0, static_cast<uint16_t>(o_.prefetch), 0);
    pgi::check_reply(amqp_get_rpc_reply(cx), "basic.qos");
    amqp_basic_consume(cx, mq->channel, amqp_cstring_bytes(o_.queue.c_str()),
                       amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    pgi::check_reply(amqp_get_rpc_reply(cx), "basic.consume");
    mq_ = std::move(mq);
    mq_backoff_.reset();
    log("broker_connected", {{"queue", o_.queue}, {"exchange", o_.exchange}});
    return true;
  } catch (const AmqpError &e) {
    pgi::wait_to_retry(mq_backoff_, "broker_unavailable", e.what());
    return false;
  }
}

void Fulfiller::drop_mq(const std::string &why) {
  pgi::drop_broker(mq_, why);
  pgi::sleep_unless_stopped(mq_backoff_.next());
}

Verdict Fulfiller::process(const std::string &event_id,
                           const std::string &type,
                           const std::string &payload) {
  pqxx::work tx{*db_};
  if (tx.exec_prepared("inbox", event_id, type).empty()) {
    tx.commit();
    ++n_.deduplicated;
    log("duplicate", {{"event_id", event_id}});
    return Verdict::ack;
  }
  pqxx::result missing = tx.exec_prepared("missing_sku", payload);
  bool fulfilled = missing.empty();
  if (fulfilled) {
    tx.exec_prepared("request", event_id, payload);
  } else {
    const std::string reason =
      "warehouse cannot ship sku " + missing[0][0].as<std::string>("");
    pqxx::row c = tx.exec_prepared1("compensate", payload, reason);
    const std::string status = c[0].as<std::string>("");
    const std::string state = c[1].as<std::string>("");
    tx.exec_prepared("failure", event_id, payload, reason, status, state);
    log("compensated", {{"event_id", event_id},
                        {"reason", reason},
                        {"status", status},
                        {"state", state}});
  }
  tx.commit();
  ++(fulfilled ? n_.fulfilled : n_.compensated);
  if (crash_hook_) {
    log("test_crash_after_commit", {{"event_id", event_id}});
    std::raise(SIGKILL);
  }
  return Verdict::ack;
}

Verdict Fulfiller::handle(const amqp_envelope_t &env) {
  ++n_.consumed;
  if (env.redelivered) ++n_.redelivered;
  const std::string type = pgi::to_string(env.routing_key);
  const amqp_basic_properties_t &p = env.message.properties;
  const std::string event_id = (p._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
                                 ? pgi::to_string(p.message_id)
                                 : std::string{};
  if (type != confirmed_type) {
    ++n_.ignored;
    log("ignored", {{"reason", "unknown event type"},
                    {"event_type", type},
                    {"event_id", event_id}});
    return Verdict::ack;
  }
  if (event_id.empty()) {
    ++n_.rejected;
    log("rejected", {{"reason", "no message_id"}, {"event_type", type}});
    return Verdict::ack;
  }
  const std::string payload = pgi::to_string(env.message.body);
  try {
    return process(event_id, type, payload);
  } catch (const pqxx::broken_connection &e) {
    drop_db(e.what());
  } catch (const pqxx::in_doubt_error &e) {
    // committed or not: a redelivery finds the inbox row if it was
    drop_db(e.what());
  } catch (const pqxx::sql_error &e) {
    const std::string state = e.sqlstate();
    if (state.rfind("22", 0) == 0) {
      // malformed event (bad uuid, bad JSON, missing fields): permanent
      ++n_.rejected;
      log("rejected",
          {{"event_id", event_id}, {"sqlstate", state}, {"error", e.what()}});
      return Verdict::ack;
    }
    log("db_error",
        {{"event_id", event_id}, {"sqlstate", state}, {"error", e.what()}});
    pgi::sleep_unless_stopped(db_backoff_.next());
  }
  return Verdict::requeue;
}

void Fulfiller::stats(bool final) {
  log(final ? "stats_final" : "stats",
      {{"consumed", std::to_string(n_.consumed)},
       {"deduplicated", std::to_string(n_.deduplicated)},
       {"fulfilled", std::to_string(n_.fulfilled)},
       {"compensated", std::to_string(n_.compensated)},
       {"ignored", std::to_string(n_.ignored)},
       {"rejected", std::to_string(n_.rejected)},
       {"requeued", std::to_string(n_.requeued)},
       {"redelivered", std::to_string(n_.redelivered)}});
  last_stats_ms_ = pgi::now_ms();
}

int Fulfiller::run() {
  log("start", {{"queue", o_.queue}, {"exchange", o_.exchange}});
  long long last_message_ms = pgi::now_ms();
  while (!pgi::stop_requested()) {
    if (pgi::now_ms() - last_stats_ms_ >= o_.stats_ms) stats(false);
    if (o_.once_idle_ms > 0 &&
        pgi::now_ms() - last_message_ms >= o_.once_idle_ms)
      break;
    if (!ensure_db()) continue;
    if (!ensure_mq()) continue;
    amqp_connection_state_t cx = mq_->state();
    amqp_maybe_release_buffers(cx);
    amqp_envelope_t env;
    struct timeval tv = {0, 200000};
    amqp_rpc_reply_t r = amqp_consume_message(cx, &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_TIMEOUT)
      continue;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
      // not a delivery: a channel or connection close, a consumer cancel
      amqp_frame_t frame;
      if (amqp_simple_wait_frame(cx, &frame) != AMQP_STATUS_OK) {
        drop_mq("reading a frame failed");
      } else if (frame.frame_type == AMQP_FRAME_METHOD &&
                 (frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
                  frame.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD ||
                  frame.payload.method.id == AMQP_BASIC_CANCEL_METHOD)) {
        drop_mq("closed by the broker (method " +
                std::to_string(frame.payload.method.id) + ")");
      }
      continue;
    }
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
      try {
        pgi::check_reply(r, "consume");
        drop_mq("consume failed");
      } catch (const AmqpError &e) {
        drop_mq(e.what());
      }
      continue;
    }
    last_message_ms = pgi::now_ms();
    const uint64_t tag = env.delivery_tag;
    const Verdict v = handle(env);
    amqp_destroy_envelope(&env);
    int rc = v == Verdict::ack ? amqp_basic_ack(cx, mq_->channel, tag, 0)
                               : amqp_basic_nack(cx, mq_->channel, tag, 0, 1);
    if (v == Verdict::requeue) ++n_.requeued;
    if (rc != AMQP_STATUS_OK)
      drop_mq(std::string("ack: ") + amqp_error_string2(rc));
  }
  stats(true);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  return pgi::run_program(
    "inventory-fulfiller", usage, [&] { return parse_args(argc, argv, o); },
    [&] {
      Fulfiller f{o};
      return f.run();
    });
}
