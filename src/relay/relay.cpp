// src/relay/relay.cpp: the relay's loop (relay.h).
#include "relay.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include "log.h"

namespace relay {

Relay::Relay(const Options &o)
    : o_{o}, registry_{std::make_shared<prometheus::Registry>()},
      m_{*registry_, o.name, pgi::version, o.topology.exchange}, outbox_{o},
      publisher_{o}, last_stats_ms_{pgi::now_ms()} {
  outbox_.on_state(
    pgi::watch_link(health_, &pgi::Health::set_database, m_.db_reconnects));
  publisher_.on_state(
    pgi::watch_link(health_, &pgi::Health::set_broker, m_.broker_reconnects));
  if (!o.cloudevents_source.empty())
    publisher_.set_source(o.cloudevents_source);
}

int Relay::run() {
  pgi::log("start",
           {{"relay", o_.name},
            {"version", pgi::version},
            {"exchange", o_.topology.exchange},
            {"unrouted_queue",
             o_.topology.unrouted.empty() ? "none" : o_.topology.unrouted},
            {"batch_size", std::to_string(o_.batch_size)},
            {"in_flight", std::to_string(o_.in_flight)},
            {"lease_ms", std::to_string(o_.lease_ms)},
            {"poll_interval_ms", std::to_string(o_.poll_ms)},
            {"max_attempts", std::to_string(o_.max_attempts)},
            {"once", o_.once ? "true" : "false"},
            {"listen", o_.listen ? "true" : "false"},
            {"cloudevents", o_.cloudevents ? "true" : "false"}});
  if (!o_.metrics_address.empty()) {
    server_ = std::make_unique<pgi::MetricsServer>(o_.metrics_address,
                                                   registry_, health_);
    pgi::log("metrics_listening", {{"address", o_.metrics_address},
                                   {"port", std::to_string(server_->port())},
                                   {"paths", "/metrics,/healthz"}});
  }
  sampler_ =
    std::make_unique<MetricsSampler>(o_.db, std::min(o_.stats_ms, 5000LL));
  try {
    loop();
  } catch (const pgi::Fatal &) {
    // write what the broker confirmed (best effort), then end
    try {
      if (!flights_.empty()) give_up_flights();
      if (!marks_.empty() && outbox_.connected()) flush();
    } catch (const std::exception &) {
    }
    stats(true);
    throw;
  }
  // a stop: write what the broker confirmed, then report
  if (!marks_.empty() && outbox_.connected()) flush();
  stats(true);
  return pgi::exit_ok;
}

void Relay::loop() {
  const bool crash_hook =
    pgi::env_flag("INVENTORY_RELAY_TEST_CRASH_AFTER_CONFIRM");
  const long long pause_hook = std::atoll(
    pgi::env_or("INVENTORY_RELAY_TEST_PAUSE_BEFORE_MARK_MS", "0").c_str());
  const long long sample_ms = std::min(o_.stats_ms, 5000LL);
  const std::size_t depth = static_cast<std::size_t>(o_.in_flight);
  // the last claim was full: the next one follows at once, even while
  // batches are in flight; after one that was not, the relay claims again
  // only when the batches in flight are done (and sleeps after an empty one)
  bool last_full = false;
  for (;;) {
    const bool stopping = pgi::stop_requested();
    if (stopping && flights_.empty()) break;
    if (pgi::now_ms() - last_stats_ms_ >= o_.stats_ms)
      stats(false);
    else if (server_ && pgi::now_ms() - last_sample_ms_ >= sample_ms)
      sample(nullptr); // the gauges, for /metrics
    if (!outbox_.ready()) {
      if (stopping) break; // the leases of the batches in flight run out
      continue;
    }
    if (o_.cloudevents && publisher_.source().empty())
      publisher_.set_source("/pg_inventory/" + outbox_.database());
    if (!marks_.empty()) {
      flush();
      if (!marks_.empty()) continue;
    }
    if (!publisher_.ready()) continue; // (nothing is in flight then)

    const bool claim_now =
      !stopping && flights_.size() < depth && (flights_.empty() || last_full);
    if (claim_now) {
      std::optional<Batch> claimed = outbox_.claim();
      if (!claimed) continue; // the database went away
      if (claimed->empty()) {
        last_full = false;
        if (flights_.empty()) {
          if (o_.once) break;
          publisher_.check(); // a broker gone while idle: noticed now
          outbox_.idle_wait(o_.poll_ms);
          continue;
        }
      } else {
        last_full = static_cast<long long>(claimed->size()) >= o_.batch_size;
        n_.claimed += static_cast<long long>(claimed->size());
        ++n_.batches;
        flights_.emplace_back();
        Flight &f = flights_.back();
        f.events = std::move(*claimed);
        f.claimed_ms = pgi::now_ms();
        if (!publisher_.send(f)) {
          give_up_flights(); // broker outage
          continue;
        }
      }
    }
    // read the verdicts: only what has come when another batch may be
    // claimed now, else wait for the oldest batch
    const bool more = !stopping && last_full && flights_.size() < depth;
    bool delivered;
    try {
      delivered =
        publisher_.receive(flights_, more ? 0 : o_.confirm_timeout_ms);
    } catch (const pgi::Fatal &) {
      // the broker refused the relay, not the events: no attempt counted
      give_up_flights();
      throw;
    }
    if (!delivered) {
      give_up_flights(); // broker outage
      continue;
    }
    // every batch with all its verdicts: one marking transaction for them
    std::vector<long long> done_claimed_ms;
    while (!flights_.empty() && flights_.front().done()) {
      Flight &f = flights_.front();
      for (const auto &e : f.events)
        if (e.confirmed() && e.age_at_claim >= 0)
          m_.publish_lag.Observe(e.age_at_claim +
                                 (e.acked_ms - f.claimed_ms) / 1000.0);
      settle(f.events);
      done_claimed_ms.push_back(f.claimed_ms);
      flights_.pop_front();
    }
    if (done_claimed_ms.empty()) continue;
    if (crash_hook && !marks_.published.empty()) {
      pgi::log("test_crash_after_confirm",
               {{"confirmed", std::to_string(marks_.published.size())}});
      std::raise(SIGKILL);
    }
    if (pause_hook > 0 && !marks_.empty()) {
      pgi::log("test_pause_before_mark",
               {{"pause_ms", std::to_string(pause_hook)}});
      pgi::sleep_unless_stopped(pause_hook);
    }
    flush();
    for (long long ms : done_claimed_ms)
      m_.batch_duration.Observe((pgi::now_ms() - ms) / 1000.0);
  }
}

void Relay::give_up_flights() {
  // what the broker acked is published; the rest goes back without
  // counting an attempt
  for (const auto &f : flights_)
    for (const auto &e : f.events)
      if (e.confirmed()) marks_.add_published(e);
  for (const auto &f : flights_) release(f.events);
  flights_.clear();
  if (outbox_.connected()) flush();
}

void Relay::settle(const Batch &batch) {
  long long failed = 0, dying = 0;
  std::vector<std::string> failed_ids;
  for (const auto &e : batch) {
    if (e.confirmed()) {
      marks_.add_published(e);
      continue;
    }
    ++(e.returned ? n_.returned : n_.nacked);
    (e.returned ? m_.failed_returned : m_.failed_nacked).Increment();
    marks_.add_failed(e);
    failed_ids.push_back(e.event_id);
    ++failed;
    if (e.attempts + 1 >= o_.max_attempts) {
      ++marks_.would_die;
      ++dying;
    }
    if (marks_.failed_error.empty())
      marks_.failed_error = e.returned ? e.error : "nacked by the broker";
  }
  if (failed > 0)
    pgi::log("publish_failed", {{"events", std::to_string(failed)},
                                {"event_ids", pgi::join_ids(failed_ids)},
                                {"dead_lettering", std::to_string(dying)},
                                {"error", marks_.failed_error}});
}

void Relay::flush() {
  if (marks_.empty()) return;
  const OutboxClient::WriteResult r = outbox_.write(marks_);
  if (r.status == OutboxClient::Written::retry) return;
  const long long asked =
    static_cast<long long>(marks_.published.size() + marks_.failed.size());
  if (r.status == OutboxClient::Written::dropped) {
    n_.mark_errors += asked;
    m_.mark_errors.Increment(static_cast<double>(asked));
    marks_ = Marks{};
    pgi::sleep_unless_stopped(1000);
    return;
  }
  // the functions act only on events whose lease this relay still holds:
  // the others were claimed by another relay after this lease ran out (a
  // batch slower than --lease) and are that relay's to mark
  const long long lost = asked - r.published - r.failed;
  if (lost > 0) {
    n_.lease_lost += lost;
    m_.lease_lost.Increment(static_cast<double>(lost));
    std::vector<std::string> ids = marks_.published_events;
    ids.insert(ids.end(), marks_.failed_events.begin(),
               marks_.failed_events.end());
    pgi::log("lease_lost",
             {{"events", std::to_string(lost)},
              {"of_event_ids", pgi::join_ids(ids)},
              {"hint", "a batch took longer than --lease; another relay "
                       "publishes these events again"}});
  }
  // the counters count what this relay marked (of the failed ones, which
  // were lost is not known: dead letters are counted first)
  n_.published += r.published;
  m_.published.Increment(static_cast<double>(r.published));
  const long long died = std::min(marks_.would_die, r.failed);
  n_.dead_lettered += died;
  m_.dead_lettered.Increment(static_cast<double>(died));
  n_.retried += r.failed - died;
  marks_ = Marks{};
}

void Relay::release(const Batch &batch) {
  std::vector<long long> ids;
  std::vector<std::string> event_ids;
  for (const auto &e : batch)
    if (!e.confirmed()) {
      ids.push_back(e.id);
      event_ids.push_back(e.event_id);
    }
  if (ids.empty()) return;
  const long long n = outbox_.release(ids, event_ids);
  if (n >= 0) {
    n_.released += n;
    m_.released.Increment(static_cast<double>(n));
  }
  pgi::log("released", {{"events", std::to_string(n >= 0 ? n : 0)},
                        {"event_ids", pgi::join_ids(event_ids)},
                        {"note", n >= 0 ? "given back, no attempt counted"
                                        : "database away: the leases run "
                                          "out by themselves"}});
}

OutboxClient::Metrics Relay::sample(long long *unrouted_out, bool fresh) {
  // the sampler's last read; at exit a read of its own, so that the final
  // line says what the relay left behind
  const OutboxClient::Metrics m =
    fresh || !sampler_ ? outbox_.metrics() : sampler_->latest();
  // the depth is a passive queue.declare on the publishing channel, which
  // the broker answers only after the messages published before it: asked
  // while batches are in flight, a busy broker would keep it waiting past
  // the RPC timeout and the connection would be dropped.  So it is read
  // between batches only, and the last value stands meanwhile.
  if (flights_.empty()) unrouted_ = publisher_.unrouted_depth();
  const long long unrouted = unrouted_;
  if (m.known) {
    m_.backlog.Set(static_cast<double>(m.unpublished_n));
    m_.retrying.Set(static_cast<double>(m.retrying_n));
    m_.outbox_dead.Set(static_cast<double>(m.dead_lettered_n));
    m_.oldest_age.Set(m.lag);
    if (m.below_low_water_n >= 0)
      m_.below_low_water.Set(static_cast<double>(m.below_low_water_n));
    m_.published_age.Set(m.published_age);
  }
  if (unrouted >= 0) m_.unrouted.Set(static_cast<double>(unrouted));
  if (unrouted_out != nullptr) *unrouted_out = unrouted;
  last_sample_ms_ = pgi::now_ms();
  return m;
}

void Relay::stats(bool final) {
  long long unrouted = -1;
  const OutboxClient::Metrics m = sample(&unrouted, final);
  pgi::log(final ? "stats_final" : "stats",
           {{"relay", o_.name},
            {"published", std::to_string(n_.published)},
            {"retried", std::to_string(n_.retried)},
            {"dead_lettered", std::to_string(n_.dead_lettered)},
            {"returned", std::to_string(n_.returned)},
            {"nacked", std::to_string(n_.nacked)},
            {"released", std::to_string(n_.released)},
            {"lease_lost", std::to_string(n_.lease_lost)},
            {"mark_errors", std::to_string(n_.mark_errors)},
            {"batches", std::to_string(n_.batches)},
            {"reconnects", std::to_string(publisher_.reconnects())},
            {"db_reconnects", std::to_string(outbox_.reconnects())},
            {"outbox_unpublished", m.unpublished},
            {"outbox_dead_lettered", m.dead_lettered},
            {"lag_seconds", m.lag_seconds},
            {"unrouted_queue_messages",
             unrouted >= 0 ? std::to_string(unrouted) : "?"}});
  last_stats_ms_ = pgi::now_ms();
}

} // namespace relay
