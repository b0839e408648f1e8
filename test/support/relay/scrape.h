// test/support/relay/scrape.h: the test side of the programs' HTTP
// endpoint (--metrics-address, src/common/metrics_server.h): a plain
// HTTP/1.0 GET on loopback, the value of a series in a Prometheus text
// exposition, and the port a program logged.
#ifndef PG_INVENTORY_TEST_SUPPORT_RELAY_SCRAPE_H
#define PG_INVENTORY_TEST_SUPPORT_RELAY_SCRAPE_H

#include <chrono>
#include <optional>
#include <string>

#include "support/relay/process.h"

namespace pgi::test {

/// An HTTP answer; status 0 when nothing answered.
struct HttpResponse {
  int status = 0;
  std::string body;
};

/// GET PATH from 127.0.0.1:PORT (HTTP/1.0, 5 s at most).
HttpResponse http_get(int port, const std::string &path);

/// The value of SERIES (a name with its labels as the exposition writes
/// them, e.g. `inventory_relay_events_failed_total{reason="nacked"}`) in
/// the text exposition BODY; nullopt when it is not there.
std::optional<double> metric(const std::string &body,
                             const std::string &series);

/// The value of SERIES on the /metrics of PORT now (nullopt: not there, or
/// no answer).
std::optional<double> scrape(int port, const std::string &series);

/// Polls (up to TIMEOUT) until SERIES on the /metrics of PORT equals
/// VALUE; true when it does.
bool metric_becomes(int port, const std::string &series, double value,
                    std::chrono::milliseconds timeout = std::chrono::seconds{
                      20});

/// Polls (up to TIMEOUT) until /healthz of PORT answers STATUS; true when
/// it does.
bool health_becomes(int port, int status,
                    std::chrono::milliseconds timeout = std::chrono::seconds{
                      30});

/// The port P logged in its event=metrics_listening line (text or JSON
/// logs), polling up to 10 s for the line; 0 when it did not come.
int metrics_port(const Process &p);

} // namespace pgi::test

#endif
