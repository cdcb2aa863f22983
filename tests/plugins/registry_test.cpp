// tests/plugins/registry_test.cpp - discovery, manifest validation, loading statuses, config and
// device selection, against the fixture plugins. Every bad input gets its documented status and
// message, and none hides the good backend.
#include <gtest/gtest.h>

#include <thread>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "error_check.hpp"
#include "plugin/registry.hpp"

namespace kiln {
namespace {

using testing::expect_error;

std::string manifest(const std::string& name) { return std::string(KILN_FIXTURE_MANIFESTS) + "/" + name; }

// Settings that see only the given manifests and config (nothing from the environment).
Settings only(const std::vector<std::string>& names, std::optional<std::string> config = std::nullopt) {
  Settings s;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ":") + manifest(n);
  s.backends = list;
  if (config) s.config = manifest(*config);
  s.prefix_dirs = std::vector<std::string>{};
  s.report_problems = false;
  return s;
}

const BackendRecord& record(Registry& r, const std::string& name) {
  const BackendRecord* b = r.backend(name);
  if (!b) throw std::runtime_error("no backend record named " + name);
  return *b;
}

TEST(Registry, GoodPluginLoadsProbesAndCountsDevices) {
  Registry r(only({"good.toml"}));
  const BackendRecord& b = record(r, "good");
  EXPECT_EQ(b.status, BackendStatus::ok) << b.reason;
  EXPECT_EQ(b.version, "9.8.7");
  EXPECT_EQ(b.plugin_abi, "0.2");
  EXPECT_EQ(b.abi, "0.2");
  EXPECT_EQ(b.device_count, 2u);
  EXPECT_EQ(b.probe_score, 5);
  EXPECT_EQ(b.probe_reason, "fixture ready");
  EXPECT_EQ(b.priority, 50);
  EXPECT_EQ(r.devices(), (std::vector<std::string>{"good:0", "good:1"}));
  EXPECT_EQ(r.default_device(), "good:0");
  EXPECT_TRUE(b.diagnostics.empty());
}

// One bad manifest or plugin each: the status it gets and the reason shown for it. A row names the
// fixture manifest (which is also the case's name in a failure), the backend, the status, text
// the reason must contain (or equal, when `exact`), and any further checks of the record.
struct BadBackend {
  std::string manifest, backend;
  BackendStatus status;
  std::vector<std::string> reason;  // each must appear in the reason (exact: the one reason)
  bool exact = false;
  std::function<void(Registry&, const BackendRecord&)> also = nullptr;
};

std::vector<BadBackend> bad_backends() {
  return {
      // manifests that do not validate: config-error with the file's position
      {"syntax_error.toml", "syntax_error",  // named after the file: the name was unreadable
       BackendStatus::config_error, {manifest("syntax_error.toml") + ":2:", ": error: "}},
      {"wrong_type.toml", "wrong_type", BackendStatus::config_error,
       {manifest("wrong_type.toml") + ":6:12: error: backend.priority must be an integer, got string"}, true},
      {"missing_key.toml", "missing_key", BackendStatus::config_error, {"missing required key backend.library"}},
      {"schema_newer.toml", "schema_newer", BackendStatus::config_error,
       {"schema_newer.toml:1:10: error: manifest schema 2 is newer than this kiln supports (1)"}},
      // libraries that do not load
      {"missing_library.toml", "missing_library", BackendStatus::load_error, {"does not exist"}, false,
       [](Registry&, const BackendRecord& b) {
         EXPECT_EQ(b.library_path, manifest("lib/libdoes_not_exist.so"));  // relative to the manifest
       }},
      {"missing_soname.toml", "missing_soname", BackendStatus::load_error,
       {"libkiln_fixture_does_not_exist.so.7: cannot open shared object file"}},
      {"abi_major.toml", "abi_major", BackendStatus::abi_mismatch, {"plugin built for ABI 1.0; this core supports 0.2"},
       false, [](Registry&, const BackendRecord& b) { EXPECT_EQ(b.plugin_abi, "1.0"); }},
      {"no_entry.toml", "no_entry", BackendStatus::load_error, {"does not export kiln_plugin_entry"}},
      {"unresolved.toml", "unresolved", BackendStatus::load_error, {"undefined symbol: kiln_fixture_function_nobody_defines"}},
      {"impostor.toml", "impostor", BackendStatus::load_error, {"is the plugin 'good'"}},
      // plugins that load and say no (a throwing probe is an error, not a crash)
      {"unavailable.toml", "unavailable", BackendStatus::unavailable, {"no fixture hardware here"}, true,
       [](Registry& r, const BackendRecord&) { EXPECT_TRUE(r.devices().empty()); }},
      {"probe_error.toml", "probe_error", BackendStatus::unavailable, {"probe failed: the probe exploded"}, true},
      {"bad_options.toml", "bad_options", BackendStatus::config_error, {"option 'threads' must be an integer, got string"}},
      // not loaded at all
      {"disabled.toml", "disabled", BackendStatus::disabled, {}, false,
       [](Registry&, const BackendRecord& b) { EXPECT_TRUE(b.library_path.empty()); }},
  };
}

void PrintTo(const BadBackend& c, std::ostream* os) { *os << c.manifest; }  // failures name the row

class RegistryBadBackend : public ::testing::TestWithParam<BadBackend> {};

TEST_P(RegistryBadBackend, GetsItsStatusAndReason) {
  const BadBackend& c = GetParam();
  Registry r(only({c.manifest}));
  const BackendRecord& b = record(r, c.backend);
  EXPECT_EQ(b.status, c.status) << status_name(b.status) << ": " << b.reason;
  if (c.exact) {
    ASSERT_EQ(c.reason.size(), 1u);
    EXPECT_EQ(b.reason, c.reason[0]);
  } else {
    for (const std::string& part : c.reason) EXPECT_CONTAINS(b.reason, part);
  }
  if (c.also) c.also(r, b);
}

INSTANTIATE_TEST_SUITE_P(Registry, RegistryBadBackend, ::testing::ValuesIn(bad_backends()),
                         [](const ::testing::TestParamInfo<BadBackend>& info) { return info.param.backend; });

TEST(Registry, UnknownKeysAreWarningsOnly) {
  Registry r(only({"unknown_key.toml"}));
  const BackendRecord& b = record(r, "good");
  EXPECT_EQ(b.status, BackendStatus::ok) << b.reason;
  ASSERT_EQ(b.diagnostics.size(), 2u);
  EXPECT_FALSE(b.diagnostics[0].is_error());
  EXPECT_EQ(b.diagnostics[0].line, 2u);
  EXPECT_CONTAINS(b.diagnostics[0].str(), "unknown_key.toml:2:1: warning: unknown key 'colour'");
  EXPECT_CONTAINS(b.diagnostics[1].str(), "unknown_key.toml:9:1: warning: unknown key 'backend.flavour'");
}

// An option set by the program (`kiln compile --arch` sets offline_arch this way) reaches the
// plugin's probe through the ABI (probe_with_options), over the manifest's and the config's; a
// bad one is a config error naming where it was set, and a loaded backend refuses new options.
TEST(Registry, OptionsSetBeforeLoadingReachTheProbe) {
  Registry r(only({"hw_option.toml", "good.toml"}));
  EXPECT_FALSE(r.set_option("ghost", {"hardware", "hardware", "true", "a test"}));
  ASSERT_TRUE(r.set_option("hw_option", {"hardware", "hardware", "true", "a test"}));
  const BackendRecord& b = record(r, "hw_option");
  EXPECT_EQ(b.status, BackendStatus::ok) << b.reason;
  EXPECT_EQ(b.probe_reason, "fixture hardware named by an option");
  EXPECT_EQ(r.resolve("hw_option"), "hw_option:0");
  expect_error([&] { r.set_option("hw_option", {"hardware", "hardware", "false", "a test"}); },
               ErrorCode::failed_precondition, "backend hw_option is loaded already");

  Registry bad(only({"hw_option_bad.toml"}));
  ASSERT_TRUE(bad.set_option("hw_option_bad", {"hardware", "hardware", "\"yes\"", "a test"}));
  const BackendRecord& c = record(bad, "hw_option_bad");
  EXPECT_EQ(c.status, BackendStatus::config_error);
  EXPECT_CONTAINS(c.reason, "the plugin rejected its options: option 'hardware'");
  EXPECT_CONTAINS(c.reason, "(set at a test)");
  // tried and failed: a new option would not reach it either
  expect_error([&] { bad.set_option("hw_option_bad", {"hardware", "hardware", "true", "a test"}); },
               ErrorCode::failed_precondition, "backend hw_option_bad is tried already");
}

TEST(Registry, NoBadBackendHidesTheGoodOne) {
  Registry r(only({"syntax_error.toml", "wrong_type.toml", "missing_key.toml", "schema_newer.toml",
                   "missing_library.toml", "abi_major.toml", "no_entry.toml", "unresolved.toml", "unavailable.toml",
                   "probe_error.toml", "bad_options.toml", "disabled.toml", "throwing.toml", "good.toml"}));
  EXPECT_EQ(r.backends().size(), 14u);
  EXPECT_EQ(record(r, "good").status, BackendStatus::ok);
  EXPECT_EQ(record(r, "throwing").status, BackendStatus::ok);
  EXPECT_EQ(r.devices(), (std::vector<std::string>{"throwing:0", "throwing:1", "good:0", "good:1"}));
  EXPECT_EQ(r.default_device(), "good:0");  // priority 50 beats 10
}

TEST(Registry, FirstManifestOfANameWinsLaterOnesAreShadowed) {
  Settings s;
  s.backend_path = manifest("shadow_a") + ":" + manifest("shadow_b");
  s.prefix_dirs = std::vector<std::string>{};
  s.report_problems = false;
  Registry r(s);
  ASSERT_GE(r.search().dirs.size(), 2u);
  EXPECT_EQ(r.search().dirs[0].origin, "KILN_BACKEND_PATH");
  const BackendRecord& good = record(r, "good");
  EXPECT_EQ(good.status, BackendStatus::ok);
  EXPECT_EQ(good.description, "first");
  int shadowed = 0;
  for (const BackendRecord& b : r.backends()) {
    if (b.status != BackendStatus::shadowed) continue;
    ++shadowed;
    EXPECT_EQ(b.manifest, manifest("shadow_b/good.toml"));
    EXPECT_EQ(b.shadowed_by, manifest("shadow_a/good.toml"));
  }
  EXPECT_EQ(shadowed, 1);
  EXPECT_EQ(record(r, "unavailable").status, BackendStatus::unavailable);
}

TEST(Registry, NoLoadReadsManifestsOnly) {
  Settings s = only({"good.toml", "wrong_type.toml"});
  s.load = false;
  Registry r(s);
  EXPECT_EQ(record(r, "good").status, BackendStatus::not_loaded);
  std::string lib_dir = std::filesystem::path(KILN_FIXTURE_MANIFESTS).parent_path() / "lib";
  EXPECT_EQ(record(r, "good").library_path, lib_dir + "/libfixture_good.so");
  EXPECT_EQ(record(r, "wrong_type").status, BackendStatus::config_error);
}

TEST(Registry, ConfigAliasesDefaultsOptionsAndUnknownBackends) {
  Registry r(only({"good.toml"}, "config_ok.toml"));
  const UserConfig& c = r.config();
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(r.default_device(), "good:1");  // devices.default = "fast" -> alias -> good:1
  EXPECT_EQ(r.default_choice().origin, "config " + manifest("config_ok.toml") + ":2:11");
  EXPECT_EQ(r.resolve("fast"), "good:1");
  EXPECT_EQ(r.resolve("GOOD"), "good:0");
  // [backends.good.options] overrides the manifest's greeting and records where it came from.
  const BackendRecord& b = record(r, "good");
  bool found = false;
  for (const OptionEntry& o : b.options)
    if (o.key == "greeting") {
      found = true;
      EXPECT_EQ(o.value, "\"from the config\"");
      EXPECT_EQ(o.origin, manifest("config_ok.toml") + ":15:12");
    }
  EXPECT_TRUE(found);
  // [backends.ghost] names no backend: a positioned warning. `mystery` is an unknown key.
  std::string all;
  for (const Diagnostic& d : r.diagnostics()) all += d.str() + "\n";
  EXPECT_CONTAINS(all, "config_ok.toml:7:11: warning: backends.ghost: no backend named 'ghost' was found");
  EXPECT_CONTAINS(all, "config_ok.toml:12:1: warning: unknown key 'backends.good.mystery'");
}

// A user config that cannot be used is ignored as a whole, with its first problem positioned,
// and the backends work as without it. A row names the config fixture (the case's name).
struct BadConfig {
  std::string config;
  std::string first_problem;  // must appear in the first diagnostic
  std::function<void(Registry&)> also;
};

std::vector<BadConfig> bad_configs() {
  return {
      {"config_wrong_type.toml", "config_wrong_type.toml:2:11: error: devices.default must be a string, got integer",
       [](Registry& r) { EXPECT_EQ(r.default_device(), "good:0"); }},
      {"config_syntax.toml", "config_syntax.toml:1:",
       [](Registry& r) { EXPECT_EQ(record(r, "good").status, BackendStatus::ok); }},
      {"no_such_config.toml", "KILN_CONFIG does not exist", nullptr},  // named explicitly, so an error
  };
}

void PrintTo(const BadConfig& c, std::ostream* os) { *os << c.config; }

class RegistryBadConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(RegistryBadConfig, IsIgnoredAsAWhole) {
  const BadConfig& c = GetParam();
  Registry r(only({"good.toml"}, c.config));
  EXPECT_FALSE(r.config().ok());
  ASSERT_FALSE(r.config().diagnostics.empty());
  EXPECT_CONTAINS(r.config().diagnostics.at(0).str(), c.first_problem);
  if (c.also) c.also(r);
}

INSTANTIATE_TEST_SUITE_P(Registry, RegistryBadConfig, ::testing::ValuesIn(bad_configs()),
                         [](const ::testing::TestParamInfo<BadConfig>& info) {
                           return info.param.config.substr(0, info.param.config.find('.'));
                         });

TEST(Registry, ConfigDisablesABackend) {
  Registry r(only({"good.toml"}, "config_disable.toml"));
  const BackendRecord& b = record(r, "good");
  EXPECT_EQ(b.status, BackendStatus::disabled);
  EXPECT_CONTAINS(b.reason, "config_disable.toml:2:11");
  expect_error([&] { r.default_device(); }, ErrorCode::not_found, "no usable device");
}

TEST(Registry, KilnDeviceBeatsConfigDefault) {
  Settings s = only({"good.toml"}, "config_ok.toml");
  s.device = "good:0";
  Registry r(s);
  EXPECT_EQ(r.default_device(), "good:0");
  EXPECT_EQ(r.default_choice().origin, "KILN_DEVICE");
  Settings bad = only({"good.toml"});
  bad.device = "nope:3";
  Registry r2(bad);
  expect_error([&] { r2.default_device(); }, ErrorCode::not_found, "KILN_DEVICE=nope:3: unknown device 'nope:3'");
}

TEST(Registry, UnknownAndUnusableDevicesListWhatExists) {
  Registry r(only({"good.toml", "unavailable.toml"}));
  // naming a backend that does not exist loads none (what is not loaded yet is named as such)
  expect_error([&] { r.open("nope"); }, ErrorCode::not_found, "backends not loaded yet: good, unavailable");
  expect_error([&] { r.open("good:7"); }, ErrorCode::not_found, "backend good has 2 devices");
  expect_error([&] { r.open("nope"); }, ErrorCode::not_found, "available devices: good:0, good:1");
  expect_error([&] { r.open("unavailable"); }, ErrorCode::unavailable, "is unavailable: no fixture hardware here");
  expect_error([&] { r.open("good:x"); }, ErrorCode::invalid_argument, "expected backend[:index]");
  EXPECT_EQ(r.open("good")->name(), "good:0");
  EXPECT_EQ(r.open("good:0"), r.open(""));  // one Device per name
}

// A program that names its device loads that backend alone: a plugin elsewhere on the search
// path that crashes when loaded is never touched (in a child: a crash here is the failure).
TEST(Registry, NamingADeviceLoadsOnlyItsBackend) {
  auto run = [] {
        setenv("KILN_FIXTURE_MODE", "probe-segv", 1);
        Registry r(only({"raw.toml", "good.toml"}));
        bool ok = r.resolve("good:0") == "good:0" && r.open("good:1")->name() == "good:1";
        Settings s = only({"raw.toml", "good.toml"});
        s.device = "good:1";
        Registry by_env(s);
        ok = ok && by_env.default_device() == "good:1";
        std::exit(ok ? 0 : 1);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
}

// With isolate_timeout_s (what the CLI sets) a plugin that crashes, exits or hangs while loaded,
// probed or opened is a `crashed` backend with the reason, and the others still work.
TEST(Registry, IsolatedProbingTurnsCrashesExitsAndHangsIntoAStatus) {
  struct Case {
    const char* mode;
    const char* reason;
  };
  for (Case c : {Case{"entry-segv", "crashed (SIGSEGV) while probing"}, Case{"probe-abort", "crashed (SIGABRT) while probing"},
                 Case{"probe-exit0", "exited with status 0 while probing"}, Case{"open-segv", "crashed (SIGSEGV)"},
                 Case{"probe-hang", "did not answer within 1 s (killed) while probing"}}) {
    SCOPED_TRACE(c.mode);
    auto run = [&] {
      setenv("KILN_FIXTURE_MODE", c.mode, 1);
      Settings s = only({"raw.toml", "good.toml"});
      s.isolate_timeout_s = 1;
      Registry r(s);
      const BackendRecord& raw = record(r, "raw");
      const std::vector<std::string> good{"good:0", "good:1"};
      bool ok = raw.status == BackendStatus::crashed && raw.reason.find(c.reason) != std::string::npos &&
                r.devices() == good;
      if (!ok) std::fprintf(stderr, "raw: %s: %s\n", status_name(raw.status), raw.reason.c_str());
      std::exit(ok ? 0 : 1);
    };
    EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
  }
}

// Counts and exceptions from a plugin on the bare C ABI: clear errors, no hang, no terminate.
TEST(Registry, AbsurdCountsAndEscapingExceptionsAreLoadErrors) {
  for (auto [mode, reason] : {std::pair{"count-huge", "device_count reported 4294967295 devices; more than 4096"},
                              std::pair{"count-1e9", "device_count reported 1000000000 devices"},
                              std::pair{"count-throw", "device_count threw an exception that is not a std::exception"}}) {
    SCOPED_TRACE(mode);
    auto run = [&] {
          setenv("KILN_FIXTURE_MODE", mode, 1);
          Registry r(only({"raw.toml"}));
          const BackendRecord& raw = record(r, "raw");
          bool ok = raw.status == BackendStatus::load_error && raw.reason.find(reason) != std::string::npos;
          if (!ok) std::fprintf(stderr, "raw: %s: %s\n", status_name(raw.status), raw.reason.c_str());
          std::exit(ok ? 0 : 1);
    };
    EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
  }
}

// docs/devices.md: GPU/accelerator devices first (by priority), then the native cpu backend,
// then CPU-type devices of other backends, whatever their priority.
TEST(Registry, DefaultDeviceRule) {
  Registry cpu_over_cl(only({"kinds/cl_cpu.toml", "kinds/cpu.toml"}));  // cl_cpu has priority 100, cpu 0
  DeviceChoice c = cpu_over_cl.default_choice();
  EXPECT_EQ(c.device, "cpu:0");
  EXPECT_CONTAINS(c.origin, "native cpu backend comes before CPU-type devices");
  Registry gpu_first(only({"kinds/cl_cpu.toml", "kinds/cpu.toml", "kinds/gpu_dev.toml"}));  // gpu_dev: priority 5
  c = gpu_first.default_choice();
  EXPECT_EQ(c.device, "gpu_dev:0");
  EXPECT_CONTAINS(c.origin, "the first GPU device");
  Registry only_cl(only({"kinds/cl_cpu.toml"}));
  c = only_cl.default_choice();
  EXPECT_EQ(c.device, "cl_cpu:0");
  EXPECT_CONTAINS(c.origin, "CPU-type device");
}

// Backends load on first use, so two threads naming devices of different backends load them at
// the same time: one thread's load must not race with the other's lookup of its record (a
// ThreadSanitizer run checks this case, dev.sh).
TEST(Threads, FirstUseOfTwoBackendsAtOnce) {
  for (int round = 0; round < 20; ++round) {
    Registry r(only({"kinds/cl_cpu.toml", "kinds/cpu.toml", "kinds/gpu_dev.toml"}));
    std::string a, b, c;
    std::thread t1([&] { a = r.open("cpu:0")->name(); });
    std::thread t2([&] { b = r.open("gpu_dev:0")->name(); });
    std::thread t3([&] { c = r.resolve("cl_cpu"); });
    t1.join();
    t2.join();
    t3.join();
    EXPECT_EQ(a, "cpu:0");
    EXPECT_EQ(b, "gpu_dev:0");
    EXPECT_EQ(c, "cl_cpu:0");
  }
}

// Alias loops and self-aliases are positioned config errors naming the loop (they used to surface
// as "no backend named ..."); chains are followed.
TEST(Registry, AliasLoopsAreConfigErrorsAndChainsAreFollowed) {
  Registry loop(only({"good.toml"}, "config_alias_loop.toml"));
  EXPECT_FALSE(loop.config().ok());
  std::vector<std::string> errors;
  for (const Diagnostic& d : loop.config().diagnostics) errors.push_back(d.str());
  ASSERT_EQ(errors.size(), 2u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0], manifest("config_alias_loop.toml") +
                           ":2:8: error: alias loop: fast -> quick -> speedy -> fast; the chain of aliases must end at a "
                           "device (backend[:index])");
  EXPECT_EQ(errors[1], manifest("config_alias_loop.toml") +
                           ":5:6: error: devices.aliases.me names itself; an alias names a device (backend[:index])");
  Registry chain(only({"good.toml", "unavailable.toml"}, "config_alias_chain.toml"));
  EXPECT_TRUE(chain.config().ok());
  EXPECT_EQ(chain.default_device(), "good:1");  // chained -> fast -> good:1
  // an alias named like a backend: the backend wins, with a positioned warning
  EXPECT_EQ(chain.resolve("good"), "good:0");
  bool warned = false;
  for (const Diagnostic& d : chain.diagnostics())
    warned = warned || d.str() == manifest("config_alias_chain.toml") +
                                      ":7:8: warning: devices.aliases.good = \"unavailable\" has the name of the good "
                                      "backend: 'good' keeps meaning the backend and the alias is ignored; rename it";
  EXPECT_TRUE(warned);
}

// A directory of odd things: libraries for other machines, symlink loops, dangling links and a
// directory named like a manifest. Each is said for what it is (they were "No such file or
// directory", "does not exist" or silently skipped).
class OddFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kiln_odd_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "backends.d" / "dir.toml");
    // machines no kiln host is (the test must not depend on the host's ISA)
    elf("libs390.so", 2, 22);  // ELFCLASS64, EM_S390
    elf("lib32.so", 1, 40);    // ELFCLASS32, EM_ARM
    manifest_for("s390", "../libs390.so");
    manifest_for("x32", "../lib32.so");
    manifest_for("looplib", "../libloop.so");
    std::filesystem::create_symlink("libloop.so", dir_ / "libloop.so");
    std::filesystem::create_symlink("loop.toml", dir_ / "backends.d" / "loop.toml");
    std::filesystem::create_symlink("nowhere.toml", dir_ / "backends.d" / "dangling.toml");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void elf(const std::string& name, unsigned char elf_class, uint16_t machine) {
    unsigned char h[64] = {0x7f, 'E', 'L', 'F', elf_class, 1, 1};
    h[16] = 3;  // ET_DYN
    h[18] = static_cast<unsigned char>(machine), h[19] = static_cast<unsigned char>(machine >> 8);
    h[20] = 1;  // EV_CURRENT
    std::FILE* f = std::fopen((dir_ / name).c_str(), "wb");
    std::fwrite(h, 1, sizeof h, f);
    std::fclose(f);
  }
  void manifest_for(const std::string& name, const std::string& library) {
    std::FILE* f = std::fopen((dir_ / "backends.d" / (name + ".toml")).c_str(), "w");
    std::fprintf(f, "schema = 1\n[backend]\nname = \"%s\"\nlibrary = \"%s\"\n", name.c_str(), library.c_str());
    std::fclose(f);
  }
  Settings settings() const {
    Settings s;
    s.backend_path = (dir_ / "backends.d").string();
    s.prefix_dirs = std::vector<std::string>{};
    s.xdg_config_dirs = s.xdg_data_dirs = "/nonexistent";
    s.report_problems = false;
    return s;
  }
  std::filesystem::path dir_;
};

TEST_F(OddFiles, EachIsReportedForWhatItIs) {
  Registry r(settings());
  std::string d = (dir_ / "backends.d").string();
  EXPECT_CONTAINS(record(r, "s390").reason,
                  "wrong architecture: " + (dir_ / "libs390.so").string() + " is a 64-bit ELF for s390x, this kiln is ");
  EXPECT_CONTAINS(record(r, "x32").reason,
                  "wrong architecture: " + (dir_ / "lib32.so").string() + " is a 32-bit ELF for 32-bit ARM, this kiln is ");
  EXPECT_CONTAINS(record(r, "looplib").reason, "library " + (dir_ / "libloop.so").string() + " is a symbolic link loop");
  std::vector<std::string> warnings;
  for (const Diagnostic& w : r.diagnostics()) warnings.push_back(w.str());
  auto has = [&](const std::string& text) { return std::find(warnings.begin(), warnings.end(), text) != warnings.end(); };
  std::string where = " (found in " + d + ", KILN_BACKEND_PATH)";
  EXPECT_TRUE(has(d + "/dir.toml: warning: skipped: it is a directory" + where)) << ::testing::PrintToString(warnings);
  EXPECT_TRUE(has(d + "/loop.toml: warning: skipped: it is a symbolic link loop" + where));
  EXPECT_TRUE(has(d + "/dangling.toml: warning: skipped: it is a dangling symbolic link to nowhere.toml" + where));
}

TEST_F(OddFiles, UnreadableManifestIsAWarning) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads every file";
  std::filesystem::path secret = dir_ / "backends.d" / "secret.toml";
  manifest_for("secret", "../libsecret.so");
  std::filesystem::permissions(secret, std::filesystem::perms::none);
  Registry r(settings());
  bool warned = false;
  for (const Diagnostic& w : r.diagnostics())
    warned = warned || w.str().find(secret.string() + ": warning: skipped: it cannot be read: Permission denied") == 0;
  EXPECT_TRUE(warned);
}

// Issue 43: a bad option (`isa = "bogus"`, `devices = 0`) made the cpu backend a config error and
// every program silently ran on the next device (PoCL). The default's choice names the backend it
// passed over on stderr, once.
TEST(Registry, ADefaultChosenPastABackendWithAConfigErrorSaysSo) {
  Settings s = only({"kinds/cl_cpu.toml", "bad_options.toml"});  // bad_options would be an accelerator
  s.report_problems = true;
  Registry r(s);
  ::testing::internal::CaptureStderr();
  std::string dev = r.default_device();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(dev, "cl_cpu:0");
  EXPECT_NE(err.find("kiln: backend bad_options has a configuration error: the plugin rejected its options"), std::string::npos) << err;
  EXPECT_NE(err.find("The default device is cl_cpu:0 without it"), std::string::npos) << err;
  ::testing::internal::CaptureStderr();
  r.default_device();
  EXPECT_EQ(::testing::internal::GetCapturedStderr().find("without it"), std::string::npos) << "said once";
}

}  // namespace
}  // namespace kiln
