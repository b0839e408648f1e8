// test/relay/topology_test.cpp: events nobody is bound for never block
// (fault 2), and the README's commands deliver.
//
//   Topology.UnroutedKeptNeverBlocking  reservation.reserved has no queue:
//                                      kept in the unrouted queue, published
//                                      at the first attempt, and the
//                                      reservation.confirmed behind it
//                                      reaches the fulfiller
//   Topology.UnroutedQueueIsBounded    x-max-length: the newest are kept,
//                                      the relay never stops
//   Topology.ReturnSaysWhatToBind      with the unrouted queue gone behind
//                                      the relay's back, a basic.return is
//                                      logged with event id, type, routing
//                                      key and what to bind
//   Readme.CommandsDeliverEveryConfirmedReservation  the setup and the two
//                                      commands of README section 7, run
//                                      exactly as written
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "support/relay/test_bed.h"

using namespace std::chrono_literals;
using namespace pgi::test;

TEST(Topology, UnroutedKeptNeverBlocking) {
  PGI_REQUIRE(broker);
  TestBed t("unrouted", false); // only the fulfiller's queue is bound
  t.prepare_fulfiller();
  reserve_orders(t.db, 20);
  confirm_orders(t.db, 20);
  // 1 stock.restocked, 20 reservation.reserved: no queue; 20 confirmed
  auto r = t.relay_once({"--max-attempts", "1"});
  EXPECT_EQ(r->stat("stats_final", "published"), "41");
  EXPECT_EQ(r->stat("stats_final", "returned"), "0");
  EXPECT_EQ(r->stat("stats_final", "retried"), "0");
  EXPECT_EQ(r->stat("stats_final", "unrouted_queue_messages"), "21");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "published_at IS NOT NULL AND attempts = 0"),
            41);
  EXPECT_EQ(t.broker().depth(t.unrouted), 21);
  auto f = t.fulfil(800);
  EXPECT_EQ(f->stat("stats_final", "fulfilled"), "20");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.request"), 20);
  // the unrouted events are kept whole, for whoever binds later
  const auto kept = t.broker().drain(t.unrouted);
  ASSERT_EQ(kept.size(), 21u);
  EXPECT_EQ(kept[1].routing_key, "reservation.reserved");
  EXPECT_EQ(kept[1].delivery_mode, 2);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "event_id = '" +
                        kept[1].message_id + "'"),
            1);
}

TEST(Topology, UnroutedQueueIsBounded) {
  PGI_REQUIRE(broker);
  TestBed t("unrouted_bound", false);
  // an exchange of its own, with a small unrouted queue
  const std::string x = t.x + ".small", q = x + ".unrouted";
  auto remove = [&] { // before (a leftover of an interrupted run) and after
    t.broker().delete_queue(q);
    t.broker().delete_exchange(x);
    t.broker().delete_exchange(q);
  };
  remove();
  reserve_orders(t.db, 9); // 10 events, no queue bound
  auto r = t.relay_once(
    {"--exchange", x, "--unrouted-queue", q, "--unrouted-max-length", "4"});
  EXPECT_EQ(r->stat("stats_final", "published"), "10");
  EXPECT_EQ(r->stat("stats_final", "unrouted_queue_messages"), "4");
  const auto kept = t.broker().drain(q);
  ASSERT_EQ(kept.size(), 4u);
  // drop-head: the newest four stay
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM (SELECT event_id::text AS e "
                        "FROM inventory.outbox ORDER BY id DESC LIMIT 4) s "
                        "WHERE e IN ('" +
                        kept[0].message_id + "', '" + kept[1].message_id +
                        "', '" + kept[2].message_id + "', '" +
                        kept[3].message_id + "')"),
            4);
  remove();
}

TEST(Topology, ReturnSaysWhatToBind) {
  PGI_REQUIRE(broker);
  TestBed t("returned", false);
  auto r = t.relay({"--backoff", "50ms", "--max-backoff", "100ms"});
  ASSERT_TRUE(poll_until(
    [&] { return !log_lines(*r, "broker_connected").empty(); }, 10s, 20ms));
  t.broker().delete_queue(t.unrouted); // misconfigured behind its back
  t.db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10)");
  const std::string id =
    t.db.exec("SELECT event_id::text FROM inventory.outbox")[0][0]
      .as<std::string>();
  ASSERT_TRUE(poll_until([&] { return !log_lines(*r, "unroutable").empty(); },
                         10s, 20ms));
  // once bound, the retry goes out
  t.bind(t.x + ".stock", "stock.#");
  EXPECT_TRUE(drained(t.db, 10s));
  stop(*r);
  const std::string line = log_lines(*r, "unroutable").front();
  EXPECT_NE(line.find("event_id=" + id), std::string::npos) << line;
  EXPECT_NE(line.find("event_type=stock.restocked"), std::string::npos);
  EXPECT_NE(line.find("routing_key=stock.restocked"), std::string::npos);
  EXPECT_NE(line.find("hint=\"bind a queue to exchange " + t.x +
                      " with routing key stock.restocked"),
            std::string::npos)
    << line;
  EXPECT_NE(r->stat("stats_final", "returned"), "0");
  EXPECT_EQ(r->stat("stats_final", "published"), "1");
}

namespace {

/// The shell commands of the ```sh blocks of README section 7, "### Running
/// them" (a line ending in a backslash joined with the next; comments and
/// blank lines left out).
std::vector<std::string> readme_running_commands() {
  std::ifstream in(std::string(PGI_SOURCE_DIR) + "/README.md");
  std::string line, pending;
  std::vector<std::string> out;
  bool in_section7 = false, in_section = false, in_block = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section7 = line.rfind("## 7.", 0) == 0;
      in_section = false;
    }
    if (line.rfind("### ", 0) == 0)
      in_section = in_section7 && line == "### Running them";
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block && line == "```sh";
      continue;
    }
    if (!in_block) continue;
    if (!pending.empty()) line = pending + " " + line;
    pending.clear();
    if (!line.empty() && line.back() == '\\') {
      pending = line.substr(0, line.size() - 1);
      continue;
    }
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line[start] == '#') continue;
    out.push_back(line.substr(start));
  }
  return out;
}

/// The one command of COMMANDS that contains WHAT; a failure unless there
/// is exactly one.
std::string only(const std::vector<std::string> &commands,
                 const std::string &what) {
  std::vector<std::string> found;
  for (const auto &c : commands)
    if (c.find(what) != std::string::npos) found.push_back(c);
  EXPECT_EQ(found.size(), 1u)
    << "README section 7, Running them: commands with " << what;
  return found.empty() ? "false" : found.front();
}

} // namespace

// README section 7, as an operator follows it, with the database of
// section 3 (shop, tenant acme, sku-123) and the roles of section 8: the
// fulfiller's setup (psql), then the relay and the fulfiller commands,
// each run exactly as written (from a folder whose build/ and src/ are
// this tree's; the broker and the server from the environment, as the
// README says: INVENTORY_AMQP_URL, PG*).  Every confirmed reservation
// becomes a fulfillment request, though nobody is bound for
// reservation.reserved.  (The cmake line is not run: the suite built the
// programs.)
TEST(Readme, CommandsDeliverEveryConfirmedReservation) {
  PGI_REQUIRE(broker);
  const auto commands = readme_running_commands();
  const std::string relay_cmd =
    only(commands, "build/src/relay/inventory-relay");
  const std::string fulfiller_cmd =
    only(commands, "build/src/fulfiller/inventory-fulfiller");
  std::vector<std::string> setup;
  for (const auto &c : commands)
    if (c.rfind("psql ", 0) == 0) setup.push_back(c);
  ASSERT_FALSE(setup.empty()) << "README section 7 has no psql setup";
  ASSERT_EQ(setup.size() + 3, commands.size())
    << "README section 7, Running them: a command this test does not know "
       "(it runs psql lines and the two programs, and leaves cmake out)";

  // the README's names, on the test's server and broker: start clean
  Broker b;
  for (const auto &q : {"fulfillment", "inventory.unrouted"})
    b.delete_queue(q);
  for (const auto &x : {"inventory", "inventory.unrouted"})
    b.delete_exchange(x);
  struct Roles {
    Roles() {
      pqxx::connection admin{""};
      // a leftover database shop of an interrupted run holds their grants
      exec(admin, "DROP DATABASE IF EXISTS shop WITH (FORCE)");
      exec(admin, "DROP ROLE IF EXISTS relay; DROP ROLE IF EXISTS fulfiller; "
                  "CREATE ROLE relay LOGIN; CREATE ROLE fulfiller LOGIN");
    }
    ~Roles() {
      try {
        pqxx::connection admin{""};
        exec(admin,
             "DROP ROLE IF EXISTS relay; DROP ROLE IF EXISTS fulfiller");
      } catch (const std::exception &) {
      }
    }
  } roles;
  TestDatabase shop("shop");
  shop.exec(
    // section 8: the fulfiller and the relay
    "GRANT USAGE ON SCHEMA inventory TO fulfiller;"
    "GRANT EXECUTE ON FUNCTION inventory.lookup(text, text), "
    "inventory.compensate(text, text, text) TO fulfiller;"
    "SELECT inventory.grant_tenant('*', 'fulfiller');"
    "CREATE SCHEMA fulfillment AUTHORIZATION fulfiller;"
    "GRANT USAGE ON SCHEMA inventory TO relay;"
    "GRANT EXECUTE ON FUNCTION inventory.relay_claim(text, integer, "
    "interval), inventory.relay_mark_published(text, bigint[]), "
    "inventory.relay_mark_failed(text, bigint[], text, integer, interval, "
    "interval), inventory.relay_release(text, bigint[]) TO relay;"
    "GRANT SELECT ON inventory.outbox_metrics TO relay;"
    // section 3: stock and a first order, confirmed
    "SELECT inventory.restock('acme', 'receipt-1', 'sku-123', 100);"
    "SELECT * FROM inventory.reserve('acme', 'order-456', 'sku-123', 2, "
    "'10 minutes');"
    "SELECT * FROM inventory.confirm('acme', 'order-456');");

  // the commands run in a folder whose build/ and src/ are this tree's
  char tmpl[] = "/tmp/pgi_readme.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ASSERT_EQ(symlink(PGI_BINARY_DIR, (dir + "/build").c_str()), 0);
  ASSERT_EQ(symlink(PGI_SOURCE_DIR "/src", (dir + "/src").c_str()), 0);
  // `exec env`: the program itself is the child (it gets the SIGTERM);
  // env takes the README's VAR=value prefixes as the shell would
  auto run_in_dir = [&](const std::string &cmd) {
    return std::make_unique<Process>(
      "/bin/bash",
      std::vector<std::string>{"-c", "cd " + dir + " && exec env " + cmd});
  };
  for (const auto &c : setup) run_ok(*run_in_dir(c), 30s);
  EXPECT_EQ(shop.scalar("SELECT count(*) FROM fulfillment.warehouse_sku WHERE "
                        "tenant = 'acme' AND sku = 'sku-123'"),
            1);

  // the fulfiller first, as the README says: the relay publishes only to
  // queues that exist, so an event it sends before the fulfiller bound its
  // queue goes to inventory.unrouted (a relay that finds events at once
  // would otherwise race the fulfiller's start)
  auto fulfiller = run_in_dir(fulfiller_cmd);
  ASSERT_TRUE(poll_until(
    [&] { return !log_lines(*fulfiller, "broker_connected").empty(); }, 30s,
    20ms))
    << fulfiller->log();
  auto relay = run_in_dir(relay_cmd);
  // more orders: confirmed, cancelled, left pending
  shop.exec("SELECT inventory.reserve('acme', 'ord-' || i, 'sku-123', 1) "
            "FROM generate_series(1, 30) i");
  shop.exec("SELECT inventory.confirm('acme', 'ord-' || i) "
            "FROM generate_series(1, 20) i");
  shop.exec("SELECT inventory.cancel('acme', 'ord-' || i, 'changed mind') "
            "FROM generate_series(21, 25) i");
  const bool delivered = poll_sql(shop,
                                  "SELECT count(*) = 21 FROM "
                                  "fulfillment.request WHERE tenant = 'acme'",
                                  30s);
  EXPECT_TRUE(delivered);
  EXPECT_TRUE(drained(shop, 10s));
  relay->signal(SIGTERM);
  fulfiller->signal(SIGTERM);
  run_ok(*relay, 20s);
  run_ok(*fulfiller, 20s);
  EXPECT_EQ(shop.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "attempts > 0 OR dead_at IS NOT NULL"),
            0);
  EXPECT_EQ(shop.scalar("SELECT count(DISTINCT request_key) FROM "
                        "fulfillment.request"),
            21);
  EXPECT_EQ(shop.scalar("SELECT count(*) FROM fulfillment.held"), 0);
  if (!delivered || ::testing::Test::HasFailure()) {
    std::cerr << "README commands:\n";
    for (const auto &c : commands) std::cerr << "  " << c << "\n";
  }
  for (const auto &q : {"fulfillment", "inventory.unrouted"})
    b.delete_queue(q);
  for (const auto &x : {"inventory", "inventory.unrouted"})
    b.delete_exchange(x);
  std::filesystem::remove_all(dir); // the links, not what they name
}
