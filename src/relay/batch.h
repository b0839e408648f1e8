// src/relay/batch.h: a claimed batch of outbox events, what the broker
// said about each, and the marks the relay still has to write.
#ifndef PG_INVENTORY_RELAY_BATCH_H
#define PG_INVENTORY_RELAY_BATCH_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace relay {

/// One claimed event and the broker's verdict on it.
struct Event {
  long long id = 0;        // inventory.outbox.id
  std::string event_id;    // uuid: message_id, and the id in the logs
  std::string event_type;  // routing key
  std::string payload;     // body
  std::string occurred_at; // the payload's occurred_at (RFC 3339, UTC)
  int attempts = 0;        // failed attempts before this one
  // seconds from occurred_at to the claim on the database's clock (-1:
  // unknown), and when the broker's ack came (pgi::now_ms()): the publish
  // lag without trusting two machines' clocks to agree
  double age_at_claim = -1;
  long long acked_ms = 0;
  enum class Verdict { pending, acked, nacked } verdict = Verdict::pending;
  bool returned = false; // basic.return: nothing was routed
  std::string error;     // why it failed, for relay_mark_failed

  /// Acked and not returned: the broker has it.
  bool confirmed() const { return verdict == Verdict::acked && !returned; }
};

using Batch = std::vector<Event>;

/// A claimed batch on its way: published (its events carry the delivery
/// tags first_tag, first_tag + 1, ... on the broker connection) and
/// waiting for the broker's verdicts.  Several can be in flight at once
/// (--in-flight): the broker persists one while the relay marks the
/// previous one and claims and publishes the next.
struct Flight {
  Batch events;
  std::uint64_t first_tag = 0; // delivery tag of events[0]
  std::size_t pending = 0;     // events without a verdict yet
  std::size_t settled = 0;     // events[0, settled) all have a verdict
  long long claimed_ms = 0;    // pgi::now_ms() when it was claimed
  long long sent_ms = 0;       // when its last message was sent

  /// Every event has the broker's verdict.
  bool done() const { return pending == 0; }
};

/// The outcome of batches that still has to be written to the database:
/// relay_mark_published for the confirmed events, relay_mark_failed for
/// the nacked and returned ones.
struct Marks {
  std::vector<long long> published, failed;
  std::vector<std::string> published_events, failed_events; // for logs
  std::string failed_error;
  long long would_die = 0; // of failed: at their max_attempts-th failure

  bool empty() const { return published.empty() && failed.empty(); }
  void add_published(const Event &e) {
    published.push_back(e.id);
    published_events.push_back(e.event_id);
  }
  void add_failed(const Event &e) {
    failed.push_back(e.id);
    failed_events.push_back(e.event_id);
  }
};

} // namespace relay

#endif
