// tensor/realize_groups.hpp - a realize whose results are read in groups while it still runs: the
// hook kiln::dist uses to all-reduce the gradients of the last layers while the backward pass
// computes the first layers' (docs/dist.md, "What is and is not overlapped"). libkiln knows
// nothing of MPI: the caller's callback does whatever it wants with a finished group.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::runtime {
struct PreparedItem;
}

namespace kiln::detail {

// How a realize runs its schedule's items (all of them, respecting their buffer dependencies):
// `out[i]` is the BUFFER that tensors[i] of the realize views once it is done (computed by these
// items, or realized before), nullopt when it is none (a multi-device tensor, a view of an assign).
using ItemRunner = std::function<void(const std::vector<runtime::PreparedItem>& items, const std::vector<std::optional<UOp>>& out)>;
// Tensor::realize_all with `run` (null: runtime::run_items) running the items. Not used while a
// kiln::Jit captures (it replays kernels only): then the items run as usual, `run` is not called.
void realize_all_with(std::vector<Tensor>& tensors, const ItemRunner* run);

// Reads the first `bytes` bytes of tensors[i] into dst (inside a GroupReady callback).
using GroupRead = std::function<void(size_t i, void* dst, uint64_t bytes)>;
using GroupReady = std::function<void(size_t group, const GroupRead& read)>;

// Realizes `tensors` in one schedule, exactly as Tensor::realize_all does (the same kernels, no
// recompute: the bits of every result are realize_all's), but runs the schedule's items in an
// order that computes groups[0]'s tensors (indices into `tensors`) first, then groups[1]'s, ... as
// far as the items' dependencies allow, and calls ready(g, read) on the calling thread once every
// tensor of group g is computed, before the next item runs, in group order. Each group is reported
// exactly once; groups the schedule cannot report early (a multi-device schedule, a Jit capturing,
// a tensor that is not one of the schedule's outputs) are reported after the realize, in order.
// An exception from `ready` stops the realize and propagates (tensors not yet updated stay lazy).
// `ready` runs under the realize lock (the early ones): it must not realize or read tensors itself,
// only through `read`.
void realize_in_groups(std::vector<Tensor>& tensors, const std::vector<std::vector<size_t>>& groups, const GroupReady& ready);

// Whether a kiln::Jit captures on this thread (its realizes are recorded, to be replayed as
// kernels only): what must not happen in a capture, such as a transfer between processes, checks it.
bool jit_capturing();

}  // namespace kiln::detail
