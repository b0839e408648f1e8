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
//
// History retention (0.9): SoakWithHistoryPurgeKeepsInvariants runs the
// same load with a purger thread calling purge_history('500 milliseconds',
// 1000, archive => true) every 100 ms, so that whole rings of reservations are
// archived and truncated under the load (the rings of the reservations,
// lines and transition log, 0.9); the run must remove some, nothing else
// may change: invariants empty throughout, the accounting exact at the end
// (purged_confirmed carries the confirmed units), no deadlock or
// serialization failure.  A replay of a key whose reservation was removed
// makes a new reservation (README "purge_history"): allowed only for a key
// archived before the replay.
//
// Slotted stock (0.3): S1, S3 and S5 are split over 4 slots at the start
// (the others keep one), and an operator thread keeps changing the slot
// count of the hot SKU S1 between 1 and 8 (set_stock_slots) while the load
// runs, so reservations, transitions, restocks and adjustments race the
// split and the merge of slots.  No slot counter may ever be negative (the
// checker looks on every round), and at the end every SKU has exactly the
// slots 0 .. slots - 1 of inventory.sku and the view's totals are the sums
// of its slots.
#include "support.h" // src/common: pgi::env_or
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace pgi::test;

namespace {

constexpr int kClients = 8;
const char *const kSkus[] = {"S1", "S2", "S3", "S4", "S5"};
// split over kInitialSlots slots at the start; kHotSku's count keeps changing
const char *const kSlottedSkus[] = {"S1", "S3", "S5"};
constexpr int kInitialSlots = 4;
const char *const kHotSku = "S1";
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

/// Whether the archive holds key's reservation (purge_history wrote it).
bool archived(pqxx::nontransaction &tx, const std::string &key) {
  return tx
    .exec_params1("SELECT EXISTS (SELECT 1 FROM inventory.reservation_archive"
                  " WHERE tenant = 'acme' AND request_key = $1)",
                  key)[0]
    .as<bool>();
}

void client(const TestDatabase &db, int id, std::atomic<bool> &stop,
            Pool &pool, Tally &tally, bool purging) {
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
        auto o = outcome_of(tx.exec_params(
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
        auto o = outcome_of(tx.exec_params(
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
        tally.statuses[op + ":" + outcome_of(r).status]++;
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
        auto o = outcome_of(r);
        tally.statuses[op + ":" + o.status]++;
        if (o.applied && purging && archived(tx, m->key))
          tally.statuses["replay:new after purge"]++;
        else if (o.applied)
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
      tally.errors[error_code(e)]++;
      if (dynamic_cast<const pqxx::broken_connection *>(&e)) return;
    }
  }
}

/// Slot counters that are negative, one string each (empty: none).
std::vector<std::string> negative_slots(pqxx::connection &cx) {
  return text_rows(cx, "SELECT format('slot %s/%s/%s: available %s reserved %s"
                       " consumed %s', tenant, sku, slot, available, reserved,"
                       " consumed) FROM inventory.stock_slot"
                       " WHERE available < 0 OR reserved < 0 OR consumed < 0"
                       " ORDER BY tenant, sku, slot");
}

/// Per SKU, in one snapshot: slots numbered 0 .. sku.slots - 1 exactly, and
/// the view's totals equal to the sums over the slots; one string per
/// mismatch (empty: consistent).
std::vector<std::string> slot_mismatches(pqxx::connection &cx) {
  static const char *const sql = R"SQL(
SELECT format('sku %s/%s: slots %s, slot rows %s (numbers %s..%s); view %s/%s/%s,'
              ' slot sums %s/%s/%s', k.tenant, k.sku, k.slots, t.n, t.lo, t.hi,
              v.available, v.reserved, v.consumed, t.a, t.r, t.c)
  FROM inventory.sku k
  JOIN inventory.stock v ON v.tenant = k.tenant AND v.sku = k.sku
  CROSS JOIN LATERAL (
    SELECT count(*) AS n, min(s.slot) AS lo, max(s.slot) AS hi,
           coalesce(sum(s.available), 0) AS a, coalesce(sum(s.reserved), 0) AS r,
           coalesce(sum(s.consumed), 0) AS c
      FROM inventory.stock_slot s
     WHERE s.tenant = k.tenant AND s.sku = k.sku) t
 WHERE t.n <> k.slots OR t.lo <> 0 OR t.hi <> k.slots - 1
    OR v.available <> t.a OR v.reserved <> t.r OR v.consumed <> t.c
 ORDER BY k.tenant, k.sku
)SQL";
  return text_rows(cx, sql);
}

/// The operator: changes the hot SKU's slot count between 1 and 8 again and
/// again while the load runs (a short pause between calls, so that the
/// clients see every count for a while).  Counts the changes; any error
/// is recorded by SQLSTATE.
void slot_operator(const TestDatabase &db, std::atomic<bool> &stop,
                   std::atomic<long> &changes, std::map<int, long> &counts_set,
                   std::map<std::string, long> &errors) {
  try {
    auto cx = db.connect();
    pqxx::nontransaction tx{*cx};
    std::mt19937 rng{4242};
    while (!stop.load()) {
      const int slots = 1 + static_cast<int>(rng() % 8);
      try {
        tx.exec_params("SELECT inventory.set_stock_slots('acme', $1,"
                       " $2::integer)",
                       kHotSku, slots);
        ++changes;
        ++counts_set[slots];
      } catch (const std::exception &e) {
        errors[error_code(e)]++;
        if (dynamic_cast<const pqxx::broken_connection *>(&e)) return;
      }
      std::this_thread::sleep_for(20ms); // pacing, not synchronisation
    }
  } catch (const std::exception &e) {
    errors[error_code(e)]++;
  }
}


/// The history purger: purge_history with a retention of 500 ms (a ring
/// waits that long after its last change: the clients keep changing the
/// reservations of the last seconds) and archive,
/// every 100 ms, while the load runs (0.9: a ring at a time).  Counts the
/// reservations removed; any error is recorded by SQLSTATE.
void history_purger(const TestDatabase &db, std::atomic<bool> &stop,
                    std::atomic<long> &removed,
                    std::map<std::string, long> &errors) {
  try {
    auto cx = db.connect();
    pqxx::nontransaction tx{*cx};
    while (!stop.load()) {
      try {
        removed += tx.exec1("SELECT inventory.purge_history('500 milliseconds',"
                            " 1000, archive => true)")[0]
                     .as<long>();
      } catch (const std::exception &e) {
        errors[error_code(e)]++;
        if (dynamic_cast<const pqxx::broken_connection *>(&e)) return;
      }
      std::this_thread::sleep_for(100ms); // pacing, not synchronisation
    }
  } catch (const std::exception &e) {
    errors[error_code(e)]++;
  }
}

/// The soak (see the file's comment); with purging, beside a history purger.
void run_soak(bool purging) {
  const int seconds = std::stoi(pgi::env_or("SOAK_SECONDS", "10"));
  ASSERT_GT(seconds, 0);
  TestDatabase db{purging ? "fault_soak_purge" : "fault_soak"};
  {
    auto cx = db.connect();
    for (const char *sku : kSkus)
      exec(*cx, std::string{"SELECT inventory.restock('acme', 'init-"} + sku +
                  "', '" + sku + "', 60)");
    for (const char *sku : kSlottedSkus)
      exec(*cx, std::string{"SELECT inventory.set_stock_slots('acme', '"} +
                  sku + "', " + std::to_string(kInitialSlots) + ")");
    // 60 units spread evenly: 15 in each of the 4 slots
    ASSERT_EQ(scalar(*cx, "SELECT count(*) FROM inventory.stock_slot"
                          " WHERE tenant = 'acme' AND available = 15"),
              static_cast<long long>(std::size(kSlottedSkus)) * kInitialSlots);
    ASSERT_EQ(scalar(*cx, "SELECT count(*) FROM inventory.stock"
                          " WHERE tenant = 'acme' AND slots = " +
                            std::to_string(kInitialSlots)),
              static_cast<long long>(std::size(kSlottedSkus)));
  }

  std::atomic<bool> stop{false};
  Pool pool;
  std::vector<Tally> tallies(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back(client, std::cref(db), i, std::ref(stop),
                         std::ref(pool), std::ref(tallies[i]), purging);
  std::atomic<long> purged{0};
  std::map<std::string, long> purger_errors;
  std::optional<std::thread> purger;
  if (purging)
    purger.emplace(history_purger, std::cref(db), std::ref(stop),
                   std::ref(purged), std::ref(purger_errors));
  std::atomic<long> slot_changes{0};
  std::map<int, long> slot_counts_set;
  std::map<std::string, long> operator_errors;
  std::thread operator_thread{slot_operator,
                              std::cref(db),
                              std::ref(stop),
                              std::ref(slot_changes),
                              std::ref(slot_counts_set),
                              std::ref(operator_errors)};

  // the checker: check_invariants() and the slot counters over and over
  // while the load runs
  long checks = 0;
  std::vector<std::string> violations;
  std::vector<std::string> negative_during_run;
  std::string checker_error;
  std::thread checker{[&] {
    try {
      auto cx = db.connect();
      while (!stop.load()) {
        auto rows = invariant_violations(*cx);
        ++checks;
        if (!rows.empty() && violations.size() < 20)
          violations.insert(violations.end(), rows.begin(), rows.end());
        auto negative = negative_slots(*cx);
        if (!negative.empty() && negative_during_run.size() < 20)
          negative_during_run.insert(negative_during_run.end(),
                                     negative.begin(), negative.end());
      }
    } catch (const std::exception &e) {
      checker_error = error_code(e);
    }
  }};

  std::this_thread::sleep_for(std::chrono::seconds{seconds}); // the run
  // on a busy machine the operator may not have changed the slots often
  // enough yet, or the purger removed no ring: the load goes on until they
  // have (at most a minute more)
  poll_until([&] { return slot_changes.load() > 10 &&
                          (!purging || purged.load() > 0); },
             std::chrono::seconds{60});
  stop = true;
  for (auto &t : clients) t.join();
  operator_thread.join();
  checker.join();
  if (purger) purger->join();

  Tally total;
  for (const auto &t : tallies) total.merge(t);
  long operations = 0;
  for (const auto &[op, count] : total.ops) operations += count;

  EXPECT_EQ(checker_error, "");
  EXPECT_GT(checks, 0);
  EXPECT_EQ(violations, std::vector<std::string>{})
    << "check_invariants() found violations during the run";
  EXPECT_EQ(negative_during_run, std::vector<std::string>{})
    << "negative slot counters during the run";
  // the operator really changed the hot SKU's slots, to several counts,
  // and never failed (no deadlock, no slot left unemptied)
  EXPECT_GT(slot_changes.load(), 10);
  EXPECT_GE(slot_counts_set.size(), 4u);
  EXPECT_EQ(operator_errors, (std::map<std::string, long>{}))
    << "set_stock_slots failed during the run";
  if (purging) {
    EXPECT_GT(purged.load(), 0) << "purge_history removed no ring";
    EXPECT_EQ(purger_errors, (std::map<std::string, long>{}))
      << "purge_history failed during the run";
  }
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
  EXPECT_EQ(accounting_mismatches(*cx), std::vector<std::string>{});
  EXPECT_EQ(invariant_violations(*cx), std::vector<std::string>{});
  EXPECT_EQ(negative_slots(*cx), std::vector<std::string>{});
  EXPECT_EQ(slot_mismatches(*cx), std::vector<std::string>{});
  // the SKUs split at the start are still split (only S1's count changed)
  EXPECT_EQ(scalar(*cx, "SELECT count(*) FROM inventory.sku"
                        " WHERE tenant = 'acme' AND slots > 1"
                        " AND sku IN ('S3', 'S5')"),
            2);

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
  std::cout << "\n[soak] set_stock_slots of " << kHotSku << ": "
            << slot_changes.load() << " changes, by count:";
  for (const auto &[n, count] : slot_counts_set)
    std::cout << " " << n << "=" << count;
  std::cout << "\n[soak] reservations at the end:";
  for (const auto &[s, count] : states) std::cout << " " << s << "=" << count;
  std::cout << " (" << expired_at_end << " expired by the final expire_due)";
  if (purging) std::cout << "; removed by purge_history: " << purged.load();
  std::cout << std::endl;
}

} // namespace

// Row 4: bounded soak under contention, invariants checked during the run;
// and the same beside purge_history (0.9).
TEST(FaultMatrix, SoakKeepsInvariantsUnderContention) {
  PGI_REQUIRE(server);
  run_soak(false);
}

TEST(FaultMatrix, SoakWithHistoryPurgeKeepsInvariants) {
  PGI_REQUIRE(server);
  run_soak(true);
}
