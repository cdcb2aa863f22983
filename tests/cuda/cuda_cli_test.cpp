// tests/cuda/cuda_cli_test.cpp - the cuda backend as a user meets it: `kiln list` without a driver
// (KILN_CUDA_DRIVER points nowhere, so a GPU machine answers the same), and `kiln compile` of a
// workload to PTX for sm_90 through each compiler present.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "error_check.hpp"
#include "compiler.hpp"
#include "ptx.hpp"
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

std::string manifest() { return std::string(KILN_BUILD_MANIFESTS) + "/cuda.toml"; }

std::filesystem::path temp(const std::string& what) {
  return std::filesystem::temp_directory_path() / ("kiln-cuda-cli-" + what + "-" + std::to_string(getpid()));
}

// `kiln compile --backend cuda --arch sm_90 --workload matmul256 -o out/` with the given compiler
// option: .cu sources and PTX for sm_90 defining each kernel; returns the kernels' count.
size_t compile_matmul(const std::string& compiler) {
  std::filesystem::path out = temp("out-" + compiler), cfg = temp("cfg-" + compiler);
  std::filesystem::remove_all(out);
  std::ofstream(cfg) << "[backends.cuda.options]\ncompiler = \"" << compiler << "\"\n";
  CliResult r = run_kiln({"compile", "--backend", "cuda", "--arch", "sm_90", "--workload", "matmul256", "-o", out.string()},
                         {{"KILN_CACHE_DIR", "off"}, {"KILN_BACKENDS", manifest()}, {"KILN_CONFIG", cfg.string()},
                          {"KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "offline compiler for sm_90");
  size_t kernels = 0;
  for (const auto& f : std::filesystem::directory_iterator(out)) {
    if (f.path().extension() != ".ptx") continue;
    ++kernels;
    std::string ptx = slurp(f.path());
    EXPECT_EQ(kiln::cuda::parse_ptx(ptx).target, "sm_90") << f.path();
    EXPECT_TRUE(kiln::cuda::ptx_entry_params(ptx, f.path().stem().string()).has_value()) << f.path();
    EXPECT_TRUE(std::filesystem::exists(out / (f.path().stem().string() + ".cu")));
  }
  std::filesystem::remove_all(out);
  std::filesystem::remove(cfg);
  return kernels;
}

}  // namespace

TEST(CudaCli, NoDriverIsUnavailableWithTheReason) {
  CliResult r = run_kiln({"list"}, {{"KILN_BACKENDS", manifest()}, {"KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "cuda  unavailable   no CUDA driver (/nonexistent/libcuda.so.1: cannot open shared object file");
  CliResult info = run_kiln({"info", "cuda"}, {{"KILN_BACKENDS", manifest()}, {"KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1"}});
  EXPECT_EQ(info.exit_code, 1);
  EXPECT_CONTAINS(info.out, "unavailable");
  // a library that loads but is not a driver: named, not a crash
  CliResult wrong = run_kiln({"list"}, {{"KILN_BACKENDS", manifest()}, {"KILN_CUDA_DRIVER", "libm.so.6"}});
  EXPECT_EQ(wrong.exit_code, 0) << wrong.err;
  EXPECT_CONTAINS(wrong.out, "libm.so.6 has no cuInit");
}

// The toolkit's stub libcuda exports the whole driver API but drives nothing: every function the
// plugin resolves must be there (names checked against a real CUDA release), and cuInit's answer
// is reported.
TEST(CudaCli, EveryDriverFunctionResolvesInTheToolkitsStub) {
  std::string stub;
  for (const char* p : {"/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so"})
    if (std::filesystem::exists(p)) stub = p;
  if (stub.empty()) GTEST_SKIP() << "no CUDA toolkit stub libcuda.so in /usr/local/cuda";
  CliResult r = run_kiln({"list"}, {{"KILN_BACKENDS", manifest()}, {"KILN_CUDA_DRIVER", stub}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "cuda  unavailable   no CUDA devices (cuInit: CUDA_ERROR_STUB_LIBRARY");
}

TEST(CudaCli, CompileMatmulForSm90WithClang) {
  if (system("clang-15 --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "clang-15 not found";
  EXPECT_GE(compile_matmul("clang"), 1u);
}

TEST(CudaCli, CompileMatmulForSm90WithNvrtc) {
  // the plugin's own search (or KILN_CUDA_NVRTC): skipped where no NVRTC is installed
  kiln::cuda::NvrtcStatus nvrtc = kiln::cuda::nvrtc_status("");
  if (!nvrtc.ok) GTEST_SKIP() << nvrtc.error;
  EXPECT_GE(compile_matmul("nvrtc"), 1u);
}

TEST(CudaCli, BadArchsAndSourcesAreErrors) {
  CliResult bogus = run_kiln({"compile", "--backend", "cuda", "--arch", "gfx90a", "--workload", "sum"},
                             {{"KILN_BACKENDS", manifest()}, {"KILN_CUDA_DRIVER", "/nonexistent"}});
  EXPECT_EQ(bogus.exit_code, 1);
  EXPECT_CONTAINS(bogus.err, "'gfx90a' is not a CUDA arch");
  std::filesystem::path src = temp("bad") += ".cu";
  std::ofstream(src) << "extern \"C\" __global__ void k() { undefined_call(); }\n";
  CliResult broken = run_kiln({"compile", "--backend", "cuda", "--arch", "sm_80", "--source", src.string(), "--entry", "k"},
                              {{"KILN_BACKENDS", manifest()}, {"KILN_CUDA_DRIVER", "/nonexistent"}});
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_CONTAINS(broken.err, "undefined_call");
  std::filesystem::remove(src);
}
