// support/env.cpp - knob cache and stderr logging.
#include "support/env.hpp"

#include <array>
#include <climits>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "support/check.hpp"

namespace kiln {

int64_t getenv_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end != '\0') fail(ErrorCode::invalid_argument, "environment variable ", name, "='", v, "' is not an integer");
  return x;
}

int64_t getenv_bytes(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  bool digits = end != v;
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
  bool bytes = false;  // read with getenv_bytes
};
constexpr std::array<KnobDef, kKnobs> kDefs{{{"KILN_DEBUG", 0},
                                             {"KILN_NOOPT", 0},
                                             {"KILN_SCACHE", 1},
                                             {"KILN_BEAM", 0},
                                             {"KILN_CACHE_ENTRIES", 4096},
                                             {"KILN_CACHE_MAX", int64_t{1} << 30, true},
                                             {"KILN_CHECK_BOUNDS", 0},
                                             {"KILN_RING", -1}}};
std::array<std::atomic<int64_t>, kKnobs> g_values;
std::array<std::atomic<bool>, kKnobs> g_loaded;
}  // namespace

int64_t knob(Knob k) {
  int i = static_cast<int>(k);
  if (!g_loaded[i].load(std::memory_order_acquire)) {
    const KnobDef& d = kDefs[i];
    g_values[i].store(d.bytes ? getenv_bytes(d.env, d.def) : getenv_int(d.env, d.def), std::memory_order_relaxed);
    g_loaded[i].store(true, std::memory_order_release);
  }
  return g_values[i].load(std::memory_order_relaxed);
}

void set_knob(Knob k, int64_t v) {
  int i = static_cast<int>(k);
  g_values[i].store(v, std::memory_order_relaxed);
  g_loaded[i].store(true, std::memory_order_release);
}

void log_line(const std::string& line) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
}

}  // namespace kiln
