// test/support/relay/process.cpp: child processes (process.h).
#include "support/relay/process.h"

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

#include "support/database.h"

extern char **environ;

namespace pgi::test {

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

int Process::wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  int status = 0;
  const bool ended = poll_until(
    [&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout, 20ms);
  if (!ended) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    ADD_FAILURE() << "process did not exit within " << timeout.count()
                  << " ms";
  }
  pid_ = -1;
  return ended ? status : -1;
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

bool exited_with(int status, int code) {
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

bool killed_by(int status, int sig) {
  return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

void run_ok(Process &p, std::chrono::milliseconds timeout) {
  const int status = p.wait(timeout);
  EXPECT_TRUE(exited_with(status, 0)) << "wait status " << status;
}

void stop(Process &p) {
  p.signal(SIGTERM);
  run_ok(p, 20s);
}

::testing::AssertionResult killed_by_hook(Process &p) {
  const int status = p.wait(30s);
  if (killed_by(status, SIGKILL)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "status " << status;
}

std::vector<std::string> log_lines(const Process &p,
                                   const std::string &event) {
  std::vector<std::string> out;
  std::istringstream in(p.log());
  std::string line;
  while (std::getline(in, line))
    if (line.find(" event=" + event + " ") != std::string::npos ||
        (line.size() >= event.size() + 7 &&
         line.compare(line.size() - event.size() - 7, std::string::npos,
                      " event=" + event) == 0))
      out.push_back(line);
  return out;
}

::testing::AssertionResult exits_with(Process &p, int code,
                                      const std::string &text,
                                      std::chrono::milliseconds within) {
  const auto start = std::chrono::steady_clock::now();
  const int status = p.wait(within);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::steady_clock::now() - start);
  if (!exited_with(status, code))
    return ::testing::AssertionFailure()
           << "expected exit code " << code << ", wait status " << status
           << (WIFEXITED(status)
                 ? " (exit code " + std::to_string(WEXITSTATUS(status)) + ")"
                 : std::string{})
           << "\n"
           << p.log();
  const std::string log = p.log();
  if (code == 64) {
    if (log.find(text) == std::string::npos || log.find("event=") != log.npos)
      return ::testing::AssertionFailure()
             << "expected one usage line with \"" << text << "\":\n"
             << log;
    return ::testing::AssertionSuccess() << "in " << took.count() << " ms";
  }
  const auto fatal = log_lines(p, "fatal");
  if (fatal.size() != 1)
    return ::testing::AssertionFailure()
           << "expected one event=fatal line, got " << fatal.size() << ":\n"
           << log;
  const std::string &line = fatal.front();
  if (line.find(" exit_code=" + std::to_string(code) + " ") ==
        std::string::npos ||
      line.find(" hint=") == std::string::npos ||
      line.find(text) == std::string::npos)
    return ::testing::AssertionFailure()
           << "the fatal line lacks exit_code=" << code << ", a hint or \""
           << text << "\":\n"
           << line;
  return ::testing::AssertionSuccess() << "in " << took.count() << " ms";
}

} // namespace pgi::test
