// src/common/log.h: the one log format of inventory-relay and
// inventory-fulfiller.
//
// One line per event on stderr: `ts=2026-11-29T08:00:00.123Z
// prog=inventory-relay event=EVENT key=value ...`.  Values with spaces,
// quotes, '=' or control characters are double-quoted (with \" and \\);
// newlines and tabs become spaces, so a line is always one line.
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

/// Sets the program name that every log line carries (prog=NAME).
void set_program(const std::string &name);

/// The name set by set_program().
const std::string &program_name();

/// Writes one line `ts=... prog=... event=EVENT k=v ...` to stderr.
void log(const std::string &event, std::initializer_list<Field> fields = {});

/// The same with fields built at run time.
void log(const std::string &event, const std::vector<Field> &fields);

/// IDS joined with ',' for a log field; after MAX of them the list ends
/// with ",..." (the line's count field says how many there were).
std::string join_ids(const std::vector<std::string> &ids,
                     std::size_t max = 20);

} // namespace pgi

#endif
