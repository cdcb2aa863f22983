// runtime/compile_cache.cpp - the two-level binary cache.
#include "runtime/compile_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
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

namespace {

// Where one kernel's binary lives: its key, the disk path ("" without a disk cache).
struct Slot {
  Key128 key;
  std::string path;
};

Slot slot_of(Device& dev, const CompileJob& job) {
  Slot s{Fingerprint().key(job.lir_key).str(job.source).str(job.entry).str(dev.compiler_cache_key()).finish(), ""};
  std::string dir = compile_cache_dir();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec) s.path = dir + "/" + s.key.hex() + ".bin";
  }
  return s;
}

// The cached binary (memory, then disk), or nothing; `corrupt` says a disk entry was damaged.
std::optional<std::string> lookup(const Slot& s, bool& corrupt) {
  Cache& c = cache();
  corrupt = false;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.memory.find(s.key);
    if (it != c.memory.end()) {
      ++c.stats.memory_hits;
      return it->second;
    }
  }
  std::string binary;
  if (!s.path.empty() && read_entry(s.path, binary, corrupt)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
    c.memory.emplace(s.key, binary);
    return binary;
  }
  if (corrupt && debug_level() >= 1) log_line(cat("compile cache: ", s.path, " is corrupt or truncated; rebuilding it"));
  return std::nullopt;
}

void store(const Slot& s, const std::string& binary, bool corrupt) {
  if (!s.path.empty()) write_entry(s.path, binary);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.stats.compiles;
  c.stats.corrupt_rebuilt += corrupt;
  c.memory.emplace(s.key, binary);
}

}  // namespace

std::string compile_cached(Device& dev, const std::string& source, const std::string& entry, const Key128& lir_key) {
  Slot s = slot_of(dev, {source, entry, lir_key});
  bool corrupt = false;
  if (auto hit = lookup(s, corrupt)) return std::move(*hit);
  std::string binary = dev.compile(source, entry);
  store(s, binary, corrupt);
  return binary;
}

std::vector<std::string> compile_cached_many(Device& dev, const std::vector<CompileJob>& jobs) {
  std::vector<std::string> out(jobs.size());
  std::vector<Slot> slots;
  std::vector<size_t> misses;
  std::vector<bool> corrupt(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    slots.push_back(slot_of(dev, jobs[i]));
    bool bad = false;
    if (auto hit = lookup(slots[i], bad)) out[i] = std::move(*hit);
    else misses.push_back(i);
    corrupt[i] = bad;
  }
  if (misses.size() >= 2 && dev.has_compile_many()) {
    std::vector<std::pair<std::string, std::string>> kernels;
    for (size_t i : misses) kernels.push_back({jobs[i].source, jobs[i].entry});
    try {
      std::string binary = dev.compile_many(kernels);
      for (size_t i : misses) {
        store(slots[i], binary, corrupt[i]);  // each kernel's entry finds the shared binary
        out[i] = binary;
      }
      std::lock_guard<std::mutex> lock(cache().mu);
      ++cache().stats.batches;
      return out;
    } catch (const Error&) {
      // one by one below: the error then names the kernel that does not build
    }
  }
  for (size_t i : misses) {
    out[i] = dev.compile(jobs[i].source, jobs[i].entry);
    store(slots[i], out[i], corrupt[i]);
  }
  return out;
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
