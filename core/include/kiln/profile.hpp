// kiln/profile.hpp - per-kernel timings of the launches a program makes.
//
//   kiln::Profile prof;                       // start collecting on this thread
//   out.realize();
//   std::fputs(prof.table().c_str(), stdout); // one line per kernel launched since
//
// While a Profile is alive, every kernel launched by this thread's realizes waits for completion
// and is timed, also those a schedule over several devices runs on another device's lane
// (KILN_DEBUG=2 prints the same lines as they happen). Profiles nest; each sees every launch made
// during its lifetime.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct KernelRun {
  std::string name, device;
  std::array<uint32_t, 3> global{}, local{};  // workgroups per dimension; items per workgroup
  double seconds = 0;
  double flops = 0, bytes = 0;  // analytic counts of the kernel (bytes: minimum moved)
};

class Profile {
 public:
  Profile();
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  const std::vector<KernelRun>& runs() const { return runs_; }
  double total_seconds() const;
  // A human-readable table: name, device, sizes, ms, GFLOP/s, GB/s; a total line at the end.
  std::string table() const;

  // Called by the runtime for every launch of this thread's realizes (thread-safe).
  static bool active();
  static void record(const KernelRun& run);

 private:
  std::vector<KernelRun> runs_;
  Profile* outer_;
};

}  // namespace kiln
