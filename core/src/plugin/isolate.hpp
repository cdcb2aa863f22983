// plugin/isolate.hpp - running plugin code in a forked child, so a crash, an exit() or a hang in
// a plugin is a result for the caller instead of the end of its process.
//
// The child runs `fn` with its stdout pointed at stderr (a plugin's prints never reach a caller's
// data stream), then reports on a pipe that it finished and leaves with _exit (no atexit
// handlers, no flush of buffers inherited from the parent). The parent waits at most `timeout_s`
// and then kills the child. Only what the child did to itself is observed: nothing it computed
// comes back, so a caller that wants the result repeats the work in process once it is known to
// be safe. fork() copies only the calling thread: `fn` must not need locks other threads hold.
#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace kiln {

struct ChildOutcome {
  bool ok = false;      // fn returned (or threw) and the child exited normally
  std::string failure;  // otherwise: "crashed (SIGSEGV)", "exited with status 0", "did not answer within 10 s"
};

// Never throws (a failing fork() or pipe() is reported as a failure).
ChildOutcome run_in_child(const std::function<void()>& fn, double timeout_s);

// now + `seconds` on the steady clock.
std::chrono::steady_clock::time_point deadline_after(double seconds);

// Waits until `fd` is readable (data or end of file): true; false once `deadline` has passed.
// Retries on EINTR.
bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline);

// "SIGSEGV", or "signal N" for one without a name.
std::string signal_name(int sig);

}  // namespace kiln
