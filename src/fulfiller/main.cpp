// src/fulfiller/main.cpp: inventory-fulfiller, the fulfillment consumer:
// turns reservation.confirmed events into fulfillment requests, exactly
// once per event_id (inbox row in the transaction of the effect, ack after
// the commit).
//
//   options.*    the flags, their environment variables and their checks
//   store.*      the SQL side: schema, inbox, effect
//   fulfiller.*  the AMQP side and the loop
//   metrics.*    its Prometheus metrics (served with --metrics-address)
//   schema.sql   the fulfiller's own schema (compiled in as schema.h)
// and src/common for what the relay shares.
//
// Test hook: INVENTORY_FULFILLER_TEST_CRASH_AFTER_COMMIT=1 kills the
// process (SIGKILL) after the first commit of an effect, before the ack.
#include "fulfiller.h"
#include "options.h"
#include "program.h"

int main(int argc, char **argv) {
  fulfiller::Options o;
  pgi::OptionSet set{
    "inventory-fulfiller",
    "Consumes reservation.confirmed events and writes fulfillment "
    "requests, exactly once per event_id (inbox table, ack after commit).",
    pgi::version_line("inventory-fulfiller", fulfiller::min_extension)};
  fulfiller::declare_options(set, o);
  return pgi::run_program(set, argc, argv, [&o] {
    fulfiller::Fulfiller f{o};
    return f.run();
  });
}
