// test/relay/startup_test.cpp: what both programs do before they work:
// check their arguments, tell permanent failures from transient ones, and
// (the fulfiller) refuse to run without its own setup.
//
//   Arguments.ServerLimitsAtStart      values the extension would refuse
//                                      (lease 2h, batch 0, a 65-character
//                                      name, ...) exit 64 at start (fault 6)
//   Arguments.ServerLimitsAccepted     the largest values it accepts work
//   Arguments.Version                  --version on both programs (fault 6)
//   PermanentErrors.*                  authentication, missing database,
//                                      role, privilege, extension (or too
//                                      old), ACCESS_REFUSED, unknown vhost,
//                                      exchange of another type: exit 77/78
//                                      within seconds, one fatal line with
//                                      a hint (fault 4)
//   TransientErrors.DatabaseConnectionKilled  a lost connection is retried
//   FulfillerSetup.RefusesEmptyWarehouse   empty or missing warehouse_sku:
//                                      exit 78, nothing compensated (fault 5)
//   FulfillerSetup.HoldsUnknownSku     a SKU the warehouse does not ship is
//                                      held, not compensated, and becomes a
//                                      request once added (fault 5)
#include <fstream>
#include <sstream>

#include "support/relay/test_bed.h"
#include "support/role.h"

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

/// RULES put at the top of pg_hba.conf FILE (the server reloaded) for as
/// long as this object lives; then the file as it was, reloaded again.
class HbaRules {
 public:
  HbaRules(std::string file, const std::string &rules)
      : file_{std::move(file)} {
    std::ifstream in(file_);
    std::stringstream ss;
    ss << in.rdbuf();
    original_ = ss.str();
    write(rules + original_);
  }
  ~HbaRules() {
    try {
      write(original_);
    } catch (const std::exception &e) {
      ADD_FAILURE() << "could not restore " << file_ << ": " << e.what();
    }
  }

 private:
  void write(const std::string &text) {
    std::ofstream out(file_, std::ios::trunc); // in place: owner, mode kept
    out << text;
    out.close();
    pqxx::connection admin{""};
    exec(admin, "SELECT pg_reload_conf()");
  }
  std::string file_, original_;
};

/// A relay with ARGS (after the bed's arguments: later flags win).
std::unique_ptr<Process> relay(const TestBed &t,
                               std::vector<std::string> args) {
  return t.relay(std::move(args));
}

/// A program run with ARGS only (no database, no broker).
std::unique_ptr<Process>
bare(const std::string &bin, const std::vector<std::string> &args,
     const std::map<std::string, std::string> &env = {}) {
  return std::make_unique<Process>(bin, args, env);
}

/// RabbitMQ's URL with USER:PASSWORD and VHOST instead of the test's.
std::string broker_url_with(const std::string &userinfo,
                            const std::string &vhost = "") {
  std::string url = environment().amqp_url; // amqp://guest:guest@host:port
  const auto at = url.find('@');
  return "amqp://" + userinfo + url.substr(at) +
         (vhost.empty() ? "" : "/" + vhost);
}

} // namespace

// Values the extension refuses are refused at start with exit 64 (usage),
// before any connection: the flag or the environment variable is named.
TEST(Arguments, ServerLimitsAtStart) {
  struct Case {
    std::string bin;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  const std::string r = relay_bin(), f = fulfiller_bin();
  const std::vector<Case> cases{
    {r, {"--lease", "2h"}, {}, "--lease must be above 0 and at most 1h"},
    {r, {"--lease", "0"}, {}, "--lease must be above 0"},
    {r, {}, {{"INVENTORY_RELAY_LEASE", "61m"}}, "INVENTORY_RELAY_LEASE must"},
    {r, {"--batch-size", "0"}, {}, "--batch-size must be 1 to 10000"},
    {r, {"--batch-size=10001"}, {}, "--batch-size must be 1 to 10000"},
    {r, {}, {{"INVENTORY_RELAY_BATCH_SIZE", "-5"}}, "INVENTORY_RELAY_BATCH"},
    {r, {"--name", ""}, {}, "--name must have 1 to 64 characters"},
    {r, {"--name", std::string(65, 'n')}, {}, "1 to 64 characters (got 65)"},
    {r, {"--name", "a\tb"}, {}, "--name must not contain control"},
    {r, {"--max-attempts", "1001"}, {}, "--max-attempts must be 1 to 1000"},
    {r, {"--backoff", "2d"}, {}, "--backoff must be above 0 and at most 1d"},
    {r, {"--max-backoff", "8d"}, {}, "--max-backoff must be"},
    {r, {"--lease", "soon"}, {}, "is not a duration"},
    {r, {"--frobnicate"}, {}, "unknown option --frobnicate"},
    {r, {"--amqp-url", "http://x"}, {}, "is not an AMQP URL"},
    {r, {"--tls-ca-file", "/etc/hostname"}, {}, "need an amqps:// URL"},
    {f, {"--prefetch", "0"}, {}, "--prefetch must be 1 to 65535"},
    {f, {"--queue", ""}, {}, "--queue must have 1 to 255 bytes"},
    {f,
     {},
     {{"INVENTORY_FULFILLER_COMPENSATE_UNKNOWN_SKU", "maybe"}},
     "is not one of"},
  };
  for (const auto &c : cases) {
    std::string shown;
    for (const auto &a : c.args) shown += a + " ";
    for (const auto &e : c.env) shown += e.first + "=" + e.second + " ";
    auto p = bare(c.bin, c.args, c.env);
    EXPECT_TRUE(exits_with(*p, 64, c.says, 5s)) << c.bin << " " << shown;
  }
}

// The largest values the extension accepts are accepted: a relay with a
// lease of 1h, batches of 10000 and a name of 64 characters (some of them
// two bytes long) drains the outbox.
TEST(Arguments, ServerLimitsAccepted) {
  PGI_REQUIRE(broker);
  TestBed t("limits");
  reserve_orders(t.db, 3);
  std::string name;
  for (int i = 0; i < 32; ++i) name += "r\xc3\xa9"; // "ré" x 32: 64 chars
  auto r =
    t.relay_once({"--lease", "1h", "--batch-size", "10000", "--name", name});
  EXPECT_EQ(r->stat("stats_final", "published"), "4");
  EXPECT_TRUE(drained(t.db, 5s));
}

// --version prints the program, its version and the extension it needs.
TEST(Arguments, Version) {
  for (const auto &bin : {relay_bin(), fulfiller_bin()}) {
    FILE *out = popen((bin + " --version").c_str(), "r");
    ASSERT_NE(out, nullptr);
    char buf[256] = {0};
    const std::string line = fgets(buf, sizeof buf, out) ? buf : "";
    EXPECT_EQ(pclose(out), 0) << bin;
    const std::string prog = bin.substr(bin.rfind('/') + 1);
    EXPECT_EQ(line.rfind(prog + " ", 0), 0u) << line;
    EXPECT_NE(line.find("needs extension pg_inventory >= "), line.npos)
      << line;
  }
}

// A database that does not exist: exit 78 with what to do, for both
// programs (one policy).
TEST(PermanentErrors, MissingDatabase) {
  PGI_REQUIRE(broker);
  TestBed t("perm_db");
  auto r = relay(t, {"--db", "dbname=relay_no_such_database"});
  EXPECT_TRUE(exits_with(*r, 78,
                         "database \\\"relay_no_such_database\\\" "
                         "does not exist"));
  auto f = t.fulfiller(0, {}, {"--db", "dbname=relay_no_such_database"});
  EXPECT_TRUE(exits_with(*f, 78, "does not exist"));
}

// A role that does not exist, and a password that is wrong: exit 77.
TEST(PermanentErrors, AuthenticationFails) {
  PGI_REQUIRE(broker);
  TestBed t("perm_auth");
  auto r =
    relay(t, {"--db", "dbname=" + t.db.name() + " user=relay_no_such_role"});
  EXPECT_TRUE(exits_with(*r, 77, "role \\\"relay_no_such_role\\\" does not"));

  // a role that must give a password (scram) gives a wrong one: a rule of
  // its own at the top of pg_hba.conf, for this role only
  const Environment env = environment();
  if (env.server_dir.empty()) {
    std::cerr << "PGI_DIR is not set: the password case is left out\n";
    return;
  }
  TestRole role(t.db, "relay_pw", "LOGIN PASSWORD 'right'");
  HbaRules rules(env.server_dir + "/data/pg_hba.conf",
                 "local all " + role.name() + " scram-sha-256\n" +
                   "host all " + role.name() +
                   " 127.0.0.1/32 scram-sha-256\n");
  const std::string wrong = role.conninfo() + " password=wrong";
  // the reload is asynchronous: wait until the rule is in force
  ASSERT_TRUE(poll_until(
    [&] {
      try {
        pqxx::connection cx{wrong};
        return false;
      } catch (const std::exception &) {
        return true;
      }
    },
    10s, 50ms))
    << "pg_hba.conf rule not in force after a reload";
  auto p = relay(t, {"--db", wrong});
  EXPECT_TRUE(exits_with(*p, 77, "password authentication failed for user"));
}

// Privileges: a relay role without EXECUTE on the relay functions, and a
// fulfiller role that may not create its schema: exit 77, naming the grant.
TEST(PermanentErrors, MissingPrivilege) {
  PGI_REQUIRE(broker);
  TestBed t("perm_priv");
  TestRole relay_role(t.db, "relay_no_grant");
  TestRole fulfiller_role(t.db, "fulfiller_no_grant");
  t.db.exec("GRANT USAGE ON SCHEMA inventory TO " + relay_role.name());
  auto r = relay(t, {"--db", relay_role.conninfo()});
  EXPECT_TRUE(exits_with(*r, 77,
                         "role " + relay_role.name() +
                           " may not execute inventory.relay_claim(text, "
                           "integer, interval)"));
  auto f = t.fulfiller(0, {}, {"--db", fulfiller_role.conninfo()});
  EXPECT_TRUE(exits_with(*f, 77, "permission denied for database"));
}

// The extension missing, or older than the relay needs (0.3: leases were
// not owned yet): exit 78.
TEST(PermanentErrors, ExtensionMissingOrTooOld) {
  PGI_REQUIRE(broker);
  TestBed t("perm_ext");
  t.db.exec("DROP EXTENSION pg_inventory");
  auto r = t.relay();
  EXPECT_TRUE(exits_with(*r, 78, "extension pg_inventory is not installed"));
  t.db.exec("DROP SCHEMA IF EXISTS inventory CASCADE; "
            "CREATE EXTENSION pg_inventory VERSION '0.3'");
  auto old = t.relay();
  EXPECT_TRUE(exits_with(*old, 78,
                         "extension pg_inventory 0.3 in database " +
                           t.db.name() + " is too old"));
}

// A router's database (pg_inventory_router, README section 10) has the
// business functions but not the relay's: exit 78, saying to connect the
// relay to a node.
TEST(PermanentErrors, RouterDatabase) {
  PGI_REQUIRE(broker);
  TestBed t("perm_router");
  t.db.exec("DROP EXTENSION pg_inventory CASCADE; "
            "DROP SCHEMA IF EXISTS inventory CASCADE; "
            "CREATE EXTENSION pg_inventory_router CASCADE");
  auto r = t.relay();
  EXPECT_TRUE(exits_with(*r, 78,
                         "function inventory.relay_claim(text, integer, "
                         "interval) is not on the router"));
}

// The broker refuses the login (ACCESS_REFUSED: wrong password), for both
// programs; an unknown vhost: 77 and 78.
TEST(PermanentErrors, BrokerRefuses) {
  PGI_REQUIRE(broker);
  TestBed t("perm_broker");
  const std::string bad_password = broker_url_with("guest:wrong");
  auto r = t.relay({"--amqp-url", bad_password});
  EXPECT_TRUE(exits_with(*r, 77, "403 ACCESS_REFUSED"));
  t.prepare_fulfiller();
  auto f = t.fulfiller(0, {}, {"--amqp-url", bad_password});
  EXPECT_TRUE(exits_with(*f, 77, "403 ACCESS_REFUSED"));
  auto v = t.relay({"--amqp-url", broker_url_with("guest:guest", "no-such")});
  EXPECT_TRUE(exits_with(*v, 78, "vhost no-such not found"));
}

// The exchange exists with another type (direct): exit 78 saying so.  The
// events stay unpublished with no attempt counted.
TEST(PermanentErrors, ExchangeOfAnotherType) {
  PGI_REQUIRE(broker);
  TestBed t("perm_exchange");
  const std::string x = t.x + ".direct";
  t.broker().plain_exchange(x, "direct");
  reserve_orders(t.db, 2);
  auto r = t.relay({"--exchange", x});
  EXPECT_TRUE(exits_with(*r, 78, "inequivalent arg 'type'"));
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                        "published_at IS NULL AND attempts = 0"),
            3);
  t.broker().delete_exchange(x);
}

// A lost database connection is transient: the relay reconnects (backoff)
// and goes on publishing.
TEST(TransientErrors, DatabaseConnectionKilled) {
  PGI_REQUIRE(broker);
  TestBed t("transient_db");
  reserve_orders(t.db, 5);
  auto r = t.relay({"--name", "relay-killed-cx"});
  ASSERT_TRUE(drained(t.db, 10s));
  auto admin = t.db.connect();
  const long long pid = scalar(*admin, "SELECT pid FROM pg_stat_activity "
                                       "WHERE datname = current_database() "
                                       "AND pid <> pg_backend_pid() AND "
                                       "application_name = '' LIMIT 1");
  ASSERT_TRUE(terminate_backend(*admin, static_cast<int>(pid)));
  confirm_orders(t.db, 5);
  EXPECT_TRUE(drained(t.db, 15s));
  stop(*r);
  EXPECT_FALSE(log_lines(*r, "db_lost").empty()) << r->log();
  EXPECT_EQ(r->stat("stats_final", "db_reconnects"), "1");
  EXPECT_EQ(r->stat("stats_final", "published"), "11");
}

// Without anything in fulfillment.warehouse_sku (or without the table) the
// fulfiller refuses to start: exit 78, and no confirmed sale is undone.
TEST(FulfillerSetup, RefusesEmptyWarehouse) {
  PGI_REQUIRE(broker);
  TestBed t("warehouse_empty");
  reserve_orders(t.db, 3);
  confirm_orders(t.db, 3);
  t.bind(t.fq, "reservation.confirmed");
  t.relay_once();
  ASSERT_EQ(t.broker().depth(t.fq), 3);

  // --skip-schema and no schema: the table is missing
  auto missing = t.fulfiller(0, {}, {"--skip-schema"});
  EXPECT_TRUE(
    exits_with(*missing, 78, "table fulfillment.warehouse_sku is missing"));
  // the fulfiller makes its schema, finds the table empty and stops, even
  // when told to compensate
  auto empty = t.fulfiller(0, {}, {"--compensate-unknown-sku"});
  EXPECT_TRUE(
    exits_with(*empty, 78, "table fulfillment.warehouse_sku is empty"));
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.reservation WHERE "
                        "state = 'confirmed'"),
            3);
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.failure"), 0);
  EXPECT_EQ(t.broker().depth(t.fq), 3); // nothing consumed
}

// By default a SKU the warehouse does not ship is held, not compensated:
// the sale stands, the event waits in fulfillment.held and becomes a
// request once the SKU is in warehouse_sku.
TEST(FulfillerSetup, HoldsUnknownSku) {
  PGI_REQUIRE(broker);
  TestBed t("held");
  t.prepare_fulfiller(); // ships sku-1 only
  t.db.exec("SELECT inventory.restock('acme', 'r2', 'sku-2', 10)");
  t.db.exec("SELECT inventory.reserve('acme', 'new-sku', 'sku-2', 3)");
  t.db.exec("SELECT inventory.confirm('acme', 'new-sku')");
  t.relay_once();
  auto f = t.fulfiller(60000, {}, {"--recheck-held", "1s"});
  ASSERT_TRUE(
    poll_sql(t.db, "SELECT count(*) = 1 FROM fulfillment.held", 10s));
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.reservation WHERE "
                        "request_key = 'new-sku' AND state = 'confirmed'"),
            1);
  EXPECT_EQ(t.db.scalar("SELECT consumed FROM inventory.stock WHERE sku = "
                        "'sku-2'"),
            3);
  t.db.exec("INSERT INTO fulfillment.warehouse_sku VALUES ('acme', 'sku-2')");
  EXPECT_TRUE(poll_sql(t.db,
                       "SELECT count(*) = 1 FROM fulfillment.request WHERE "
                       "request_key = 'new-sku'",
                       10s));
  stop(*f);
  EXPECT_EQ(f->stat("stats_final", "held"), "1");
  EXPECT_EQ(f->stat("stats_final", "held_released"), "1");
  EXPECT_EQ(f->stat("stats_final", "compensated"), "0");
  EXPECT_EQ(t.db.scalar("SELECT count(*) FROM fulfillment.held"), 0);
  EXPECT_NE(log_lines(*f, "held").front().find("event_id="),
            std::string::npos);
}
