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
// counts of every inventory table and the content of the counters,
// reservations, SKUs and grants, after every call and at the end), and the
// valid values at the edges must work.
//
// The 0.4 rules (README "Limits", "Errors", "Roles and grants"): where a call
// creates something, identifiers that are not in Unicode NFC or that begin
// or end with white space (ASCII, U+00A0, U+3000) raise 22023, while the
// same strings given to the calls that only look up are looked up (not
// found), not refused; a ttl with a months or years component, or zero or
// negative however its units are mixed, raises 22023; a restock or
// adjustment that would take a SKU's total available + reserved + consumed
// past 2^63-1 raises 22003 even when no single counter would pass it; and a
// role with EXECUTE but no grant of the tenant (nor of '*') gets 42501 from
// restock, adjust, set_stock_slots, grant_tenant and revoke_tenant.
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"
#include "support/role.h"

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
  std::string expect;     // SQLSTATE; "" for a call that must not fail
  bool by_server = false; // refused before the function runs
  std::string first;      // with expect "": the first column it returns
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
    // control characters and every non-ASCII byte (invisible white space,
    // combining marks) as \xNN
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f ||
        static_cast<unsigned char>(c) >= 0x80) {
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
const std::string kSetSlots =
  "SELECT inventory.set_stock_slots($1, $2, $3::integer)";
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

/// BASE spelled in ways that look like a canonical identifier but are not
/// (README "Limits"): not in Unicode NFC, or with white space at an end.
std::vector<std::pair<std::string, std::string>>
non_canonical(const std::string &base) {
  return {
    // "e" + U+0301 COMBINING ACUTE ACCENT: NFC is U+00E9
    {"NFD e+U+0301", base + "e\xcc\x81"},
    {"only e+U+0301", "e\xcc\x81"},
    // U+212B ANGSTROM SIGN: NFC is U+00C5 (a singleton, no combining mark)
    {"U+212B", base + "\xe2\x84\xab"},
    // conjoining jamo U+1100 U+1161: NFC is the syllable U+AC00
    {"jamo U+1100 U+1161", base + "\xe1\x84\x80\xe1\x85\xa1"},
    {"leading space", " " + base},
    {"trailing space", base + " "},
    {"leading U+00A0", "\xc2\xa0" + base},
    {"trailing U+00A0", base + "\xc2\xa0"},
    {"leading U+3000", "\xe3\x80\x80" + base},
    {"trailing U+3000", base + "\xe3\x80\x80"},
    {"trailing U+2028", base + "\xe2\x80\xa8"},
    {"only U+00A0", "\xc2\xa0"},
  };
}

/// A JSON string literal of S (UTF-8 kept as it is; quotes and
/// backslashes escaped; S has no control characters here).
std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::vector<Case> bad_cases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, const std::string &sql,
                 std::vector<Param> params, std::string expect,
                 bool by_server = false) {
    cases.push_back({std::move(name), sql, std::move(params),
                     std::move(expect), by_server, ""});
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

  // 0.4, canonical identifiers: refused where a call creates something (a
  // reservation's tenant, key and SKUs; a restock's tenant, key and SKU; an
  // adjustment's key; a grant's tenant) ...
  auto add_ok = [&](std::string name, const std::string &sql,
                    std::vector<Param> params, std::string first) {
    cases.push_back(
      {std::move(name), sql, std::move(params), "", false, std::move(first)});
  };
  struct Creates {
    std::string fn, sql;
    std::vector<Param> valid;
    int at;
    std::string what, base;
  };
  const std::vector<Creates> creates = {
    {"reserve",
     kReserve,
     {"acme", "k-bad", "A", "1", "10 minutes"},
     0,
     "tenant",
     "acme"},
    {"reserve",
     kReserve,
     {"acme", "k-bad", "A", "1", "10 minutes"},
     1,
     "key",
     "k-bad"},
    {"reserve",
     kReserve,
     {"acme", "k-bad", "A", "1", "10 minutes"},
     2,
     "sku",
     "A"},
    {"reserve_lines",
     kReserveLines,
     {"acme", "k-bad", R"([{"sku": "A", "quantity": 1}])", "10 minutes"},
     0,
     "tenant",
     "acme"},
    {"reserve_lines",
     kReserveLines,
     {"acme", "k-bad", R"([{"sku": "A", "quantity": 1}])", "10 minutes"},
     1,
     "key",
     "k-bad"},
    {"restock",
     kRestock,
     {"acme", "r-bad", "A", "1", "why"},
     0,
     "tenant",
     "acme"},
    {"restock",
     kRestock,
     {"acme", "r-bad", "A", "1", "why"},
     1,
     "key",
     "r-bad"},
    {"restock", kRestock, {"acme", "r-bad", "A", "1", "why"}, 2, "sku", "A"},
    {"adjust",
     kAdjust,
     {"acme", "a-bad", "A", "1", "return", "why"},
     1,
     "key",
     "a-bad"},
    {"grant_tenant", kGrant, {"acme", "postgres"}, 0, "tenant", "acme"},
  };
  for (const auto &c : creates)
    for (const auto &[what, v] : non_canonical(c.base)) {
      auto params = c.valid;
      params[static_cast<std::size_t>(c.at)] = v;
      add(c.fn + ": " + c.what + " " + what, c.sql, params, "22023");
    }
  for (const auto &[what, v] : non_canonical("A")) {
    const std::string line =
      R"({"sku": )" + json_string(v) + R"(, "quantity": 1})";
    add("reserve_lines: sku " + what, kReserveLines, lines("[" + line + "]"),
        "22023");
    add("reserve_lines: second line's sku " + what, kReserveLines,
        lines(R"([{"sku": "B", "quantity": 1}, )" + line + "]"), "22023");
  }
  // a JSON escape is the same character: still refused
  add("reserve_lines: sku \\u00a0 escaped at the end", kReserveLines,
      lines(R"([{"sku": "A\u00a0", "quantity": 1}])"), "22023");
  add("reserve_lines: sku \\u0301 escaped", kReserveLines,
      lines(R"([{"sku": "Ae\u0301", "quantity": 1}])"), "22023");

  // ... and looked up, not refused, by the calls that only find stored rows
  // (nothing of that spelling is stored here: not found, nothing changed)
  for (const auto &[what, v] : non_canonical("acme")) {
    add_ok("lookup: tenant " + what, kLookup, {v, "held"}, "not_found");
    add_ok("confirm: tenant " + what, kConfirm, {v, "held"}, "not_found");
    add_ok("cancel: tenant " + what, kCancel, {v, "held", "why"}, "not_found");
    add_ok("compensate: tenant " + what, kCompensate, {v, "held", "why"},
           "not_found");
    add_ok("revoke_tenant: tenant " + what, kRevoke, {v, "postgres"}, "f");
    add("adjust: tenant " + what, kAdjust,
        {v, "a-bad", "A", "1", "return", "why"}, "IN002");
    add("set_stock_slots: tenant " + what, kSetSlots, {v, "A", "2"}, "IN002");
  }
  for (const auto &[what, v] : non_canonical("held")) {
    add_ok("lookup: key " + what, kLookup, {"acme", v}, "not_found");
    add_ok("confirm: key " + what, kConfirm, {"acme", v}, "not_found");
    add_ok("cancel: key " + what, kCancel, {"acme", v, "why"}, "not_found");
    add_ok("compensate: key " + what, kCompensate, {"acme", v, "why"},
           "not_found");
  }
  for (const auto &[what, v] : non_canonical("A")) {
    add("adjust: sku " + what, kAdjust,
        {"acme", "a-bad", v, "1", "return", "why"}, "IN002");
    add("set_stock_slots: sku " + what, kSetSlots, {"acme", v, "2"}, "IN002");
  }

  // 0.4, ttl a duration: no months or years component, even when the days
  // would make up for it; above zero and at most 7 days however the units
  // are mixed (days of 24 hours)
  for (const char *t :
       {"1 year", "1 mon -30 days", "1 mon -31 days", "1 year -365 days",
        "-1 mon 31 days", "1 mon -720 hours", "1 day -24 hours",
        "1 day -86400 seconds", "-1 day 24:00:00", "1 day -25 hours",
        "2 days -48:00:00.000001", "6 days 24:00:00.000001",
        "8 days -23:59:59", "168:00:00.000001"}) {
    add(std::string{"reserve: ttl "} + t, kReserve,
        reserve("1", std::string{t}), "22023");
    add(std::string{"reserve_lines: ttl "} + t, kReserveLines,
        {"acme", "k-bad", R"([{"sku": "A", "quantity": 1}])", std::string{t}},
        "22023");
  }

  // 0.4, arithmetic never overflows: SKU BIG holds available 2^63-8,
  // reserved 4, consumed 3 (a total of exactly 2^63-1), BIGS the same total
  // over 4 slots; a change that would pass 2^63-1 in total is refused even
  // when available alone would still fit (return of 7: available would be
  // exactly 2^63-1)
  for (const char *sku : {"BIG", "BIGS"}) {
    const std::string s{sku};
    add("restock: 1 unit past the total of " + s, kRestock,
        {"acme", "r-over", s, "1", "why"}, "22003");
    add("restock: 2147483647 units past the total of " + s, kRestock,
        {"acme", "r-over", s, "2147483647", "why"}, "22003");
    add("adjust: return of 1 past the total of " + s, kAdjust,
        {"acme", "a-over", s, "1", "return", "why"}, "22003");
    add("adjust: return of 7 past the total of " + s, kAdjust,
        {"acme", "a-over", s, "7", "return", "why"}, "22003");
    add("adjust: correction of 1 past the total of " + s, kAdjust,
        {"acme", "a-over", s, "1", "correction", "why"}, "22003");
    add("adjust: correction of 2^63-1 on " + s, kAdjust,
        {"acme", "a-over", s, "9223372036854775807", "correction", "why"},
        "22003");
  }
  add("adjust: correction of 2^63-1 on A (available passes too)", kAdjust,
      adjust("9223372036854775807", "correction", "why"), "22003");
  add("adjust: loss of 2^63 from A", kAdjust,
      adjust("-9223372036854775808", "loss", "why"), "IN003");
  add("adjust: correction of -2^63 on BIG", kAdjust,
      {"acme", "a-over", "BIG", "-9223372036854775808", "correction", "why"},
      "IN003");
  return cases;
}

/// What a bad call must leave as it was: the row counts of every inventory
/// table and the content of the counters, the SKU catalog, the
/// reservations, the grants and the grant marker's ACL, in one snapshot.
struct Snapshot {
  std::map<std::string, long long> counts;
  std::string content;
  bool operator==(const Snapshot &o) const {
    return counts == o.counts && content == o.content;
  }
};

std::ostream &operator<<(std::ostream &os, const Snapshot &s) {
  for (const auto &[table, n] : s.counts) os << table << "=" << n << " ";
  return os << "content " << s.content;
}

/// Runs SQL with PARAMS bound on CX; "" when it returned, else the SQLSTATE
/// and the server's message, "CODE: message".
std::string failure_of(pqxx::connection &cx, const std::string &sql,
                       const std::vector<Param> &params) {
  std::vector<const char *> values;
  for (const auto &p : params) values.push_back(p ? p->c_str() : nullptr);
  try {
    pqxx::nontransaction tx{cx};
    tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values));
  } catch (const std::exception &e) {
    return error_code(e) + ": " + e.what();
  }
  return "";
}

Snapshot snapshot(pqxx::connection &cx) {
  Snapshot s;
  s.counts = table_counts(cx);
  pqxx::nontransaction tx{cx};
  s.content = tx.exec1(R"SQL(
SELECT md5(concat_ws('|',
  (SELECT string_agg(s::text, ';' ORDER BY s.tenant, s.sku, s.slot)
     FROM inventory.stock_slot s),
  (SELECT string_agg(k::text, ';' ORDER BY k.tenant, k.sku)
     FROM inventory.sku k),
  (SELECT string_agg(r::text, ';' ORDER BY r.id) FROM inventory.reservation r),
  (SELECT string_agg(g.tenant || '/' || g.member::text, ';'
                     ORDER BY g.tenant, g.member::text)
     FROM inventory.tenant_grant g),
  (SELECT max(id)::text FROM inventory.outbox),
  (SELECT max(id)::text FROM inventory.stock_ledger),
  (SELECT t.typacl::text FROM pg_catalog.pg_type t
    WHERE t.oid = 'inventory.tenant_grantee'::pg_catalog.regtype)))
)SQL")[0]
                .as<std::string>();
  return s;
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
  // SKUs whose total available + reserved + consumed is exactly 2^63-1:
  // BIG (one slot) holds available 2^63-8, reserved 4 and consumed 3; BIGS
  // the same over 4 slots
  for (const std::string sku : {"BIG", "BIGS"}) {
    exec(*cx, "SELECT inventory.restock('acme', 'rcpt-" + sku + "', '" + sku +
                "', 10)");
    if (sku == "BIGS")
      exec(*cx, "SELECT inventory.set_stock_slots('acme', 'BIGS', 4)");
    exec(*cx, "SELECT inventory.reserve('acme', 'held-" + sku + "', '" + sku +
                "', 4)");
    exec(*cx, "SELECT inventory.reserve('acme', 'sold-" + sku + "', '" + sku +
                "', 3)");
    exec(*cx, "SELECT inventory.confirm('acme', 'sold-" + sku + "')");
    // the largest change that fits is accepted (README "adjust")
    ASSERT_EQ(scalar(*cx, "SELECT inventory.adjust('acme', 'to-the-limit-" +
                            sku + "', '" + sku +
                            "', 9223372036854775797, 'correction', 'limit')"),
              9223372036854775800LL);
    ASSERT_EQ(stock_counts(*cx, "acme", sku),
              (StockCounts{true, 9223372036854775800LL, 4, 3}))
      << sku;
  }
  const auto before = snapshot(*cx);

  const auto cases = bad_cases();
  auto last = before;
  for (const auto &c : cases) {
    std::string params;
    for (const auto &p : c.params)
      params += (params.empty() ? "" : ", ") + show(p);
    SCOPED_TRACE(c.name + " (" + params + ")");
    pqxx::result r;
    const std::string got = run(*cx, c.sql, c.params, &r);
    EXPECT_EQ(got, c.expect);
    if (c.by_server) {
      EXPECT_NE(got, "22023");
    }
    if (c.expect.empty() && got.empty()) {
      ASSERT_EQ(r.size(), 1u);
      EXPECT_EQ(r[0][0].c_str(), c.first);
      if (r.columns() > 2) {
        EXPECT_EQ(r[0]["applied"].c_str(), std::string{"f"});
      }
    }
    // each call on its own changed nothing
    const auto now = snapshot(*cx);
    EXPECT_EQ(now, last) << "this call changed something";
    last = now;
  }
  EXPECT_EQ(snapshot(*cx), before) << "the bad calls changed something";
  EXPECT_EQ(invariant_violations(*cx), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*cx), std::vector<std::string>{});
  std::cout << "[hostile] " << cases.size() << " bad calls, each with its"
            << " contract SQLSTATE or its not-found answer; nothing changed"
            << std::endl;
}

// Row 5'': the one authorisation rule (README section 8): EXECUTE alone acts
// for no tenant.  Roles with EXECUTE on restock, adjust, set_stock_slots,
// grant_tenant and revoke_tenant but without a grant of tenant acme (none at
// all; a grant of another tenant; a NOINHERIT member of a role granted acme)
// get 42501 "may not act for tenant" from every call for acme, a grant of
// '*' included, and nothing changes (not even the grant marker); the same
// roles act for their own tenants, so the refusals come from the tenant
// check and not from a missing EXECUTE.
TEST(FaultMatrix, HostileCallersWithoutTenantGrantChangeNothing) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_hostile_callers"};
  TestRole none{db, "fault_hostile_op_none"};
  TestRole other{db, "fault_hostile_op_other"};
  TestRole group{db, "fault_hostile_acme_group", "NOLOGIN"};
  TestRole member{db, "fault_hostile_op_member", "LOGIN NOINHERIT"};
  auto cx = db.connect();
  exec(*cx, "SELECT inventory.restock('acme', 'rcpt-A', 'A', 100)");
  exec(*cx, "SELECT inventory.restock('other', 'rcpt-O', 'O', 10)");
  exec(*cx, "SELECT inventory.reserve('acme', 'held', 'A', 1)");
  for (const TestRole *r : {&none, &other, &group, &member}) {
    exec(*cx, "GRANT USAGE ON SCHEMA inventory TO " + r->name());
    exec(*cx, "GRANT EXECUTE ON FUNCTION"
              " inventory.restock(text, text, text, integer, text),"
              " inventory.adjust(text, text, text, bigint, text, text),"
              " inventory.set_stock_slots(text, text, integer),"
              " inventory.grant_tenant(text, regrole),"
              " inventory.revoke_tenant(text, regrole) TO " +
                r->name());
  }
  exec(*cx, "SELECT inventory.grant_tenant('other', '" + other.name() + "')");
  exec(*cx, "SELECT inventory.grant_tenant('acme', '" + group.name() + "')");
  exec(*cx, "GRANT " + group.name() + " TO " + member.name());
  const auto before = snapshot(*cx);

  // every call for acme, by every role that may not act for acme
  auto refused = [&](const std::string &self) {
    return std::vector<std::pair<std::string, std::vector<Param>>>{
      {kRestock, {"acme", "r-x", "A", "5", "why"}},
      {kRestock, {"acme", "r-new", "NEW", "5", "why"}}, // would create NEW
      {kAdjust, {"acme", "a-x", "A", "1", "return", "why"}},
      {kAdjust, {"acme", "a-y", "A", "-1", "loss", "why"}},
      {kAdjust, {"acme", "a-z", "NOPE", "1", "correction", "why"}},
      {kSetSlots, {"acme", "A", "4"}},
      {kSetSlots, {"acme", "A", "1"}},
      {kGrant, {"acme", self}},
      {kGrant, {"*", self}},
      {kGrant, {"acme", other.name()}},
      {kGrant, {"*", other.name()}},
      {kRevoke, {"acme", group.name()}},
      {kRevoke, {"*", self}},
    };
  };
  int n = 0;
  for (const TestRole *r : {&none, &other, &member}) {
    auto rcx = r->connect();
    for (const auto &[sql, params] : refused(r->name())) {
      std::string shown;
      for (const auto &p : params)
        shown += (shown.empty() ? "" : ", ") + show(p);
      SCOPED_TRACE(r->name() + ": " + sql + " (" + shown + ")");
      const std::string got = failure_of(*rcx, sql, params);
      EXPECT_EQ(got.substr(0, 5), "42501") << got;
      EXPECT_NE(got.find("may not act for tenant"), std::string::npos) << got;
      EXPECT_EQ(snapshot(*cx), before) << "a refused call changed something";
      ++n;
    }
  }
  // a grant of another tenant is not one of '*'
  {
    auto rcx = other.connect();
    const std::string got = failure_of(*rcx, kGrant, {"*", other.name()});
    EXPECT_NE(got.find("Only a role with a grant of \"*\""), std::string::npos)
      << got;
  }
  // SET ROLE: the role in effect is the one checked, not the session's
  {
    auto scx = db.connect();
    exec(*scx, "SET ROLE " + none.name());
    const std::string got =
      failure_of(*scx, kRestock, {"acme", "r-x", "A", "5", "why"});
    EXPECT_EQ(got.substr(0, 5), "42501") << got;
  }
  EXPECT_EQ(snapshot(*cx), before);
  // the refused grants gave nobody the grant marker
  for (const TestRole *r : {&none, &member})
    EXPECT_EQ(scalar(*cx, "SELECT count(*) FROM pg_catalog.pg_type t,"
                          " pg_catalog.aclexplode(t.typacl) a"
                          " WHERE t.oid = 'inventory.tenant_grantee'::regtype"
                          "   AND a.grantee = '" +
                            r->name() + "'::regrole"),
              0)
      << r->name();

  // the same roles act where they are granted: EXECUTE was never missing
  {
    auto rcx = other.connect();
    EXPECT_EQ(scalar(*rcx, "SELECT inventory.restock('other', 'r-o', 'O', 5)"),
              15);
    EXPECT_EQ(
      scalar(*rcx, "SELECT inventory.set_stock_slots('other', 'O', 2)"), 1);
    // a role gives what it has: 'other' to the role without grants
    EXPECT_EQ(exec(*rcx, "SELECT inventory.grant_tenant('other', '" +
                           none.name() + "')")[0][0]
                .as<bool>(),
              true);
  }
  {
    auto rcx = none.connect();
    EXPECT_EQ(scalar(*rcx, "SELECT inventory.adjust('other', 'a-o', 'O', -1,"
                           " 'loss', 'broken')"),
              14);
    EXPECT_EQ(failure_of(*rcx, kRestock, {"acme", "r-x", "A", "5", "why"})
                .substr(0, 5),
              "42501");
  }
  {
    // the NOINHERIT member acts for acme once it takes on the group's role
    auto rcx = member.connect();
    exec(*rcx, "SET ROLE " + group.name());
    EXPECT_EQ(scalar(*rcx, "SELECT inventory.restock('acme', 'r-g', 'A', 1)"),
              100);
  }
  EXPECT_EQ(invariant_violations(*cx), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*cx), std::vector<std::string>{});
  std::cout << "[hostile] " << n << " calls without a tenant grant, each"
            << " 42501; nothing changed" << std::endl;
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

  // ttl in mixed units: what counts is the duration (days of 24 hours),
  // above zero and at most 7 days
  {
    pqxx::nontransaction tx{*cx};
    tx.exec("SET pg_inventory.frozen_now = '2026-03-07 17:00:00+00'");
  }
  for (const auto &[ttl, hold] :
       std::vector<std::pair<std::string, std::string>>{
         {"1 day -23 hours", "01:00:00"},
         {"6 days 24:00:00", "7 days"},
         {"8 days -24:00:00", "7 days"},
         {"-1 day 24:00:00.000001", "00:00:00.000001"},
         {"168:00:00", "7 days"}}) {
    SCOPED_TRACE("ttl " + ttl);
    const std::string key = "ttl " + ttl;
    auto r = ok("SELECT status, expires_at - '2026-03-07 17:00:00+00'"
                "::timestamptz = $3::interval FROM inventory.reserve("
                "'acme', $1, 'A', 1, $2::interval)",
                {key, ttl, hold});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0][0].as<std::string>(), "reserved");
    EXPECT_TRUE(r[0][1].as<bool>()) << "expires_at is not clock + " << hold;
    ok(kCancel, {"acme", key, null});
  }
  {
    pqxx::nontransaction tx{*cx};
    tx.exec("RESET pg_inventory.frozen_now");
  }

  // canonical identifiers: white space inside, NFC with combining marks
  // that have no precomposed form ("x" + U+0301), precomposed U+00E9
  const std::string nfc_x = "x\xcc\x81", cafe = "caf\xc3\xa9",
                    nbsp_inside = "a\xc2\xa0z";
  EXPECT_EQ(ok(kRestock, {nfc_x, "r " + nfc_x, cafe, "3", null})
              .at(0)
              .at(0)
              .as<long long>(),
            3);
  EXPECT_EQ(ok(kRestock, {"acme", "r-" + nbsp_inside, nbsp_inside, "3", null})
              .at(0)
              .at(0)
              .as<long long>(),
            3);
  o = outcome(kReserve, {nfc_x, "order 42 " + nfc_x, cafe, "1", "1 hour"});
  EXPECT_EQ(o.status, "reserved");
  o = outcome(reserve_lines_default_ttl,
              {"acme", "cart " + nbsp_inside,
               R"([{"sku": "a\u00a0z", "quantity": 1}])"});
  EXPECT_EQ(o.status, "reserved");
  EXPECT_EQ(ok(kGrant, {nfc_x, "postgres"}).at(0).at(0).as<bool>(), true);

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
