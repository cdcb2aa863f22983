// tests/cli/isolation_test.cpp - a misbehaving plugin (tests/plugins/fixture_raw.cpp, mode from
// KILN_FIXTURE_MODE) on the search path: every command still answers, stdout stays the CLI's,
// --json stays valid, the plugin's failure is its backend's status, and the exit code says it.
#include <gtest/gtest.h>

#include <string>

#include "run_cli.hpp"

namespace kiln::test {
namespace {

std::map<std::string, std::string> with_raw(const std::string& mode) {
  return {{"KILN_BACKENDS", fixture("good.toml") + ":" + fixture("raw.toml")}, {"KILN_FIXTURE_MODE", mode},
          {"KILN_PROBE_TIMEOUT", "2"}};
}

TEST(CliIsolation, ACrashingExitingOrHangingPluginIsItsBackendsStatus) {
  for (auto [mode, reason] : {std::pair{"entry-segv", "crashed (SIGSEGV) while probing"},
                              std::pair{"probe-segv", "crashed (SIGSEGV) while probing"},
                              std::pair{"probe-abort", "crashed (SIGABRT) while probing"},
                              std::pair{"open-segv", "crashed (SIGSEGV) while probing"},
                              std::pair{"probe-exit0", "exited with status 0 while probing"},
                              std::pair{"probe-hang", "did not answer within 2 s (killed) while probing"}}) {
    SCOPED_TRACE(mode);
    CliResult list = run_kiln({"list"}, with_raw(mode));
    EXPECT_EQ(list.exit_code, 1) << list.err;
    EXPECT_CONTAINS(list.out, "good  ok");
    EXPECT_CONTAINS(list.out, std::string("raw   crashed       ") + reason);
    CliResult json = run_kiln({"list", "--json"}, with_raw(mode));
    EXPECT_EQ(json.exit_code, 1);
    EXPECT_JSON(json.out);
    EXPECT_CONTAINS(json.out, "\"status\": \"crashed\"");
    CliResult devices = run_kiln({"devices", "--json"}, with_raw(mode));
    EXPECT_EQ(devices.exit_code, 1);
    EXPECT_JSON(devices.out);
    EXPECT_CONTAINS(devices.out, "\"id\": \"good:0\"");
    // naming the good backend never loads the broken one
    CliResult info = run_kiln({"info", "good"}, with_raw(mode));
    EXPECT_EQ(info.exit_code, 0) << info.err;
    EXPECT_CONTAINS(info.out, "status:         ok");
  }
}

// Every backend is tried in a child before any is loaded in process: a child forked from a
// process with a live GPU runtime (HSA, CUDA) can hang on a lock one of its threads held, and a
// working backend was reported as crashed. fork-sensitive hangs in exactly that case.
TEST(CliIsolation, ChildrenAreForkedBeforeAnyBackendIsLoaded) {
  std::map<std::string, std::string> env = {{"KILN_BACKENDS", fixture("raw.toml") + ":" + fixture("raw_twin.toml")},
                                            {"KILN_FIXTURE_MODE", "fork-sensitive"},
                                            {"KILN_PROBE_TIMEOUT", "5"}};
  for (const char* command : {"list", "devices", "bench"}) {
    SCOPED_TRACE(command);
    CliResult r = run_kiln({command, "--json"}, env);
    EXPECT_EQ(r.out.find("crashed"), std::string::npos) << r.out << r.err;
    EXPECT_EQ(r.out.find("did not answer"), std::string::npos) << r.out << r.err;
  }
}

TEST(CliIsolation, PluginOutputNeverReachesStdout) {
  CliResult r = run_kiln({"list", "--json"}, with_raw("probe-stdout"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_JSON(r.out);
  EXPECT_EQ(r.out.find("raw plugin chatter"), std::string::npos);
  EXPECT_CONTAINS(r.err, "raw plugin chatter on stdout");
  CliResult d = run_kiln({"devices", "--json"}, with_raw("probe-stdout"));
  EXPECT_JSON(d.out);
  CliResult i = run_kiln({"info", "raw", "--json"}, with_raw("probe-stdout"));
  EXPECT_JSON(i.out);
  // `kiln info good` has no reason to load raw: nothing of it is heard
  CliResult good = run_kiln({"info", "good"}, with_raw("probe-stdout"));
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.err.find("raw plugin chatter"), std::string::npos) << good.err;
}

TEST(CliIsolation, AbsurdCountsAndExceptionsAreClearErrors) {
  for (auto [mode, reason] : {std::pair{"count-huge", "device_count reported 4294967295 devices; more than 4096"},
                              std::pair{"count-1e9", "device_count reported 1000000000 devices"},
                              std::pair{"count-throw", "threw an exception that is not a std::exception"}}) {
    SCOPED_TRACE(mode);
    CliResult r = run_kiln({"list"}, with_raw(mode));
    EXPECT_CONTAINS(r.out, "good  ok");
    EXPECT_CONTAINS(r.out, "raw   load-error");
    EXPECT_CONTAINS(r.out, reason);
  }
}

// A 1 MiB version, and a probe reason with newlines, an escape sequence and bytes that are not
// UTF-8: bounded, escaped on the terminal, and valid UTF-8 JSON.
TEST(CliIsolation, PluginStringsAreBoundedAndEscaped) {
  CliResult text = run_kiln({"list", "-v"}, with_raw("long-strings"));
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_LT(text.out.size(), 16384u);
  EXPECT_CONTAINS(text.out, "(truncated: longer than 256 bytes)");
  EXPECT_CONTAINS(text.out, "probe:    score 1: line one\\x0aline two\\x1b[31m red \\xff\\xfe tab\\x09here");
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos);
  CliResult json = run_kiln({"list", "--json"}, with_raw("long-strings"));
  EXPECT_JSON(json.out);
  EXPECT_CONTAINS(json.out, "line one\\nline two\\u001b[31m red \\ufffd\\ufffd tab\\there");
}

// `kiln devices` says which device is the default and why (docs/devices.md): the native cpu
// backend before a higher-priority backend's CPU-type device.
TEST(CliDefaultDevice, DevicesSaysWhyInTextAndJson) {
  std::map<std::string, std::string> env{{"KILN_BACKENDS", fixture("kinds/cl_cpu.toml") + ":" + fixture("kinds/cpu.toml")}};
  CliResult text = run_kiln({"devices"}, env);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "  cpu:0: fixture device 0: hello (1024 MiB, 512 MiB free) [default]\n");
  EXPECT_CONTAINS(text.out, "Default: cpu:0 (no GPU or accelerator device; the native cpu backend comes before CPU-type devices");
  CliResult json = run_kiln({"devices", "--json"}, env);
  EXPECT_JSON(json.out);
  EXPECT_CONTAINS(json.out, "\"default\": \"cpu:0\"");
  EXPECT_CONTAINS(json.out, "\"default_origin\": \"no GPU or accelerator device;");
}

}  // namespace
}  // namespace kiln::test
