// tests/hip/hip_offline_test.cpp - the hip backend without an AMD GPU. KILN_HIP_OFFLINE_ARCH
// (set by ctest) gives offline devices hip:0 gfx90a, hip:1 gfx1030, hip:2 gfx1100: golden HIP
// source for the whole op corpus, its AMDGPU code objects for all three archs validated as ELF
// (EM_AMDGPU, the arch in e_flags, the kernel symbol, its .kd descriptor, the argument counts),
// loaded for gfx1100, and the errors of everything that would need a GPU.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "code_object.hpp"
#include "codegen/pipeline.hpp"
#include "golden.hpp"
#include "kiln/kiln.hpp"
#include "op_corpus.hpp"
#include "error_check.hpp"
#include "plugin/device.hpp"
#include "plugin/registry.hpp"
#include "runtime/program_cache.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

struct Arch {
  const char* device;
  const char* name;
  uint32_t mach;  // EF_AMDGPU_MACH_AMDGCN_* in the low byte of e_flags
};
const Arch kArchs[] = {{"hip:0", "gfx90a", 0x3f}, {"hip:1", "gfx1030", 0x36}, {"hip:2", "gfx1100", 0x41}};

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

void expect_valid_code_object(const std::string& binary, const std::string& entry, uint32_t mach, int64_t buffers) {
  hip::CodeObject co = hip::parse_code_object(binary);
  EXPECT_EQ(co.machine, hip::kEmAmdgpu) << entry;
  EXPECT_EQ(co.type, 3) << entry;  // ET_DYN: a linked code object, not a bundle
  EXPECT_EQ(co.flags & 0xff, mach) << entry;
  const hip::ElfSymbol* fn = co.symbol(entry);
  const hip::ElfSymbol* kd = co.symbol(entry + ".kd");
  ASSERT_TRUE(fn && kd) << entry;
  EXPECT_EQ(fn->type, 2) << entry;   // STT_FUNC
  EXPECT_EQ(kd->type, 1) << entry;   // STT_OBJECT
  EXPECT_EQ(kd->size, 64u) << entry; // the kernel descriptor
  EXPECT_EQ(hip::kernel_arg_counts(co, entry).buffers, buffers) << entry;
}

}  // namespace

TEST(HipOffline, OneDevicePerOfflineArch) {
  ASSERT_EQ(Registry::get().backend("hip")->device_count, 3u);
  EXPECT_NE(Registry::get().backend("hip")->probe_reason.find("offline compiler for gfx90a, gfx1030, gfx1100"),
            std::string::npos);
  for (const Arch& a : kArchs) {
    auto d = device(a.device);
    EXPECT_EQ(d->props().arch, a.name);
    EXPECT_EQ(d->props().kind, KILN_DEVICE_KIND_GPU);
    const Target& t = d->target();
    EXPECT_EQ(t.source_format, "hip");
    EXPECT_TRUE(t.has(KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED));
    // -nogpulib: no device libraries, so the core decomposes the transcendentals
    EXPECT_FALSE(t.supports_op(KILN_LIR_OP_EXP2));
    EXPECT_FALSE(t.supports_op(KILN_LIR_OP_SIN));
    EXPECT_TRUE(t.supports_op(KILN_LIR_OP_SQRT));
  }
}

// Golden HIP source for every kernel of every op-corpus case (gfx90a's rendering; the archs share
// the dialect), one file per case.
TEST(HipOffline, GoldenSourceForTheWholeCorpus) {
  auto dev = device("hip:0");
  for (const OpCase& c : op_corpus()) {
    SCOPED_TRACE(c.name);
    std::string text;
    for (const ExecItem& e : kernels_of(c, "hip:0")) {
      ProgramSpec spec = to_program(e.ast, dev->target());
      kiln_lir lir = spec.lir.view();
      text += "// ---- " + spec.name + "\n" + dev->render(lir);
    }
    EXPECT_GOLDEN("hip/" + c.name, text);
  }
}

// Every kernel of every op-corpus case compiles, for each of the three archs, to an AMDGPU code
// object: EM_AMDGPU, the arch in e_flags, the kernel symbol and its 64-byte descriptor, and the
// buffer count the launch checks. (Straight through the device's compiler: no compile cache.)
TEST(HipOffline, WholeCorpusIsValidCodeObjectsForThreeArchs) {
  size_t kernels = 0;
  for (const Arch& a : kArchs) {
    auto dev = device(a.device);
    SCOPED_TRACE(a.name);
    for (const OpCase& c : op_corpus()) {
      SCOPED_TRACE(c.name);
      for (const ExecItem& e : kernels_of(c, a.device)) {
        ProgramSpec spec = to_program(e.ast, dev->target());
        kiln_lir lir = spec.lir.view();
        expect_valid_code_object(dev->compile(dev->render(lir), spec.name), spec.name, a.mach, spec.lir.n_buffers);
        ++kernels;
      }
    }
  }
  EXPECT_GT(kernels, 3 * op_corpus().size());
}

// ... and load() accepts what the runtime's compile path (with its cache) produces.
TEST(HipOffline, WholeCorpusLoadsForGfx1100) {
  auto dev = device("hip:2");
  for (const OpCase& c : op_corpus()) {
    SCOPED_TRACE(c.name);
    for (const ExecItem& e : kernels_of(c, "hip:2")) {
      std::shared_ptr<runtime::Kernel> k;
      EXPECT_NO_THROW(k = runtime::get_kernel(dev, e.ast));
      if (k) {
        EXPECT_EQ(k->program->entry(), k->spec.name);
      }
    }
  }
}

// compile_many: one clang run, one code object holding every kernel of a schedule; each kernel
// is valid in it and loads from it by its own entry.
TEST(HipOffline, AScheduleCompilesToOneCodeObject) {
  auto dev = device("hip:2");
  ASSERT_TRUE(dev->has_compile_many());
  std::vector<std::pair<std::string, std::string>> kernels;
  std::vector<ProgramSpec> specs;
  for (const ExecItem& e : Tensor::empty({64, 256}, dtypes::float32, "hip:2").softmax().schedule()) {
    if (e.is_copy) continue;
    specs.push_back(to_program(e.ast, dev->target()));
    kernels.push_back({dev->render(specs.back().lir.view()), specs.back().name});
  }
  ASSERT_EQ(kernels.size(), 2u);  // softmax: the row max and sum of exp, then the normalising pass
  std::string binary = dev->compile_many(kernels);
  for (const ProgramSpec& spec : specs) {
    SCOPED_TRACE(spec.name);
    expect_valid_code_object(binary, spec.name, kArchs[2].mach, spec.lir.n_buffers);
    EXPECT_NO_THROW(dev->load(binary, spec.name));
  }
  std::string broken = kiln::testing::error_of([&] {
    dev->compile_many({kernels[0], {"extern \"C\" __attribute__((global)) void k() { nope(); }", "k"}});
  });
  EXPECT_CONTAINS(broken, "compiling kernels '" + specs[0].name + "', 'k' for gfx1100 failed");
}

TEST(HipOffline, WhatNeedsAGpuIsUnavailableNotACrash) {
  auto dev = device("hip:2");
  ErrorCode code{};
  std::string alloc = error_of([&] { dev->alloc(16); }, &code);
  EXPECT_EQ(code, ErrorCode::unavailable);
  EXPECT_CONTAINS(alloc, "offline compiler for gfx1100");
  EXPECT_THROW(Tensor::from_vector<float>({1, 2}, {2}, "hip:2").to_vector<float>(), Error);
  // a launch is checked against the kernel's argument counts before it is refused
  const char* src = R"(extern "C" __attribute__((device, used)) const unsigned int kiln_nargs_k[2] = {1u, 1u};
extern "C" __attribute__((global)) void k(float* __restrict__ data0, long long n_arg) { data0[0] = (float)n_arg; }
)";
  auto program = dev->load(dev->compile(src, "k"), "k");
  uint32_t grid[3] = {1, 1, 1};
  std::string args = error_of([&] { dev->launch(*program, {}, {}, {}, grid, grid, true); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(args, "kernel 'k' takes 1 buffers and 1 values, the launch passed 0 buffers and 0 values");
}

TEST(HipOffline, BadBinariesAndSourcesAreErrors) {
  auto dev = device("hip:0");
  ErrorCode code{};
  std::string junk = error_of([&] { dev->load("definitely not ELF", "k"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(junk, "not a valid AMDGPU code object");
  const char* src = R"(extern "C" __attribute__((global)) void k(float* __restrict__ data0) { data0[0] = 1.0f; })";
  std::string binary = dev->compile(src, "k");
  std::string missing = error_of([&] { dev->load(binary, "other"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(missing, "does not define the kernel 'other'");
  std::string broken = error_of([&] { dev->compile("extern \"C\" __attribute__((global)) void k() { nope(); }", "k"); }, &code);
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_CONTAINS(broken, "compiling kernel 'k' for gfx90a failed");
  EXPECT_CONTAINS(broken, "nope");  // clang's diagnostic
  EXPECT_CONTAINS(broken, "--offload-arch=gfx90a");
  // corrupting a real code object anywhere gives an error or a valid parse, never a crash
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
