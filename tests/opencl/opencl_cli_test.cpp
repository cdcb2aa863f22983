// tests/opencl/opencl_cli_test.cpp - the opencl backend's options and missing-driver path, through
// `kiln list` in separate processes (what a user sees).
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
