// test/relay/relay_test.cpp: the outbox relay and the fulfillment consumer
// under faults, end to end: real PostgreSQL, real RabbitMQ, the built
// programs run as child processes.
//
//   RelayKilledAfterConfirm   SIGKILL between the broker's ack and
//                             relay_mark_published: published again, the
//                             consumer's effect happens once
//   FulfillerKilledAfterCommit SIGKILL between the consumer's commit and its
//                             ack: redelivered, effect once
//   SameEventManyTimes        one event delivered N times: one effect, N-1
//                             deduplicated; a compensation happens once
//   BrokerOutageMidStream     RabbitMQ stopped while events keep coming:
//                             no attempt burnt, nothing lost, backlog drains
//   UnroutableDeadLetters     no binding: returned, retried, dead-lettered
//                             at max_attempts, requeued, then delivered
//   TwoRelaysOneBacklog       no event published twice, per-reservation
//                             order kept
//
// Each test has its own database (relay_<name>), exchange and queues.
#include <atomic>
#include <csignal>
#include <set>
#include <thread>

#include "harness.h"

namespace {

using rt::Broker;
using rt::Process;
using rt::TestDatabase;

/// Arguments of a relay on DB publishing to exchange X.
std::vector<std::string> relay_args(const TestDatabase &db,
                                    const std::string &x,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"--db",
                             db.conninfo(),
                             "--amqp-url",
                             rt::amqp_url(),
                             "--exchange",
                             x,
                             "--poll-interval-ms",
                             "20",
                             "--stats-interval",
                             "1s"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

/// Arguments of a fulfiller on DB consuming queue Q of exchange X, exiting
/// after IDLE_MS without a message.
std::vector<std::string> fulfiller_args(const TestDatabase &db,
                                        const std::string &x,
                                        const std::string &q,
                                        long long idle_ms) {
  return {"--db",           db.conninfo(),
          "--amqp-url",     rt::amqp_url(),
          "--exchange",     x,
          "--queue",        q,
          "--once-idle-ms", std::to_string(idle_ms)};
}

/// Runs a program to its end (at most TIMEOUT_MS); expects exit code 0.
void run_ok(Process &p, long long timeout_ms = 60000) {
  const int status = p.wait(timeout_ms);
  EXPECT_TRUE(rt::exited_with(status, 0)) << "wait status " << status;
}

/// The fulfiller's first run: creates schema fulfillment and its queue;
/// the warehouse ships sku-1 of tenant acme.
void prepare_fulfiller(const TestDatabase &db, const std::string &x,
                       const std::string &q) {
  Process f(rt::fulfiller_bin(), fulfiller_args(db, x, q, 1));
  run_ok(f);
  db.exec("INSERT INTO fulfillment.warehouse_sku VALUES ('acme', 'sku-1')");
}

/// N reservations ord-1..N of one unit of SKU for tenant acme (restocked
/// first with enough units).
void reserve_orders(const TestDatabase &db, int n,
                    const std::string &sku = "sku-1") {
  db.exec("SELECT inventory.restock('acme', 'rcpt-" + sku + "', '" + sku +
          "', 1000)");
  db.exec("SELECT inventory.reserve('acme', 'ord-' || i, '" + sku +
          "', 1) FROM generate_series(1, " + std::to_string(n) + ") i");
}

long long count_type(const std::vector<rt::Message> &msgs,
                     const std::string &type) {
  long long n = 0;
  for (const auto &m : msgs) n += m.routing_key == type;
  return n;
}

} // namespace

// The relay dies (SIGKILL, test hook) after the broker confirmed a batch of
// reservation.confirmed events and before relay_mark_published.  The next
// relay, once the leases ran out, publishes them again; the fulfiller sees
// each twice and fulfils each once.
TEST(OutboxRelay, RelayKilledAfterConfirm) {
  RELAY_REQUIRE_SERVERS();
  TestDatabase db("killed_after_confirm");
  const std::string x = "t.killed_after_confirm", all = x + ".all",
                    fq = x + ".fulfillment";
  Broker b;
  b.exchange(x);
  b.queue(all, x, "#");
  prepare_fulfiller(db, x, fq);
  reserve_orders(db, 5);
  {
    Process r(rt::relay_bin(), relay_args(db, x, {"--once"}));
    run_ok(r);
  }
  db.exec("SELECT inventory.confirm('acme', 'ord-' || i) "
          "FROM generate_series(1, 5) i");
  {
    Process r(rt::relay_bin(), relay_args(db, x, {"--once", "--lease", "1s"}),
              {{"INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM", "1"}});
    const int status = r.wait(30000);
    ASSERT_TRUE(rt::killed_by(status, SIGKILL)) << "status " << status;
  }
  // confirmed by the broker, but not marked: still leased, unpublished
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                      "event_type = 'reservation.confirmed' AND "
                      "published_at IS NULL AND claimed_until IS NOT NULL"),
            5);
  ASSERT_TRUE(rt::eventually(db,
                             "SELECT bool_and(claimed_until <= now()) FROM "
                             "inventory.outbox WHERE published_at IS NULL",
                             10000));
  {
    Process r(rt::relay_bin(), relay_args(db, x, {"--once"}));
    run_ok(r);
    EXPECT_EQ(r.stat("stats_final", "published"), "5");
  }
  EXPECT_EQ(db.scalar("SELECT unpublished FROM inventory.outbox_metrics"), 0);

  // the broker has every confirmed event twice
  const auto msgs = b.drain(all);
  EXPECT_EQ(count_type(msgs, "reservation.confirmed"), 10);
  std::map<std::string, int> seen;
  for (const auto &m : msgs)
    if (m.routing_key == "reservation.confirmed") ++seen[m.message_id];
  EXPECT_EQ(seen.size(), 5u);
  for (const auto &s : seen) EXPECT_EQ(s.second, 2) << s.first;

  // ... and the consumer's effect happens once per event
  Process f(rt::fulfiller_bin(), fulfiller_args(db, x, fq, 800));
  run_ok(f);
  EXPECT_EQ(f.stat("stats_final", "consumed"), "10");
  EXPECT_EQ(f.stat("stats_final", "deduplicated"), "5");
  EXPECT_EQ(f.stat("stats_final", "fulfilled"), "5");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.request"), 5);
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT request_key) "
                      "FROM fulfillment.request"),
            5);
  b.remove(all, x);
  b.remove(fq, x);
}

// The fulfiller dies (SIGKILL, test hook) after committing its first effect
// and before acking it: the broker redelivers, the inbox row makes the
// redelivery a no-op.
TEST(OutboxRelay, FulfillerKilledAfterCommit) {
  RELAY_REQUIRE_SERVERS();
  TestDatabase db("fulfiller_killed");
  const std::string x = "t.fulfiller_killed", fq = x + ".fulfillment";
  Broker b;
  b.exchange(x);
  b.queue(x + ".all", x, "#");
  prepare_fulfiller(db, x, fq);
  reserve_orders(db, 5);
  db.exec("SELECT inventory.confirm('acme', 'ord-' || i) "
          "FROM generate_series(1, 5) i");
  {
    Process r(rt::relay_bin(), relay_args(db, x, {"--once"}));
    run_ok(r);
  }
  {
    Process f(rt::fulfiller_bin(), fulfiller_args(db, x, fq, 5000),
              {{"INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT", "1"}});
    const int status = f.wait(30000);
    ASSERT_TRUE(rt::killed_by(status, SIGKILL)) << "status " << status;
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.request"), 1);
  Process f(rt::fulfiller_bin(), fulfiller_args(db, x, fq, 800));
  run_ok(f);
  EXPECT_EQ(f.stat("stats_final", "deduplicated"), "1");
  EXPECT_EQ(f.stat("stats_final", "fulfilled"), "4");
  EXPECT_NE(f.stat("stats_final", "redelivered"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.request"), 5);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.inbox"), 5);
  b.remove(x + ".all", x);
  b.remove(fq, x);
}

// One event delivered N times (published N times straight to the broker):
// one effect, N-1 deduplicated.  An event the warehouse cannot ship is
// compensated once, however often it comes.
TEST(OutboxRelay, SameEventManyTimes) {
  RELAY_REQUIRE_SERVERS();
  TestDatabase db("same_event");
  const std::string x = "t.same_event", fq = x + ".fulfillment";
  Broker b;
  b.exchange(x);
  prepare_fulfiller(db, x, fq);
  db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10), "
          "inventory.restock('acme', 'r2', 'sku-2', 10)");
  db.exec("SELECT inventory.reserve('acme', 'ok', 'sku-1', 2), "
          "inventory.reserve('acme', 'bad', 'sku-2', 3)");
  db.exec("SELECT inventory.confirm('acme', 'ok'), "
          "inventory.confirm('acme', 'bad')");
  auto ev = db.exec("SELECT event_id::text, payload::text, "
                    "payload->>'request_key' FROM inventory.outbox WHERE "
                    "event_type = 'reservation.confirmed' ORDER BY 3 DESC");
  ASSERT_EQ(ev.size(), 2u);
  const int n = 10;
  for (int i = 0; i < n; ++i)
    for (const auto &row : ev)
      b.publish(x, "reservation.confirmed", row[0].as<std::string>(),
                row[1].as<std::string>());
  Process f(rt::fulfiller_bin(), fulfiller_args(db, x, fq, 800));
  run_ok(f);
  EXPECT_EQ(f.stat("stats_final", "consumed"), std::to_string(2 * n));
  EXPECT_EQ(f.stat("stats_final", "deduplicated"), std::to_string(2 * n - 2));
  EXPECT_EQ(f.stat("stats_final", "fulfilled"), "1");
  EXPECT_EQ(f.stat("stats_final", "compensated"), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.request "
                      "WHERE request_key = 'ok'"),
            1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.request"), 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM fulfillment.failure WHERE "
                      "request_key = 'bad' AND compensated_status = "
                      "'compensated' AND reason = 'warehouse cannot ship "
                      "sku sku-2'"),
            1);
  // the compensation returned the 3 units once
  EXPECT_EQ(db.scalar("SELECT available * 1000 + consumed FROM "
                      "inventory.stock WHERE sku = 'sku-2'"),
            10 * 1000 + 0);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inventory.reservation WHERE "
                      "request_key = 'bad' AND state = 'compensated'"),
            1);
  b.remove(fq, x);
}

// RabbitMQ's application is stopped while reservations keep coming, then
// started again: the relay releases what it held (no attempt counted, no
// dead letter), reconnects with backoff, and every event arrives.
TEST(OutboxRelay, BrokerOutageMidStream) {
  RELAY_REQUIRE_SERVERS();
  TestDatabase db("broker_outage");
  const std::string x = "t.broker_outage", all = x + ".all";
  {
    Broker b;
    b.exchange(x);
    b.queue(all, x, "#");
  }
  db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 100000)");
  Process r(rt::relay_bin(), relay_args(db, x, {"--batch-size", "10"}));
  std::atomic<bool> producing{true};
  std::atomic<int> made{0};
  std::thread producer([&] {
    auto cx = db.connect();
    while (producing) {
      pqxx::work tx{*cx};
      tx.exec("SELECT inventory.reserve('acme', 'ord-" + std::to_string(made) +
              "', 'sku-1', 1)");
      tx.commit();
      ++made;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  auto stop_producer = [&] {
    if (producer.joinable()) {
      producing = false;
      producer.join();
    }
  };
  EXPECT_TRUE(rt::eventually(
    db,
    "SELECT count(*) >= 20 FROM inventory.outbox WHERE published_at IS "
    "NOT NULL",
    10000));
  if (!rt::rmq("rmq_stop_app")) {
    stop_producer();
    FAIL() << "rmq_stop_app failed";
  }
  // while the broker is away events pile up, without burning attempts
  const bool piled = rt::eventually(
    db, "SELECT unpublished >= 50 FROM inventory.outbox_metrics", 15000);
  const long long burnt =
    db.scalar("SELECT count(*) FROM inventory.outbox WHERE attempts > 0 OR "
              "dead_at IS NOT NULL");
  const bool restarted = rt::rmq("rmq_start_app");
  stop_producer();
  ASSERT_TRUE(restarted) << "rmq_start_app failed";
  EXPECT_TRUE(piled);
  EXPECT_EQ(burnt, 0);
  EXPECT_TRUE(rt::eventually(
    db, "SELECT unpublished = 0 FROM inventory.outbox_metrics", 40000));
  r.signal(SIGTERM);
  run_ok(r, 20000);
  EXPECT_NE(r.log().find("event=broker_lost"), std::string::npos);
  EXPECT_NE(r.stat("stats_final", "reconnects"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                      "attempts > 0 OR dead_at IS NOT NULL"),
            0);
  // nothing lost: every event of the outbox is in the queue
  Broker b;
  std::set<std::string> got;
  for (const auto &m : b.drain(all)) got.insert(m.message_id);
  auto ids = db.exec("SELECT event_id::text FROM inventory.outbox");
  EXPECT_EQ(static_cast<long long>(ids.size()), made + 1);
  long long missing = 0;
  for (const auto &row : ids)
    missing += got.count(row[0].as<std::string>()) == 0;
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(got.size(), ids.size());
  b.remove(all, x);
}

// An event nobody is bound for comes back (basic.return, then an ack):
// a failure.  With --max-attempts 3 it is dead-lettered at the third
// failure, visible in outbox_metrics; after a queue is bound, the
// operator's requeue_dead_letters makes it go out.
TEST(OutboxRelay, UnroutableDeadLetters) {
  RELAY_REQUIRE_SERVERS();
  TestDatabase db("unroutable");
  const std::string x = "t.unroutable", q = x + ".stock";
  Broker b;
  b.exchange(x);
  db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10)");
  db.exec("SELECT inventory.adjust('acme', 'a1', 'sku-1', -2, 'loss', "
          "'broken')");
  const std::string first =
    db.exec("SELECT event_id::text FROM "
            "inventory.outbox ORDER BY id LIMIT 1")[0][0]
      .as<std::string>();
  {
    Process r(rt::relay_bin(), relay_args(db, x,
                                          {"--max-attempts", "3", "--backoff",
                                           "20ms", "--max-backoff", "100ms"}));
    EXPECT_TRUE(rt::eventually(
      db, "SELECT dead_lettered = 2 FROM inventory.outbox_metrics", 15000));
    r.signal(SIGTERM);
    run_ok(r, 20000);
    EXPECT_EQ(r.stat("stats_final", "dead_lettered"), "2");
    EXPECT_EQ(r.stat("stats_final", "retried"), "4");
    EXPECT_EQ(r.stat("stats_final", "published"), "0");
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inventory.outbox WHERE attempts "
                      "= 3 AND dead_at IS NOT NULL AND published_at IS NULL "
                      "AND last_error LIKE '%312 NO_ROUTE%'"),
            2);
  EXPECT_EQ(db.scalar("SELECT unpublished FROM inventory.outbox_metrics"), 0);

  // the operator binds a queue and requeues the dead letters
  b.queue(q, x, "stock.#");
  EXPECT_EQ(db.scalar("SELECT inventory.requeue_dead_letters()"), 2);
  {
    Process r(rt::relay_bin(), relay_args(db, x, {"--once"}));
    run_ok(r);
    EXPECT_EQ(r.stat("stats_final", "published"), "2");
  }
  auto msgs = b.drain(q);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].message_id, first);
  EXPECT_EQ(msgs[0].routing_key, "stock.restocked");
  EXPECT_EQ(msgs[1].routing_key, "stock.adjusted");
  for (const auto &m : msgs) {
    EXPECT_EQ(m.content_type, "application/json");
    EXPECT_EQ(m.delivery_mode, 2);
  }
  // the body is the payload
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                      "payload = '" +
                      msgs[0].body + "'::jsonb AND event_id = '" + first +
                      "'"),
            1);
  auto m = db.exec("SELECT dead_lettered, unpublished FROM "
                   "inventory.outbox_metrics")[0];
  EXPECT_EQ(m[0].as<long long>(), 0);
  EXPECT_EQ(m[1].as<long long>(), 0);
  b.remove(q, x);
}

// Two relays drain one backlog of 3-event reservations at once: each event
// reaches the queue once, and the events of each reservation arrive in
// version order.
TEST(OutboxRelay, TwoRelaysOneBacklog) {
  RELAY_REQUIRE_SERVERS();
  TestDatabase db("two_relays");
  const std::string x = "t.two_relays", all = x + ".all";
  Broker b;
  b.exchange(x);
  b.queue(all, x, "#");
  const int n = 150;
  reserve_orders(db, n);
  db.exec("SELECT inventory.confirm('acme', 'ord-' || i) "
          "FROM generate_series(1, " +
          std::to_string(n) + ") i");
  db.exec("SELECT inventory.compensate('acme', 'ord-' || i, 'lost') "
          "FROM generate_series(1, " +
          std::to_string(n) + ") i");
  const long long total = db.scalar("SELECT count(*) FROM inventory.outbox");
  ASSERT_EQ(total, 3 * n + 1);
  {
    Process r1(rt::relay_bin(),
               relay_args(db, x, {"--batch-size", "7", "--name", "r1"}));
    Process r2(rt::relay_bin(),
               relay_args(db, x, {"--batch-size", "7", "--name", "r2"}));
    EXPECT_TRUE(rt::eventually(
      db, "SELECT unpublished = 0 FROM inventory.outbox_metrics", 60000));
    r1.signal(SIGTERM);
    r2.signal(SIGTERM);
    run_ok(r1, 20000);
    run_ok(r2, 20000);
    const long long p1 = std::stoll("0" + r1.stat("stats_final", "published"));
    const long long p2 = std::stoll("0" + r2.stat("stats_final", "published"));
    EXPECT_EQ(p1 + p2, total);
    std::cerr << "relay r1 published " << p1 << ", r2 " << p2 << "\n";
  }
  const auto msgs = b.drain(all);
  db.exec("CREATE TABLE arrived (seq integer, message_id uuid, body jsonb)");
  {
    auto cx = db.connect();
    cx->prepare("ins", "INSERT INTO arrived VALUES ($1, $2::uuid, $3::jsonb)");
    pqxx::work tx{*cx};
    for (std::size_t i = 0; i < msgs.size(); ++i)
      tx.exec_prepared("ins", static_cast<int>(i), msgs[i].message_id,
                       msgs[i].body);
    tx.commit();
  }
  EXPECT_EQ(static_cast<long long>(msgs.size()), total);
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT message_id) FROM arrived"),
            total);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM arrived a JOIN inventory.outbox o "
                      "ON o.event_id = a.message_id"),
            total);
  // per reservation, versions strictly increase in arrival order
  EXPECT_EQ(db.scalar("SELECT count(*) FROM (SELECT (body->>'version')::int "
                      "AS v, lag((body->>'version')::int) OVER (PARTITION BY "
                      "body->>'reservation_id' ORDER BY seq) AS pv FROM "
                      "arrived WHERE body ? 'reservation_id') s "
                      "WHERE v <= pv"),
            0);
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT body->>'reservation_id') FROM "
                      "arrived WHERE body ? 'reservation_id'"),
            n);
  b.remove(all, x);
}
