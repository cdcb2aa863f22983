// plugin/isolate.cpp - fork, a pipe for "done", poll with a deadline, waitpid.
#include "plugin/isolate.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace kiln {

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::chrono::steady_clock::time_point deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) > 0) return true;
  }
}

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

[[noreturn]] void child_main(const std::function<void()>& fn, int done_fd) {
  dup2(STDERR_FILENO, STDOUT_FILENO);
  try {
    fn();
  } catch (...) {  // an exception is the caller's business to repeat in process, not a crash
  }
  std::fflush(nullptr);
  (void)!write(done_fd, "D", 1);
  _exit(0);
}

}  // namespace

ChildOutcome run_in_child(const std::function<void()>& fn, double timeout_s) {
  ChildOutcome out;
  int fds[2];
  // close-on-exec: a process another thread spawns meanwhile must not hold the write end open,
  // or a crashed child's pipe never reads end-of-file and the crash is reported as a timeout
  if (pipe2(fds, O_CLOEXEC) != 0) {
    out.failure = std::string("could not be checked (pipe: ") + std::strerror(errno) + ")";
    return out;
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    out.failure = std::string("could not be checked (fork: ") + std::strerror(errno) + ")";
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fn, fds[1]);
  }
  close(fds[1]);
  bool done = false, timed_out = false;
  auto deadline = deadline_after(timeout_s);
  for (;;) {
    if (!wait_readable(fds[0], deadline)) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    char c;
    ssize_t n = read(fds[0], &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 1) done = true;
    break;  // "done", or the child closed the pipe by dying
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    out.failure = "did not answer within " + seconds_text(timeout_s) + " s (killed)";
  } else if (WIFSIGNALED(status)) {
    out.failure = "crashed (" + signal_name(WTERMSIG(status)) + ")";
  } else if (!done) {
    out.failure = "exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    out.ok = true;
  }
  return out;
}

}  // namespace kiln
