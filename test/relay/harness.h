// test/relay/harness.h: helpers of the relay and fulfiller fault tests.
//
// The tests run the real programs (inventory-relay, inventory-fulfiller)
// against a real PostgreSQL (PG* environment, as test/scripts/pg_env.sh
// exports it) and a real RabbitMQ (INVENTORY_AMQP_URL, as
// test/scripts/rabbitmq.sh exports it); without both they skip.  Every
// test makes its own database (relay_<name>) and its own exchange and
// queue names, so tests never see each other's messages.
#ifndef PG_INVENTORY_TEST_RELAY_HARNESS_H
#define PG_INVENTORY_TEST_RELAY_HARNESS_H

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "support.h"

/// Skips the current test without a PostgreSQL server or a broker.
#define RELAY_REQUIRE_SERVERS()                                               \
  do {                                                                        \
    if (!rt::have_servers())                                                  \
      GTEST_SKIP() << "PGHOST or INVENTORY_AMQP_URL is not set";              \
  } while (0)

namespace rt {

/// True when PGHOST and INVENTORY_AMQP_URL are both set.
bool have_servers();

/// The broker URL of the environment.
std::string amqp_url();

/// A database of one test, relay_<name>, with pg_inventory; dropped (WITH
/// FORCE) at the end.
class TestDatabase {
 public:
  explicit TestDatabase(const std::string &name);
  ~TestDatabase();
  TestDatabase(const TestDatabase &) = delete;
  TestDatabase &operator=(const TestDatabase &) = delete;
  /// dbname=relay_<name> (the rest from PG*).
  std::string conninfo() const { return "dbname=" + name_; }
  /// A new connection.
  std::unique_ptr<pqxx::connection> connect() const;
  /// Runs SQL in one transaction and returns the result.
  pqxx::result exec(const std::string &sql) const;
  /// A one-value query as a bigint.
  long long scalar(const std::string &sql) const;

 private:
  std::string name_;
};

/// One message taken from a queue.
struct Message {
  std::string message_id, routing_key, body, content_type;
  int delivery_mode = 0;
};

/// Test-side broker access (rabbitmq-c, channel 1, no confirms).
class Broker {
 public:
  Broker();
  /// Declares durable topic exchange X (idempotent).
  void exchange(const std::string &x);
  /// Declares durable queue Q bound to X with KEY, and purges it.
  void queue(const std::string &q, const std::string &x,
             const std::string &key);
  /// Publishes BODY to X with routing key KEY and MESSAGE_ID, persistent.
  void publish(const std::string &x, const std::string &key,
               const std::string &message_id, const std::string &body);
  /// Takes every message now in Q (basic.get with ack), in queue order.
  std::vector<Message> drain(const std::string &q);
  /// Deletes queue Q and exchange X (best effort; at the end of a test).
  void remove(const std::string &q, const std::string &x);

 private:
  std::unique_ptr<pgi::AmqpConnection> cx_;
};

/// A child process running one of the programs; its stderr goes to a log
/// file that the test prints when it fails.
class Process {
 public:
  /// Starts PROGRAM with ARGS; ENV entries are added to the environment.
  Process(const std::string &program, const std::vector<std::string> &args,
          const std::map<std::string, std::string> &env = {});
  ~Process();
  Process(const Process &) = delete;
  Process &operator=(const Process &) = delete;
  /// Waits up to TIMEOUT_MS for the exit; returns the wait status, or -1
  /// after killing it (SIGKILL) at the timeout.
  int wait(long long timeout_ms);
  /// Sends SIG.
  void signal(int sig);
  /// Everything it wrote to stderr so far.
  std::string log() const;
  /// The value of KEY in its last log line with event=EVENT, or "".
  std::string stat(const std::string &event, const std::string &key) const;
  /// True while it has not been waited for.
  bool running() const { return pid_ > 0; }

 private:
  int pid_ = -1;
  std::string log_path_;
};

/// Path of the built programs.
std::string relay_bin();
std::string fulfiller_bin();

/// Runs `source rabbitmq.sh && FUNCTION` (rmq_stop_app, rmq_start_app);
/// true on success.
bool rmq(const std::string &function);

/// Polls SQL (one boolean) on DB every 50 ms until true or TIMEOUT_MS;
/// returns the last value.
bool eventually(const TestDatabase &db, const std::string &sql,
                long long timeout_ms);

/// Exit status helpers for Process::wait().
bool exited_with(int status, int code);
bool killed_by(int status, int sig);

/// Waits for P to end (at most TIMEOUT_MS); expects exit code 0.
void run_ok(Process &p, long long timeout_ms = 60000);

/// Sends SIGTERM to P and expects it to exit 0 within 20 s.
void stop(Process &p);

/// Waits up to 30 s for P to end, which must be by SIGKILL (a test hook).
::testing::AssertionResult killed_by_hook(Process &p);

/// N reservations ord-1..N of one unit of SKU for tenant acme (restocked
/// first with enough units).
void reserve_orders(const TestDatabase &db, int n,
                    const std::string &sku = "sku-1");

/// Confirms the reservations ord-1..N of tenant acme.
void confirm_orders(const TestDatabase &db, int n);

/// Polls (up to TIMEOUT_MS) until inventory.outbox_metrics shows nothing
/// unpublished; true when it does.
bool drained(const TestDatabase &db, long long timeout_ms);

/// The world of one test NAME: database relay_<name>, exchange t.<name>
/// (declared on construction), the queue names t.<name>.all and
/// t.<name>.fulfillment, and the programs run against them.  At the end the
/// queues it declared (all, those passed to bind(), fq once a fulfiller
/// ran) and the exchange are deleted, best effort.
class TestBed {
 public:
  /// Declares the exchange, and with ALL_QUEUE queue `all` bound with '#'.
  explicit TestBed(const std::string &name, bool all_queue = true);
  ~TestBed();
  TestBed(const TestBed &) = delete;
  TestBed &operator=(const TestBed &) = delete;

  /// The test-side broker connection (made again after disconnect()).
  Broker &broker();
  /// Closes the test-side broker connection (before the broker stops).
  void disconnect() { broker_.reset(); }
  /// Declares queue Q bound with KEY (purged), deleted at the end.
  void bind(const std::string &q, const std::string &key);

  /// Arguments of a relay on db publishing to x, then EXTRA.
  std::vector<std::string>
  relay_args(std::vector<std::string> extra = {}) const;
  /// Arguments of a fulfiller on db consuming fq of x, exiting after
  /// IDLE_MS without a message.
  std::vector<std::string> fulfiller_args(long long idle_ms) const;
  /// Starts a relay (relay_args(EXTRA)) with ENV added.
  std::unique_ptr<Process>
  relay(std::vector<std::string> extra = {},
        const std::map<std::string, std::string> &env = {}) const;
  /// Starts a fulfiller (fulfiller_args(IDLE_MS)) with ENV added.
  std::unique_ptr<Process>
  fulfiller(long long idle_ms,
            const std::map<std::string, std::string> &env = {}) const;
  /// Runs a relay with --once and EXTRA to its end (exit 0 expected) and
  /// returns it, for its final stats.
  std::unique_ptr<Process>
  relay_once(std::vector<std::string> extra = {}) const;
  /// Runs a fulfiller to its end (exit 0 expected, IDLE_MS as in
  /// fulfiller_args) and returns it, for its final stats.
  std::unique_ptr<Process> fulfil(long long idle_ms) const;
  /// The fulfiller's first run: creates schema fulfillment and queue fq;
  /// the warehouse ships sku-1 of tenant acme.
  void prepare_fulfiller() const;

  TestDatabase db;
  const std::string x, all, fq;

 private:
  std::unique_ptr<Broker> broker_;
  std::vector<std::string> queues_;
  mutable bool fulfiller_ran_ = false;
};

} // namespace rt

#endif
