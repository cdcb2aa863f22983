// plugins/cpu/sysinfo.cpp - /proc/cpuinfo and /proc/meminfo parsing.
#include "sysinfo.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kiln::cpu {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

uint64_t meminfo_field(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  std::string prefix = std::string(key) + ":";
  while (std::getline(in, line))
    if (line.compare(0, prefix.size(), prefix) == 0) return std::stoull(line.substr(prefix.size())) * 1024;  // kB
  return 0;
}

CpuInfo read_cpu_info() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {  // the first processor's block describes them all
    size_t colon = line.find(':');
    if (colon == std::string::npos) {
      if (!info.model.empty() && !info.flags.empty()) break;
      continue;
    }
    std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && info.model.empty()) info.model = value;
    if (key == "vendor_id" && info.vendor.empty()) info.vendor = value;
    if (key == "cpu family" && info.family == 0) info.family = std::atoi(value.c_str());
    if (key == "flags" && info.flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) info.flags.push_back(w);
      std::sort(info.flags.begin(), info.flags.end());
    }
  }
  if (info.model.empty()) info.model = "unknown CPU";
  cpu_set_t set;
  CPU_ZERO(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  info.cores = sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<unsigned>(CPU_COUNT(&set))
                                                            : static_cast<unsigned>(online > 0 ? online : 1);
  info.memory_total = meminfo_field("MemTotal");
  info.caches = read_caches("/sys/devices/system/cpu/cpu0/cache");
  return info;
}

}  // namespace

uint32_t full_width_fma_pipes(const CpuInfo& cpu) {
  return cpu.vendor == "AuthenticAMD" && cpu.family == 0x19 && cpu.has("avx512f") ? 1 : 0;
}

// sysfs, not sysconf: _SC_LEVEL3_CACHE_SIZE reports the host's whole L3 inside a VM, and
// _SC_LEVEL2_CACHE_SIZE is 0 on some libcs.
CacheSizes read_caches(const std::string& dir) {
  CacheSizes c;
  for (int index = 0; index < 16; ++index) {
    const std::string base = dir + "/index" + std::to_string(index) + "/";
    std::ifstream size_file(base + "size"), level_file(base + "level"), type_file(base + "type");
    std::string text, type;
    int level = 0;
    if (!(size_file >> text) || text.empty()) continue;
    char* end = nullptr;
    uint64_t v = std::strtoull(text.c_str(), &end, 10);
    v *= *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : *end == 'G' ? uint64_t{1} << 30 : 1;  // "48K", "2048K", "300M"
    c.last_level = std::max(c.last_level, v);
    if (!(level_file >> level) || !(type_file >> type) || type == "Instruction") continue;
    if (level == 1) c.l1d = v;
    if (level == 2) c.l2 = v;
  }
  return c;
}

bool CpuInfo::has(const std::string& flag) const { return std::binary_search(flags.begin(), flags.end(), flag); }

std::string CpuInfo::isa_level() const {
  auto all = [&](std::initializer_list<const char*> fs) {
    return std::all_of(fs.begin(), fs.end(), [&](const char* f) { return has(f); });
  };
  if (!all({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"})) return "x86-64";
  if (!all({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"})) return "x86-64-v2";
  if (!all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})) return "x86-64-v3";
  return "x86-64-v4";
}

int isa_rank(const std::string& level) {
  if (level == "x86-64") return 1;
  for (int i = 0; i < 3; ++i)
    if (level == kIsaLevels[i]) return i + 2;
  return 0;
}

std::string runnable_isa_level() {
  std::string host = cpu_info().isa_level();
  const char* assumed = std::getenv("KILN_CPU_ASSUME_HOST");
  if (assumed && isa_rank(assumed) > 0 && isa_rank(assumed) < isa_rank(host)) return assumed;
  return host;
}

uint32_t isa_float_lanes(const std::string& level) { return isa_rank(level) >= 4 ? 16 : isa_rank(level) == 3 ? 8 : 4; }

std::string CpuInfo::features() const {
  static const char* const interesting[] = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw",
                                            "avx512dq", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                                            "amx_tile", "amx_bf16", "amx_int8"};
  std::string out;
  for (const char* f : interesting)
    if (has(f)) out += (out.empty() ? "" : " ") + std::string(f);
  return out;
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = read_cpu_info();
  return info;
}

uint64_t memory_available() { return meminfo_field("MemAvailable"); }

}  // namespace kiln::cpu
