// runtime/compile_cache.cpp - the two-level binary cache.
#include "runtime/compile_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "plugin/device.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/hash.hpp"
#include "support/lru_map.hpp"

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '1'};

struct Cache {
  std::mutex mu;
  LruMap<Key128, std::string, Key128Hash> memory;  // KILN_CACHE_ENTRIES
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
  ::futimens(f.fd, nullptr);  // mtime = last use, for the disk budget's eviction order (best effort)
  corrupt = false;
  return true;
}

}  // namespace

bool read_compile_cache_entry(const std::string& path, std::string& data, bool& corrupt) { return read_entry(path, data, corrupt); }

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

void warn_unwritable_cache(const std::string& dir, const char* knob, const std::string& why) {
  static std::mutex mu;
  static std::vector<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (std::find(warned.begin(), warned.end(), dir) != warned.end()) return;
  warned.push_back(dir);
  log_line(cat("kiln: cannot write the cache directory ", dir, " (", why, "), so every process redoes its work; set ", knob,
               " to a writable directory, or to off"));
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

// Where one kernel's binary lives: its key, the disk cache and the entry ("" without a disk cache).
struct Slot {
  Key128 key;
  std::string dir, path;
};

Slot slot_of(Device& dev, const CompileJob& job) {
  Slot s{compile_cache_key(dev.backend(), dev.plugin_version(), dev.compiler_cache_key(), job), "", ""};
  std::string dir = compile_cache_dir();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec) s.dir = dir, s.path = compile_cache_path(dir, s.key);
    else warn_unwritable_cache(dir, "KILN_CACHE_DIR", ec.message());
  }
  return s;
}

// The disk cache's size budget (KILN_CACHE_MAX). Entries are touched when read, so their mtime
// is their last use; when the entries of a directory pass the budget, the least recently used
// are deleted until they fill at most 3/4 of it (so a full cache is not rescanned on every
// write). The size is counted once per directory per process, then kept up to date by the
// writes of this process (other processes sharing the directory are seen at the next rescan).
// The count is a stat of every entry: about a second for the 300 000 entries a cache near its
// budget holds, which every process's first compile waited for. It runs on a thread of its own;
// the writes made meanwhile are added when it is done (one written during the count may be counted
// twice: the budget then errs early).
struct DirBudget {
  bool counted = false, counting = false;
  uint64_t bytes = 0, pending = 0;
};
struct DiskBudget {
  std::mutex mu;
  std::condition_variable settled;
  std::unordered_map<std::string, DirBudget> dirs;
};
DiskBudget& disk_budget() {
  static DiskBudget* b = new DiskBudget;  // never destroyed: a count may still run at exit
  return *b;
}

struct DiskEntry {
  std::filesystem::file_time_type mtime;
  uint64_t size;
  std::filesystem::path path;
};
std::vector<DiskEntry> disk_entries(const std::string& dir) {
  std::vector<DiskEntry> out;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code e1, e2, e3;
    if (f.path().extension() != ".bin" || !f.is_regular_file(e1)) continue;
    auto t = f.last_write_time(e2);
    uint64_t n = f.file_size(e3);
    if (!e1 && !e2 && !e3) out.push_back({t, n, f.path()});
  }
  return out;
}

uint64_t total_size(const std::vector<DiskEntry>& entries) {
  uint64_t n = 0;
  for (const DiskEntry& e : entries) n += e.size;
  return n;
}

uint64_t disk_budget_bytes() { return static_cast<uint64_t>(std::max<int64_t>(0, knob(Knob::cache_max))); }

// Deletes the least recently used entries of `dir` while it is past the budget (b.mu held).
void evict_past_budget(const std::string& dir, DirBudget& d) {
  const uint64_t budget = disk_budget_bytes();
  if (!budget || d.bytes <= budget) return;
  std::vector<DiskEntry> entries = disk_entries(dir);
  std::sort(entries.begin(), entries.end(), [](const DiskEntry& a, const DiskEntry& b) { return a.mtime < b.mtime; });
  uint64_t total = total_size(entries), evicted = 0;
  for (const DiskEntry& e : entries) {
    if (total <= budget / 4 * 3) break;
    std::error_code ec;
    if (std::filesystem::remove(e.path, ec)) total -= e.size, ++evicted;
  }
  d.bytes = total;
  if (debug_level() >= 1) log_line(cat("compile cache: ", dir, " passed KILN_CACHE_MAX (", budget, " bytes); evicted ", evicted, " entries"));
  std::lock_guard<std::mutex> stats_lock(cache().mu);
  cache().stats.disk_evictions += evicted;
}

void count_dir(const std::string& dir) {
  const uint64_t counted = total_size(disk_entries(dir));
  DiskBudget& b = disk_budget();
  std::lock_guard<std::mutex> lock(b.mu);
  DirBudget& d = b.dirs[dir];
  d.bytes = counted + d.pending;
  d.pending = 0;
  d.counted = true;
  d.counting = false;
  evict_past_budget(dir, d);
  b.settled.notify_all();
}

// Records `written` new bytes in `dir`, evicting least recently used entries past the budget.
void charge_disk(const std::string& dir, uint64_t written) {
  if (!disk_budget_bytes()) return;
  DiskBudget& b = disk_budget();
  std::unique_lock<std::mutex> lock(b.mu);
  DirBudget& d = b.dirs[dir];
  if (!d.counted) {
    d.pending += written;
    if (d.counting) return;
    d.counting = true;
    try {
      std::thread([dir] { count_dir(dir); }).detach();
    } catch (const std::system_error&) {  // no thread to spare: count here
      lock.unlock();
      count_dir(dir);
    }
    return;
  }
  d.bytes += written;
  evict_past_budget(dir, d);
}

}  // namespace

void settle_disk_budget() {
  DiskBudget& b = disk_budget();
  std::unique_lock<std::mutex> lock(b.mu);
  b.settled.wait(lock, [&] {
    return std::none_of(b.dirs.begin(), b.dirs.end(), [](const auto& kv) { return kv.second.counting; });
  });
}

namespace {

// The cached binary (memory, then disk), or nothing; `corrupt` says a disk entry was damaged.
std::optional<std::string> lookup(const Slot& s, bool& corrupt) {
  Cache& c = cache();
  corrupt = false;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto* hit = c.memory.find(s.key)) {
      ++c.stats.memory_hits;
      return *hit;
    }
  }
  std::string binary;
  if (!s.path.empty() && read_entry(s.path, binary, corrupt)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
    c.memory.put(s.key, binary, cache_entries());
    return binary;
  }
  if (corrupt && debug_level() >= 1) log_line(cat("compile cache: ", s.path, " is corrupt or truncated; rebuilding it"));
  return std::nullopt;
}

void store(const Slot& s, const std::string& binary, bool corrupt) {
  if (!s.path.empty()) {
    if (write_compile_cache_entry(s.path, binary)) charge_disk(s.dir, kHeaderBytes + binary.size());
    else warn_unwritable_cache(s.dir, "KILN_CACHE_DIR", "writing an entry failed");
  }
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.stats.compiles;
  c.stats.corrupt_rebuilt += corrupt;
  c.memory.put(s.key, binary, cache_entries());  // recompile replaces one
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

size_t compile_memory_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().memory.size();
}

void clear_compile_memory_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().memory.clear();
}

}  // namespace kiln::runtime
