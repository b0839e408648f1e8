// src/common/amqp_client.h: the RabbitMQ side both programs share: the broker
// URL, one rabbitmq-c 0.11 connection with channel 1 open, and the
// classification of the broker's answers (failure.h): a reply that
// retrying cannot fix throws Fatal, anything else AmqpError (transient:
// the caller drops the connection and its Link reconnects).
#ifndef PG_INVENTORY_COMMON_AMQP_CLIENT_H
#define PG_INVENTORY_COMMON_AMQP_CLIENT_H

#include <cstdint>
#include <stdexcept>
#include <string>

#include <amqp.h>

#include "failure.h"

namespace pgi {

/// A transient failure of the broker connection or of the channel.
class AmqpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// TLS for an amqps:// URL.  The server's certificate is always verified:
/// against CA_FILE (PEM), or the system's trust store when it is empty;
/// and the URL's host must be a DNS name in the certificate (subject
/// alternative name, or common name).  CERT_FILE and KEY_FILE (PEM, the
/// key unencrypted) give a client certificate, both or neither.
struct TlsSettings {
  std::string ca_file, cert_file, key_file;
  bool any() const {
    return !ca_file.empty() || !cert_file.empty() || !key_file.empty();
  }
};

/// Where and how to reach the broker.
struct BrokerSettings {
  /// amqp://user:pass@host:port[/vhost] (plain), amqps://... (TLS)
  std::string url = "amqp://guest:guest@127.0.0.1:5672";
  TlsSettings tls;
};

/// Checks SETTINGS at start: a URL that parses, TLS files only with
/// amqps://, a client certificate and key together, every file readable.
/// Throws UsageError.  What cannot be checked without connecting (a file
/// that is not PEM, a certificate that does not verify) is Fatal at
/// connect.
void check_broker_settings(const BrokerSettings &settings);

/// A parsed broker URL (amqp_parse_url, percent-decoded).
struct BrokerAddress {
  std::string host, user, password, vhost;
  int port = 5672;
  bool tls = false;
  /// amqp[s]://user@host:port/vhost: for logs (no password).
  std::string describe() const;
};

/// Parses URL; throws UsageError for a URL that is not one.
BrokerAddress parse_broker_url(const std::string &url);

/// The exchanges and queues both programs declare alike (declaring is
/// idempotent only when every declaration has the same arguments: a
/// difference is PRECONDITION_FAILED, Fatal).
///
/// EXCHANGE is a durable topic exchange.  With UNROUTED (the default,
/// EXCHANGE.unrouted) it has an alternate exchange: a durable fanout
/// exchange UNROUTED bound to a durable queue UNROUTED with x-max-length
/// UNROUTED_MAX_LENGTH and x-overflow drop-head.  An event whose routing
/// key no queue is bound for goes there instead of coming back: the broker
/// keeps it (the newest UNROUTED_MAX_LENGTH of them; a full queue drops its
/// oldest, so publishing never stops) and confirms it like any other.  An
/// empty UNROUTED: no alternate exchange (such events come back as
/// basic.return).
struct Topology {
  std::string exchange = "inventory";
  std::string unrouted = "inventory.unrouted";
  long long unrouted_max_length = 100000;
};

/// Checks REPLY of the operation WHAT.  A normal reply returns; a reply
/// that retrying cannot fix throws Fatal: ACCESS_REFUSED (77), an unknown
/// vhost (78), and with SETUP (declarations) PRECONDITION_FAILED (78, with
/// SETUP_HINT); anything else throws AmqpError.
void check_reply(const amqp_rpc_reply_t &reply, const std::string &what,
                 bool setup = false, const std::string &setup_hint = "");

/// One connection to the broker with channel 1 open.  The destructor closes
/// it (politely unless marked broken).
class AmqpConnection {
 public:
  /// Connects to SETTINGS' broker (TLS for amqps://, never falling back to
  /// plain text), logs in, opens channel 1.  HEARTBEAT in seconds (0:
  /// none); TIMEOUT_MS bounds the TCP connect, the TLS and AMQP handshakes
  /// and every RPC.  Throws Fatal (TLS that cannot work: files that do not
  /// load, a certificate that does not verify or does not name the host, a
  /// port that does not speak TLS; and what check_reply() says) or
  /// AmqpError.
  AmqpConnection(const BrokerSettings &settings, int heartbeat,
                 int timeout_ms);
  ~AmqpConnection();
  AmqpConnection(const AmqpConnection &) = delete;
  AmqpConnection &operator=(const AmqpConnection &) = delete;

  /// The rabbitmq-c connection state.
  amqp_connection_state_t state() const { return cx_; }
  /// The channel in use (1).
  static constexpr amqp_channel_t channel = 1;
  /// The broker as the logs name it (no password).
  const std::string &peer() const { return peer_; }

  /// Declares a durable exchange NAME of TYPE (idempotent; another type or
  /// other arguments: Fatal), with ALTERNATE as its alternate exchange
  /// unless empty.
  void declare_exchange(const std::string &name,
                        const std::string &type = "topic",
                        const std::string &alternate = "");
  /// Declares T (see Topology).
  void declare_topology(const Topology &t);
  /// Messages ready in queue NAME (a passive queue.declare).
  long long queue_depth(const std::string &name);
  /// Declares a durable queue NAME (idempotent) and binds it to EXCHANGE
  /// with KEY.
  void declare_bound_queue(const std::string &name,
                           const std::string &exchange,
                           const std::string &key);
  /// Puts the channel in publisher-confirm mode.
  void confirm_select();

  /// check_reply() of REPLY; when it throws, the connection is marked
  /// broken first.
  void check(const amqp_rpc_reply_t &reply, const std::string &what,
             bool setup = false, const std::string &setup_hint = "");

  /// Marks the connection unusable: the destructor will not try to close
  /// it politely.
  void mark_broken() { broken_ = true; }

 private:
  amqp_connection_state_t cx_ = nullptr;
  std::string peer_;
  bool broken_ = false;
};

/// The text of B.
inline std::string to_string(amqp_bytes_t b) {
  return std::string(static_cast<const char *>(b.bytes), b.len);
}

} // namespace pgi

#endif
