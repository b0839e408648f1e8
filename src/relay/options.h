// src/relay/options.h: the options of inventory-relay (--help lists them
// with their environment variables; README section 7 has the table).
#ifndef PG_INVENTORY_RELAY_OPTIONS_H
#define PG_INVENTORY_RELAY_OPTIONS_H

#include <string>

#include "program.h"

namespace relay {

/// The oldest extension version the relay works with: 0.4 made leases
/// owned (relay_mark_* act only on the relay's own leases and return how
/// many they marked).
inline const char *const min_extension = "0.4";

/// Everything the relay is told, after the checks: each value is one the
/// extension accepts (batch 1 to 10000, lease above 0 and at most 1 h, a
/// name of 1 to 64 characters without control characters, max_attempts 1
/// to 1000, backoff at most 1 day, max_backoff at most 7 days).
struct Options : pgi::CommonOptions {
  long long batch_size = 100;
  long long in_flight = 2;
  long long lease_ms = 30000;
  long long poll_ms = 100;
  long long max_attempts = 10;
  long long backoff_ms = 1000;
  long long max_backoff_ms = 300000;
  long long confirm_timeout_ms = 15000;
  std::string name;
  std::string audit_queue;
  bool once = false;
  bool listen = false;
  std::string channel = "inventory_outbox";
  /// Publish in the CloudEvents AMQP binding, binary content mode
  /// (publisher.h).
  bool cloudevents = false;
  /// The CloudEvents source; "" until known: /pg_inventory/DATABASE.
  std::string cloudevents_source;
};

/// Declares the relay's options, bound to O, in SET.
void declare_options(pgi::OptionSet &set, Options &o);

/// hostname-pid, cut to fit 64 characters: the default relay name.
std::string default_name();

} // namespace relay

#endif
