// support/trace.cpp - the KILN_TRACE recorder: events in memory, written as JSON at exit.
#include "support/trace.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "support/env.hpp"
#include "support/check.hpp"

namespace kiln::trace {

namespace {

constexpr int kHostPid = 1, kDevicePid = 2;

struct Recorder {
  std::mutex mu;
  std::string path;
  std::vector<std::string> events;        // one JSON object each
  std::map<std::thread::id, int> hosts;   // host thread -> lane id (1, 2, ... in order of first event)
  std::map<std::string, int, std::less<>> devices;  // device name -> lane id
  bool warned = false;
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: events may arrive from static destructors
  return *r;
}

// -1 not read yet, 0 off, 1 on
std::atomic<int> g_state{-1};

void write_at_exit() { flush(); }

int read_state() {
  std::string path = getenv_str("KILN_TRACE");
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  int s = g_state.load();
  if (s >= 0) return s;  // another thread got here first
  r.path = path;
  if (!path.empty()) std::atexit(write_at_exit);
  g_state.store(path.empty() ? 0 : 1);
  return g_state.load();
}

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e3);
  return buf;
}

// A lane's name, as the metadata event that shows it in the viewer.
std::string lane_name(int pid, int tid, std::string_view name) {
  std::string e = cat("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ", pid, ", \"tid\": ", tid, ", \"args\": {\"name\": ");
  json_string(e, name);
  return e + "}}";
}

}  // namespace

bool on() {
  int s = g_state.load(std::memory_order_relaxed);
  return (s < 0 ? read_state() : s) == 1;
}

int64_t now_ns() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

void event(std::string_view cat_name, std::string_view name, int64_t start_ns, int64_t end_ns, std::string_view device,
           std::string_view args) {
  if (!on()) return;
  std::string e = "{\"ph\": \"X\", \"cat\": ";
  json_string(e, cat_name);
  e += ", \"name\": ";
  json_string(e, name);
  e += cat(", \"ts\": ", micros(start_ns), ", \"dur\": ", micros(std::max<int64_t>(0, end_ns - start_ns)));
  if (!args.empty()) e += cat(", \"args\": {", args, "}");
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  int pid = kHostPid, tid = 0;
  if (device.empty()) {
    auto [it, fresh] = r.hosts.try_emplace(std::this_thread::get_id(), static_cast<int>(r.hosts.size()) + 1);
    tid = it->second;
    if (fresh) r.events.push_back(lane_name(kHostPid, tid, tid == 1 ? "host thread 1 (first to trace)" : cat("host thread ", tid)));
  } else {
    pid = kDevicePid;
    auto it = r.devices.find(device);
    if (it == r.devices.end()) {
      it = r.devices.emplace(std::string(device), static_cast<int>(r.devices.size()) + 1).first;
      r.events.push_back(lane_name(kDevicePid, it->second, device));
    }
    tid = it->second;
  }
  r.events.push_back(cat(e, ", \"pid\": ", pid, ", \"tid\": ", tid, "}"));
}

void Span::start(const char* cat_name, std::string name) {
  cat_ = cat_name;
  name_ = std::move(name);
  start_ns_ = now_ns();
}

Span::~Span() {
  if (on_) event(cat_, name_, start_ns_, now_ns(), {}, args_);
}

bool flush() {
  if (!on()) return false;
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out += cat("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ", kHostPid, ", \"args\": {\"name\": \"host\"}},\n");
  out += cat("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ", kDevicePid, ", \"args\": {\"name\": \"devices\"}}");
  for (const std::string& e : r.events) out += ",\n" + e;
  out += "\n]}\n";
  std::FILE* f = std::fopen(r.path.c_str(), "wb");
  bool ok = f && std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (f) ok = std::fclose(f) == 0 && ok;
  if (!ok && !r.warned) {
    r.warned = true;
    log_line(cat("kiln: KILN_TRACE=", r.path, ": cannot write the trace there; set it to a writable file path"));
  }
  return ok;
}

}  // namespace kiln::trace
