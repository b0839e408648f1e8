// src/common/log.cpp: key=value log lines on stderr (log.h).
#include "log.h"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <sstream>
#include <sys/time.h>

namespace pgi {

namespace {

std::string &program() {
  static std::string name = "pg_inventory";
  return name;
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

template <class Fields>
void write_line(const std::string &event, const Fields &fields) {
  std::ostringstream line;
  line << "ts=" << timestamp() << " prog=" << program() << " event=" << event;
  for (const auto &f : fields)
    line << ' ' << f.first << '=' << quote(f.second);
  line << '\n';
  std::cerr << line.str() << std::flush;
}

} // namespace

void set_program(const std::string &name) {
  program() = name;
}

const std::string &program_name() {
  return program();
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
