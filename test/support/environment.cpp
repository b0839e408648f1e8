// test/support/environment.cpp: the test environment (environment.h).
#include "support/environment.h"

#include "support.h" // src/common: pgi::env_or

namespace pgi::test {

Environment environment() {
  Environment e;
  e.pghost = pgi::env_or("PGHOST", "");
  e.server_dir = pgi::env_or("PGI_DIR", "");
  e.pg_bin = pgi::env_or("PG_BIN", "/usr/lib/postgresql/15/bin");
  return e;
}

std::string unmet(Need need) {
  const Environment e = environment();
  if (e.pghost.empty())
    return "PGHOST is not set: no PostgreSQL server to test";
  if (need == Need::server_dir && e.server_dir.empty())
    return "PGI_DIR is not set: cannot stop and start the server";
  return "";
}

} // namespace pgi::test
