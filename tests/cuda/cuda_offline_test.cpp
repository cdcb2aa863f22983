// tests/cuda/cuda_offline_test.cpp - the cuda backend without an NVIDIA GPU. KILN_CUDA_OFFLINE_ARCH
// (set by ctest, with KILN_CUDA_DRIVER pointing nowhere so a GPU machine gives the same devices)
// gives offline devices cuda:0 sm_80 and cuda:1 sm_90: golden CUDA source for a few kernels, the
// op corpus compiled to PTX for both archs by every compiler present (clang-15; NVRTC when its
// library loads), each PTX checked for its arch and entries and, where ptxas is installed,
// assembled by it; and the errors of everything that would need a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "../../plugins/common/process.hpp"
#include "codegen/pipeline.hpp"
#include "compiler.hpp"
#include "cuda_c.hpp"
#include "error_check.hpp"
#include "golden.hpp"
#include "kiln/kiln.hpp"
#include "op_corpus.hpp"
#include "plugin/device.hpp"
#include "plugin/registry.hpp"
#include "ptx.hpp"
#include "runtime/program_cache.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

const char* const kArchs[] = {"sm_80", "sm_90"};  // cuda:0, cuda:1

std::shared_ptr<Device> device(const char* name) { return Registry::get().open(name); }

// The kernels of an op-corpus case, scheduled with uninitialised inputs on `dev` (offline devices
// have no memory, and codegen needs only shapes and dtypes).
std::vector<ExecItem> kernels_of(const OpCase& c, const std::string& dev) {
  std::vector<Tensor> inputs;
  for (const HostArray& a : c.inputs) inputs.push_back(Tensor::empty(a.shape, a.dtype, dev));
  std::vector<ExecItem> out;
  for (ExecItem& e : c.build(inputs).schedule())
    if (!e.is_copy) out.push_back(std::move(e));
  return out;
}

bool runs(const std::vector<std::string>& argv) {
  try {
    return plugins::run_process(argv, "", "").exit_code == 0;
  } catch (const std::exception&) {
    return false;
  }
}

// ptxas from PATH or the toolkit's default prefix ("" when neither has one).
std::string find_ptxas() {
  for (const char* p : {"ptxas", "/usr/local/cuda/bin/ptxas"})
    if (runs({p, "--version"})) return p;
  return "";
}

// The compilers to check: clang-15 when it runs, NVRTC as the plugin finds it, and every
// libnvrtc named in KILN_TEST_NVRTC (colon-separated; e.g. the nvidia-cuda-nvrtc-cu12 wheel's).
std::vector<cuda::CompilerConfig> compilers(std::string& skipped) {
  std::vector<cuda::CompilerConfig> out;
  if (runs({"clang-15", "--version"})) out.push_back({"clang", "", "clang-15", {}});
  else skipped += "clang-15 not found; ";
  std::vector<std::string> libs{""};
  if (const char* extra = std::getenv("KILN_TEST_NVRTC")) {
    std::istringstream s(extra);
    for (std::string p; std::getline(s, p, ':');)
      if (!p.empty()) libs.push_back(p);
  }
  for (const std::string& lib : libs) {
    cuda::NvrtcStatus st = cuda::nvrtc_status(lib);
    if (st.ok) out.push_back({"nvrtc", lib, "clang-15", {}});
    else skipped += "NVRTC " + (lib.empty() ? std::string("(default search)") : lib) + ": " + st.error.substr(0, 80) + "; ";
  }
  return out;
}

// PTX for `arch` defining every kernel with its parameter count; assembled by ptxas when given.
void expect_valid_ptx(const std::string& ptx, const std::string& arch, const std::vector<ProgramSpec>& specs,
                      const std::string& ptxas) {
  cuda::PtxInfo info = cuda::parse_ptx(ptx);
  EXPECT_EQ(info.target, arch);
  EXPECT_GE(info.version_major * 10 + info.version_minor, cuda::min_ptx_version(*cuda::sm_number(arch)));
  for (const ProgramSpec& s : specs) {
    std::optional<int> params = cuda::ptx_entry_params(ptx, s.name);
    ASSERT_TRUE(params.has_value()) << s.name;
    EXPECT_EQ(*params, static_cast<int>(s.lir.n_buffers + s.lir.n_vars)) << s.name;
  }
  if (ptxas.empty()) return;
  std::filesystem::path f = std::filesystem::temp_directory_path() / ("kiln-cuda-" + std::to_string(getpid()) + ".ptx");
  std::ofstream(f) << ptx;
  plugins::ProcessResult r = plugins::run_process({ptxas, "-arch=" + arch, "-o", "/dev/null", f.string()}, "", "");
  EXPECT_EQ(r.exit_code, 0) << "ptxas -arch=" << arch << ":\n" << r.err << "\n" << ptx.substr(0, 4000);
  std::filesystem::remove(f);
}

}  // namespace

TEST(CudaOffline, OneDevicePerOfflineArch) {
  ASSERT_EQ(Registry::get().backend("cuda")->device_count, 2u);
  EXPECT_CONTAINS(Registry::get().backend("cuda")->probe_reason, "no CUDA driver");
  EXPECT_CONTAINS(Registry::get().backend("cuda")->probe_reason, "offline compiler for sm_80, sm_90");
  for (int i = 0; i < 2; ++i) {
    auto d = device(i ? "cuda:1" : "cuda:0");
    EXPECT_EQ(d->props().arch, kArchs[i]);
    EXPECT_EQ(d->props().kind, KILN_DEVICE_KIND_GPU);
    const Target& t = d->target();
    EXPECT_EQ(t.source_format, "cuda");
    EXPECT_TRUE(t.has(KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED));
    EXPECT_EQ(t.local_prod_max, 1024u);
    EXPECT_EQ(t.shared_max, 48u * 1024);
    EXPECT_FALSE(t.supports_op(KILN_LIR_OP_EXP2));  // -nocudalib: the core decomposes it
    EXPECT_TRUE(t.supports_op(KILN_LIR_OP_SQRT));
  }
}

// Golden CUDA source for a few kernels of different kinds: elementwise, a reduction through
// shared memory, a tiled matmul, bfloat16 (stored as bits), integer division, NaN-aware max.
TEST(CudaOffline, GoldenSource) {
  auto dev = device("cuda:0");
  const std::set<std::string> names{"add", "sqrt", "where", "sum_all", "softmax", "max_nan", "matmul",
                                    "tiled_matmul", "cast_f32_bf16", "idiv_c_semantics"};
  size_t found = 0;
  for (const OpCase& c : op_corpus()) {
    if (!names.count(c.name)) continue;
    ++found;
    SCOPED_TRACE(c.name);
    std::string text;
    for (const ExecItem& e : kernels_of(c, "cuda:0")) {
      ProgramSpec spec = to_program(e.ast, dev->target());
      text += "// ---- " + spec.name + "\n" + dev->render(spec.lir.view());
    }
    EXPECT_GOLDEN("cuda/" + c.name, text);
  }
  EXPECT_EQ(found, names.size());
}

// The op corpus (every 6th case; all of them with KILN_TEST_CUDA_FULL=1) compiled for sm_80
// and sm_90 by each compiler present: PTX for that arch with every kernel's entry, and ptxas
// accepts it where ptxas is installed. One compile per case (compile_many), as the runtime does.
TEST(CudaOffline, CorpusCompilesToPtxForSm80AndSm90) {
  std::string skipped;
  std::vector<cuda::CompilerConfig> configs = compilers(skipped);
  if (configs.empty()) GTEST_SKIP() << "no CUDA compiler here: " << skipped;
  if (!skipped.empty()) std::printf("[   NOTE   ] not checked: %s\n", skipped.c_str());
  std::string ptxas = find_ptxas();
  if (ptxas.empty()) std::printf("[   NOTE   ] ptxas not found: PTX checked by its header and entries only\n");
  const size_t stride = std::getenv("KILN_TEST_CUDA_FULL") ? 1 : 6;
  size_t kernels = 0;
  for (cuda::CompilerConfig& cfg : configs) {
    cuda::Compiler compiler(cfg);
    SCOPED_TRACE(compiler.describe());
    for (int i = 0; i < 2; ++i) {
      auto dev = device(i ? "cuda:1" : "cuda:0");
      SCOPED_TRACE(kArchs[i]);
      const std::vector<OpCase> corpus = op_corpus();
      for (size_t k = 0; k < corpus.size(); k += stride) {
        SCOPED_TRACE(corpus[k].name);
        std::vector<ProgramSpec> specs;
        std::string source;
        for (const ExecItem& e : kernels_of(corpus[k], dev->name())) {
          specs.push_back(to_program(e.ast, dev->target()));
          source += dev->render(specs.back().lir.view()) + "\n";
        }
        if (specs.empty()) continue;
        std::string log;
        std::string ptx;
        ASSERT_NO_THROW(ptx = compiler.compile(source, corpus[k].name, kArchs[i], "", log)) << source;
        expect_valid_ptx(ptx, kArchs[i], specs, ptxas);
        kernels += specs.size();
      }
    }
  }
  EXPECT_GT(kernels, op_corpus().size() / 6);
}

// The runtime's own path on an offline device: render, compile (through the cache), load checks.
TEST(CudaOffline, CorpusLoadsForSm90) {
  auto dev = device("cuda:1");
  const std::vector<OpCase> corpus = op_corpus();
  for (size_t k = 0; k < corpus.size(); k += 8) {
    const OpCase& c = corpus[k];
    SCOPED_TRACE(c.name);
    for (const ExecItem& e : kernels_of(c, "cuda:1")) {
      std::shared_ptr<runtime::Kernel> kern;
      EXPECT_NO_THROW(kern = runtime::get_kernel(dev, e.ast));
      if (kern) {
        EXPECT_EQ(kern->program->entry(), kern->spec.name);
      }
    }
  }
}

TEST(CudaOffline, ClangRelabelsPtxForArchsNewerThanLlvm15) {
  EXPECT_EQ(cuda::clang_arch_for("sm_80"), "sm_80");
  EXPECT_EQ(cuda::clang_arch_for("sm_89"), "sm_86");
  EXPECT_EQ(cuda::clang_arch_for("sm_90"), "sm_86");
  EXPECT_EQ(cuda::clang_arch_for("sm_90a"), "");  // arch-specific features cannot be relabelled
  std::string ptx = ".version 7.5\n.target sm_86\n.address_size 64\n.visible .entry k(\n.param .u64 k_param_0\n)\n{\nret;\n}\n";
  std::string r = cuda::retarget_ptx(ptx, "sm_90");
  EXPECT_CONTAINS(r, ".version 7.8\n.target sm_90\n");
  EXPECT_EQ(cuda::ptx_entry_params(r, "k"), 1);
  EXPECT_EQ(cuda::ptx_entry_params(r, "kk"), std::nullopt);
  EXPECT_CONTAINS(cuda::retarget_ptx(".version 8.8\n.target sm_80\n", "sm_90"), ".version 8.8\n.target sm_90\n");
}

// An NVRTC newer than the driver: the PTX is relabelled with the ISA the driver knows.
TEST(CudaOffline, PtxVersionsOfDrivers) {
  EXPECT_EQ(cuda::max_ptx_version_of_driver(11080), 78);
  EXPECT_EQ(cuda::max_ptx_version_of_driver(12040), 84);
  EXPECT_EQ(cuda::max_ptx_version_of_driver(12080), 87);
  EXPECT_EQ(cuda::max_ptx_version_of_driver(12090), 88);
  EXPECT_EQ(cuda::max_ptx_version_of_driver(13000), 90);
  EXPECT_EQ(cuda::max_ptx_version_of_driver(10020), 0);
  EXPECT_EQ(cuda::with_ptx_version("//\n.version 9.1\n.target sm_90\n", 90), "//\n.version 9.0\n.target sm_90\n");
}

TEST(CudaOffline, WhatNeedsAGpuIsUnavailableNotACrash) {
  auto dev = device("cuda:1");
  ErrorCode code{};
  std::string alloc = error_of([&] { dev->alloc(16); }, &code);
  EXPECT_EQ(code, ErrorCode::unavailable);
  EXPECT_CONTAINS(alloc, "offline compiler for sm_90");
  EXPECT_THROW(Tensor::from_vector<float>({1, 2}, {2}, "cuda:1").to_vector<float>(), Error);
  // a launch is checked against the kernel's parameter count before it is refused
  const char* src = "extern \"C\" __global__ void k(float* __restrict__ data0, long long n_arg) { data0[0] = (float)n_arg; }\n";
  std::string full = std::string(cuda::kCudaPrelude) + src;
  auto program = dev->load(dev->compile(full, "k"), "k");
  uint32_t grid[3] = {1, 1, 1};
  std::string args = error_of([&] { dev->launch(*program, {}, {}, {}, grid, grid, true); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(args, "kernel 'k' takes 2 arguments (buffers, then values), the launch passed 0 buffers and 0 values");
}

TEST(CudaOffline, BadBinariesAndSourcesAreErrors) {
  auto dev = device("cuda:0");
  ErrorCode code{};
  std::string junk = error_of([&] { dev->load("definitely not PTX", "k"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(junk, "not PTX");
  std::string src = std::string(cuda::kCudaPrelude) + "extern \"C\" __global__ void k(float* __restrict__ data0) { data0[0] = 1.0f; }\n";
  std::string binary = dev->compile(src, "k");
  std::string missing = error_of([&] { dev->load(binary, "other"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(missing, "does not define the kernel 'other'");
  // PTX for sm_90 does not load on sm_80
  std::string newer = error_of([&] { dev->load(device("cuda:1")->compile(src, "k"), "k"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(newer, "the PTX targets sm_90, newer than cuda:0's sm_80");
  std::string broken = error_of([&] { dev->compile(std::string(cuda::kCudaPrelude) + "extern \"C\" __global__ void k() { nope(); }", "k"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(broken, "compiling kernel 'k' for sm_80 failed");
  EXPECT_CONTAINS(broken, "nope");  // the compiler's diagnostic
  // corrupting a real PTX file anywhere gives an error or a valid parse, never a crash
  std::mt19937 rng(11);
  for (int i = 0; i < 300; ++i) {
    std::string f = binary;
    for (int k = 0; k < 8; ++k) f[rng() % f.size()] = static_cast<char>(rng());
    try {
      dev->load(f, "k");
    } catch (const Error&) {
    }
  }
}
