// plugins/common/process.cpp - posix_spawnp with three pipes.
#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kiln/sdk.hpp"

extern char** environ;

namespace kiln::plugins {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

[[noreturn]] void sys_fail(const char* what) {
  throw sdk::Error{KILN_STATUS_INTERNAL, std::string(what) + ": " + std::strerror(errno)};
}

// Writing to a pipe whose reader died raises SIGPIPE, which would kill the host process. Block it
// on this thread for the duration and consume a SIGPIPE we caused before unblocking.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      timespec zero{0, 0};
      while (sigtimedwait(&set_, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t set_, old_;
  bool was_pending_ = false;
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, std::string_view input, const char* missing_hint) {
  int p_in[2], p_out[2], p_err[2];
  if (pipe2(p_in, O_CLOEXEC)) sys_fail("pipe");
  Fd in_r{p_in[0]}, in_w{p_in[1]};
  if (pipe2(p_out, O_CLOEXEC)) sys_fail("pipe");
  Fd out_r{p_out[0]}, out_w{p_out[1]};
  if (pipe2(p_err, O_CLOEXEC)) sys_fail("pipe");
  Fd err_r{p_err[0]}, err_w{p_err[1]};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, "cannot run '" + argv[0] + "': " + std::strerror(rc) +
                                                          (rc == ENOENT ? ". " + std::string(missing_hint) : "")};
  }
  in_r.reset();
  out_w.reset();
  err_w.reset();
  fcntl(in_w.fd, F_SETFL, O_NONBLOCK);

  ProcessResult r;
  SigpipeBlock no_sigpipe;
  size_t written = 0;
  if (input.empty()) in_w.reset();
  char buf[65536];
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    if (in_w.fd >= 0) fds[n++] = {in_w.fd, POLLOUT, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      sys_fail("poll");
    }
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_w.fd) {
        ssize_t w = write(in_w.fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) in_w.reset();  // EPIPE: child stopped reading
        continue;
      }
      Fd& src = fds[i].fd == out_r.fd ? out_r : err_r;
      ssize_t got = read(src.fd, buf, sizeof buf);
      if (got > 0) (&src == &out_r ? r.out : r.err).append(buf, static_cast<size_t>(got));
      else if (got == 0 || (errno != EAGAIN && errno != EINTR)) src.reset();
    }
  }
  in_w.reset();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) sys_fail("waitpid");
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace kiln::plugins
