// tensor/realize_groups.cpp - realize_in_groups: one schedule, its items reordered so that the
// groups' results are done one after another, a callback between items as each group completes.
//
// The reorder keeps every dependency the items have through their buffers (read after write,
// write after read, write after write: the last includes the memory planner's reuse of one
// allocation by several intermediates), so each item sees the buffers it would have seen in
// schedule order and computes the same bits. The kernels are the schedule's own: nothing is
// realized separately, so shared intermediates (the forward pass, the gradient flowing back) are
// computed once.
#include "tensor/realize_groups.hpp"

#include <algorithm>
#include <unordered_map>

#include "runtime/buffer.hpp"
#include "runtime/jit.hpp"
#include "runtime/lanes.hpp"
#include "runtime/prepared.hpp"

namespace kiln::detail {

bool jit_capturing() { return runtime::Capture::active() != nullptr; }

void realize_in_groups(std::vector<Tensor>& tensors, const std::vector<std::vector<size_t>>& groups, const GroupReady& ready) {
  size_t reported = 0;  // groups [0, reported) were handed to `ready`
  ItemRunner run = [&](const std::vector<runtime::PreparedItem>& items, const std::vector<std::optional<UOp>>& out) {
    const size_t n = items.size();
    // which items write each group's buffers; a group with a tensor that is no output waits for the end
    std::unordered_map<const runtime::Storage*, std::vector<size_t>> groups_of;  // output storage -> groups
    std::vector<char> late(groups.size(), 0);
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t i : groups[g]) {
        if (!out[i]) { late[g] = 1; continue; }
        groups_of[runtime::storage_of(*out[i]).get()].push_back(g);
      }
    std::vector<size_t> writers_left(groups.size(), 0);
    std::vector<std::vector<size_t>> item_groups(n);  // the groups whose buffers item i writes
    for (size_t i = 0; i < n; ++i) {
      const uint64_t written = items[i].kernel->written;
      for (size_t b = 0; b < items[i].storages.size() && b < 64; ++b) {
        if (!(written >> b & 1)) continue;
        auto it = groups_of.find(items[i].storages[b].get());
        if (it == groups_of.end()) continue;
        for (size_t g : it->second)
          if (std::find(item_groups[i].begin(), item_groups[i].end(), g) == item_groups[i].end()) {
            item_groups[i].push_back(g);
            ++writers_left[g];
          }
      }
    }
    GroupRead read = [&](size_t i, void* dst, uint64_t bytes) { runtime::read_buffer(*out[i], dst, bytes); };
    auto report = [&](bool at_end) {  // every complete group in order, stopping at the first one that is not
      while (reported < groups.size() && !late[reported] && (at_end || writers_left[reported] == 0)) ready(reported++, read);
    };
    if (runtime::plan_lanes(items).lanes > 1) {  // several devices run at once: no order to choose
      runtime::run_items(items);
      report(true);
      return;
    }
    // the order: group 0's items and everything they need (in schedule order), then group 1's, ...
    std::vector<std::vector<uint32_t>> deps = runtime::item_dependencies(items);
    std::vector<char> placed(n, 0);
    std::vector<uint32_t> order;
    order.reserve(n);
    auto place_with_deps = [&](std::vector<uint32_t> todo) {
      std::vector<uint32_t> picked;
      while (!todo.empty()) {
        uint32_t i = todo.back();
        todo.pop_back();
        if (placed[i]) continue;
        placed[i] = 1;
        picked.push_back(i);
        for (uint32_t j : deps[i]) todo.push_back(j);
      }
      std::sort(picked.begin(), picked.end());  // schedule order among themselves: every dependency is earlier
      order.insert(order.end(), picked.begin(), picked.end());
    };
    for (size_t g = 0; g < groups.size(); ++g) {
      std::vector<uint32_t> writers;
      for (size_t i = 0; i < n; ++i)
        if (std::find(item_groups[i].begin(), item_groups[i].end(), g) != item_groups[i].end()) writers.push_back(static_cast<uint32_t>(i));
      place_with_deps(std::move(writers));
    }
    std::vector<uint32_t> rest;
    for (size_t i = 0; i < n; ++i)
      if (!placed[i]) rest.push_back(static_cast<uint32_t>(i));
    place_with_deps(std::move(rest));
    report(false);  // groups with nothing to compute
    for (uint32_t i : order) {
      items[i].run();
      for (size_t g : item_groups[i]) --writers_left[g];
      report(false);
    }
    report(true);
  };
  realize_all_with(tensors, &run);
  if (reported == groups.size()) return;
  GroupRead read = [&](size_t i, void* dst, uint64_t bytes) { tensors[i].to_bytes(dst, bytes); };
  while (reported < groups.size()) ready(reported++, read);
}

}  // namespace kiln::detail
