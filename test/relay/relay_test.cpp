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
//   UnroutableDeadLetters     no binding and no alternate exchange
//                             (--unrouted-queue none): returned, retried,
//                             dead-lettered at max_attempts, requeued, then
//                             delivered
// and, in the files beside this one: startup_test.cpp (arguments, exit
// codes, the fulfiller's setup), tls_test.cpp (amqps://), topology_test.cpp
// (unrouted events, the README's commands).
//   TwoRelaysOneBacklog       no event published twice, per-reservation
//                             order kept
//   LostLeasesCountedNeverFatal  a batch slower than its lease: the other
//                             relay's leases are not marked, counted as
//                             lease_lost, never an error
//
// Each test has its own database (relay_<name>), exchange and queues.
#include <atomic>
#include <csignal>
#include <set>
#include <thread>

#include "support/relay/test_bed.h"

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

long long count_type(const std::vector<Message> &msgs,
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
  PGI_REQUIRE(broker);
  TestBed t("killed_after_confirm");
  t.prepare_fulfiller();
  reserve_orders(t.db, 5);
  t.relay_once();
  confirm_orders(t.db, 5);
  ASSERT_TRUE(killed_by_hook(
    *t.relay({"--once", "--lease", "1s"},
             {{"INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM", "1"}})));
  // confirmed by the broker, but not marked: still leased, unpublished
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "event_type = 'reservation.confirmed' AND "
                        "published_at IS NULL AND claimed_until IS NOT NULL"),
            5);
  ASSERT_TRUE(poll_sql(t.db,
                       "SELECT bool_and(claimed_until <= now()) FROM "
                       "inventory.outbox WHERE published_at IS NULL",
                       10s));
  {
    auto r = t.relay_once();
    EXPECT_EQ(r->stat("stats_final", "published"), "5");
  }
  EXPECT_EQ(t.db.scalar("SELECT unpublished FROM inventory.outbox_metrics"),
            0);

  // the broker has every confirmed event twice
  const auto msgs = t.broker().drain(t.all);
  EXPECT_EQ(count_type(msgs, "reservation.confirmed"), 10);
  std::map<std::string, int> seen;
  for (const auto &m : msgs)
    if (m.routing_key == "reservation.confirmed") ++seen[m.message_id];
  EXPECT_EQ(seen.size(), 5u);
  for (const auto &s : seen) EXPECT_EQ(s.second, 2) << s.first;

  // ... and the consumer's effect happens once per event
  auto f = t.fulfil(800);
  EXPECT_EQ(f->stat("stats_final", "consumed"), "10");
  EXPECT_EQ(f->stat("stats_final", "deduplicated"), "5");
  EXPECT_EQ(f->stat("stats_final", "fulfilled"), "5");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.request"), 5);
  EXPECT_EQ(t.db.scalar("SELECT count(DISTINCT request_key) "
                        "FROM fulfillment.request"),
            5);
}

// The fulfiller dies (SIGKILL, test hook) after committing its first effect
// and before acking it: the broker redelivers, the inbox row makes the
// redelivery a no-op.
TEST(OutboxRelay, FulfillerKilledAfterCommit) {
  PGI_REQUIRE(broker);
  TestBed t("fulfiller_killed");
  t.prepare_fulfiller();
  reserve_orders(t.db, 5);
  confirm_orders(t.db, 5);
  t.relay_once();
  ASSERT_TRUE(killed_by_hook(*t.fulfiller(
    5000, {{"INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT", "1"}})));
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.request"), 1);
  auto f = t.fulfil(800);
  EXPECT_EQ(f->stat("stats_final", "deduplicated"), "1");
  EXPECT_EQ(f->stat("stats_final", "fulfilled"), "4");
  EXPECT_NE(f->stat("stats_final", "redelivered"), "0");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.request"), 5);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.inbox"), 5);
}

// One event delivered N times (published N times straight to the broker):
// one effect, N-1 deduplicated.  An event the warehouse cannot ship is
// compensated (--compensate-unknown-sku) once, however often it comes.
TEST(OutboxRelay, SameEventManyTimes) {
  PGI_REQUIRE(broker);
  TestBed t("same_event", false);
  t.prepare_fulfiller();
  t.db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10), "
            "inventory.restock('acme', 'r2', 'sku-2', 10)");
  t.db.exec("SELECT inventory.reserve('acme', 'ok', 'sku-1', 2), "
            "inventory.reserve('acme', 'bad', 'sku-2', 3)");
  t.db.exec("SELECT inventory.confirm('acme', 'ok'), "
            "inventory.confirm('acme', 'bad')");
  auto ev = t.db.exec("SELECT event_id::text, payload::text, "
                      "payload->>'request_key' FROM inventory.outbox WHERE "
                      "event_type = 'reservation.confirmed' ORDER BY 3 DESC");
  ASSERT_EQ(ev.size(), 2u);
  const int n = 10;
  for (int i = 0; i < n; ++i)
    for (const auto &row : ev)
      t.broker().publish(t.x, "reservation.confirmed",
                         row[0].as<std::string>(), row[1].as<std::string>());
  auto f = t.fulfil(800, {"--compensate-unknown-sku"});
  EXPECT_EQ(f->stat("stats_final", "consumed"), std::to_string(2 * n));
  EXPECT_EQ(f->stat("stats_final", "deduplicated"), std::to_string(2 * n - 2));
  EXPECT_EQ(f->stat("stats_final", "fulfilled"), "1");
  EXPECT_EQ(f->stat("stats_final", "compensated"), "1");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.request "
                        "WHERE request_key = 'ok'"),
            1);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.request"), 1);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.failure WHERE "
                        "request_key = 'bad' AND compensated_status = "
                        "'compensated' AND reason = 'warehouse cannot ship "
                        "sku sku-2'"),
            1);
  // the compensation returned the 3 units once
  EXPECT_EQ(t.db.scalar("SELECT available * 1000 + consumed FROM "
                        "inventory.stock WHERE sku = 'sku-2'"),
            10 * 1000 + 0);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.reservation WHERE "
                        "request_key = 'bad' AND state = 'compensated'"),
            1);
}

// RabbitMQ's application is stopped while reservations keep coming, then
// started again: the relay releases what it held (no attempt counted, no
// dead letter), reconnects with backoff, and every event arrives.
TEST(OutboxRelay, BrokerOutageMidStream) {
  PGI_REQUIRE(broker);
  TestBed t("broker_outage");
  t.disconnect(); // the broker goes away below
  t.db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 100000)");
  auto r = t.relay({"--batch-size", "10"});
  std::atomic<bool> producing{true};
  std::atomic<int> made{0};
  std::thread producer([&] {
    auto cx = t.db.connect();
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
  EXPECT_TRUE(poll_sql(
    t.db,
    "SELECT count(*) >= 20 FROM inventory.outbox WHERE published_at IS "
    "NOT NULL",
    10s));
  if (!rmq("rmq_stop_app")) {
    stop_producer();
    FAIL() << "rmq_stop_app failed";
  }
  // while the broker is away events pile up, without burning attempts
  const bool piled = poll_sql(
    t.db, "SELECT unpublished >= 50 FROM inventory.outbox_metrics", 15s);
  const long long burnt =
    t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE attempts > 0 OR "
                "dead_at IS NOT NULL");
  const bool restarted = rmq("rmq_start_app");
  stop_producer();
  ASSERT_TRUE(restarted) << "rmq_start_app failed";
  EXPECT_TRUE(piled);
  EXPECT_EQ(burnt, 0);
  EXPECT_TRUE(drained(t.db, 40s));
  stop(*r);
  EXPECT_NE(r->log().find("event=broker_lost"), std::string::npos);
  EXPECT_NE(r->stat("stats_final", "reconnects"), "0");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "attempts > 0 OR dead_at IS NOT NULL"),
            0);
  // nothing lost: every event of the outbox is in the queue
  std::set<std::string> got;
  for (const auto &m : t.broker().drain(t.all)) got.insert(m.message_id);
  auto ids = t.db.exec("SELECT event_id::text FROM inventory.outbox");
  EXPECT_EQ(static_cast<long long>(ids.size()), made + 1);
  long long missing = 0;
  for (const auto &row : ids)
    missing += got.count(row[0].as<std::string>()) == 0;
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(got.size(), ids.size());
}

// Without the alternate exchange (--unrouted-queue none), an event nobody
// is bound for comes back (basic.return, then an ack): a failure.  With
// --max-attempts 3 it is dead-lettered at the third failure, visible in
// outbox_metrics; after a queue is bound, the operator's requeue_dead_letters
// makes it go out.
TEST(OutboxRelay, UnroutableDeadLetters) {
  PGI_REQUIRE(broker);
  TestBed t("unroutable", false, false);
  const std::string q = t.x + ".stock";
  t.db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10)");
  t.db.exec("SELECT inventory.adjust('acme', 'a1', 'sku-1', -2, 'loss', "
            "'broken')");
  const std::string first =
    t.db
      .exec("SELECT event_id::text FROM "
            "inventory.outbox ORDER BY id LIMIT 1")[0][0]
      .as<std::string>();
  {
    auto r = t.relay(
      {"--max-attempts", "3", "--backoff", "20ms", "--max-backoff", "100ms"});
    EXPECT_TRUE(poll_sql(
      t.db, "SELECT dead_lettered = 2 FROM inventory.outbox_metrics", 15s));
    stop(*r);
    EXPECT_EQ(r->stat("stats_final", "dead_lettered"), "2");
    EXPECT_EQ(r->stat("stats_final", "retried"), "4");
    EXPECT_EQ(r->stat("stats_final", "published"), "0");
  }
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE attempts "
                        "= 3 AND dead_at IS NOT NULL AND published_at IS NULL "
                        "AND last_error LIKE '%312 NO_ROUTE%'"),
            2);
  EXPECT_EQ(t.db.scalar("SELECT unpublished FROM inventory.outbox_metrics"),
            0);

  // the operator binds a queue and requeues the dead letters
  t.bind(q, "stock.#");
  EXPECT_EQ(t.db.scalar("SELECT inventory.requeue_dead_letters()"), 2);
  {
    auto r = t.relay_once();
    EXPECT_EQ(r->stat("stats_final", "published"), "2");
  }
  auto msgs = t.broker().drain(q);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].message_id, first);
  EXPECT_EQ(msgs[0].routing_key, "stock.restocked");
  EXPECT_EQ(msgs[1].routing_key, "stock.adjusted");
  for (const auto &m : msgs) {
    EXPECT_EQ(m.content_type, "application/json");
    EXPECT_EQ(m.delivery_mode, 2);
  }
  // the body is the payload
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "payload = '" +
                        msgs[0].body + "'::jsonb AND event_id = '" + first +
                        "'"),
            1);
  auto m = t.db.exec("SELECT dead_lettered, unpublished FROM "
                     "inventory.outbox_metrics")[0];
  EXPECT_EQ(m[0].as<long long>(), 0);
  EXPECT_EQ(m[1].as<long long>(), 0);
}

// Two relays drain one backlog of 3-event reservations at once: each event
// reaches the queue once, and the events of each reservation arrive in
// version order.
TEST(OutboxRelay, TwoRelaysOneBacklog) {
  PGI_REQUIRE(broker);
  TestBed t("two_relays");
  const int n = 150;
  reserve_orders(t.db, n);
  confirm_orders(t.db, n);
  t.db.exec("SELECT inventory.compensate('acme', 'ord-' || i, 'lost') "
            "FROM generate_series(1, " +
            std::to_string(n) + ") i");
  const long long total = t.db.scalar("SELECT count(*) FROM inventory.outbox");
  ASSERT_EQ(total, 3 * n + 1);
  {
    auto r1 = t.relay({"--batch-size", "7", "--name", "r1"});
    auto r2 = t.relay({"--batch-size", "7", "--name", "r2"});
    EXPECT_TRUE(drained(t.db, 60s));
    r1->signal(SIGTERM);
    r2->signal(SIGTERM);
    run_ok(*r1, 20s);
    run_ok(*r2, 20s);
    const long long p1 =
      std::stoll("0" + r1->stat("stats_final", "published"));
    const long long p2 =
      std::stoll("0" + r2->stat("stats_final", "published"));
    EXPECT_EQ(p1 + p2, total);
    std::cerr << "relay r1 published " << p1 << ", r2 " << p2 << "\n";
  }
  const auto msgs = t.broker().drain(t.all);
  t.db.exec("CREATE TABLE arrived (seq integer, message_id uuid, body jsonb)");
  {
    auto cx = t.db.connect();
    cx->prepare("ins", "INSERT INTO arrived VALUES ($1, $2::uuid, $3::jsonb)");
    pqxx::work tx{*cx};
    for (std::size_t i = 0; i < msgs.size(); ++i)
      tx.exec_prepared("ins", static_cast<int>(i), msgs[i].message_id,
                       msgs[i].body);
    tx.commit();
  }
  EXPECT_EQ(static_cast<long long>(msgs.size()), total);
  EXPECT_EQ(t.db.scalar("SELECT count(DISTINCT message_id) FROM arrived"),
            total);
  EXPECT_EQ(
    t.db.scalar("SELECT count(*) FROM arrived a JOIN inventory.outbox o "
                "ON o.event_id = a.message_id"),
    total);
  // per reservation, versions strictly increase in arrival order
  EXPECT_EQ(
    t.db.scalar("SELECT count(*) FROM (SELECT (body->>'version')::int "
                "AS v, lag((body->>'version')::int) OVER (PARTITION BY "
                "body->>'reservation_id' ORDER BY seq) AS pv FROM "
                "arrived WHERE body ? 'reservation_id') s "
                "WHERE v <= pv"),
    0);
  EXPECT_EQ(t.db.scalar("SELECT count(DISTINCT body->>'reservation_id') FROM "
                        "arrived WHERE body ? 'reservation_id'"),
            n);
}

// A batch slower than its lease (test hook: relay A waits between the
// broker's confirms and its marks): relay B claims the events once A's
// lease ran out and publishes them too.  A's marks then find leases that
// are B's: relay_mark_published marks none of them, and A counts them as
// lost leases and goes on (exit 0), never an error (the completion calls'
// result is never fatal).
TEST(OutboxRelay, LostLeasesCountedNeverFatal) {
  PGI_REQUIRE(broker);
  TestBed t("lease_lost");
  reserve_orders(t.db, 4); // 5 events
  auto a = t.relay({"--once", "--name", "relay-a", "--lease", "300ms"},
                   {{"INVENTORY_RELAY_TEST_PAUSE_BEFORE_MARK_MS", "60000"}});
  ASSERT_TRUE(poll_until(
    [&] { return !log_lines(*a, "test_pause_before_mark").empty(); }, 10s,
    20ms));
  ASSERT_TRUE(poll_sql(t.db,
                       "SELECT bool_and(claimed_until <= now()) FROM "
                       "inventory.outbox WHERE published_at IS NULL",
                       10s));
  auto b = t.relay_once({"--name", "relay-b"});
  EXPECT_EQ(b->stat("stats_final", "published"), "5");
  a->signal(SIGTERM); // ends the pause; A writes its marks, then stops
  run_ok(*a, 20s);
  EXPECT_EQ(a->stat("stats_final", "lease_lost"), "5");
  EXPECT_EQ(a->stat("stats_final", "published"), "0");
  EXPECT_EQ(a->stat("stats_final", "mark_errors"), "0");
  EXPECT_TRUE(log_lines(*a, "fatal").empty());
  const auto lost = log_lines(*a, "lease_lost");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_NE(lost.front().find("events=5"), std::string::npos) << lost.front();
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "published_at IS NOT NULL AND claimed_by = 'relay-b'"),
            5);
  EXPECT_EQ(t.broker().depth(t.all), 10); // each event twice: at least once
}
