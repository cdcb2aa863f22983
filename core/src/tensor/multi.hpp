// tensor/multi.hpp - tensors on several devices: the parts of a sharded or replicated tensor, the
// per-part forms of the frontend's primitive ops, and the all-reduce that combines partial results.
//
// A multi-device tensor is a TensorState whose `multi` holds one ordinary single-device tensor per
// device (its graph reads as MSTACK of theirs). Every frontend op reaches the graph through a few
// primitives (movement, alu, reduce_axis, constants, contiguous, copy, assign, realize); each
// checks for multi-device operands and maps itself over the parts, so composite ops (matmul,
// softmax, conv2d, cat) work on shards without knowing about them:
//  - movement: RESHAPE keeps the shard axis whole (the parts' elements stay on their device) or
//    throws; EXPAND and PERMUTE pass through; PAD on the shard axis pads the first and last part;
//    SHRINK on it cuts each part (a part left empty drops its device); FLIP on it flips each part
//    and reverses their order.
//  - elementwise: operands sharded the same way combine part by part; a replicated operand is cut
//    to each part (no copy); operands sharded differently, or on other devices, throw.
//  - reduce: over other axes each part reduces and stays sharded; over the shard axis each part
//    reduces, then an all-reduce (Collective) combines them into a replicated result.
// The scheduler sees only single-device graphs with COPYs between them.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor_state.hpp"

namespace kiln::detail {

inline const Multi* multi_of(const Tensor& t) { return t.state()->multi.get(); }

// A multi-device tensor's device() is its placement joined by ',' ("cpu:0,cpu:1").
bool is_placement(const std::string& device);
std::vector<std::string> split_placement(const std::string& device);
std::string join_placement(const std::vector<std::string>& devices);

// The tensor over `parts` (at least 2, on distinct devices, one dtype, concrete shapes): sharded
// along `axis` (shapes equal except there) or replicated (equal shapes).
Tensor make_multi(std::vector<Tensor> parts, std::optional<int> axis);
// Splits `n` rows over `parts` devices as torch.tensor_split does: the first n % parts get one more.
std::vector<int64_t> split_sizes(int64_t n, size_t parts);

// The primitives for multi-device operands (the single-device primitives call these).
Tensor multi_movement(const Tensor& x, Ops op, const std::vector<int64_t>& arg, bool symbolic);
Tensor multi_alu(Ops op, const std::vector<Tensor>& srcs, DType out);
Tensor multi_reduce(const Tensor& x, Ops op, const std::vector<int>& axes);  // keeps the reduced axes (size 1)
// `f` applied to each part; the result keeps x's placement and shard axis.
template <typename F>
Tensor map_parts(const Tensor& x, F&& f) {
  const Multi& m = *multi_of(x);
  std::vector<Tensor> parts;
  for (const Tensor& p : m.parts) parts.push_back(f(p));
  return make_multi(std::move(parts), m.axis);
}
// The whole of x on `device` (parts copied there and concatenated; a replica there is used as is).
Tensor gather_to(const Tensor& x, const std::string& device);
// `value` laid out like the multi-device `like` (shape already equal): a single-device value is
// sharded, a replicated one cut to the parts; a different sharding throws naming `op`.
Tensor match_layout(const Tensor& value, const Tensor& like, const char* op);

// How partial results on several devices are combined. The built-in one lowers to COPYs and
// elementwise ops in the graph (so the scheduler orders and overlaps them like any other work); a
// backend or a multi-node transport may install its own.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string name() const = 0;
  // parts: one per device, equal shapes and dtypes. Returns one tensor per device (on that
  // device), each `op` (ADD, MUL, MAX) over all parts, and bit-identical across devices.
  virtual std::vector<Tensor> all_reduce(Ops op, const std::vector<Tensor>& parts) const = 0;
};
std::shared_ptr<const Collective> collective();
void set_collective(std::shared_ptr<const Collective> c);  // null restores the built-in one

// The built-in algorithms. naive: every device receives every other part and combines them in
// device order. ring: reduce-scatter then all-gather over n chunks, 2(n-1)/n of the data sent per
// device instead of (n-1). peer: no copies; every device's kernel reads the parts where they are
// (devices of one plugin that set KILN_DEVICE_PEER_BUFFERS, such as the cpu backend's).
// The built-in collective takes peer where it can, else the ring past 2 devices or 1 MiB per
// part, else naive; the ring falls back to naive when a part has fewer elements than devices.
// KILN_RING=0/1 forces naive/ring.
std::vector<Tensor> all_reduce_naive(Ops op, const std::vector<Tensor>& parts);
std::vector<Tensor> all_reduce_ring(Ops op, const std::vector<Tensor>& parts);
std::vector<Tensor> all_reduce_peer(Ops op, const std::vector<Tensor>& parts);
bool peer_readable(const std::vector<Tensor>& parts);  // every part's device reads the others' buffers
constexpr int64_t kRingBytes = int64_t{1} << 20;

}  // namespace kiln::detail
