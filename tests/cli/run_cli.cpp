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

namespace {

struct JsonChecker {
  const std::string& s;
  size_t i = 0;
  std::string error;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  bool fail(const std::string& what) {
    if (error.empty()) error = what + " at byte " + std::to_string(i);
    return false;
  }
  bool lit(const char* word) {
    size_t n = std::strlen(word);
    if (s.compare(i, n, word) != 0) return fail(std::string("expected ") + word);
    i += n;
    return true;
  }
  bool string() {
    if (i >= s.size() || s[i] != '"') return fail("expected a string");
    for (++i; i < s.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"') return ++i, true;
      if (c < 0x20) return fail("control character in a string");
      if (c == '\\') {
        if (++i >= s.size()) break;
        if (s[i] == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k]))) return fail("bad \\u escape");
          i += 4;
        } else if (!std::strchr("\"\\/bfnrt", s[i])) {
          return fail("bad escape");
        }
      }
    }
    return fail("unterminated string");
  }
  bool number() {
    size_t b = i;
    if (s[i] == '-') ++i;
    if (i < s.size() && s[i] == '0') ++i;
    else if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    else return fail("bad number");
    if (i < s.size() && s[i] == '.') {
      if (++i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return fail("bad fraction");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return fail("bad exponent");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    return i > b;
  }
  bool value(int depth) {
    if (depth > 64) return fail("too deep");
    ws();
    if (i >= s.size()) return fail("unexpected end");
    char c = s[i];
    if (c == '{') {
      ++i;
      ws();
      if (i < s.size() && s[i] == '}') return ++i, true;
      for (;;) {
        ws();
        if (!string()) return false;
        ws();
        if (i >= s.size() || s[i++] != ':') return fail("expected ':'");
        if (!value(depth + 1)) return false;
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == '}') return ++i, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') return ++i, true;
      for (;;) {
        if (!value(depth + 1)) return false;
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == ']') return ++i, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') return string();
    if (c == 't') return lit("true");
    if (c == 'f') return lit("false");
    if (c == 'n') return lit("null");
    return number();
  }
};

}  // namespace

bool is_valid_json(const std::string& text, std::string* error) {
  JsonChecker c{text, 0, {}};
  bool ok = c.value(0);
  c.ws();
  if (ok && c.i != text.size()) ok = c.fail("trailing characters");
  if (!ok && error) *error = c.error;
  return ok;
}

}  // namespace kiln::test
