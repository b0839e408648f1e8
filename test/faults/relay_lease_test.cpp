// test/faults/relay_lease_test.cpp: relay leases are owned (README
// "relay_claim", "relay_mark_published", "relay_mark_failed",
// "relay_release"; the 0.4 rule "owned relay leases").
//
// A relay that took longer than its lease (a long broker round trip, a
// pause of the process) must not mark events that another relay has
// claimed since: relay_mark_published and relay_mark_failed act only on the
// events whose lease the named relay still holds (it claimed them last),
// and leave the others to the relay that holds them.  This needs no broker:
// two sessions call the relay functions as a relay role (EXECUTE on the
// four functions, nothing else), and the clock is pinned with the
// superuser setting pg_inventory.frozen_now (set before SET ROLE) instead
// of waiting for the lease to run out.
#include "support/database.h"
#include "support/environment.h"
#include "support/inventory.h"
#include "support/role.h"

#include <algorithm>

using namespace pgi::test;

namespace {

using Ids = std::vector<long long>;

const std::string kT0 = "2026-11-29 08:00:00+00";

/// kT0 plus OFFSET (an interval), as a timestamptz literal.
std::string at_offset(const std::string &offset) {
  return "'" + kT0 + "'::timestamptz + '" + offset + "'::interval";
}

/// IDS as a bigint[] literal.
std::string array_of(const Ids &ids) {
  std::string s = "{";
  for (std::size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "}";
}

/// One relay: a session that calls the relay functions as ROLE under the
/// name NAME, with the clock pinned where the test says.
class Relay {
 public:
  Relay(const TestDatabase &db, std::string name, std::string role)
      : cx_{db.connect()}, name_{std::move(name)}, role_{std::move(role)} {}

  /// Pins the clock at kT0 + OFFSET (superuser setting, so as the session's
  /// superuser), then acts as the relay role again.
  void at(const std::string &offset) {
    exec(*cx_, "RESET ROLE");
    const std::string ts =
      exec(*cx_, "SELECT (" + at_offset(offset) + ")::text")[0][0]
        .as<std::string>();
    exec(*cx_, "SET pg_inventory.frozen_now = '" + ts + "'");
    exec(*cx_, "SET ROLE " + role_);
    ASSERT_EQ(exec(*cx_, "SELECT current_user::text")[0][0].as<std::string>(),
              role_);
  }

  /// relay_claim(name, BATCH, LEASE): the ids it leased, in order.
  Ids claim(int batch, const std::string &lease) {
    pqxx::nontransaction tx{*cx_};
    Ids ids;
    for (const auto &row :
         tx.exec_params("SELECT id FROM inventory.relay_claim($1, $2::integer,"
                        " $3::interval) ORDER BY id",
                        name_, batch, lease))
      ids.push_back(row[0].as<long long>());
    return ids;
  }

  int mark_published(const Ids &ids) {
    pqxx::nontransaction tx{*cx_};
    return tx
      .exec_params1("SELECT inventory.relay_mark_published($1, $2::bigint[])",
                    name_, array_of(ids))[0]
      .as<int>();
  }

  int mark_failed(const Ids &ids, const std::string &error) {
    pqxx::nontransaction tx{*cx_};
    return tx
      .exec_params1("SELECT inventory.relay_mark_failed($1, $2::bigint[], $3)",
                    name_, array_of(ids), error)[0]
      .as<int>();
  }

  int release(const Ids &ids) {
    pqxx::nontransaction tx{*cx_};
    return tx
      .exec_params1("SELECT inventory.relay_release($1, $2::bigint[])", name_,
                    array_of(ids))[0]
      .as<int>();
  }

 private:
  std::unique_ptr<pqxx::connection> cx_;
  std::string name_, role_;
};

/// Every outbox row as it is (lease, attempts, error, retry, publication),
/// one snapshot: what a call that must change nothing leaves as it was.
std::string outbox_content(pqxx::connection &cx) {
  return exec(cx, "SELECT coalesce(md5(string_agg(o::text, ';' ORDER BY"
                  " o.id)), '') FROM inventory.outbox o")[0][0]
    .as<std::string>();
}

/// "claimed_by claimed_until-kT0 attempts published?" of each event IDS.
std::vector<std::string> leases(pqxx::connection &cx, const Ids &ids) {
  return text_rows(cx, "SELECT concat_ws(' ', o.id, coalesce(o.claimed_by,"
                       " '-'), coalesce((o.claimed_until - '" +
                         kT0 +
                         "'::timestamptz)::text, '-'), o.attempts,"
                         " CASE WHEN o.published_at IS NULL THEN 'unpublished'"
                         " ELSE 'published' END)"
                         " FROM inventory.outbox o WHERE o.id = ANY ('" +
                         array_of(ids) + "'::bigint[]) ORDER BY o.id");
}

/// leases() as it should read.
std::vector<std::string> expected(const Ids &ids, const std::string &by,
                                  const std::string &until, int attempts,
                                  const std::string &published) {
  std::vector<std::string> rows;
  for (long long id : ids)
    rows.push_back(std::to_string(id) + " " + by + " " + until + " " +
                   std::to_string(attempts) + " " + published);
  return rows;
}

} // namespace

// Row 7: a lease that ran out and was claimed by another relay is that
// relay's: the first relay's marks return 0 and change nothing; the second
// relay's marks count.
TEST(FaultMatrix, RelayLeaseClaimedByAnotherRelayIsTheirs) {
  PGI_REQUIRE(server);
  TestDatabase db{"fault_relay_lease"};
  TestRole role{db, "fault_relay_lease"};
  auto ctl = db.connect();
  exec(*ctl, "GRANT USAGE ON SCHEMA inventory TO " + role.name());
  exec(*ctl, "GRANT EXECUTE ON FUNCTION"
             " inventory.relay_claim(text, integer, interval),"
             " inventory.relay_mark_published(text, bigint[]),"
             " inventory.relay_mark_failed(text, bigint[], text, integer,"
             " interval, interval),"
             " inventory.relay_release(text, bigint[]) TO " +
               role.name());
  // five publishable events (three restocks, two reservations) and a sixth
  // that waits behind the first event of its reservation
  exec(*ctl, "SET pg_inventory.frozen_now = '" + kT0 + "'");
  for (const char *sku : {"A", "B", "C"})
    exec(*ctl, std::string{"SELECT inventory.restock('acme', 'rcpt-"} + sku +
                 "', '" + sku + "', 10)");
  exec(*ctl, "SELECT inventory.reserve('acme', 'order-1', 'A', 1)");
  exec(*ctl, "SELECT inventory.reserve('acme', 'order-2', 'B', 1)");
  exec(*ctl, "SELECT inventory.confirm('acme', 'order-1')");
  ASSERT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.outbox"), 6);
  const long long confirmed_event =
    scalar(*ctl, "SELECT max(id) FROM inventory.outbox");

  Relay a{db, "relay-a", role.name()}, b{db, "relay-b", role.name()};

  // relay A leases the five for 10 seconds
  a.at("0 seconds");
  const Ids events = a.claim(100, "10 seconds");
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(std::count(events.begin(), events.end(), confirmed_event), 0);
  EXPECT_EQ(leases(*ctl, events),
            expected(events, "relay-a", "00:00:10", 0, "unpublished"));

  // while the lease runs, relay B gets none of them
  b.at("9.999999 seconds");
  EXPECT_EQ(b.claim(100, "30 seconds"), Ids{});

  // the lease ran out: relay B claims the same events for 30 seconds
  b.at("11 seconds");
  EXPECT_EQ(b.claim(100, "30 seconds"), events);
  EXPECT_EQ(leases(*ctl, events),
            expected(events, "relay-b", "00:00:41", 0, "unpublished"));

  // relay A, late, marks what it published or failed to: nothing is its
  // own any more, so nothing is counted and nothing changes
  a.at("11 seconds");
  const std::string held_by_b = outbox_content(*ctl);
  EXPECT_EQ(a.mark_published(events), 0);
  EXPECT_EQ(outbox_content(*ctl), held_by_b);
  EXPECT_EQ(a.mark_failed(events, "broker nacked"), 0);
  EXPECT_EQ(outbox_content(*ctl), held_by_b);
  EXPECT_EQ(a.release(events), 0);
  EXPECT_EQ(outbox_content(*ctl), held_by_b);
  EXPECT_EQ(a.claim(100, "10 seconds"), Ids{});
  EXPECT_EQ(outbox_content(*ctl), held_by_b);

  // a new event: relay A leases it; a mark of every id counts only it
  exec(*ctl, "SET pg_inventory.frozen_now = '2026-11-29 08:00:12+00'");
  exec(*ctl, "SELECT inventory.restock('acme', 'rcpt-D', 'D', 10)");
  a.at("12 seconds");
  const Ids fresh = a.claim(100, "10 seconds");
  ASSERT_EQ(fresh.size(), 1u);
  Ids all = events;
  all.push_back(fresh[0]);
  EXPECT_EQ(a.mark_published(all), 1);
  EXPECT_EQ(leases(*ctl, fresh),
            expected(fresh, "relay-a", "-", 0, "published"));
  EXPECT_EQ(leases(*ctl, events),
            expected(events, "relay-b", "00:00:41", 0, "unpublished"));

  // relay B marks its events: three published, two failed
  b.at("12 seconds");
  const Ids published(events.begin(), events.begin() + 3);
  const Ids failed(events.begin() + 3, events.end());
  EXPECT_EQ(b.mark_published(published), 3);
  EXPECT_EQ(b.mark_failed(failed, "broker nacked"), 2);
  EXPECT_EQ(leases(*ctl, published),
            expected(published, "relay-b", "-", 0, "published"));
  EXPECT_EQ(leases(*ctl, failed),
            expected(failed, "relay-b", "-", 1, "unpublished"));
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.outbox"
                         " WHERE last_error = 'broker nacked'"
                         "   AND next_attempt_at > '2026-11-29 08:00:12+00'"),
            2);

  // relay A's late marks still count nothing, published or not
  a.at("12 seconds");
  const std::string after_b = outbox_content(*ctl);
  EXPECT_EQ(a.mark_published(events), 0);
  EXPECT_EQ(a.mark_failed(events, "late"), 0);
  EXPECT_EQ(outbox_content(*ctl), after_b);

  // the retry is due: relay A leases the two failed events; now relay B's
  // marks of them count nothing, and relay A's count
  a.at("1 hour");
  EXPECT_EQ(a.claim(100, "10 seconds"), failed);
  b.at("1 hour");
  const std::string held_by_a = outbox_content(*ctl);
  EXPECT_EQ(b.mark_published(failed), 0);
  EXPECT_EQ(b.mark_failed(failed, "late"), 0);
  EXPECT_EQ(b.release(failed), 0);
  EXPECT_EQ(outbox_content(*ctl), held_by_a);
  EXPECT_EQ(a.mark_published(failed), 2);
  EXPECT_EQ(leases(*ctl, failed),
            expected(failed, "relay-a", "-", 1, "published"));

  // the event that waited behind order-1's first event goes out last
  EXPECT_EQ(a.claim(100, "10 seconds"), Ids{confirmed_event});
  EXPECT_EQ(a.mark_published({confirmed_event}), 1);
  EXPECT_EQ(scalar(*ctl, "SELECT count(*) FROM inventory.outbox"
                         " WHERE published_at IS NULL"),
            0);
  EXPECT_EQ(scalar(*ctl, "SELECT unpublished FROM inventory.outbox_metrics"),
            0);
  EXPECT_EQ(invariant_violations(*ctl), std::vector<std::string>{});
  EXPECT_EQ(accounting_mismatches(*ctl), std::vector<std::string>{});
}
