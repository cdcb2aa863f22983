// support/env.cpp - knob cache and stderr logging.
#include "support/env.hpp"

#include <array>
#include <climits>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "support/check.hpp"

namespace kiln {

int64_t getenv_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || end == v) fail(ErrorCode::invalid_argument, "environment variable ", name, "='", v, "' is not an integer");
  if (errno == ERANGE) fail(ErrorCode::invalid_argument, "environment variable ", name, "='", v, "' is out of the range of a 64-bit integer");
  return x;
}

int64_t getenv_bytes(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  bool digits = end != v && errno != ERANGE;
  int shift = 0;
  switch (*end) {
    case 'K': case 'k': shift = 10; ++end; break;
    case 'M': case 'm': shift = 20; ++end; break;
    case 'G': case 'g': shift = 30; ++end; break;
    case 'T': case 't': shift = 40; ++end; break;
    default: break;
  }
  if (!digits || *end != '\0' || x < 0 || x > (INT64_MAX >> shift))
    fail(ErrorCode::invalid_argument, "environment variable ", name, "='", v,
         "' is not a size: expected a non-negative integer of bytes, optionally with K, M, G or T (e.g. 512M)");
  return static_cast<int64_t>(x) << shift;
}

std::string getenv_str(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}

namespace {
constexpr int kKnobs = static_cast<int>(Knob::count_);
struct KnobDef {
  const char* env;
  int64_t def;
  int64_t min, max;    // a value outside is an error naming the knob and its range ...
  bool bytes = false;  // read with getenv_bytes
  bool clamp = false;  // ... or, with clamp, is brought to max with a warning (once)
};
constexpr int64_t kAny = INT64_MAX;
// KILN_BEAM is the search's width: past 64 candidates a round the search takes minutes a kernel and
// finds nothing a narrower one misses (docs/optimizer.md), so wider asks are capped.
constexpr int64_t kBeamCap = 64;
constexpr std::array<KnobDef, kKnobs> kDefs{{{"KILN_DEBUG", 0, 0, kAny},
                                             {"KILN_NOOPT", 0, 0, 1},
                                             {"KILN_SCACHE", 1, 0, 1},
                                             {"KILN_BEAM", 0, 0, kBeamCap, false, true},
                                             {"KILN_CACHE_ENTRIES", 4096, 0, kAny},
                                             {"KILN_CACHE_MAX", int64_t{1} << 30, 0, kAny, true},
                                             {"KILN_CHECK_BOUNDS", 0, 0, 1},
                                             {"KILN_RING", -1, -1, kAny},
                                             {"KILN_BEAM_CACHE", 1, 0, 1}}};
int64_t checked(const KnobDef& d, int64_t v) {
  if (v >= d.min && v <= d.max) return v;
  if (d.clamp && v > d.max) {
    log_line(cat("kiln: ", d.env, "=", v, " is above the largest value, ", d.max, "; using ", d.max));
    return d.max;
  }
  fail(ErrorCode::invalid_argument, "environment variable ", d.env, "=", v, " is out of range: expected ", d.min,
       d.max == kAny ? " or more" : cat(" to ", d.max), " (unset it for the default, ", d.def, ")");
}
std::array<std::atomic<int64_t>, kKnobs> g_values;
std::array<std::atomic<bool>, kKnobs> g_loaded;
}  // namespace

int64_t read_knob(Knob k) {
  const KnobDef& d = kDefs[static_cast<int>(k)];
  return checked(d, d.bytes ? getenv_bytes(d.env, d.def) : getenv_int(d.env, d.def));
}

int64_t knob(Knob k) {
  int i = static_cast<int>(k);
  if (!g_loaded[i].load(std::memory_order_acquire)) {
    g_values[i].store(read_knob(k), std::memory_order_relaxed);
    g_loaded[i].store(true, std::memory_order_release);
  }
  return g_values[i].load(std::memory_order_relaxed);
}

void set_knob(Knob k, int64_t v) {
  int i = static_cast<int>(k);
  g_values[i].store(v, std::memory_order_relaxed);
  g_loaded[i].store(true, std::memory_order_release);
}

namespace {
constexpr int kTextKnobs = static_cast<int>(TextKnob::count_);
constexpr std::array<const char*, kTextKnobs> kTextEnv{{"KILN_BEAM_DIR"}};
struct TextKnobs {
  std::mutex mu;
  std::array<std::string, kTextKnobs> values;
  std::array<bool, kTextKnobs> loaded{};
};
TextKnobs& text_knobs() {
  static TextKnobs* t = new TextKnobs;  // never destroyed: read during static destruction too
  return *t;
}
}  // namespace

std::string knob(TextKnob k) {
  int i = static_cast<int>(k);
  TextKnobs& t = text_knobs();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!t.loaded[i]) {
    t.values[i] = getenv_str(kTextEnv[i]);
    t.loaded[i] = true;
  }
  return t.values[i];
}

void set_knob(TextKnob k, std::string v) {
  int i = static_cast<int>(k);
  TextKnobs& t = text_knobs();
  std::lock_guard<std::mutex> lock(t.mu);
  t.values[i] = std::move(v);
  t.loaded[i] = true;
}

void log_line(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
}

}  // namespace kiln
