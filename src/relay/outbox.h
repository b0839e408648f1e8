// src/relay/outbox.h: the relay's SQL side, the outbox client.
//
// One PostgreSQL connection under the shared policy (pgi::Link): at each
// connect the extension's version and the role's privileges are checked
// (a missing or old extension, a missing grant: Fatal), then the five
// statements are prepared.  Every call catches what the database throws:
// a transient error drops the connection (the next ready() reconnects
// with backoff) and reports "not done"; a permanent one is Fatal; and the
// completion calls (mark published / failed) never end the program for
// any other error: they log it with the event ids and give the marks up
// (the leases run out, the events are published again: at least once).
#ifndef PG_INVENTORY_RELAY_OUTBOX_H
#define PG_INVENTORY_RELAY_OUTBOX_H

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <pqxx/pqxx>

#include "batch.h"
#include "options.h"
#include "retry.h"

namespace relay {

class OutboxClient {
 public:
  explicit OutboxClient(const Options &o);
  ~OutboxClient();

  /// Connected, connecting now if needed (false after a transient failure,
  /// already logged and waited out).  Throws Fatal.
  bool ready();
  /// Connected, without trying to connect.
  bool connected() const { return link_.current() != nullptr; }

  /// Leases the next batch (relay_claim); nullopt when the database went
  /// away.  Throws Fatal, or the unexpected error.
  std::optional<Batch> claim();

  /// What became of marks given to write().
  enum class Written {
    done,    // committed
    retry,   // the database went away: write them again after a reconnect
    dropped, // refused for another reason (logged): given up
  };
  struct WriteResult {
    Written status = Written::retry;
    // events whose lease was still the relay's: marked published, and
    // recorded as failed
    long long published = 0, failed = 0;
  };
  /// Writes MARKS in one transaction (relay_mark_published, then
  /// relay_mark_failed).  Throws Fatal only.
  WriteResult write(const Marks &marks);

  /// Gives the leases on IDS (EVENT_IDS, for the logs) back without
  /// counting an attempt (relay_release); returns how many, or -1 when it
  /// could not (the leases then run out by themselves).  Throws Fatal only.
  long long release(const std::vector<long long> &ids,
                    const std::vector<std::string> &event_ids);

  /// outbox_metrics for the stats line ("?" where unknown) and the gauges
  /// (when known).
  struct Metrics {
    bool known = false;
    std::string unpublished = "?", dead_lettered = "?", lag_seconds = "?";
    long long unpublished_n = 0, retrying_n = 0, dead_lettered_n = 0;
    double lag = 0;
    /// outbox_metrics.below_low_water; -1 on a schema before 0.7
    long long below_low_water_n = -1;
    /// seconds since oldest_published_at; 0 when none or before 0.8
    double published_age = 0;
  };
  Metrics metrics();

  /// The database's name ("" before the first connection): the default
  /// CloudEvents source is /pg_inventory/DATABASE.
  const std::string &database() const { return database_; }

  /// Runs FN with true when connected, false when the connection was lost.
  void on_state(std::function<void(bool)> fn) {
    link_.on_state(std::move(fn));
  }

  /// Sleeps MS milliseconds, waking early on a NOTIFY with --listen.
  void idle_wait(long long ms);

  /// Database connections made again after one was lost.
  long long reconnects() const { return link_.reconnects(); }

 private:
  struct Session;
  /// Handles E thrown by a call of WHAT: Fatal when permanent; drops the
  /// connection and returns true when transient; false otherwise.
  bool transient_failure(const std::exception &e, const std::string &what);

  const Options &o_;
  std::string database_;
  pgi::Link<Session> link_;
};

/// Reads inventory.outbox_metrics in a thread of its own, on a database
/// connection of its own, every PERIOD_MS milliseconds (the first time at
/// once).  The view counts the unpublished events, which takes seconds on
/// a backlog of a million; read on the relay's connection it would stop
/// the pipeline for that long.  Best effort: any failure (no connection,
/// no SELECT on the view) leaves the figures unknown until the next read,
/// logs nothing and never ends the program.
class MetricsSampler {
 public:
  /// Starts the thread; CONNINFO is the relay's --db.
  MetricsSampler(const std::string &conninfo, long long period_ms);
  /// Stops the thread (waits for a read in progress to end).
  ~MetricsSampler();
  MetricsSampler(const MetricsSampler &) = delete;
  MetricsSampler &operator=(const MetricsSampler &) = delete;

  /// The last read (known = false before the first one succeeded and
  /// after one failed).
  OutboxClient::Metrics latest() const;

 private:
  void run();

  const std::string conninfo_;
  const long long period_ms_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  OutboxClient::Metrics latest_;
  std::thread thread_; // last: starts once the rest is set
};

} // namespace relay

#endif
