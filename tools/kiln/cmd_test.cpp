// tools/kiln/cmd_test.cpp - `kiln test`: the conformance kit (sdk/conformance) on backend plugins.
//
// Each target is a backend name (found through the usual manifest search, without loading
// anything) or a manifest path. Every plugin runs in a forked child process, so a crash is a
// result ("FAILED (SIGSEGV in L2.sizes)"), not the end of the run. Exit: 0 all passed (skips are
// fine), 1 a failure or crash, 2 usage, 3 a manifest that does not parse (file:line:col).
#include <unistd.h>

#include <cstdio>
#include <regex>

#include "cli.hpp"
#include "commands.hpp"
#include "kiln/conformance.hpp"
#include "plugin/manifest.hpp"
#include "support/check.hpp"

namespace kiln::cli {

namespace {

namespace kc = kiln::conformance;

// gtest-style progress lines on stdout. A run of skips for one reason (a backend without devices
// skips every test that needs one) is printed once, with a count.
struct Printer : kc::Observer {
  void started(const std::string& test) override {
    if (!skipped_reason_.empty()) {  // may be one more skip: printed only if it is not
      pending_run_ = test;
      return;
    }
    run_line(test);
  }
  void finished(const kc::TestResult& r) override {
    if (r.status == kc::Status::skipped && !skipped_reason_.empty() && r.detail == skipped_reason_) {
      ++skipped_more_;
      pending_run_.clear();
      return;
    }
    flush();
    if (!pending_run_.empty()) run_line(pending_run_);
    pending_run_.clear();
    if (r.status == kc::Status::skipped) skipped_reason_ = r.detail;
    const char* tag = r.status == kc::Status::passed            ? "[       OK ]"
                      : r.status == kc::Status::failed          ? "[  FAILED  ]"
                      : r.status == kc::Status::skipped         ? "[  SKIPPED ]"
                      : r.status == kc::Status::expected_failure ? "[    XFAIL ]"
                                                                : "[    XPASS ]";
    std::printf("%s %s (%.0f ms)%s%s\n", tag, r.name.c_str(), r.ms, r.detail.empty() ? "" : ": ", r.detail.c_str());
    std::fflush(stdout);
  }
  void run_line(const std::string& test) {
    std::printf("[ RUN      ] %s\n", test.c_str());
    std::fflush(stdout);
  }
  // Ends a run of skips (call after the last result too).
  void flush() {
    if (skipped_more_) std::printf("[  SKIPPED ] ... and %d more tests, for the same reason\n", skipped_more_);
    skipped_reason_.clear();
    skipped_more_ = 0;
  }

 private:
  std::string skipped_reason_;
  std::string pending_run_;  // a test started during a run of skips
  int skipped_more_ = 0;
};

bool is_manifest_path(const std::string& target) {
  return target.find('/') != std::string::npos || (target.size() > 5 && target.compare(target.size() - 5, 5, ".toml") == 0);
}

Json report_json(const kc::Report& r) {
  Json tests = Json::array();
  for (const kc::TestResult& t : r.tests) {
    Json o = Json::object();
    o.set("name", t.name).set("level", int64_t{t.level}).set("status", kc::status_name(t.status));
    o.set("detail", t.detail).set("ms", t.ms);
    tests.push(o);
  }
  Json o = Json::object();
  o.set("backend", r.backend).set("manifest", r.manifest).set("ok", r.ok());
  o.set("passed", uint64_t{r.count(kc::Status::passed)}).set("failed", uint64_t{r.count(kc::Status::failed)});
  o.set("skipped", uint64_t{r.count(kc::Status::skipped)}).set("xfail", uint64_t{r.count(kc::Status::expected_failure)});
  o.set("xpass", uint64_t{r.count(kc::Status::unexpected_pass)});
  o.set("crash", r.crash.empty() ? Json() : Json(r.crash)).set("tests", tests);
  return o;
}

}  // namespace

int run_test(const std::vector<std::string>& args) {
  po::options_description options("kiln test options");
  options.add_options()("target", po::value<std::vector<std::string>>()->multitoken(), "backend names or manifest paths")(
      "level", po::value<int>()->default_value(kc::kMaxLevel),
      "run levels 0..N: 0 load, 1 device, 2 memory, 3 kernels, 4 corpus, 5 lifecycle")(
      "filter", po::value<std::string>(), "only tests whose name matches this regular expression")(
      "xfail", po::value<std::vector<std::string>>(), "PATTERN=REASON: tests matching PATTERN are expected to fail")(
      "timeout", po::value<double>()->default_value(1800), "seconds before a plugin's child process is killed")(
      "json", "machine-readable output");
  po::positional_options_description positional;
  positional.add("target", -1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, "kiln test NAME|MANIFEST... [--level N] [--filter RE] [--json]",
                  "  kiln test cpu                                   # every level on the cpu backend\n"
                  "  kiln test opencl --level 3                      # up to the golden kernels\n"
                  "  kiln test build/share/kiln/backends.d/mine.toml --filter 'L2\\.'   # one plugin's allocator\n"
                  "  kiln test mine --xfail 'L4.corpus.pow=no pow yet' --json\n"))
    return kOk;
  if (!vm.count("target")) throw UsageError("name a backend or a manifest to test\nusage: kiln test NAME|MANIFEST...");
  kc::Options opt;
  opt.max_level = vm["level"].as<int>();
  if (opt.max_level < 0 || opt.max_level > kc::kMaxLevel)
    throw UsageError("--level must be between 0 and " + std::to_string(kc::kMaxLevel));
  if (vm.count("filter")) {
    opt.filter = vm["filter"].as<std::string>();
    try {
      std::regex check(opt.filter);
    } catch (const std::regex_error& e) {
      throw UsageError("--filter '" + opt.filter + "' is not a regular expression: " + e.what());
    }
  }
  if (vm.count("xfail"))
    for (const std::string& x : vm["xfail"].as<std::vector<std::string>>()) {
      size_t eq = x.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == x.size())
        throw UsageError("--xfail takes PATTERN=REASON (the reason is required), got '" + x + "'");
      try {
        std::regex check(x.substr(0, eq));
      } catch (const std::regex_error& e) {
        throw UsageError("--xfail '" + x.substr(0, eq) + "' is not a regular expression: " + e.what());
      }
      opt.expected_failures.push_back({x.substr(0, eq), x.substr(eq + 1)});
    }
  opt.timeout_s = vm["timeout"].as<double>();
  if (!(opt.timeout_s > 0)) throw UsageError("--timeout must be a positive number of seconds");
  bool json = vm.count("json");

  // Resolve every target before running anything: a manifest that does not parse is a
  // configuration error (exit 3), reported as file:line:col.
  std::vector<std::string> manifests;
  Registry names(cli_settings(false));  // reads manifests, loads nothing
  for (const std::string& target : vm["target"].as<std::vector<std::string>>()) {
    std::string path = target;
    if (!is_manifest_path(target)) {
      const BackendRecord* r = names.backend(target);
      if (!r) {
        std::string known;
        for (const BackendRecord& b : names.known_backends())
          if (b.status != BackendStatus::shadowed) known += (known.empty() ? "" : ", ") + b.name;
        fail(ErrorCode::not_found, "no backend named '", target, "' (known: ", known.empty() ? "none" : known,
             "); give a manifest path to test a plugin that is not installed");
      }
      path = r->manifest;
    } else if (access(path.c_str(), R_OK) != 0) {
      fail(ErrorCode::not_found, "cannot read the manifest ", path);
    }
    Manifest m = read_manifest(path);
    if (!m.ok()) {
      for (const Diagnostic& d : m.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
      if (json) std::printf("%s\n", Json::object().set("ok", false).set("error", m.first_error()).dump().c_str());
      return kConfigError;
    }
    manifests.push_back(path);
  }

  Printer printer;
  Json reports = Json::array();
  bool all_ok = true;
  for (const std::string& manifest : manifests) {
    if (!json) std::printf("kiln test: %s (%s), levels 0-%d, in a child process\n", read_manifest(manifest).name.c_str(),
                           manifest.c_str(), opt.max_level);
    kc::Report r = kc::run_isolated(manifest, opt, json ? nullptr : &printer);
    printer.flush();
    all_ok = all_ok && r.ok();
    if (json) {
      reports.push(report_json(r));
      continue;
    }
    std::printf("%s: %zu passed, %zu failed, %zu skipped", r.backend.c_str(), r.count(kc::Status::passed),
                r.count(kc::Status::failed), r.count(kc::Status::skipped));
    if (size_t x = r.count(kc::Status::expected_failure)) std::printf(", %zu expected failures", x);
    if (size_t x = r.count(kc::Status::unexpected_pass)) std::printf(", %zu unexpected passes", x);
    std::printf("\n");
    if (!r.crash.empty()) {
      std::printf("FAILED (%s)\n", r.crash.c_str());
      if (!r.output.empty()) std::fprintf(stderr, "output of the crashed process:\n%s\n", r.output.c_str());
    }
    std::fflush(stdout);
  }
  if (json) std::printf("%s\n", Json::object().set("ok", all_ok).set("reports", reports).dump().c_str());
  return all_ok ? kOk : kFailure;
}

}  // namespace kiln::cli
