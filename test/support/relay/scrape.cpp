// test/support/relay/scrape.cpp: HTTP GET and Prometheus text (scrape.h).
#include "support/relay/scrape.h"

#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "support/database.h"

namespace pgi::test {

HttpResponse http_get(int port, const std::string &path) {
  HttpResponse res;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return res;
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a;
  std::memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string raw;
  if (connect(fd, reinterpret_cast<struct sockaddr *>(&a), sizeof a) == 0) {
    const std::string req =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(req.size())) {
      char buf[8192];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof buf, 0)) > 0) raw.append(buf, n);
    }
  }
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) return res;
  res.status = std::atoi(raw.c_str() + 9);
  const auto end = raw.find("\r\n\r\n");
  if (end != std::string::npos) res.body = raw.substr(end + 4);
  return res;
}

std::optional<double> metric(const std::string &body,
                             const std::string &series) {
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) != 0) continue;
    const std::string v = line.substr(series.size() + 1);
    try {
      return std::stod(v);
    } catch (const std::exception &) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<double> scrape(int port, const std::string &series) {
  const HttpResponse r = http_get(port, "/metrics");
  if (r.status != 200) return std::nullopt;
  return metric(r.body, series);
}

bool metric_becomes(int port, const std::string &series, double value,
                    std::chrono::milliseconds timeout) {
  return poll_until(
    [&] {
      const auto v = scrape(port, series);
      return v && *v == value;
    },
    timeout, 50ms);
}

bool health_becomes(int port, int status, std::chrono::milliseconds timeout) {
  return poll_until(
    [&] { return http_get(port, "/healthz").status == status; }, timeout,
    100ms);
}

int metrics_port(const Process &p) {
  int port = 0;
  poll_until(
    [&] {
      for (const auto &line : log_lines(p, "metrics_listening")) {
        auto at = line.find(" port=");
        if (at != std::string::npos) {
          port = std::atoi(line.c_str() + at + 6);
          return true;
        }
      }
      const std::string log = p.log();
      const auto json = log.find("\"event\":\"metrics_listening\"");
      if (json != std::string::npos) {
        const auto at = log.find("\"port\":\"", json);
        if (at != std::string::npos) {
          port = std::atoi(log.c_str() + at + 8);
          return true;
        }
      }
      return false;
    },
    10s, 20ms);
  return port;
}

} // namespace pgi::test
