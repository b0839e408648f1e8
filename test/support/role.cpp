// test/support/role.cpp: a role of one test (role.h).
#include "support/role.h"

#include <cctype>
#include <stdexcept>

#include <unistd.h>

#include <gtest/gtest.h>

namespace pgi::test {

namespace {

/// Ends the sessions of ROLE and drops it; DROP OWNED BY first, in the
/// test's database, where its privileges and tenant grants are.
void drop_role(pqxx::connection &cx, const std::string &role) {
  pqxx::nontransaction tx{cx};
  if (tx.exec_params("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1",
                     role)
        .empty())
    return;
  tx.exec_params("SELECT pg_catalog.pg_terminate_backend(pid, 10000)"
                 "  FROM pg_catalog.pg_stat_activity"
                 " WHERE usename = $1 AND pid <> pg_catalog.pg_backend_pid()",
                 role);
  tx.exec("DROP OWNED BY " + role);
  tx.exec("DROP ROLE " + role);
}

} // namespace

TestRole::TestRole(const TestDatabase &db, const std::string &base,
                   const std::string &options)
    : db_{db}, name_{base + "_" + std::to_string(::getpid())} {
  for (char c : name_)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
      throw std::invalid_argument("role name must be [a-z0-9_]: " + name_);
  if (name_.size() > 63)
    throw std::invalid_argument("role name longer than 63 bytes: " + name_);
  auto cx = db_.connect();
  drop_role(*cx, name_); // a leftover of an interrupted run
  exec(*cx, "CREATE ROLE " + name_ + " " + options);
}

TestRole::~TestRole() {
  try {
    auto cx = db_.connect();
    drop_role(*cx, name_);
  } catch (const std::exception &e) {
    ADD_FAILURE() << "could not drop role " << name_ << ": " << e.what();
  }
}

std::string TestRole::conninfo() const {
  return db_.conninfo() + " user=" + name_;
}

std::unique_ptr<pqxx::connection> TestRole::connect() const {
  return std::make_unique<pqxx::connection>(conninfo());
}

} // namespace pgi::test
