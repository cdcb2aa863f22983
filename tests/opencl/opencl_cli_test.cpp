// tests/opencl/opencl_cli_test.cpp - the opencl backend's options and missing-driver path, through
// `kiln list` and `kiln compile` in separate processes (what a user sees).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "error_check.hpp"
#include "run_cli.hpp"

using kiln::test::CliResult;
using kiln::test::run_kiln;

namespace {

const std::string kManifest = std::string(KILN_BUILD_MANIFESTS) + "/opencl.toml";

// `kiln list` with a user config holding `option_line` under [backends.opencl.options].
CliResult list_with(const std::string& option_line, std::map<std::string, std::string> env = {}) {
  std::filesystem::path cfg = std::filesystem::temp_directory_path() / ("kiln-opencl-opt-" + std::to_string(getpid()) + ".toml");
  std::ofstream(cfg) << "[backends.opencl.options]\n" << option_line << "\n";
  env["KILN_BACKENDS"] = kManifest;
  env["KILN_CONFIG"] = cfg.string();
  CliResult r = run_kiln({"list"}, env);
  std::filesystem::remove(cfg);
  return r;
}

// `kiln compile` of one OpenCL C kernel on opencl:0 with `options` under [backends.opencl.options],
// empty compile and PoCL caches; `binary` receives what it wrote.
CliResult compile_with(const std::string& options, const std::string& source, std::string* binary = nullptr) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kiln-opencl-fe-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.toml") << "[backends.opencl.options]\n" << options << "\n";
  std::ofstream(dir / "k.cl") << source;
  CliResult r = run_kiln({"compile", "--device", "opencl:0", "--source", (dir / "k.cl").string(), "--entry", "k", "-o",
                          (dir / "k.bin").string()},
                         {{"KILN_BACKENDS", kManifest},
                          {"KILN_CONFIG", (dir / "config.toml").string()},
                          {"KILN_CACHE_DIR", (dir / "kiln").string()},
                          {"POCL_CACHE_DIR", (dir / "pocl").string()}});
  if (binary) {
    std::ifstream in(dir / "k.bin", std::ios::binary);
    binary->assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove_all(dir);
  return r;
}

const char* kKernel = "__kernel void k(__global float* a) { size_t i = get_global_id(0); a[i] = sqrt(a[i]) * 2.0f; }\n";
const char* kBroken = "__kernel void k(__global float* a) { a[0] = undefined_name; }\n";
bool is_bitcode(const std::string& b) { return b.rfind("BC\xC0\xDE", 0) == 0; }

}  // namespace

TEST(OpenclCli, BadOptionValuesAreConfigErrorsAtTheirLine) {
  CliResult r = list_with("vector_width = 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;  // listing works; the backend says what is wrong
  EXPECT_CONTAINS(r.out, "opencl  config-error");
  EXPECT_CONTAINS(r.out, "option 'vector_width' must be 0 (the device's), 1, 2, 4, 8 or 16, got 3");
  EXPECT_CONTAINS(r.out, ".toml:2:16");
}

TEST(OpenclCli, UnknownOptionsOnlyWarn) {
  CliResult r = list_with("bogus_key = 1");
  EXPECT_CONTAINS(r.err, "unknown option 'bogus_key'");
  EXPECT_CONTAINS(r.out, "opencl  ok");
}

TEST(OpenclCli, ADeviceFilterThatSelectsNothingSaysSo) {
  CliResult r = list_with("devices = \"accelerator\"");  // PoCL's pthread device is a CPU device
  EXPECT_CONTAINS(r.out, "opencl  unavailable   no devices");
  EXPECT_CONTAINS(r.err, "option devices = 'accelerator' selects none of the OpenCL devices");
  CliResult cpu = list_with("devices = \"cpu\"");
  EXPECT_CONTAINS(cpu.out, "  opencl:0 ");
}

TEST(OpenclCli, NoDriverIsUnavailableWithTheFix) {
  std::filesystem::path empty = std::filesystem::temp_directory_path() / ("kiln-no-vendors-" + std::to_string(getpid()));
  std::filesystem::create_directories(empty);
  CliResult r = run_kiln({"list"}, {{"KILN_BACKENDS", kManifest}, {"OCL_ICD_VENDORS", empty.string()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "opencl  unavailable   no OpenCL devices: the ICD loader");
  EXPECT_CONTAINS(r.out, "install e.g. pocl-opencl-icd");
  std::filesystem::remove_all(empty);
}

// PoCL's CPU device: by default clang-15 makes LLVM bitcode, which is also the kernel's binary.
TEST(OpenclCli, PoclBuildsFromClangBitcodeByDefault) {
  std::string binary;
  CliResult r = compile_with("", kKernel, &binary);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(is_bitcode(binary)) << binary.substr(0, 8);
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  CliResult driver = compile_with("frontend = \"driver\"", kKernel, &binary);
  ASSERT_EQ(driver.exit_code, 0) << driver.err;
  EXPECT_FALSE(binary.empty());
  EXPECT_FALSE(is_bitcode(binary));  // the driver's own binary
}

TEST(OpenclCli, BadFrontendOptionsSayWhatIsAccepted) {
  CliResult r = list_with("frontend = \"gcc\"");
  EXPECT_CONTAINS(r.out, "option 'frontend' must be \"auto\", \"driver\" or \"clang\", got \"gcc\"");
  CliResult empty = list_with("clang = \"\"");
  EXPECT_CONTAINS(empty.out, "option 'clang' must name a program");
}

// "auto" never does worse than the driver: a clang that fails where the driver succeeds is dropped
// with a warning that says why and how to silence it.
TEST(OpenclCli, AutoFallsBackToTheDriverWhenClangFails) {
  std::string binary;
  CliResult r = compile_with("clang = \"false\"", kKernel, &binary);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "building with false failed where the OpenCL driver succeeded");
  EXPECT_CONTAINS(r.err, "frontend = \"driver\"");
  EXPECT_FALSE(is_bitcode(binary));
  // a clang that is not installed: the driver builds, nothing to warn about
  CliResult missing = compile_with("clang = \"/nonexistent/clang\"", kKernel, &binary);
  ASSERT_EQ(missing.exit_code, 0) << missing.err;
  EXPECT_FALSE(is_bitcode(binary));
  // a broken kernel is the source's fault, reported with the driver's build log
  CliResult broken = compile_with("", kBroken);
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_CONTAINS(broken.err, "building kernel 'k' on opencl:0 failed: CL_BUILD_PROGRAM_FAILURE");
  EXPECT_CONTAINS(broken.err, "undefined_name");
  EXPECT_EQ(broken.err.find("warning"), std::string::npos) << broken.err;
}

// "clang" is a requirement: what keeps it from working is an error, with clang's own diagnostics.
TEST(OpenclCli, FrontendClangReportsClangsErrors) {
  CliResult missing = compile_with("frontend = \"clang\"\nclang = \"/nonexistent/clang\"", kKernel);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_CONTAINS(missing.err, "opencl:0 cannot compile with clang (option frontend = \"clang\"): '/nonexistent/clang' is not found");
  EXPECT_CONTAINS(missing.err, "apt-get install clang-15");
  CliResult broken = compile_with("frontend = \"clang\"", kBroken);
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_CONTAINS(broken.err, "compiling kernel 'k' for opencl:0 failed: clang-15 exited with status 1");
  EXPECT_CONTAINS(broken.err, "error: use of undeclared identifier 'undefined_name'");
}
