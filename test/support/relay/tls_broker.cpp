// test/support/relay/tls_broker.cpp: a RabbitMQ node with a TLS listener
// (tls_broker.h).
#include "support/relay/tls_broker.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h" // src/common: pgi::env_or

namespace pgi::test {

namespace {

std::string script() {
  return pgi::env_or("RMQ_SCRIPT", RABBITMQ_SCRIPT);
}

/// The variables of the environment's broker, which must not leak into the
/// new node's start.
const char *const unset_node =
  "unset RMQ_DIR RMQ_PORT RMQ_DIST_PORT RMQ_EPMD_PORT RMQ_NODENAME "
  "RMQ_TLS_PORT RMQ_TLS_DIR INVENTORY_AMQP_URL; ";

} // namespace

std::string shell(const std::string &command, int *status) {
  const std::string path = "/tmp/pgi_shell.XXXXXX";
  std::string tmpl = path;
  const int fd = mkstemp(tmpl.data());
  if (fd >= 0) close(fd);
  std::ofstream(tmpl) << command << "\n";
  FILE *out = popen(("bash " + tmpl).c_str(), "r");
  std::string text;
  if (out != nullptr) {
    char buf[4096];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, out)) > 0) text.append(buf, n);
    const int rc = pclose(out);
    if (status != nullptr) *status = rc;
  } else if (status != nullptr) {
    *status = -1;
  }
  std::remove(tmpl.c_str());
  return text;
}

TlsBroker::TlsBroker() {
  char tmpl[] = "/tmp/pgi_tls_broker.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    why_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  int rc = 0;
  const std::string out =
    shell(std::string(unset_node) + "source '" + script() + "' || exit 1\n" +
            "rmq_tls_files '" + dir_ + "/tls' || exit 1\n" + "RMQ_DIR='" +
            dir_ + "/node' RMQ_TLS_DIR='" + dir_ + "/tls' rmq_start >'" +
            dir_ + "/start.log' 2>&1 || { cat '" + dir_ +
            "/start.log'; exit 1; }\n" + "echo \"$RMQ_PORT $RMQ_TLS_PORT\"\n",
          &rc);
  std::istringstream ports(out);
  if (rc != 0 || !(ports >> plain_port_ >> tls_port_)) {
    why_ = "the TLS node did not start: " + out;
    return;
  }
  ok_ = true;
}

TlsBroker::~TlsBroker() {
  if (dir_.empty()) return;
  if (!std::ifstream(dir_ + "/node/node.env").good()) {
    shell("rm -rf '" + dir_ + "'");
    return;
  }
  shell(std::string(unset_node) + "source '" + script() + "'; source '" +
        dir_ + "/node/node.env'; rmq_destroy >/dev/null 2>&1; rm -rf '" +
        dir_ + "'");
}

std::string TlsBroker::plain_url() const {
  return "amqp://guest:guest@127.0.0.1:" + std::to_string(plain_port_);
}

std::string TlsBroker::tls_url(const std::string &host) const {
  return "amqps://guest:guest@" + host + ":" + std::to_string(tls_port_);
}

std::string TlsBroker::file(const std::string &name) const {
  return dir_ + "/tls/" + name;
}

std::string TlsBroker::ctl(const std::string &args) const {
  return shell(std::string(unset_node) + "source '" + script() +
               "'; source '" + dir_ + "/node/node.env'; rmq_ctl " + args);
}

} // namespace pgi::test
