// test/support/environment.cpp: the test environment (environment.h).
#include "support/environment.h"

#include "support.h" // src/common: pgi::env_or

namespace pgi::test {

Environment environment() {
  Environment e;
  e.pghost = pgi::env_or("PGHOST", "");
  e.server_dir = pgi::env_or("PGI_DIR", "");
  e.pg_bin = pgi::env_or("PG_BIN", "/usr/lib/postgresql/15/bin");
  e.amqp_url = pgi::env_or("INVENTORY_AMQP_URL", "");
  return e;
}

std::string unmet(Need need) {
  const Environment e = environment();
  if (e.pghost.empty())
    return "PGHOST is not set: no PostgreSQL server to test";
  if (need == Need::server_dir && e.server_dir.empty())
    return "PGI_DIR is not set: cannot stop and start the server";
  if (need == Need::broker && e.amqp_url.empty())
    return "INVENTORY_AMQP_URL is not set: no RabbitMQ broker to test";
  return "";
}

} // namespace pgi::test
