// test/relay/metrics_test.cpp: the programs' /metrics and /healthz
// (--metrics-address), scraped while events flow through the real
// RabbitMQ and PostgreSQL.
//
//   Metrics.CountersMoveAsEventsFlow  N events: the relay's published
//                                     counter says N, the publish lag and
//                                     batch histograms count them, the
//                                     backlog gauge drains to 0, the
//                                     age of the oldest published event
//                                     grows, an event changed by hand
//                                     below the low-water mark is counted;
//                                     the
//                                     fulfiller counts consumed,
//                                     fulfilled, deduplicated and held
//   Metrics.FailuresByReason          returned events: failed{reason=
//                                     "returned"} and dead-lettered move,
//                                     the outbox's dead-letter gauge too;
//                                     compensations on the fulfiller's side
//   Metrics.OffByDefault              no --metrics-address: no listener
//   Metrics.AddressChecked            a bad address is a usage error (64),
//                                     a port in use a configuration one (78)
//   Health.BrokerDownAndBack          /healthz 200 on both programs, 503
//                                     naming the broker while RabbitMQ is
//                                     stopped, 200 again once it is back
//   Health.DatabaseNotConnected       a database that does not answer: 503
//                                     naming the database
#include <arpa/inet.h>
#include <csignal>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/relay/scrape.h"
#include "support/relay/test_bed.h"

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

const std::vector<std::string> metrics_on{"--metrics-address", "127.0.0.1:0"};

/// The value of SERIES on PORT, or -1 when it is missing.
double value(int port, const std::string &series) {
  return scrape(port, series).value_or(-1);
}

} // namespace

// Publish N events and scrape: the relay's published counter is N, the
// histograms counted them, the gauges show an empty backlog; the
// fulfiller's counters move with the messages it takes.
TEST(Metrics, CountersMoveAsEventsFlow) {
  PGI_REQUIRE(broker);
  TestBed t("metrics_flow");
  t.prepare_fulfiller();
  auto r = t.relay(metrics_on);
  auto f = t.fulfiller(0, {}, metrics_on);
  const int rp = metrics_port(*r), fp = metrics_port(*f);
  ASSERT_NE(rp, 0) << r->log();
  ASSERT_NE(fp, 0) << f->log();
  ASSERT_TRUE(health_becomes(rp, 200));
  ASSERT_TRUE(health_becomes(fp, 200));
  EXPECT_EQ(value(rp, "inventory_relay_events_published_total"), 0);

  // 1 stock.restocked, 10 reservation.reserved, 10 reservation.confirmed
  reserve_orders(t.db, 10);
  confirm_orders(t.db, 10);
  const long long n = t.db.scalar("SELECT count(*) FROM inventory.outbox");
  ASSERT_EQ(n, 21);
  EXPECT_TRUE(metric_becomes(rp, "inventory_relay_events_published_total", n));
  EXPECT_TRUE(drained(t.db, 10s));
  const HttpResponse m = http_get(rp, "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("# TYPE inventory_relay_events_published_total "
                        "counter"),
            std::string::npos);
  EXPECT_NE(m.body.find("# TYPE inventory_relay_publish_lag_seconds "
                        "histogram"),
            std::string::npos);
  EXPECT_EQ(metric(m.body, "inventory_relay_publish_lag_seconds_count"), n);
  EXPECT_GT(
    metric(m.body, "inventory_relay_publish_lag_seconds_sum").value_or(-1), 0);
  EXPECT_GE(metric(m.body, "inventory_relay_batch_duration_seconds_count")
              .value_or(-1),
            1);
  EXPECT_EQ(metric(m.body, "inventory_relay_events_failed_total{reason="
                           "\"nacked\"}"),
            0);
  EXPECT_EQ(metric(m.body, "inventory_relay_events_failed_total{reason="
                           "\"returned\"}"),
            0);
  EXPECT_EQ(metric(m.body, "inventory_relay_events_dead_lettered_total"), 0);
  // the gauges are read every --stats-interval (1 s here)
  EXPECT_TRUE(metric_becomes(rp, "inventory_relay_outbox_backlog_events", 0));
  EXPECT_TRUE(metric_becomes(
    rp, "inventory_relay_outbox_oldest_unpublished_age_seconds", 0));
  // every event is routed (queue `all` is bound with '#')
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_unrouted_queue_messages", 0));
  // the oldest published event's age (0.8) grows from the drain on
  EXPECT_TRUE(poll_until(
    [&] {
      return value(rp,
                   "inventory_relay_outbox_oldest_published_age_seconds") > 0;
    },
    10s, 100ms));
  // below the low-water mark (0.7): none; then the first event set back to
  // unpublished by hand, under the mark, where no relay claims it: counted
  // until it is published again (here: set back by hand)
  t.db.exec("SELECT inventory.advance_outbox_low_water(true)");
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_outbox_below_low_water_events", 0));
  t.db.exec("UPDATE inventory.outbox SET published_at = NULL, "
            "claimed_until = NULL WHERE id = (SELECT min(id) FROM "
            "inventory.outbox)");
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_outbox_below_low_water_events", 1));
  EXPECT_EQ(value(rp, "inventory_relay_outbox_backlog_events"), 1);
  t.db.exec("UPDATE inventory.outbox SET published_at = now() WHERE id = "
            "(SELECT min(id) FROM inventory.outbox)");
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_outbox_below_low_water_events", 0));

  // the fulfiller: 10 confirmations fulfilled
  EXPECT_TRUE(
    metric_becomes(fp, "inventory_fulfiller_events_fulfilled_total", 10));
  EXPECT_EQ(value(fp, "inventory_fulfiller_messages_consumed_total"), 10);
  EXPECT_EQ(value(fp, "inventory_fulfiller_events_deduplicated_total"), 0);
  // three of them delivered again: deduplicated
  auto again = t.db.exec("SELECT event_id::text, payload::text FROM "
                         "inventory.outbox WHERE event_type = "
                         "'reservation.confirmed' ORDER BY id LIMIT 3");
  for (const auto &row : again)
    t.broker().publish(t.x, "reservation.confirmed", row[0].as<std::string>(),
                       row[1].as<std::string>());
  EXPECT_TRUE(
    metric_becomes(fp, "inventory_fulfiller_events_deduplicated_total", 3));
  EXPECT_EQ(value(fp, "inventory_fulfiller_messages_consumed_total"), 13);
  // a SKU the warehouse does not ship: held
  t.db.exec("SELECT inventory.restock('acme', 'r-x', 'sku-x', 5)");
  t.db.exec("SELECT inventory.reserve('acme', 'ord-x', 'sku-x', 1)");
  t.db.exec("SELECT inventory.confirm('acme', 'ord-x')");
  EXPECT_TRUE(metric_becomes(fp, "inventory_fulfiller_events_held_total", 1));
  EXPECT_TRUE(metric_becomes(fp, "inventory_fulfiller_held_events", 1));
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_events_published_total", n + 3));
  EXPECT_EQ(value(fp, "inventory_fulfiller_compensations_total"), 0);
  EXPECT_GE(value(fp, "inventory_fulfiller_processing_duration_seconds_count"),
            14);
  stop(*r);
  stop(*f);
  // the counters agree with the stats lines
  EXPECT_EQ(r->stat("stats_final", "published"), std::to_string(n + 3));
  EXPECT_EQ(f->stat("stats_final", "deduplicated"), "3");
}

// Without the alternate exchange nothing is bound for stock events: each
// comes back (basic.return), counted as failed{reason="returned"}, and at
// --max-attempts 2 dead-lettered.  The fulfiller's compensations counter
// moves with --compensate-unknown-sku.
TEST(Metrics, FailuresByReason) {
  PGI_REQUIRE(broker);
  TestBed t("metrics_failed", false, false);
  t.prepare_fulfiller();
  t.db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10), "
            "inventory.restock('acme', 'r2', 'sku-2', 10)");
  auto r = t.relay({"--metrics-address", "127.0.0.1:0", "--max-attempts", "2",
                    "--backoff", "20ms", "--max-backoff", "50ms"});
  const int rp = metrics_port(*r);
  ASSERT_NE(rp, 0) << r->log();
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_events_dead_lettered_total", 2));
  EXPECT_EQ(value(rp, "inventory_relay_events_failed_total{reason="
                      "\"returned\"}"),
            4);
  EXPECT_EQ(value(rp, "inventory_relay_events_failed_total{reason="
                      "\"nacked\"}"),
            0);
  EXPECT_EQ(value(rp, "inventory_relay_events_published_total"), 0);
  EXPECT_TRUE(
    metric_becomes(rp, "inventory_relay_outbox_dead_lettered_events", 2));
  stop(*r);
  EXPECT_EQ(r->stat("stats_final", "dead_lettered"), "2");
  EXPECT_EQ(r->stat("stats_final", "returned"), "4");

  // a confirmation the warehouse cannot ship (sent by the test: through
  // this exchange its reservation.reserved would come back too), then
  // compensated
  t.db.exec("SELECT inventory.reserve('acme', 'bad', 'sku-2', 1)");
  t.db.exec("SELECT inventory.confirm('acme', 'bad')");
  auto ev = t.db.exec("SELECT event_id::text, payload::text FROM "
                      "inventory.outbox WHERE event_type = "
                      "'reservation.confirmed'");
  ASSERT_EQ(ev.size(), 1u);
  t.broker().publish(t.x, "reservation.confirmed", ev[0][0].as<std::string>(),
                     ev[0][1].as<std::string>());
  auto f = t.fulfiller(
    0, {}, {"--metrics-address", "127.0.0.1:0", "--compensate-unknown-sku"});
  const int fp = metrics_port(*f);
  ASSERT_NE(fp, 0) << f->log();
  EXPECT_TRUE(
    metric_becomes(fp, "inventory_fulfiller_compensations_total", 1));
  stop(*f);
  EXPECT_EQ(f->stat("stats_final", "compensated"), "1");
}

// Off by default: nothing listens, nothing is logged about it.
TEST(Metrics, OffByDefault) {
  PGI_REQUIRE(broker);
  TestBed t("metrics_off");
  auto r = t.relay_once();
  EXPECT_TRUE(log_lines(*r, "metrics_listening").empty());
  EXPECT_NE(r->log().find("event=stats_final"), std::string::npos);
}

// What cannot be an address is refused before anything connects (64); an
// address another program listens on ends the program at start (78).
TEST(Metrics, AddressChecked) {
  PGI_REQUIRE(broker);
  TestBed t("metrics_address");
  for (const std::string bad : {"9187", "127.0.0.1:", "127.0.0.1:70000",
                                "127.0.0.1:9187,9188", "localhost:80s"}) {
    auto r = t.relay({"--metrics-address", bad});
    EXPECT_TRUE(exits_with(*r, 64, "--metrics-address")) << bad;
  }
  auto f = std::make_unique<Process>(
    fulfiller_bin(), t.fulfiller_args(0),
    std::map<std::string, std::string>{
      {"INVENTORY_FULFILLER_METRICS_ADDRESS", "nowhere"}});
  EXPECT_TRUE(exits_with(*f, 64, "--metrics-address"));
  // a port in use
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<struct sockaddr *>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<struct sockaddr *>(&a), &len);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  auto r = t.relay({"--metrics-address", taken});
  EXPECT_TRUE(exits_with(*r, 78, "cannot serve metrics on " + taken));
  close(fd);
}

// /healthz answers 200 while both peers are connected, 503 saying which is
// not while RabbitMQ is stopped (noticed by the idle relay too), and 200
// again after the broker is back; the reconnects are counted.
TEST(Health, BrokerDownAndBack) {
  PGI_REQUIRE(broker);
  TestBed t("health_broker");
  t.prepare_fulfiller();
  t.disconnect(); // the broker goes away below
  auto r = t.relay(metrics_on);
  auto f = t.fulfiller(0, {}, metrics_on);
  const int rp = metrics_port(*r), fp = metrics_port(*f);
  ASSERT_NE(rp, 0) << r->log();
  ASSERT_NE(fp, 0) << f->log();
  ASSERT_TRUE(health_becomes(rp, 200));
  ASSERT_TRUE(health_becomes(fp, 200));
  EXPECT_EQ(http_get(rp, "/healthz").body,
            "ok: database connected, broker connected\n");

  struct BrokerBack { // the broker comes back whatever happens below
    bool up = true;
    ~BrokerBack() {
      if (!up) rmq("rmq_start_app");
    }
  } broker;
  ASSERT_TRUE(rmq("rmq_stop_app"));
  broker.up = false;
  EXPECT_TRUE(health_becomes(rp, 503));
  EXPECT_TRUE(health_becomes(fp, 503));
  EXPECT_EQ(http_get(rp, "/healthz").body,
            "unavailable: database connected, broker not connected\n");
  EXPECT_EQ(http_get(fp, "/healthz").body,
            "unavailable: database connected, broker not connected\n");
  // /metrics still answers while the broker is away
  EXPECT_EQ(http_get(rp, "/metrics").status, 200);

  ASSERT_TRUE(rmq("rmq_start_app"));
  broker.up = true;
  EXPECT_TRUE(health_becomes(rp, 200, 40s));
  EXPECT_TRUE(health_becomes(fp, 200, 40s));
  EXPECT_GE(value(rp, "inventory_relay_reconnects_total{peer=\"broker\"}"), 1);
  EXPECT_GE(value(fp, "inventory_fulfiller_reconnects_total{peer=\"broker\"}"),
            1);
  // and it works again
  reserve_orders(t.db, 2);
  confirm_orders(t.db, 2);
  EXPECT_TRUE(
    metric_becomes(fp, "inventory_fulfiller_events_fulfilled_total", 2, 40s));
  stop(*r);
  stop(*f);
}

// A database that does not answer (nothing listens on the port): the
// relay keeps retrying, and /healthz says 503 naming the database.
TEST(Health, DatabaseNotConnected) {
  PGI_REQUIRE(broker);
  TestBed t("health_db");
  auto args = t.relay_args(metrics_on);
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--db") args[i + 1] = "host=127.0.0.1 port=1 dbname=none";
  Process r(relay_bin(), args);
  const int rp = metrics_port(r);
  ASSERT_NE(rp, 0) << r.log();
  ASSERT_TRUE(poll_until(
    [&] { return !log_lines(r, "db_unavailable").empty(); }, 10s, 20ms));
  const HttpResponse h = http_get(rp, "/healthz");
  EXPECT_EQ(h.status, 503);
  EXPECT_NE(h.body.find("database not connected"), std::string::npos)
    << h.body;
  stop(r);
}
