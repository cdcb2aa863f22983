// support/env.hpp - environment knobs (KILN_DEBUG, KILN_NOOPT, ...) and debug logging.
//
// Knobs are read from the environment once, on first use, and cached; tests override them with
// set_knob() (process-wide, not thread-safe against concurrent readers of the same knob).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {

// Integer value of an environment variable, or `def` when unset or empty; a value that is not an
// integer throws kiln::Error naming the variable.
int64_t getenv_int(const char* name, int64_t def);
std::string getenv_str(const char* name, const std::string& def = "");

// Integer value with an optional binary size suffix (K, M, G, T: "512M", "1G"), or `def`; throws
// kiln::Error naming the variable for anything else, or a negative or overflowing size.
int64_t getenv_bytes(const char* name, int64_t def);

// cache_entries: KILN_CACHE_ENTRIES, entries kept by each in-memory cache (schedules, kernels,
// binaries; least recently used dropped first; 0 = unbounded). cache_max: KILN_CACHE_MAX, bytes
// of the disk compile cache (oldest entries by mtime evicted; 0 = unbounded; suffixes as above).
// check_bounds: KILN_CHECK_BOUNDS=1 makes an out-of-range gather index an error.
// ring: KILN_RING, the all-reduce algorithm: 0 naive, 1 ring, unset (-1) chosen by size and devices.
// beam_cache: KILN_BEAM_CACHE=0 makes the beam search not read its cache's entries (it still writes
// them; runtime/beam.hpp).
enum class Knob : int { debug, noopt, scache, beam, cache_entries, cache_max, check_bounds, ring, beam_cache, count_ };
// Reads a knob's environment variable now, checked against its range (the cached knob() reads it
// once this way): an integer out of range is a kiln::Error naming the variable and the range,
// KILN_BEAM above its cap is capped with a warning on stderr.
int64_t read_knob(Knob k);
int64_t knob(Knob k);               // cached value (KILN_DEBUG, KILN_NOOPT, KILN_SCACHE=1, KILN_BEAM, ...)
void set_knob(Knob k, int64_t v);   // override (tests, the kiln tool's options)

// Knobs whose value is text, read and cached the same way (unset and empty are the same: "").
// beam_dir: KILN_BEAM_DIR, the beam search's cache directory ("off": none; "": KILN_CACHE_DIR/beam).
enum class TextKnob : int { beam_dir, count_ };
std::string knob(TextKnob k);
void set_knob(TextKnob k, std::string v);
inline int64_t debug_level() { return knob(Knob::debug); }
// The capacity of each in-memory cache (KILN_CACHE_ENTRIES; 0 = unbounded).
inline size_t cache_entries() { return static_cast<size_t>(std::max<int64_t>(0, knob(Knob::cache_entries))); }

// Writes one line to stderr (adds the newline); all diagnostics go through here.
void log_line(const std::string& line);

}  // namespace kiln
