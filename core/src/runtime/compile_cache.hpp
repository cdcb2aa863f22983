// runtime/compile_cache.hpp - compiled binaries, in memory and on disk.
//
// The key is the kernel's LIR fingerprint, its rendered source, the backend's name and plugin
// version, and the device compiler's cache key (which changes with the compiler version, flags
// and target features): two backends never share an entry, even when their compilers report the
// same key. Disk entries live in KILN_CACHE_DIR (default $XDG_CACHE_HOME/kiln, else
// ~/.cache/kiln), are written atomically (temporary file + rename) and carry a length and a
// checksum: a corrupt or truncated entry, or one that is not a regular file (a FIFO is opened
// without blocking and skipped), is detected, reported at KILN_DEBUG>=1 and rebuilt; so is a
// valid entry whose binary the device will not load (recompile). KILN_CACHE_DIR=off disables the
// disk cache. Bounds: KILN_CACHE_ENTRIES binaries in memory (least recently used dropped), and
// KILN_CACHE_MAX bytes on disk (default 1 GiB; least recently used entries, by mtime, deleted).
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
  uint64_t unloadable_rebuilt = 0;  // recompile calls
  uint64_t disk_evictions = 0;      // entries deleted to keep the disk cache within KILN_CACHE_MAX
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
// Builds the job anew, bypassing the cache, and overwrites its entries (memory and disk): for a
// cached binary the device does not load. Throws like compile_cached.
std::string recompile(Device& dev, const CompileJob& job);
// The cache key of a job (exposed for tests).
Key128 compile_cache_key(const std::string& backend, const std::string& plugin_version, const std::string& compiler_key,
                         const CompileJob& job);
// The disk entry of a key under `dir` (tests plant entries there).
std::string compile_cache_path(const std::string& dir, const Key128& key);
// Writes a disk entry (header, checksum, data) atomically, as the cache does; false if it could not.
bool write_compile_cache_entry(const std::string& path, const std::string& binary);
// Reads one: false when it is missing or corrupt (`corrupt` tells which; a corrupt entry is to be
// rebuilt). The search cache (beam.cpp) stores its entries the same way.
bool read_compile_cache_entry(const std::string& path, std::string& data, bool& corrupt);
CompileStats compile_stats();
void clear_compile_memory_cache();   // tests: forget in-memory binaries (disk stays)
size_t compile_memory_cache_size();
// Tests: waits until the disk cache's size counts started in the background are done (and their
// evictions with them).
void settle_disk_budget();
std::string compile_cache_dir();     // "" when the disk cache is off
// Says once per directory, on stderr, that a cache directory cannot be written (`knob` names the
// variable that chose it): the work it would keep is redone in every process.
void warn_unwritable_cache(const std::string& dir, const char* knob, const std::string& why);

}  // namespace kiln::runtime
