// src/common/pg_client.h: the PostgreSQL side both programs share: opening
// a connection, telling transient errors from permanent ones (failure.h),
// and checking at start that the extension and the role's privileges are
// what the program needs.
//
// libpq reports a failed connection as text only (no SQLSTATE), so
// connect_db() recognises the permanent cases by libpq's and the server's
// English messages (authentication, a missing database or role, a
// connection string or TLS setting that cannot work); a message it does
// not know counts as transient and is retried.
#ifndef PG_INVENTORY_COMMON_PG_CLIENT_H
#define PG_INVENTORY_COMMON_PG_CLIENT_H

#include <memory>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "failure.h"

namespace pgi {

/// Opens a connection to CONNINFO (libpq keywords or a URI; the PG*
/// environment fills in the rest).  Throws Fatal when retrying cannot help,
/// pqxx::broken_connection otherwise.
std::unique_ptr<pqxx::connection> connect_db(const std::string &conninfo);

/// The SQLSTATE of E.  libpqxx 6.4 leaves it empty for some of the
/// exception classes it maps codes to: those are mapped back
/// (insufficient_privilege 42501, too_many_connections 53300,
/// serialization_failure 40001, deadlock_detected 40P01,
/// statement_completion_unknown 40003, transaction_rollback 40000).
std::string sqlstate(const pqxx::sql_error &e);

/// True for SQL errors worth retrying on a new connection: connection
/// (08), transaction rollback (40), resources (53), operator intervention
/// (57: shutdown, cancel, crash recovery), or no SQLSTATE at all.
bool transient(const pqxx::sql_error &e);

/// Throws Fatal when E, raised by a database call of WHAT, is one retrying
/// cannot fix: authorisation (28xxx: 77), a missing privilege (42501: 77),
/// a missing database (3D000), schema (3F000), function (42883) or relation
/// (42P01: 78).  Returns otherwise.
void throw_if_permanent(const std::exception &e, const std::string &what);

/// Checks that extension pg_inventory is installed in CX's database at
/// version MIN_VERSION or later, or that the database is a router
/// (pg_inventory_router, README section 10: its functions run on nodes of
/// their own versions, so no version is compared), and that the current
/// role may use schema inventory and EXECUTE every function of FUNCTIONS
/// (signatures such as "inventory.relay_claim(text, integer, interval)").
/// Throws Fatal (78 for a missing or too old extension, or a function the
/// router does not have, such as the relay's; 77 for a missing
/// privilege).  Returns the installed version (the router's on a router).
std::string check_extension(pqxx::connection &cx,
                            const std::string &min_version,
                            const std::vector<std::string> &functions);

/// Compares dotted versions ("0.4" < "0.10"): negative, 0 or positive.
int compare_versions(const std::string &a, const std::string &b);

/// The database name of CX, for messages.
std::string database_name(pqxx::connection &cx);

} // namespace pgi

#endif
