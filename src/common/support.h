// src/common/support.h: everything src/common offers, in one include (the
// test-support library takes env_or and the AMQP connection from here).
//
//   log.h          one-line key=value logs on stderr
//   cli.h          declared options with environment fallbacks, UsageError
//   failure.h      exit codes and Fatal: permanent failures end the program
//   retry.h        backoff with jitter, stop signals, Link: the one
//                  connection policy for PostgreSQL and RabbitMQ
//   amqp_client.h  broker URL, connection, reply checks
//   pg_client.h    connecting to PostgreSQL, error classes, start checks
//   program.h      the main() frame and the shared options
//   metrics_server.h  /metrics and /healthz over HTTP (prometheus-cpp)
#ifndef PG_INVENTORY_COMMON_SUPPORT_H
#define PG_INVENTORY_COMMON_SUPPORT_H

#include "amqp_client.h"
#include "cli.h"
#include "failure.h"
#include "log.h"
#include "metrics_server.h"
#include "pg_client.h"
#include "program.h"
#include "retry.h"

#endif
