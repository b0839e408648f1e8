// src/common/failure.cpp: the fatal log line (failure.h).
#include "failure.h"

#include "log.h"

namespace pgi {

void log_fatal(const Fatal &f) {
  log("fatal", {{"exit_code", std::to_string(f.code())},
                {"error", f.what()},
                {"hint", f.hint()}});
}

} // namespace pgi
