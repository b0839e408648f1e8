// test/support/relay/test_bed.h: the world of one relay or fulfiller test,
// and the orders its tests make.
//
// The tests run the real programs (inventory-relay, inventory-fulfiller)
// against the environment's PostgreSQL and RabbitMQ (PGI_REQUIRE(broker)).
// Every test makes its own database (relay_<name>) and its own exchange
// and queue names, so tests never see each other's messages.
#ifndef PG_INVENTORY_TEST_SUPPORT_RELAY_TEST_BED_H
#define PG_INVENTORY_TEST_SUPPORT_RELAY_TEST_BED_H

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/database.h"
#include "support/environment.h"
#include "support/relay/broker.h"
#include "support/relay/process.h"

namespace pgi::test {

/// The path of the built inventory-relay.
std::string relay_bin();

/// The path of the built inventory-fulfiller.
std::string fulfiller_bin();

/// N reservations ord-1..N of one unit of SKU for tenant acme (restocked
/// first with enough units).
void reserve_orders(const TestDatabase &db, int n,
                    const std::string &sku = "sku-1");

/// Confirms the reservations ord-1..N of tenant acme.
void confirm_orders(const TestDatabase &db, int n);

/// Polls (up to TIMEOUT) until inventory.outbox_metrics shows nothing
/// unpublished; true when it does.
bool drained(const TestDatabase &db, std::chrono::milliseconds timeout);

/// The path of src/fulfiller/schema.sql.
std::string fulfiller_schema_file();

/// The world of one test NAME: database relay_<name>, exchange t.<name>
/// declared as the programs declare it (with UNROUTED: alternate exchange
/// and queue t.<name>.unrouted; else a plain topic exchange, and the
/// programs run with --unrouted-queue none), the queue names t.<name>.all
/// and t.<name>.fulfillment, and the programs run against them.  At the end
/// the queues it declared (all, those passed to bind(), fq once a fulfiller
/// ran, unrouted) and the exchanges are deleted, best effort.
class TestBed {
 public:
  /// Declares the exchange, and with ALL_QUEUE queue `all` bound with '#',
  /// on the broker of BROKER_URL (default: the environment's).
  explicit TestBed(const std::string &name, bool all_queue = true,
                   bool unrouted = true, const std::string &broker_url = "");
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
  /// IDLE_MS without a message, then EXTRA.
  std::vector<std::string>
  fulfiller_args(long long idle_ms, std::vector<std::string> extra = {}) const;
  /// Starts a relay (relay_args(EXTRA)) with ENV added.
  std::unique_ptr<Process>
  relay(std::vector<std::string> extra = {},
        const std::map<std::string, std::string> &env = {}) const;
  /// Starts a fulfiller (fulfiller_args(IDLE_MS, EXTRA)) with ENV added.
  std::unique_ptr<Process>
  fulfiller(long long idle_ms,
            const std::map<std::string, std::string> &env = {},
            std::vector<std::string> extra = {}) const;
  /// Runs a relay with --once and EXTRA to its end (exit 0 expected) and
  /// returns it, for its final stats.
  std::unique_ptr<Process>
  relay_once(std::vector<std::string> extra = {}) const;
  /// Runs a fulfiller (with EXTRA) to its end (exit 0 expected, IDLE_MS as
  /// in fulfiller_args) and returns it, for its final stats.
  std::unique_ptr<Process> fulfil(long long idle_ms,
                                  std::vector<std::string> extra = {}) const;
  /// The fulfiller's setup, as README section 7 has it: schema fulfillment
  /// (src/fulfiller/schema.sql), the warehouse ships sku-1 of tenant acme;
  /// and queue fq bound as the fulfiller binds it.
  void prepare_fulfiller();

  TestDatabase db;
  /// The broker's plain amqp:// URL, for the test side and the programs.
  const std::string broker_url;
  const std::string x, all, fq;
  /// The unrouted queue (and alternate exchange); "" without one.
  const std::string unrouted;

 private:
  std::unique_ptr<Broker> broker_;
  std::vector<std::string> queues_;
  mutable bool fulfiller_ran_ = false;
};

} // namespace pgi::test

#endif
