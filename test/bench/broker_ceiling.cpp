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
// It publishes into a topology of its own (exchange bench-ceiling, its
// alternate exchange and queue bench-ceiling.unrouted, and --audit-queue
// bound with '#'), never into the relay's exchange unless told to with
// --exchange, and leaves its messages in the audit queue: run it against a
// throwaway broker (make bench's) and purge or delete the queue after.  Of
// the relay's options it uses the broker's (--amqp-url, --exchange,
// --unrouted-*, --tls-*), --batch-size, --in-flight, --confirm-timeout,
// --audit-queue, --cloudevents and --log-format; the others are accepted
// and ignored.
//
// Output (one line, key=value, on stdout, on every path past the
// options, a broker that cannot be reached included):
//   messages=N confirmed=N seconds=S rate=MSG_PER_S nacked=N returned=N
// SIGTERM/SIGINT: no further batch is sent; the batches in flight are
// confirmed, the line printed (messages is what was asked) and the exit
// code is 1.  Exit codes: 0 every message confirmed; 1 stopped, or some
// nacked or returned, or the broker went away or could not be reached
// (the line still says how many were confirmed); as the relay's: 64 usage,
// 70 unexpected error, 77 no permission (credentials), 78 configuration.
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
  o.topology.exchange = "bench-ceiling";
  relay::declare_options(set, o);
  set.count("--messages", "", &messages, 1, 100000000, "events to publish");
  set.count("--payload-bytes", "", &payload_bytes, 256, 1000000,
            "size of each event's body in bytes (padded JSON)");
  set.epilog(
    "Uses the broker's options, --batch-size, --in-flight, "
    "--confirm-timeout,\n--audit-queue, --cloudevents and --log-format; "
    "the relay's other options are\naccepted and ignored (no database is "
    "used).  Publishes into exchange bench-ceiling\nunless --exchange says "
    "otherwise and leaves its messages in --audit-queue: run it\nagainst a "
    "throwaway broker.\nSIGTERM/SIGINT: send nothing more, wait for the "
    "batches in flight, print, exit 1.\nExit codes: 0 every message "
    "confirmed, 1 stopped or not every message confirmed,\n64 usage, 70 "
    "unexpected error, 77 no permission, 78 configuration.\n");
  return pgi::run_program(set, argc, argv, [&] {
    relay::Publisher publisher{o};
    const std::size_t depth = static_cast<std::size_t>(o.in_flight);
    std::deque<relay::Flight> flights;
    long long made = 0, confirmed = 0, nacked = 0, returned = 0;
    const long long start = pgi::now_ms();
    // the broker's verdict (the log says why when it is unreachable)
    bool failed = !publisher.ready();
    bool stopped = false;
    while (((!stopped && made < messages) || !flights.empty()) && !failed) {
      // a stop: nothing more is sent, the batches in flight are confirmed
      if (!stopped && pgi::stop_requested()) stopped = true;
      // as the relay after a full claim: the next batch goes out while
      // up to --in-flight are unconfirmed
      if (!stopped && made < messages && flights.size() < depth) {
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
          if (e.confirmed()) {
            ++confirmed;
          } else {
            ++(e.returned ? returned : nacked);
            failed = true;
          }
        flights.pop_front();
      }
    }
    const double seconds = (pgi::now_ms() - start) / 1000.0;
    std::printf(
      "messages=%lld confirmed=%lld seconds=%.3f rate=%.0f nacked=%lld "
      "returned=%lld\n",
      messages, confirmed, seconds, seconds > 0 ? confirmed / seconds : 0.0,
      nacked, returned);
    return failed || stopped || confirmed != messages ? 1 : 0;
  });
}
