// src/common/retry.cpp: signals, sleeping and the backoff (retry.h).
#include "retry.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace pgi {

namespace {

std::atomic<bool> stop_flag{false};

void on_stop(int) {
  stop_flag = true;
}

} // namespace

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

} // namespace pgi
