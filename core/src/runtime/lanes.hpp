// runtime/lanes.hpp - running the items of one schedule on several devices at once.
//
// Each device is a lane: its items run in schedule order on one thread (the caller's for the
// first lane, a parked worker for each other), and an item waits only for the earlier items of
// other lanes it conflicts with: the last writer of a buffer it reads or writes (RAW, WAW), and
// the readers since then of a buffer it writes (WAR). A copy runs on its destination's lane (the source's when the destination
// is host memory); host work (reference kernels, host-to-host copies) on a lane of its own. A
// schedule on one device runs in order on the caller's thread, as before.
//
// An item that throws stops its lane and every item that depends on it; the first error is
// rethrown once every lane has stopped.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/prepared.hpp"

namespace kiln::runtime {

struct LanePlan {
  uint32_t lanes = 1;
  std::vector<uint32_t> lane;                // per item
  std::vector<std::vector<uint32_t>> waits;  // per item: earlier items of other lanes it needs
};

LanePlan plan_lanes(const std::vector<PreparedItem>& items);
// Per item: the earlier items it must follow through the buffers they share (the last writer of
// a buffer it reads or writes; the readers since then of a buffer it writes), in first-need order.
std::vector<std::vector<uint32_t>> item_dependencies(const std::vector<PreparedItem>& items);
// Runs the items as `plan` says (plan_lanes of these items, or of items with the same buffers).
void run_lanes(const std::vector<PreparedItem>& items, const LanePlan& plan);

}  // namespace kiln::runtime
