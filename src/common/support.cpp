// src/common/support.cpp: logs, options, backoff, signals and the AMQP
// connection wrapper shared by the relay and the fulfiller (support.h).
#include "support.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <sstream>
#include <sys/time.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <amqp_tcp_socket.h>

namespace pgi {

namespace {

std::string program = "pg_inventory";
std::atomic<bool> stop_flag{false};

void on_stop(int) {
  stop_flag = true;
}

std::string quote(const std::string &v) {
  bool plain = !v.empty();
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t')
      plain = false;
  if (plain) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out + "\"";
}

std::string timestamp() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char ms[16];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>(tv.tv_usec / 1000));
  return std::string(buf) + ms;
}

} // namespace

void set_program(const std::string &name) {
  program = name;
}

void log(const std::string &event, std::initializer_list<Field> fields) {
  std::ostringstream line;
  line << "ts=" << timestamp() << " prog=" << program << " event=" << event;
  for (const auto &f : fields)
    line << ' ' << f.first << '=' << quote(f.second);
  line << '\n';
  std::cerr << line.str() << std::flush;
}

std::string env_or(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string{v} : fallback;
}

bool env_flag(const char *name) {
  const std::string v = env_or(name, "");
  return !v.empty() && v != "0" && v != "false";
}

long long parse_count(const std::string &text, const std::string &what) {
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < 0)
    throw std::invalid_argument(what + ": \"" + text +
                                "\" is not a non-negative integer");
  return v;
}

long long parse_duration_ms(const std::string &text, const std::string &what) {
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  const std::string unit = used == 0 ? "?" : text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "ms")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60000;
  else if (unit == "h")
    scale = 3600000;
  if (scale == 0 || v < 0 || v * scale > 1e12)
    throw std::invalid_argument(what + ": \"" + text +
                                "\" is not a duration (e.g. 30s, 250ms)");
  return static_cast<long long>(v * scale + 0.5);
}

std::string default_name() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  return std::string(host).substr(0, 50) + "-" + std::to_string(getpid());
}

void install_stop_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() {
  return stop_flag;
}

void sleep_unless_stopped(long long ms) {
  const long long end = now_ms() + ms;
  while (!stop_requested()) {
    const long long left = end - now_ms();
    if (left <= 0) break;
    std::this_thread::sleep_for(
      std::chrono::milliseconds(left < 20 ? left : 20));
  }
}

Backoff::Backoff(long long base_ms, long long cap_ms)
    : base_ms_{base_ms}, cap_ms_{cap_ms}, rng_{
                                            std::random_device{}() ^
                                            static_cast<unsigned>(getpid())} {}

long long Backoff::next() {
  long long d = base_ms_;
  for (int i = 0; i < failures_ && d < cap_ms_; ++i) d *= 2;
  if (d > cap_ms_) d = cap_ms_;
  if (failures_ < 60) ++failures_;
  std::uniform_int_distribution<long long> jitter(d / 2, d);
  return jitter(rng_);
}

void check_reply(const amqp_rpc_reply_t &reply, const std::string &what) {
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
      throw AmqpError(what + ": connection closed by broker " +
                      std::to_string(m->reply_code) + " " +
                      to_string(m->reply_text));
    }
    if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
      auto *m = static_cast<amqp_channel_close_t *>(reply.reply.decoded);
      throw AmqpError(what + ": channel closed by broker " +
                      std::to_string(m->reply_code) + " " +
                      to_string(m->reply_text));
    }
    throw AmqpError(what + ": broker error, method " +
                    std::to_string(reply.reply.id));
  }
  throw AmqpError(what + ": unknown reply type");
}

AmqpConnection::AmqpConnection(const std::string &url, int heartbeat,
                               int timeout_ms) {
  std::vector<char> buf(url.begin(), url.end());
  buf.push_back('\0');
  struct amqp_connection_info info;
  amqp_default_connection_info(&info);
  if (amqp_parse_url(buf.data(), &info) != AMQP_STATUS_OK)
    throw std::invalid_argument("cannot parse AMQP URL \"" + url + "\"");
  cx_ = amqp_new_connection();
  if (cx_ == nullptr) throw AmqpError("amqp_new_connection failed");
  try {
    amqp_socket_t *socket = amqp_tcp_socket_new(cx_);
    if (socket == nullptr) throw AmqpError("amqp_tcp_socket_new failed");
    struct timeval tv;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    int rc = amqp_socket_open_noblock(socket, info.host, info.port, &tv);
    if (rc != AMQP_STATUS_OK)
      throw AmqpError(std::string("connect to ") + info.host + ":" +
                      std::to_string(info.port) + ": " +
                      amqp_error_string2(rc));
    check_reply(amqp_login(cx_, info.vhost, 0, 131072, heartbeat,
                           AMQP_SASL_METHOD_PLAIN, info.user, info.password),
                "login");
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

void AmqpConnection::declare_exchange(const std::string &name) {
  amqp_exchange_declare(cx_, channel, amqp_cstring_bytes(name.c_str()),
                        amqp_cstring_bytes("topic"), 0, 1, 0, 0,
                        amqp_empty_table);
  check_reply(amqp_get_rpc_reply(cx_), "exchange.declare " + name);
}

void AmqpConnection::declare_bound_queue(const std::string &name,
                                         const std::string &exchange,
                                         const std::string &key) {
  amqp_queue_declare(cx_, channel, amqp_cstring_bytes(name.c_str()), 0, 1, 0,
                     0, amqp_empty_table);
  check_reply(amqp_get_rpc_reply(cx_), "queue.declare " + name);
  amqp_queue_bind(cx_, channel, amqp_cstring_bytes(name.c_str()),
                  amqp_cstring_bytes(exchange.c_str()),
                  amqp_cstring_bytes(key.c_str()), amqp_empty_table);
  check_reply(amqp_get_rpc_reply(cx_), "queue.bind " + name);
}

void AmqpConnection::confirm_select() {
  amqp_confirm_select(cx_, channel);
  check_reply(amqp_get_rpc_reply(cx_), "confirm.select");
}

} // namespace pgi
