// test/bench/broker_ceiling.cpp: bench-broker-ceiling, the relay without
// the database (make bench, issue #12 goal 5).
//
// Publishes --messages synthetic events through the relay's own Publisher
// (src/relay/publisher.cpp: the same topology, persistent mandatory
// messages, publisher confirms, batches of --batch-size with --in-flight of
// them unconfirmed at once, the same loop shape as Relay::loop) and prints
// how fast the broker confirmed them.  No database is read or written: the
// figure is the ceiling the broker and the publishing code put on any relay
// on this machine, what the backlog drain of make bench is compared with.
//
//   bench-broker-ceiling --amqp-url URL --audit-queue QUEUE
//       [--batch-size N] [--in-flight N] [relay's other broker flags]
//       --messages N --payload-bytes N
//
// Output (one line, key=value, on stdout):
//   messages=N confirmed=N seconds=S rate=MSG_PER_S
// Exit codes: 0 every message confirmed; 1 some nacked, returned or the
// broker went away (the line still says how many were confirmed); the
// relay's usage (64) and configuration (78) codes for bad flags.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <string>

#include "log.h"
#include "options.h"
#include "program.h"
#include "publisher.h"
#include "retry.h"

namespace {

/// The payload of event N: a JSON object of about BYTES bytes, shaped like
/// a reservation.reserved event (uuid, keys, one line).
std::string payload(long long n, long long bytes) {
  std::string p = "{\"event_type\": \"reservation.reserved\", \"tenant\": "
                  "\"bench\", \"request_key\": \"order-" +
                  std::to_string(n) +
                  "\", \"state\": \"pending\", \"lines\": [{\"sku\": "
                  "\"sku-1\", \"quantity\": 1}], \"pad\": \"";
  const std::size_t want = static_cast<std::size_t>(bytes);
  if (p.size() + 2 < want) p.append(want - p.size() - 2, 'x');
  p += "\"}";
  return p;
}

/// A version-4-looking uuid made from N (message_id; not random: unique is
/// all the broker needs)
std::string uuid(long long n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(n));
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  relay::Options o;
  long long messages = 100000, payload_bytes = 400;
  pgi::OptionSet set{
    "bench-broker-ceiling",
    "Publishes synthetic events through the relay's publisher, without a "
    "database, and prints the rate the broker confirms them at.",
    "bench-broker-ceiling (pg_inventory make bench)"};
  relay::declare_options(set, o);
  set.count("--messages", "", &messages, 1, 100000000,
            "events to publish [default 100000]");
  set.count("--payload-bytes", "", &payload_bytes, 64, 1000000,
            "size of each event's body [default 400]");
  return pgi::run_program(set, argc, argv, [&] {
    relay::Publisher publisher{o};
    if (!publisher.ready()) {
      pgi::log("broker_unreachable", {});
      return 1;
    }
    const std::size_t depth = static_cast<std::size_t>(o.in_flight);
    std::deque<relay::Flight> flights;
    long long made = 0, confirmed = 0;
    bool failed = false;
    const long long start = pgi::now_ms();
    while ((made < messages || !flights.empty()) && !failed) {
      // as the relay after a full claim: the next batch goes out while
      // up to --in-flight are unconfirmed
      if (made < messages && flights.size() < depth) {
        flights.emplace_back();
        relay::Flight &f = flights.back();
        const long long n = std::min(o.batch_size, messages - made);
        f.events.reserve(static_cast<std::size_t>(n));
        for (long long i = 0; i < n; ++i, ++made) {
          relay::Event e;
          e.id = made + 1;
          e.event_id = uuid(made + 1);
          e.event_type = "reservation.reserved";
          e.payload = payload(made + 1, payload_bytes);
          f.events.push_back(std::move(e));
        }
        f.claimed_ms = pgi::now_ms();
        if (!publisher.send(f)) failed = true;
        continue;
      }
      if (!publisher.receive(flights, o.confirm_timeout_ms)) failed = true;
      while (!flights.empty() && flights.front().done()) {
        for (const auto &e : flights.front().events)
          if (e.confirmed())
            ++confirmed;
          else
            failed = true;
        flights.pop_front();
      }
    }
    const double seconds = (pgi::now_ms() - start) / 1000.0;
    std::printf("messages=%lld confirmed=%lld seconds=%.3f rate=%.0f\n",
                messages, confirmed, seconds,
                seconds > 0 ? confirmed / seconds : 0.0);
    return failed || confirmed != messages ? 1 : 0;
  });
}
