// src/common/program.cpp: command line and main() frame of the relay and
// the fulfiller (program.h).
#include "program.h"

#include <iostream>
#include <stdexcept>

#include <pqxx/pqxx>

namespace pgi {

bool ArgReader::next() {
  if (++i_ >= argc_) return false;
  name_ = argv_[i_];
  inline_value_.reset();
  if (auto eq = name_.find('=');
      name_.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = name_.substr(eq + 1);
    name_ = name_.substr(0, eq);
  }
  return true;
}

std::string ArgReader::value() {
  if (inline_value_) return *inline_value_;
  if (i_ + 1 >= argc_) throw std::invalid_argument(name_ + " needs a value");
  return argv_[++i_];
}

CommonOptions::CommonOptions(const char *db_env)
    : db{env_or(db_env, "")}, amqp_url{env_or(
                                "INVENTORY_AMQP_URL",
                                "amqp://guest:guest@127.0.0.1:5672")},
      exchange{env_or("INVENTORY_EXCHANGE", "inventory")} {}

bool CommonOptions::read(ArgReader &args) {
  const std::string &arg = args.name();
  if (arg == "--db")
    db = args.value();
  else if (arg == "--amqp-url")
    amqp_url = args.value();
  else if (arg == "--exchange")
    exchange = args.value();
  else if (arg == "--stats-interval")
    stats_ms = args.duration_ms();
  else
    return false;
  return true;
}

bool parse_command_line(int argc, char **argv, CommonOptions &common,
                        Usage usage,
                        const std::function<bool(ArgReader &)> &own_flag) {
  ArgReader args{argc, argv};
  while (args.next()) {
    if (args.name() == "--help" || args.name() == "-h") {
      usage(std::cout);
      return false;
    }
    if (!common.read(args) && !own_flag(args))
      throw std::invalid_argument("unknown option " + args.name());
  }
  return true;
}

int run_program(const std::string &name, Usage usage,
                const std::function<bool()> &parse,
                const std::function<int()> &run) {
  set_program(name);
  try {
    if (!parse()) return 0;
  } catch (const std::exception &e) {
    std::cerr << name << ": " << e.what() << "\n";
    usage(std::cerr);
    return 2;
  }
  install_stop_handlers();
  try {
    return run();
  } catch (const pqxx::sql_error &e) {
    log("fatal", {{"sqlstate", e.sqlstate()}, {"error", e.what()}});
  } catch (const std::exception &e) {
    log("fatal", {{"error", e.what()}});
  }
  return 1;
}

void wait_to_retry(Backoff &backoff, const std::string &event,
                   const std::string &error) {
  const long long d = backoff.next();
  log(event, {{"error", error}, {"retry_in_ms", std::to_string(d)}});
  sleep_unless_stopped(d);
}

std::unique_ptr<AmqpConnection> connect_broker(const CommonOptions &options) {
  auto mq = std::make_unique<AmqpConnection>(options.amqp_url, 30, 5000);
  mq->declare_exchange(options.exchange);
  return mq;
}

void drop_broker(std::unique_ptr<AmqpConnection> &mq, const std::string &why) {
  log("broker_lost", {{"error", why}});
  if (mq) mq->mark_broken();
  mq.reset();
}

} // namespace pgi
