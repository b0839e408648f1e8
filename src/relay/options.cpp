// src/relay/options.cpp: the relay's options and their checks (options.h).
#include "options.h"

#include <cstring>
#include <unistd.h>

namespace relay {

namespace {

/// Throws UsageError unless NAME is valid UTF-8 of 1 to 64 characters
/// without control characters (what relay_claim accepts).
void check_name(const std::string &name) {
  long long chars = 0;
  for (std::size_t i = 0; i < name.size();) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    int len = c < 0x80         ? 1
              : (c >> 5) == 6  ? 2
              : (c >> 4) == 14 ? 3
              : (c >> 3) == 30 ? 4
                               : 0;
    if (len == 0 || i + len > name.size())
      throw pgi::UsageError("--name must be valid UTF-8");
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(name[i + k]) >> 6) != 2)
        throw pgi::UsageError("--name must be valid UTF-8");
    if (c < 0x20 || c == 0x7f)
      throw pgi::UsageError("--name must not contain control characters");
    i += len;
    ++chars;
  }
  if (chars < 1 || chars > 64)
    throw pgi::UsageError("--name must have 1 to 64 characters (got " +
                          std::to_string(chars) + ")");
}

/// Throws UsageError unless SOURCE is "" (the default) or a plausible
/// URI-reference: 1 to 1024 bytes, no spaces or control characters.
void check_source(const std::string &source) {
  if (source.size() > 1024)
    throw pgi::UsageError("--cloudevents-source must have at most 1024 bytes");
  for (char c : source)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      throw pgi::UsageError("--cloudevents-source must be a URI-reference "
                            "without spaces or control characters (e.g. "
                            "/pg_inventory/shop or urn:example:inventory)");
}

} // namespace

std::string default_name() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  std::string h = host;
  for (auto &c : h)
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f)
      c = '_';
  return h.substr(0, 50) + "-" + std::to_string(getpid());
}

void declare_options(pgi::OptionSet &set, Options &o) {
  pgi::add_common_options(set, o, "INVENTORY_RELAY_DB",
                          "INVENTORY_RELAY_STATS_INTERVAL",
                          "INVENTORY_RELAY_METRICS_ADDRESS");
  set.count("--batch-size", "INVENTORY_RELAY_BATCH_SIZE", &o.batch_size, 1,
            10000, "events per claim");
  set.count("--in-flight", "INVENTORY_RELAY_IN_FLIGHT", &o.in_flight, 1, 16,
            "batches published and waiting for the broker's confirms at "
            "once (1: one batch at a time)");
  set.duration("--lease", "INVENTORY_RELAY_LEASE", &o.lease_ms, 1, 3600000,
               "how long a claimed batch stays the relay's");
  set.count("--poll-interval-ms", "INVENTORY_RELAY_POLL_INTERVAL_MS",
            &o.poll_ms, 1, 60000,
            "sleep in milliseconds after a claim that found nothing");
  set.count("--max-attempts", "INVENTORY_RELAY_MAX_ATTEMPTS", &o.max_attempts,
            1, 1000,
            "failed publishes of an event before it is a dead letter");
  set.duration("--backoff", "INVENTORY_RELAY_BACKOFF", &o.backoff_ms, 1,
               86400000,
               "retry delay after a failed publish: backoff x 2^attempts, "
               "capped by --max-backoff, with jitter");
  set.duration("--max-backoff", "INVENTORY_RELAY_MAX_BACKOFF",
               &o.max_backoff_ms, 1, 7 * 86400000LL, "longest retry delay");
  set.duration("--confirm-timeout", "INVENTORY_RELAY_CONFIRM_TIMEOUT",
               &o.confirm_timeout_ms, 1, 3600000,
               "a batch without every confirm by then counts as a broker "
               "outage");
  o.name = default_name();
  set.text("--name", "INVENTORY_RELAY_NAME", &o.name, "NAME",
           "relay name on the leases, 1 to 64 characters", "hostname-pid");
  set.text("--audit-queue", "INVENTORY_RELAY_AUDIT_QUEUE", &o.audit_queue,
           "NAME", "also declare durable queue NAME bound with '#'");
  set.toggle("--once", "INVENTORY_RELAY_ONCE", &o.once,
             "drain until a claim finds nothing, then exit 0");
  set.toggle("--listen", "INVENTORY_RELAY_LISTEN", &o.listen,
             "also wake up on NOTIFY (the extension does not NOTIFY by "
             "default: in PostgreSQL 15 notifying transactions commit one "
             "at a time)");
  set.text("--channel", "INVENTORY_RELAY_CHANNEL", &o.channel, "NAME",
           "LISTEN channel of --listen");
  set.toggle("--cloudevents", "INVENTORY_RELAY_CLOUDEVENTS", &o.cloudevents,
             "publish in the CloudEvents AMQP binding, binary content mode: "
             "headers cloudEvents:specversion, :id, :source, :type and "
             ":time besides the usual properties; the body as without it");
  set.text("--cloudevents-source", "INVENTORY_RELAY_CLOUDEVENTS_SOURCE",
           &o.cloudevents_source, "URI-REFERENCE",
           "the cloudEvents:source of every event (with --cloudevents)",
           "/pg_inventory/DATABASE");
  set.check([&o] {
    check_name(o.name);
    check_source(o.cloudevents_source);
  });
  set.epilog(
    "Durations: 250ms, 30s, 2m, 1h, 1d (a bare number is seconds).\n"
    "SIGTERM/SIGINT: finish the batches in flight, log the counters, exit "
    "0.\n"
    "Exit codes: 0 stopped or drained, 64 usage, 70 unexpected error, 77 "
    "no permission\n(authentication, privileges), 78 configuration (see "
    "README section 7).\n");
}

} // namespace relay
