// dist/world.hpp - kiln::dist's MPI state and the guards every collective runs under: the header
// exchange that checks the ranks agree (and names a rank that is missing), MPI error checks, and
// the watchdog over a blocking data transfer. collectives.cpp builds the public operations on it.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/dist.hpp"

namespace kiln::dist::detail {

enum class Kind : int32_t { barrier = 1, all_reduce, broadcast, grads };

// What one rank is about to do, sent to every other rank before any data moves. Fixed size and
// trivially copyable (it travels as MPI_BYTE). `what` is the human form used in error messages.
struct Header {
  uint64_t magic = 0;
  uint64_t seq = 0;       // this rank's collective count (the same on every rank when they agree)
  int32_t kind = 0;       // Kind
  int32_t op = -1;        // ReduceOp, -1 when none
  int32_t root = -1;      // broadcast's root, -1 when none
  int32_t dtype = -1;     // Scalar, -1 when none
  int64_t numel = 0;
  uint64_t shape_hash = 0;  // the shape (or every gradient's dtype and shape)
  int64_t payload_bytes = 0;  // data sent with the header (small all-reduces: see agree)
  char what[160] = {};
};

// The MPI world as kiln::dist uses it (valid after init()).
struct World {
  bool up = false;          // init() ran, finalize() did not
  bool owns_mpi = false;    // init() called MPI_Init_thread (so finalize() calls MPI_Finalize)
  bool broken = false;      // a rank went missing: collectives throw at once, finalize() skips MPI
  std::string broken_why;
  int thread_level = 0;     // MPI_Query_thread
  int rank = 0, size = 1;
  MPI_Comm headers = MPI_COMM_NULL;  // dups of MPI_COMM_WORLD: headers and data never mix with the
  MPI_Comm data = MPI_COMM_NULL;     // program's own messages or each other
  std::vector<int> pids;             // each rank's pid and host (for the liveness check)
  std::vector<std::string> hosts;
  std::vector<std::string> places;   // host and pid namespace: pids compare only within one
  uint64_t seq = 0;
  std::vector<std::vector<char>> inbox;  // agree's receive buffers, one per rank, kept between calls
  std::vector<char> outbox;
  double timeout_s = 600;
  int64_t bucket_bytes = -1;  // all_reduce_grads's buckets; -1: KILN_DIST_BUCKET_BYTES, else kBucketBytes
  bool overlap = true;        // all_reduce_grads overlaps its transfers with the backward pass
  bool timeout_set = false;  // set_timeout() ran: KILN_DIST_TIMEOUT is not read
};
World& world();  // calls init() when it has not run

// kiln::Error (code) "kiln::dist: <op> on rank R of N: <message>".
[[noreturn]] void fail(ErrorCode code, const std::string& op, const std::string& message);
// Throws (internal) naming op and MPI's message for an MPI return code other than MPI_SUCCESS.
void check(int rc, const std::string& op);
// "rank 1 (pid 4242 on host vm)".
std::string rank_name(int r);

// Sends `mine` to every rank and receives theirs (an all-to-all of small messages, so a rank that
// does not arrive is known by name); waits at most the timeout. Throws when a rank is missing
// (marks the world broken) or when any header differs from this rank's in kind, op, root, dtype,
// numel, shape or payload size (invalid_argument naming both ranks' `what`). Returns every rank's
// header. With mine.payload_bytes > 0 (at most kEagerBytes) the header carries `payload` along:
// a small all-reduce then costs one exchange instead of two, each rank combining the payloads
// itself in rank order (the same bits everywhere); `payloads` gets every rank's (valid until the
// next agree).
// Past kEagerRanks ranks each rank would receive and combine every other rank's payload (p - 1 of
// them, where MPI's algorithms need log p steps): larger worlds always use MPI.
constexpr int64_t kEagerBytes = 16 << 10;
constexpr int kEagerRanks = 8;
inline bool eager(int64_t bytes, int ranks) { return bytes > 0 && bytes <= kEagerBytes && ranks <= kEagerRanks; }
std::vector<Header> agree(Header mine, const void* payload = nullptr, std::vector<const char*>* payloads = nullptr);
// Throws kiln::Error (failed_precondition) when a kiln::Jit is capturing on this thread: a Jit
// replays kernels only, so the transfer would run at the capture and never again (each replay
// would keep the captured call's result). Called before any exchange, so every rank throws alike.
void refuse_in_jit(const std::string& op);
// A header for this rank's next collective (seq filled in).
Header header(Kind kind, const std::string& what);
uint64_t shape_hash(const std::vector<int64_t>& shape, uint64_t h = 1469598103934665603ULL);

// Arms the watchdog for one blocking data transfer: when the transfer outlives the timeout the
// process ends (MPI_Abort) with a message naming `op` and this rank on stderr.
class Transfer {
 public:
  explicit Transfer(const std::string& op);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

 private:
  uint64_t ticket_;
};

// The other ranks on this host seen dead ("rank 1 (pid 4242 on host vm)", comma-separated), or "".
std::string dead_peers();
// Marks the world broken (later collectives throw at once, finalize skips MPI) and throws `why`.
[[noreturn]] void break_world(ErrorCode code, const std::string& op, const std::string& why);

// 64-byte aligned host memory from a small pool of recently freed blocks (collectives.cpp).
std::shared_ptr<void> host_alloc(size_t bytes);
// Mean: the sum divided by the ranks, in the element type (halves through float32).
void divide(void* data, int64_t n, DType dt, int by);
// Every rank's payload (agree's eager exchange) combined in rank order: the same operations in the
// same order on every rank, so the same bits (MPI_Reduce_local applies MPI's own and kiln's half ops).
void combine(const std::vector<const char*>& parts, void* out, size_t bytes, int count, MPI_Datatype type, MPI_Op mop,
             const std::string& what);
// MPI counts are ints: a larger tensor goes in pieces of at most 2^30 elements.
template <typename F>
void in_pieces(int64_t count, int itemsize, F&& f) {
  constexpr int64_t kPiece = int64_t{1} << 30;
  for (int64_t at = 0; at < count; at += kPiece) f(static_cast<size_t>(at) * static_cast<size_t>(itemsize), static_cast<int>(std::min(kPiece, count - at)));
}

// The MPI_Op for `op` over `dtype` (custom ops for float16/bfloat16, created at init), and the
// MPI_Datatype of dtype's elements. Throw invalid_argument for pairs that have no meaning.
MPI_Datatype mpi_type(DType dtype, const std::string& op_name);
MPI_Op mpi_op(ReduceOp op, DType dtype, const std::string& op_name);
void create_half_ops();
void free_half_ops();

}  // namespace kiln::dist::detail
