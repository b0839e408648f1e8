// src/relay/main.cpp: inventory-relay, the outbox relay.
//
// Moves committed outbox events to RabbitMQ, at least once:
//   1. lease a batch with inventory.relay_claim (SKIP LOCKED: relays never
//      wait for each other; only the first unpublished event of each
//      reservation is handed out, so per-reservation order holds);
//   2. publish every event with the mandatory flag on a channel in
//      publisher-confirm mode (exchange = --exchange, routing key =
//      event_type, message_id = event_id, persistent, application/json);
//   3. wait until every delivery tag of the batch is acked or nacked; a
//      basic.return (unroutable) comes before the ack of the same message
//      and makes that message a failure;
//   4. one relay_mark_published for the acked events, relay_mark_failed
//      for the nacked and returned ones (backoff, dead letter at
//      --max-attempts).
// A full batch is followed at once by the next one; otherwise the relay
// sleeps --poll-interval-ms (or waits for a NOTIFY with --listen).
//
// Broker outage: the claimed batch is released (relay_release: no attempt
// counted, so nothing is dead-lettered because the broker was down), and
// the relay reconnects with exponential backoff and jitter.  Events acked
// before the connection broke are still marked published.
// Duplicates: a crash between the broker's ack and relay_mark_published,
// or a lease that runs out while the relay is still working, publishes an
// event again; consumers deduplicate by message_id (= event_id).
//
// Test hook: INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM=1 kills the process
// (SIGKILL) right after a batch was confirmed, before it is marked.
#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <amqp.h>
#include <pqxx/pqxx>

#include "program.h"
#include "support.h"

namespace {

using pgi::AmqpConnection;
using pgi::AmqpError;
using pgi::log;

/// Command-line options (see usage()); the shared ones in CommonOptions.
struct Options : pgi::CommonOptions {
  Options() : pgi::CommonOptions{"INVENTORY_RELAY_DB"} {}
  long long batch_size = 100;
  long long lease_ms = 30000;
  long long poll_ms = 100;
  long long max_attempts = 10;
  long long backoff_ms = 1000;
  long long max_backoff_ms = 300000;
  long long confirm_timeout_ms = 15000;
  std::string name = pgi::default_name();
  bool once = false;
  bool listen = false;
  std::string channel = "inventory_outbox";
  std::string audit_queue;
};

void usage(std::ostream &out) {
  out << R"(usage: inventory-relay [options]

Publishes pg_inventory outbox events to RabbitMQ with publisher confirms
(at least once).

  --db CONNINFO           libpq connection string (env INVENTORY_RELAY_DB,
                          else the PG* environment)
  --amqp-url URL          amqp://user:pass@host:port[/vhost] (env
                          INVENTORY_AMQP_URL; default
                          amqp://guest:guest@127.0.0.1:5672, no trailing /)
  --exchange NAME         topic exchange, declared durable (default inventory,
                          env INVENTORY_EXCHANGE)
  --batch-size N          events per claim, 1..10000 (default 100; env
                          INVENTORY_RELAY_BATCH_SIZE)
  --lease DURATION        lease of a claimed batch (default 30s; env
                          INVENTORY_RELAY_LEASE)
  --poll-interval-ms N    sleep when the outbox is drained (default 100)
  --max-attempts N        failed publishes before a dead letter (default 10)
  --backoff DURATION      first retry delay after a failure (default 1s)
  --max-backoff DURATION  longest retry delay (default 5m)
  --confirm-timeout DURATION  wait for the broker's confirms (default 15s)
  --stats-interval DURATION   counters in the log (default 10s)
  --audit-queue NAME      also declare durable queue NAME bound with '#', so
                          that every event type is routable (without a
                          binding for its routing key an event comes back
                          as unroutable and is retried, then dead-lettered)
  --name NAME             relay name for leases (default hostname-pid)
  --once                  drain until a claim finds nothing, then exit
  --listen                also wake up on NOTIFY (see --channel); the
                          extension does not NOTIFY by default: in PG15 a
                          notifying transaction serialises commits
  --channel NAME          LISTEN channel for --listen (default
                          inventory_outbox)
  --help                  this text
Durations: 250ms, 30s, 2m, 1h (a bare number is seconds).
SIGTERM/SIGINT: finish the batch in hand, print the counters, exit 0.
)";
}

/// Parses ARGV into O (after the environment fallbacks
/// INVENTORY_RELAY_BATCH_SIZE and INVENTORY_RELAY_LEASE); returns false
/// after printing the usage for --help.  Throws std::invalid_argument.
bool parse_args(int argc, char **argv, Options &o) {
  if (const auto v = pgi::env_or("INVENTORY_RELAY_BATCH_SIZE", ""); !v.empty())
    o.batch_size = pgi::parse_count(v, "INVENTORY_RELAY_BATCH_SIZE");
  if (const auto v = pgi::env_or("INVENTORY_RELAY_LEASE", ""); !v.empty())
    o.lease_ms = pgi::parse_duration_ms(v, "INVENTORY_RELAY_LEASE");
  if (!pgi::parse_command_line(argc, argv, o, usage, [&o](pgi::ArgReader &a) {
        const std::string &arg = a.name();
        if (arg == "--batch-size")
          o.batch_size = a.count();
        else if (arg == "--lease")
          o.lease_ms = a.duration_ms();
        else if (arg == "--poll-interval-ms")
          o.poll_ms = a.count();
        else if (arg == "--max-attempts")
          o.max_attempts = a.count();
        else if (arg == "--backoff")
          o.backoff_ms = a.duration_ms();
        else if (arg == "--max-backoff")
          o.max_backoff_ms = a.duration_ms();
        else if (arg == "--confirm-timeout")
          o.confirm_timeout_ms = a.duration_ms();
        else if (arg == "--name")
          o.name = a.value();
        else if (arg == "--audit-queue")
          o.audit_queue = a.value();
        else if (arg == "--once")
          o.once = true;
        else if (arg == "--listen")
          o.listen = true;
        else if (arg == "--channel")
          o.channel = a.value();
        else
          return false;
        return true;
      }))
    return false;
  if (o.batch_size < 1 || o.batch_size > 10000)
    throw std::invalid_argument("--batch-size must be 1..10000");
  if (o.max_attempts < 1 || o.max_attempts > 1000)
    throw std::invalid_argument("--max-attempts must be 1..1000");
  if (o.lease_ms < 1) throw std::invalid_argument("--lease must be above 0");
  if (o.confirm_timeout_ms < 1)
    throw std::invalid_argument("--confirm-timeout must be above 0");
  if (o.name.empty() || o.name.size() > 64)
    throw std::invalid_argument("--name must have 1 to 64 characters");
  return true;
}

/// True for errors worth retrying on a new connection: serialization
/// failure and deadlock (class 40, which libpqxx 6.4 may leave without a
/// SQLSTATE), resources (53), operator intervention (57), connection (08).
bool transient(const pqxx::sql_error &e) {
  const std::string s = e.sqlstate();
  return s.empty() || s.rfind("40", 0) == 0 || s.rfind("53", 0) == 0 ||
         s.rfind("57", 0) == 0 || s.rfind("08", 0) == 0;
}

/// An interval literal for MS milliseconds.
std::string interval(long long ms) {
  return std::to_string(ms) + " milliseconds";
}

/// A bigint[] literal of IDS.
std::string id_array(const std::vector<long long> &ids) {
  std::string s = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "}";
}

/// One claimed event and what the broker said about it.
struct Event {
  long long id = 0;
  std::string event_id, event_type, payload;
  int attempts = 0;
  enum class State { pending, acked, nacked } state = State::pending;
  bool returned = false;
  std::string error;
};

/// The outcome of a batch that still has to be written to the database.
struct Marks {
  std::vector<long long> published;
  std::vector<long long> failed;
  std::string failed_error;
  long long would_die = 0; // of failed: at their max_attempts-th failure
  bool empty() const { return published.empty() && failed.empty(); }
};

struct Counters {
  long long claimed = 0, published = 0, retried = 0, dead_lettered = 0,
            returned = 0, nacked = 0, released = 0, batches = 0,
            reconnects = 0, lease_lost = 0;
};

/// Wakes the relay on NOTIFY CHANNEL (with --listen).
class Wakeup : public pqxx::notification_receiver {
 public:
  Wakeup(pqxx::connection_base &cx, const std::string &channel)
      : pqxx::notification_receiver(cx, channel) {}
  void operator()(const std::string &, int) override { woken = true; }
  bool woken = false;
};

class Relay {
 public:
  explicit Relay(const Options &o)
      : o_{o}, db_backoff_{200, 10000}, mq_backoff_{200, 10000} {}

  /// Runs until stopped (or drained with --once); returns the exit code.
  int run();

 private:
  bool ensure_db();
  bool ensure_mq();
  void drop_mq(const std::string &why);
  void drop_db(const std::string &why);
  std::vector<Event> claim();
  void publish_and_confirm(std::vector<Event> &batch);
  void read_return();
  bool apply_marks();
  void release(const std::vector<Event> &batch);
  void stats(bool final);
  void idle_wait();

  Options o_;
  std::unique_ptr<pqxx::connection> db_;
  std::unique_ptr<Wakeup> wakeup_;
  std::unique_ptr<AmqpConnection> mq_;
  uint64_t next_tag_ = 1;
  pgi::Backoff db_backoff_, mq_backoff_;
  Marks marks_;
  Counters n_;
  std::vector<Event> *current_ = nullptr;
  long long last_stats_ms_ = pgi::now_ms();
};

bool Relay::ensure_db() {
  if (db_) return true;
  try {
    db_ = std::make_unique<pqxx::connection>(o_.db);
    db_->prepare("claim",
                 "SELECT id, event_id::text, event_type, payload::text, "
                 "attempts FROM inventory.relay_claim($1, $2, $3::interval)");
    db_->prepare("published",
                 "SELECT inventory.relay_mark_published($1, $2::bigint[])");
    db_->prepare("failed",
                 "SELECT inventory.relay_mark_failed($1, "
                 "$2::bigint[], $3, $4, $5::interval, $6::interval)");
    db_->prepare("release",
                 "SELECT inventory.relay_release($1, $2::bigint[])");
    db_->prepare("metrics", "SELECT unpublished, dead_lettered, "
                            "round(lag_seconds::numeric, 3)::text "
                            "FROM inventory.outbox_metrics");
    if (o_.listen) wakeup_ = std::make_unique<Wakeup>(*db_, o_.channel);
    db_backoff_.reset();
    log("db_connected", {{"relay", o_.name}});
    return true;
  } catch (const pqxx::broken_connection &e) {
    wakeup_.reset();
    db_.reset();
    pgi::wait_to_retry(db_backoff_, "db_unavailable", e.what());
    return false;
  }
}

void Relay::drop_db(const std::string &why) {
  log("db_lost", {{"error", why}});
  wakeup_.reset();
  db_.reset();
  pgi::sleep_unless_stopped(db_backoff_.next());
}

bool Relay::ensure_mq() {
  if (mq_) return true;
  try {
    auto mq = pgi::connect_broker(o_);
    if (!o_.audit_queue.empty())
      mq->declare_bound_queue(o_.audit_queue, o_.exchange, "#");
    mq->confirm_select();
    mq_ = std::move(mq);
    next_tag_ = 1;
    if (mq_backoff_.failures() > 0) ++n_.reconnects;
    mq_backoff_.reset();
    log("broker_connected", {{"exchange", o_.exchange}});
    return true;
  } catch (const AmqpError &e) {
    pgi::wait_to_retry(mq_backoff_, "broker_unavailable", e.what());
    return false;
  }
}

void Relay::drop_mq(const std::string &why) {
  pgi::drop_broker(mq_, why);
  // the first reconnect comes after a backoff as well
  mq_backoff_.next();
}

std::vector<Event> Relay::claim() {
  pqxx::work tx{*db_};
  pqxx::result r =
    tx.exec_prepared("claim", o_.name, o_.batch_size, interval(o_.lease_ms));
  tx.commit();
  std::vector<Event> batch;
  batch.reserve(r.size());
  for (const auto &row : r) {
    Event e;
    e.id = row[0].as<long long>();
    e.event_id = row[1].as<std::string>();
    e.event_type = row[2].as<std::string>();
    e.payload = row[3].as<std::string>();
    e.attempts = row[4].as<int>();
    batch.push_back(std::move(e));
  }
  n_.claimed += static_cast<long long>(batch.size());
  return batch;
}

void Relay::read_return() {
  amqp_message_t msg;
  pgi::check_reply(amqp_read_message(mq_->state(), mq_->channel, &msg, 0),
                   "read returned message");
  std::string message_id;
  if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
    message_id = pgi::to_string(msg.properties.message_id);
  amqp_destroy_message(&msg);
  for (auto &e : *current_)
    if (e.event_id == message_id) e.returned = true;
}

void Relay::publish_and_confirm(std::vector<Event> &batch) {
  current_ = &batch;
  const uint64_t first_tag = next_tag_;
  amqp_connection_state_t cx = mq_->state();
  const amqp_bytes_t exchange = amqp_cstring_bytes(o_.exchange.c_str());
  for (auto &e : batch) {
    amqp_basic_properties_t props;
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG |
                   AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                   AMQP_BASIC_TYPE_FLAG;
    props.content_type = amqp_cstring_bytes("application/json");
    props.delivery_mode = 2;
    props.message_id = amqp_cstring_bytes(e.event_id.c_str());
    props.type = amqp_cstring_bytes(e.event_type.c_str());
    amqp_bytes_t body;
    body.len = e.payload.size();
    body.bytes = const_cast<char *>(e.payload.data());
    int rc = amqp_basic_publish(cx, mq_->channel, exchange,
                                amqp_cstring_bytes(e.event_type.c_str()), 1, 0,
                                &props, body);
    if (rc != AMQP_STATUS_OK)
      throw AmqpError(std::string("basic.publish: ") + amqp_error_string2(rc));
    ++next_tag_;
  }

  std::size_t pending = batch.size();
  auto settle = [&](uint64_t tag, bool multiple, Event::State to) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const uint64_t t = first_tag + i;
      if ((multiple ? t <= tag : t == tag) &&
          batch[i].state == Event::State::pending) {
        batch[i].state = to;
        --pending;
      }
    }
  };
  const long long deadline = pgi::now_ms() + o_.confirm_timeout_ms;
  while (pending > 0) {
    const long long left = deadline - pgi::now_ms();
    if (left <= 0)
      throw AmqpError("no confirm from the broker within " +
                      std::to_string(o_.confirm_timeout_ms) + " ms");
    struct timeval tv;
    tv.tv_sec = left / 1000;
    tv.tv_usec = (left % 1000) * 1000;
    amqp_frame_t frame;
    int rc = amqp_simple_wait_frame_noblock(cx, &frame, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) continue;
    if (rc != AMQP_STATUS_OK)
      throw AmqpError(std::string("waiting for confirms: ") +
                      amqp_error_string2(rc));
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    switch (frame.payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      auto *m = static_cast<amqp_basic_ack_t *>(frame.payload.method.decoded);
      settle(m->delivery_tag, m->multiple, Event::State::acked);
      break;
    }
    case AMQP_BASIC_NACK_METHOD: {
      auto *m = static_cast<amqp_basic_nack_t *>(frame.payload.method.decoded);
      settle(m->delivery_tag, m->multiple, Event::State::nacked);
      break;
    }
    case AMQP_BASIC_RETURN_METHOD: {
      auto *m =
        static_cast<amqp_basic_return_t *>(frame.payload.method.decoded);
      const std::string why =
        "returned by the broker: " + std::to_string(m->reply_code) + " " +
        pgi::to_string(m->reply_text);
      read_return();
      for (auto &e : batch)
        if (e.returned && e.error.empty()) e.error = why;
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      auto *m =
        static_cast<amqp_channel_close_t *>(frame.payload.method.decoded);
      throw AmqpError(
        "channel closed by the broker: " + std::to_string(m->reply_code) +
        " " + pgi::to_string(m->reply_text));
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      auto *m =
        static_cast<amqp_connection_close_t *>(frame.payload.method.decoded);
      throw AmqpError(
        "connection closed by the broker: " + std::to_string(m->reply_code) +
        " " + pgi::to_string(m->reply_text));
    }
    default:
      break;
    }
  }
  amqp_maybe_release_buffers(cx);
  current_ = nullptr;
}

/// Writes marks_ (the broker's verdicts) to the database; true when done.
bool Relay::apply_marks() {
  if (marks_.empty()) return true;
  try {
    pqxx::work tx{*db_};
    long long marked = 0, recorded = 0;
    if (!marks_.published.empty())
      marked = tx.exec_prepared1("published", o_.name,
                                 id_array(marks_.published))[0]
                 .as<long long>();
    if (!marks_.failed.empty())
      recorded = tx.exec_prepared1("failed", o_.name, id_array(marks_.failed),
                                   marks_.failed_error, o_.max_attempts,
                                   interval(o_.backoff_ms),
                                   interval(o_.max_backoff_ms))[0]
                   .as<long long>();
    tx.commit();
    // the functions act only on events whose lease this relay still holds:
    // the others were claimed by another relay after this lease ran out
    // (a batch slower than --lease) and are that relay's to mark
    const long long lost =
      static_cast<long long>(marks_.published.size() + marks_.failed.size()) -
      marked - recorded;
    if (lost > 0) {
      n_.lease_lost += lost;
      pgi::log("lease_lost", {{"events", std::to_string(lost)},
                              {"hint", "a batch took longer than --lease"}});
    }
    n_.published += static_cast<long long>(marks_.published.size());
    n_.dead_lettered += marks_.would_die;
    n_.retried +=
      static_cast<long long>(marks_.failed.size()) - marks_.would_die;
    marks_ = Marks{};
    return true;
  } catch (const pqxx::broken_connection &e) {
    drop_db(e.what());
  } catch (const pqxx::in_doubt_error &e) {
    // the commit may or may not have happened: both marks are idempotent
    // enough (published_at IS NULL guards), so write them again
    drop_db(e.what());
  } catch (const pqxx::sql_error &e) {
    if (!transient(e)) throw;
    drop_db(e.what());
  }
  return false;
}

void Relay::release(const std::vector<Event> &batch) {
  std::vector<long long> ids;
  for (const auto &e : batch)
    if (e.state != Event::State::acked || e.returned) ids.push_back(e.id);
  if (ids.empty()) return;
  try {
    if (!db_) return; // the leases run out by themselves
    pqxx::work tx{*db_};
    const int n =
      tx.exec_prepared1("release", o_.name, id_array(ids))[0].as<int>();
    tx.commit();
    n_.released += n;
    log("released", {{"events", std::to_string(n)}});
  } catch (const pqxx::broken_connection &e) {
    drop_db(e.what());
  }
}

void Relay::stats(bool final) {
  std::string unpublished = "?", dead = "?", lag = "?";
  try {
    if (db_) {
      pqxx::work tx{*db_};
      pqxx::row r = tx.exec_prepared1("metrics");
      tx.commit();
      unpublished = r[0].as<std::string>();
      dead = r[1].as<std::string>();
      lag = r[2].as<std::string>();
    }
  } catch (const pqxx::broken_connection &e) {
    wakeup_.reset();
    db_.reset();
  } catch (const std::exception &e) {
    // metrics are best effort (e.g. no SELECT on the view)
  }
  log(final ? "stats_final" : "stats",
      {{"relay", o_.name},
       {"published", std::to_string(n_.published)},
       {"retried", std::to_string(n_.retried)},
       {"dead_lettered", std::to_string(n_.dead_lettered)},
       {"returned", std::to_string(n_.returned)},
       {"nacked", std::to_string(n_.nacked)},
       {"released", std::to_string(n_.released)},
       {"lease_lost", std::to_string(n_.lease_lost)},
       {"batches", std::to_string(n_.batches)},
       {"reconnects", std::to_string(n_.reconnects)},
       {"outbox_unpublished", unpublished},
       {"outbox_dead_lettered", dead},
       {"lag_seconds", lag}});
  last_stats_ms_ = pgi::now_ms();
}

void Relay::idle_wait() {
  if (!wakeup_) {
    pgi::sleep_unless_stopped(o_.poll_ms);
    return;
  }
  // with --listen: a NOTIFY ends the wait early; the poll still runs
  wakeup_->woken = false;
  const long long end = pgi::now_ms() + o_.poll_ms;
  try {
    while (!pgi::stop_requested() && !wakeup_->woken) {
      const long long left = end - pgi::now_ms();
      if (left <= 0) break;
      const long long slice = std::min(left, 100LL);
      db_->await_notification(slice / 1000, (slice % 1000) * 1000);
    }
  } catch (const pqxx::broken_connection &e) {
    drop_db(e.what());
  }
}

int Relay::run() {
  log("start", {{"relay", o_.name},
                {"exchange", o_.exchange},
                {"batch_size", std::to_string(o_.batch_size)},
                {"lease_ms", std::to_string(o_.lease_ms)},
                {"poll_interval_ms", std::to_string(o_.poll_ms)},
                {"max_attempts", std::to_string(o_.max_attempts)},
                {"once", o_.once ? "true" : "false"},
                {"listen", o_.listen ? "true" : "false"}});
  const bool crash_hook =
    pgi::env_flag("INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM");
  int rc = 0;
  while (!pgi::stop_requested()) {
    if (pgi::now_ms() - last_stats_ms_ >= o_.stats_ms) stats(false);
    if (!ensure_db()) continue;
    if (!apply_marks()) continue;
    if (!ensure_mq()) continue;

    std::vector<Event> batch;
    try {
      batch = claim();
    } catch (const pqxx::broken_connection &e) {
      drop_db(e.what());
      continue;
    } catch (const pqxx::in_doubt_error &e) {
      drop_db(e.what()); // an unknown claim: its leases run out
      continue;
    } catch (const pqxx::sql_error &e) {
      if (!transient(e)) throw;
      drop_db(e.what());
      continue;
    }
    if (batch.empty()) {
      if (o_.once) break;
      idle_wait();
      continue;
    }
    ++n_.batches;

    try {
      publish_and_confirm(batch);
    } catch (const AmqpError &e) {
      // broker outage: what was acked is published; the rest goes back
      // without counting an attempt
      current_ = nullptr;
      drop_mq(e.what());
      for (const auto &ev : batch)
        if (ev.state == Event::State::acked && !ev.returned)
          marks_.published.push_back(ev.id);
      release(batch);
      if (db_) apply_marks();
      continue;
    }

    std::vector<std::string> errors;
    for (const auto &e : batch) {
      if (e.state == Event::State::acked && !e.returned) {
        marks_.published.push_back(e.id);
        continue;
      }
      if (e.returned)
        ++n_.returned;
      else
        ++n_.nacked;
      marks_.failed.push_back(e.id);
      if (e.attempts + 1 >= o_.max_attempts) ++marks_.would_die;
      if (errors.empty())
        errors.push_back(e.returned ? e.error : "nacked by the broker");
    }
    if (!marks_.failed.empty()) {
      marks_.failed_error = errors.front();
      log("publish_failed",
          {{"events", std::to_string(marks_.failed.size())},
           {"dead_lettering", std::to_string(marks_.would_die)},
           {"error", marks_.failed_error}});
    }
    if (crash_hook && !marks_.published.empty()) {
      log("test_crash_after_confirm",
          {{"confirmed", std::to_string(marks_.published.size())}});
      std::raise(SIGKILL);
    }
    apply_marks();
    if (static_cast<long long>(batch.size()) < o_.batch_size && !o_.once)
      idle_wait();
  }
  // a stop: write what the broker confirmed, then report
  if (!marks_.empty() && db_) apply_marks();
  stats(true);
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  return pgi::run_program(
    "inventory-relay", usage, [&] { return parse_args(argc, argv, o); },
    [&] {
      Relay relay{o};
      return relay.run();
    });
}
