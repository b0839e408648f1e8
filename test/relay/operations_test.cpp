// test/relay/operations_test.cpp: what operators and consumers rely on
// besides delivery: the CloudEvents binding, JSON logs, the systemd units
// and their environment files, and the postgres_exporter queries.
//
//   CloudEvents.PropertiesOnTheMessage  --cloudevents: a consumer (the
//                                     test) reads cloudEvents:specversion,
//                                     :id, :source, :type and :time from
//                                     the headers, the body is the payload;
//                                     the source is configurable; off by
//                                     default
//   Logs.JsonLinesHaveTheTextKeys     --log-format json (and
//                                     INVENTORY_LOG_FORMAT): every line is
//                                     one JSON object (parsed by
//                                     PostgreSQL) with the keys of the
//                                     key=value line, in order, every value
//                                     a string
//   Logs.JsonEscapes                  quotes, control characters, bytes
//                                     that are not UTF-8: still valid JSON
//   Deploy.SystemdUnits               deploy/systemd: the hardening and the
//                                     restart policy are there, and
//                                     `systemd-analyze verify` accepts the
//                                     units (skipped without it)
//   Deploy.EnvironmentFiles           every variable of the example
//                                     environment files is one the program
//                                     reads, and the programs start with
//                                     them (the peers the test's own)
//   Deploy.ExporterQueries            deploy/postgres_exporter/queries.yaml:
//                                     every query runs as a role with the
//                                     grants the file documents, with a
//                                     column for each metric
//   Deploy.ExporterScrape             and Debian's postgres_exporter itself
//                                     reads the file and serves the
//                                     pg_inventory_* metrics (make deps
//                                     installs prometheus-postgres-exporter;
//                                     skipped where it is not installed)
#include <arpa/inet.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

#include "support/relay/scrape.h"
#include "support/relay/test_bed.h"
#include "support/relay/tls_broker.h" // shell()
#include "support/role.h"

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string source_file(const std::string &relative) {
  return std::string(PGI_SOURCE_DIR) + "/" + relative;
}

/// The keys of a key=value log line, in order (values may be quoted with
/// \" and \\ inside).
std::vector<std::string> text_keys(const std::string &line) {
  std::vector<std::string> keys;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const auto eq = line.find('=', i);
    if (eq == std::string::npos) break;
    keys.push_back(line.substr(i, eq - i));
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i)
        if (line[i] == '\\') ++i;
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ') ++i;
    }
  }
  return keys;
}

/// A JSON log line as PostgreSQL's json parser reads it: its keys in
/// order, whether every value is a string, and the values by key.
struct JsonLine {
  std::vector<std::string> keys;
  bool all_strings = true;
  std::map<std::string, std::string> values;
};

JsonLine parse_json(pqxx::connection &cx, const std::string &line) {
  JsonLine j;
  pqxx::nontransaction tx{cx};
  for (const auto &row : tx.exec_params(
         "SELECT key, json_typeof(value), value #>> '{}' FROM "
         "json_each($1::json) WITH ORDINALITY ORDER BY ordinality",
         line)) {
    j.keys.push_back(row[0].as<std::string>());
    j.all_strings = j.all_strings && row[1].as<std::string>() == "string";
    j.values[row[0].as<std::string>()] = row[2].as<std::string>("");
  }
  return j;
}

/// The lines of LOG, by the value of their event key (the last of each).
std::map<std::string, std::string> by_event_text(const std::string &log) {
  std::map<std::string, std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find(" event=");
    if (at == std::string::npos) continue;
    const auto end = line.find(' ', at + 7);
    out[line.substr(at + 7, end == std::string::npos ? end : end - at - 7)] =
      line;
  }
  return out;
}

/// Checks that every line of JSON_LOG is a JSON object of strings, and
/// that each event that TEXT_LOG also has carries the same keys in the
/// same order; returns how many events were compared.
int compare_logs(pqxx::connection &cx, const std::string &text_log,
                 const std::string &json_log) {
  const auto text = by_event_text(text_log);
  std::istringstream in(json_log);
  std::string line;
  int compared = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    JsonLine j;
    try {
      j = parse_json(cx, line);
    } catch (const std::exception &e) {
      ADD_FAILURE() << "not JSON: " << line << "\n" << e.what();
      continue;
    }
    EXPECT_TRUE(j.all_strings) << line;
    if (j.keys.size() < 3) {
      ADD_FAILURE() << "too few keys: " << line;
      continue;
    }
    EXPECT_EQ(j.keys[0], "ts");
    EXPECT_EQ(j.keys[1], "prog");
    EXPECT_EQ(j.keys[2], "event");
    const auto t = text.find(j.values["event"]);
    if (t == text.end()) continue;
    EXPECT_EQ(j.keys, text_keys(t->second))
      << "json: " << line << "\ntext: " << t->second;
    ++compared;
  }
  return compared;
}

} // namespace

// With --cloudevents each message carries the CloudEvents attributes as
// AMQP headers (binary content mode): the test's consumer reads them.
TEST(CloudEvents, PropertiesOnTheMessage) {
  PGI_REQUIRE(broker);
  TestBed t("cloudevents");
  reserve_orders(t.db, 2); // 1 stock.restocked, 2 reservation.reserved
  t.relay_once({"--cloudevents"});
  auto msgs = t.broker().drain(t.all);
  ASSERT_EQ(msgs.size(), 3u);
  for (const auto &m : msgs) {
    EXPECT_EQ(m.headers.at("cloudEvents:specversion"), "1.0");
    EXPECT_EQ(m.headers.at("cloudEvents:id"), m.message_id);
    EXPECT_EQ(m.headers.at("cloudEvents:source"),
              "/pg_inventory/" + t.db.name());
    EXPECT_EQ(m.headers.at("cloudEvents:type"), m.routing_key);
    EXPECT_EQ(m.content_type, "application/json");
    EXPECT_EQ(m.type, m.routing_key); // the usual properties stay
    EXPECT_EQ(m.headers.size(), 5u);
    // time is the payload's occurred_at, and the body is the payload
    EXPECT_EQ(t.db.scalar("SELECT count(*) FROM inventory.outbox WHERE "
                          "event_id = '" +
                          m.message_id + "' AND payload->>'occurred_at' = '" +
                          m.headers.at("cloudEvents:time") +
                          "' AND payload = '" + m.body + "'::jsonb"),
              1)
      << m.body;
  }
  // RFC 3339 in UTC, as the extension writes occurred_at
  EXPECT_EQ(
    t.db.scalar("SELECT count(*) FROM (VALUES ('" +
                msgs[0].headers.at("cloudEvents:time") +
                "')) v(t) WHERE t ~ "
                "'^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d+Z$'"),
    1);

  // the source from the environment, as a unit's environment file sets it
  t.db.exec("SELECT inventory.restock('acme', 'r-ce', 'sku-1', 1)");
  {
    auto r = t.relay({"--once"}, {{"INVENTORY_RELAY_CLOUDEVENTS", "true"},
                                  {"INVENTORY_RELAY_CLOUDEVENTS_SOURCE",
                                   "urn:example:inventory"}});
    run_ok(*r);
  }
  msgs = t.broker().drain(t.all);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].headers.at("cloudEvents:source"), "urn:example:inventory");
  EXPECT_EQ(msgs[0].headers.at("cloudEvents:type"), "stock.restocked");

  // off by default: no headers
  confirm_orders(t.db, 1);
  t.relay_once();
  msgs = t.broker().drain(t.all);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_TRUE(msgs[0].headers.empty());

  // a source that is no URI-reference is refused at start
  auto bad = t.relay({"--cloudevents", "--cloudevents-source", "a b"});
  EXPECT_TRUE(exits_with(*bad, 64, "--cloudevents-source"));
}

// The same work logged as text and as JSON: every JSON line parses, every
// value is a string, and each event has the keys of its text line.
TEST(Logs, JsonLinesHaveTheTextKeys) {
  PGI_REQUIRE(broker);
  TestBed t("json_logs");
  t.prepare_fulfiller();
  auto cx = t.db.connect();
  // a name with a quote, a space and a non-ASCII letter
  const std::string name = "relay \"one\" \xc3\xbc";
  reserve_orders(t.db, 3);
  confirm_orders(t.db, 3);
  auto text = t.relay_once({"--name", name});
  t.db.exec("SELECT inventory.restock('acme', 'r-json', 'sku-2', 5)");
  auto json =
    t.relay({"--once", "--name", name}, {{"INVENTORY_LOG_FORMAT", "json"}});
  run_ok(*json);
  EXPECT_GE(compare_logs(*cx, text->log(), json->log()), 4)
    << json->log(); // start, db_connected, broker_connected, stats_final
  EXPECT_EQ(json->log().find("ts="), std::string::npos);
  // the values are those of the text line
  std::string stats;
  for (std::istringstream in(json->log()); std::getline(in, stats);)
    if (stats.find("\"event\":\"stats_final\"") != std::string::npos) break;
  const JsonLine j = parse_json(*cx, stats);
  EXPECT_EQ(j.values.at("relay"), name);
  EXPECT_EQ(j.values.at("prog"), "inventory-relay");
  EXPECT_EQ(j.values.at("published"), "1"); // the restock

  // the fulfiller too, with the flag
  auto ftext = t.fulfil(500);
  auto fjson = t.fulfil(500, {"--log-format", "json"});
  EXPECT_GE(compare_logs(*cx, ftext->log(), fjson->log()), 3)
    << fjson->log(); // start, db_connected, broker_connected, stats_final
  // a fatal line as JSON (exit 78: the warehouse table emptied)
  t.db.exec("DELETE FROM fulfillment.warehouse_sku");
  auto fatal = t.fulfiller(500, {}, {"--log-format", "json"});
  ASSERT_TRUE(exited_with(fatal->wait(15s), 78)) << fatal->log();
  const std::string line = fatal->log();
  ASSERT_NE(line.find("\"event\":\"fatal\""), std::string::npos) << line;
  std::string fatal_line;
  for (std::istringstream in(line); std::getline(in, fatal_line);)
    if (fatal_line.find("\"event\":\"fatal\"") != std::string::npos) break;
  const JsonLine f = parse_json(*cx, fatal_line);
  EXPECT_EQ(f.values.at("exit_code"), "78");
  EXPECT_FALSE(f.values.at("hint").empty());
  // an unknown format is a usage error
  auto bad = t.relay({"--log-format", "xml"});
  EXPECT_TRUE(exits_with(*bad, 64, "--log-format"));
}

// Values the JSON writer must escape: PostgreSQL reads each line back as
// the value it was (bytes that are not UTF-8 as U+FFFD).
TEST(Logs, JsonEscapes) {
  PGI_REQUIRE(server);
  TestDatabase db("json_escapes");
  auto cx = db.connect();
  const std::vector<std::pair<std::string, std::string>> cases{
    {"plain", "plain"},
    {"a \"quoted\" \\ back", "a \"quoted\" \\ back"},
    {"new\nline\ttab\r", "new\nline\ttab\r"},
    {std::string("bell\x07") + "\x1f", std::string("bell\x07") + "\x1f"},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6", "caf\xc3\xa9 \xe2\x82\xac "
                                                  "\xf0\x9f\x93\xa6"},
    {"bad \xff byte", "bad \xef\xbf\xbd byte"},
    {"cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd"},
    {"overlong \xc0\xaf", "overlong \xef\xbf\xbd\xef\xbf\xbd"},
  };
  for (const auto &c : cases) {
    const std::string line =
      pgi::format_line(pgi::LogFormat::json, "2026-11-29T08:00:00.000Z",
                       "test", {{"value", c.first}, {"key \"x\"", "1"}});
    EXPECT_EQ(line.find('\n'), std::string::npos);
    JsonLine j = parse_json(*cx, line);
    EXPECT_EQ(j.values["value"], c.second) << line;
    EXPECT_EQ(j.values["key \"x\""], "1") << line;
    EXPECT_EQ(j.values["event"], "test");
  }
}

// The units carry the restart policy and the hardening the README
// describes, and systemd itself accepts them (`systemd-analyze verify`,
// when the machine has it; the binaries are this build's).
TEST(Deploy, SystemdUnits) {
  const std::string dir = source_file("deploy/systemd");
  const std::map<std::string, std::string> units{
    {"inventory-relay@.service", relay_bin()},
    {"inventory-fulfiller.service", fulfiller_bin()}};
  char tmpl[] = "/tmp/pgi_units.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string tmp = tmpl;
  for (const auto &u : units) {
    const std::string text = read_file(dir + "/" + u.first);
    ASSERT_FALSE(text.empty()) << u.first;
    for (const std::string line :
         {"Restart=on-failure", "RestartPreventExitStatus=64 77 78",
          "RestartSec=5s", "DynamicUser=yes", "NoNewPrivileges=yes",
          "ProtectSystem=strict", "PrivateTmp=yes", "ProtectHome=yes",
          "CapabilityBoundingSet=", "KillSignal=SIGTERM"})
      EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos)
        << u.first << " lacks " << line;
    // the copy to verify runs this build's program
    std::string copy = text;
    const std::string exec = "ExecStart=/usr/local/bin/";
    const auto at = copy.find(exec);
    ASSERT_NE(at, std::string::npos) << u.first;
    copy.replace(at, copy.find('\n', at) - at, "ExecStart=" + u.second);
    std::ofstream(tmp + "/" + u.first) << copy;
  }
  EXPECT_NE(read_file(dir + "/inventory-relay@.service")
              .find("EnvironmentFile=/etc/pg_inventory/relay-%i.env"),
            std::string::npos);
  int status = 0;
  const std::string found = shell("command -v systemd-analyze", &status);
  if (status != 0 || found.empty()) {
    std::filesystem::remove_all(tmp);
    GTEST_SKIP() << "no systemd-analyze here: the units were checked by "
                    "reading only";
  }
  const std::string out =
    shell("systemd-analyze verify " + tmp + "/inventory-relay@.service " +
            tmp + "/inventory-fulfiller.service 2>&1",
          &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "") << "systemd-analyze verify complains:\n" << out;
  // and systemd's own hardening score stays low (offline: no systemd
  // needs to run)
  const std::string score =
    shell("systemd-analyze security --offline=true --threshold=30 " + tmp +
            "/inventory-relay@.service " + tmp +
            "/inventory-fulfiller.service 2>&1 | grep 'Overall exposure'; "
            "exit ${PIPESTATUS[0]}",
          &status);
  EXPECT_EQ(status, 0) << score;
  std::cerr << "systemd-analyze security: " << score;
  std::filesystem::remove_all(tmp);
}

// The example environment files name only variables the programs read,
// and with them (the database, broker and exchange replaced by the test's,
// the metrics port by a free one) both programs start and work.
TEST(Deploy, EnvironmentFiles) {
  PGI_REQUIRE(broker);
  TestBed t("env_files");
  t.prepare_fulfiller();
  t.db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 5)"); // one event
  const auto load = [](const std::string &file) {
    std::map<std::string, std::string> env;
    std::istringstream in(read_file(source_file("deploy/systemd/" + file)));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto eq = line.find('=');
      EXPECT_NE(eq, std::string::npos) << line;
      std::string v = line.substr(eq + 1);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"')
        v = v.substr(1, v.size() - 2);
      env[line.substr(0, eq)] = v;
    }
    return env;
  };
  struct Program {
    std::string file, bin, db_var, metrics_var;
  };
  for (const Program &p :
       {Program{"relay.env.example", relay_bin(), "INVENTORY_RELAY_DB",
                "INVENTORY_RELAY_METRICS_ADDRESS"},
        Program{"fulfiller.env.example", fulfiller_bin(),
                "INVENTORY_FULFILLER_DB",
                "INVENTORY_FULFILLER_METRICS_ADDRESS"}}) {
    auto env = load(p.file);
    ASSERT_GE(env.size(), 5u) << p.file;
    // --help, its wrapped lines joined
    const std::string help = shell(p.bin + " --help | tr -s ' \\n' ' '");
    for (const auto &kv : env)
      EXPECT_NE(help.find("env " + kv.first + "]"), std::string::npos)
        << p.file << ": " << kv.first << " is not a variable of " << p.bin;
    // the commented-out settings are the program's too
    std::istringstream in(read_file(source_file("deploy/systemd/" + p.file)));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("#INVENTORY_", 0) == 0 || line.rfind("#PG", 0) == 0) {
        const std::string var = line.substr(1, line.find('=') - 1);
        if (var.rfind("PG", 0) != 0) {
          EXPECT_NE(help.find("env " + var + "]"), std::string::npos)
            << p.file << ": " << var;
        }
      }
    // the test's peers instead of the example's
    env[p.db_var] = t.db.conninfo();
    env["INVENTORY_AMQP_URL"] = t.broker_url;
    env["INVENTORY_EXCHANGE"] = t.x;
    env["INVENTORY_UNROUTED_QUEUE"] = t.unrouted;
    env[p.metrics_var] = "127.0.0.1:0";
    env["INVENTORY_FULFILLER_QUEUE"] = t.fq;
    env["INVENTORY_FULFILLER_SKIP_SCHEMA"] = "true";
    Process proc(p.bin, {}, env);
    const int port = metrics_port(proc);
    ASSERT_NE(port, 0) << proc.log();
    EXPECT_TRUE(health_becomes(port, 200)) << proc.log();
    if (p.bin == relay_bin()) {
      EXPECT_TRUE(drained(t.db, 10s));
    }
    stop(proc);
    EXPECT_NE(proc.log().find("\"event\":\"stats_final\""), std::string::npos)
      << proc.log(); // INVENTORY_LOG_FORMAT=json
  }
}

// Every query of the postgres_exporter file runs as a role with the
// grants the file documents, and returns a column for each of its
// metrics; the numbers are the database's.
TEST(Deploy, ExporterQueries) {
  PGI_REQUIRE(server);
  TestDatabase db("exporter_queries");
  TestRole role(db, "exporter");
  db.exec("GRANT USAGE ON SCHEMA inventory TO " + role.name() +
          "; GRANT SELECT ON inventory.outbox_metrics, inventory.location_stock, inventory.location, "
          "inventory.reservation TO " +
          role.name());
  db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10), "
          "inventory.restock('acme', 'r2', 'sku-2', 5), "
          "inventory.restock('globex', 'r3', 'sku-1', 7)");
  db.exec("SELECT inventory.reserve('acme', 'o1', 'sku-1', 3)");
  db.exec("SELECT inventory.set_stock_policy('acme', 'sku-2', 'default', 5)");
  const std::string text =
    read_file(source_file("deploy/postgres_exporter/queries.yaml"));
  ASSERT_FALSE(text.empty());
  // the file's simple shape: `NAME:` at column 0, `  query: |` and its
  // lines indented by 4, `  metrics:` and `    - COLUMN:` lines
  struct Entry {
    std::string name, query;
    std::vector<std::string> columns;
  };
  std::vector<Entry> entries;
  bool in_query = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != ' ') {
      entries.push_back({line.substr(0, line.find(':')), "", {}});
      in_query = false;
    } else if (line == "  query: |") {
      in_query = true;
    } else if (in_query && line.rfind("    ", 0) == 0) {
      entries.back().query += line.substr(4) + "\n";
    } else {
      in_query = false;
      if (line.rfind("    - ", 0) == 0)
        entries.back().columns.push_back(line.substr(6, line.find(':') - 6));
    }
  }
  ASSERT_EQ(entries.size(), 3u);
  auto cx = role.connect();
  std::map<std::string, pqxx::result> results;
  for (const auto &e : entries) {
    ASSERT_FALSE(e.query.empty()) << e.name;
    ASSERT_FALSE(e.columns.empty()) << e.name;
    pqxx::result r;
    try {
      r = exec(*cx, e.query);
    } catch (const std::exception &ex) {
      ADD_FAILURE() << e.name << ": " << ex.what();
      continue;
    }
    for (const auto &c : e.columns)
      EXPECT_NO_THROW(r.column_number(c)) << e.name << " has no column " << c;
    results[e.name] = r;
  }
  const auto &outbox = results["pg_inventory_outbox"];
  ASSERT_EQ(outbox.size(), 1u);
  // three restocks, one reservation and the stock.out_of_stock of sku-2
  // that its safety stock causes
  EXPECT_EQ(outbox[0]["unpublished_events"].as<long long>(), 5);
  EXPECT_EQ(outbox[0]["dead_lettered_events"].as<long long>(), 0);
  EXPECT_GT(outbox[0]["oldest_unpublished_age_seconds"].as<double>(), -1);
  EXPECT_EQ(outbox[0]["below_low_water_events"].as<long long>(), 0);
  // nothing published yet
  EXPECT_EQ(outbox[0]["oldest_published_age_seconds"].as<double>(), 0);
  const auto &stock = results["pg_inventory_stock"];
  ASSERT_EQ(stock.size(), 2u);
  std::map<std::string, std::vector<double>> by_tenant;
  for (const auto &row : stock)
    by_tenant[row["tenant"].as<std::string>()] = {
      row["skus"].as<double>(), row["available_units"].as<double>(),
      row["sellable_units"].as<double>(), row["reserved_units"].as<double>(),
      row["sold_out_skus"].as<double>()};
  // acme keeps 5 units of sku-2 as safety stock: on hand, not sellable,
  // so sku-2 counts as sold out
  EXPECT_EQ(by_tenant["acme"], (std::vector<double>{2, 12, 7, 3, 1}));
  EXPECT_EQ(by_tenant["globex"], (std::vector<double>{1, 7, 7, 0, 0}));
  const auto &pending = results["pg_inventory_reservations"];
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0]["tenant"].as<std::string>(), "acme");
  EXPECT_EQ(pending[0]["pending"].as<double>(), 1);
  EXPECT_EQ(pending[0]["pending_past_expiry"].as<double>(), 0);
}

// Debian's prometheus-postgres-exporter, given the queries file and a role
// with the documented grants, serves the pg_inventory_* metrics with the
// database's numbers.
TEST(Deploy, ExporterScrape) {
  PGI_REQUIRE(server);
  int status = 0;
  const std::string bin =
    shell("command -v prometheus-postgres-exporter", &status);
  if (status != 0 || bin.empty())
    GTEST_SKIP() << "prometheus-postgres-exporter is not installed";
  TestDatabase db("exporter_scrape");
  TestRole role(db, "exporter_scrape");
  db.exec("GRANT USAGE ON SCHEMA inventory TO " + role.name() +
          "; GRANT SELECT ON inventory.outbox_metrics, inventory.location_stock, inventory.location, "
          "inventory.reservation TO " +
          role.name());
  db.exec("SELECT inventory.restock('acme', 'r1', 'sku-1', 10), "
          "inventory.restock('globex', 'r2', 'sku-1', 7)");
  db.exec("SELECT inventory.reserve('acme', 'o1', 'sku-1', 3)");
  // a free loopback port for it
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<struct sockaddr *>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<struct sockaddr *>(&a), &len);
  const int port = ntohs(a.sin_port);
  close(fd);
  const std::string dsn = "host=" + pgi::env_or("PGHOST", "localhost") +
                          " port=" + pgi::env_or("PGPORT", "5432") +
                          " dbname=" + db.name() + " user=" + role.name() +
                          " sslmode=disable";
  Process exporter(bin.substr(0, bin.find('\n')),
                   {"--web.listen-address=127.0.0.1:" + std::to_string(port),
                    "--extend.query-path=" +
                      source_file("deploy/postgres_exporter/queries.yaml"),
                    "--disable-default-metrics", "--disable-settings-metrics"},
                   {{"DATA_SOURCE_NAME", dsn}});
  // the value of the first line that starts with NAME{ and has LABEL
  const auto value = [](const std::string &body, const std::string &name,
                        const std::string &label) {
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);)
      if (line.rfind(name + "{", 0) == 0 &&
          line.find(label) != std::string::npos)
        return std::stod(line.substr(line.rfind(' ') + 1));
    return -1.0;
  };
  std::string body;
  EXPECT_TRUE(poll_until(
    [&] {
      body = http_get(port, "/metrics").body;
      return value(body, "pg_inventory_outbox_unpublished_events", "") >= 0;
    },
    15s, 100ms))
    << exporter.log();
  EXPECT_EQ(value(body, "pg_inventory_outbox_unpublished_events", ""), 3);
  EXPECT_EQ(value(body, "pg_inventory_outbox_dead_lettered_events", ""), 0);
  EXPECT_EQ(
    value(body, "pg_inventory_stock_available_units", "tenant=\"acme\""), 7);
  EXPECT_EQ(
    value(body, "pg_inventory_stock_reserved_units", "tenant=\"acme\""), 3);
  EXPECT_EQ(
    value(body, "pg_inventory_stock_available_units", "tenant=\"globex\""), 7);
  EXPECT_EQ(
    value(body, "pg_inventory_reservations_pending", "tenant=\"acme\""), 1);
  EXPECT_NE(body.find("# TYPE pg_inventory_outbox_oldest_unpublished_age_"
                      "seconds gauge"),
            std::string::npos);
  EXPECT_EQ(value(body, "pg_inventory_outbox_below_low_water_events", ""), 0);
  EXPECT_EQ(
    value(body, "pg_inventory_outbox_oldest_published_age_seconds", ""), 0);
  EXPECT_EQ(exporter.log().find("level=error"), std::string::npos)
    << exporter.log();
}
