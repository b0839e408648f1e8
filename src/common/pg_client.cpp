// src/common/pg_client.cpp: connecting, classifying errors and the start
// checks (pg_client.h).
#include "pg_client.h"

#include <sstream>

namespace pgi {

namespace {

bool has(const std::string &text, const char *part) {
  return text.find(part) != std::string::npos;
}

/// The first line of a libpq message, without its trailing newline.
std::string first_line(const std::string &text) {
  std::string s = text.substr(0, text.find('\n'));
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

} // namespace

std::unique_ptr<pqxx::connection> connect_db(const std::string &conninfo) {
  try {
    return std::make_unique<pqxx::connection>(conninfo);
  } catch (const pqxx::broken_connection &e) {
    const std::string m = e.what();
    const std::string what = "connect to PostgreSQL: " + first_line(m);
    if (has(m, "password authentication failed") ||
        has(m, "authentication failed for user") ||
        has(m, "no password supplied") || has(m, "no pg_hba.conf entry") ||
        has(m, "pg_hba.conf rejects connection") ||
        has(m, "is not permitted to log in") ||
        (has(m, "role \"") && has(m, "\" does not exist")))
      throw Fatal(exit_noperm, what,
                  "check the role and password of the connection string "
                  "(--db, its environment variable, PGPASSWORD or "
                  "~/.pgpass) and pg_hba.conf; create a missing role with "
                  "CREATE ROLE name LOGIN and the grants of README section "
                  "8");
    if (has(m, "permission denied for database"))
      throw Fatal(exit_noperm, what,
                  "GRANT CONNECT ON DATABASE name TO the role");
    if (has(m, "database \"") && has(m, "\" does not exist"))
      throw Fatal(exit_config, what,
                  "fix dbname in the connection string, or create the "
                  "database and CREATE EXTENSION pg_inventory in it");
    if (has(m, "invalid connection option") || has(m, "invalid URI") ||
        has(m, "missing \"=\" after") || has(m, "invalid sslmode value") ||
        has(m, "invalid port number") || has(m, "unterminated quoted") ||
        has(m, "invalid integer value") || has(m, "invalid value for"))
      throw Fatal(exit_usage, what,
                  "fix the connection string (libpq keyword=value pairs or "
                  "a postgresql:// URI)");
    if (has(m, "certificate") || has(m, "does not match host name") ||
        has(m, "server does not support SSL") ||
        has(m, "SSL error: tlsv1 alert") || has(m, "private key file"))
      throw Fatal(exit_config, what,
                  "check the TLS settings of the connection string: "
                  "sslmode=verify-full, sslrootcert = the CA that signed "
                  "the server's certificate, host = a name in that "
                  "certificate (sslcert/sslkey for a client certificate)");
    throw;
  }
}

std::string sqlstate(const pqxx::sql_error &e) {
  std::string s = e.sqlstate();
  if (!s.empty()) return s;
  if (dynamic_cast<const pqxx::insufficient_privilege *>(&e)) return "42501";
  if (dynamic_cast<const pqxx::too_many_connections *>(&e)) return "53300";
  if (dynamic_cast<const pqxx::serialization_failure *>(&e)) return "40001";
  if (dynamic_cast<const pqxx::deadlock_detected *>(&e)) return "40P01";
  if (dynamic_cast<const pqxx::statement_completion_unknown *>(&e))
    return "40003";
  if (dynamic_cast<const pqxx::transaction_rollback *>(&e)) return "40000";
  return s;
}

bool transient(const pqxx::sql_error &e) {
  const std::string s = sqlstate(e);
  return s.empty() || s.rfind("08", 0) == 0 || s.rfind("40", 0) == 0 ||
         s.rfind("53", 0) == 0 || s.rfind("57", 0) == 0;
}

void throw_if_permanent(const std::exception &e, const std::string &what) {
  const auto *sql = dynamic_cast<const pqxx::sql_error *>(&e);
  if (sql == nullptr) return;
  const std::string s = sqlstate(*sql);
  const std::string msg =
    what + ": " + first_line(e.what()) + " (SQLSTATE " + s + ")";
  if (s.rfind("28", 0) == 0)
    throw Fatal(exit_noperm, msg,
                "check the role of the connection string and pg_hba.conf");
  if (s == "42501")
    throw Fatal(exit_noperm, msg,
                "grant the role what README section 8 lists for this "
                "program (GRANT USAGE ON SCHEMA inventory, GRANT EXECUTE "
                "ON FUNCTION ...)");
  if (s == "3D000")
    throw Fatal(exit_config, msg, "fix dbname in the connection string");
  if (s == "42883" || s == "3F000" || s == "42P01")
    throw Fatal(exit_config, msg,
                "install or update the extension in this database (CREATE "
                "EXTENSION pg_inventory; ALTER EXTENSION pg_inventory "
                "UPDATE), or fix dbname in the connection string");
}

int compare_versions(const std::string &a, const std::string &b) {
  std::istringstream x(a), y(b);
  for (;;) {
    std::string p, q;
    const bool more_a = static_cast<bool>(std::getline(x, p, '.'));
    const bool more_b = static_cast<bool>(std::getline(y, q, '.'));
    if (!more_a && !more_b) return 0;
    long long u = 0, v = 0;
    try {
      u = more_a ? std::stoll(p) : 0;
      v = more_b ? std::stoll(q) : 0;
    } catch (const std::exception &) {
      return p.compare(q);
    }
    if (u != v) return u < v ? -1 : 1;
  }
}

std::string database_name(pqxx::connection &cx) {
  const char *name = cx.dbname();
  return name != nullptr ? name : "?";
}

std::string check_extension(pqxx::connection &cx,
                            const std::string &min_version,
                            const std::vector<std::string> &functions) {
  pqxx::nontransaction tx{cx};
  const std::string db = database_name(cx);
  // a node (pg_inventory), or a router (pg_inventory_router, README
  // section 10), whose functions of the same names run on the nodes
  const pqxx::result v =
    tx.exec("SELECT e.extname::text, e.extversion, current_user::text "
            "FROM pg_catalog.pg_extension e WHERE e.extname IN "
            "('pg_inventory', 'pg_inventory_router') ORDER BY e.extname");
  if (v.empty())
    throw Fatal(exit_config,
                "extension pg_inventory is not installed in database " + db,
                "CREATE EXTENSION pg_inventory in that database (as a "
                "superuser), or fix dbname in the connection string");
  const bool router = v[0][0].as<std::string>() == "pg_inventory_router";
  const std::string version = v[0][1].as<std::string>();
  const std::string role = v[0][2].as<std::string>();
  if (!router && compare_versions(version, min_version) < 0)
    throw Fatal(exit_config,
                "extension pg_inventory " + version + " in database " + db +
                  " is too old: this program needs " + min_version +
                  " or later",
                "ALTER EXTENSION pg_inventory UPDATE (README section 11)");
  if (!tx.exec1("SELECT has_schema_privilege('inventory', 'USAGE')")[0]
         .as<bool>())
    throw Fatal(exit_noperm, "role " + role + " may not use schema inventory",
                "GRANT USAGE ON SCHEMA inventory TO " + role);
  for (const auto &f : functions) {
    bool ok = false;
    try {
      ok =
        tx.exec_params1("SELECT has_function_privilege($1, 'EXECUTE')", f)[0]
          .as<bool>();
    } catch (const pqxx::sql_error &e) {
      if (router)
        throw Fatal(exit_config,
                    "function " + f + " is not on the router: database " +
                      db + " has pg_inventory_router " + version,
                    "connect this program to a node's database (README "
                    "section 10: one relay per node)");
      throw Fatal(exit_config,
                  "function " + f + " is missing in database " + db +
                    " (extension pg_inventory " + version + ")",
                  "ALTER EXTENSION pg_inventory UPDATE");
    }
    if (!ok)
      throw Fatal(exit_noperm, "role " + role + " may not execute " + f,
                  "GRANT EXECUTE ON FUNCTION " + f + " TO " + role +
                    " (README section 8)");
  }
  return version;
}

} // namespace pgi
