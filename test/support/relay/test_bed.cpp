// test/support/relay/test_bed.cpp: the world of one relay or fulfiller
// test (test_bed.h).
#include "support/relay/test_bed.h"

#include <fstream>
#include <sstream>

namespace pgi::test {

std::string relay_bin() {
  return INVENTORY_RELAY_BIN;
}
std::string fulfiller_bin() {
  return INVENTORY_FULFILLER_BIN;
}
std::string fulfiller_schema_file() {
  return FULFILLER_SCHEMA_FILE;
}

void reserve_orders(const TestDatabase &db, int n, const std::string &sku) {
  db.exec("SELECT inventory.restock('acme', 'rcpt-" + sku + "', '" + sku +
          "', 1000)");
  db.exec("SELECT inventory.reserve('acme', 'ord-' || i, '" + sku +
          "', 1) FROM generate_series(1, " + std::to_string(n) + ") i");
}

void confirm_orders(const TestDatabase &db, int n) {
  db.exec("SELECT inventory.confirm('acme', 'ord-' || i) "
          "FROM generate_series(1, " +
          std::to_string(n) + ") i");
}

bool drained(const TestDatabase &db, std::chrono::milliseconds timeout) {
  return poll_sql(db, "SELECT unpublished = 0 FROM inventory.outbox_metrics",
                  timeout);
}

TestBed::TestBed(const std::string &name, bool all_queue, bool with_unrouted,
                 const std::string &url)
    : db{"relay_" + name},
      broker_url{url.empty() ? environment().amqp_url : url}, x{"t." + name},
      all{x + ".all"}, fq{x + ".fulfillment"}, unrouted{with_unrouted
                                                          ? x + ".unrouted"
                                                          : ""} {
  broker().exchange(x, unrouted);
  if (!unrouted.empty()) broker().purge(unrouted); // a leftover's messages
  if (all_queue) bind(all, "#");
}

TestBed::~TestBed() {
  try {
    if (fulfiller_ran_) queues_.push_back(fq);
    for (const auto &q : queues_) broker().delete_queue(q);
    broker().delete_exchange(x);
    if (!unrouted.empty()) {
      broker().delete_queue(unrouted);
      broker().delete_exchange(unrouted);
    }
  } catch (const std::exception &) {
    // best effort: the broker may be down after a failed test
  }
}

Broker &TestBed::broker() {
  if (!broker_) broker_ = std::make_unique<Broker>(broker_url);
  return *broker_;
}

void TestBed::bind(const std::string &q, const std::string &key) {
  broker().queue(q, x, key);
  queues_.push_back(q);
}

std::vector<std::string>
TestBed::relay_args(std::vector<std::string> extra) const {
  std::vector<std::string> a{"--db",
                             db.conninfo(),
                             "--amqp-url",
                             broker_url,
                             "--exchange",
                             x,
                             "--poll-interval-ms",
                             "20",
                             "--stats-interval",
                             "1s",
                             "--unrouted-queue",
                             unrouted.empty() ? "none" : unrouted};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string>
TestBed::fulfiller_args(long long idle_ms,
                        std::vector<std::string> extra) const {
  std::vector<std::string> a{"--db",
                             db.conninfo(),
                             "--amqp-url",
                             broker_url,
                             "--exchange",
                             x,
                             "--unrouted-queue",
                             unrouted.empty() ? "none" : unrouted,
                             "--queue",
                             fq,
                             "--once-idle-ms",
                             std::to_string(idle_ms)};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::unique_ptr<Process>
TestBed::relay(std::vector<std::string> extra,
               const std::map<std::string, std::string> &env) const {
  return std::make_unique<Process>(relay_bin(), relay_args(std::move(extra)),
                                   env);
}

std::unique_ptr<Process>
TestBed::fulfiller(long long idle_ms,
                   const std::map<std::string, std::string> &env,
                   std::vector<std::string> extra) const {
  fulfiller_ran_ = true; // it declares fq
  return std::make_unique<Process>(
    fulfiller_bin(), fulfiller_args(idle_ms, std::move(extra)), env);
}

std::unique_ptr<Process>
TestBed::relay_once(std::vector<std::string> extra) const {
  extra.insert(extra.begin(), "--once");
  auto r = relay(std::move(extra));
  run_ok(*r);
  return r;
}

std::unique_ptr<Process>
TestBed::fulfil(long long idle_ms, std::vector<std::string> extra) const {
  auto f = fulfiller(idle_ms, {}, std::move(extra));
  run_ok(*f);
  return f;
}

void TestBed::prepare_fulfiller() {
  std::ifstream in(fulfiller_schema_file());
  std::stringstream schema;
  schema << in.rdbuf();
  db.exec(schema.str());
  db.exec("INSERT INTO fulfillment.warehouse_sku VALUES ('acme', 'sku-1')");
  bind(fq, "reservation.confirmed");
}

} // namespace pgi::test
