// runtime/jit.hpp - a captured plan: the items one call of a function ran, replayed on new buffers.
//
// kiln::Jit (tensor/jit.cpp) captures its second call: while a Capture is active on a thread, every
// realize on that thread records the prepared items it runs (runtime/prepared.hpp: device handles,
// loaded programs, launch dims, buffers) with the variable values it bound. A Plan is made from
// them once:
//
//   input slots    a buffer position of an item that held one of the call's inputs; replay puts
//                  that call's input storage there (the handle, for a kernel; the host pointer for
//                  the reference device).
//   variables      an item whose kernel reads a variable, or whose launch dims depend on one, gets
//                  the new values (and dims, evaluated and checked) from replay's values.
//   everything else stays as captured: weights (buffers the function read but was not given) by
//                  reference, so an assign to them between calls is seen; outputs and
//                  intermediates are owned by the plan. Intermediates that no tensor outside the
//                  plan can see are planned once over the whole plan: a buffer whose last use came
//                  before another one's first use lends it its memory (same device, large enough),
//                  so a plan made of several realizes needs no more memory than one schedule would.
//
// Replay runs the items in order with no graph, schedule, hash or allocation: a few pointer stores
// per input slot, then the launches, where a device offers it a run of consecutive kernels in one
// plugin call (launch_many: OpenCL enqueues them all and flushes once). Like realize, replays are
// serialised by the caller.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/plugin.h"
#include "runtime/lanes.hpp"
#include "runtime/prepared.hpp"

namespace kiln::runtime {

// Records the items that realizes on this thread run while it is alive (one at a time per thread).
class Capture {
 public:
  Capture();
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  static Capture* active();  // this thread's, or null
  void stop();               // no longer records (the destructor stops too)
  void record(const std::vector<PreparedItem>& items, const VarVals& vals);

  struct Step {
    PreparedItem item;
    size_t vals;  // index into `vals` (the values of the realize that ran it)
  };
  std::vector<Step> steps;
  std::vector<VarVals> vals;

 private:
  Capture* previous_;
  bool stopped_ = false;
};

class Plan {
 public:
  // `inputs`: the storages of the captured call's inputs, in order (one storage may be given twice:
  // its slots go to the first); `var_names`: the names of the call's variables, in order.
  Plan(Capture&& capture, std::vector<std::shared_ptr<Storage>> inputs, std::vector<std::string> var_names);
  Plan(const Plan&) = delete;  // (a Batch points into itself)
  Plan& operator=(const Plan&) = delete;

  size_t size() const { return items_.size(); }
  size_t input_slots() const { return slots_.size(); }
  uint64_t planned_bytes() const { return planned_bytes_; }      // intermediates after planning
  uint64_t unplanned_bytes() const { return unplanned_bytes_; }  // ... and as captured

  // Binds this call's inputs (as many and in the order of the capture's; allocated) and variable
  // values (in var_names order), then runs every item in order. An input that is a buffer the plan
  // itself holds (an output of the previous replay passed back, a weight) is first copied to a
  // scratch buffer of the plan's, so no kernel reads a buffer it or an earlier item writes. The
  // plan keeps no reference to the inputs after the call.
  void replay(std::span<const std::shared_ptr<Storage>> inputs, std::span<const int64_t> values);

  // Whether replay hands runs of consecutive kernels on one device to the plugin in one call
  // (kiln_runtime_api.launch_many, where the plugin has it; on by default). Off, or with
  // KILN_DEBUG >= 2 or a Profile active (launches are timed one by one), items run one by one.
  void set_batched(bool on) { batched_ = on; }
  size_t batches() const { return batches_.size(); }  // runs of two or more kernels sent together

 private:
  struct Slot {
    uint32_t item, position, input;
  };
  struct VarUse {  // variable `var` of the call is entry `entry` of vals_[set]
    uint32_t set, entry, var;
  };
  // Consecutive kernel items [begin, end) on a device with launch_many, and their parameter packs
  // (filled again from the items at each replay: the slots' handles may have changed).
  struct Batch {
    uint32_t begin, end;
    Device* device;
    std::vector<kiln_program*> programs;
    std::vector<kiln_launch_params> params;
    std::vector<const kiln_launch_params*> pointers;
  };
  void plan_intermediates(const std::vector<std::shared_ptr<Storage>>& inputs);
  void plan_batches();
  void run_batched();

  std::vector<PreparedItem> items_;
  std::vector<size_t> item_vals_;     // items_[i] ran with vals_[item_vals_[i]]
  std::vector<VarVals> vals_;         // as captured; replay writes the new values in place
  std::vector<uint32_t> var_items_;   // items that read a variable (values or launch dims)
  std::vector<VarUse> var_uses_;
  std::vector<Slot> slots_;
  std::vector<const Storage*> held_;                 // every storage the items hold, sorted
  std::vector<std::shared_ptr<Storage>> scratch_;    // per input: its copy when it is one of held_
  std::vector<std::shared_ptr<Storage>> binding_;    // per input, during a replay: what its slots get
  void unbind_inputs();
  std::vector<Batch> batches_;
  bool batched_ = true;
  LanePlan lanes_;  // several devices: which items wait for which
  uint64_t planned_bytes_ = 0, unplanned_bytes_ = 0;
};

}  // namespace kiln::runtime
