// dist/grads.cpp - all_reduce_grads: the gradients' mean over the ranks, overlapped with the
// backward pass that computes them when they are not realized yet.
//
// Overlapped (gradients still lazy, more than one bucket): the gradients go in buckets, in reverse
// parameter order (the last layers' gradients are ready first), one dtype per bucket. The whole backward pass is realized as one schedule (detail::realize_in_groups: the same
// kernels, nothing computed twice), its items ordered so that bucket 0's gradients are done
// first; as each bucket is done, the main thread copies it into its message and hands it to a
// transfer thread, which all-reduces it while the main thread runs the next bucket's kernels; the
// main thread then waits for the transfers watching the other ranks (a rank that dies is named).
// Plain (gradients realized, one bucket, a world of one): realize, then the same buckets one after
// another; gradients of one dtype that fit the header's payload (16 KiB) ride with it instead.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dist/world.hpp"
#include "support/env.hpp"
#include "tensor/multi.hpp"
#include "tensor/realize_groups.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln::dist {

using namespace detail;  // NOLINT: this file implements the detail layer's public face

namespace {

// torch DDP's first bucket is 1 MiB too: small enough that the first transfer starts early, large
// enough that a bucket's fixed cost (a few MPI rounds) stays small next to its bytes.
constexpr int64_t kBucketBytes = int64_t{1} << 20;

// One message: gradients of one dtype, each at a 64-byte aligned offset (on the cpu device the
// new gradient is then the message's memory itself).
struct Bucket {
  DType dt;
  std::vector<size_t> members, offsets;  // indices into the gradients
  size_t bytes = 0;
  std::shared_ptr<void> buf;
};

void add(Bucket& b, size_t member, int64_t numel) {
  b.members.push_back(member);
  b.offsets.push_back(b.bytes);
  b.bytes += (static_cast<size_t>(numel) * static_cast<size_t>(b.dt.itemsize()) + 63) / 64 * 64;
}

// One bucket per dtype, in the order the dtypes first appear (the header's payload, when it fits).
std::vector<Bucket> per_dtype(const std::vector<Tensor>& grads) {
  std::vector<Bucket> out;
  for (size_t i = 0; i < grads.size(); ++i) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Bucket& b) { return b.dt == grads[i].dtype(); });
    if (it == out.end()) it = out.insert(out.end(), Bucket{grads[i].dtype(), {}, {}, 0, nullptr});
    add(*it, i, grads[i].numel());
  }
  return out;
}

// Overlapped: in reverse order, one open bucket per dtype, closed once it holds `limit` bytes (a
// gradient larger than that is a bucket of its own); the open ones close at the end, in the order
// their dtypes appeared. The same on every rank (the header checked the dtypes and shapes).
std::vector<Bucket> reverse_buckets(const std::vector<Tensor>& grads, int64_t limit) {
  std::vector<Bucket> closed, open;
  for (size_t i = grads.size(); i-- > 0;) {
    auto it = std::find_if(open.begin(), open.end(), [&](const Bucket& b) { return b.dt == grads[i].dtype(); });
    if (it == open.end()) it = open.insert(open.end(), Bucket{grads[i].dtype(), {}, {}, 0, nullptr});
    add(*it, i, grads[i].numel());
    if (static_cast<int64_t>(it->bytes) >= limit) {
      closed.push_back(std::move(*it));
      open.erase(it);
    }
  }
  for (Bucket& b : open) closed.push_back(std::move(b));
  return closed;
}

// The bucket's message: each member's bytes (through `read`), the padding zeros, not garbage.
template <typename Read>
void pack(Bucket& b, const std::vector<Tensor>& grads, Read&& read) {
  b.buf = host_alloc(b.bytes);
  auto* base = static_cast<char*>(b.buf.get());
  for (size_t k = 0; k < b.members.size(); ++k) {
    size_t n = static_cast<size_t>(grads[b.members[k]].numel()) * static_cast<size_t>(b.dt.itemsize());
    read(b.members[k], base + b.offsets[k], n);
    size_t end = k + 1 < b.members.size() ? b.offsets[k + 1] : b.bytes;
    std::memset(base + b.offsets[k] + n, 0, end - b.offsets[k] - n);
  }
}

// Each parameter's gradient becomes a tensor over its part of the reduced message (no copy on the
// cpu device). Replacing the gradient, rather than writing the mean into its buffer, is what keeps
// this safe: a realized gradient may share its buffer with another tensor (d(w*x)/dw is x).
void finish(const Bucket& b, const std::vector<Tensor>& owners, const std::vector<Tensor>& grads, int ranks) {
  auto* base = static_cast<char*>(b.buf.get());
  if (ranks > 1) divide(base, static_cast<int64_t>(b.bytes) / b.dt.itemsize(), b.dt, ranks);
  for (size_t k = 0; k < b.members.size(); ++k) {
    const Tensor& gr = grads[b.members[k]];
    std::shared_ptr<void> part(b.buf, base + b.offsets[k]);  // shares the message's lifetime
    Tensor mean = Tensor::from_blob(part.get(), b.dt, gr.shape(), part, gr.device());
    const std::shared_ptr<::kiln::detail::TensorState>& s = owners[b.members[k]].state();
    std::lock_guard<std::mutex> lock(s->grad_mu);
    s->grad = mean;
  }
}

std::string bucket_what(const std::string& what, const Bucket& b, size_t i, size_t n) {
  return what + ", bucket " + std::to_string(i + 1) + " of " + std::to_string(n) + " (" + std::to_string(b.members.size()) + " " +
         b.dt.name() + " gradients, " + std::to_string(b.bytes) + " bytes)";
}

// The transfer thread: all-reduces bucket g once the main thread packed it (ready > g), in bucket
// order, with the blocking MPI_Allreduce (Open MPI's tuned algorithms: here 4-6x faster than a
// polled MPI_Iallreduce at 1 MiB, no slower at 4 MiB). The main thread makes no MPI call meanwhile (so
// MPI_THREAD_SERIALIZED suffices); it waits for the transfers in wait_all, watching the other
// ranks, so that a rank that dies during a transfer is named rather than waited for.
class Mover {
 public:
  Mover(std::vector<Bucket>& buckets, const std::string& what) : t_(std::make_shared<State>()) {
    t_->buckets = std::move(buckets);
    t_->what = what;
    thread_ = std::thread(run, t_);
  }
  // Abandoned (an error): the thread may be inside MPI for good (a rank died), so it is not joined;
  // it keeps the state, buffers included (MPI may still write there), alive.
  ~Mover() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(t_->mu);
      t_->stop = true;
    }
    t_->cv.notify_all();
    thread_.detach();
  }
  Mover(const Mover&) = delete;
  Mover& operator=(const Mover&) = delete;

  std::vector<Bucket>& buckets() { return t_->buckets; }
  // Bucket g is packed: the thread may send it. Throws the thread's error, if any, first.
  void hand(size_t g) {
    std::lock_guard<std::mutex> lock(t_->mu);
    if (t_->error) std::rethrow_exception(t_->error);
    t_->ready = g + 1;
    t_->cv.notify_all();
  }
  // Every bucket all-reduced; a rank on this host seen dead meanwhile is kiln::Error unavailable,
  // a transfer outliving the timeout deadline_exceeded (each breaks the world).
  void wait_all() {
    World& w = world();
    using Clock = std::chrono::steady_clock;
    auto last_check = Clock::now();
    auto deadline = last_check + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(w.timeout_s));
    std::unique_lock<std::mutex> lock(t_->mu);
    const size_t n = t_->buckets.size();
    while (t_->done < n && !t_->error) {
      t_->cv.wait_for(lock, std::chrono::milliseconds(5));
      auto now = Clock::now();
      if (t_->done == n || t_->error) break;
      std::string op = bucket_what(t_->what, t_->buckets[t_->done], t_->done, n);
      if (now - last_check > std::chrono::milliseconds(100)) {
        last_check = now;
        lock.unlock();
        std::string dead = dead_peers();
        lock.lock();
        if (!dead.empty()) break_world(ErrorCode::unavailable, op, dead + " died during the transfer (it exited or was killed)");
      }
      if (now > deadline)
        break_world(ErrorCode::deadline_exceeded, op, "the transfer did not finish within " + std::to_string(w.timeout_s) +
                    " s (KILN_DIST_TIMEOUT, set_timeout): a rank stopped during it");
    }
    std::exception_ptr error = t_->error;
    lock.unlock();
    if (error) std::rethrow_exception(error);
    thread_.join();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;  // both ways: ready/stop for the thread, done/error for the main thread
    size_t ready = 0, done = 0;
    bool stop = false;
    std::exception_ptr error;
    std::vector<Bucket> buckets;
    std::string what;
  };
  static void run(std::shared_ptr<State> t) {
    try {
      World& w = world();
      for (size_t g = 0; g < t->buckets.size(); ++g) {
        {
          std::unique_lock<std::mutex> lock(t->mu);
          t->cv.wait(lock, [&] { return t->ready > g || t->stop; });
          if (t->ready <= g) return;  // abandoned before this bucket was packed
        }
        Bucket& b = t->buckets[g];
        std::string msg = bucket_what(t->what, b, g, t->buckets.size());
        MPI_Datatype type = mpi_type(b.dt, msg);
        MPI_Op mop = mpi_op(ReduceOp::Mean, b.dt, msg);
        auto* base = static_cast<char*>(b.buf.get());
        in_pieces(static_cast<int64_t>(b.bytes) / b.dt.itemsize(), b.dt.itemsize(),
                  [&](size_t at, int n) { check(MPI_Allreduce(MPI_IN_PLACE, base + at, n, type, mop, w.data), msg); });
        {
          std::lock_guard<std::mutex> lock(t->mu);
          t->done = g + 1;
        }
        t->cv.notify_all();
      }
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(t->mu);
        t->error = std::current_exception();
      }
      t->cv.notify_all();
    }
  }
  std::shared_ptr<State> t_;
  std::thread thread_;
};

int64_t env_bucket_bytes() {
  std::string v = getenv_str("KILN_DIST_BUCKET_BYTES");
  if (v.empty()) return kBucketBytes;
  char* end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || n <= 0)
    throw Error(ErrorCode::invalid_argument, "KILN_DIST_BUCKET_BYTES=\"" + v + "\": expected a positive number of bytes (default 1048576)");
  return n;
}

}  // namespace

void set_bucket_bytes(int64_t bytes) {
  if (bytes <= 0) throw Error(ErrorCode::invalid_argument, "kiln::dist::set_bucket_bytes: " + std::to_string(bytes) + ": give a positive number of bytes");
  world().bucket_bytes = bytes;
}
int64_t bucket_bytes() {
  World& w = world();
  if (w.bucket_bytes < 0) w.bucket_bytes = env_bucket_bytes();
  return w.bucket_bytes;
}
void set_overlap(bool on) { world().overlap = on; }
bool overlap() { return world().overlap; }

void all_reduce_grads(const std::vector<Tensor>& params) { all_reduce_grads(params, {}); }

void all_reduce_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& also) {
  World& w = world();
  refuse_in_jit("all_reduce_grads");
  std::vector<Tensor> owners, grads;  // the parameters that have a gradient, and their gradients
  for (const Tensor& p : params)
    if (std::optional<Tensor> g = p.grad()) {
      owners.push_back(p);
      grads.push_back(*g);
    }
  bool multi = false, lazy = false;
  int64_t total = 0;
  uint64_t hash = 1469598103934665603ULL;
  for (const Tensor& g : grads) {
    multi = multi || ::kiln::detail::multi_of(g) != nullptr;
    lazy = lazy || !::kiln::detail::is_view(g.state()->uop());
    total += g.numel();
    hash = shape_hash(g.shape(), hash ^ static_cast<uint64_t>(g.dtype().scalar()));
  }
  if (multi) {  // gradients on several local devices: each part on its own (rare; no fused message)
    std::vector<Tensor> all = also;
    Tensor::realize_all(all);
    for (Tensor& g : grads) g.assign(all_reduce(g, ReduceOp::Mean));
    Tensor::realize_all(grads);
    return;
  }
  std::string what = "all_reduce_grads of " + std::to_string(grads.size()) + " gradients (" + std::to_string(total) + " elements)";
  // The messages depend on the gradients' dtypes and shapes only (never on whether this rank's are
  // realized yet), so that ranks that take different paths still exchange the same messages: small
  // gradients of one dtype ride with the header; else buckets in reverse parameter order.
  std::vector<Bucket> buckets = per_dtype(grads);
  const bool small = buckets.size() == 1 && eager(static_cast<int64_t>(buckets[0].bytes), w.size);
  const int64_t limit = bucket_bytes();
  if (!small) {
    buckets = reverse_buckets(grads, limit);
    what += " in " + std::to_string(buckets.size()) + (buckets.size() == 1 ? " bucket" : " buckets") + " of up to " + std::to_string(limit) + " bytes";
  }
  Header h = header(Kind::grads, what);
  h.op = static_cast<int32_t>(ReduceOp::Mean);
  h.numel = total;
  h.shape_hash = small ? hash : shape_hash({limit, static_cast<int64_t>(buckets.size())}, hash);
  for (const Bucket& b : buckets) (void)mpi_op(ReduceOp::Mean, b.dt, what);  // a dtype without a Mean fails before any exchange
  // overlapped when there is a backward pass left to overlap and more than one bucket (one bucket
  // is ready only when the backward pass is done)
  const bool overlapped = w.overlap && lazy && w.size > 1 && buckets.size() > 1;

  if (!overlapped) {
    std::vector<Tensor> all = grads;
    all.insert(all.end(), also.begin(), also.end());
    Tensor::realize_all(all);  // before the exchange: a rank that fails here is named by the others
    auto read = [&](size_t i, void* dst, uint64_t n) { grads[i].to_bytes(dst, n); };
    if (small) {  // one exchange
      Bucket& b = buckets[0];
      std::string msg = what + ", the " + b.dt.name() + " ones";
      MPI_Datatype type = mpi_type(b.dt, msg);
      MPI_Op mop = mpi_op(ReduceOp::Mean, b.dt, msg);
      pack(b, grads, read);
      h.payload_bytes = static_cast<int64_t>(b.bytes);
      std::vector<const char*> parts;
      agree(h, b.buf.get(), &parts);
      std::shared_ptr<void> mine = b.buf;
      b.buf = host_alloc(b.bytes);
      combine(parts, b.buf.get(), b.bytes, static_cast<int>(static_cast<int64_t>(b.bytes) / b.dt.itemsize()), type, mop, msg);
      finish(b, owners, grads, w.size);
      return;
    }
    // on this thread, as all_reduce does: a thread of its own costs more than it saves when there is
    // nothing to overlap (a rank that dies meanwhile: the watchdog's MPI_Abort, docs/dist.md)
    agree(h);
    for (size_t g = 0; g < buckets.size(); ++g) {
      Bucket& b = buckets[g];
      std::string msg = bucket_what(what, b, g, buckets.size());
      MPI_Datatype type = mpi_type(b.dt, msg);
      MPI_Op mop = mpi_op(ReduceOp::Mean, b.dt, msg);
      pack(b, grads, read);
      auto* base = static_cast<char*>(b.buf.get());
      {
        Transfer guard(msg);
        in_pieces(static_cast<int64_t>(b.bytes) / b.dt.itemsize(), b.dt.itemsize(),
                  [&](size_t at, int n) { check(MPI_Allreduce(MPI_IN_PLACE, base + at, n, type, mop, w.data), msg); });
      }
      finish(b, owners, grads, w.size);
    }
    return;
  }

  // Overlapped. The header first (nothing is computed yet): a rank that fails in the backward
  // pass after it is seen dead by the others' transfers (or they time out), not waited for.
  agree(h);
  std::vector<Tensor> all = grads;
  all.insert(all.end(), also.begin(), also.end());
  std::vector<std::vector<size_t>> groups;
  for (const Bucket& b : buckets) groups.push_back(b.members);
  Mover mover(buckets, what);
  auto ready = [&](size_t g, const ::kiln::detail::GroupRead& read) {
    pack(mover.buckets()[g], grads, read);
    mover.hand(g);  // throws when a transfer failed: the backward pass stops too
  };
  try {
    ::kiln::detail::realize_in_groups(all, groups, ready);
  } catch (...) {
    if (!w.broken) {  // the others wait for this rank's buckets, which will not come
      w.broken = true;
      w.broken_why = "rank " + std::to_string(w.rank) + " failed during " + what;
    }
    throw;
  }
  mover.wait_all();
  for (const Bucket& b : mover.buckets()) finish(b, owners, grads, w.size);
}

}  // namespace kiln::dist
