// plugins/cpu/sysinfo.hpp - what the host CPU is: model, cores, memory, ISA features (from /proc).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cpu {

struct CpuInfo {
  std::string model;               // /proc/cpuinfo "model name" ("AMD EPYC ...")
  std::vector<std::string> flags;  // every ISA flag the kernel reports
  unsigned cores = 1;              // CPUs this process may run on (sched_getaffinity)
  uint64_t memory_total = 0;       // bytes (/proc/meminfo MemTotal)
  uint64_t last_level_cache = 0;   // bytes (sysfs); 0 if unknown

  bool has(const std::string& flag) const;
  std::string isa_level() const;   // "x86-64-v4" ... "x86-64" (the psABI micro-architecture levels)
  std::string features() const;    // the flags that matter for generated code, space-separated
};

// Read once per process (cheap: two small /proc files).
const CpuInfo& cpu_info();

uint64_t memory_available();  // bytes (/proc/meminfo MemAvailable), read fresh; 0 if unknown

}  // namespace kiln::cpu
