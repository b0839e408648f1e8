// src/common/log.h: the one log format of inventory-relay and
// inventory-fulfiller.
//
// One line per event on stderr, in one of two formats (--log-format):
//   text (the default): `ts=2026-11-29T08:00:00.123Z prog=inventory-relay
//     event=EVENT key=value ...`.  Values with spaces, quotes, '=' or
//     control characters are double-quoted (with \" and \\); newlines and
//     tabs become spaces, so a line is always one line.
//   json: one JSON object per line with the same keys in the same order,
//     `{"ts":"...","prog":"inventory-relay","event":"EVENT","key":"value"}`;
//     every value is a JSON string (a counter too, so that a field never
//     changes type), escaped as JSON requires (control characters as
//     \uXXXX; bytes that are not UTF-8 become U+FFFD).
#ifndef PG_INVENTORY_COMMON_LOG_H
#define PG_INVENTORY_COMMON_LOG_H

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace pgi {

/// A key and its value in a log line.
using Field = std::pair<std::string, std::string>;

/// The two line formats.
enum class LogFormat { text, json };

/// Sets the program name that every log line carries (prog=NAME).
void set_program(const std::string &name);

/// The name set by set_program().
const std::string &program_name();

/// Sets the format of the lines written from now on (text by default).
void set_log_format(LogFormat format);

/// "text" or "json" as a LogFormat; throws UsageError naming WHAT
/// otherwise.
LogFormat parse_log_format(const std::string &text, const std::string &what);

/// Writes one line `ts=... prog=... event=EVENT k=v ...` (or its JSON
/// object) to stderr.
void log(const std::string &event, std::initializer_list<Field> fields = {});

/// The same with fields built at run time.
void log(const std::string &event, const std::vector<Field> &fields);

/// The line log() writes for EVENT and FIELDS at time TS in FORMAT,
/// without the newline (for tests).
std::string format_line(LogFormat format, const std::string &ts,
                        const std::string &event,
                        const std::vector<Field> &fields);

/// V as the body of a JSON string (without the quotes).
std::string json_escape(const std::string &v);

/// IDS joined with ',' for a log field; after MAX of them the list ends
/// with ",..." (the line's count field says how many there were).
std::string join_ids(const std::vector<std::string> &ids,
                     std::size_t max = 20);

} // namespace pgi

#endif
