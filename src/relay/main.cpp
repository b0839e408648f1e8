// src/relay/main.cpp: inventory-relay, the outbox relay: moves committed
// outbox events to RabbitMQ with publisher confirms, at least once.
//
//   options.*    the flags, their environment variables and their checks
//   outbox.*     the SQL side: claim, mark, release, metrics
//   publisher.*  the AMQP side: topology, publish, confirms, returns
//   relay.*      the loop between the two
//   metrics.*    its Prometheus metrics (served with --metrics-address)
//   batch.h      a claimed batch and the marks still to write
// and src/common for what the fulfiller shares (logs, options, the
// connection and retry policy, exit codes).
#include "options.h"
#include "program.h"
#include "relay.h"

int main(int argc, char **argv) {
  relay::Options o;
  pgi::OptionSet set{
    "inventory-relay",
    "Publishes pg_inventory outbox events to RabbitMQ with publisher "
    "confirms (at least once).",
    pgi::version_line("inventory-relay", relay::min_extension)};
  relay::declare_options(set, o);
  return pgi::run_program(set, argc, argv, [&o] {
    relay::Relay r{o};
    return r.run();
  });
}
