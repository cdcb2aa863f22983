// support/env.hpp - environment knobs (KILN_DEBUG, KILN_NOOPT, ...) and debug logging.
//
// Knobs are read from the environment once, on first use, and cached; tests override them with
// set_knob() (process-wide, not thread-safe against concurrent readers of the same knob).
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

// Integer value of an environment variable, or `def` when unset or empty; a value that is not an
// integer throws kiln::Error naming the variable.
int64_t getenv_int(const char* name, int64_t def);
std::string getenv_str(const char* name, const std::string& def = "");

enum class Knob : int { debug, noopt, scache, beam, check_bounds, count_ };
// cached value (KILN_DEBUG, KILN_NOOPT, KILN_SCACHE=1, KILN_BEAM, KILN_CHECK_BOUNDS)
int64_t knob(Knob k);
void set_knob(Knob k, int64_t v);   // override (tests)
inline int64_t debug_level() { return knob(Knob::debug); }

// Writes one line to stderr (adds the newline); all diagnostics go through here.
void log_line(const std::string& line);

}  // namespace kiln
