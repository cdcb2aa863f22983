// codegen/pipeline.hpp - from a kernel AST to LIR for a target, and the named steps on the way.
#pragma once
#include <string>
#include <vector>

#include "codegen/lir.hpp"
#include "codegen/opt.hpp"
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

// The pass list (see pipeline.cpp): optimise, expand, lower, decompose.
UOp full_rewrite_to_sink(const UOp& ast, const Target& target, LaunchDims& dims, std::vector<Opt>* opts = nullptr);
std::vector<UOp> do_linearize(const UOp& sink);
// full_rewrite_to_sink + do_linearize + LIR serialisation. Thread-safe.
ProgramSpec to_program(const UOp& ast, const Target& target);

}  // namespace kiln
