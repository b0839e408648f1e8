// test/faults/caller_restored_test.cpp: errors leave the caller as it was,
// seen from a client program (README section 4, "Errors leave the caller
// as it was"; section 8, "Pattern").
//
// The functions run their statements as the extension's owner.  Whatever
// error a call raises, the role in effect afterwards is the caller's, and a
// caller that catches the error goes on in its own transaction as if the
// call had never started.  Here the caller is a client program connected as
// an application role (LOGIN, USAGE on the schema, EXECUTE on the
// reservation functions, a grant of tenant acme, nothing else): BEGIN, its
// own work, SAVEPOINT, a reserve of a slotted SKU (4 slots, so the slot
// fast path and its internal subtransaction run) that fails, ROLLBACK TO
// SAVEPOINT.  Then the session is still the application role (current_user,
// session_user), cannot read pg_authid nor write the extension's tables,
// the failed call left nothing (no row, no lock), more work goes through,
// and COMMIT keeps the work done before and after the savepoint.
//
// The failures are real, each stopped where it waits (no sleeps):
//  - a serialization failure injected inside the fast path's internal
//    subtransaction (pg_inventory.test_fault = 'slot_take:40001', set for
//    the role by a superuser with ALTER ROLE ... SET);
//  - at the pause point (pg_inventory.test_pause_lock, set the same way,
//    while the test holds the advisory lock), after the fast path took its
//    slot: pg_cancel_backend, a real statement_timeout, a real lock_timeout;
//  - every slot of the SKU row-locked by a second session: the fast path
//    finds no free slot, its subtransaction is rolled back, the fallback
//    waits for the slots: lock_timeout, statement_timeout;
//  - the slot table share-locked by a second session (LOCK TABLE ... IN
//    SHARE MODE): the fast path's statement waits for its table lock inside
//    the internal subtransaction: pg_cancel_backend, statement_timeout,
//    lock_timeout.
// Most of them are also caught the other way applications catch errors: a
// PL/pgSQL EXCEPTION block in the application's own function.  (ROLLBACK TO
// SAVEPOINT unwinds every subtransaction down to the savepoint, so only the
// EXCEPTION block notices an internal subtransaction that an error left
// open: with the 0.3 fast path, the block went on as the owner and
// committed a half-written reservation.)
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"
#include "support/pause.h"
#include "support/role.h"

#include <future>
#include <optional>

using namespace pgi::test;

namespace {

constexpr int kPauseKey = 4343;

/// What keeps the failing call waiting.
enum class Blocker {
  none,        // nothing: the fault fires at once
  pause_point, // the test holds the pause point's advisory lock
  slot_rows,   // a second session holds every slot of the SKU FOR UPDATE
  slot_table,  // a second session holds the slot table IN SHARE MODE
};

/// What makes the call fail.
enum class Breaker { fault, cancel, statement_timeout, lock_timeout };

/// How the caller catches the error.
enum class Catch {
  savepoint, // SAVEPOINT, the call, ROLLBACK TO SAVEPOINT
  plpgsql,   // the call inside a PL/pgSQL EXCEPTION block (the
             // application's own function, SECURITY INVOKER)
};

struct Scenario {
  std::string slug; // of the database and the role
  Blocker blocker;
  Breaker breaker;
  Catch catcher;
  std::string code;       // the SQLSTATE the caller gets
  std::string message;    // part of the server's message
  std::string context;    // part of its CONTEXT, "" for none
  std::string wait_event; // wait_event_type:wait_event while it waits
};

/// Runs SQL on the application's connection: "" or "CODE\nmessage".
std::string failure_of(pqxx::connection &cx, const std::string &sql) {
  try {
    exec(cx, sql);
  } catch (const std::exception &e) {
    return error_code(e) + "\n" + e.what();
  }
  return "";
}

/// The SQLSTATE part of failure_of().
std::string code_part(const std::string &failure) {
  return failure.substr(0, failure.find('\n'));
}

/// "wait_event_type:wait_event" of backend PID, "" when it does not wait.
std::string wait_event_of(pqxx::connection &ctl, int pid) {
  pqxx::nontransaction tx{ctl};
  auto r = tx.exec_params("SELECT coalesce(wait_event_type || ':' ||"
                          " wait_event, '')"
                          " FROM pg_catalog.pg_stat_activity WHERE pid = $1",
                          pid);
  return r.empty() ? "" : r[0][0].as<std::string>();
}

/// Tries to lock the slots of acme's SKU from a new session without
/// waiting: "" when it got them, 55P03 when someone holds one.
std::string lock_slots_nowait(const TestDatabase &db, const std::string &sku) {
  auto cx = db.connect();
  return code_of([&] {
    pqxx::work tx{*cx};
    tx.exec_params("SELECT 1 FROM inventory.stock_slot"
                   " WHERE tenant = 'acme' AND sku = $1 FOR UPDATE NOWAIT",
                   sku);
    tx.commit();
  });
}

/// The status of a reservation call's outcome, on the application's
/// connection.
std::string status_of(pqxx::connection &cx, const std::string &sql) {
  return outcome_of(exec(cx, sql)).status;
}

void run(const Scenario &sc) {
  TestDatabase db{"fault_caller_" + sc.slug};
  TestRole app{db, "fault_caller_" + sc.slug};
  auto ctl = db.connect();
  const std::string role = app.name();

  // the application role: its functions, its tenant, its own table
  exec(*ctl, "GRANT USAGE ON SCHEMA inventory TO " + role);
  exec(*ctl, "GRANT EXECUTE ON FUNCTION"
             " inventory.reserve(text, text, text, integer, interval),"
             " inventory.reserve_lines(text, text, jsonb, interval),"
             " inventory.confirm(text, text), inventory.cancel(text, text,"
             " text), inventory.lookup(text, text) TO " +
               role);
  exec(*ctl, "SELECT inventory.grant_tenant('acme', '" + role + "')");
  exec(*ctl, "CREATE TABLE public.app_work (n integer, done_as name)");
  exec(*ctl, "GRANT INSERT, SELECT ON public.app_work TO " + role);
  // the application's own wrapper: runs a call, catches any error (a
  // cancel too) and returns "SQLSTATE\nmessage\nCONTEXT: context"
  exec(*ctl, R"SQL(
CREATE FUNCTION public.app_try(call text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  context text;
BEGIN
  EXECUTE call;
  RETURN '';
EXCEPTION WHEN OTHERS OR query_canceled THEN
  GET STACKED DIAGNOSTICS context = PG_EXCEPTION_CONTEXT;
  RETURN SQLSTATE || E'\n' || SQLERRM || E'\nCONTEXT: ' || context;
END
$$)SQL");
  exec(*ctl, "GRANT EXECUTE ON FUNCTION public.app_try(text) TO " + role);
  // S: 100 units over 4 slots; A: 100 units in one slot
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-S', 'S', 100)");
  exec(*ctl, "SELECT inventory.set_stock_slots('acme', 'S', 4)");
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-A', 'A', 100)");
  exec(*ctl, "SELECT inventory.reserve('acme', 'earlier', 'A', 1)");
  if (sc.breaker == Breaker::fault)
    exec(*ctl, "ALTER ROLE " + role +
                 " SET pg_inventory.test_fault = 'slot_take:40001'");
  if (sc.blocker == Blocker::pause_point)
    exec(*ctl, "ALTER ROLE " + role + " SET pg_inventory.test_pause_lock = " +
                 std::to_string(kPauseKey));
  const auto counts_before = table_counts(*ctl);
  const auto s_before = stock_counts(*ctl, "acme", "S");
  const auto a_before = stock_counts(*ctl, "acme", "A");
  ASSERT_EQ(s_before, (StockCounts{true, 100, 0, 0}));

  // the client program, as the application role
  auto cx = app.connect();
  const int pid = cx->backendpid();
  if (sc.breaker == Breaker::fault) {
    // the superuser's setting is in effect in the role's session
    ASSERT_EQ(
      exec(*cx, "SHOW pg_inventory.test_fault")[0][0].as<std::string>(),
      "slot_take:40001");
  }
  // with the slot table locked, the caller's own earlier work must not
  // touch it (it would wait for the lock itself); with the fault set,
  // every stock change of the role fails
  const bool reserve_before =
    sc.breaker != Breaker::fault && sc.blocker != Blocker::slot_table;
  const bool reserve_after = sc.breaker != Breaker::fault;

  exec(*cx, "BEGIN");
  exec(*cx, "INSERT INTO public.app_work VALUES (1, current_user)");
  if (reserve_before) {
    EXPECT_EQ(status_of(*cx, "SELECT * FROM inventory.reserve("
                             "'acme', 'before', 'A', 2)"),
              "reserved");
  } else {
    EXPECT_EQ(status_of(*cx, "SELECT * FROM inventory.lookup("
                             "'acme', 'earlier')"),
              "reserved");
  }
  const bool savepoint = sc.catcher == Catch::savepoint;
  if (savepoint) exec(*cx, "SAVEPOINT before_call");
  if (sc.breaker == Breaker::statement_timeout)
    exec(*cx, "SET LOCAL statement_timeout = '1s'");
  if (sc.breaker == Breaker::lock_timeout)
    exec(*cx, "SET LOCAL lock_timeout = '1s'");

  // what keeps the call waiting
  std::optional<AdvisoryLock> pause;
  std::unique_ptr<pqxx::connection> holder;
  if (sc.blocker == Blocker::pause_point) pause.emplace(*ctl, kPauseKey);
  if (sc.blocker == Blocker::slot_rows) {
    holder = db.connect();
    exec(*holder, "BEGIN");
    ASSERT_EQ(exec(*holder, "SELECT 1 FROM inventory.stock_slot"
                            " WHERE tenant = 'acme' AND sku = 'S' FOR UPDATE")
                .size(),
              4u);
  }
  if (sc.blocker == Blocker::slot_table) {
    holder = db.connect();
    exec(*holder, "BEGIN");
    exec(*holder, "LOCK TABLE inventory.stock_slot IN SHARE MODE");
  }

  // the call that fails
  auto call = std::async(std::launch::async, [&] {
    const std::string reserve =
      "SELECT * FROM inventory.reserve('acme', 'failed', 'S', 1)";
    if (savepoint) return failure_of(*cx, reserve);
    try {
      return exec(*cx, "SELECT public.app_try($$" + reserve + "$$)")[0][0]
        .as<std::string>();
    } catch (const std::exception &e) {
      return "not caught: " + error_code(e) + "\n" + e.what();
    }
  });
  auto done = [&] {
    return !call.valid() ||
           call.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
  };
  // should anything below throw before the call ended, end its backend, so
  // that the future's destructor never waits on a blocked call
  struct EndIfRunning {
    const TestDatabase &db;
    int pid;
    std::function<bool()> done;
    ~EndIfRunning() {
      if (done()) return;
      try {
        auto cx = db.connect();
        terminate_backend(*cx, pid);
      } catch (const std::exception &) {
      }
    }
  } end_if_running{db, pid, done};
  if (!sc.wait_event.empty()) {
    std::string seen;
    poll_until([&] {
      seen = wait_event_of(*ctl, pid);
      return seen == sc.wait_event || done();
    });
    EXPECT_EQ(seen, sc.wait_event) << "the call never waited where expected";
    if (sc.blocker == Blocker::pause_point && seen == sc.wait_event) {
      // stopped after the fast path took a slot of S, holding it
      EXPECT_EQ(lock_slots_nowait(db, "S"), "55P03");
    }
  }
  if (sc.breaker == Breaker::cancel) {
    EXPECT_TRUE(cancel_backend(*ctl, pid));
  }
  const std::string failure = call.get();
  ASSERT_EQ(code_part(failure), sc.code) << failure;
  EXPECT_NE(failure.find(sc.message), std::string::npos) << failure;
  if (!sc.context.empty()) {
    EXPECT_NE(failure.find("CONTEXT:"), std::string::npos) << failure;
    EXPECT_NE(failure.find(sc.context), std::string::npos) << failure;
  }
  pause.reset();
  if (holder) exec(*holder, "ROLLBACK");

  // the caller catches the error and goes on as itself
  if (savepoint) {
    ASSERT_EQ(failure_of(*cx, "ROLLBACK TO SAVEPOINT before_call"), "");
  } else {
    exec(*cx, "SET LOCAL statement_timeout = DEFAULT;"
              " SET LOCAL lock_timeout = DEFAULT");
  }
  auto who = exec(*cx, "SELECT current_user::text, session_user::text");
  EXPECT_EQ(who[0][0].as<std::string>(), role);
  EXPECT_EQ(who[0][1].as<std::string>(), role);
  EXPECT_FALSE(exec(*cx, "SELECT has_table_privilege("
                         "'pg_catalog.pg_authid', 'SELECT')")[0][0]
                 .as<bool>());
  exec(*cx, "SAVEPOINT probe");
  EXPECT_EQ(code_part(failure_of(*cx, "SELECT count(*) FROM"
                                      " pg_catalog.pg_authid")),
            "42501");
  exec(*cx, "ROLLBACK TO SAVEPOINT probe");
  EXPECT_EQ(code_part(failure_of(*cx, "UPDATE inventory.stock_slot"
                                      " SET available = available + 1")),
            "42501");
  exec(*cx, "ROLLBACK TO SAVEPOINT probe");
  // the failed call left nothing: no reservation, no lock on S (the
  // caller's transaction is still open, its own work still locked)
  EXPECT_EQ(status_of(*cx, "SELECT * FROM inventory.lookup("
                           "'acme', 'failed')"),
            "not_found");
  EXPECT_EQ(lock_slots_nowait(db, "S"), "");
  if (reserve_before) {
    EXPECT_EQ(lock_slots_nowait(db, "A"), "55P03");
  }

  // more work in the same transaction, then COMMIT
  exec(*cx, "INSERT INTO public.app_work VALUES (2, current_user)");
  if (reserve_after) {
    auto o = outcome_of(
      exec(*cx, "SELECT * FROM inventory.reserve('acme', 'after', 'S', 3)"));
    EXPECT_EQ(o.status, "reserved");
    EXPECT_TRUE(o.applied);
  }
  ASSERT_EQ(failure_of(*cx, "COMMIT"), "");
  EXPECT_EQ(exec(*cx, "SELECT current_user::text")[0][0].as<std::string>(),
            role);
  EXPECT_EQ(code_part(failure_of(*cx, "SELECT 1 FROM pg_catalog.pg_authid")),
            "42501");

  // what the commit kept: the caller's work, before and after the
  // savepoint, and nothing of the failed call
  EXPECT_EQ(text_rows(*ctl, "SELECT n || ' ' || done_as FROM public.app_work"
                            " ORDER BY n"),
            (std::vector<std::string>{"1 " + role, "2 " + role}));
  const long long made = (reserve_before ? 1 : 0) + (reserve_after ? 1 : 0);
  auto counts_after = counts_before;
  for (const char *t :
       {"reservation", "reservation_line", "reservation_transition", "outbox"})
    counts_after[t] += made;
  EXPECT_EQ(table_counts(*ctl), counts_after);
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.reservation"
                         " WHERE request_key = 'failed'"),
            0);
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.outbox"
                         " WHERE payload->>'request_key' = 'failed'"),
            0);
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.reservation"
                         " WHERE request_key IN ('before', 'after')"
                         "   AND state = 'pending'"),
            made);
  EXPECT_EQ(
    stock_counts(*ctl, "acme", "S"),
    (StockCounts{true, reserve_after ? 97 : 100, reserve_after ? 3 : 0, 0}));
  EXPECT_EQ(stock_counts(*ctl, "acme", "A"),
            (StockCounts{true, a_before.available - (reserve_before ? 2 : 0),
                         a_before.reserved + (reserve_before ? 2 : 0), 0}));
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.stock_slot"
                         " WHERE tenant = 'acme' AND sku = 'S'"),
            4);
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*ctl), std::vector<std::string>{});
}

} // namespace

// Row 6a: a serialization failure inside the fast path's subtransaction.
TEST(FaultMatrix, CallerRestoredAfterInjectedSerializationFailure) {
  PGI_REQUIRE(server);
  run({"fault_40001", Blocker::none, Breaker::fault, Catch::savepoint, "40001",
       "fault injected at step \"slot_take\"", "", ""});
}

// Row 6b: query cancel, statement_timeout and lock_timeout while the call
// waits at the pause point (after the fast path took its slot).
TEST(FaultMatrix, CallerRestoredAfterCancelAtPausePoint) {
  PGI_REQUIRE(server);
  run({"pause_cancel", Blocker::pause_point, Breaker::cancel, Catch::savepoint,
       "57014", "canceling statement due to user request", "",
       "Lock:advisory"});
}

TEST(FaultMatrix, CallerRestoredAfterStatementTimeoutAtPausePoint) {
  PGI_REQUIRE(server);
  run({"pause_stmt_timeout", Blocker::pause_point, Breaker::statement_timeout,
       Catch::savepoint, "57014",
       "canceling statement due to statement timeout", "", "Lock:advisory"});
}

TEST(FaultMatrix, CallerRestoredAfterLockTimeoutAtPausePoint) {
  PGI_REQUIRE(server);
  run({"pause_lock_timeout", Blocker::pause_point, Breaker::lock_timeout,
       Catch::savepoint, "55P03", "canceling statement due to lock timeout",
       "", "Lock:advisory"});
}

// Row 6c: every slot row-locked by another session: the fast path's
// subtransaction finds none and is rolled back, and the call waits for one
// busy slot that holds enough, inside a second internal subtransaction.
TEST(FaultMatrix, CallerRestoredAfterLockTimeoutOnHeldSlots) {
  PGI_REQUIRE(server);
  run({"rows_lock_timeout", Blocker::slot_rows, Breaker::lock_timeout,
       Catch::savepoint, "55P03", "canceling statement due to lock timeout",
       "pg_inventory statement \"wait for one slot\"",
       "Lock:transactionid"});
}

TEST(FaultMatrix, CallerRestoredAfterStatementTimeoutOnHeldSlots) {
  PGI_REQUIRE(server);
  run({"rows_stmt_timeout", Blocker::slot_rows, Breaker::statement_timeout,
       Catch::savepoint, "57014",
       "canceling statement due to statement timeout",
       "pg_inventory statement \"wait for one slot\"",
       "Lock:transactionid"});
}

// Row 6d: the slot table share-locked by another session: the fast path's
// statement (for a single-line reserve, the take with the records) waits
// inside the internal subtransaction.
TEST(FaultMatrix, CallerRestoredAfterCancelInsideSlotFastPath) {
  PGI_REQUIRE(server);
  run({"fast_cancel", Blocker::slot_table, Breaker::cancel, Catch::savepoint,
       "57014", "canceling statement due to user request",
       "pg_inventory statement \"take units from one free slot and record the reservation\"",
       "Lock:relation"});
}

TEST(FaultMatrix, CallerRestoredAfterStatementTimeoutInsideSlotFastPath) {
  PGI_REQUIRE(server);
  run({"fast_stmt_timeout", Blocker::slot_table, Breaker::statement_timeout,
       Catch::savepoint, "57014",
       "canceling statement due to statement timeout",
       "pg_inventory statement \"take units from one free slot and record the reservation\"",
       "Lock:relation"});
}

TEST(FaultMatrix, CallerRestoredAfterLockTimeoutInsideSlotFastPath) {
  PGI_REQUIRE(server);
  run({"fast_lock_timeout", Blocker::slot_table, Breaker::lock_timeout,
       Catch::savepoint, "55P03", "canceling statement due to lock timeout",
       "pg_inventory statement \"take units from one free slot and record the reservation\"",
       "Lock:relation"});
}

// Row 6e: the same failures caught by the application's PL/pgSQL EXCEPTION
// block instead of a client savepoint (the block's subtransaction is the
// one that must restore the caller, so an internal subtransaction left
// open by the error would leave the block running as the owner).
TEST(FaultMatrix, CallerRestoredInPlpgsqlAfterInjectedSerializationFailure) {
  PGI_REQUIRE(server);
  run({"plpgsql_40001", Blocker::none, Breaker::fault, Catch::plpgsql, "40001",
       "fault injected at step \"slot_take\"", "", ""});
}

TEST(FaultMatrix, CallerRestoredInPlpgsqlAfterCancelAtPausePoint) {
  PGI_REQUIRE(server);
  run({"plpgsql_pause_cancel", Blocker::pause_point, Breaker::cancel,
       Catch::plpgsql, "57014", "canceling statement due to user request", "",
       "Lock:advisory"});
}

TEST(FaultMatrix, CallerRestoredInPlpgsqlAfterLockTimeoutOnHeldSlots) {
  PGI_REQUIRE(server);
  run({"plpgsql_rows_lock_timeout", Blocker::slot_rows, Breaker::lock_timeout,
       Catch::plpgsql, "55P03", "canceling statement due to lock timeout",
       "pg_inventory statement \"wait for one slot\"",
       "Lock:transactionid"});
}

TEST(FaultMatrix, CallerRestoredInPlpgsqlAfterCancelInsideSlotFastPath) {
  PGI_REQUIRE(server);
  run({"plpgsql_fast_cancel", Blocker::slot_table, Breaker::cancel,
       Catch::plpgsql, "57014", "canceling statement due to user request",
       "pg_inventory statement \"take units from one free slot and record the reservation\"",
       "Lock:relation"});
}

TEST(FaultMatrix,
     CallerRestoredInPlpgsqlAfterStatementTimeoutInsideSlotFastPath) {
  PGI_REQUIRE(server);
  run({"plpgsql_fast_stmt_timeout", Blocker::slot_table,
       Breaker::statement_timeout, Catch::plpgsql, "57014",
       "canceling statement due to statement timeout",
       "pg_inventory statement \"take units from one free slot and record the reservation\"",
       "Lock:relation"});
}

TEST(FaultMatrix, CallerRestoredInPlpgsqlAfterLockTimeoutInsideSlotFastPath) {
  PGI_REQUIRE(server);
  run({"plpgsql_fast_lock_timeout", Blocker::slot_table, Breaker::lock_timeout,
       Catch::plpgsql, "55P03", "canceling statement due to lock timeout",
       "pg_inventory statement \"take units from one free slot and record the reservation\"",
       "Lock:relation"});
}
