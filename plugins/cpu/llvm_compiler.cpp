// plugins/cpu/llvm_compiler.cpp - LLVM IR -> ELF object inside the process, with LLVM 15.
//
// The only file of the cpu backend that includes LLVM headers (they are slow to compile).
// Per kernel: parse the IR, give every function the host's CPU and features, verify, run kiln's
// pass pipeline (pipeline_text(): the parts of O2 that kiln's kernels need), emit an object with
// the TargetMachine; the in-plugin ELF loader loads it like an
// object from clang -c. The host CPU name may be unknown to LLVM 15 (it reports "generic" for
// Zen 5), but the features are detected, so the vector code uses every extension the host has.
#include <mutex>
#include <sstream>

#include "compiler.hpp"
#include "kiln/sdk.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <llvm/ADT/StringMap.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace kiln::cpu {
namespace {

struct Host {
  std::string triple, cpu, features;
  const llvm::Target* target = nullptr;
};

const Host& host() {
  static const Host h = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    Host h;
    h.triple = llvm::sys::getProcessTriple();
    h.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> features;
    if (llvm::sys::getHostCPUFeatures(features)) {
      std::vector<std::string> on;
      for (const auto& f : features) on.push_back((f.getValue() ? "+" : "-") + f.getKey().str());
      std::sort(on.begin(), on.end());  // StringMap order is unspecified; the cache key must be stable
      for (const std::string& f : on) h.features += (h.features.empty() ? "" : ",") + f;
    }
    std::string error;
    h.target = llvm::TargetRegistry::lookupTarget(h.triple, error);
    if (!h.target) throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION, "LLVM has no target for " + h.triple + ": " + error};
    return h;
  }();
  return h;
}

class LlvmCompiler final : public KernelCompiler {
 public:
  // An x86-64 level is an LLVM CPU name whose features LLVM knows: no host features are added.
  // `features`: LLVM's "+name" list beyond the level (the isa option's extensions).
  LlvmCompiler(const std::string& isa, const std::string& features)
      : cpu_(isa.empty() ? host().cpu : isa), features_(isa.empty() ? host().features : features) {}

  std::string cache_key() override {
    const Host& h = host();
    return std::string("llvm ") + LLVM_VERSION_STRING + "|kiln-pipeline-1|" + h.triple + "|" + cpu_ + "|" + features_;
  }

  std::string compile(const std::string& source, const std::string& entry, const std::string& extra_options,
                      std::string& log) override {
    if (!extra_options.empty())
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "the in-process LLVM compiler takes no options (got '" + extra_options +
                                                         "'); set [backends.cpu.options] compiler = \"clang-15\" to pass flags"};
    llvm::LLVMContext ctx;
    Optimized m = optimized(ctx, source, entry, log);
    llvm::SmallVector<char, 0> object;
    llvm::raw_svector_ostream out(object);
    llvm::legacy::PassManager codegen;
    if (m.tm->addPassesToEmitFile(codegen, out, nullptr, llvm::CGFT_ObjectFile))
      throw sdk::Error{KILN_STATUS_INTERNAL, "LLVM cannot emit an object file for " + host().triple};
    codegen.run(*m.mod);
    log.clear();
    return std::string(object.begin(), object.end());
  }

  // The module after the optimisation pipeline, as text (llvm_optimized_ir).
  std::string optimized_text(const std::string& source) {
    llvm::LLVMContext ctx;
    std::string log, text;
    Optimized m = optimized(ctx, source, "kernel", log);
    llvm::raw_string_ostream os(text);
    m.mod->print(os, nullptr);
    return os.str();
  }

 private:
  std::string cpu_, features_;

  struct Optimized {
    std::unique_ptr<llvm::Module> mod;
    std::unique_ptr<llvm::TargetMachine> tm;
  };

  // Parses, verifies and optimises `source` for this compiler's CPU; errors name `entry`.
  Optimized optimized(llvm::LLVMContext& ctx, const std::string& source, const std::string& entry, std::string& log) {
    const Host& h = host();
    llvm::SMDiagnostic diag;
    std::string file = entry + ".ll";  // parse errors read "NAME.ll:line:col: error: ..."
    Optimized m;
    m.mod = llvm::parseAssembly(llvm::MemoryBufferRef(source, file), diag, ctx);
    if (!m.mod) {
      std::string text;
      llvm::raw_string_ostream os(text);
      diag.print(nullptr, os, /*ShowColors=*/false);
      log = os.str();
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compiling kernel '" + entry + "' failed: the LLVM IR does not parse:\n" + log};
    }
    m.tm.reset(h.target->createTargetMachine(h.triple, cpu_, features_, llvm::TargetOptions(), llvm::Reloc::PIC_,
                                             llvm::CodeModel::Small, llvm::CodeGenOpt::Aggressive));
    if (!m.tm) throw sdk::Error{KILN_STATUS_INTERNAL, "LLVM could not create a target machine for " + h.triple};
    m.mod->setTargetTriple(h.triple);
    m.mod->setDataLayout(m.tm->createDataLayout());
    for (llvm::Function& f : *m.mod) {
      if (f.isDeclaration()) continue;
      f.addFnAttr("target-cpu", cpu_);
      f.addFnAttr("target-features", features_);
    }
    std::string problems;
    llvm::raw_string_ostream vs(problems);
    if (llvm::verifyModule(*m.mod, &vs)) {
      log = vs.str();
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compiling kernel '" + entry + "' failed: invalid LLVM IR:\n" + log};
    }
    optimize(*m.mod, *m.tm);
    return m;
  }

  static void optimize(llvm::Module& mod, llvm::TargetMachine& tm) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&tm);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    if (llvm::Error err = pb.parsePassPipeline(mpm, pipeline_text()))
      throw sdk::Error{KILN_STATUS_INTERNAL, "the cpu backend's LLVM pass pipeline does not parse: " + llvm::toString(std::move(err))};
    mpm.run(mod, mam);
  }

  // The passes every kernel gets, in order. Not O2: O2 spent 50-300 ms a kernel on a 3x3
  // convolution's register tile (its inliner machinery, LICM and DSE over the tile's loads,
  // repeated instcombine/GVN rounds) and bought nothing at run time there, because kiln's own
  // actions already unrolled and vectorized the tile. What O2 did that mattered is kept: SSA
  // for the accumulators, loop-invariant hoisting, full unrolling of short constant loops, the
  // loop vectorizer for loops kiln left scalar (a stride-2 pool's output row: 3.7x slower
  // without it) and SLP for the scalar chains of an epilogue. Measured on ResNet-18, MobileNetV2,
  // a BERT encoder and `kiln bench` (docs/performance.md): the same steady times, a third of the
  // compile time.
  static const std::string& pipeline_text() {
    static const std::string text = [] {
      const char* const function_passes[] = {
          "sroa",                      // accumulators and staged tiles held in allocas -> SSA values
          "early-cse<memssa>",         // the render's repeated index math and loads
          "instcombine", "simplifycfg",
          "loop(loop-rotate)",         // loops in do-while form, so LICM and the vectorizer apply
          "loop-mssa(licm)",           // loads and index math that do not change in a loop hoisted out
          "loop(indvars,loop-unroll-full)",  // short constant loops (a 3x3 window) unrolled
          "simplifycfg", "instcombine",
          "gvn",                       // loads repeated across the unrolled copies
          "loop-vectorize",            // innermost loops kiln left scalar
          "instcombine", "simplifycfg",
          "slp-vectorizer",            // isomorphic scalar chains (a register tile's epilogue) packed
          "instcombine", "simplifycfg",
          // Addresses a constant apart share one register: kiln's index math is int32 and each
          // address is sext(i + c) (a tile's row of B, a filter's taps), which x86 cannot fold
          // into an addressing mode, so every load paid an add and a sign extension of its own
          // (47 instructions for 16 FMAs in a 3x3 convolution's loop, issue-bound; 33 with the
          // constant parts split off as GEP offsets and the common part computed once).
          "separate-const-offset-from-gep", "early-cse", "instcombine",
      };
      std::string t = "always-inline,function(";  // the kernel's body into its launch wrapper first
      for (const char* p : function_passes) t += std::string(p) + ",";
      t.back() = ')';
      return t;
    }();
    return text;
  }
};

}  // namespace

std::unique_ptr<KernelCompiler> make_llvm_compiler(const std::string& isa, const std::string& features) {
  return std::make_unique<LlvmCompiler>(isa, features);
}

std::string llvm_optimized_ir(const std::string& source, const std::string& isa, const std::string& features) {
  return LlvmCompiler(isa, features).optimized_text(source);
}

}  // namespace kiln::cpu
