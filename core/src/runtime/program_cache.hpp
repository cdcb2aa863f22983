// runtime/program_cache.hpp - kernels compiled and loaded per (AST, device).
//
// get_kernel lowers a scheduler kernel for the device's target (codegen), renders it with the
// device's renderer, compiles it through the compile cache and loads it. Results are kept per
// (AST fingerprint, device, KILN_NOOPT), so the second schedule of the same program launches at
// once. Thread-safe; independent kernels may be built in parallel (build_kernels). Launching is
// runtime/prepared.hpp's: a prepared kernel holds its Kernel, so a launch looks nothing up here.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/pipeline.hpp"
#include "kiln/tensor.hpp"

namespace kiln {
class Device;
struct Target;
class Program;
}

namespace kiln::runtime {

struct Kernel {
  ProgramSpec spec;
  std::string source;
  std::shared_ptr<Device> device;
  std::shared_ptr<Program> program;
};

std::shared_ptr<Kernel> get_kernel(const std::shared_ptr<Device>& dev, const UOp& ast);
// Builds the (device, AST) kernels that are not cached yet, several at a time.
void build_kernels(const std::vector<std::pair<std::shared_ptr<Device>, UOp>>& kernels);
// Tests only: lower every kernel for `target` instead of its device's own target (simulated caps a
// host lacks: wider vectors, more threads); nullptr restores. Clears the program cache; `target`
// must outlive its use. The device still renders, compiles and runs the result.
void set_target_override(const Target* target);
// Whether `device` runs row kernels (Target::runs_rows; the scheduler's row fusion asks): its
// target's answer, set_target_override's target's when one is set; false for "ref" and devices
// that do not open.
bool runs_rows(const std::string& device);
// Tests only: the actions each kernel gets (nullopt: the heuristic's), e.g. random valid lists
// checked against the reference; an empty function restores. Clears the program cache; applied as
// a given list (an action that does not apply is an error).
using OptsOverride = std::function<std::optional<std::vector<Opt>>(const UOp& ast, const Target& target)>;
void set_opts_override(OptsOverride chooser);
// Progress of kernel builds, for displays (`kiln run`'s stderr line). While set, the observer is
// called once per kernel the program cache builds (one not in it yet), as soon as its binary is
// ready (compiled, or read from the compile cache) and before it is loaded: `done` of `total`
// kernels of this batch (a schedule's new kernels built together; 1 of 1 when built alone), the
// kernel's name and device, and whether it was compiled now. It may be called from the build's
// worker threads, several at once: it must be thread-safe and cheap, and must not realize tensors.
// An empty function removes it. A kernel whose build fails is not reported.
struct BuildProgress {
  size_t done = 0, total = 0;
  std::string kernel, device;
  bool compiled = false;
};
void set_build_observer(std::function<void(const BuildProgress&)> observer);
size_t program_cache_size();
void clear_program_cache();
// Bumped by clear_program_cache: a kernel prepared in an older generation is stale.
uint64_t program_cache_generation();

}  // namespace kiln::runtime
