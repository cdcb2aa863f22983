// runtime/compile_cache.hpp - compiled binaries, in memory and on disk.
//
// The key is the kernel's LIR fingerprint, its rendered source and the device compiler's cache
// key (which changes with the compiler version, flags and target features). Disk entries live in
// KILN_CACHE_DIR (default $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), are written atomically
// (temporary file + rename) and carry a length and a checksum: a corrupt or truncated entry is
// detected, reported at KILN_DEBUG>=1 and rebuilt. KILN_CACHE_DIR=off disables the disk cache.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/key.hpp"

namespace kiln {
class Device;
}

namespace kiln::runtime {

struct CompileStats {
  uint64_t memory_hits = 0, disk_hits = 0, compiles = 0, corrupt_rebuilt = 0;
  uint64_t batches = 0;  // compile_many calls (each counted kernel by kernel in `compiles` too)
};

// The binary of `source` for `dev`; throws kiln::Error with the compiler log on a compile error.
std::string compile_cached(Device& dev, const std::string& source, const std::string& entry, const Key128& lir_key);

// Several kernels for one device: the cached ones from the cache, the others built together in one
// compile_many call when the device has it and two or more are missing (one binary, stored under
// each kernel's key), else one by one. If the joint build fails, the kernels are built one by one
// so the error names the one that fails. Entries must be distinct.
struct CompileJob {
  std::string source, entry;
  Key128 lir_key;
};
std::vector<std::string> compile_cached_many(Device& dev, const std::vector<CompileJob>& jobs);
CompileStats compile_stats();
void clear_compile_memory_cache();   // tests: forget in-memory binaries (disk stays)
std::string compile_cache_dir();     // "" when the disk cache is off

}  // namespace kiln::runtime
