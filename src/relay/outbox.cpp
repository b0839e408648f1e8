// src/relay/outbox.cpp: the outbox client (outbox.h).
#include "outbox.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "log.h"
#include "pg_client.h"

namespace relay {

namespace {

/// An interval literal for MS milliseconds.
std::string interval(long long ms) {
  return std::to_string(ms) + " milliseconds";
}

/// A bigint[] literal of IDS.
std::string id_array(const std::vector<long long> &ids) {
  std::string s = "{";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "}";
}

/// Seconds since the epoch of TEXT, a UTC time as the extension writes
/// occurred_at (2026-11-29T08:00:00.000000Z); -1 for anything else.
double parse_utc(const std::string &text) {
  struct tm tm = {};
  int used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year,
                  &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
                  &used) != 6 ||
      used != 19)
    return -1;
  double fraction = 0;
  std::size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    for (++i;
         i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
         ++i, scale /= 10)
      fraction += (text[i] - '0') * scale;
  }
  if (i + 1 != text.size() || text[i] != 'Z') return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t t = timegm(&tm);
  return t == static_cast<time_t>(-1) ? -1 : static_cast<double>(t) + fraction;
}

/// Wakes the relay on NOTIFY CHANNEL (with --listen).
class Wakeup : public pqxx::notification_receiver {
 public:
  Wakeup(pqxx::connection_base &cx, const std::string &channel)
      : pqxx::notification_receiver(cx, channel) {}
  void operator()(const std::string &, int) override { woken = true; }
  bool woken = false;
};

// The columns of outbox_metrics beside the first five that this role may
// read: below_low_water (0.7) and oldest_published_at (0.8), absent from
// older schemas (and maybe not granted, column by column).  Named, never a
// whole-row reference, which would compute every column of the view
// (published_last_minute counts a minute of events).
const char *const metrics_columns_sql =
  "SELECT a.attname::text FROM pg_catalog.pg_attribute a "
  "WHERE a.attrelid = 'inventory.outbox_metrics'::regclass "
  "AND a.attname IN ('below_low_water', 'oldest_published_at') "
  "AND NOT a.attisdropped AND pg_catalog.has_column_privilege("
  "a.attrelid, a.attnum, 'SELECT') ORDER BY a.attname";

/// The read of outbox_metrics with the optional COLUMNS present.
std::string metrics_sql(const std::vector<std::string> &columns) {
  const auto has = [&](const char *c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
  // an infinite published_at (a hand change) gives no age, not an error
  return std::string(
           "SELECT unpublished, dead_lettered, "
           "round(lag_seconds::numeric, 3)::text, retrying, lag_seconds, ") +
         (has("below_low_water") ? "below_low_water, " : "NULL::bigint, ") +
         (has("oldest_published_at")
            ? "CASE WHEN pg_catalog.isfinite(oldest_published_at) THEN "
              "extract(epoch FROM pg_catalog.now() - oldest_published_at)"
              "::float8 END "
            : "NULL::float8 ") +
         "FROM inventory.outbox_metrics";
}

/// The metrics statements prepared on one connection: which optional
/// columns the prepared read names.  A new connection starts empty.
struct MetricsStatements {
  bool prepared = false;
  std::vector<std::string> columns;
};

/// One read of outbox_metrics on CX (throws what the database throws).
/// Each read asks the catalog (a prepared lookup) which optional columns
/// there are, so an ALTER EXTENSION UPDATE under a running relay shows at
/// the next read; the read itself is prepared again only when they
/// changed, not planned at every read.
OutboxClient::Metrics read_metrics(pqxx::connection &cx,
                                   MetricsStatements &st) {
  if (!st.prepared) cx.prepare("metrics_columns", metrics_columns_sql);
  std::vector<std::string> columns;
  {
    pqxx::nontransaction q{cx};
    for (const auto &c : q.exec_prepared("metrics_columns"))
      columns.push_back(c[0].as<std::string>());
  }
  if (!st.prepared || columns != st.columns) {
    if (st.prepared) cx.unprepare("metrics");
    cx.prepare("metrics", metrics_sql(columns));
    st.prepared = true;
    st.columns = columns;
  }
  OutboxClient::Metrics m;
  pqxx::work tx{cx};
  pqxx::row r = tx.exec_prepared1("metrics");
  tx.commit();
  m.unpublished = r[0].as<std::string>();
  m.dead_lettered = r[1].as<std::string>();
  m.lag_seconds = r[2].as<std::string>();
  m.unpublished_n = r[0].as<long long>();
  m.dead_lettered_n = r[1].as<long long>();
  m.retrying_n = r[3].as<long long>();
  m.lag = r[4].as<double>();
  m.below_low_water_n = r[5].is_null() ? -1 : r[5].as<long long>();
  m.published_age = r[6].is_null() ? 0 : r[6].as<double>();
  m.known = true;
  return m;
}

} // namespace

/// A connection with its statements and, with --listen, its receiver (which
/// must go before the connection).
struct OutboxClient::Session {
  std::unique_ptr<pqxx::connection> cx;
  std::unique_ptr<Wakeup> wakeup;
  MetricsStatements metrics;
  ~Session() { wakeup.reset(); }
};

OutboxClient::OutboxClient(const Options &o)
    : o_{o}, link_{
               "db", [this] {
                 auto s = std::make_unique<Session>();
                 s->cx = pgi::connect_db(o_.db);
                 const std::string version = pgi::check_extension(
                   *s->cx, min_extension,
                   {"inventory.relay_claim(text, integer, interval)",
                    "inventory.relay_mark_published(text, bigint[])",
                    "inventory.relay_mark_failed(text, bigint[], text, "
                    "integer, interval, interval)",
                    "inventory.relay_release(text, bigint[])"});
                 pqxx::connection &cx = *s->cx;
                 // occurred_at: the CloudEvents time and, with the
                 // database's clock now, the start of the publish lag
                 cx.prepare("claim",
                            "SELECT id, event_id::text, event_type, "
                            "payload::text, attempts, "
                            "payload->>'occurred_at', "
                            "extract(epoch FROM clock_timestamp())::float8 "
                            "FROM inventory.relay_claim($1, $2, "
                            "$3::interval)");
                 cx.prepare("published",
                            "SELECT inventory.relay_mark_published($1, "
                            "$2::bigint[])");
                 cx.prepare("failed", "SELECT inventory.relay_mark_failed($1, "
                                      "$2::bigint[], $3, $4, $5::interval, "
                                      "$6::interval)");
                 cx.prepare("release", "SELECT inventory.relay_release("
                                       "$1, $2::bigint[])");
                 database_ = pgi::database_name(cx);
                 if (o_.listen)
                   s->wakeup = std::make_unique<Wakeup>(cx, o_.channel);
                 pgi::log("db_connected",
                          {{"relay", o_.name},
                           {"database", pgi::database_name(cx)},
                           {"extension_version", version}});
                 return s;
               }} {}

OutboxClient::~OutboxClient() = default;

bool OutboxClient::ready() {
  return link_.get() != nullptr;
}

bool OutboxClient::transient_failure(const std::exception &e,
                                     const std::string &what) {
  if (dynamic_cast<const pqxx::broken_connection *>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error *>(&e) != nullptr) {
    link_.lost(what + ": " + e.what());
    return true;
  }
  pgi::throw_if_permanent(e, what);
  const auto *sql = dynamic_cast<const pqxx::sql_error *>(&e);
  if (sql != nullptr && pgi::transient(*sql)) {
    link_.lost(what + ": " + e.what());
    return true;
  }
  return false;
}

std::optional<Batch> OutboxClient::claim() {
  try {
    pqxx::work tx{*link_.current()->cx};
    pqxx::result r =
      tx.exec_prepared("claim", o_.name, o_.batch_size, interval(o_.lease_ms));
    tx.commit();
    Batch batch;
    batch.reserve(r.size());
    for (const auto &row : r) {
      Event e;
      e.id = row[0].as<long long>();
      e.event_id = row[1].as<std::string>();
      e.event_type = row[2].as<std::string>();
      e.payload = row[3].as<std::string>();
      e.attempts = row[4].as<int>();
      e.occurred_at = row[5].as<std::string>("");
      const double occurred = parse_utc(e.occurred_at);
      if (occurred >= 0) e.age_at_claim = row[6].as<double>() - occurred;
      batch.push_back(std::move(e));
    }
    return batch;
  } catch (const std::exception &e) {
    // in doubt: an unknown claim, whose leases run out by themselves
    if (transient_failure(e, "relay_claim")) return std::nullopt;
    throw;
  }
}

OutboxClient::WriteResult OutboxClient::write(const Marks &m) {
  WriteResult res;
  try {
    pqxx::work tx{*link_.current()->cx};
    if (!m.published.empty())
      res.published =
        tx.exec_prepared1("published", o_.name, id_array(m.published))[0]
          .as<long long>();
    if (!m.failed.empty())
      res.failed = tx.exec_prepared1("failed", o_.name, id_array(m.failed),
                                     m.failed_error, o_.max_attempts,
                                     interval(o_.backoff_ms),
                                     interval(o_.max_backoff_ms))[0]
                     .as<long long>();
    tx.commit();
    res.status = Written::done;
  } catch (const std::exception &e) {
    // in doubt: committed or not, writing the marks again changes nothing
    // that was written (the functions skip what is no longer leased)
    if (transient_failure(e, "relay_mark")) return res;
    // anything else: never fatal, the events go out again
    const auto *sql = dynamic_cast<const pqxx::sql_error *>(&e);
    std::vector<std::string> ids = m.published_events;
    ids.insert(ids.end(), m.failed_events.begin(), m.failed_events.end());
    pgi::log("mark_error",
             {{"events", std::to_string(ids.size())},
              {"event_ids", pgi::join_ids(ids)},
              {"sqlstate", sql != nullptr ? pgi::sqlstate(*sql) : ""},
              {"error", e.what()},
              {"hint", "the leases run out and the events are published "
                       "again"}});
    res.status = Written::dropped;
  }
  return res;
}

long long OutboxClient::release(const std::vector<long long> &ids,
                                const std::vector<std::string> &event_ids) {
  if (ids.empty()) return 0;
  if (!connected()) return -1; // the leases run out by themselves
  try {
    pqxx::work tx{*link_.current()->cx};
    const long long n =
      tx.exec_prepared1("release", o_.name, id_array(ids))[0].as<long long>();
    tx.commit();
    return n;
  } catch (const std::exception &e) {
    if (!transient_failure(e, "relay_release"))
      pgi::log("release_error",
               {{"events", std::to_string(ids.size())},
                {"event_ids", pgi::join_ids(event_ids)},
                {"error", e.what()},
                {"hint", "the leases run out by themselves"}});
    return -1;
  }
}

OutboxClient::Metrics OutboxClient::metrics() {
  Metrics m;
  if (!connected()) return m;
  try {
    m = read_metrics(*link_.current()->cx, link_.current()->metrics);
  } catch (const pqxx::broken_connection &e) {
    link_.lost(std::string("outbox_metrics: ") + e.what());
  } catch (const std::exception &) {
    // best effort (e.g. no SELECT on the view)
  }
  return m;
}

void OutboxClient::idle_wait(long long ms) {
  Session *s = link_.current();
  if (s == nullptr || !s->wakeup) {
    pgi::sleep_unless_stopped(ms);
    return;
  }
  // with --listen: a NOTIFY ends the wait early; the poll still runs
  s->wakeup->woken = false;
  const long long end = pgi::now_ms() + ms;
  try {
    while (!pgi::stop_requested() && !s->wakeup->woken) {
      const long long left = end - pgi::now_ms();
      if (left <= 0) break;
      const long long slice = std::min(left, 100LL);
      s->cx->await_notification(slice / 1000, (slice % 1000) * 1000);
    }
  } catch (const pqxx::broken_connection &e) {
    link_.lost(std::string("waiting for NOTIFY: ") + e.what());
  }
}

} // namespace relay

namespace relay {

MetricsSampler::MetricsSampler(const std::string &conninfo,
                               long long period_ms)
    : conninfo_{conninfo}, period_ms_{period_ms}, thread_{[this] { run(); }} {}

MetricsSampler::~MetricsSampler() {
  {
    std::lock_guard<std::mutex> lock{mu_};
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

OutboxClient::Metrics MetricsSampler::latest() const {
  std::lock_guard<std::mutex> lock{mu_};
  return latest_;
}

void MetricsSampler::run() {
  std::unique_ptr<pqxx::connection> cx;
  MetricsStatements statements; // of cx
  bool failing = false;
  for (;;) {
    OutboxClient::Metrics m;
    try {
      if (!cx || !cx->is_open()) {
        cx = pgi::connect_db(conninfo_);
        statements = MetricsStatements{};
        // told apart from the relay's own connection in pg_stat_activity
        cx->set_variable("application_name", "'inventory-relay metrics'");
      }
      m = read_metrics(*cx, statements);
      failing = false;
    } catch (const std::exception &ex) {
      // said once per run of failures (a revoked grant, the connection
      // limit of the role): the gauges stay unknown meanwhile
      if (!failing)
        pgi::log("metrics_read_failed", {{"error", ex.what()}});
      failing = true;
      cx.reset(); // connect again at the next read
    }
    std::unique_lock<std::mutex> lock{mu_};
    latest_ = m;
    if (wake_.wait_for(lock, std::chrono::milliseconds(period_ms_),
                       [this] { return stop_; }))
      return;
  }
}

} // namespace relay
