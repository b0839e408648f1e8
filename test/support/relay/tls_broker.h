// test/support/relay/tls_broker.h: a throwaway RabbitMQ node with a TLS
// listener, for the TLS tests: a new CA and certificates made with openssl
// (test/scripts/rabbitmq.sh, rmq_tls_files), a node of its own
// (rmq_start with RMQ_TLS_DIR) beside the environment's broker, removed at
// the end.
#ifndef PG_INVENTORY_TEST_SUPPORT_RELAY_TLS_BROKER_H
#define PG_INVENTORY_TEST_SUPPORT_RELAY_TLS_BROKER_H

#include <string>

namespace pgi::test {

class TlsBroker {
 public:
  /// Makes the CA and the certificates and starts the node (10 s or so).
  /// ok() says whether it worked; why() says why not.
  TlsBroker();
  /// Stops the node and removes its folder.
  ~TlsBroker();
  TlsBroker(const TlsBroker &) = delete;
  TlsBroker &operator=(const TlsBroker &) = delete;

  bool ok() const { return ok_; }
  const std::string &why() const { return why_; }

  /// The node's plain listener: amqp://guest:guest@127.0.0.1:PORT.
  std::string plain_url() const;
  /// The plain listener's port and the TLS listener's.
  int plain_port() const { return plain_port_; }
  int tls_port() const { return tls_port_; }
  /// amqps://guest:guest@HOST:TLS_PORT.
  std::string tls_url(const std::string &host = "localhost") const;
  /// The files of rmq_tls_files: ca.pem, other-ca.pem, client.pem,
  /// client.key, ...
  std::string file(const std::string &name) const;
  /// `rabbitmqctl ARGS` on this node; its standard output.
  std::string ctl(const std::string &args) const;

 private:
  std::string dir_, why_;
  int plain_port_ = 0, tls_port_ = 0;
  bool ok_ = false;
};

/// Runs COMMAND with bash; its standard output (and its exit status in
/// STATUS when given).
std::string shell(const std::string &command, int *status = nullptr);

} // namespace pgi::test

#endif
