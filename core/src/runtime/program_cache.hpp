// runtime/program_cache.hpp - kernels compiled and loaded per (AST, device).
//
// get_kernel lowers a scheduler kernel for the device's target (codegen), renders it with the
// device's renderer, compiles it through the compile cache and loads it. Results are kept per
// (AST fingerprint, device, KILN_NOOPT), so the second schedule of the same program launches at
// once. Thread-safe; independent kernels may be prepared in parallel (prepare_kernels).
#pragma once
#include <memory>
#include <string>
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
// Compiles the kernels of `items` that are not cached yet, several at a time.
void prepare_kernels(const std::vector<ExecItem>& items);
// Tests only: lower every kernel for `target` instead of its device's own target (simulated caps a
// host lacks: wider vectors, more threads); nullptr restores. Clears the program cache; `target`
// must outlive its use. The device still renders, compiles and runs the result.
void set_target_override(const Target* target);
size_t program_cache_size();
void clear_program_cache();

}  // namespace kiln::runtime
