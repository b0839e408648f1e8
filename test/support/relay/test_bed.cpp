// test/support/relay/test_bed.cpp: the world of one relay or fulfiller
// test (test_bed.h).
#include "support/relay/test_bed.h"

namespace pgi::test {

std::string relay_bin() {
  return INVENTORY_RELAY_BIN;
}
std::string fulfiller_bin() {
  return INVENTORY_FULFILLER_BIN;
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

TestBed::TestBed(const std::string &name, bool all_queue)
    : db{"relay_" + name}, x{"t." + name}, all{x + ".all"}, fq{
                                                              x +
                                                              ".fulfillment"} {
  broker().exchange(x);
  if (all_queue) bind(all, "#");
}

TestBed::~TestBed() {
  try {
    if (fulfiller_ran_) queues_.push_back(fq);
    for (const auto &q : queues_) broker().remove(q, x);
  } catch (const std::exception &) {
    // best effort: the broker may be down after a failed test
  }
}

Broker &TestBed::broker() {
  if (!broker_) broker_ = std::make_unique<Broker>();
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
                             environment().amqp_url,
                             "--exchange",
                             x,
                             "--poll-interval-ms",
                             "20",
                             "--stats-interval",
                             "1s"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> TestBed::fulfiller_args(long long idle_ms) const {
  return {"--db",           db.conninfo(),
          "--amqp-url",     environment().amqp_url,
          "--exchange",     x,
          "--queue",        fq,
          "--once-idle-ms", std::to_string(idle_ms)};
}

std::unique_ptr<Process>
TestBed::relay(std::vector<std::string> extra,
               const std::map<std::string, std::string> &env) const {
  return std::make_unique<Process>(relay_bin(), relay_args(std::move(extra)),
                                   env);
}

std::unique_ptr<Process>
TestBed::fulfiller(long long idle_ms,
                   const std::map<std::string, std::string> &env) const {
  fulfiller_ran_ = true; // it declares fq
  return std::make_unique<Process>(fulfiller_bin(), fulfiller_args(idle_ms),
                                   env);
}

std::unique_ptr<Process>
TestBed::relay_once(std::vector<std::string> extra) const {
  extra.insert(extra.begin(), "--once");
  auto r = relay(std::move(extra));
  run_ok(*r);
  return r;
}

std::unique_ptr<Process> TestBed::fulfil(long long idle_ms) const {
  auto f = fulfiller(idle_ms);
  run_ok(*f);
  return f;
}

void TestBed::prepare_fulfiller() const {
  fulfil(1);
  db.exec("INSERT INTO fulfillment.warehouse_sku VALUES ('acme', 'sku-1')");
}

} // namespace pgi::test
