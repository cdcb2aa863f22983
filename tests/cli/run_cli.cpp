// tests/cli/run_cli.cpp - fork/exec with captured stdout/stderr, and a JSON validator.
#include "run_cli.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace kiln::test {

CliResult run_kiln(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  static const std::string empty = [] {
    std::string dir = std::filesystem::temp_directory_path() / ("kiln-cli-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return dir;
  }();
  std::map<std::string, std::string> full{{"PATH", std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"},
                                          {"HOME", empty},
                                          {"XDG_CONFIG_HOME", empty},
                                          {"XDG_DATA_HOME", empty},
                                          {"XDG_CONFIG_DIRS", empty},
                                          {"XDG_DATA_DIRS", empty}};
  for (const auto& [k, v] : env) full[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : full) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv{const_cast<char*>(KILN_CLI_PATH)};
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_copy = args;
  for (std::string& a : arg_copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) || pipe(err_pipe)) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CliResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    poll(fds, 2, -1);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace kiln::test
