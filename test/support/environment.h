// test/support/environment.h: what the environment gives the C++ suites.
//
// The suites take the server from the libpq environment (PGHOST, PGPORT,
// PGUSER, PGDATABASE, as test/scripts/pg_env.sh exports them) and the
// broker from INVENTORY_AMQP_URL (as test/scripts/rabbitmq.sh exports it).
// A test states what it needs with PGI_REQUIRE(...) as its first statement
// and is skipped when the environment does not have it.
#ifndef PG_INVENTORY_TEST_SUPPORT_ENVIRONMENT_H
#define PG_INVENTORY_TEST_SUPPORT_ENVIRONMENT_H

#include <string>

#include <gtest/gtest.h>

/// Skips the current test (GTEST_SKIP) unless the environment has NEED, one
/// of the names of pgi::test::Need: PGI_REQUIRE(server),
/// PGI_REQUIRE(server_dir), PGI_REQUIRE(broker).
#define PGI_REQUIRE(need)                                                     \
  do {                                                                        \
    const std::string pgi_unmet_ =                                            \
      ::pgi::test::unmet(::pgi::test::Need::need);                            \
    if (!pgi_unmet_.empty()) GTEST_SKIP() << pgi_unmet_;                      \
  } while (0)

namespace pgi::test {

/// What a test needs from its environment.
enum class Need {
  server,     ///< a PostgreSQL server (PGHOST)
  server_dir, ///< the server and its folder, to stop and start it (PGI_DIR)
  broker,     ///< the server and a RabbitMQ broker (INVENTORY_AMQP_URL)
};

/// The settings of the test environment, read from the process
/// environment (src/common's pgi::env_or: unset and empty are the same).
struct Environment {
  /// PGHOST: the server's socket folder or host; "" without a server.
  std::string pghost;
  /// PGI_DIR: the server's folder (data in data/, log in server.log); ""
  /// when the test may not stop and start the server.
  std::string server_dir;
  /// PG_BIN: the PostgreSQL binaries (default /usr/lib/postgresql/15/bin).
  std::string pg_bin;
  /// INVENTORY_AMQP_URL: the broker; "" without one.
  std::string amqp_url;
};

/// The environment as it is now.
Environment environment();

/// "" when the environment has what NEED asks for, else why not, naming
/// the variable that is not set (the message of the skip).
std::string unmet(Need need);

} // namespace pgi::test

#endif
