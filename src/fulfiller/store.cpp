// src/fulfiller/store.cpp: the fulfiller's SQL side (store.h).
#include "store.h"

#include <csignal>
#include <vector>

#include "log.h"
#include "pg_client.h"
#include "schema.h"

namespace fulfiller {

namespace {

const char *const setup_hint =
  "as the fulfiller's role: psql -f src/fulfiller/schema.sql, then INSERT "
  "INTO fulfillment.warehouse_sku (tenant, sku) the SKUs the warehouse "
  "ships (README section 7), then start the fulfiller again";

/// Throws Fatal unless the fulfiller's own tables are there and the
/// warehouse ships something.
void check_setup(pqxx::connection &cx) {
  pqxx::nontransaction tx{cx};
  const pqxx::row r =
    tx.exec1("SELECT to_regclass('fulfillment.warehouse_sku') IS NOT NULL, "
             "to_regclass('fulfillment.held') IS NOT NULL");
  if (!r[0].as<bool>())
    throw pgi::Fatal(pgi::exit_config,
                     "table fulfillment.warehouse_sku is missing in "
                     "database " +
                       pgi::database_name(cx) +
                       ": without it every confirmed reservation would "
                       "count as unshippable",
                     setup_hint);
  if (!r[1].as<bool>())
    throw pgi::Fatal(pgi::exit_config,
                     "table fulfillment.held is missing in database " +
                       pgi::database_name(cx) +
                       " (the schema is older than this fulfiller)",
                     "run src/fulfiller/schema.sql as the fulfiller's role "
                     "(it only adds what is missing)");
  if (!tx.exec1("SELECT EXISTS (SELECT FROM fulfillment.warehouse_sku)")[0]
         .as<bool>())
    throw pgi::Fatal(pgi::exit_config,
                     "table fulfillment.warehouse_sku is empty: the "
                     "fulfiller would hold (or, with "
                     "--compensate-unknown-sku, undo) every confirmed sale",
                     setup_hint);
}

} // namespace

Store::Store(const Options &o)
    : o_{o}, link_{"db", [this] { return connect(); }},
      crash_hook_{
        pgi::env_flag("INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT")} {}

std::unique_ptr<pqxx::connection> Store::connect() {
  auto cx = pgi::connect_db(o_.db);
  try {
    if (!o_.skip_schema) {
      pqxx::work tx{*cx};
      // one schema set-up at a time (consumers may start at once)
      tx.exec("SELECT pg_advisory_xact_lock(hashtext('fulfillment.schema'))");
      tx.exec(fulfillment_schema_sql);
      tx.commit();
    }
    check_setup(*cx);
    if (o_.compensate_unknown_sku)
      pgi::check_extension(*cx, min_extension,
                           {"inventory.compensate(text, text, text)"});
  } catch (const pqxx::sql_error &e) {
    pgi::throw_if_permanent(e, "setting up schema fulfillment");
    throw;
  }
  cx->prepare("inbox", "INSERT INTO fulfillment.inbox (event_id, "
                       "event_type) VALUES ($1::uuid, $2) "
                       "ON CONFLICT (event_id) DO NOTHING RETURNING 1");
  cx->prepare("missing_sku",
              "SELECT l.value->>'sku' FROM jsonb_array_elements("
              "$1::jsonb->'lines') AS l WHERE NOT EXISTS (SELECT 1 FROM "
              "fulfillment.warehouse_sku w WHERE w.tenant = "
              "$1::jsonb->>'tenant' AND w.sku = l.value->>'sku') "
              "ORDER BY 1 LIMIT 1");
  cx->prepare("request",
              "INSERT INTO fulfillment.request (event_id, tenant, "
              "request_key, reservation_id, version, lines) "
              "SELECT $1::uuid, p->>'tenant', p->>'request_key', "
              "(p->>'reservation_id')::bigint, (p->>'version')::integer, "
              "p->'lines' FROM (SELECT $2::jsonb AS p) AS s");
  cx->prepare("held",
              "INSERT INTO fulfillment.held (event_id, tenant, request_key, "
              "reservation_id, version, lines, reason) "
              "SELECT $1::uuid, p->>'tenant', p->>'request_key', "
              "(p->>'reservation_id')::bigint, (p->>'version')::integer, "
              "p->'lines', $3 FROM (SELECT $2::jsonb AS p) AS s");
  cx->prepare("release_held",
              "WITH ready AS (DELETE FROM fulfillment.held h WHERE NOT "
              "EXISTS (SELECT FROM jsonb_array_elements(h.lines) AS l "
              "WHERE NOT EXISTS (SELECT FROM fulfillment.warehouse_sku w "
              "WHERE w.tenant = h.tenant AND w.sku = l.value->>'sku')) "
              "RETURNING h.*) INSERT INTO fulfillment.request (event_id, "
              "tenant, request_key, reservation_id, version, lines) SELECT "
              "event_id, tenant, request_key, reservation_id, version, "
              "lines FROM ready RETURNING event_id::text");
  cx->prepare("compensate",
              "SELECT c.status, c.state FROM inventory.compensate("
              "$1::jsonb->>'tenant', $1::jsonb->>'request_key', $2) AS c");
  cx->prepare("failure",
              "INSERT INTO fulfillment.failure (event_id, tenant, "
              "request_key, reservation_id, reason, compensated_status, "
              "compensated_state) SELECT $1::uuid, p->>'tenant', "
              "p->>'request_key', (p->>'reservation_id')::bigint, $3, $4, $5 "
              "FROM (SELECT $2::jsonb AS p) AS s");
  cx->prepare("held_count", "SELECT count(*) FROM fulfillment.held");
  pgi::log(
    "db_connected",
    {{"database", pgi::database_name(*cx)},
     {"unknown_sku", o_.compensate_unknown_sku ? "compensate" : "hold"}});
  return cx;
}

bool Store::ready() {
  return link_.get() != nullptr;
}

Outcome Store::apply(const std::string &event_id, const std::string &type,
                     const std::string &payload) {
  pqxx::work tx{*link_.current()};
  if (tx.exec_prepared("inbox", event_id, type).empty()) {
    tx.commit();
    pgi::log("duplicate", {{"event_id", event_id}});
    return Outcome::duplicate;
  }
  const pqxx::result missing = tx.exec_prepared("missing_sku", payload);
  Outcome outcome = Outcome::fulfilled;
  if (missing.empty()) {
    tx.exec_prepared("request", event_id, payload);
  } else if (!o_.compensate_unknown_sku) {
    const std::string sku = missing[0][0].as<std::string>("");
    const std::string reason = "warehouse cannot ship sku " + sku;
    tx.exec_prepared("held", event_id, payload, reason);
    pgi::log("held", {{"event_id", event_id},
                      {"reason", reason},
                      {"hint", "INSERT INTO fulfillment.warehouse_sku the "
                               "SKU if the warehouse ships it (the event "
                               "then becomes a request), or compensate the "
                               "reservation and delete it from "
                               "fulfillment.held"}});
    outcome = Outcome::held;
  } else {
    const std::string reason =
      "warehouse cannot ship sku " + missing[0][0].as<std::string>("");
    const pqxx::row c = tx.exec_prepared1("compensate", payload, reason);
    const std::string status = c[0].as<std::string>("");
    const std::string state = c[1].as<std::string>("");
    tx.exec_prepared("failure", event_id, payload, reason, status, state);
    pgi::log("compensated", {{"event_id", event_id},
                             {"reason", reason},
                             {"status", status},
                             {"state", state}});
    outcome = Outcome::compensated;
  }
  tx.commit();
  error_backoff_.reset();
  if (crash_hook_) {
    pgi::log("test_crash_after_commit", {{"event_id", event_id}});
    std::raise(SIGKILL);
  }
  return outcome;
}

Outcome Store::process(const std::string &event_id, const std::string &type,
                       const std::string &payload) {
  try {
    return apply(event_id, type, payload);
  } catch (const pqxx::broken_connection &e) {
    link_.lost(std::string(e.what()) + " (event_id " + event_id + ")");
  } catch (const pqxx::in_doubt_error &e) {
    // committed or not: a redelivery finds the inbox row if it was
    link_.lost(std::string(e.what()) + " (event_id " + event_id + ")");
  } catch (const pqxx::sql_error &e) {
    pgi::throw_if_permanent(e, "event " + event_id);
    const std::string state = pgi::sqlstate(e);
    if (state.rfind("22", 0) == 0) {
      // malformed event (bad uuid, bad JSON, missing fields): permanent
      pgi::log(
        "rejected",
        {{"event_id", event_id}, {"sqlstate", state}, {"error", e.what()}});
      return Outcome::rejected;
    }
    pgi::log("db_error", {{"event_id", event_id},
                          {"sqlstate", state},
                          {"error", e.what()},
                          {"hint", "the message is requeued"}});
    pgi::sleep_unless_stopped(error_backoff_.next());
  }
  return Outcome::retry;
}

long long Store::release_held() {
  pqxx::connection *cx = link_.current();
  if (cx == nullptr) return -1;
  try {
    pqxx::work tx{*cx};
    const pqxx::result r = tx.exec_prepared("release_held");
    tx.commit();
    if (!r.empty()) {
      std::vector<std::string> ids;
      for (const auto &row : r) ids.push_back(row[0].as<std::string>());
      pgi::log("held_released", {{"events", std::to_string(r.size())},
                                 {"event_ids", pgi::join_ids(ids)}});
    }
    return static_cast<long long>(r.size());
  } catch (const pqxx::broken_connection &e) {
    link_.lost(std::string("releasing held events: ") + e.what());
  } catch (const pqxx::in_doubt_error &e) {
    link_.lost(std::string("releasing held events: ") + e.what());
  } catch (const pqxx::sql_error &e) {
    pgi::throw_if_permanent(e, "releasing held events");
    pgi::log("db_error", {{"sqlstate", pgi::sqlstate(e)},
                          {"error", e.what()},
                          {"hint", "held events are tried again later"}});
  }
  return -1;
}

long long Store::held_count() {
  pqxx::connection *cx = link_.current();
  if (cx == nullptr) return -1;
  try {
    pqxx::nontransaction tx{*cx};
    return tx.exec_prepared1("held_count")[0].as<long long>();
  } catch (const pqxx::broken_connection &e) {
    link_.lost(std::string("counting held events: ") + e.what());
  } catch (const std::exception &) {
    // best effort: a gauge
  }
  return -1;
}

void Store::check() {
  pqxx::connection *cx = link_.current();
  if (cx == nullptr) return;
  try {
    cx->get_notifs(); // PQconsumeInput: a closed connection throws
  } catch (const pqxx::broken_connection &e) {
    link_.lost(std::string("idle connection: ") + e.what());
  }
}

} // namespace fulfiller
