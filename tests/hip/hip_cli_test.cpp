// tests/hip/hip_cli_test.cpp - `kiln compile` for AMDGPU archs this machine cannot run, and the
// hip backend next to the opencl one (PoCL) in one process: refused with a reason, never an abort.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "code_object.hpp"
#include "error_check.hpp"
#include "run_cli.hpp"

using kiln::test::CliResult;
using kiln::test::run_kiln;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string manifest(const char* name) { return std::string(KILN_BUILD_MANIFESTS) + "/" + name + ".toml"; }

}  // namespace

TEST(HipCli, CompileAWorkloadForAnOfflineArch) {
  std::filesystem::path out = std::filesystem::temp_directory_path() / ("kiln-hip-cli-" + std::to_string(getpid()));
  std::filesystem::remove_all(out);
  CliResult r = run_kiln({"compile", "--backend", "hip", "--arch", "gfx1100", "--workload", "softmax", "-o", out.string()},
                         {{"KILN_CACHE_DIR", "off"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "offline compiler for gfx1100");
  size_t objects = 0;
  for (const auto& f : std::filesystem::directory_iterator(out)) {
    if (f.path().extension() != ".co") continue;
    ++objects;
    std::string binary = slurp(f.path());
    kiln::hip::CodeObject co = kiln::hip::parse_code_object(binary);
    EXPECT_EQ(co.machine, kiln::hip::kEmAmdgpu);
    EXPECT_EQ(co.flags & 0xff, 0x41u);  // gfx1100
    std::string entry = f.path().stem().string();
    EXPECT_TRUE(co.symbol(entry) && co.symbol(entry + ".kd")) << entry;
    EXPECT_TRUE(std::filesystem::exists(out / (entry + ".hip")));
  }
  EXPECT_GE(objects, 2u);
  CliResult j = run_kiln({"compile", "--backend", "hip", "--arch", "gfx90a", "--workload", "matmul256", "--json"},
                         {{"KILN_CACHE_DIR", "off"}});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_CONTAINS(j.out, "\"arch\": \"gfx90a\"");
  // --arch adds to the archs the environment already lists, it does not lose to them
  CliResult both = run_kiln({"compile", "--backend", "hip", "--arch", "gfx1030", "--workload", "elementwise", "--json"},
                            {{"KILN_CACHE_DIR", "off"}, {"KILN_HIP_OFFLINE_ARCH", "gfx90a"}});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  EXPECT_CONTAINS(both.out, "\"arch\": \"gfx1030\"");
  std::filesystem::remove_all(out);
}

TEST(HipCli, CompileErrorsAndUsage) {
  CliResult usage = run_kiln({"compile", "--workload", "sum"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_CONTAINS(usage.err, "give exactly one of --device and --backend");
  CliResult bogus = run_kiln({"compile", "--backend", "hip", "--arch", "not-an-arch", "--workload", "sum"});
  EXPECT_EQ(bogus.exit_code, 1);
  EXPECT_CONTAINS(bogus.err, "'not-an-arch' is not an AMDGPU arch");
  std::filesystem::path src = std::filesystem::temp_directory_path() / ("kiln-hip-bad-" + std::to_string(getpid()) + ".hip");
  std::ofstream(src) << "extern \"C\" __attribute__((global)) void k() { undefined_call(); }\n";
  CliResult broken = run_kiln({"compile", "--backend", "hip", "--arch", "gfx1030", "--source", src.string(), "--entry", "k"});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_CONTAINS(broken.err, "undefined_call");
  std::filesystem::remove(src);
}

// Without a GPU and without offline targets the probe says why (the README's promise).
TEST(HipCli, NoGpuIsUnavailableWithTheHipError) {
  CliResult r = run_kiln({"list"}, {{"KILN_BACKENDS", manifest("hip")}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "unavailable");
  EXPECT_CONTAINS(r.out, "no HIP devices (hipErrorNoDevice)");
}

// The same answer from the HIP runtime itself: libamdhip64 loaded lazily, hipInit and
// hipGetDeviceCount called, no GPU found, no crash (KILN_HIP_KFD skips the /dev/kfd shortcut).
TEST(HipCli, NoGpuAnswerComesFromTheLoadedRuntime) {
  CliResult r = run_kiln({"info", "hip"}, {{"KILN_BACKENDS", manifest("hip")}, {"KILN_HIP_KFD", "/dev/null"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // kiln info: the backend is not usable
  EXPECT_CONTAINS(r.out, "unavailable");
  EXPECT_CONTAINS(r.out, "no HIP devices (hipErrorNoDevice)");
  CliResult missing = run_kiln({"list"}, {{"KILN_BACKENDS", manifest("hip")}, {"KILN_HIP_KFD", "/nonexistent/kfd"}});
  EXPECT_CONTAINS(missing.out, "no HIP devices (hipErrorNoDevice)");
}

// kiln test folds a run of skips for one reason into one line; the test after the run still gets
// its [ RUN ] line (it used to be swallowed with the skips).
TEST(HipCli, KilnTestShowsTheRunLineAfterARunOfSkips) {
  CliResult r = run_kiln({"test", "hip", "--level", "3", "--filter", "^L(2\\.|3\\.cache_key)"},
                         {{"KILN_BACKENDS", manifest("hip")}, {"KILN_HIP_OFFLINE_ARCH", "gfx1100"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "more tests, for the same reason\n[ RUN      ] L3.cache_key\n[       OK ] L3.cache_key");
}

// The `arch` option is checked like the offline archs, and the error points at the config line.
TEST(HipCli, ABadArchOptionIsAConfigError) {
  std::filesystem::path cfg = std::filesystem::temp_directory_path() / ("kiln-hip-arch-" + std::to_string(getpid()) + ".toml");
  std::ofstream(cfg) << "[backends.hip.options]\narch = \"bogus\"\n";
  CliResult r = run_kiln({"list"}, {{"KILN_BACKENDS", manifest("hip")}, {"KILN_CONFIG", cfg.string()}, {"KILN_HIP_OFFLINE_ARCH", "gfx90a"}});
  EXPECT_CONTAINS(r.out, "config-error");
  EXPECT_CONTAINS(r.out, "option 'arch': 'bogus' is not an AMDGPU arch");
  EXPECT_CONTAINS(r.out, cfg.string() + ":2:8");
  std::filesystem::remove(cfg);
}

// PoCL (loaded by the opencl backend's probe) and the HIP runtime's comgr abort a process that
// has both. With opencl discovered first, hip refuses to initialise the runtime and says why;
// the process lives and opencl works.
TEST(HipCli, OpenclFirstMakesHipRefuseInsteadOfAborting) {
  CliResult r = run_kiln({"list"}, {{"KILN_BACKENDS", manifest("opencl") + ":" + manifest("hip")}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "opencl  ok");
  EXPECT_CONTAINS(r.out, "(PoCL, the opencl backend's driver) is loaded in this process");
  // default discovery order (cpu, hip, opencl): both load, nothing aborts
  CliResult all = run_kiln({"list"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_CONTAINS(all.out, "opencl  ok");
}
