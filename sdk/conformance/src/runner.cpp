// sdk/conformance/src/runner.cpp - running the tests, in this process or in a forked child.
//
// The child reports over a pipe, one line per event (tab-separated, the detail quoted):
//   S <name>                                  a test started
//   R <level> <status> <ms> <name> <detail>   a test finished
//   D                                         every test ran
// A child that dies (signal, exit) or hangs between S and R crashed in that test. Its stdout and
// stderr go to temporary files, shown in the report (plugins must not write to stdout).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

#include <optional>

#include "kit.hpp"
#include "kiln/sdk/options.hpp"

namespace kiln::conformance {

const char* level_name(int level) {
  static const char* const names[] = {"load", "device", "memory", "kernels", "corpus", "lifecycle"};
  return level >= 0 && level <= kMaxLevel ? names[level] : "?";
}

const char* status_name(Status s) {
  switch (s) {
    case Status::passed: return "passed";
    case Status::failed: return "failed";
    case Status::skipped: return "skipped";
    case Status::expected_failure: return "xfail";
    case Status::unexpected_pass: return "xpass";
  }
  return "?";
}

size_t Report::count(Status s) const {
  size_t n = 0;
  for (const TestResult& t : tests) n += t.status == s;
  return n;
}

bool Report::ok() const { return crash.empty() && count(Status::failed) == 0; }

backend::Device& Kit::device() {
  require_usable();
  static std::optional<backend::Device> cached;  // one kit per process
  if (!cached) cached = backend::Device::open(device_name());
  return *cached;
}

backend::Device& Kit::kernel_device(bool with_memory) {
  backend::Device& d = with_memory ? memory_device() : device();
  if (!d.has_renderer())
    throw Skip{"the plugin has no renderer, so kiln cannot generate kernels for this device (a backend that runs "
               "Tensor programs needs one)"};
  return d;
}

backend::Device& Kit::memory_device() {
  backend::Device& d = device();
  try {
    d.free(d.alloc(4));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::unavailable) throw Skip{std::string("the device cannot allocate memory: ") + e.what()};
    throw;
  }
  return d;
}

std::vector<TestResult> run_tests(Kit& kit, const Options& options, Observer& observer) {
  std::vector<TestCase> tests;
  add_load_tests(tests);
  add_device_tests(tests);
  add_memory_tests(tests);
  add_kernel_tests(tests);
  add_corpus_tests(tests);
  add_lifecycle_tests(tests);
  std::regex filter(options.filter.empty() ? "." : options.filter, std::regex::ECMAScript);
  std::vector<std::pair<std::regex, std::string>> expected;
  for (const ExpectedFailure& e : options.expected_failures) expected.push_back({std::regex(e.pattern), e.reason});

  setup(kit);
  std::vector<TestResult> results;
  int failed_level = -1;  // the lowest level with a failure: higher levels are not run
  for (const TestCase& t : tests) {
    if (t.level > options.max_level || !std::regex_search(t.name, filter)) continue;
    TestResult r{t.name, t.level, Status::passed, "", 0};
    observer.started(t.name);
    auto start = std::chrono::steady_clock::now();
    if (failed_level >= 0 && t.level > failed_level) {
      r.status = Status::skipped;
      r.detail = "level " + std::to_string(failed_level) + " (" + level_name(failed_level) + ") has failures";
    } else {
      try {
        t.run(kit);
      } catch (const Skip& s) {
        r.status = Status::skipped;
        r.detail = s.reason;
      } catch (const std::exception& e) {
        r.status = Status::failed;
        r.detail = e.what();
      } catch (...) {
        r.status = Status::failed;
        r.detail = "a non-standard exception";
      }
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (const auto& [pattern, reason] : expected) {
      if (!std::regex_search(t.name, pattern)) continue;
      if (r.status == Status::failed) r.status = Status::expected_failure, r.detail = reason + " (" + r.detail + ")";
      else if (r.status == Status::passed) r.status = Status::unexpected_pass, r.detail = reason;
      break;
    }
    if (r.status == Status::failed && failed_level < 0) failed_level = t.level;
    observer.finished(r);
    results.push_back(std::move(r));
  }
  return results;
}

namespace {

std::string absolute(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).lexically_normal().string();
}

Kit make_kit(const std::string& manifest) {
  Kit kit;
  kit.manifest = absolute(manifest);
  kit.backend = backend::read_manifest(kit.manifest).name;
  return kit;
}

struct Collect : Observer {
  Observer* next;
  explicit Collect(Observer* n) : next(n) {}
  void started(const std::string& t) override {
    if (next) next->started(t);
  }
  void finished(const TestResult& r) override {
    if (next) next->finished(r);
  }
};

// ---- the child's side of the pipe ----

// A detail travels as a quoted string (backend::toml_quote: no tab or newline left in it), read
// back by the SDK's TOML reader, so the line protocol needs no escaper of its own.
std::string unquote(const std::string& field) {
  return kiln::sdk::Options::parse("detail = " + field).get_string("detail", "");
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(70);  // the parent is gone
    done += static_cast<size_t>(n);
  }
}

struct PipeObserver : Observer {
  int fd;
  explicit PipeObserver(int f) : fd(f) {}
  void started(const std::string& t) override { write_all(fd, "S\t" + t + "\n"); }
  void finished(const TestResult& r) override {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", r.ms);
    write_all(fd, "R\t" + std::to_string(r.level) + "\t" + std::to_string(static_cast<int>(r.status)) + "\t" + ms + "\t" +
                      r.name + "\t" + backend::toml_quote(r.detail) + "\n");
  }
};

[[noreturn]] void child_main(const std::string& manifest, const Options& options, int pipe_fd, int out_fd, int err_fd) {
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  setenv("KILN_BACKENDS", absolute(manifest).c_str(), 1);  // the process-wide registry sees only this plugin
  try {
    Kit kit = make_kit(manifest);
    kit.stdout_fd = STDOUT_FILENO;
    PipeObserver observer(pipe_fd);
    run_tests(kit, options, observer);
    write_all(pipe_fd, "D\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln conformance: %s\n", e.what());
    _exit(71);
  }
  std::fflush(nullptr);
  _exit(0);  // no static destructors: plugin threads may still be running
}

std::string tail_of(int fd, size_t max) {
  off_t size = lseek(fd, 0, SEEK_END);
  if (size <= 0) return "";
  off_t from = size > static_cast<off_t>(max) ? size - static_cast<off_t>(max) : 0;
  std::string s(static_cast<size_t>(size - from), '\0');
  ssize_t n = pread(fd, s.data(), s.size(), from);
  s.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return (from ? "[...]\n" : "") + s;
}

int temp_fd() {
  char path[] = "/tmp/kiln-conformance-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error(std::string("cannot create a temporary file: ") + std::strerror(errno));
  unlink(path);
  return fd;
}

// Under AddressSanitizer a deadly signal is caught, reported ("AddressSanitizer: SEGV on unknown
// address") and turned into exit status 1: name the signal anyway.
std::string sanitizer_signal(const std::string& err) {
  for (const char* sig : {"SEGV", "BUS", "FPE", "ILL", "ABRT"})
    if (err.find(std::string("Sanitizer: ") + sig) != std::string::npos) return std::string("SIG") + sig;
  return "";
}

}  // namespace

Report run_in_process(const std::string& manifest, const Options& options, Observer* observer) {
  setenv("KILN_BACKENDS", absolute(manifest).c_str(), 0);
  Kit kit = make_kit(manifest);
  Collect collect(observer);
  Report report;
  report.manifest = manifest;
  report.backend = kit.backend;
  report.tests = run_tests(kit, options, collect);
  return report;
}

Report run_isolated(const std::string& manifest, const Options& options, Observer* observer) {
  Report report;
  report.manifest = manifest;
  report.backend = backend::read_manifest(absolute(manifest)).name;
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  int out_fd = temp_fd(), err_fd = temp_fd();
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    child_main(manifest, options, fds[1], out_fd, err_fd);
  }
  close(fds[1]);

  std::string buffer, in_flight;
  bool done = false, timed_out = false;
  auto deadline = backend::deadline_after(options.timeout_s);
  for (;;) {
    if (!backend::wait_readable(fds[0], deadline)) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    char chunk[4096];
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed the pipe (finished or died)
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      std::vector<std::string> f;
      for (size_t start = 0;;) {
        size_t tab = line.find('\t', start);
        f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos) break;
        start = tab + 1;
      }
      if (f[0] == "S" && f.size() == 2) {
        in_flight = f[1];
        if (observer) observer->started(in_flight);
      } else if (f[0] == "R" && f.size() == 6) {
        TestResult r{f[4], std::stoi(f[1]), static_cast<Status>(std::stoi(f[2])), unquote(f[5]), std::stod(f[3])};
        in_flight.clear();
        if (observer) observer->finished(r);
        report.tests.push_back(std::move(r));
      } else if (f[0] == "D") {
        done = true;
      }
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string where = in_flight.empty() ? (report.tests.empty() ? " before the first test" : " after " + report.tests.back().name)
                                        : " in " + in_flight;
  if (timed_out) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", options.timeout_s);
    report.crash = std::string("timeout after ") + secs + " s" + where;
  } else if (WIFSIGNALED(status)) {
    report.crash = backend::signal_name(WTERMSIG(status)) + where;
  } else if (!done || WEXITSTATUS(status) != 0) {
    std::string sig = sanitizer_signal(tail_of(err_fd, 65536));
    report.crash = sig.empty() ? "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + where
                               : sig + where;
  }
  if (!report.crash.empty() && !in_flight.empty()) {
    TestResult r{in_flight, 0, Status::failed, report.crash, 0};
    if (in_flight.size() > 1 && in_flight[0] == 'L') r.level = in_flight[1] - '0';
    if (observer) observer->finished(r);
    report.tests.push_back(std::move(r));
  }
  std::string out = tail_of(out_fd, 16384), err = tail_of(err_fd, 16384);
  report.output = out.empty() ? err : err.empty() ? out : "stdout:\n" + out + "\nstderr:\n" + err;
  close(out_fd);
  close(err_fd);
  return report;
}

}  // namespace kiln::conformance
