// test/support/role.h: a role of one test.
//
// Roles belong to the whole server, not to a test's database, so a test
// that needs an application, operator or relay role makes its own with a
// name no other test (nor another run of the same test) uses, and drops it
// at the end.  A role that holds privileges or tenant grants in the test's
// database cannot be dropped until DROP OWNED BY (README section 8): the
// destructor does that first.
#ifndef PG_INVENTORY_TEST_SUPPORT_ROLE_H
#define PG_INVENTORY_TEST_SUPPORT_ROLE_H

#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "support/database.h"

namespace pgi::test {

/// Role BASE_<pid> with OPTIONS (e.g. "LOGIN", "LOGIN NOINHERIT", "NOLOGIN"),
/// made on construction (after dropping a leftover of an interrupted run)
/// and dropped when this object goes: its sessions are ended, DROP OWNED BY
/// in DB takes back its privileges and tenant grants, then DROP ROLE.  A
/// drop that fails is a test failure.  Declare it after the TestDatabase it
/// is used in, so that it goes first.
class TestRole {
 public:
  TestRole(const TestDatabase &db, const std::string &base,
           const std::string &options = "LOGIN");
  ~TestRole();
  TestRole(const TestRole &) = delete;
  TestRole &operator=(const TestRole &) = delete;

  /// The role's name (also its name as a SQL identifier: only [a-z0-9_]).
  const std::string &name() const { return name_; }
  /// A libpq connection string for DB as this role.
  std::string conninfo() const;
  /// A new connection to DB as this role (needs LOGIN).
  std::unique_ptr<pqxx::connection> connect() const;

 private:
  const TestDatabase &db_;
  std::string name_;
};

} // namespace pgi::test

#endif
