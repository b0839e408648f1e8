// test/faults/hostile_input_test.cpp: hostile input, table-driven.
//
// Every function gets NULLs, zero, negatives, values at and past the limits
// (tenant and SKU 64/65 characters, keys 200/201, reasons 1000/1001), huge
// and tiny intervals, empty and 100 kB strings, control characters, and
// malformed JSON lines.  Each bad call must fail with exactly its contract
// SQLSTATE: 22023 for an invalid argument that reaches the function (IN002
// for an unknown SKU); a value the server refuses before the function runs
// (integer overflow, an interval or JSON that does not parse, an unknown
// role) keeps the server's own code, which is then also checked to be not
// 22023.  Parameters are bound (exec_params), JSON is passed as text and
// cast to jsonb.  The whole table of bad calls must change nothing (row
// counts of every inventory table before and after), and the valid values
// at the edges must work.
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"

#include <iostream>
#include <sstream>

using namespace pgi::test;

namespace {

using Param = std::optional<std::string>;

const Param null = std::nullopt;

/// A string of N copies of C.
std::string repeat(char c, std::size_t n) {
  return std::string(n, c);
}

struct Case {
  std::string name;
  std::string sql;
  std::vector<Param> params;
  std::string expect;     // SQLSTATE
  bool by_server = false; // refused before the function runs
};

/// Runs SQL with PARAMS bound (nullopt = NULL); returns "" or the SQLSTATE.
std::string run(pqxx::connection &cx, const std::string &sql,
                const std::vector<Param> &params,
                pqxx::result *out = nullptr) {
  std::vector<const char *> values;
  for (const auto &p : params) values.push_back(p ? p->c_str() : nullptr);
  return code_of([&] {
    pqxx::nontransaction tx{cx};
    auto r = tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
    if (out) *out = r;
  });
}

/// Shows a parameter in a failure message without flooding it.
std::string show(const Param &p) {
  if (!p) return "NULL";
  std::string s;
  for (char c : p->substr(0, 40)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      s += buf;
    } else {
      s += c;
    }
  }
  if (p->size() > 40) s += "...(" + std::to_string(p->size()) + " bytes)";
  return "'" + s + "'";
}

// The functions, with parameters in declaration order.
const std::string kReserve =
  "SELECT * FROM inventory.reserve($1, $2, $3, $4::integer, $5::interval)";
const std::string kReserveLines =
  "SELECT * FROM inventory.reserve_lines($1, $2, $3::jsonb, $4::interval)";
const std::string kConfirm = "SELECT * FROM inventory.confirm($1, $2)";
const std::string kCancel = "SELECT * FROM inventory.cancel($1, $2, $3)";
const std::string kCompensate =
  "SELECT * FROM inventory.compensate($1, $2, $3)";
const std::string kLookup = "SELECT * FROM inventory.lookup($1, $2)";
const std::string kRestock =
  "SELECT inventory.restock($1, $2, $3, $4::integer, $5)";
const std::string kAdjust =
  "SELECT inventory.adjust($1, $2, $3, $4::bigint, $5, $6)";
const std::string kExpireDue = "SELECT inventory.expire_due($1::integer)";
const std::string kGrant = "SELECT inventory.grant_tenant($1, $2::regrole)";
const std::string kRevoke = "SELECT inventory.revoke_tenant($1, $2::regrole)";

/// A function and a valid set of arguments, to be spoiled one at a time.
struct Fn {
  std::string name, sql;
  std::vector<Param> valid;
  // indexes of the tenant, key and sku parameters (-1: none)
  int tenant, key, sku;
};

std::vector<Fn> functions() {
  return {
    {"reserve", kReserve, {"acme", "k-bad", "A", "1", "10 minutes"}, 0, 1, 2},
    {"reserve_lines",
     kReserveLines,
     {"acme", "k-bad", R"([{"sku": "A", "quantity": 1}])", "10 minutes"},
     0,
     1,
     -1},
    {"confirm", kConfirm, {"acme", "k-bad"}, 0, 1, -1},
    {"cancel", kCancel, {"acme", "k-bad", "why"}, 0, 1, -1},
    {"compensate", kCompensate, {"acme", "k-bad", "why"}, 0, 1, -1},
    {"lookup", kLookup, {"acme", "k-bad"}, 0, 1, -1},
    {"restock", kRestock, {"acme", "r-bad", "A", "1", "why"}, 0, 1, 2},
    {"adjust", kAdjust, {"acme", "a-bad", "A", "1", "return", "why"}, 0, 1, 2},
  };
}

/// One quantity as a JSON line list.
std::string line_qty(const std::string &q) {
  return R"([{"sku": "A", "quantity": )" + q + "}]";
}

/// N lines of SKU A, quantity 1 each.
std::string many_lines(int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i)
    s += std::string{i ? ", " : ""} + R"({"sku": "A", "quantity": 1})";
  return s + "]";
}

/// DEPTH nested objects {"a": {"a": ... 1 ...}}.
std::string nested_object(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += R"({"a": )";
  s += "1";
  s += repeat('}', static_cast<std::size_t>(depth));
  return s;
}

std::vector<Case> bad_cases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, const std::string &sql,
                 std::vector<Param> params, std::string expect,
                 bool by_server = false) {
    cases.push_back(
      {std::move(name), sql, std::move(params), std::move(expect), by_server});
  };

  // identifiers: every function, every identifier parameter
  const std::vector<std::pair<std::string, std::string>> bad_name = {
    {"empty", ""},
    {"65 chars", repeat('n', 65)},
    {"65 two-byte chars",
     [] {
       std::string s;
       for (int i = 0; i < 65; ++i) s += "\xc3\xa9"; // é
       return s;
     }()},
    {"100 kB", repeat('n', 100 * 1024)},
    {"\\x01", "a\x01z"},
    {"\\x1f", "a\x1fz"},
    {"\\x7f", "a\x7fz"},
    {"newline", "a\nz"},
    {"tab", "a\tz"},
  };
  const std::vector<std::pair<std::string, std::string>> bad_key = {
    {"empty", ""},
    {"201 chars", repeat('k', 201)},
    {"100 kB", repeat('k', 100 * 1024)},
    {"\\x01", "k\x01z"},
    {"\\x1f", "k\x1fz"},
    {"\\x7f", "k\x7fz"},
    {"newline", "k\nz"},
  };
  for (const auto &fn : functions()) {
    auto spoil = [&](int at, const std::string &what, const Param &value) {
      auto params = fn.valid;
      params[static_cast<std::size_t>(at)] = value;
      add(fn.name + ": " + what, fn.sql, params, "22023");
    };
    spoil(fn.tenant, "tenant NULL", null);
    spoil(fn.tenant, "tenant '*'", std::string{"*"});
    for (const auto &[what, v] : bad_name)
      spoil(fn.tenant, "tenant " + what, v);
    spoil(fn.key, "key NULL", null);
    for (const auto &[what, v] : bad_key) spoil(fn.key, "key " + what, v);
    if (fn.sku >= 0) {
      spoil(fn.sku, "sku NULL", null);
      for (const auto &[what, v] : bad_name) spoil(fn.sku, "sku " + what, v);
    }
  }

  // reserve: quantity and ttl
  auto reserve = [](const Param &qty, const Param &ttl) {
    return std::vector<Param>{"acme", "k-bad", "A", qty, ttl};
  };
  for (const char *q : {"0", "-1", "-2147483648"})
    add(std::string{"reserve: quantity "} + q, kReserve,
        reserve(std::string{q}, "10 minutes"), "22023");
  add("reserve: quantity NULL", kReserve, reserve(null, "10 minutes"),
      "22023");
  add("reserve: quantity 2147483648", kReserve,
      reserve("2147483648", "10 minutes"), "22003", true);
  add("reserve: quantity 1.5", kReserve, reserve("1.5", "10 minutes"), "22P02",
      true);
  add("reserve: quantity 2e0 as integer text", kReserve,
      reserve("2e0", "10 minutes"), "22P02", true);
  add("reserve: quantity empty", kReserve, reserve("", "10 minutes"), "22P02",
      true);
  for (const char *t : {"0", "-1 second", "-7 days", "7 days 00:00:00.000001",
                        "8 days", "1 mon", "1000000 years", "-1000000 years"})
    add(std::string{"reserve: ttl "} + t, kReserve,
        reserve("1", std::string{t}), "22023");
  add("reserve: ttl NULL", kReserve, reserve("1", null), "22023");
  add("reserve: ttl 1000000000 years", kReserve,
      reserve("1", "1000000000 years"), "22008", true);
  add("reserve: ttl infinity", kReserve, reserve("1", "infinity"), "22007",
      true);
  add("reserve: ttl empty", kReserve, reserve("1", ""), "22007", true);
  add("reserve: unknown sku", kReserve,
      {"acme", "k-bad", "NOPE", "1", "10 minutes"}, "IN002");
  add("reserve: unknown tenant", kReserve,
      {"nobody", "k-bad", "A", "1", "10 minutes"}, "IN002");

  // reserve_lines: the lines
  auto lines = [](const Param &json) {
    return std::vector<Param>{"acme", "k-bad", json, "10 minutes"};
  };
  const std::vector<std::pair<std::string, std::string>> bad_lines = {
    {"JSON null", "null"},
    {"object", R"({"sku": "A", "quantity": 1})"},
    {"string", R"("A")"},
    {"number", "1"},
    {"true", "true"},
    {"empty array", "[]"},
    {"nested arrays", R"([[{"sku": "A", "quantity": 1}]])"},
    {"array of numbers", "[1]"},
    {"array of strings", R"(["A"])"},
    {"array of null", "[null]"},
    {"array of empty array", "[[]]"},
    {"empty object", "[{}]"},
    {"missing quantity", R"([{"sku": "A"}])"},
    {"missing sku", R"([{"quantity": 1}])"},
    {"extra key", R"([{"sku": "A", "quantity": 1, "note": "x"}])"},
    {"one good line, one extra key",
     R"([{"sku": "A", "quantity": 1}, {"sku": "A", "quantity": 1, "x": 1}])"},
    {"quantity string", line_qty(R"("1")")},
    {"quantity 1.5", line_qty("1.5")},
    {"quantity 0.5", line_qty("0.5")},
    {"quantity 1e-1", line_qty("1e-1")},
    {"quantity 1.5e0", line_qty("1.5e0")},
    {"quantity 1e400", line_qty("1e400")},
    {"quantity -0", line_qty("-0")},
    {"quantity 0", line_qty("0")},
    {"quantity 0.0", line_qty("0.0")},
    {"quantity -1", line_qty("-1")},
    {"quantity 2147483648", line_qty("2147483648")},
    {"quantity 2.147483648e9", line_qty("2.147483648e9")},
    {"quantity 1.0000000000000000001", line_qty("1.0000000000000000001")},
    {"quantity true", line_qty("true")},
    {"quantity null", line_qty("null")},
    {"quantity array", line_qty("[1]")},
    {"quantity object", line_qty(R"({"n": 1})")},
    {"sku number", R"([{"sku": 1, "quantity": 1}])"},
    {"sku null", R"([{"sku": null, "quantity": 1}])"},
    {"sku empty", R"([{"sku": "", "quantity": 1}])"},
    {"sku 65 chars",
     R"([{"sku": ")" + repeat('s', 65) + R"(", "quantity": 1}])"},
    {"sku \\u0001", R"([{"sku": "a\u0001z", "quantity": 1}])"},
    {"sku \\u007f", R"([{"sku": "a\u007fz", "quantity": 1}])"},
    {"sku \\n", R"([{"sku": "a\nz", "quantity": 1}])"},
    {"sku object 1000 deep",
     R"([{"sku": )" + nested_object(1000) + R"(, "quantity": 1}])"},
    {"extra key 1000 deep",
     R"([{"sku": "A", "quantity": 1, "x": )" + nested_object(1000) + "}]"},
    {"arrays 1000 deep", repeat('[', 1000) + repeat(']', 1000)},
    {"101 lines", many_lines(101)},
    {"5000 lines", many_lines(5000)},
    {"total past integer, one sku",
     R"([{"sku": "A", "quantity": 2147483647}, {"sku": "A", "quantity": 1}])"},
    {"total past integer, two skus",
     R"([{"sku": "A", "quantity": 2147483647}, {"sku": "B", "quantity": 1}])"},
  };
  for (const auto &[what, json] : bad_lines)
    add("reserve_lines: " + what, kReserveLines, lines(json), "22023");
  add("reserve_lines: lines NULL", kReserveLines, lines(null), "22023");
  add(
    "reserve_lines: unknown sku", kReserveLines,
    lines(R"([{"sku": "A", "quantity": 1}, {"sku": "NOPE", "quantity": 1}])"),
    "IN002");
  add("reserve_lines: malformed JSON", kReserveLines, lines("[{"), "22P02",
      true);
  add("reserve_lines: empty text", kReserveLines, lines(""), "22P02", true);
  add("reserve_lines: ttl 0", kReserveLines,
      {"acme", "k-bad", R"([{"sku": "A", "quantity": 1}])", "0"}, "22023");
  add("reserve_lines: ttl NULL", kReserveLines,
      {"acme", "k-bad", R"([{"sku": "A", "quantity": 1}])", null}, "22023");

  // reasons
  add("cancel: reason 1001 chars", kCancel,
      {"acme", "k-bad", repeat('r', 1001)}, "22023");
  add("cancel: reason 100 kB", kCancel,
      {"acme", "k-bad", repeat('r', 100 * 1024)}, "22023");
  add("compensate: reason NULL", kCompensate, {"acme", "k-bad", null},
      "22023");
  add("compensate: reason empty", kCompensate, {"acme", "k-bad", ""}, "22023");
  add("compensate: reason 1001 chars", kCompensate,
      {"acme", "k-bad", repeat('r', 1001)}, "22023");
  add("restock: reason 1001 chars", kRestock,
      {"acme", "r-bad", "A", "1", repeat('r', 1001)}, "22023");

  // restock quantity
  for (const char *q : {"0", "-1", "-2147483648"})
    add(std::string{"restock: quantity "} + q, kRestock,
        {"acme", "r-bad", "A", std::string{q}, "why"}, "22023");
  add("restock: quantity NULL", kRestock, {"acme", "r-bad", "A", null, "why"},
      "22023");
  add("restock: quantity 2147483648", kRestock,
      {"acme", "r-bad", "A", "2147483648", "why"}, "22003", true);

  // adjust: delta, kind, reason
  auto adjust = [](const Param &delta, const Param &kind,
                   const Param &reason) {
    return std::vector<Param>{"acme", "a-bad", "A", delta, kind, reason};
  };
  add("adjust: delta 0", kAdjust, adjust("0", "correction", "why"), "22023");
  add("adjust: delta NULL", kAdjust, adjust(null, "correction", "why"),
      "22023");
  add("adjust: return with delta -1", kAdjust, adjust("-1", "return", "why"),
      "22023");
  add("adjust: loss with delta 1", kAdjust, adjust("1", "loss", "why"),
      "22023");
  for (const char *k : {"receipt", "RETURN", "", "gift"})
    add(std::string{"adjust: kind '"} + k + "'", kAdjust,
        adjust("1", std::string{k}, "why"), "22023");
  add("adjust: kind NULL", kAdjust, adjust("1", null, "why"), "22023");
  add("adjust: reason NULL", kAdjust, adjust("1", "return", null), "22023");
  add("adjust: reason empty", kAdjust, adjust("1", "return", ""), "22023");
  add("adjust: reason 1001 chars", kAdjust,
      adjust("1", "return", repeat('r', 1001)), "22023");
  add("adjust: delta 9223372036854775808", kAdjust,
      adjust("9223372036854775808", "return", "why"), "22003", true);
  add("adjust: unknown sku", kAdjust,
      {"acme", "a-bad", "NOPE", "1", "return", "why"}, "IN002");
  add("adjust: loss past available", kAdjust,
      adjust("-1000000", "loss", "why"), "IN003");

  // expire_due
  for (const char *n : {"0", "-1", "-2147483648"})
    add(std::string{"expire_due: "} + n, kExpireDue, {std::string{n}},
        "22023");
  add("expire_due: NULL", kExpireDue, {null}, "22023");
  add("expire_due: 2147483648", kExpireDue, {"2147483648"}, "22003", true);

  // grants
  for (const auto &sql : {kGrant, kRevoke}) {
    const std::string fn = sql == kGrant ? "grant_tenant" : "revoke_tenant";
    add(fn + ": tenant NULL", sql, {null, "postgres"}, "22023");
    for (const auto &[what, v] : bad_name)
      add(fn + ": tenant " + what, sql, {v, "postgres"}, "22023");
    add(fn + ": member NULL", sql, {"acme", null}, "22023");
    add(fn + ": unknown role", sql, {"acme", "no_such_role_x"}, "42704", true);
  }
  return cases;
}

} // namespace

// Row 5: every bad argument yields its contract SQLSTATE and changes nothing.
TEST(FaultMatrix, HostileInputYieldsContractSqlstates) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_hostile_input"};
  auto cx = db.connect();
  exec(*cx, "SELECT inventory.restock('acme', 'rcpt-A', 'A', 1000)");
  exec(*cx, "SELECT inventory.restock('acme', 'rcpt-B', 'B', 1000)");
  // something for every table, so a stray write or delete shows
  exec(*cx, "SELECT inventory.reserve('acme', 'held', 'A', 1)");
  exec(*cx, "SELECT inventory.grant_tenant('acme', 'postgres')");
  const auto before = table_counts(*cx);

  const auto cases = bad_cases();
  for (const auto &c : cases) {
    std::string params;
    for (const auto &p : c.params)
      params += (params.empty() ? "" : ", ") + show(p);
    SCOPED_TRACE(c.name + " (" + params + ")");
    const std::string got = run(*cx, c.sql, c.params);
    EXPECT_EQ(got, c.expect);
    if (c.by_server) {
      EXPECT_NE(got, "22023");
    }
  }
  EXPECT_EQ(table_counts(*cx), before) << "the bad calls changed something";
  EXPECT_EQ(invariant_violations(*cx), std::vector<std::string>{});
  std::cout << "[hostile] " << cases.size() << " bad calls, each with its"
            << " contract SQLSTATE; row counts unchanged" << std::endl;
}

// Row 5': the valid values at the edges work.
TEST(FaultMatrix, HostileInputEdgeValuesWork) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_edge_values"};
  auto cx = db.connect();
  const std::string tenant64 = repeat('t', 64), sku64 = repeat('s', 64),
                    key200 = repeat('k', 200), reason1000 = repeat('r', 1000);
  std::string wide64; // 64 characters, 128 bytes
  for (int i = 0; i < 64; ++i) wide64 += "\xc3\xa9";

  auto ok = [&](const std::string &sql, const std::vector<Param> &params) {
    pqxx::result r;
    const std::string code = run(*cx, sql, params, &r);
    EXPECT_EQ(code, "") << sql;
    return r;
  };
  auto outcome = [&](const std::string &sql,
                     const std::vector<Param> &params) {
    auto r = ok(sql, params);
    return r.size() == 1 ? outcome_of(r) : Outcome{};
  };

  // 64-character tenant and SKU (also in two-byte characters), 200-char key,
  // 1000-char reason, ttl of exactly 7 days
  EXPECT_EQ(ok(kRestock, {tenant64, "r-1", sku64, "1000", reason1000})
              .at(0)
              .at(0)
              .as<long long>(),
            1000);
  EXPECT_EQ(ok(kRestock, {wide64, "r-1", wide64, "5", null})
              .at(0)
              .at(0)
              .as<long long>(),
            5);
  ok(kRestock, {"acme", "r-A", "A", "1000", null});
  auto o = outcome(kReserve, {tenant64, key200, sku64, "2", "7 days"});
  EXPECT_EQ(o.status, "reserved");
  EXPECT_TRUE(o.applied);
  o = outcome(kReserve, {wide64, "k-wide", wide64, "1", "00:00:01"});
  EXPECT_EQ(o.status, "reserved");
  EXPECT_EQ(outcome(kCancel, {tenant64, key200, reason1000}).status,
            "cancelled");

  // JSON quantities with an integral value, in any notation
  const std::vector<std::pair<std::string, long long>> quantities = {
    {"2", 2},     {"2.0", 2},   {"2e0", 2},  {"2E0", 2},
    {"0.2e1", 2}, {"20e-1", 2}, {"1E1", 10}, {"2147483647", 2147483647}};
  const std::string reserve_lines_default_ttl =
    "SELECT * FROM inventory.reserve_lines($1, $2, $3::jsonb)";
  int n = 0;
  for (const auto &[q, units] : quantities) {
    SCOPED_TRACE("quantity " + q);
    const std::string key = "q-" + std::to_string(++n);
    o = outcome(reserve_lines_default_ttl, {"acme", key, line_qty(q)});
    EXPECT_EQ(o.quantity, std::optional<long long>{units});
    EXPECT_EQ(o.status, units <= 1000 ? "reserved" : "insufficient");
    if (o.status == "reserved") ok(kCancel, {"acme", key, null});
  }

  // 100 lines (the limit), the same SKU summed
  o =
    outcome(reserve_lines_default_ttl, {"acme", "cart-100", many_lines(100)});
  EXPECT_EQ(o.status, "reserved");
  EXPECT_EQ(o.quantity, std::optional<long long>{100});
  EXPECT_EQ(scalar(*cx, "SELECT count(*) FROM inventory.reservation_line"
                        " l JOIN inventory.reservation r"
                        " ON r.id = l.reservation_id"
                        " WHERE r.request_key = 'cart-100'"),
            1);

  // quantity 2147483647 is valid (and more than there is)
  o = outcome(kReserve, {"acme", "huge", "A", "2147483647", "1 minute"});
  EXPECT_EQ(o.status, "insufficient");
  EXPECT_TRUE(o.applied);

  // confirm + compensate with a 1000-character reason
  ok(kReserve, {"acme", "c-1", "A", "3", "1 hour"});
  EXPECT_EQ(outcome(kConfirm, {"acme", "c-1"}).status, "confirmed");
  EXPECT_EQ(outcome(kCompensate, {"acme", "c-1", reason1000}).status,
            "compensated");
  const long long available = stock_counts(*cx, "acme", "A").available;
  EXPECT_EQ(ok(kAdjust, {"acme", "adj-1", "A", "-1", "correction", "count"})
              .at(0)
              .at(0)
              .as<long long>(),
            available - 1);
  EXPECT_EQ(ok(kExpireDue, {"1"}).at(0).at(0).as<long long>(), 0);
  EXPECT_EQ(invariant_violations(*cx), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*cx), std::vector<std::string>{});
}
