// src/common/log.cpp: key=value or JSON log lines on stderr (log.h).
#include "log.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <sstream>
#include <sys/time.h>

#include "cli.h"

namespace pgi {

namespace {

std::string &program() {
  static std::string name = "pg_inventory";
  return name;
}

std::atomic<LogFormat> &format() {
  static std::atomic<LogFormat> f{LogFormat::text};
  return f;
}

std::string quote(const std::string &v) {
  bool plain = !v.empty();
  for (char c : v)
    if (c == ' ' || c == '"' || c == '=' || c == '\\' ||
        static_cast<unsigned char>(c) < 0x20)
      plain = false;
  if (plain) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
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

/// The length of the UTF-8 sequence at S[I] (1 to 4), or 0 when the bytes
/// there are not one (overlong forms, surrogates and values above U+10FFFF
/// included).
std::size_t utf8_length(const std::string &s, std::size_t i) {
  const auto b = [&](std::size_t k) {
    return static_cast<unsigned char>(s[i + k]);
  };
  const unsigned char c = b(0);
  std::size_t len = c < 0x80             ? 1
                    : (c & 0xe0) == 0xc0 ? 2
                    : (c & 0xf0) == 0xe0 ? 3
                    : (c & 0xf8) == 0xf0 ? 4
                                         : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((b(k) & 0xc0) != 0x80) return 0;
  if (len == 2 && c < 0xc2) return 0;                  // overlong
  if (len == 3 && c == 0xe0 && b(1) < 0xa0) return 0;  // overlong
  if (len == 3 && c == 0xed && b(1) >= 0xa0) return 0; // surrogate
  if (len == 4 && c == 0xf0 && b(1) < 0x90) return 0;  // overlong
  if (len == 4 && (c > 0xf4 || (c == 0xf4 && b(1) >= 0x90))) return 0;
  return len;
}

template <class Fields>
std::string text_line(const std::string &ts, const std::string &event,
                      const Fields &fields) {
  std::ostringstream line;
  line << "ts=" << ts << " prog=" << program() << " event=" << event;
  for (const auto &f : fields)
    line << ' ' << f.first << '=' << quote(f.second);
  return line.str();
}

template <class Fields>
std::string json_line(const std::string &ts, const std::string &event,
                      const Fields &fields) {
  std::string line = "{\"ts\":\"" + json_escape(ts) + "\",\"prog\":\"" +
                     json_escape(program()) + "\",\"event\":\"" +
                     json_escape(event) + "\"";
  for (const auto &f : fields)
    line +=
      ",\"" + json_escape(f.first) + "\":\"" + json_escape(f.second) + "\"";
  return line + "}";
}

template <class Fields>
void write_line(const std::string &event, const Fields &fields) {
  const std::string ts = timestamp();
  std::string line = format() == LogFormat::json
                       ? json_line(ts, event, fields)
                       : text_line(ts, event, fields);
  line += '\n';
  std::cerr << line << std::flush;
}

} // namespace

void set_program(const std::string &name) {
  program() = name;
}

const std::string &program_name() {
  return program();
}

void set_log_format(LogFormat f) {
  format() = f;
}

LogFormat parse_log_format(const std::string &text, const std::string &what) {
  if (text == "text") return LogFormat::text;
  if (text == "json") return LogFormat::json;
  throw UsageError(what + ": \"" + text + "\" is not one of text, json");
}

std::string json_escape(const std::string &v) {
  std::string out;
  out.reserve(v.size() + 8);
  for (std::size_t i = 0; i < v.size();) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c >= 0x80) {
      const std::size_t len = utf8_length(v, i);
      if (len == 0) {
        out += "\\ufffd"; // not UTF-8: the replacement character
        ++i;
      } else {
        out.append(v, i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
    ++i;
  }
  return out;
}

std::string format_line(LogFormat f, const std::string &ts,
                        const std::string &event,
                        const std::vector<Field> &fields) {
  return f == LogFormat::json ? json_line(ts, event, fields)
                              : text_line(ts, event, fields);
}

void log(const std::string &event, std::initializer_list<Field> fields) {
  write_line(event, fields);
}

void log(const std::string &event, const std::vector<Field> &fields) {
  write_line(event, fields);
}

std::string join_ids(const std::vector<std::string> &ids, std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i == max) return s + ",...";
    if (i) s += ',';
    s += ids[i];
  }
  return s;
}

} // namespace pgi
