// tensor/multi.cpp - multi-device tensors: shard, the per-part primitives, all-reduce.
#include "tensor/multi.hpp"

#include <algorithm>
#include <mutex>

#include "ir/shape.hpp"
#include "plugin/device.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device_alloc.hpp"
#include "support/env.hpp"

namespace kiln {

using namespace detail;

namespace detail {

namespace {

std::string placement_str(const Tensor& t) {
  if (const Multi* m = multi_of(t))
    return m->axis ? cat("(", t.device(), ") sharded on axis ", *m->axis, " as ", shape_str(m->parts[0].shape()), "...")
                   : cat("(", t.device(), ") replicated");
  return t.device();
}

// Each part's first row along the shard axis.
std::vector<int64_t> offsets(const Multi& m) {
  std::vector<int64_t> out;
  int64_t at = 0;
  for (const Tensor& p : m.parts) {
    out.push_back(at);
    at += p.shape()[*m.axis];
  }
  return out;
}

// The rows [b, e) of x along `axis`.
Tensor rows(const Tensor& x, int axis, int64_t b, int64_t e) {
  Pads p;
  for (int i = 0; i < x.ndim(); ++i) p.push_back(i == axis ? std::pair<int64_t, int64_t>{b, e} : std::pair<int64_t, int64_t>{0, x.shape()[i]});
  return x.shrink(p);
}

Shape with_dim(Shape s, size_t axis, int64_t n) {
  s[axis] = n;
  return s;
}

Tensor move_part(const Tensor& p, Ops op, const std::vector<int64_t>& arg) {
  return movement(p, op, arg, shape_of(op, arg, p.shape()), {});
}

// RESHAPE of a sharded tensor: the axis of the new shape that the shard axis becomes, and each
// part's size on it, or nullopt when the reshape would move elements between parts.
std::optional<std::pair<int, std::vector<int64_t>>> reshape_axis(const Multi& m, const Shape& from, const Shape& to) {
  int a = *m.axis;
  int64_t prefix = 1, suffix = 1;
  for (int i = 0; i < a; ++i) prefix *= from[i];
  for (size_t i = a + 1; i < from.size(); ++i) suffix *= from[i];
  int64_t before = 1;
  for (size_t k = 0; k < to.size(); before *= to[k], ++k) {
    if (before != prefix || to[k] == 1) continue;
    int64_t after = 1;
    for (size_t i = k + 1; i < to.size(); ++i) after *= to[i];
    std::vector<int64_t> sizes;
    for (const Tensor& p : m.parts) {
      int64_t elems = p.shape()[a] * suffix;
      if (elems % after) break;
      sizes.push_back(elems / after);
    }
    if (sizes.size() == m.parts.size()) return std::pair<int, std::vector<int64_t>>{static_cast<int>(k), sizes};
  }
  return std::nullopt;
}

}  // namespace

bool is_placement(const std::string& device) { return device.find(',') != std::string::npos; }

std::vector<std::string> split_placement(const std::string& device) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    size_t comma = device.find(',', at);
    std::string d = device.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    d.erase(0, d.find_first_not_of(' '));
    d.erase(d.find_last_not_of(' ') + 1);
    out.push_back(d);
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

std::string join_placement(const std::vector<std::string>& devices) {
  std::string out;
  for (size_t i = 0; i < devices.size(); ++i) out += (i ? "," : "") + devices[i];
  return out;
}

std::vector<int64_t> split_sizes(int64_t n, size_t parts) {
  std::vector<int64_t> out;
  int64_t d = static_cast<int64_t>(parts);
  for (int64_t i = 0; i < d; ++i) out.push_back(n / d + (i < n % d ? 1 : 0));
  return out;
}

Tensor make_multi(std::vector<Tensor> parts, std::optional<int> axis) {
  KILN_CHECK(parts.size() >= 2, "a multi-device tensor needs two parts or more");
  auto m = std::make_shared<Multi>();
  Shape shape = parts[0].shape();
  if (axis) shape[*axis] = 0;
  for (const Tensor& p : parts) {
    KILN_CHECK(!multi_of(p) && p.dtype() == parts[0].dtype() && p.ndim() == parts[0].ndim(), "malformed parts");
    if (axis) shape[*axis] += p.shape()[*axis];
    m->devices.push_back(p.device());
  }
  m->parts = std::move(parts);
  m->axis = axis;
  DType dtype = m->parts[0].dtype();
  std::string placement = join_placement(m->devices);
  auto s = std::make_shared<TensorState>(std::shared_ptr<const Multi>(std::move(m)), std::move(shape), std::move(placement), dtype);
  return Tensor(std::move(s));
}

Tensor multi_movement(const Tensor& x, Ops op, const std::vector<int64_t>& arg, bool symbolic) {
  const Multi& m = *multi_of(x);
  if (symbolic)
    fail(ErrorCode::unimplemented, op_name(op), ": symbolic dimensions are not supported on a multi-device tensor ", placement_str(x),
         "; bind the variable before sharding, or gather with .to(device)");
  const Shape& from = x.shape();
  std::vector<Tensor> parts;
  std::optional<int> axis = m.axis;
  auto each = [&](auto&& part_arg) {
    for (size_t i = 0; i < m.parts.size(); ++i) {
      std::vector<int64_t> a = part_arg(i);
      if (!a.empty()) parts.push_back(move_part(m.parts[i], op, a));  // empty: the part is cut away
    }
  };
  if (!m.axis) {  // replicated: every part is the whole tensor
    for (const Tensor& p : m.parts) parts.push_back(move_part(p, op, arg));
    return make_multi(std::move(parts), std::nullopt);
  }
  int a = *m.axis;
  switch (op) {
    case Ops::RESHAPE: {
      Shape to(arg.begin(), arg.end());
      auto r = reshape_axis(m, from, to);
      if (!r)
        fail(ErrorCode::invalid_argument, "reshape: ", shape_str(from), " -> ", shape_str(to), " would move elements between the parts of ",
             placement_str(x), "; reshape so that axis ", a, " stays whole (merge it only with the axes after it), or reshard first with "
             ".shard(devices, axis)");
      axis = r->first;
      each([&](size_t i) {
        Shape s = with_dim(to, static_cast<size_t>(r->first), r->second[i]);
        return std::vector<int64_t>(s.begin(), s.end());
      });
      break;
    }
    case Ops::EXPAND:
      each([&](size_t i) {
        Shape s = with_dim(Shape(arg.begin(), arg.end()), static_cast<size_t>(a), m.parts[i].shape()[a]);
        return std::vector<int64_t>(s.begin(), s.end());
      });
      break;
    case Ops::PERMUTE:
      axis = static_cast<int>(std::find(arg.begin(), arg.end(), a) - arg.begin());
      each([&](size_t) { return arg; });
      break;
    case Ops::FLIP:
      each([&](size_t) { return arg; });
      if (arg[a]) std::reverse(parts.begin(), parts.end());
      break;
    case Ops::PAD:
      each([&](size_t i) {
        std::vector<int64_t> p = arg;
        if (i != 0) p[2 * a] = 0;
        if (i + 1 != m.parts.size()) p[2 * a + 1] = 0;
        return p;
      });
      break;
    case Ops::SHRINK: {
      std::vector<int64_t> offs = offsets(m);
      each([&](size_t i) {
        int64_t n = m.parts[i].shape()[a], b = std::max<int64_t>(arg[2 * a] - offs[i], 0), e = std::min<int64_t>(arg[2 * a + 1] - offs[i], n);
        if (e <= b) return std::vector<int64_t>{};  // nothing of this part is kept
        std::vector<int64_t> p = arg;
        p[2 * a] = b, p[2 * a + 1] = e;
        return p;
      });
      if (parts.size() == 1) return parts[0];  // (rows of one part: a tensor on that device)
      break;
    }
    // the ops of every other kind (a new Movement op does not compile until it has a case above)
#define KILN_NOT_MOVEMENT_Unary(name) case Ops::name:
#define KILN_NOT_MOVEMENT_Binary(name) case Ops::name:
#define KILN_NOT_MOVEMENT_Ternary(name) case Ops::name:
#define KILN_NOT_MOVEMENT_Cast(name) case Ops::name:
#define KILN_NOT_MOVEMENT_KernelOnly(name) case Ops::name:
#define KILN_NOT_MOVEMENT_Movement(name)
#define KILN_NOT_MOVEMENT_TensorOnly(name) case Ops::name:
#define KILN_NOT_MOVEMENT_ProgramLevel(name) case Ops::name:
#define KILN_OP(name, kind, lir, doc) KILN_NOT_MOVEMENT_##kind(name)
#include "kiln/ops.def"
      KILN_UNREACHABLE("not a movement op: ", op_name(op));
  }
  return make_multi(std::move(parts), axis);
}

Tensor match_layout(const Tensor& value, const Tensor& like, const char* op) {
  const Multi& m = *multi_of(like);
  const Multi* v = multi_of(value);
  if (!v) {
    if (is_placement(value.device()))
      fail(ErrorCode::invalid_argument, op, ": malformed placement ", value.device());
    // a tensor on one device (a constant, or what a shrink of a sharded tensor kept of one part):
    // copied to each of like's devices, as a replicated tensor would be there, and cut below
    std::vector<Tensor> copies;
    for (const std::string& d : m.devices) copies.push_back(value.device() == d ? value : value.to(d));
    return match_layout(make_multi(std::move(copies), std::nullopt), like, op);
  }
  std::vector<int64_t> offs = m.axis ? offsets(m) : std::vector<int64_t>{};
  auto wanted = [&](size_t i) {  // device i's rows along like's axis
    return std::pair<int64_t, int64_t>{offs[i], offs[i] + m.parts[i].shape()[*m.axis]};
  };
  if (v->axis) {
    bool same = v->axis == m.axis && v->devices == m.devices;
    for (size_t i = 0; same && i < m.parts.size(); ++i) same = v->parts[i].shape()[*m.axis] == m.parts[i].shape()[*m.axis];
    if (same) return value;
    // Resharded (tinygrad does too): device i takes, from each part of the value, the block that
    // falls in its own rows along like's axis, and joins the blocks along the value's axis. Each
    // element is copied at most once, and only to a device that needs it.
    std::vector<int64_t> voffs = offsets(*v);
    std::vector<Tensor> parts;
    for (size_t i = 0; i < m.parts.size(); ++i) {
      std::vector<Tensor> blocks;
      for (size_t j = 0; j < v->parts.size(); ++j) {
        Tensor b = v->parts[j];
        if (m.axis) {
          auto [lo, hi] = wanted(i);
          if (*m.axis == *v->axis) {  // the same axis split otherwise: the overlap, in part j's rows
            int64_t first = voffs[j], last = voffs[j] + b.shape()[*v->axis];
            lo = std::max(lo, first) - first;
            hi = std::min(hi, last) - first;
            if (lo >= hi) continue;
          }
          b = rows(b, *m.axis, lo, hi);
        }
        blocks.push_back(b.device() == m.devices[i] ? b : b.to(m.devices[i]));
      }
      if (blocks.empty()) blocks.push_back(rows(v->parts[0], *m.axis, 0, 0).to(m.devices[i]));  // (an empty part)
      parts.push_back(blocks.size() == 1 ? blocks[0] : Tensor::cat(blocks, *v->axis));
    }
    return make_multi(std::move(parts), m.axis);
  }
  // replicated: the copy on each device (or a copy of the first one brought there), cut to that
  // device's part
  std::vector<Tensor> parts;
  for (size_t i = 0; i < m.parts.size(); ++i) {
    auto it = std::find(v->devices.begin(), v->devices.end(), m.devices[i]);
    const Tensor r = it == v->devices.end() ? v->parts[0].to(m.devices[i]) : v->parts[static_cast<size_t>(it - v->devices.begin())];
    parts.push_back(m.axis ? rows(r, *m.axis, wanted(i).first, wanted(i).second) : r);
  }
  return make_multi(std::move(parts), m.axis);
}

Tensor multi_alu(Ops op, const std::vector<Tensor>& srcs, DType out) {
  // the layout comes from the first sharded operand, else the first multi-device one
  const Tensor* like = nullptr;
  for (const Tensor& t : srcs)
    if (multi_of(t) && (!like || (!multi_of(*like)->axis && multi_of(t)->axis))) like = &t;
  std::vector<Tensor> matched;
  for (const Tensor& t : srcs) matched.push_back(&t == like ? t : match_layout(t, *like, op_name(op)));
  const Multi& m = *multi_of(*like);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < m.parts.size(); ++i) {
    std::vector<Tensor> s;
    for (const Tensor& t : matched) s.push_back(multi_of(t)->parts[i]);
    parts.push_back(alu(op, s, out));
  }
  return make_multi(std::move(parts), m.axis);
}

Tensor multi_reduce(const Tensor& x, Ops op, const std::vector<int>& axes) {
  const Multi& m = *multi_of(x);
  std::vector<Tensor> parts;
  for (const Tensor& p : m.parts) parts.push_back(reduce_axis(p, op, axes));
  if (m.axis && std::find(axes.begin(), axes.end(), *m.axis) != axes.end())
    return make_multi(collective()->all_reduce(op, parts), std::nullopt);
  return make_multi(std::move(parts), m.axis);
}

Tensor gather_to(const Tensor& x, const std::string& device) {
  const Multi& m = *multi_of(x);
  if (!m.axis) {
    auto it = std::find(m.devices.begin(), m.devices.end(), device);
    return it != m.devices.end() ? m.parts[static_cast<size_t>(it - m.devices.begin())] : m.parts[0].to(device);
  }
  std::vector<Tensor> parts;
  for (const Tensor& p : m.parts) parts.push_back(p.to(device));
  return Tensor::cat(parts, *m.axis);
}

// ---- all-reduce ----

std::vector<Tensor> all_reduce_naive(Ops op, const std::vector<Tensor>& parts) {
  std::vector<Tensor> out;
  for (const Tensor& mine : parts) {
    // every device combines the parts in the same order, so the results are bit-identical
    Tensor acc = parts[0].to(mine.device());
    for (size_t j = 1; j < parts.size(); ++j) acc = alu(op, {acc, parts[j].to(mine.device())}, acc.dtype());
    out.push_back(acc);
  }
  return out;
}

std::vector<Tensor> all_reduce_ring(Ops op, const std::vector<Tensor>& parts) {
  size_t n = parts.size();
  int64_t numel = parts[0].numel();
  if (numel < static_cast<int64_t>(n)) return all_reduce_naive(op, parts);  // a chunk per device needs an element each
  std::vector<int64_t> sizes = split_sizes(numel, n);
  // chunks[i][k]: chunk k as device i has it so far
  std::vector<std::vector<Tensor>> chunks(n);
  for (size_t i = 0; i < n; ++i) {
    Tensor flat = parts[i].reshape({numel});
    int64_t at = 0;
    for (size_t k = 0; k < n; at += sizes[k], ++k) chunks[i].push_back(flat.shrink({{at, at + sizes[k]}}));
  }
  // reduce-scatter: at step s device i passes chunk (i - s) to device i + 1, which combines it with
  // its own; after n - 1 steps device i holds chunk (i + 1) complete
  for (size_t s = 0; s + 1 < n; ++s)
    for (size_t i = 0; i < n; ++i) {
      size_t k = (i + n - s) % n, to = (i + 1) % n;
      Tensor& mine = chunks[to][k];
      mine = alu(op, {chunks[i][k].to(parts[to].device()), mine}, mine.dtype());
    }
  // all-gather: at step s device i passes its complete chunk (i + 1 - s) on to device i + 1
  for (size_t s = 0; s + 1 < n; ++s)
    for (size_t i = 0; i < n; ++i) {
      size_t k = (i + 1 + n - s) % n, to = (i + 1) % n;
      chunks[to][k] = chunks[i][k].to(parts[to].device());
    }
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) out.push_back(Tensor::cat(chunks[i], 0).reshape(parts[i].shape()));
  return out;
}

bool peer_readable(const std::vector<Tensor>& parts) {
  for (const Tensor& p : parts)
    if (p.device() == runtime::kRefDevice) return false;  // the reference executor's host memory
  std::shared_ptr<Device> first = runtime::open_device(parts[0].device());
  for (const Tensor& p : parts) {
    std::shared_ptr<Device> d = runtime::open_device(p.device());
    if (!d || d->backend() != first->backend() || !(d->props().flags & KILN_DEVICE_PEER_BUFFERS)) return false;
  }
  return true;
}

std::vector<Tensor> all_reduce_peer(Ops op, const std::vector<Tensor>& parts) {
  // each part becomes a buffer of its own device (its kernel runs there), which every device's
  // kernel then reads in place: the graph claims it on the reader's device, which only the
  // collective may do (the frontend refuses operands on two devices)
  std::vector<UOp> done;
  for (const Tensor& p : parts) done.push_back(p.contiguous().state()->uop());
  std::vector<Tensor> out;
  for (const Tensor& mine : parts) {
    auto on_mine = [&](size_t j) { return make(done[j], mine.shape(), mine.device()); };
    Tensor acc = on_mine(0);
    for (size_t j = 1; j < parts.size(); ++j) acc = alu(op, {acc, on_mine(j)}, acc.dtype());
    out.push_back(acc);
  }
  return out;
}

namespace {

class BuiltinCollective final : public Collective {
 public:
  std::string name() const override { return "builtin"; }
  std::vector<Tensor> all_reduce(Ops op, const std::vector<Tensor>& parts) const override {
    int64_t ring = knob(Knob::ring);
    if (ring < 0 && peer_readable(parts)) return all_reduce_peer(op, parts);
    int64_t bytes = parts[0].numel() * static_cast<int64_t>(parts[0].dtype().itemsize());
    bool use_ring = ring == 1 || (ring < 0 && (parts.size() > 2 || bytes >= kRingBytes));
    return use_ring ? all_reduce_ring(op, parts) : all_reduce_naive(op, parts);
  }
};

struct CollectiveSlot {
  std::mutex mu;
  std::shared_ptr<const Collective> current = std::make_shared<BuiltinCollective>();
};
CollectiveSlot& slot() {
  static CollectiveSlot* s = new CollectiveSlot;
  return *s;
}

}  // namespace

std::shared_ptr<const Collective> collective() {
  std::lock_guard<std::mutex> lock(slot().mu);
  return slot().current;
}

void set_collective(std::shared_ptr<const Collective> c) {
  std::lock_guard<std::mutex> lock(slot().mu);
  slot().current = c ? std::move(c) : std::make_shared<BuiltinCollective>();
}

}  // namespace detail

// ---- the public API ----

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int> axis) const {
  if (devices.empty()) fail(ErrorCode::invalid_argument, "shard: no devices given; name at least one (\"cpu:0\", \"cpu:1\", ...)");
  std::vector<std::string> devs;
  for (const std::string& d : devices) {
    std::string c = canonical_device(d);
    if (is_placement(c)) fail(ErrorCode::invalid_argument, "shard: \"", d, "\" names several devices; give each device as its own string");
    if (std::find(devs.begin(), devs.end(), c) != devs.end())
      fail(ErrorCode::invalid_argument, "shard: device ", c, " is given twice in (", join_placement(devices),
           "); each device holds one part, so name each once");
    devs.push_back(c);
  }
  std::optional<int> a;
  if (axis) a = norm_axis(*axis, shape(), "shard");
  if (!st(*this).vars.empty())
    fail(ErrorCode::unimplemented, "shard: the shape ", shape_str(shape()), " has a symbolic dimension; shard a tensor of concrete shape");
  if (const Multi* m = multi_of(*this)) {
    if (m->devices == devs && m->axis == a) return *this;
    return gather_to(*this, devs[0]).shard(devs, a);  // reshard through one device
  }
  if (devs.size() == 1) return to(devs[0]);
  // Every part owns its storage, the one on this tensor's own device too (to() would return this
  // tensor, and rows() a view of its buffer): an assign to the source or to a part must not show in
  // the other, nor one replica differ from the rest.
  auto placed = [&](const Tensor& piece, const std::string& d) { return d == piece.device() ? own_copy(piece) : piece.to(d); };
  std::vector<Tensor> parts;
  if (!a) {
    for (const std::string& d : devs) parts.push_back(placed(*this, d));
    return make_multi(std::move(parts), std::nullopt);
  }
  int64_t n = shape()[*a];
  if (n < static_cast<int64_t>(devs.size()))
    fail(ErrorCode::invalid_argument, "shard: axis ", *a, " of shape ", shape_str(shape()), " has ", n, " rows, fewer than the ", devs.size(),
         " devices (", join_placement(devs), "); every device needs a row: shard another axis, use fewer devices, or replicate (no axis)");
  int64_t at = 0;
  std::vector<int64_t> sizes = split_sizes(n, devs.size());
  for (size_t i = 0; i < devs.size(); at += sizes[i], ++i) parts.push_back(placed(rows(*this, *a, at, at + sizes[i]), devs[i]));
  return make_multi(std::move(parts), a);
}

std::vector<std::string> Tensor::placement() const {
  if (const Multi* m = multi_of(*this)) return m->devices;
  return {device()};
}

std::optional<int> Tensor::shard_axis() const {
  if (const Multi* m = multi_of(*this)) return m->axis;
  return std::nullopt;
}

}  // namespace kiln
