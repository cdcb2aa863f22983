// codegen/pipeline.hpp - from a kernel AST to LIR for a target, and the named steps on the way.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "codegen/lir.hpp"
#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"

namespace kiln {

struct Target;

// A kernel lowered for one target: its LIR, launch geometry and estimates.
struct ProgramSpec {
  std::string name;
  UOp ast;                   // the scheduler's kernel
  UOp sink;                  // after full_rewrite_to_sink
  LirProgram lir;
  LaunchDims dims;           // index expressions; symbolic ones are evaluated per launch
  std::vector<std::string> var_names;  // kernel variables in slot order
  std::vector<Opt> opts;     // optimisation actions applied
  double flops = 0, bytes = 0;  // estimates (float ops, bytes of buffers touched)
};

// What a step of the pass list sees besides the kernel: the target, the launch geometry it fills,
// and the actions (`given` ones to apply, `opts` receiving the ones applied; both may be null).
struct PassContext {
  const Target& target;
  LaunchDims& dims;
  std::vector<Opt>* opts;
  const std::vector<Opt>* given;
};

// One named step of the pass list.
struct CodegenPass {
  const char* name;
  UOp (*run)(const UOp& sink, PassContext& ctx);
};

// The pass list, in order (pipeline.cpp). full_rewrite_to_sink runs exactly these, each through
// traced_step (rewrite/graph_rewrite.hpp) under its name.
std::span<const CodegenPass> codegen_passes();

// The pass list (see pipeline.cpp): optimise, expand, lower, decompose.
// `given`: these actions instead of the heuristic's (checked; an error names the first that does
// not apply). `opts` receives the actions applied.
UOp full_rewrite_to_sink(const UOp& ast, const Target& target, LaunchDims& dims, std::vector<Opt>* opts = nullptr,
                         const std::vector<Opt>* given = nullptr);
// The kernel as the "apply opts" step sees it (the steps before it, untraced): what a given list
// of actions is validated against, and what a search enumerates actions on. With `given`, as it
// sees that list (an early step may keep the scheduler's kernel for it: reuse_row_values).
UOp kernel_for_opts(const UOp& ast, const Target& target, const std::vector<Opt>* given = nullptr);
std::vector<UOp> do_linearize(const UOp& sink);
// The plugin boundary's rule (docs/architecture.md §5): the renderer never sees an op or dtype
// its target does not list.
// What is left after decompose() has no decomposition; throws kiln::Error (unimplemented) naming
// the kernel, the op and the dtype, instead of letting the backend's compiler fail on it.
void check_target_support(const std::vector<UOp>& program, const Target& target, const std::string& kernel);
// A launch of `global` workgroups of `local` items in dimension d must fit the target's limits
// (past them the size would be cut to 32 bits or refused by the driver); throws kiln::Error
// (resource_exhausted) naming the kernel, the sizes and the limits. to_program checks constant
// sizes, the runtime the ones that depend on variables.
void check_launch_size(const Target& target, const std::string& kernel, int d, int64_t global, int64_t local);
// full_rewrite_to_sink + do_linearize + check_target_support + LIR serialisation. Thread-safe.
// do_render and do_compile, the steps after it, need a device: runtime/program_cache.cpp.
ProgramSpec to_program(const UOp& ast, const Target& target, const std::vector<Opt>* given = nullptr);

}  // namespace kiln
