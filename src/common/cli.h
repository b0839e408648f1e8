// src/common/cli.h: the command line of inventory-relay and
// inventory-fulfiller, one declaration per option.
//
// Every option has a flag (`--flag value` or `--flag=value`), usually an
// environment variable read when the flag is not given (unset and empty are
// the same), a default (the value its target holds when it is declared),
// and limits checked once every value is read.  A value the program cannot
// use, from the command line or from the environment, is a UsageError:
// the program prints one line naming the flag or variable and exits 64
// (failure.h) before connecting anywhere.  --help prints the generated
// option list, --version the version line; both exit 0.
#ifndef PG_INVENTORY_COMMON_CLI_H
#define PG_INVENTORY_COMMON_CLI_H

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pgi {

/// A command line or environment value the program cannot use.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The value of environment variable NAME, or FALLBACK when unset or empty.
std::string env_or(const char *name, const std::string &fallback);

/// True when environment variable NAME is set to something other than
/// "", "0" or "false" (the test hooks).
bool env_flag(const char *name);

/// Parses a whole non-negative integer; throws UsageError naming WHAT.
long long parse_count(const std::string &text, const std::string &what);

/// Parses a duration: a number with an optional unit ms, s (the default),
/// m, h or d, e.g. "30", "1.5s", "250ms".  Returns milliseconds (rounded);
/// throws UsageError naming WHAT.
long long parse_duration_ms(const std::string &text, const std::string &what);

/// MS as the shortest exact duration text: 250ms, 30s, 5m, 1h, 7d.
std::string format_duration(long long ms);

/// The declared options of one program.
class OptionSet {
 public:
  /// PROGRAM and SUMMARY head the --help text; VERSION is what --version
  /// prints.
  OptionSet(std::string program, std::string summary, std::string version);

  /// --FLAG META: any text (limits on it go in check()).  ENV may be ""
  /// (no environment variable).
  void text(const std::string &flag, const std::string &env,
            std::string *target, const std::string &meta,
            const std::string &help);
  /// The same with SHOWN as the default --help prints (for a default
  /// computed at run time).
  void text(const std::string &flag, const std::string &env,
            std::string *target, const std::string &meta,
            const std::string &help, const std::string &shown);
  /// --FLAG N: a whole number from MIN to MAX.
  void count(const std::string &flag, const std::string &env,
             long long *target, long long min, long long max,
             const std::string &help);
  /// --FLAG DURATION: from MIN_MS to MAX_MS milliseconds (a MIN_MS of 1
  /// means "above 0").
  void duration(const std::string &flag, const std::string &env,
                long long *target_ms, long long min_ms, long long max_ms,
                const std::string &help);
  /// --FLAG: on when given; the environment variable takes 1/true/yes/on
  /// or 0/false/no/off.
  void toggle(const std::string &flag, const std::string &env, bool *target,
              const std::string &help);
  /// A check over several values, run after all are read (throws
  /// UsageError).
  void check(std::function<void()> fn);
  /// Text printed after the option list by --help.
  void epilog(const std::string &text);

  /// Reads the environment variables, then ARGV (flags win), then runs
  /// the checks.  True: run the program; false: --help or --version was
  /// printed (exit 0).  Throws UsageError.
  bool parse(int argc, char **argv);

  /// The --help text.
  void usage(std::ostream &out) const;

  const std::string &program() const { return program_; }
  const std::string &version() const { return version_; }

 private:
  enum class Kind { text, count, duration, toggle };
  struct Option {
    std::string flag, env, meta, help, default_text;
    Kind kind;
    void *target;
    long long min = 0, max = 0;
    std::string source; // where the value came from (flag or variable)
  };
  Option &add(const std::string &flag, const std::string &env, Kind kind,
              void *target, const std::string &meta, const std::string &help);
  void assign(Option &o, const std::string &value, const std::string &source);
  std::string range_text(const Option &o) const;

  std::string program_, summary_, version_, epilog_;
  std::vector<Option> options_;
  std::vector<std::function<void()>> checks_;
};

} // namespace pgi

#endif
