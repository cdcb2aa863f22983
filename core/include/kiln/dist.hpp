// kiln/dist.hpp - data-parallel work across processes and hosts over MPI (DESIGN.md §5.5).
//
// Library kiln::dist (libkiln_dist; built when CMake finds MPI, Open MPI from Debian's
// libopenmpi-dev; `find_package(kiln COMPONENTS dist)`). libkiln itself never links MPI, and
// <kiln/kiln.hpp> does not include this header. One process per rank, each with its own devices,
// as torch's DistributedDataParallel: run `mpirun -np N prog` (docs/dist.md: flags, hostfiles).
//
// Every collective is called by every rank of the world in the same order (MPI's rule), from one
// thread of the process at a time; collectives are not differentiable (no gradient flows through
// their results: all_reduce_grads is how gradients cross the ranks). Before any
// data moves, the ranks exchange a small header (the operation, dtype, shape, reduce op, root):
//  - a rank that calls with another dtype, shape, op or root makes every rank throw kiln::Error
//    (invalid_argument) naming both ranks' values; no data is exchanged, nothing is corrupted;
//  - a rank that does not arrive (it threw, exited, was killed, hangs) makes the others throw
//    kiln::Error (unavailable for a rank seen dead, deadline_exceeded otherwise) naming it, at once
//    when a rank on this host is seen dead, else after the timeout (KILN_DIST_TIMEOUT seconds,
//    default 600; set_timeout). After such an error the world is broken: later collectives throw
//    at once and finalize() does not wait for the missing rank.
// Up to 16 KiB of data rides with the header in worlds of up to 8 ranks (each rank combines the ranks' payloads itself, in
// rank order); more then moves with blocking MPI calls (MPI_Allreduce / MPI_Bcast, Open MPI's tuned
// algorithms); a rank that dies during those cannot be caught by a header, so a watchdog
// thread ends the process (MPI_Abort, a message naming the operation and this rank on stderr)
// when a transfer outlives the timeout: slow, never a hang. An overlapped all_reduce_grads'
// transfers run on a thread of their own while the caller waits watching the ranks: a rank that
// dies then is named instead.
// A collective called while a kiln::Jit captures throws kiln::Error (failed_precondition): a Jit
// replays kernels only, the transfer would not run again. MPI errors are returned, not fatal
// (MPI_ERRORS_RETURN), and become kiln::Error naming the operation, the rank and MPI's message.
//
// Tensors of any device: the data goes through host memory (cpu tensors without a copy; other
// devices with one copy each way; all_reduce copies to the host in 4 MiB pieces on a helper thread
// while the piece before is reduced). Results live on the input's device; a tensor on several local
// devices (Tensor::shard) composes: each part is reduced across the ranks and the result keeps the
// placement and sharding.
#pragma once
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::dist {

enum class ReduceOp { Sum, Max, Min, Mean };

// MPI_Init_thread (MPI_THREAD_MULTIPLE requested, MPI_THREAD_SERIALIZED needed) unless MPI is
// already initialized (by the program, mpi4py, ...: then its MPI is used and left to its owner to
// finalize); idempotent. Without mpirun the world has one rank (MPI's singleton init). Reads
// KILN_DIST_TIMEOUT. Every other function calls init() first when it has not run.
void init();
bool initialized();  // init() has run and finalize() has not
int rank();
int world_size();
// MPI_Finalize when init() initialized MPI (a program's own MPI is left alone); idempotent. After
// a fault (a rank missing) it returns without finalizing: MPI would wait for the missing rank.
void finalize();
void barrier();

// `op` over every rank's t (same shape and dtype on every rank), returned on every rank (the same
// bits on every rank), on t's device with t's dtype and shape. Every scalar dtype: bool (Sum and
// Max: or, Min: and), integers (Sum wraps as the dtype does), float16/bfloat16 (each pairwise
// step computed in float32 and rounded to the dtype: a custom MPI_Op over 16-bit words), float32,
// float64. Mean: the Sum divided by world_size() (floats only; an integer or bool Mean is
// invalid_argument: cast to a float dtype first).
Tensor all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum);
// root's t on every rank (every rank passes a tensor of the root's shape and dtype; only the root's
// values are read; the root gets t itself back, realized). root outside [0, world_size()) is
// invalid_argument.
Tensor broadcast(const Tensor& t, int root = 0);
// Replaces each parameter's .grad() by the mean of it over the ranks (data parallelism: then every
// rank's optimizer takes the same step). Gradients travel in buckets of one dtype; a parameter
// without a gradient is skipped, and every rank must have gradients for the same parameters, in
// the same order, of the same shapes (checked by the header). The parameter's gradient is a new
// tensor (over the message's memory on the cpu device): a handle to the old gradient taken before
// the call keeps the old values; read .grad() again.
// Gradients not realized yet (right after backward()) are realized by this call, overlapped with
// the transfers: in buckets (set_bucket_bytes) in reverse parameter order, each all-reduced on a
// transfer thread while the backward pass computes the next; one schedule, the same kernels and
// bits as realizing them first (docs/dist.md). Realized gradients, gradients that make one bucket,
// and a world of one rank: realize, then the same buckets (the messages depend on the dtypes and
// shapes only, so ranks on different paths agree); one dtype within 16 KiB rides with the header.
void all_reduce_grads(const std::vector<Tensor>& params);

// ---- additions beyond §5.5 ----
// all_reduce_grads that also realizes `also` (the loss, metrics) in the backward pass's schedule:
// realized afterwards on its own, a loss would run the forward pass again.
void all_reduce_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& also);
// all_reduce_grads's bucket size, bytes (> 0; the same on every rank: the header checks it): a
// bucket closes once it holds this much (a larger gradient is a bucket of its own). Default
// KILN_DIST_BUCKET_BYTES, else 1 MiB.
void set_bucket_bytes(int64_t bytes);
int64_t bucket_bytes();
// Whether all_reduce_grads overlaps lazy gradients' transfers with the backward pass (default on;
// off: realize every gradient, then the plain path), to measure what the overlap buys.
void set_overlap(bool on);
bool overlap();
// The watchdog's limit, seconds (> 0): how long a collective waits for a missing rank, and how
// long one data transfer may take. Default KILN_DIST_TIMEOUT, else 600.
void set_timeout(double seconds);
double timeout();
// The ranks' devices as one mesh for Tensor::shard (DESIGN §5.1): while on, every all-reduce the
// frontend makes over a rank's local devices (a sum or max over a sharded tensor's shard axis; the
// gradient of a parameter replicated over the devices) also covers every rank, as if each rank's
// parts were its share of one tensor sharded over all the ranks' devices. The MPI call happens
// when the reduction is built (a synchronization point: every rank builds it). Other reductions
// over the shard axis (a product) are kiln::Error unimplemented. Off by default.
void set_sharding_spans_ranks(bool on = true);
bool sharding_spans_ranks();
// "kiln::dist over Open MPI 4.1.4 (MPI 3.1), rank 0 of 2 on host vm (pid 123)".
std::string describe();

}  // namespace kiln::dist
