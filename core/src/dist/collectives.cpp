// dist/collectives.cpp - all_reduce, broadcast and all_reduce_grads: host bytes of the tensor, the
// header exchange (world.cpp), one blocking MPI call under the watchdog, the result as a tensor.
#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dist/world.hpp"
#include "support/half.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln::dist {
namespace detail {
namespace {

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "Sum";
    case ReduceOp::Max: return "Max";
    case ReduceOp::Min: return "Min";
    case ReduceOp::Mean: return "Mean";
  }
  return "?";
}

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// 64-byte aligned host memory (the cpu device shares such memory without a copy: from_blob), from a
// small pool: a result's block returns to it when the last tensor over it is gone, so a training
// loop's all-reduces of one size reuse warm pages instead of faulting in fresh ones every call
// (64 MiB is 16k page faults). At most kPoolBlocks blocks of at most kPoolBytes in all are kept.
constexpr size_t kPoolBlocks = 8, kPoolBytes = size_t{512} << 20;
struct Pool {
  std::mutex mu;
  std::vector<std::pair<size_t, void*>> free;  // (rounded size, block), most recently freed last
  size_t bytes = 0;
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: blocks may be released during exit
  return *p;
}

}  // namespace

std::shared_ptr<void> host_alloc(size_t bytes) {
  size_t n = std::max<size_t>((bytes + 63) / 64 * 64, 64);
  void* p = nullptr;
  {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    for (size_t i = pl.free.size(); i-- > 0;)
      if (pl.free[i].first == n) {
        p = pl.free[i].second;
        pl.bytes -= n;
        pl.free.erase(pl.free.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  if (!p) p = std::aligned_alloc(64, n);
  if (!p) throw Error(ErrorCode::resource_exhausted, "kiln::dist: could not allocate " + std::to_string(bytes) + " bytes of host memory");
  return std::shared_ptr<void>(p, [n](void* q) {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    pl.free.emplace_back(n, q);
    pl.bytes += n;
    while (pl.free.size() > kPoolBlocks || pl.bytes > kPoolBytes) {  // the oldest go back to the system
      pl.bytes -= pl.free.front().first;
      std::free(pl.free.front().second);
      pl.free.erase(pl.free.begin());
    }
  });
}

namespace {

// The host bytes of t: its own buffer on a device whose memory is host memory (realized, no copy),
// else one copy. `keep` holds the realized tensor while the bytes are used.
struct Source {
  std::optional<Tensor> keep;
  const void* ptr = nullptr;
  std::shared_ptr<void> copy;
};
Source source(const Tensor& t) {
  Source s{t.contiguous(), nullptr, nullptr};
  uint64_t bytes = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.dtype().itemsize());
  if (void* p = s.keep->host_data()) {
    s.ptr = p;
  } else {
    s.copy = host_alloc(bytes);
    s.keep->to_bytes(s.copy.get(), bytes);
    s.ptr = s.copy.get();
  }
  return s;
}

}  // namespace

void divide(void* data, int64_t n, DType dt, int by) {
  switch (dt.scalar()) {
    case Scalar::float32: { auto* p = static_cast<float*>(data); for (int64_t i = 0; i < n; ++i) p[i] /= static_cast<float>(by); break; }
    case Scalar::float64: { auto* p = static_cast<double*>(data); for (int64_t i = 0; i < n; ++i) p[i] /= by; break; }
    case Scalar::float16: { auto* p = static_cast<uint16_t*>(data); for (int64_t i = 0; i < n; ++i) p[i] = float_to_half(half_to_float(p[i]) / static_cast<float>(by)); break; }
    case Scalar::bfloat16: { auto* p = static_cast<uint16_t*>(data); for (int64_t i = 0; i < n; ++i) p[i] = float_to_bf16(bf16_to_float(p[i]) / static_cast<float>(by)); break; }
    default: break;  // mpi_op refused Mean for the rest
  }
}

namespace {

// float16/bfloat16: each pairwise step in float32, rounded back (commutative, so every rank's
// result has the same bits).
enum Which { kSum, kMax, kMin };
template <float (*Load)(uint16_t), uint16_t (*Store)(float), Which W>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Load(a[i]), y = Load(b[i]);
    b[i] = Store(W == kSum ? x + y : W == kMax ? (x > y ? x : y) : (x < y ? x : y));
  }
}
MPI_Op half_ops[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}, {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};

}  // namespace

void combine(const std::vector<const char*>& parts, void* out, size_t bytes, int count, MPI_Datatype type, MPI_Op mop,
             const std::string& what) {
  std::memcpy(out, parts[0], bytes);
  for (size_t r = 1; r < parts.size(); ++r) check(MPI_Reduce_local(parts[r], out, count, type, mop), what);
}

void create_half_ops() {
  MPI_Op_create(half_op<half_to_float, float_to_half, kSum>, 1, &half_ops[0][kSum]);
  MPI_Op_create(half_op<half_to_float, float_to_half, kMax>, 1, &half_ops[0][kMax]);
  MPI_Op_create(half_op<half_to_float, float_to_half, kMin>, 1, &half_ops[0][kMin]);
  MPI_Op_create(half_op<bf16_to_float, float_to_bf16, kSum>, 1, &half_ops[1][kSum]);
  MPI_Op_create(half_op<bf16_to_float, float_to_bf16, kMax>, 1, &half_ops[1][kMax]);
  MPI_Op_create(half_op<bf16_to_float, float_to_bf16, kMin>, 1, &half_ops[1][kMin]);
}

void free_half_ops() {
  for (auto& row : half_ops)
    for (MPI_Op& op : row)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
}

MPI_Datatype mpi_type(DType dt, const std::string& op) {
  switch (dt.scalar()) {
    case Scalar::bool_: return MPI_C_BOOL;
    case Scalar::int8: return MPI_INT8_T;
    case Scalar::int16: return MPI_INT16_T;
    case Scalar::int32: return MPI_INT32_T;
    case Scalar::int64: return MPI_INT64_T;
    case Scalar::uint8: return MPI_UINT8_T;
    case Scalar::uint16: return MPI_UINT16_T;
    case Scalar::uint32: return MPI_UINT32_T;
    case Scalar::uint64: return MPI_UINT64_T;
    case Scalar::float16: return MPI_UINT16_T;
    case Scalar::bfloat16: return MPI_UINT16_T;
    case Scalar::float32: return MPI_FLOAT;
    case Scalar::float64: return MPI_DOUBLE;
    case Scalar::void_:
    case Scalar::index: break;
  }
  fail(ErrorCode::invalid_argument, op, "dtype " + dt.name() + " has no elements to send; give a tensor of a scalar dtype");
}

MPI_Op mpi_op(ReduceOp op, DType dt, const std::string& what) {
  Scalar s = dt.scalar();
  if (s == Scalar::float16 || s == Scalar::bfloat16) {
    int row = s == Scalar::float16 ? 0 : 1;
    return half_ops[row][op == ReduceOp::Max ? kMax : op == ReduceOp::Min ? kMin : kSum];
  }
  if (op == ReduceOp::Mean && !dt.is_float())
    fail(ErrorCode::invalid_argument, what, "Mean of " + dt.name() + " has no " + dt.name() + " result; cast to a float dtype first (or use Sum)");
  if (s == Scalar::bool_) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  return op == ReduceOp::Max ? MPI_MAX : op == ReduceOp::Min ? MPI_MIN : MPI_SUM;
}

}  // namespace detail

using namespace detail;  // NOLINT: this file implements the detail layer's public face

namespace {

bool is_multi(const Tensor& t) { return ::kiln::detail::multi_of(t) != nullptr; }
// f applied to every part of a tensor on several local devices (each part its own collective: the
// ranks hold the same placement, so they run the same sequence).
template <typename F>
Tensor each_part(const Tensor& t, F&& f) {
  return ::kiln::detail::map_parts(t, std::forward<F>(f));
}

// A tensor on a device with memory of its own comes to the host in pieces of kPieceBytes on a
// helper thread while the main thread all-reduces the piece before (the device-to-host copy
// overlaps the transfer). The result goes back to the device in one copy (from_blob).
constexpr int64_t kPieceBytes = int64_t{4} << 20;

void all_reduce_overlapped(const Tensor& c, char* out, DType dt, MPI_Datatype type, MPI_Op mop, const std::string& what) {
  World& w = world();
  const int64_t numel = c.numel(), item = dt.itemsize();
  const int64_t per = std::max<int64_t>(1, std::min<int64_t>(kPieceBytes / item, int64_t{1} << 30));
  const int64_t pieces = (numel + per - 1) / per;
  Tensor flat = c.reshape({numel});
  std::mutex mu;
  std::condition_variable cv;
  int64_t ready = 0;  // pieces on the host
  std::exception_ptr failed;
  std::thread copier([&] {
    try {
      for (int64_t i = 0; i < pieces; ++i) {
        int64_t a = i * per, b = std::min(numel, a + per);
        flat.shrink({{a, b}}).to_bytes(out + a * item, static_cast<uint64_t>((b - a) * item));
        std::lock_guard<std::mutex> lock(mu);
        ready = i + 1;
        cv.notify_one();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      failed = std::current_exception();
      ready = pieces;
      cv.notify_one();
    }
  });
  struct Join {  // the copier writes into `out`: it ends before this frame does, error or not
    std::thread& t;
    ~Join() { t.join(); }
  } join{copier};
  Transfer guard(what);
  for (int64_t i = 0; i < pieces; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return ready > i || failed; });
      if (failed) std::rethrow_exception(failed);
    }
    int64_t a = i * per, b = std::min(numel, a + per);
    check(MPI_Allreduce(MPI_IN_PLACE, out + a * item, static_cast<int>(b - a), type, mop, w.data), what);
  }
}

}  // namespace

Tensor all_reduce(const Tensor& t, ReduceOp op) {
  World& w = world();
  if (is_multi(t)) return each_part(t, [&](const Tensor& p) { return all_reduce(p, op); });
  DType dt = t.dtype();
  std::string what = std::string("all_reduce(") + op_name(op) + ") of " + dt.name() + " " + shape_text(t.shape());
  refuse_in_jit(what);
  MPI_Datatype type = mpi_type(dt, what);
  MPI_Op mop = mpi_op(op, dt, what);
  Header h = header(Kind::all_reduce, what);
  h.op = static_cast<int32_t>(op);
  h.dtype = static_cast<int32_t>(dt.scalar());
  h.numel = t.numel();
  h.shape_hash = shape_hash(t.shape());
  // realized before the exchange: a rank that fails here is named by the others
  Tensor c = t.contiguous();
  c.realize();
  const void* host = c.host_data();  // its buffer when the device's memory is host memory (cpu)
  size_t bytes = static_cast<size_t>(t.numel()) * static_cast<size_t>(dt.itemsize());
  std::shared_ptr<void> out = host_alloc(bytes);
  if (eager(static_cast<int64_t>(bytes), w.size)) {  // small: the data rides with the header
    std::vector<char> copy;
    if (!host) {
      copy.resize(bytes);
      c.to_bytes(copy.data(), bytes);
      host = copy.data();
    }
    h.payload_bytes = static_cast<int64_t>(bytes);
    std::vector<const char*> parts;
    agree(h, host, &parts);
    combine(parts, out.get(), bytes, static_cast<int>(t.numel()), type, mop, what);
  } else {
    agree(h);
    if (host) {
      Transfer guard(what);
      in_pieces(t.numel(), dt.itemsize(), [&](size_t at, int n) {
        check(MPI_Allreduce(static_cast<const char*>(host) + at, static_cast<char*>(out.get()) + at, n, type, mop, w.data), what);
      });
    } else if (t.numel() > 0) {
      all_reduce_overlapped(c, static_cast<char*>(out.get()), dt, type, mop, what);
    }
  }
  if (op == ReduceOp::Mean) divide(out.get(), t.numel(), dt, w.size);
  return Tensor::from_blob(out.get(), dt, t.shape(), out, t.device());
}

Tensor broadcast(const Tensor& t, int root) {
  World& w = world();
  if (is_multi(t)) return each_part(t, [&](const Tensor& p) { return broadcast(p, root); });
  DType dt = t.dtype();
  std::string what = "broadcast(root " + std::to_string(root) + ") of " + dt.name() + " " + shape_text(t.shape());
  refuse_in_jit(what);
  if (root < 0 || root >= w.size)
    fail(ErrorCode::invalid_argument, what, "root " + std::to_string(root) + " is not a rank of this world of " + std::to_string(w.size) +
         "; give a root in [0, " + std::to_string(w.size) + ")");
  MPI_Datatype type = mpi_type(dt, what);
  Header h = header(Kind::broadcast, what);
  h.root = root;
  h.dtype = static_cast<int32_t>(dt.scalar());
  h.numel = t.numel();
  h.shape_hash = shape_hash(t.shape());
  Source src;
  if (w.rank == root) src = source(t);
  agree(h);
  std::shared_ptr<void> out = w.rank == root ? nullptr : host_alloc(static_cast<size_t>(t.numel()) * static_cast<size_t>(dt.itemsize()));
  void* buf = w.rank == root ? const_cast<void*>(src.ptr) : out.get();  // the root's buffer is only read
  {
    Transfer guard(what);
    in_pieces(t.numel(), dt.itemsize(), [&](size_t at, int n) { check(MPI_Bcast(static_cast<char*>(buf) + at, n, type, root, w.data), what); });
  }
  if (w.rank == root) return *src.keep;
  return Tensor::from_blob(out.get(), dt, t.shape(), out, t.device());
}

}  // namespace kiln::dist
