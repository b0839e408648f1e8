// test/faults/mid_transaction_test.cpp: a call that fails in the middle of
// its transaction (backend terminated, query cancelled) changes nothing.
//
// The pause point (pg_inventory.test_pause_lock) stops the victim's call
// right after it updated the stock rows: it holds their row locks and has
// written part of its change.  The test sees it waiting in pg_locks, proves
// the stock row is locked (FOR UPDATE NOWAIT fails with 55P03), then kills
// or cancels it and checks that every row, counter and event is as before,
// and that the lock is gone (NOWAIT succeeds, a new call goes through).
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"
#include "support/pause.h"

using namespace pgi::test;

namespace {

constexpr int kPauseKey = 4242;

/// Tries to lock the stock slots of (tenant, sku) without waiting, from a
/// new session: "" when it got the locks, 55P03 when someone holds one.
std::string lock_stock_nowait(const TestDatabase &db,
                              const std::string &tenant,
                              const std::string &sku) {
  auto cx = db.connect();
  return code_of([&] {
    pqxx::work tx{*cx};
    tx.exec_params("SELECT 1 FROM inventory.stock_slot"
                   " WHERE tenant = $1 AND sku = $2 FOR UPDATE NOWAIT",
                   tenant, sku);
    tx.commit();
  });
}

/// Events whose payload names request key KEY of TENANT.
long long events_for_key(pqxx::connection &cx, const std::string &tenant,
                         const std::string &key) {
  pqxx::nontransaction tx{cx};
  return tx
    .exec_params1("SELECT count(*) FROM inventory.outbox"
                  " WHERE tenant = $1 AND payload->>'request_key' = $2",
                  tenant, key)[0]
    .as<long long>();
}

/// Waits until the victim is stopped at the pause point.
::testing::AssertionResult paused(pqxx::connection &ctl, int pid) {
  if (poll_until([&] { return waiting_on_advisory(ctl, pid, kPauseKey); }))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "backend " << pid << " never waited on advisory lock " << kPauseKey
         << " (the pause point)";
}

} // namespace

// Row 1a: terminate the backend while reserve holds the stock row lock.
TEST(FaultMatrix, TerminateDuringReserveRollsBackEverything) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_terminate_reserve"};
  auto ctl = db.connect();
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-1', 'A', 10)");
  const auto counts_before = table_counts(*ctl);
  const auto stock_before = stock_counts(*ctl, "acme", "A");
  ASSERT_EQ(stock_before, (StockCounts{true, 10, 0, 0}));

  AdvisoryLock lock{*ctl, kPauseKey};
  PausedCall victim{db, kPauseKey, [](pqxx::connection &cx) {
                      pqxx::nontransaction tx{cx};
                      tx.exec_params("SELECT * FROM inventory.reserve("
                                     "$1, $2, $3, $4::integer)",
                                     "acme", "order-1", "A", 3);
                    }};
  ASSERT_TRUE(paused(*ctl, victim.pid()));
  // stopped with its stock row lock held and its writes not committed
  EXPECT_EQ(lock_stock_nowait(db, "acme", "A"), "55P03");
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"), stock_before);

  ASSERT_TRUE(terminate_backend(*ctl, victim.pid()));
  EXPECT_EQ(victim.result(), "broken_connection");

  // nothing of the call is left
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"), stock_before);
  EXPECT_EQ(table_counts(*ctl), counts_before);
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.reservation"
                         " WHERE request_key = 'order-1'"),
            0);
  EXPECT_EQ(events_for_key(*ctl, "acme", "order-1"), 0);
  {
    pqxx::nontransaction tx{*ctl};
    auto o =
      outcome_of(tx.exec("SELECT * FROM inventory.lookup('acme', 'order-1')"));
    EXPECT_EQ(o.status, "not_found");
  }
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*ctl), std::vector<std::string>{});

  // the row lock went with the backend: another session goes straight on,
  // and the same key is free again
  EXPECT_EQ(lock_stock_nowait(db, "acme", "A"), "");
  auto other = db.connect();
  exec(*other, "SET lock_timeout = '5s'");
  pqxx::nontransaction tx{*other};
  auto o = outcome_of(
    tx.exec_params("SELECT * FROM inventory.reserve($1, $2, $3, $4::integer)",
                   "acme", "order-1", "A", 3));
  EXPECT_EQ(o.status, "reserved");
  EXPECT_TRUE(o.applied);
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"), (StockCounts{true, 7, 3, 0}));
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
}

// Row 1b: cancel the query while confirm holds the stock row lock.
TEST(FaultMatrix, CancelDuringConfirmLeavesReservationPending) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_cancel_confirm"};
  auto ctl = db.connect();
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-1', 'A', 10)");
  exec(*ctl, "SELECT inventory.reserve('acme', 'order-1', 'A', 4)");
  const auto counts_before = table_counts(*ctl);
  const auto stock_before = stock_counts(*ctl, "acme", "A");
  ASSERT_EQ(stock_before, (StockCounts{true, 6, 4, 0}));

  AdvisoryLock lock{*ctl, kPauseKey};
  std::string after_cancel; // the victim's own session, after the error
  PausedCall victim{db, kPauseKey, [&](pqxx::connection &cx) {
                      try {
                        pqxx::nontransaction tx{cx};
                        tx.exec("SELECT * FROM inventory.confirm("
                                "'acme', 'order-1')");
                      } catch (const std::exception &) {
                        // the session survives a cancel: it can go on
                        pqxx::nontransaction tx{cx};
                        tx.exec("RESET pg_inventory.test_pause_lock");
                        after_cancel =
                          outcome_of(tx.exec("SELECT * FROM"
                                             " inventory.confirm("
                                             "'acme', 'order-1')"))
                            .status;
                        throw;
                      }
                    }};
  ASSERT_TRUE(paused(*ctl, victim.pid()));
  EXPECT_EQ(lock_stock_nowait(db, "acme", "A"), "55P03");

  // read the state while the victim is stopped, before it is cancelled
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.reservation"
                         " WHERE request_key = 'order-1'"
                         "   AND state = 'pending' AND version = 1"),
            1);
  ASSERT_TRUE(cancel_backend(*ctl, victim.pid()));
  // 57014 query_canceled; the session then confirmed for real
  ASSERT_EQ(victim.result(), "57014");
  EXPECT_EQ(after_cancel, "confirmed");
  lock.release();

  // the cancelled attempt left nothing: exactly one confirmation happened
  auto counts_after = counts_before;
  counts_after["reservation_transition"] += 1; // the real confirm
  counts_after["outbox"] += 1;
  EXPECT_EQ(table_counts(*ctl), counts_after);
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"), (StockCounts{true, 6, 0, 4}));
  EXPECT_EQ(scalar(*ctl, "SELECT version FROM inventory.reservation"
                         " WHERE request_key = 'order-1'"),
            2);
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*ctl), std::vector<std::string>{});
}

// Row 1b': cancel during confirm, nothing else: the reservation stays
// pending with its units reserved, and another session confirms it at once.
TEST(FaultMatrix, CancelDuringConfirmChangesNothing) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_cancel_confirm_only"};
  auto ctl = db.connect();
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-1', 'A', 10)");
  exec(*ctl, "SELECT inventory.reserve('acme', 'order-1', 'A', 4)");
  const auto counts_before = table_counts(*ctl);
  const auto stock_before = stock_counts(*ctl, "acme", "A");

  AdvisoryLock lock{*ctl, kPauseKey};
  PausedCall victim{db, kPauseKey, [](pqxx::connection &cx) {
                      pqxx::nontransaction tx{cx};
                      tx.exec("SELECT * FROM inventory.confirm("
                              "'acme', 'order-1')");
                    }};
  ASSERT_TRUE(paused(*ctl, victim.pid()));
  ASSERT_TRUE(cancel_backend(*ctl, victim.pid()));
  ASSERT_EQ(victim.result(), "57014");

  EXPECT_EQ(table_counts(*ctl), counts_before);
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"), stock_before);
  {
    pqxx::nontransaction tx{*ctl};
    auto o =
      outcome_of(tx.exec("SELECT * FROM inventory.lookup('acme', 'order-1')"));
    EXPECT_EQ(o.status, "reserved");
    EXPECT_EQ(o.state, std::optional<std::string>{"pending"});
  }
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  EXPECT_EQ(lock_stock_nowait(db, "acme", "A"), "");

  auto other = db.connect();
  exec(*other, "SET lock_timeout = '5s'");
  pqxx::nontransaction tx{*other};
  auto o =
    outcome_of(tx.exec("SELECT * FROM inventory.confirm('acme', 'order-1')"));
  EXPECT_EQ(o.status, "confirmed");
  EXPECT_TRUE(o.applied);
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"), (StockCounts{true, 6, 0, 4}));
}

// Row 1c: terminate the backend during restock, of a known SKU and of a
// new one (restock creates the SKU: the half-made stock row must vanish).
TEST(FaultMatrix, TerminateDuringRestockRecordsNothing) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_terminate_restock"};
  auto ctl = db.connect();
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-1', 'A', 10)");
  const auto counts_before = table_counts(*ctl);
  const auto stock_before = stock_counts(*ctl, "acme", "A");

  for (const std::string sku : {"A", "NEW"}) {
    SCOPED_TRACE("restock of SKU " + sku);
    const std::string key = "rcpt-" + sku + "-2";
    AdvisoryLock lock{*ctl, kPauseKey};
    PausedCall victim{db, kPauseKey, [&](pqxx::connection &cx) {
                        pqxx::nontransaction tx{cx};
                        tx.exec_params("SELECT inventory.restock("
                                       "$1, $2, $3, $4::integer)",
                                       "acme", key, sku, 5);
                      }};
    ASSERT_TRUE(paused(*ctl, victim.pid()));
    if (sku == "A") {
      EXPECT_EQ(lock_stock_nowait(db, "acme", sku), "55P03");
    }
    ASSERT_TRUE(terminate_backend(*ctl, victim.pid()));
    EXPECT_EQ(victim.result(), "broken_connection");

    EXPECT_EQ(table_counts(*ctl), counts_before);
    EXPECT_EQ(stock_counts(*ctl, "acme", "A"), stock_before);
    EXPECT_FALSE(stock_counts(*ctl, "acme", "NEW").exists);
    EXPECT_EQ(events_for_key(*ctl, "acme", key), 0);
    EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  }

  // the lock is gone: a restock of A from another session goes through,
  // and the killed key was never recorded, so it is still free
  EXPECT_EQ(lock_stock_nowait(db, "acme", "A"), "");
  auto other = db.connect();
  exec(*other, "SET lock_timeout = '5s'");
  EXPECT_EQ(scalar(*other, "SELECT inventory.restock("
                           "'acme', 'rcpt-A-2', 'A', 5)"),
            15);
  EXPECT_EQ(scalar(*other, "SELECT inventory.restock("
                           "'acme', 'rcpt-NEW-2', 'NEW', 5)"),
            5);
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*ctl), std::vector<std::string>{});
}

// Row 1d: terminate a multi-line reserve_lines once it holds every line's
// stock row: all lines are released together.
TEST(FaultMatrix, TerminateDuringReserveLinesReleasesEveryLine) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_terminate_reserve_lines"};
  auto ctl = db.connect();
  for (const char *sku : {"A", "B", "C"})
    exec(*ctl, std::string{"SELECT inventory.restock('acme', 'rcpt-"} + sku +
                 "', '" + sku + "', 10)");
  const auto counts_before = table_counts(*ctl);

  AdvisoryLock lock{*ctl, kPauseKey};
  PausedCall victim{
    db, kPauseKey, [](pqxx::connection &cx) {
      pqxx::nontransaction tx{cx};
      tx.exec_params(
        "SELECT * FROM inventory.reserve_lines($1, $2, $3::jsonb)", "acme",
        "cart-1",
        R"([{"sku": "C", "quantity": 1}, {"sku": "A", "quantity": 2},)"
        R"( {"sku": "B", "quantity": 3}])");
    }};
  ASSERT_TRUE(paused(*ctl, victim.pid()));
  for (const char *sku : {"A", "B", "C"})
    EXPECT_EQ(lock_stock_nowait(db, "acme", sku), "55P03") << sku;
  ASSERT_TRUE(terminate_backend(*ctl, victim.pid()));
  EXPECT_EQ(victim.result(), "broken_connection");

  EXPECT_EQ(table_counts(*ctl), counts_before);
  for (const char *sku : {"A", "B", "C"}) {
    EXPECT_EQ(stock_counts(*ctl, "acme", sku), (StockCounts{true, 10, 0, 0}))
      << sku;
    EXPECT_EQ(lock_stock_nowait(db, "acme", sku), "") << sku;
  }
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
}
