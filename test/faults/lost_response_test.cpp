// test/faults/lost_response_test.cpp: the server committed, the client
// never read the answer (its connection dropped), and the client retries.
//
// The client sends the call with libpq's asynchronous API (PQsendQueryParams)
// and never reads: the test waits until the commit is visible from another
// session, then closes the client's connection with PQfinish, so the
// answer is lost for good.  A new connection then asks lookup() and
// retries with the same key: the retry must report the stored outcome
// (applied = false, same reservation id) and the counts must have moved
// exactly once.
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"

#include <libpq-fe.h>

using namespace pgi::test;

namespace {

/// The database of one test (fault_<name>) and a control connection to it;
/// tenant acme has received 10 units of A (receipt rcpt-1).
struct Stocked {
  explicit Stocked(const std::string &name)
      : db{"fault_" + name}, ctl{db.connect()} {
    exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-1', 'A', 10)");
  }
  TestDatabase db;
  std::unique_ptr<pqxx::connection> ctl;
};

/// A query counting the rows of inventory.TABLE of tenant acme with request
/// key KEY (and AND_WHERE, when given).
std::string count_of(const std::string &table, const std::string &key,
                     const std::string &and_where = "") {
  return "SELECT count(*) FROM inventory." + table +
         " WHERE tenant = 'acme' AND request_key = '" + key + "'" +
         (and_where.empty() ? "" : " AND " + and_where);
}

/// Sends QUERY with text PARAMS on a new libpq connection to S's database,
/// waits until COMMITTED (run on S's control connection) is 1, and closes
/// the connection without reading a byte of the answer.
::testing::AssertionResult
send_and_drop(Stocked &s, const std::string &query,
              const std::vector<std::string> &params,
              const std::string &committed) {
  pqxx::connection &ctl = *s.ctl;
  PGconn *conn = PQconnectdb(s.db.conninfo().c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(conn);
    PQfinish(conn);
    return ::testing::AssertionFailure() << "connect: " << msg;
  }
  std::vector<const char *> values;
  for (const auto &p : params) values.push_back(p.c_str());
  if (PQsendQueryParams(conn, query.c_str(), static_cast<int>(values.size()),
                        nullptr, values.data(), nullptr, nullptr, 0) != 1) {
    std::string msg = PQerrorMessage(conn);
    PQfinish(conn);
    return ::testing::AssertionFailure() << "send: " << msg;
  }
  // the commit is observable from another session: wait for it, not for time
  const bool seen = poll_until([&] { return scalar(ctl, committed) == 1; });
  // never PQconsumeInput / PQgetResult: the answer is dropped unread
  PQfinish(conn);
  if (!seen)
    return ::testing::AssertionFailure()
           << "the call never committed: " << committed;
  return ::testing::AssertionSuccess();
}

/// What a row of the reservation holds, for comparisons.
struct Trail {
  long long transitions, events;
};

Trail trail(pqxx::connection &cx, long long id) {
  pqxx::nontransaction tx{cx};
  auto r = tx.exec_params1(
    "SELECT (SELECT count(*) FROM inventory.reservation_transition"
    "         WHERE reservation_id = $1),"
    "       (SELECT count(*) FROM inventory.outbox WHERE reservation_id = $1)",
    id);
  return {r[0].as<long long>(), r[1].as<long long>()};
}

} // namespace

// Row 2: the response of reserve, then of confirm, is lost after commit.
TEST(FaultMatrix, LostResponseAfterCommitRetriesIdempotently) {
  PGI_REQUIRE(server);
  Stocked s{"lost_response"};

  // reserve: committed, answer lost
  ASSERT_TRUE(send_and_drop(
    s, "SELECT * FROM inventory.reserve($1, $2, $3, $4::integer)",
    {"acme", "order-1", "A", "3"}, count_of("reservation", "order-1")));

  // the client comes back on a new connection
  auto cx = s.db.connect();
  pqxx::nontransaction tx{*cx};
  auto seen = outcome_of(tx.exec_params(
    "SELECT * FROM inventory.lookup($1, $2)", "acme", "order-1"));
  EXPECT_EQ(seen.status, "reserved");
  EXPECT_EQ(seen.state, std::optional<std::string>{"pending"});
  EXPECT_FALSE(seen.applied);
  ASSERT_TRUE(seen.reservation_id.has_value());
  const long long id = *seen.reservation_id;

  auto retry = outcome_of(
    tx.exec_params("SELECT * FROM inventory.reserve($1, $2, $3, $4::integer)",
                   "acme", "order-1", "A", 3));
  EXPECT_EQ(retry.status, "reserved");
  EXPECT_EQ(retry.state, std::optional<std::string>{"pending"});
  EXPECT_FALSE(retry.applied);
  EXPECT_EQ(retry.reservation_id, std::optional<long long>{id});
  EXPECT_EQ(retry.quantity, std::optional<long long>{3});
  // moved exactly once
  EXPECT_EQ(stock_counts(*s.ctl, "acme", "A"), (StockCounts{true, 7, 3, 0}));
  auto t = trail(*s.ctl, id);
  EXPECT_EQ(t.transitions, 1);
  EXPECT_EQ(t.events, 1);
  // a retry with another payload is refused, not applied
  EXPECT_EQ(code_of([&] {
              tx.exec_params("SELECT * FROM inventory.reserve($1, $2, $3,"
                             " $4::integer)",
                             "acme", "order-1", "A", 4);
            }),
            "IN001");

  // confirm: committed, answer lost
  ASSERT_TRUE(send_and_drop(
    s, "SELECT * FROM inventory.confirm($1, $2)", {"acme", "order-1"},
    count_of("reservation", "order-1", "state = 'confirmed'")));
  auto confirm = outcome_of(tx.exec_params(
    "SELECT * FROM inventory.confirm($1, $2)", "acme", "order-1"));
  EXPECT_EQ(confirm.status, "confirmed");
  EXPECT_EQ(confirm.state, std::optional<std::string>{"confirmed"});
  EXPECT_FALSE(confirm.applied);
  EXPECT_EQ(confirm.reservation_id, std::optional<long long>{id});
  EXPECT_EQ(stock_counts(*s.ctl, "acme", "A"), (StockCounts{true, 7, 0, 3}));
  t = trail(*s.ctl, id);
  EXPECT_EQ(t.transitions, 2);
  EXPECT_EQ(t.events, 2);

  EXPECT_EQ(invariant_violations(*s.ctl), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*s.ctl), std::vector<std::string>{});
}

// Row 2': the response of a restock is lost after commit; the retry returns
// the available count stored with the record and receives nothing twice.
TEST(FaultMatrix, LostRestockResponseRetriesIdempotently) {
  PGI_REQUIRE(server);
  Stocked s{"lost_restock"};

  ASSERT_TRUE(send_and_drop(
    s, "SELECT inventory.restock($1, $2, $3, $4::integer)",
    {"acme", "rcpt-2", "A", "5"}, count_of("stock_ledger", "rcpt-2")));
  // stock moves on before the client retries
  exec(*s.ctl, "SELECT inventory.reserve('acme', 'order-1', 'A', 2)");

  auto cx = s.db.connect();
  pqxx::nontransaction tx{*cx};
  EXPECT_EQ(tx.exec_params1("SELECT inventory.restock($1, $2, $3,"
                            " $4::integer)",
                            "acme", "rcpt-2", "A", 5)[0]
              .as<long long>(),
            15); // the stored available after the receipt, not 13
  EXPECT_EQ(stock_counts(*s.ctl, "acme", "A"), (StockCounts{true, 13, 2, 0}));
  EXPECT_EQ(scalar(*s.ctl, "SELECT count(*) FROM inventory.stock_ledger"), 2);
  EXPECT_EQ(scalar(*s.ctl, "SELECT count(*) FROM inventory.outbox"
                           " WHERE event_type = 'stock.restocked'"),
            2);
  EXPECT_EQ(invariant_violations(*s.ctl), std::vector<std::string>{});
}
