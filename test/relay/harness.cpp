// test/relay/harness.cpp: helpers of the relay and fulfiller fault tests
// (see harness.h).
#include "harness.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <amqp.h>

extern char **environ;

namespace rt {

namespace {

pqxx::connection admin() {
  return pqxx::connection{""};
}

void admin_exec(const std::string &sql) {
  auto cx = admin();
  pqxx::nontransaction tx{cx};
  tx.exec(sql);
}

} // namespace

bool have_servers() {
  return !pgi::env_or("PGHOST", "").empty() &&
         !pgi::env_or("INVENTORY_AMQP_URL", "").empty();
}

std::string amqp_url() {
  return pgi::env_or("INVENTORY_AMQP_URL", "");
}

TestDatabase::TestDatabase(const std::string &name) : name_{"relay_" + name} {
  admin_exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  admin_exec("CREATE DATABASE " + name_);
  try {
    exec("CREATE EXTENSION pg_inventory");
  } catch (...) {
    admin_exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    throw;
  }
}

TestDatabase::~TestDatabase() {
  try {
    admin_exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception &e) {
    ADD_FAILURE() << "could not drop " << name_ << ": " << e.what();
  }
}

std::unique_ptr<pqxx::connection> TestDatabase::connect() const {
  return std::make_unique<pqxx::connection>(conninfo());
}

pqxx::result TestDatabase::exec(const std::string &sql) const {
  auto cx = connect();
  pqxx::work tx{*cx};
  pqxx::result r = tx.exec(sql);
  tx.commit();
  return r;
}

long long TestDatabase::scalar(const std::string &sql) const {
  return exec(sql)[0][0].as<long long>();
}

Broker::Broker()
    : cx_{std::make_unique<pgi::AmqpConnection>(amqp_url(), 0, 5000)} {}

void Broker::exchange(const std::string &x) {
  cx_->declare_exchange(x);
}

void Broker::queue(const std::string &q, const std::string &x,
                   const std::string &key) {
  cx_->declare_bound_queue(q, x, key);
  amqp_queue_purge(cx_->state(), cx_->channel, amqp_cstring_bytes(q.c_str()));
  pgi::check_reply(amqp_get_rpc_reply(cx_->state()), "queue.purge");
}

void Broker::publish(const std::string &x, const std::string &key,
                     const std::string &message_id, const std::string &body) {
  amqp_basic_properties_t p;
  p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
             AMQP_BASIC_MESSAGE_ID_FLAG;
  p.content_type = amqp_cstring_bytes("application/json");
  p.delivery_mode = 2;
  p.message_id = amqp_cstring_bytes(message_id.c_str());
  amqp_bytes_t b;
  b.len = body.size();
  b.bytes = const_cast<char *>(body.data());
  int rc = amqp_basic_publish(cx_->state(), cx_->channel,
                              amqp_cstring_bytes(x.c_str()),
                              amqp_cstring_bytes(key.c_str()), 0, 0, &p, b);
  if (rc != AMQP_STATUS_OK)
    throw pgi::AmqpError(std::string("publish: ") + amqp_error_string2(rc));
}

std::vector<Message> Broker::drain(const std::string &q) {
  std::vector<Message> out;
  for (;;) {
    amqp_rpc_reply_t r = amqp_basic_get(cx_->state(), cx_->channel,
                                        amqp_cstring_bytes(q.c_str()), 1);
    pgi::check_reply(r, "basic.get " + q);
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) break;
    auto *ok = static_cast<amqp_basic_get_ok_t *>(r.reply.decoded);
    Message m;
    m.routing_key = pgi::to_string(ok->routing_key);
    amqp_message_t msg;
    pgi::check_reply(amqp_read_message(cx_->state(), cx_->channel, &msg, 0),
                     "read");
    if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
      m.message_id = pgi::to_string(msg.properties.message_id);
    if (msg.properties._flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
      m.content_type = pgi::to_string(msg.properties.content_type);
    if (msg.properties._flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
      m.delivery_mode = msg.properties.delivery_mode;
    m.body = pgi::to_string(msg.body);
    amqp_destroy_message(&msg);
    amqp_maybe_release_buffers(cx_->state());
    out.push_back(std::move(m));
  }
  return out;
}

void Broker::remove(const std::string &q, const std::string &x) {
  try {
    amqp_queue_delete(cx_->state(), cx_->channel,
                      amqp_cstring_bytes(q.c_str()), 0, 0);
    pgi::check_reply(amqp_get_rpc_reply(cx_->state()), "queue.delete");
    amqp_exchange_delete(cx_->state(), cx_->channel,
                         amqp_cstring_bytes(x.c_str()), 0);
    pgi::check_reply(amqp_get_rpc_reply(cx_->state()), "exchange.delete");
  } catch (const std::exception &) {
  }
}

Process::Process(const std::string &program,
                 const std::vector<std::string> &args,
                 const std::map<std::string, std::string> &env) {
  char path[] = "/tmp/pgi_relay_test.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  log_path_ = path;
  std::vector<std::string> envs;
  for (char **e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (env.count(kv.substr(0, kv.find('='))) == 0) envs.push_back(kv);
  }
  for (const auto &kv : env) envs.push_back(kv.first + "=" + kv.second);
  std::vector<char *> argv{const_cast<char *>(program.c_str())};
  for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char *> envp;
  for (auto &e : envs) envp.push_back(const_cast<char *>(e.c_str()));
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(fd, 2);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(fd);
}

Process::~Process() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (::testing::Test::HasFailure())
    std::cerr << "---- log of " << log_path_ << "\n" << log() << "----\n";
  unlink(log_path_.c_str());
}

int Process::wait(long long timeout_ms) {
  const long long end = pgi::now_ms() + timeout_ms;
  int status = 0;
  while (pid_ > 0) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return status;
    }
    if (pgi::now_ms() > end) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      ADD_FAILURE() << "process did not exit within " << timeout_ms << " ms";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

void Process::signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

std::string Process::log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Process::stat(const std::string &event,
                          const std::string &key) const {
  std::istringstream in(log());
  std::string line, value;
  while (std::getline(in, line)) {
    if (line.find(" event=" + event + " ") == std::string::npos) continue;
    auto p = line.find(" " + key + "=");
    if (p == std::string::npos) continue;
    p += key.size() + 2;
    value = line.substr(p, line.find(' ', p) - p);
  }
  return value;
}

std::string relay_bin() {
  return INVENTORY_RELAY_BIN;
}
std::string fulfiller_bin() {
  return INVENTORY_FULFILLER_BIN;
}

bool rmq(const std::string &function) {
  const std::string cmd = "bash -c 'source \"" +
                          pgi::env_or("RMQ_SCRIPT", RABBITMQ_SCRIPT) +
                          "\" && " + function + "'";
  return std::system(cmd.c_str()) == 0;
}

bool eventually(const TestDatabase &db, const std::string &sql,
                long long timeout_ms) {
  const long long end = pgi::now_ms() + timeout_ms;
  auto cx = db.connect();
  for (;;) {
    bool v;
    {
      pqxx::nontransaction tx{*cx};
      v = tx.exec(sql)[0][0].as<bool>();
    }
    if (v || pgi::now_ms() > end) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool exited_with(int status, int code) {
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

bool killed_by(int status, int sig) {
  return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

void run_ok(Process &p, long long timeout_ms) {
  const int status = p.wait(timeout_ms);
  EXPECT_TRUE(exited_with(status, 0)) << "wait status " << status;
}

void stop(Process &p) {
  p.signal(SIGTERM);
  run_ok(p, 20000);
}

::testing::AssertionResult killed_by_hook(Process &p) {
  const int status = p.wait(30000);
  if (killed_by(status, SIGKILL)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "status " << status;
}

void reserve_orders(const TestDatabase &db, int n, const std::string &sku) {
  db.exec("SELECT inventory.restock('acme', 'rcpt-" + sku + "', '" + sku +
          "', 1000)");
  db.exec("SELECT inventory.reserve('acme', 'ord-' || i, '" + sku +
          "', 1) FROM generate_series(1, " + std::to_string(n) + ") i");
}

void confirm_orders(const TestDatabase &db, int n) {
  db.exec("SELECT inventory.confirm('acme', 'ord-' || i) "
          "FROM generate_series(1, " +
          std::to_string(n) + ") i");
}

bool drained(const TestDatabase &db, long long timeout_ms) {
  return eventually(db, "SELECT unpublished = 0 FROM inventory.outbox_metrics",
                    timeout_ms);
}

TestBed::TestBed(const std::string &name, bool all_queue)
    : db{name}, x{"t." + name}, all{x + ".all"}, fq{x + ".fulfillment"} {
  broker().exchange(x);
  if (all_queue) bind(all, "#");
}

TestBed::~TestBed() {
  try {
    if (fulfiller_ran_) queues_.push_back(fq);
    for (const auto &q : queues_) broker().remove(q, x);
  } catch (const std::exception &) {
    // best effort: the broker may be down after a failed test
  }
}

Broker &TestBed::broker() {
  if (!broker_) broker_ = std::make_unique<Broker>();
  return *broker_;
}

void TestBed::bind(const std::string &q, const std::string &key) {
  broker().queue(q, x, key);
  queues_.push_back(q);
}

std::vector<std::string>
TestBed::relay_args(std::vector<std::string> extra) const {
  std::vector<std::string> a{"--db",
                             db.conninfo(),
                             "--amqp-url",
                             amqp_url(),
                             "--exchange",
                             x,
                             "--poll-interval-ms",
                             "20",
                             "--stats-interval",
                             "1s"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> TestBed::fulfiller_args(long long idle_ms) const {
  return {"--db",           db.conninfo(),
          "--amqp-url",     amqp_url(),
          "--exchange",     x,
          "--queue",        fq,
          "--once-idle-ms", std::to_string(idle_ms)};
}

std::unique_ptr<Process>
TestBed::relay(std::vector<std::string> extra,
               const std::map<std::string, std::string> &env) const {
  return std::make_unique<Process>(relay_bin(), relay_args(std::move(extra)),
                                   env);
}

std::unique_ptr<Process>
TestBed::fulfiller(long long idle_ms,
                   const std::map<std::string, std::string> &env) const {
  fulfiller_ran_ = true; // it declares fq
  return std::make_unique<Process>(fulfiller_bin(), fulfiller_args(idle_ms),
                                   env);
}

std::unique_ptr<Process>
TestBed::relay_once(std::vector<std::string> extra) const {
  extra.insert(extra.begin(), "--once");
  auto r = relay(std::move(extra));
  run_ok(*r);
  return r;
}

std::unique_ptr<Process> TestBed::fulfil(long long idle_ms) const {
  auto f = fulfiller(idle_ms);
  run_ok(*f);
  return f;
}

void TestBed::prepare_fulfiller() const {
  fulfil(1);
  db.exec("INSERT INTO fulfillment.warehouse_sku VALUES ('acme', 'sku-1')");
}

} // namespace rt
