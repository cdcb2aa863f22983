// runtime/compile_cache.cpp - the two-level binary cache.
#include "runtime/compile_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include "plugin/device.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/hash.hpp"

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '1'};

struct Cache {
  std::mutex mu;
  std::unordered_map<Key128, std::string, Key128Hash> memory;
  CompileStats stats;
};
Cache& cache() {
  static Cache c;
  return c;
}

Key128 content_key(const std::string& data) { return Fingerprint().str(data).finish(); }

bool read_entry(const std::string& path, std::string& out, bool& corrupt) {
  corrupt = false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  char magic[8];
  uint64_t size;
  Key128 sum;
  if (!f.read(magic, 8) || std::memcmp(magic, kMagic, 8) || !f.read(reinterpret_cast<char*>(&size), 8) ||
      !f.read(reinterpret_cast<char*>(&sum), sizeof sum) || size > (uint64_t{1} << 32)) {
    corrupt = true;
    return false;
  }
  out.resize(size);
  if (!f.read(out.data(), static_cast<std::streamsize>(size)) || f.peek() != EOF || !(content_key(out) == sum)) {
    corrupt = true;
    return false;
  }
  return true;
}

void write_entry(const std::string& path, const std::string& data) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = cat(path, ".tmp.", getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return;  // an unwritable cache only costs speed
    uint64_t size = data.size();
    Key128 sum = content_key(data);
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&size), 8);
    f.write(reinterpret_cast<const char*>(&sum), sizeof sum);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) {
      std::filesystem::remove(tmp);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old file or the whole new one
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

std::string compile_cache_dir() {
  std::string d = getenv_str("KILN_CACHE_DIR");
  if (d == "off") return "";
  if (d.empty()) {
    std::string xdg = getenv_str("XDG_CACHE_HOME"), home = getenv_str("HOME");
    if (!xdg.empty()) d = xdg + "/kiln";
    else if (!home.empty()) d = home + "/.cache/kiln";
    else return "";
  }
  return d;
}

std::string compile_cached(Device& dev, const std::string& source, const std::string& entry, const Key128& lir_key) {
  Key128 key = Fingerprint().key(lir_key).str(source).str(entry).str(dev.compiler_cache_key()).finish();
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.memory.find(key);
    if (it != c.memory.end()) {
      ++c.stats.memory_hits;
      return it->second;
    }
  }
  std::string dir = compile_cache_dir(), path;
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    path = ec ? "" : dir + "/" + key.hex() + ".bin";
  }
  std::string binary;
  bool corrupt = false;
  if (!path.empty() && read_entry(path, binary, corrupt)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
    c.memory.emplace(key, binary);
    return binary;
  }
  if (corrupt && debug_level() >= 1) log_line(cat("compile cache: ", path, " is corrupt or truncated; rebuilding it"));
  binary = dev.compile(source, entry);
  if (!path.empty()) write_entry(path, binary);
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.stats.compiles;
  c.stats.corrupt_rebuilt += corrupt;
  c.memory.emplace(key, binary);
  return binary;
}

CompileStats compile_stats() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().stats;
}

void clear_compile_memory_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().memory.clear();
}

}  // namespace kiln::runtime
