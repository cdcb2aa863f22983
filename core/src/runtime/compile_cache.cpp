// runtime/compile_cache.cpp - the two-level binary cache.
#include "runtime/compile_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

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

// Closes a file descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly n bytes (retrying short reads and interrupts).
bool read_all(int fd, char* p, size_t n) {
  while (n) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

constexpr size_t kHeaderBytes = 8 + 8 + sizeof(Key128);  // magic, size, checksum

// Only a regular file is an entry: anything else at the path (a FIFO, a device, a directory) is
// opened without blocking (O_NONBLOCK: a FIFO with no writer would block open() forever) and
// treated as corrupt, so it is rebuilt and replaced.
bool read_entry(const std::string& path, std::string& out, bool& corrupt) {
  corrupt = false;
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    corrupt = errno != ENOENT;  // present but unreadable
    return false;
  }
  struct stat st {};
  corrupt = true;
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < kHeaderBytes) return false;
  char magic[8];
  uint64_t size;
  Key128 sum;
  if (!read_all(f.fd, magic, 8) || std::memcmp(magic, kMagic, 8) || !read_all(f.fd, reinterpret_cast<char*>(&size), 8) ||
      !read_all(f.fd, reinterpret_cast<char*>(&sum), sizeof sum) || size != static_cast<uint64_t>(st.st_size) - kHeaderBytes ||
      size > (uint64_t{1} << 32))
    return false;
  out.resize(size);
  if (!read_all(f.fd, out.data(), size) || !(content_key(out) == sum)) return false;
  corrupt = false;
  return true;
}

}  // namespace

bool write_compile_cache_entry(const std::string& path, const std::string& data) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = cat(path, ".tmp.", getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;  // an unwritable cache only costs speed
    uint64_t size = data.size();
    Key128 sum = content_key(data);
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&size), 8);
    f.write(reinterpret_cast<const char*>(&sum), sizeof sum);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) {
      std::filesystem::remove(tmp);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old file or the whole new one
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

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
  Slot s{compile_cache_key(dev.backend(), dev.plugin_version(), dev.compiler_cache_key(), job), ""};
  std::string dir = compile_cache_dir();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec) s.path = compile_cache_path(dir, s.key);
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
  if (!s.path.empty()) write_compile_cache_entry(s.path, binary);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.stats.compiles;
  c.stats.corrupt_rebuilt += corrupt;
  c.memory.insert_or_assign(s.key, binary);  // recompile replaces a binary that did not load
}

}  // namespace

Key128 compile_cache_key(const std::string& backend, const std::string& plugin_version, const std::string& compiler_key,
                         const CompileJob& job) {
  return Fingerprint().str(backend).str(plugin_version).str(compiler_key).key(job.lir_key).str(job.source).str(job.entry).finish();
}

std::string compile_cache_path(const std::string& dir, const Key128& key) { return dir + "/" + key.hex() + ".bin"; }

std::string recompile(Device& dev, const CompileJob& job) {
  Slot s = slot_of(dev, job);
  std::string binary = dev.compile(job.source, job.entry);
  store(s, binary, false);
  std::lock_guard<std::mutex> lock(cache().mu);
  ++cache().stats.unloadable_rebuilt;
  return binary;
}

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
