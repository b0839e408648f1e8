// src/fulfiller/options.cpp: the fulfiller's options (options.h).
#include "options.h"

namespace fulfiller {

void declare_options(pgi::OptionSet &set, Options &o) {
  pgi::add_common_options(set, o, "INVENTORY_FULFILLER_DB",
                          "INVENTORY_FULFILLER_STATS_INTERVAL",
                          "INVENTORY_FULFILLER_METRICS_ADDRESS");
  set.text("--queue", "INVENTORY_FULFILLER_QUEUE", &o.queue, "NAME",
           "durable queue bound to the exchange with reservation.confirmed");
  set.count("--prefetch", "INVENTORY_FULFILLER_PREFETCH", &o.prefetch, 1,
            65535, "unacknowledged messages in flight");
  set.count("--once-idle-ms", "INVENTORY_FULFILLER_ONCE_IDLE_MS",
            &o.once_idle_ms, 0, 86400000,
            "exit 0 after this many milliseconds without a message (0: "
            "never; tests)");
  set.toggle("--skip-schema", "INVENTORY_FULFILLER_SKIP_SCHEMA",
             &o.skip_schema,
             "do not run the schema script at start (when the role may not "
             "create schema fulfillment; the setup ran it)");
  set.toggle("--compensate-unknown-sku",
             "INVENTORY_FULFILLER_COMPENSATE_UNKNOWN_SKU",
             &o.compensate_unknown_sku,
             "undo the sale (inventory.compensate) of a confirmed reservation "
             "with a SKU not in fulfillment.warehouse_sku; without it such "
             "an event is held in fulfillment.held until the SKU is added");
  set.duration("--recheck-held", "INVENTORY_FULFILLER_RECHECK_HELD",
               &o.recheck_held_ms, 1000, 86400000,
               "how often held events whose SKUs were added since become "
               "requests");
  set.check([&o] {
    if (o.queue.empty() || o.queue.size() > 255)
      throw pgi::UsageError("--queue must have 1 to 255 bytes");
  });
  set.epilog(
    "Durations: 250ms, 30s, 2m, 1h, 1d (a bare number is seconds).\n"
    "SIGTERM/SIGINT: finish the message in hand, log the counters, exit 0.\n"
    "Exit codes: 0 stopped, 64 usage, 70 unexpected error, 77 no "
    "permission\n(authentication, privileges), 78 configuration (see README "
    "section 7).\n");
}

} // namespace fulfiller
