// src/fulfiller/store.h: the fulfiller's SQL side.
//
// One PostgreSQL connection under the shared policy (pgi::Link).  At each
// connect: the schema script (src/fulfiller/schema.sql, unless
// --skip-schema); then the checks that keep the fulfiller from undoing
// sales because of its own missing setup: fulfillment.warehouse_sku and
// fulfillment.held must exist and warehouse_sku must not be empty (else
// Fatal, exit 78), and with --compensate-unknown-sku the role must be
// allowed to call inventory.compensate; then the statements.
//
// process() handles one reservation.confirmed event in ONE transaction:
//   - INSERT the inbox row (event_id) ON CONFLICT DO NOTHING; if it was
//     there, the event was processed before: nothing else is written
//     (duplicate);
//   - otherwise the business effect: a fulfillment.request row; or, when a
//     SKU of the event is not in fulfillment.warehouse_sku, a
//     fulfillment.held row (the sale stands; release_held() makes it a
//     request once the SKU is added), or with --compensate-unknown-sku
//     inventory.compensate(...) and a fulfillment.failure row;
// then COMMIT.  The caller acknowledges only after that.
#ifndef PG_INVENTORY_FULFILLER_STORE_H
#define PG_INVENTORY_FULFILLER_STORE_H

#include <functional>
#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "options.h"
#include "retry.h"

namespace fulfiller {

/// What became of one event.
enum class Outcome {
  fulfilled,   // a request row: ack
  held,        // a SKU the warehouse does not ship: held, ack
  compensated, // the reservation was compensated: ack
  duplicate,   // processed before: ack
  rejected,    // malformed (SQLSTATE class 22): ack, logged
  retry,       // the database failed: requeue
};

class Store {
 public:
  explicit Store(const Options &o);

  /// Connected, connecting now if needed (false after a transient failure,
  /// already logged and waited out).  Throws Fatal.
  bool ready();

  /// Processes one event (see above).  Throws Fatal.
  Outcome process(const std::string &event_id, const std::string &type,
                  const std::string &payload);

  /// Turns held events whose SKUs are all in warehouse_sku now into
  /// requests; returns how many (-1: the database failed).  Throws Fatal.
  long long release_held();

  /// Rows in fulfillment.held now, or -1 when unknown.
  long long held_count();

  /// While idle: reads what the server sent without waiting, so that a
  /// connection the server closed (a restart, pg_terminate_backend) is
  /// noticed now rather than at the next message.
  void check();

  /// Runs FN with true when connected, false when the connection was lost.
  void on_state(std::function<void(bool)> fn) {
    link_.on_state(std::move(fn));
  }

 private:
  std::unique_ptr<pqxx::connection> connect();
  Outcome apply(const std::string &event_id, const std::string &type,
                const std::string &payload);

  const Options &o_;
  pgi::Link<pqxx::connection> link_;
  pgi::Backoff error_backoff_;
  bool crash_hook_;
};

} // namespace fulfiller

#endif
