// test/faults/soak_test.cpp: a bounded soak with contention.
//
// kClients client threads, each on its own connection, run a random mix for
// SOAK_SECONDS (default 10) over a small set of SKUs, so that they contend
// for the same stock rows: single-line reserves and 2-4 line carts (same
// SKU twice now and then), short real-clock TTLs (1-2 s), confirm / cancel
// / compensate of anyone's reservations, replays of earlier reserves,
// expire_due from every client, restocks and adjustments.  A checker
// thread calls check_invariants() over and over during the run; every
// check must come back empty.  No call may fail with a deadlock (40P01) or
// a serialization failure (40001), or any error other than the expected
// IN003 (an adjustment that would make available negative).  At the end an
// independent accounting compares the counters with the lines and the
// ledger.
#include "support.h"

#include <atomic>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>

using namespace std::chrono_literals;

namespace {

using pgi::TestDatabase;

constexpr int kClients = 8;
const char *const kSkus[] = {"S1", "S2", "S3", "S4", "S5"};
// recent reservations kept for confirm / cancel / compensate / replay: a
// few seconds of load, so that some of them are past their 1-2 s TTL
constexpr std::size_t kPoolSize = 3000;

/// A reservation some client made, for others to act on or replay.
struct Made {
  std::string key;
  bool lines;            // made with reserve_lines (else reserve)
  std::string sku, json; // payload: sku + quantity, or the lines as JSON
  int quantity = 0;
};

/// The reservations made so far (the recent ones), shared by all clients.
class Pool {
 public:
  void add(Made m) {
    std::lock_guard<std::mutex> g{mu_};
    if (made_.size() < kPoolSize) {
      made_.push_back(std::move(m));
    } else {
      made_[next_++ % made_.size()] = std::move(m);
    }
  }
  std::optional<Made> pick(std::mt19937 &rng) {
    std::lock_guard<std::mutex> g{mu_};
    if (made_.empty()) return std::nullopt;
    return made_[rng() % made_.size()];
  }

 private:
  std::mutex mu_;
  std::vector<Made> made_;
  std::size_t next_ = 0;
};

struct Tally {
  std::map<std::string, long> ops;      // operation -> calls answered
  std::map<std::string, long> statuses; // op:status -> count
  std::map<std::string, long> errors;   // SQLSTATE -> count
  std::vector<std::string> wrong;       // answers that break the contract
  void merge(const Tally &o) {
    for (const auto &[k, v] : o.ops) ops[k] += v;
    for (const auto &[k, v] : o.statuses) statuses[k] += v;
    for (const auto &[k, v] : o.errors) errors[k] += v;
    wrong.insert(wrong.end(), o.wrong.begin(), o.wrong.end());
  }
};

std::string ttl(std::mt19937 &rng) {
  return std::to_string(1000 + rng() % 1001) + " milliseconds";
}

void client(const TestDatabase &db, int id, std::atomic<bool> &stop,
            Pool &pool, Tally &tally) {
  auto cx = db.connect();
  pqxx::nontransaction tx{*cx}; // autocommit: every call its own transaction
  std::mt19937 rng{static_cast<unsigned>(7000 + id)};
  long n = 0;
  auto sku = [&] { return std::string{kSkus[rng() % std::size(kSkus)]}; };
  while (!stop.load()) {
    const std::string key =
      "k" + std::to_string(id) + "-" + std::to_string(++n);
    const unsigned dice = rng() % 100;
    std::string op;
    try {
      if (dice < 22) {
        op = "reserve";
        Made m{key, false, sku(), "", 1 + static_cast<int>(rng() % 3)};
        auto o = pgi::outcome_of(tx.exec_params(
          "SELECT * FROM inventory.reserve('acme', $1, $2, $3::integer,"
          " $4::interval)",
          key, m.sku, m.quantity, ttl(rng)));
        tally.statuses[op + ":" + o.status]++;
        if (!o.applied) tally.wrong.push_back("first reserve not applied");
        pool.add(m);
      } else if (dice < 42) {
        op = "reserve_lines";
        const int lines = 2 + static_cast<int>(rng() % 3);
        std::ostringstream json;
        json << "[";
        for (int i = 0; i < lines; ++i)
          json << (i ? ", " : "") << "{\"sku\": \"" << sku()
               << "\", \"quantity\": " << 1 + rng() % 3 << "}";
        json << "]";
        Made m{key, true, "", json.str(), 0};
        auto o = pgi::outcome_of(tx.exec_params(
          "SELECT * FROM inventory.reserve_lines('acme', $1, $2::jsonb,"
          " $3::interval)",
          key, m.json, ttl(rng)));
        tally.statuses[op + ":" + o.status]++;
        if (!o.applied)
          tally.wrong.push_back("first reserve_lines not applied");
        pool.add(m);
      } else if (dice < 70) {
        auto m = pool.pick(rng);
        if (!m) continue;
        const unsigned which = rng() % 10;
        op = which < 5 ? "confirm" : which < 8 ? "cancel" : "compensate";
        pqxx::result r;
        if (op == "confirm")
          r = tx.exec_params("SELECT * FROM inventory.confirm('acme', $1)",
                             m->key);
        else
          r = tx.exec_params("SELECT * FROM inventory." + op +
                               "('acme', $1, $2)",
                             m->key, "soak " + op);
        tally.statuses[op + ":" + pgi::outcome_of(r).status]++;
      } else if (dice < 76) {
        auto m = pool.pick(rng);
        if (!m) continue;
        op = "replay";
        pqxx::result r =
          m->lines ? tx.exec_params("SELECT * FROM inventory.reserve_lines("
                                    "'acme', $1, $2::jsonb)",
                                    m->key, m->json)
                   : tx.exec_params("SELECT * FROM inventory.reserve("
                                    "'acme', $1, $2, $3::integer)",
                                    m->key, m->sku, m->quantity);
        auto o = pgi::outcome_of(r);
        tally.statuses[op + ":" + o.status]++;
        if (o.applied)
          tally.wrong.push_back("replay of " + m->key + " applied");
      } else if (dice < 86) {
        op = "expire_due";
        tx.exec("SELECT inventory.expire_due(20)");
      } else if (dice < 94) {
        op = "restock";
        tx.exec_params("SELECT inventory.restock('acme', $1, $2,"
                       " $3::integer)",
                       key, sku(), 1 + static_cast<int>(rng() % 8));
      } else {
        op = "adjust";
        const bool loss = rng() % 2 == 0;
        tx.exec_params("SELECT inventory.adjust('acme', $1, $2, $3::bigint,"
                       " $4, 'soak')",
                       key, sku(),
                       loss ? -1 - static_cast<long>(rng() % 3)
                            : 1 + static_cast<long>(rng() % 3),
                       loss ? "loss" : "return");
      }
      tally.ops[op]++;
    } catch (const std::exception &e) {
      tally.ops[op]++;
      tally.errors[pgi::error_code(e)]++;
      if (dynamic_cast<const pqxx::broken_connection *>(&e)) return;
    }
  }
}

} // namespace

// Row 4: bounded soak under contention, invariants checked during the run.
TEST(FaultMatrix, SoakKeepsInvariantsUnderContention) {
  PGI_REQUIRE_SERVER();
  const int seconds = std::stoi(pgi::env_or("SOAK_SECONDS", "10"));
  ASSERT_GT(seconds, 0);
  TestDatabase db{"soak"};
  {
    auto cx = db.connect();
    for (const char *sku : kSkus)
      pgi::exec(*cx, std::string{"SELECT inventory.restock('acme', 'init-"} +
                       sku + "', '" + sku + "', 60)");
  }

  std::atomic<bool> stop{false};
  Pool pool;
  std::vector<Tally> tallies(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back(client, std::cref(db), i, std::ref(stop),
                         std::ref(pool), std::ref(tallies[i]));

  // the checker: check_invariants() over and over while the load runs
  long checks = 0;
  std::vector<std::string> violations;
  std::string checker_error;
  std::thread checker{[&] {
    try {
      auto cx = db.connect();
      while (!stop.load()) {
        auto rows = pgi::invariant_violations(*cx);
        ++checks;
        if (!rows.empty() && violations.size() < 20)
          violations.insert(violations.end(), rows.begin(), rows.end());
      }
    } catch (const std::exception &e) {
      checker_error = pgi::error_code(e);
    }
  }};

  std::this_thread::sleep_for(std::chrono::seconds{seconds}); // the run
  stop = true;
  for (auto &t : clients) t.join();
  checker.join();

  Tally total;
  for (const auto &t : tallies) total.merge(t);
  long operations = 0;
  for (const auto &[op, count] : total.ops) operations += count;

  EXPECT_EQ(checker_error, "");
  EXPECT_GT(checks, 0);
  EXPECT_EQ(violations, std::vector<std::string>{})
    << "check_invariants() found violations during the run";
  EXPECT_EQ(total.wrong, std::vector<std::string>{});
  EXPECT_EQ(total.errors.count("40P01"), 0u) << "deadlocks";
  EXPECT_EQ(total.errors.count("40001"), 0u) << "serialization failures";
  for (const auto &[code, count] : total.errors)
    if (code != "IN003")
      ADD_FAILURE() << count << " calls failed with " << code;
  // the load was real: contention produced every kind of outcome
  EXPECT_GT(total.statuses["reserve:reserved"] +
              total.statuses["reserve_lines:reserved"],
            0);
  EXPECT_GT(total.statuses["confirm:confirmed"], 0);

  // the end: expire what is due, then account for everything
  auto cx = db.connect();
  long long due_left = 0, expired_at_end = 0;
  {
    pqxx::nontransaction tx{*cx};
    const std::string before =
      tx.exec1("SELECT clock_timestamp()")[0].as<std::string>();
    expired_at_end =
      tx.exec1("SELECT inventory.expire_due(1000000)")[0].as<long long>();
    due_left = tx.exec_params1("SELECT count(*) FROM inventory.reservation"
                               " WHERE state = 'pending'"
                               "   AND expires_at <= $1::timestamptz",
                               before)[0]
                 .as<long long>();
  }
  EXPECT_EQ(due_left, 0) << "expire_due left due reservations pending";
  EXPECT_EQ(pgi::accounting_mismatches(*cx), std::vector<std::string>{});
  EXPECT_EQ(pgi::invariant_violations(*cx), std::vector<std::string>{});

  std::map<std::string, long long> states;
  {
    pqxx::nontransaction tx{*cx};
    for (const auto &row : tx.exec("SELECT state, count(*)"
                                   " FROM inventory.reservation GROUP BY 1"))
      states[row[0].as<std::string>()] = row[1].as<long long>();
  }
  std::cout << "[soak] " << kClients << " clients, " << seconds
            << " s: " << operations << " operations, " << checks
            << " invariant checks during the run (all empty)\n[soak] by op:";
  for (const auto &[op, count] : total.ops)
    std::cout << " " << op << "=" << count;
  std::cout << "\n[soak] outcomes:";
  for (const auto &[s, count] : total.statuses)
    std::cout << " " << s << "=" << count;
  std::cout << "\n[soak] errors by SQLSTATE:";
  for (const auto &[code, count] : total.errors)
    std::cout << " " << code << "=" << count;
  std::cout << "\n[soak] reservations at the end:";
  for (const auto &[s, count] : states) std::cout << " " << s << "=" << count;
  std::cout << " (" << expired_at_end << " expired by the final expire_due)"
            << std::endl;
}
