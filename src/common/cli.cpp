// src/common/cli.cpp: declared options with environment fallbacks
// (cli.h).
#include "cli.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace pgi {

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
  if (used != text.size() || text.empty() || v < 0 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(what + ": \"" + text +
                     "\" is not a whole non-negative number");
  return v;
}

long long parse_duration_ms(const std::string &text, const std::string &what) {
  std::size_t used = 0;
  double v = -1;
  try {
    if (!text.empty() &&
        (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
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
  else if (unit == "d")
    scale = 86400000;
  if (scale == 0 || !std::isfinite(v) || v < 0 || v * scale > 1e12)
    throw UsageError(what + ": \"" + text +
                     "\" is not a duration (e.g. 250ms, 30s, 5m, 1h, 1d)");
  return std::llround(v * scale);
}

std::string format_duration(long long ms) {
  if (ms != 0 && ms % 86400000 == 0)
    return std::to_string(ms / 86400000) + "d";
  if (ms != 0 && ms % 3600000 == 0) return std::to_string(ms / 3600000) + "h";
  if (ms != 0 && ms % 60000 == 0) return std::to_string(ms / 60000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

OptionSet::OptionSet(std::string program, std::string summary,
                     std::string version)
    : program_{std::move(program)}, summary_{std::move(summary)},
      version_{std::move(version)} {}

OptionSet::Option &OptionSet::add(const std::string &flag,
                                  const std::string &env, Kind kind,
                                  void *target, const std::string &meta,
                                  const std::string &help) {
  Option o;
  o.flag = flag;
  o.env = env;
  o.kind = kind;
  o.target = target;
  o.meta = meta;
  o.help = help;
  options_.push_back(o);
  return options_.back();
}

void OptionSet::text(const std::string &flag, const std::string &env,
                     std::string *target, const std::string &meta,
                     const std::string &help) {
  add(flag, env, Kind::text, target, meta, help).default_text = *target;
}

void OptionSet::text(const std::string &flag, const std::string &env,
                     std::string *target, const std::string &meta,
                     const std::string &help, const std::string &shown) {
  add(flag, env, Kind::text, target, meta, help).default_text = shown;
}

void OptionSet::count(const std::string &flag, const std::string &env,
                      long long *target, long long min, long long max,
                      const std::string &help) {
  Option &o = add(flag, env, Kind::count, target, "N", help);
  o.min = min;
  o.max = max;
  o.default_text = std::to_string(*target);
}

void OptionSet::duration(const std::string &flag, const std::string &env,
                         long long *target_ms, long long min_ms,
                         long long max_ms, const std::string &help) {
  Option &o = add(flag, env, Kind::duration, target_ms, "DURATION", help);
  o.min = min_ms;
  o.max = max_ms;
  o.default_text = format_duration(*target_ms);
}

void OptionSet::toggle(const std::string &flag, const std::string &env,
                       bool *target, const std::string &help) {
  add(flag, env, Kind::toggle, target, "", help).default_text =
    *target ? "on" : "off";
}

void OptionSet::check(std::function<void()> fn) {
  checks_.push_back(std::move(fn));
}

void OptionSet::epilog(const std::string &text) {
  epilog_ = text;
}

std::string OptionSet::range_text(const Option &o) const {
  if (o.kind == Kind::count)
    return std::to_string(o.min) + " to " + std::to_string(o.max);
  if (o.min <= 1) return "above 0 and at most " + format_duration(o.max);
  return "from " + format_duration(o.min) + " to " + format_duration(o.max);
}

void OptionSet::assign(Option &o, const std::string &value,
                       const std::string &source) {
  o.source = source;
  switch (o.kind) {
  case Kind::text:
    *static_cast<std::string *>(o.target) = value;
    break;
  case Kind::count:
    *static_cast<long long *>(o.target) = parse_count(value, source);
    break;
  case Kind::duration:
    *static_cast<long long *>(o.target) = parse_duration_ms(value, source);
    break;
  case Kind::toggle:
    if (value == "1" || value == "true" || value == "yes" || value == "on")
      *static_cast<bool *>(o.target) = true;
    else if (value == "0" || value == "false" || value == "no" ||
             value == "off")
      *static_cast<bool *>(o.target) = false;
    else
      throw UsageError(source + ": \"" + value +
                       "\" is not one of 1, true, yes, on, 0, false, no, off");
    break;
  }
}

bool OptionSet::parse(int argc, char **argv) {
  for (auto &o : options_) {
    if (o.env.empty()) continue;
    const std::string v = env_or(o.env.c_str(), "");
    if (!v.empty()) assign(o, v, o.env);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      return false;
    }
    if (arg == "--version") {
      std::cout << version_ << "\n";
      return false;
    }
    std::string name = arg, inline_value;
    bool has_inline = false;
    if (const auto eq = arg.find('=');
        arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline = true;
    }
    Option *found = nullptr;
    for (auto &o : options_)
      if (o.flag == name) found = &o;
    if (found == nullptr) throw UsageError("unknown option " + name);
    if (found->kind == Kind::toggle) {
      assign(*found, has_inline ? inline_value : "true", name);
      continue;
    }
    if (!has_inline) {
      if (i + 1 >= argc) throw UsageError(name + " needs a value");
      inline_value = argv[++i];
    }
    assign(*found, inline_value, name);
  }
  for (const auto &o : options_) {
    if (o.kind != Kind::count && o.kind != Kind::duration) continue;
    const long long v = *static_cast<long long *>(o.target);
    if (v < o.min || v > o.max) {
      const std::string given =
        o.kind == Kind::count ? std::to_string(v) : format_duration(v);
      throw UsageError((o.source.empty() ? o.flag : o.source) + " must be " +
                       range_text(o) + " (got " + given + ")");
    }
  }
  for (const auto &c : checks_) c();
  return true;
}

namespace {

/// TEXT wrapped to lines of at most WIDTH characters, each after INDENT.
std::string wrap(const std::string &text, std::size_t indent,
                 std::size_t width) {
  std::istringstream words(text);
  std::string word, line, out;
  const std::string pad(indent, ' ');
  while (words >> word) {
    if (!line.empty() && pad.size() + line.size() + 1 + word.size() > width) {
      out += pad + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += pad + line + "\n";
  return out;
}

} // namespace

void OptionSet::usage(std::ostream &out) const {
  out << "usage: " << program_ << " [options]\n\n"
      << wrap(summary_, 0, 78) << "\n";
  for (const auto &o : options_) {
    out << "  " << o.flag << (o.meta.empty() ? "" : " " + o.meta) << "\n";
    std::string help = o.help;
    if (o.kind == Kind::count || o.kind == Kind::duration)
      help += ", " + range_text(o);
    std::string tail;
    if (!o.default_text.empty()) tail = "default " + o.default_text;
    if (!o.env.empty()) tail += (tail.empty() ? "" : "; ") + ("env " + o.env);
    if (!tail.empty()) help += " [" + tail + "]";
    out << wrap(help, 8, 78);
  }
  out << "  --help, --version\n"
      << wrap("this text; the version (both exit 0)", 8, 78);
  if (!epilog_.empty()) out << "\n" << epilog_;
}

} // namespace pgi
