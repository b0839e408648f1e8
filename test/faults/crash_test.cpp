// test/faults/crash_test.cpp: the server crashes under load (pg_ctl stop
// -m immediate: no shutdown checkpoint, WAL recovery on the next start).
//
// Several clients, each on its own connection, run reserve / confirm /
// cancel in a loop and write down every call whose answer they received
// (acknowledged) with its key and outcome, and the one call they had sent
// when the connection broke (in flight).  After the load has run for a
// while the server is stopped with -m immediate and started again.  Then:
// every acknowledged call is there with its acknowledged outcome, an
// in-flight call is either wholly there or wholly absent, nothing unknown
// appeared, and nothing is half-applied (lines, transitions = version,
// one event per applied transition, counters = lines = ledger).
//
// Needs PGI_DIR (the server folder: data in $PGI_DIR/data, log in
// $PGI_DIR/server.log); the server runs as the OS user postgres.
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

constexpr int kClients = 5;
constexpr auto kLoad = std::chrono::milliseconds{2500};
const char *const kSkus[] = {"A", "B", "C", "D"};

/// pg_ctl on the test server, as postgres when we are root.
int pg_ctl(const std::string &args) {
  const auto env = environment();
  const std::string bin = env.pg_bin + "/pg_ctl";
  const std::string data = env.server_dir + "/data";
  std::string cmd = (geteuid() == 0 ? "runuser -u postgres -- " : "") + bin +
                    " -D '" + data + "' " + args;
  return std::system(cmd.c_str());
}

int stop_server_immediate() {
  return pg_ctl("-w -t 60 -m immediate stop >/dev/null");
}

int start_server() {
  return pg_ctl("-l '" + environment().server_dir +
                "/server.log' -w -t 60 start >/dev/null");
}

/// Whatever happens in the test, the server is running when it ends.
struct ServerRunning {
  ~ServerRunning() {
    if (pg_ctl("status >/dev/null 2>&1") != 0 && start_server() != 0)
      ADD_FAILURE() << "could not restart the server in "
                    << environment().server_dir;
  }
};

enum class Op { reserve, confirm, cancel };

const char *op_name(Op op) {
  switch (op) {
  case Op::reserve:
    return "reserve";
  case Op::confirm:
    return "confirm";
  case Op::cancel:
    return "cancel";
  }
  return "?";
}

/// The state a call leaves its reservation in when it succeeds.
const char *target_state(Op op) {
  switch (op) {
  case Op::reserve:
    return "pending";
  case Op::confirm:
    return "confirmed";
  case Op::cancel:
    return "cancelled";
  }
  return "?";
}

struct Call {
  Op op;
  std::string key;
  int quantity = 0;
  std::string status; // the acknowledged outcome
};

struct ClientLog {
  std::vector<Call> acked;
  std::optional<Call> in_flight;
  std::string broke_with;              // the error that ended the loop
  std::vector<std::string> unexpected; // errors or statuses before the crash
};

/// One client: its own connection, reserve / confirm / cancel on its own
/// keys until its connection breaks.
void client(const TestDatabase &db, int id, std::atomic<bool> &crashing,
            std::atomic<long> &acked_total, ClientLog &log) {
  std::unique_ptr<pqxx::connection> cx;
  try {
    cx = db.connect();
  } catch (const std::exception &e) {
    log.unexpected.push_back("connect: " + std::string{e.what()});
    return;
  }
  std::mt19937 rng{static_cast<unsigned>(1000 + id)};
  std::vector<std::string> pending; // own keys acknowledged as pending
  for (int n = 0;; ++n) {
    Call c;
    if (pending.empty() || rng() % 2 == 0) {
      c.op = Op::reserve;
      c.key = "c" + std::to_string(id) + "-" + std::to_string(n);
      c.quantity = 1 + static_cast<int>(rng() % 3);
    } else {
      const std::size_t i = rng() % pending.size();
      c.key = pending[i];
      pending.erase(pending.begin() + static_cast<long>(i));
      c.op = rng() % 5 < 3 ? Op::confirm : Op::cancel;
    }
    log.in_flight = c;
    try {
      pqxx::nontransaction tx{*cx};
      pqxx::result r;
      if (c.op == Op::reserve)
        r = tx.exec_params("SELECT * FROM inventory.reserve("
                           "'acme', $1, $2, $3::integer)",
                           c.key, kSkus[rng() % std::size(kSkus)], c.quantity);
      else
        r = tx.exec_params(std::string{"SELECT * FROM inventory."} +
                             op_name(c.op) + "('acme', $1)",
                           c.key);
      c.status = outcome_of(r).status;
    } catch (const std::exception &e) {
      log.broke_with = error_code(e);
      if (!crashing.load())
        log.unexpected.push_back(std::string{op_name(c.op)} + " " + c.key +
                                 " before the crash: " + log.broke_with);
      return; // in_flight stays set: its outcome is unknown
    }
    log.in_flight.reset();
    log.acked.push_back(c);
    acked_total.fetch_add(1);
    if (c.status != (c.op == Op::reserve ? std::string{"reserved"}
                                         : std::string{target_state(c.op)}))
      log.unexpected.push_back(std::string{op_name(c.op)} + " " + c.key +
                               " answered " + c.status);
    if (c.op == Op::reserve) pending.push_back(c.key);
  }
}

struct Stored {
  std::string state;
  long long version = 0, lines = 0, quantity = 0;
};

} // namespace

// Row 3: server crash (immediate stop) under concurrent load.
TEST(FaultMatrix, ServerCrashKeepsEveryAcknowledgedCall) {
  PGI_REQUIRE(server_dir);
  std::signal(SIGPIPE, SIG_IGN);

  TestDatabase db{"fault_crash"};
  ServerRunning server_running; // declared after db: restarts before the drop
  {
    auto cx = db.connect();
    for (const char *sku : kSkus)
      exec(*cx, std::string{"SELECT inventory.restock('acme', 'rcpt-"} + sku +
                  "', '" + sku + "', 1000000)");
  }

  std::atomic<bool> crashing{false};
  std::atomic<long> acked_total{0};
  std::vector<ClientLog> logs(kClients);
  std::vector<std::thread> clients;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back(client, std::cref(db), i, std::ref(crashing),
                         std::ref(acked_total), std::ref(logs[i]));

  // let the load run (and be seen running) before the crash
  const bool loaded = poll_until(
    [&] {
      return std::chrono::steady_clock::now() - started >= kLoad &&
             acked_total.load() >= 100;
    },
    30s);
  crashing = true;
  const int stop_rc = stop_server_immediate();
  const double load_seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
      .count();
  for (auto &t : clients) t.join();
  EXPECT_TRUE(loaded) << "only " << acked_total.load()
                      << " calls were acknowledged in 30 s";
  ASSERT_EQ(stop_rc, 0) << "pg_ctl stop -m immediate failed";
  ASSERT_EQ(start_server(), 0) << "the server did not start after the crash";

  // what the clients were told
  long acked[3] = {0, 0, 0};
  long in_flight = 0;
  std::map<std::string, std::vector<Call>> by_key; // acked, in order
  std::map<std::string, Call> flying;
  for (int i = 0; i < kClients; ++i) {
    const auto &log = logs[i];
    EXPECT_EQ(log.unexpected, std::vector<std::string>{}) << "client " << i;
    // the crash ended every client, through a broken connection (or the
    // server's own shutdown error, 57P01)
    EXPECT_TRUE(log.broke_with == "broken_connection" ||
                log.broke_with == "57P01")
      << "client " << i << " ended with " << log.broke_with;
    for (const auto &c : log.acked) {
      ++acked[static_cast<int>(c.op)];
      by_key[c.key].push_back(c);
    }
    if (log.in_flight) {
      ++in_flight;
      flying[log.in_flight->key] = *log.in_flight;
    }
  }

  // what the database kept
  auto cx = db.connect();
  std::map<std::string, Stored> stored;
  {
    pqxx::nontransaction tx{*cx};
    for (const auto &row :
         tx.exec("SELECT r.request_key, r.state, r.version,"
                 "       count(l.sku), coalesce(sum(l.quantity), 0)"
                 "  FROM inventory.reservation r"
                 "  LEFT JOIN inventory.reservation_line l"
                 "         ON l.reservation_id = r.id"
                 " GROUP BY r.id, r.request_key, r.state, r.version")) {
      Stored s;
      s.state = row[1].as<std::string>();
      s.version = row[2].as<long long>();
      s.lines = row[3].as<long long>();
      s.quantity = row[4].as<long long>();
      stored[row[0].as<std::string>()] = s;
    }
  }

  long in_flight_committed = 0;
  for (const auto &[key, calls] : by_key) {
    SCOPED_TRACE("key " + key);
    auto it = stored.find(key);
    ASSERT_NE(it, stored.end()) << "an acknowledged reserve was lost";
    const Stored &s = it->second;
    EXPECT_EQ(s.lines, 1);
    EXPECT_EQ(s.quantity, calls.front().quantity);
    std::set<std::string> allowed = {target_state(calls.back().op)};
    auto f = flying.find(key);
    if (f != flying.end()) allowed.insert(target_state(f->second.op));
    EXPECT_TRUE(allowed.count(s.state) == 1)
      << "state " << s.state << " after acknowledged "
      << op_name(calls.back().op) << " (" << calls.back().status << ")";
    if (f != flying.end() && s.state == target_state(f->second.op) &&
        s.state != target_state(calls.back().op))
      ++in_flight_committed;
  }
  for (const auto &[key, s] : stored) {
    if (by_key.count(key) != 0) continue;
    SCOPED_TRACE("key " + key);
    // not acknowledged: only an in-flight reserve may have committed
    auto f = flying.find(key);
    ASSERT_NE(f, flying.end()) << "a reservation nobody asked for";
    EXPECT_EQ(f->second.op, Op::reserve);
    EXPECT_EQ(s.state, "pending");
    EXPECT_EQ(s.lines, 1);
    EXPECT_EQ(s.quantity, f->second.quantity);
    ++in_flight_committed;
  }

  EXPECT_EQ(accounting_mismatches(*cx), std::vector<std::string>{});
  EXPECT_EQ(invariant_violations(*cx), std::vector<std::string>{});
  // the server works again: a new call goes through
  {
    pqxx::nontransaction tx{*cx};
    auto o = outcome_of(
      tx.exec("SELECT * FROM inventory.reserve('acme', 'after', 'A', 1)"));
    EXPECT_EQ(o.status, "reserved");
    EXPECT_TRUE(o.applied);
  }

  std::cout << "[crash] " << kClients << " clients, crash after "
            << load_seconds << " s: " << acked[0] + acked[1] + acked[2]
            << " calls acknowledged before the crash (reserve " << acked[0]
            << ", confirm " << acked[1] << ", cancel " << acked[2] << "), "
            << in_flight << " in flight, of which " << in_flight_committed
            << " had committed; " << stored.size()
            << " reservations after recovery" << std::endl;
}
