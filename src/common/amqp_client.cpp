// src/common/amqp_client.cpp: broker URL, connection and the classification of
// the broker's answers (amqp_client.h).
#include "amqp_client.h"

#include <sys/time.h>
#include <unistd.h>
#include <vector>

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "cli.h"

namespace pgi {

namespace {

struct timeval to_timeval(int ms) {
  struct timeval tv;
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return tv;
}

/// The Fatal or AmqpError for a connection.close or channel.close with
/// CODE and TEXT during WHAT.
[[noreturn]] void closed_by_broker(const std::string &what, bool connection,
                                   int code, const std::string &text,
                                   bool setup, const std::string &setup_hint) {
  const std::string msg =
    what + ": " + (connection ? "connection" : "channel") +
    " closed by the broker: " + std::to_string(code) + " " + text;
  if (code == AMQP_ACCESS_REFUSED) {
    if (connection)
      throw Fatal(exit_noperm, msg,
                  "check the user name and password in the AMQP URL "
                  "(--amqp-url / INVENTORY_AMQP_URL) and that the user "
                  "exists (rabbitmqctl list_users)");
    throw Fatal(exit_noperm, msg,
                "give the user configure, write and read permissions on "
                "these exchanges and queues (rabbitmqctl set_permissions "
                "-p VHOST USER CONF WRITE READ)");
  }
  if (code == AMQP_NOT_ALLOWED && connection) {
    if (text.find("not found") != std::string::npos)
      throw Fatal(exit_config, msg,
                  "create the vhost (rabbitmqctl add_vhost NAME) or fix the "
                  "path of the AMQP URL (amqp://host:port/VHOST, "
                  "percent-encoded; no path is vhost /, a trailing / is the "
                  "empty vhost)");
    throw Fatal(exit_noperm, msg,
                "give the user access to the vhost (rabbitmqctl "
                "set_permissions -p VHOST USER '.*' '.*' '.*')");
  }
  if (setup && code == AMQP_PRECONDITION_FAILED)
    throw Fatal(exit_config, msg, setup_hint);
  throw AmqpError(msg);
}

/// Refuses to prompt for the pass phrase of an encrypted key.
int no_pass_phrase(char *, int, int, void *) {
  return 0;
}

/// The reason of the last OpenSSL error, or "" when there is none.
std::string openssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "";
  const char *r = ERR_reason_error_string(e);
  return r != nullptr ? r : "error " + std::to_string(e);
}

const char *const tls_hint =
  "use amqps:// only with the broker's TLS port (5671 by default; "
  "listeners.ssl in rabbitmq.conf), give --tls-ca-file the CA that signed "
  "the broker's certificate, and name the host in the URL as in that "
  "certificate";

/// A TLS socket on CX, set up from TLS.  Throws Fatal.
amqp_socket_t *tls_socket(amqp_connection_state_t cx, const TlsSettings &tls) {
  amqp_socket_t *socket = amqp_ssl_socket_new(cx);
  if (socket == nullptr)
    throw Fatal(exit_config, "cannot make a TLS socket: " + openssl_reason(),
                "check the OpenSSL installation");
  auto *ctx = static_cast<SSL_CTX *>(amqp_ssl_socket_get_context(socket));
  SSL_CTX_set_default_passwd_cb(ctx, no_pass_phrase);
  amqp_ssl_socket_set_verify_peer(socket, 1);
  amqp_ssl_socket_set_verify_hostname(socket, 1);
  if (amqp_ssl_socket_set_ssl_versions(socket, AMQP_TLSv1_2,
                                       AMQP_TLSvLATEST) != AMQP_STATUS_OK)
    throw Fatal(exit_config, "cannot require TLS 1.2 or later",
                "check the OpenSSL installation");
  if (tls.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1)
      throw Fatal(exit_config,
                  "cannot load the system's trust store: " + openssl_reason(),
                  "give the broker's CA with --tls-ca-file");
  } else if (amqp_ssl_socket_set_cacert(socket, tls.ca_file.c_str()) !=
             AMQP_STATUS_OK) {
    throw Fatal(exit_config,
                "cannot load CA certificates from " + tls.ca_file + ": " +
                  openssl_reason(),
                "--tls-ca-file must name a PEM file of CA certificates");
  }
  if (!tls.cert_file.empty() &&
      amqp_ssl_socket_set_key(socket, tls.cert_file.c_str(),
                              tls.key_file.c_str()) != AMQP_STATUS_OK)
    throw Fatal(exit_config,
                "cannot load the client certificate " + tls.cert_file +
                  " with key " + tls.key_file + ": " + openssl_reason(),
                "--tls-cert-file and --tls-key-file must name a PEM "
                "certificate (chain) and its unencrypted PEM key");
  return socket;
}

/// Throws what a failed amqp_socket_open_noblock (RC) of A means.
[[noreturn]] void open_failed(int rc, const BrokerAddress &a) {
  const std::string where = a.host + ":" + std::to_string(a.port);
  switch (rc) {
  case AMQP_STATUS_SSL_PEER_VERIFY_FAILED:
    throw Fatal(exit_config,
                "TLS to " + where +
                  ": the broker's certificate does not verify (not signed "
                  "by a CA of --tls-ca-file or the trust store, or expired)",
                tls_hint);
  case AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED:
    throw Fatal(exit_config,
                "TLS to " + where +
                  ": the broker's certificate does not "
                  "name host " +
                  a.host,
                "name the broker in the URL by a DNS name its certificate "
                "has (subject alternative name); IP addresses are not "
                "matched");
  case AMQP_STATUS_SSL_CONNECTION_FAILED:
  case AMQP_STATUS_SSL_ERROR: {
    const std::string reason = openssl_reason();
    // no TLS error at all, or an early end of the stream: the connection
    // broke (a broker restarting), which is worth retrying; any other TLS
    // error is an answer: the peer does not speak TLS, or refused us
    if (!reason.empty() && reason.find("eof") == std::string::npos &&
        reason.find("EOF") == std::string::npos)
      throw Fatal(exit_config,
                  "TLS handshake with " + where + " failed: " + reason +
                    (reason == "wrong version number"
                       ? " (the port does not speak TLS)"
                       : ""),
                  tls_hint);
    throw AmqpError("TLS handshake with " + where + " failed: " +
                    (reason.empty() ? amqp_error_string2(rc) : reason));
  }
  default:
    throw AmqpError("connect to " + where + ": " + amqp_error_string2(rc));
  }
}

} // namespace

std::string BrokerAddress::describe() const {
  std::string path;
  if (vhost != "/") {
    path = "/";
    for (char c : vhost)
      path += c == '/' ? std::string("%2F") : std::string(1, c);
  }
  return std::string(tls ? "amqps" : "amqp") + "://" + user + "@" + host +
         ":" + std::to_string(port) + path;
}

void check_broker_settings(const BrokerSettings &settings) {
  const BrokerAddress a = parse_broker_url(settings.url);
  const TlsSettings &t = settings.tls;
  if (!a.tls && t.any())
    throw UsageError("--tls-ca-file, --tls-cert-file and --tls-key-file "
                     "need an amqps:// URL (TLS); the URL is amqp:// (plain)");
  if (t.cert_file.empty() != t.key_file.empty())
    throw UsageError("--tls-cert-file and --tls-key-file go together");
  for (const auto &f : {std::make_pair("--tls-ca-file", t.ca_file),
                        std::make_pair("--tls-cert-file", t.cert_file),
                        std::make_pair("--tls-key-file", t.key_file)})
    if (!f.second.empty() && access(f.second.c_str(), R_OK) != 0)
      throw UsageError(std::string(f.first) + ": cannot read " + f.second);
}

BrokerAddress parse_broker_url(const std::string &url) {
  std::vector<char> buf(url.begin(), url.end());
  buf.push_back('\0');
  struct amqp_connection_info info;
  amqp_default_connection_info(&info);
  if (amqp_parse_url(buf.data(), &info) != AMQP_STATUS_OK)
    throw UsageError("--amqp-url: \"" + url +
                     "\" is not an AMQP URL "
                     "(amqp[s]://user:password@host:port[/vhost])");
  BrokerAddress a;
  a.host = info.host;
  a.user = info.user;
  a.password = info.password;
  a.vhost = info.vhost;
  a.port = info.port;
  a.tls = info.ssl != 0;
  return a;
}

void check_reply(const amqp_rpc_reply_t &reply, const std::string &what,
                 bool setup, const std::string &setup_hint) {
  switch (reply.reply_type) {
  case AMQP_RESPONSE_NORMAL:
    return;
  case AMQP_RESPONSE_NONE:
    throw AmqpError(what + ": missing RPC reply");
  case AMQP_RESPONSE_LIBRARY_EXCEPTION:
    throw AmqpError(what + ": " + amqp_error_string2(reply.library_error));
  case AMQP_RESPONSE_SERVER_EXCEPTION:
    if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      auto *m = static_cast<amqp_connection_close_t *>(reply.reply.decoded);
      closed_by_broker(what, true, m->reply_code, to_string(m->reply_text),
                       setup, setup_hint);
    }
    if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
      auto *m = static_cast<amqp_channel_close_t *>(reply.reply.decoded);
      closed_by_broker(what, false, m->reply_code, to_string(m->reply_text),
                       setup, setup_hint);
    }
    throw AmqpError(what + ": broker error, method " +
                    std::to_string(reply.reply.id));
  }
  throw AmqpError(what + ": unknown reply type");
}

AmqpConnection::AmqpConnection(const BrokerSettings &settings, int heartbeat,
                               int timeout_ms) {
  const BrokerAddress a = parse_broker_url(settings.url);
  peer_ = a.describe();
  cx_ = amqp_new_connection();
  if (cx_ == nullptr) throw AmqpError("amqp_new_connection failed");
  try {
    struct timeval tv = to_timeval(timeout_ms);
    amqp_set_handshake_timeout(cx_, &tv);
    amqp_set_rpc_timeout(cx_, &tv);
    amqp_socket_t *socket =
      a.tls ? tls_socket(cx_, settings.tls) : amqp_tcp_socket_new(cx_);
    if (socket == nullptr) throw AmqpError("amqp_tcp_socket_new failed");
    ERR_clear_error();
    const int rc =
      amqp_socket_open_noblock(socket, a.host.c_str(), a.port, &tv);
    if (rc != AMQP_STATUS_OK) open_failed(rc, a);
    check_reply(amqp_login(cx_, a.vhost.c_str(), 0, 131072, heartbeat,
                           AMQP_SASL_METHOD_PLAIN, a.user.c_str(),
                           a.password.c_str()),
                "login to " + peer_);
    amqp_channel_open(cx_, channel);
    check_reply(amqp_get_rpc_reply(cx_), "channel.open");
  } catch (...) {
    amqp_destroy_connection(cx_);
    throw;
  }
}

AmqpConnection::~AmqpConnection() {
  if (!broken_) {
    amqp_channel_close(cx_, channel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(cx_, AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(cx_);
}

void AmqpConnection::declare_exchange(const std::string &name,
                                      const std::string &type,
                                      const std::string &alternate) {
  amqp_table_entry_t entry;
  entry.key = amqp_cstring_bytes("alternate-exchange");
  entry.value.kind = AMQP_FIELD_KIND_UTF8;
  entry.value.value.bytes = amqp_cstring_bytes(alternate.c_str());
  amqp_table_t args = amqp_empty_table;
  if (!alternate.empty()) {
    args.num_entries = 1;
    args.entries = &entry;
  }
  amqp_exchange_declare(cx_, channel, amqp_cstring_bytes(name.c_str()),
                        amqp_cstring_bytes(type.c_str()), 0, 1, 0, 0, args);
  check(amqp_get_rpc_reply(cx_), "exchange.declare " + name, true,
        "exchange " + name +
          " exists with another type or other arguments "
          "(this program declares it " +
          type + ", durable, " +
          (alternate.empty() ? std::string("without an alternate exchange")
                             : "with alternate-exchange " + alternate) +
          "): declare it alike everywhere (the same --exchange and "
          "--unrouted-queue for every relay and consumer), or delete it "
          "(rabbitmqadmin delete exchange name=" +
          name + ") and bind its queues again after a program declared it");
}

void AmqpConnection::declare_topology(const Topology &t) {
  if (!t.unrouted.empty()) {
    declare_exchange(t.unrouted, "fanout");
    amqp_table_entry_t entries[2];
    entries[0].key = amqp_cstring_bytes("x-max-length");
    entries[0].value.kind = AMQP_FIELD_KIND_I64;
    entries[0].value.value.i64 = t.unrouted_max_length;
    entries[1].key = amqp_cstring_bytes("x-overflow");
    entries[1].value.kind = AMQP_FIELD_KIND_UTF8;
    entries[1].value.value.bytes = amqp_cstring_bytes("drop-head");
    amqp_table_t args;
    args.num_entries = 2;
    args.entries = entries;
    amqp_queue_declare(cx_, channel, amqp_cstring_bytes(t.unrouted.c_str()), 0,
                       1, 0, 0, args);
    check(amqp_get_rpc_reply(cx_), "queue.declare " + t.unrouted, true,
          "queue " + t.unrouted +
            " exists with other arguments (this "
            "program declares it durable with x-max-length " +
            std::to_string(t.unrouted_max_length) +
            " and x-overflow drop-head): give every relay and consumer the "
            "same --unrouted-max-length, or delete the queue");
    amqp_queue_bind(cx_, channel, amqp_cstring_bytes(t.unrouted.c_str()),
                    amqp_cstring_bytes(t.unrouted.c_str()),
                    amqp_cstring_bytes(""), amqp_empty_table);
    check(amqp_get_rpc_reply(cx_), "queue.bind " + t.unrouted);
  }
  declare_exchange(t.exchange, "topic", t.unrouted);
}

long long AmqpConnection::queue_depth(const std::string &name) {
  amqp_queue_declare_ok_t *ok =
    amqp_queue_declare(cx_, channel, amqp_cstring_bytes(name.c_str()), 1, 0, 0,
                       0, amqp_empty_table);
  check(amqp_get_rpc_reply(cx_), "queue.declare (passive) " + name);
  return ok != nullptr ? ok->message_count : 0;
}

void AmqpConnection::declare_bound_queue(const std::string &name,
                                         const std::string &exchange,
                                         const std::string &key) {
  amqp_queue_declare(cx_, channel, amqp_cstring_bytes(name.c_str()), 0, 1, 0,
                     0, amqp_empty_table);
  check(amqp_get_rpc_reply(cx_), "queue.declare " + name, true,
        "queue " + name +
          " exists with other arguments (it must be "
          "durable and have none): delete it or choose another name");
  amqp_queue_bind(cx_, channel, amqp_cstring_bytes(name.c_str()),
                  amqp_cstring_bytes(exchange.c_str()),
                  amqp_cstring_bytes(key.c_str()), amqp_empty_table);
  check(amqp_get_rpc_reply(cx_), "queue.bind " + name);
}

void AmqpConnection::confirm_select() {
  amqp_confirm_select(cx_, channel);
  check(amqp_get_rpc_reply(cx_), "confirm.select");
}

void AmqpConnection::check(const amqp_rpc_reply_t &reply,
                           const std::string &what, bool setup,
                           const std::string &setup_hint) {
  try {
    check_reply(reply, what, setup, setup_hint);
  } catch (...) {
    broken_ = true;
    throw;
  }
}

} // namespace pgi
