// test/support/relay/process.h: a built program (inventory-relay,
// inventory-fulfiller) run as a child process, and its exit status.
#ifndef PG_INVENTORY_TEST_SUPPORT_RELAY_PROCESS_H
#define PG_INVENTORY_TEST_SUPPORT_RELAY_PROCESS_H

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pgi::test {

/// A child process running one of the programs; its stderr goes to a log
/// file that is printed when the test has failed.  The destructor kills it
/// (SIGKILL) if it still runs.
class Process {
 public:
  /// Starts PROGRAM with ARGS; ENV entries are added to the environment
  /// (replacing variables of the same name).
  Process(const std::string &program, const std::vector<std::string> &args,
          const std::map<std::string, std::string> &env = {});
  ~Process();
  Process(const Process &) = delete;
  Process &operator=(const Process &) = delete;
  /// Waits up to TIMEOUT for the exit; returns the wait status, or -1
  /// after killing it (SIGKILL, and a test failure) at the timeout.
  int wait(std::chrono::milliseconds timeout);
  /// Sends SIG.
  void signal(int sig);
  /// Everything it wrote to stderr so far.
  std::string log() const;
  /// The value of KEY in its last log line with event=EVENT, or "".
  std::string stat(const std::string &event, const std::string &key) const;
  /// True while it has not been waited for.
  bool running() const { return pid_ > 0; }

 private:
  int pid_ = -1;
  std::string log_path_;
};

/// Whether STATUS (of Process::wait) is an exit with CODE.
bool exited_with(int status, int code);

/// Whether STATUS (of Process::wait) is the end by signal SIG.
bool killed_by(int status, int sig);

/// Waits for P to end (at most TIMEOUT); expects exit code 0.
void run_ok(Process &p,
            std::chrono::milliseconds timeout = std::chrono::seconds{60});

/// Sends SIGTERM to P and expects it to exit 0 within 20 s.
void stop(Process &p);

/// Waits up to 30 s for P to end, which must be by SIGKILL (a test hook).
::testing::AssertionResult killed_by_hook(Process &p);

/// Waits up to WITHIN for P to end, which must be an exit with CODE; for a
/// code other than 0 and 64 its log must have exactly one `event=fatal`
/// line, with `exit_code=CODE`, a hint, and TEXT in it (for 64: TEXT in
/// the one line on stderr).  For the permanent failures of failure.h.
::testing::AssertionResult
exits_with(Process &p, int code, const std::string &text,
           std::chrono::milliseconds within = std::chrono::seconds{15});

/// The log lines of P with `event=EVENT`.
std::vector<std::string> log_lines(const Process &p, const std::string &event);

} // namespace pgi::test

#endif
