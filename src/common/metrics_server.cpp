// src/common/metrics_server.cpp: the /metrics and /healthz endpoint
// (metrics_server.h).
#include "metrics_server.h"

#include <cctype>
#include <cstring>

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/exposer.h>

#include "cli.h"
#include "failure.h"
#include "log.h"

namespace pgi {

namespace {

/// The Health that /healthz reports: civetweb's begin_request callback has
/// no user pointer, and there is one server per process.
std::atomic<const Health *> served_health{nullptr};

/// civetweb's begin_request: answers /healthz; anything else (0) goes on
/// to prometheus-cpp's handlers (/metrics) or a 404.
int begin_request(struct mg_connection *conn) {
  const mg_request_info *ri = mg_get_request_info(conn);
  if (ri == nullptr || ri->local_uri == nullptr ||
      std::strcmp(ri->local_uri, "/healthz") != 0)
    return 0;
  const Health *h = served_health.load();
  const bool ok = h != nullptr && h->ok();
  const std::string body =
    (h != nullptr ? h->describe() : std::string("unavailable: starting")) +
    "\n";
  const bool head = ri->request_method != nullptr &&
                    std::strcmp(ri->request_method, "HEAD") == 0;
  mg_printf(conn,
            "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: %zu\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\n",
            ok ? "200 OK" : "503 Service Unavailable", body.size());
  if (!head) mg_write(conn, body.data(), body.size());
  return ok ? 200 : 503;
}

} // namespace

std::string Health::describe() const {
  const bool d = db_, b = broker_;
  return std::string(d && b ? "ok" : "unavailable") + ": database " +
         (d ? "connected" : "not connected") + ", broker " +
         (b ? "connected" : "not connected");
}

void check_metrics_address(const std::string &address,
                           const std::string &what) {
  if (address.empty()) return;
  const auto colon = address.rfind(':');
  const auto bad = [&](const std::string &why) {
    return UsageError(what + ": \"" + address + "\" " + why +
                      " (HOST:PORT, e.g. 127.0.0.1:9187 or 0.0.0.0:9187)");
  };
  if (colon == std::string::npos || colon == 0) throw bad("is not an address");
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      std::stol(port) > 65535)
    throw bad("has no port from 0 to 65535");
  // civetweb's listening_ports: a comma would name a second listener, a
  // letter after the port a TLS or redirecting one
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-'))
      throw bad("has a host that is neither an IPv4 address nor a name");
}

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
          1,     2.5,    5,     10,   30,    60,   120, 300};
}

MetricsServer::MetricsServer(
  const std::string &address,
  const std::shared_ptr<prometheus::Registry> &registry,
  const Health &health) {
  CivetCallbacks callbacks;
  callbacks.begin_request = begin_request;
  served_health = &health;
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, 2, &callbacks);
  } catch (const std::exception &e) {
    served_health = nullptr;
    throw Fatal(exit_config,
                "cannot serve metrics on " + address + ": " + e.what(),
                "give --metrics-address a HOST:PORT of this machine that "
                "no other program listens on (port 0: any free port)");
  }
  exposer_->RegisterCollectable(registry);
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
}

MetricsServer::~MetricsServer() {
  exposer_.reset(); // stops the server's threads first
  served_health = nullptr;
}

std::function<void(bool)> watch_link(Health &health,
                                     void (Health::*set)(bool),
                                     prometheus::Counter &reconnects) {
  return [&health, set, &reconnects, first = true](bool up) mutable {
    (health.*set)(up);
    if (up && !first) reconnects.Increment();
    if (up) first = false;
  };
}

} // namespace pgi
