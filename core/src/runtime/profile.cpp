// runtime/profile.cpp - kiln::Profile: a per-thread stack of collectors fed by the launcher. The
// lane workers that run other devices' items adopt the stack of the thread that started the run
// (runtime/lanes.cpp), so a Profile sees the launches of every device its program uses.
#include "kiln/profile.hpp"

#include <cstdio>
#include <mutex>

#include "runtime/profile_stack.hpp"

namespace kiln {

namespace {
thread_local Profile* current = nullptr;
}

Profile::Profile() : outer_(current) { current = this; }
Profile::~Profile() { current = outer_; }

bool Profile::active() { return current != nullptr; }

void Profile::record(const KernelRun& run) {
  static std::mutex mu;  // lanes of one run record at once
  std::lock_guard<std::mutex> lock(mu);
  for (Profile* p = current; p; p = p->outer_) p->runs_.push_back(run);
}

namespace runtime {
Profile* profile_stack() { return current; }
AdoptProfiles::AdoptProfiles(Profile* stack) : saved_(current) { current = stack; }
AdoptProfiles::~AdoptProfiles() { current = saved_; }
}  // namespace runtime

double Profile::total_seconds() const {
  double s = 0;
  for (const KernelRun& r : runs_) s += r.seconds;
  return s;
}

std::string Profile::table() const {
  std::string out;
  char line[256];
  for (const KernelRun& r : runs_) {
    std::snprintf(line, sizeof line, "  %-28s %-9s global=(%u,%u,%u) local=(%u,%u,%u) %9.3f ms %8.2f GFLOP/s %8.2f GB/s\n",
                  r.name.c_str(), r.device.c_str(), r.global[0], r.global[1], r.global[2], r.local[0], r.local[1],
                  r.local[2], r.seconds * 1e3, r.seconds > 0 ? r.flops / r.seconds * 1e-9 : 0.0,
                  r.seconds > 0 ? r.bytes / r.seconds * 1e-9 : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  %zu kernel%s, %.3f ms in kernels\n", runs_.size(), runs_.size() == 1 ? "" : "s",
                total_seconds() * 1e3);
  out += line;
  return out;
}

}  // namespace kiln
