// runtime/prepared.hpp - schedule items resolved once and launched with handles.
//
// The seam between scheduling and running, and what a JIT replays. A schedule names a call's
// device by string and its kernel by AST; resolving those (device names through the registry,
// the program cache's key and lock, variables by name) is done once, here, not per launch:
//
//   PreparedKernel  what stays the same across runs of one cached schedule: the kind of call, the
//                   device handles, the loaded program and its spec, where each of the kernel's
//                   variables sits in the schedule's values, the launch dims when they are constant.
//                   A schedule-cache template keeps its calls' PreparedKernels (PreparedKernels),
//                   so a cached schedule resolves nothing again.
//   PreparedItem    one launch: a PreparedKernel bound to concrete buffers (storages, allocated on
//                   the kernel's device handle, and their device buffers) and to variable values
//                   (in the kernel's slot order), launch dims evaluated and checked.
//
// Contract of PreparedItem::run(): it launches with the handles it holds, and does no device-name
// resolution, string matching, cache lookup or lock in kiln (a plugin that is not thread-safe
// still serialises its own calls, plugin/device.hpp); profiling and KILN_DEBUG timing are two
// atomic reads when off. An item keeps its storages, device and program alive, so it may be run
// again and again (the same buffers, the same values); other buffers or values need bind_call() again.
// Items of one device run in schedule order (run_items); like realize, running is serialised by the caller.
//
// A PreparedKernel is stale once the program cache was cleared (clear_program_cache,
// set_target_override) or KILN_NOOPT changed; PreparedKernels re-prepares stale entries.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/uop.hpp"
#include "runtime/reference.hpp"
#include "schedule/kernelize.hpp"

struct kiln_buffer;

namespace kiln {
class Device;
}

namespace kiln::runtime {

struct Kernel;
class Storage;
using VarVals = std::vector<std::pair<std::string, int64_t>>;

enum class CallKind : uint8_t {
  kernel,     // a compiled kernel on a plugin device
  reference,  // a kernel AST interpreted by the reference executor (device "ref")
  copy,       // a COPY between two buffers (host memory or plugin devices)
};

struct PreparedKernel {
  CallKind kind = CallKind::kernel;
  std::string name;         // for logs and errors only
  std::string device_name;  // the call's device (its output buffer's), for logs only
  UOp ast;           // the kernel AST or the COPY node
  // kernel: where it runs (every buffer is on it); copy: the destination's device (null when it is
  // host memory); reference: null
  std::shared_ptr<Device> device;
  std::shared_ptr<Device> src_device;  // copy: the source's device (null when host memory)
  uint64_t written = 1;                // bit i: the call writes buffer i (others it only reads); a copy writes its first
  std::shared_ptr<Kernel> kernel;      // kernel: the loaded program and its spec
  std::vector<uint32_t> var_slots;     // kernel: its variable i is the schedule's value var_slots[i]
  size_t n_values = 0;                 // how many values the schedule binds (checked by bind_call)
  bool static_dims = true;             // kernel: global/local below are the launch dims
  uint32_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  std::vector<std::pair<UOp, uint32_t>> dim_vars;  // symbolic dims: DEFINE_VAR -> value slot
  uint64_t generation = 0;             // the program cache's generation it was prepared in
  int64_t noopt = 0;                   // KILN_NOOPT it was prepared with

  bool current() const;  // false once stale (see above)
};

struct PreparedItem {
  std::shared_ptr<const PreparedKernel> kernel;
  std::vector<std::shared_ptr<Storage>> storages;  // the call's buffers in parameter order, the outputs first
  std::vector<kiln_buffer*> handles;               // kernel: the storages' device buffers
  std::vector<HostBuffer> host;                    // reference: the storages' host memory
  std::vector<int64_t> values;                     // kernel: its variables' values, in slot order
  VarVals named;                                   // reference: the values by name (the interpreter's form)
  uint64_t copy_bytes = 0;                         // copy
  uint32_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};

  void run() const;
};

// One call of a schedule: a kernel AST or COPY node, its BUFFER nodes (the outputs first; the first
// one's device is where it runs) and the values the schedule binds.
struct CallRef {
  UOp body;
  std::span<const UOp> buffers;
  const VarVals* vals;
};

// Resolves the calls' devices by name (once per device per call of this function) and gets their
// programs (compiling what is new, several at a time). Kernels on "ref" are interpreted; COPY
// bodies copy.
std::vector<std::shared_ptr<const PreparedKernel>> prepare_kernels(std::span<const CallRef> calls);

// Binds a prepared kernel to buffers and values (in the order prepare_kernels was given): looks up
// the buffers' storages and allocates them on the prepared device handles.
PreparedItem bind_call(std::shared_ptr<const PreparedKernel> kernel, std::span<const UOp> buffers, const VarVals& vals);
// The same with the buffers' storages looked up already (storages_of: one lock for many calls).
PreparedItem bind_call(std::shared_ptr<const PreparedKernel> kernel, std::span<const UOp> buffers,
                       std::vector<std::shared_ptr<Storage>> storages, const VarVals& vals);

// Sets an item's variable values and launch dims (checked) from `vals`, the values of the schedule
// it was prepared for (same names, same order): the part of bind_call a JIT replay redoes when only
// the values changed.
void bind_values(PreparedItem& item, const VarVals& vals);

// The prepared kernels of one cached schedule, in call order, filled on its first run (and again
// when stale); a schedule template's state (schedule/kernelize.hpp). Thread-safe; one lock of its
// own and one of the buffer table per prepare(), none per item or buffer.
class PreparedKernels final : public TemplateState {
 public:
  // The items of LINEAR(CALL(body, buffers...)...) for these values, ready to run.
  std::vector<PreparedItem> prepare(const UOp& linear, const VarVals& vals);

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<const PreparedKernel>> kernels_;
  std::vector<std::string> names_;  // the values' names kernels_ was prepared for, in order
};

// Runs items: in order on one device, each device on its own thread when there are several
// (runtime/lanes.hpp).
void run_items(const std::vector<PreparedItem>& items);

}  // namespace kiln::runtime
