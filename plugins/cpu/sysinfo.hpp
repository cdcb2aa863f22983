// plugins/cpu/sysinfo.hpp - what the host CPU is: model, cores, memory, ISA features (from /proc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cpu {

// One core's data caches, in bytes; 0 where unknown.
struct CacheSizes {
  uint64_t l1d = 0, l2 = 0, last_level = 0;  // last_level: the largest cache of any level
};
// Reads a sysfs cache directory (/sys/devices/system/cpu/cpuN/cache: index*/{level,type,size}).
CacheSizes read_caches(const std::string& dir);

struct CpuInfo {
  std::string model;               // /proc/cpuinfo "model name" ("AMD EPYC ...")
  std::vector<std::string> flags;  // every ISA flag the kernel reports
  unsigned cores = 1;              // CPUs this process may run on (sched_getaffinity)
  uint64_t memory_total = 0;       // bytes (/proc/meminfo MemTotal)
  CacheSizes caches;               // cpu0's (sysfs)
  std::string vendor;              // /proc/cpuinfo "vendor_id" ("AuthenticAMD", "GenuineIntel")
  int family = 0;                  // /proc/cpuinfo "cpu family" (0: unknown)

  bool has(const std::string& flag) const;
  std::string isa_level() const;   // "x86-64-v4" ... "x86-64" (the psABI micro-architecture levels)
  std::string features() const;    // the flags that matter for generated code, space-separated
};

// The x86-64 psABI levels kiln compiles for (option `isa`, KILN_CPU_OFFLINE_ARCH), lowest first.
inline constexpr const char* kIsaLevels[] = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
// 1 for "x86-64", 2..4 for "x86-64-v2".."x86-64-v4", 0 for anything else.
int isa_rank(const std::string& level);
// The level kernels may run at: the host's, or KILN_CPU_ASSUME_HOST's when that is lower (tests
// of the compile-only path on any machine).
std::string runnable_isa_level();
// Float lanes of the widest vector registers a level guarantees: 4 (SSE), 8 (AVX2), 16 (AVX-512).
uint32_t isa_float_lanes(const std::string& level);

// Full-width (AVX-512) multiply-adds the host starts per cycle where it is known to differ from
// the two of its ISA level: 1 on AMD family 19h (Zen 4), whose two 256-bit FMA pipes take a
// 512-bit one in two passes; 0 where not known (the level's count stands).
uint32_t full_width_fma_pipes(const CpuInfo& cpu);

// Read once per process (cheap: two small /proc files).
const CpuInfo& cpu_info();

uint64_t memory_available();  // bytes (/proc/meminfo MemAvailable), read fresh; 0 if unknown

}  // namespace kiln::cpu
