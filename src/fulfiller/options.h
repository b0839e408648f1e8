// src/fulfiller/options.h: the options of inventory-fulfiller (--help
// lists them with their environment variables; README section 7).
#ifndef PG_INVENTORY_FULFILLER_OPTIONS_H
#define PG_INVENTORY_FULFILLER_OPTIONS_H

#include <string>

#include "program.h"

namespace fulfiller {

/// The oldest extension version the fulfiller works with (compensate).
inline const char *const min_extension = "0.1";

/// The event type the fulfiller acts on.
inline const char *const confirmed_type = "reservation.confirmed";

struct Options : pgi::CommonOptions {
  std::string queue = "fulfillment";
  long long prefetch = 50;
  long long once_idle_ms = 0;
  bool skip_schema = false;
  bool compensate_unknown_sku = false;
  long long recheck_held_ms = 30000;
};

/// Declares the fulfiller's options, bound to O, in SET.
void declare_options(pgi::OptionSet &set, Options &o);

} // namespace fulfiller

#endif
