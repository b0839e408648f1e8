// test/support/inventory.h: what the tests read back from pg_inventory:
// stock counters, row counts, the invariant check, an independent
// accounting of the whole database, and the outcome of a reservation call.
#ifndef PG_INVENTORY_TEST_SUPPORT_INVENTORY_H
#define PG_INVENTORY_TEST_SUPPORT_INVENTORY_H

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace pgi::test {

/// The counters of one (tenant, sku); exists is false without a stock row.
struct StockCounts {
  bool exists = false;
  long long available = 0, reserved = 0, consumed = 0;
  bool operator==(const StockCounts &o) const {
    return exists == o.exists && available == o.available &&
           reserved == o.reserved && consumed == o.consumed;
  }
};

/// Prints S for a failed assertion.
std::ostream &operator<<(std::ostream &os, const StockCounts &s);

/// The counters of (TENANT, SKU) in inventory.stock.
StockCounts stock_counts(pqxx::connection &cx, const std::string &tenant,
                         const std::string &sku);

/// Row counts of every inventory table, keyed by table name, in one
/// snapshot.
std::map<std::string, long long> table_counts(pqxx::connection &cx);

/// The rows check_invariants() returns, one string each (empty: healthy).
std::vector<std::string> invariant_violations(pqxx::connection &cx);

/// An independent accounting of the whole database, one string per
/// mismatch (empty: consistent):
///  - per (tenant, sku): reserved = sum of the lines of pending
///    reservations, consumed = sum of confirmed lines and of the confirmed
///    units purge_history removed (purged_confirmed), available + reserved
///    + consumed = sum of the ledger, available >= 0;
///  - per (tenant, sku): ledger records = stock.restocked and stock.adjusted
///    events (the level events of 0.5 are counted apart, below);
///  - per reservation: at least one line, transition rows = version (one
///    per version 1..version), outbox events = transitions, less one for a
///    stored rejection (which writes no event);
///  - 0.5, per (tenant, sku, location): its stock events (ledger records and
///    level events) have the versions 1..stock_location.version, once each,
///    and a level event follows an out_of_stock one exactly when its
///    previous_level is out_of_stock.
std::vector<std::string> accounting_mismatches(pqxx::connection &cx);

/// The outcome columns of a reservation function.
struct Outcome {
  std::string status;
  std::optional<std::string> state;
  bool applied = false;
  std::optional<long long> reservation_id;
  std::optional<long long> quantity;
};

/// Reads the outcome from the one row of R (SELECT * FROM inventory.f(...));
/// throws unless R has exactly one row.
Outcome outcome_of(const pqxx::result &r);

} // namespace pgi::test

#endif
