// src/relay/batch.h: a claimed batch of outbox events, what the broker
// said about each, and the marks the relay still has to write.
#ifndef PG_INVENTORY_RELAY_BATCH_H
#define PG_INVENTORY_RELAY_BATCH_H

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
