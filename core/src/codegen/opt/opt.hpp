// codegen/opt/opt.hpp - optimisation actions on a kernel AST's ranges, and the heuristic that picks them.
//
// An action splits one range (by axis id) into an outer part that keeps the axis and an inner
// part of `amount`:
//   UPCAST  inner output part is expanded: lanes of a vector (vectorize) or copies in registers
//   UNROLL  the same for a reduce range (several accumulators or a vector accumulator)
//   LOCAL   inner part becomes the workgroup's local index (targets with local memory)
//   THREAD  the range is cut into `amount` chunks run by the CPU's threads (a dynamic inner
//           bound handles sizes that do not divide); several axes may be threaded, their
//           chunks multiply
//   GROUP   the inner part of a reduce axis is spread over the workgroup (targets with local
//           memory): each work item reduces a strided share, the partials meet in local memory
//   SWAP    exchanges the loop order of two output axes (`amount` is the other axis' id):
//           which operand stays in cache across the inner loop
//   PADTO   pads an output or reduce axis up to a multiple of `amount`, so a later UPCAST, UNROLL
//           or vector of `amount` divides it (odd and prime sizes keep the fast path). The padded
//           iterations are masked: every load and store along the axis is gated (a gated load
//           reads nothing and yields 0), and a reduce over the axis adds its identity for them;
//           but a load stepping over an output axis by more than kMaxShuffleStride elements (any
//           step, on a target without masked vectors) reads the axis' last real element instead
//           (clamped: no branch in the loops inside it). After the actions the loop left on the
//           axis runs its partial last iteration apart (peel.cpp); PADTO(axis, amount, gated)
//           keeps the gates in every iteration instead (a search's choice)
//   BLOCK   cuts a reduce axis into blocks of `amount`: the loop over blocks (a new BLOCK axis)
//           runs outside the output loops and each block adds its partial sums into the output
//           (block.cpp; CPU targets; an ADD reduce stored in its own dtype, its epilogue run in
//           the last block), so one block's panel of an input stays in cache across the output loops
//   STAGE   copies the part of an input (`amount` is its PARAM slot) that the loops inside output
//           axis `axis` read, and that does not move along `axis`, into a contiguous per-thread
//           buffer before `axis` opens; the kernel then reads the buffer (stage.cpp; CPU targets).
//           STAGE actions come last; each stages another input
// What each action applies to, makes and needs is one row of kOptActions (below): opt_problem,
// apply_opt, parse_opt and the heuristics read it. Actions are applied in order; KILN_NOOPT=1
// applies none. Whether an action applies depends on the kernel as the actions before it left it
// (a whole-axis UPCAST removes the axis): every action, the heuristic's and a user's alike, is
// checked by opt_problem first.
#pragma once
#include <cstddef>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/plugin.h"
#include "kiln/uop.hpp"

namespace kiln {

struct Target;

enum class OptOp : uint8_t { UPCAST, UNROLL, LOCAL, THREAD, SWAP, GROUP, PADTO, STAGE, BLOCK, count_ };
inline constexpr size_t kNumOptOps = static_cast<size_t>(OptOp::count_);

// How an action reshapes its axis.
enum class OptSplit : uint8_t {
  exact,     // outer (axis / amount, keeps the id) * amount + inner (amount, a new id); amount divides
  chunks,    // outer = `amount` chunks (a new id), inner = the chunk, with a dynamic bound when the
             // amount does not divide (THREAD)
  exchange,  // no split: the axis trades places with the axis named by `amount` (SWAP)
  pad,       // no split: the axis grows to the next multiple of `amount`, the excess masked (PADTO)
  stage,     // no split: input `amount` is staged in a buffer filled before the axis opens (STAGE)
  blocks,    // outer (axis / amount, a new id, outermost loop) * amount + inner (keeps the id) (BLOCK)
};

// A set of axis types (the types an action applies to).
constexpr uint32_t axis_bit(AxisType t) { return 1u << static_cast<unsigned>(t); }
constexpr uint32_t kLoopAxes = axis_bit(AxisType::LOOP), kReduceAxes = axis_bit(AxisType::REDUCE);

// One action, as data: opt_problem validates by it, apply_opt applies by it, heuristics read it.
struct OptAction {
  OptOp op;              // its own index (checked below)
  const char* name;      // as Opt::str() writes it and parse_opt reads it
  uint32_t on;           // the axis types it applies to (axis_bit set)
  AxisType makes;        // the type of the part it splits off (the axis' own type when none)
  OptSplit split;
  bool expands;          // copies of the body (UPCAST/UNROLL): counts toward kMaxExpansion, may be
                         // vector lanes, and a whole-axis split leaves no outer loop behind
  uint32_t needs;        // KILN_TARGET_HAS_* flags the target must have (SHARED: and shared_max > 0)
};

inline constexpr OptAction kOptActions[] = {
    {OptOp::UPCAST, "UPCAST", kLoopAxes, AxisType::UPCAST, OptSplit::exact, true, 0},
    {OptOp::UNROLL, "UNROLL", kReduceAxes, AxisType::UNROLL, OptSplit::exact, true, 0},
    {OptOp::LOCAL, "LOCAL", kLoopAxes, AxisType::LOCAL, OptSplit::exact, false, KILN_TARGET_HAS_LOCAL},
    {OptOp::THREAD, "THREAD", kLoopAxes, AxisType::THREAD, OptSplit::chunks, false, KILN_TARGET_HAS_THREADS},
    {OptOp::SWAP, "SWAP", kLoopAxes, AxisType::LOOP, OptSplit::exchange, false, 0},
    {OptOp::GROUP, "GROUP", kReduceAxes, AxisType::GROUP_REDUCE, OptSplit::exact, false,
     KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED},
    {OptOp::PADTO, "PADTO", kLoopAxes | kReduceAxes, AxisType::LOOP, OptSplit::pad, false, 0},
    {OptOp::STAGE, "STAGE", kLoopAxes, AxisType::LOOP, OptSplit::stage, false, KILN_TARGET_HAS_THREADS},
    {OptOp::BLOCK, "BLOCK", kReduceAxes, AxisType::BLOCK, OptSplit::blocks, false, KILN_TARGET_HAS_THREADS},
};
static_assert(std::size(kOptActions) == kNumOptOps, "every OptOp has a row in kOptActions");
static_assert([] {
  for (size_t i = 0; i < kNumOptOps; ++i)
    if (static_cast<size_t>(kOptActions[i].op) != i) return false;
  return true;
}(), "kOptActions rows are in OptOp order");
constexpr const OptAction& opt_action(OptOp op) { return kOptActions[static_cast<size_t>(op)]; }

struct Opt {
  OptOp op;
  int64_t axis;    // RANGE axis id
  int64_t amount;
  bool vectorize = false;  // UPCAST/UNROLL: lanes of one vector (at most one per kernel)
  // PADTO: every iteration keeps the gates, the partial last one is not run apart (peel.cpp).
  // Whether the peel pays depends on how the backend compiles the shorter loop (on the cpu,
  // LLVM may unroll it and spill a register tile), so it is the search's to try.
  bool gated = false;
  std::string str() const;
  bool operator==(const Opt&) const = default;
};

// Reads one action as Opt::str() writes it: "UPCAST(1, 8, vector)", "SWAP(0,1)"; a list is separated
// by spaces, commas between actions or semicolons ("UPCAST(1, 8, vector) THREAD(0, 2)"). Throws
// kiln::Error(invalid_argument) naming the text and the expected form.
Opt parse_opt(std::string_view text);
std::vector<Opt> parse_opts(std::string_view text);
// A list as parse_opts reads it back, the actions separated by spaces ("" when empty).
std::string opts_text(std::span<const Opt> opts);

// At most this many vector lanes on one axis (wider vectors are split to the target's width).
inline constexpr int64_t kMaxVectorLanes = 64;
// PADTO at most doubles an axis: past that, more than half of its iterations would be masked.
inline constexpr int64_t kMaxPadFactor = 2;
// At most this many copies of one value from UPCAST/UNROLL (lanes included; ranges no value
// shares do not multiply): past it the generated code only grows.
inline constexpr int64_t kMaxExpansion = 1024;

// How many copies of a value expanding range r of `ast` by `amount` (UPCAST/UNROLL) would make,
// with the expansions already there (the kMaxExpansion check; the search keeps a lower bound).
int64_t copies_after(const UOp& ast, const UOp& r, int64_t amount);
// No value depends on both ranges while both are open (a REDUCE or END closes the ranges it lists):
// softmax's max and its sum of exp each reduce the row in a loop of their own (schedule/group.cpp).
bool independent(const UOp& ast, const UOp& a, const UOp& b);

// Why `opt` does not apply to `ast` as it stands, or "" when it does. With a target, also the
// target's limits (threads, workgroup sizes, shared memory); without, only the kernel's structure.
std::string opt_problem(const UOp& ast, const Opt& opt, const Target* target = nullptr);
// Applies one action; throws kiln::Error(invalid_argument) with opt_problem's reason.
UOp apply_opt(const UOp& ast, const Opt& opt, const Target* target = nullptr);
// A given list of actions (a test's, `kiln compile --opts`, a search's), applied in order; the
// first that does not apply is an error naming its position, the action and the reason.
UOp apply_opts(const UOp& ast, std::span<const Opt> opts, const Target& target);

// A kernel being optimised: actions are added one at a time and applied only when they validate
// (a heuristic proposes, the plan disposes). KILN_DEBUG>=3 logs the skipped ones.
class OptPlan {
 public:
  OptPlan(UOp ast, const Target& target) : ast_(std::move(ast)), target_(target) {}
  bool add(const Opt& opt);  // false (and nothing changes) when opt does not apply
  const UOp& ast() const { return ast_; }
  const std::vector<Opt>& opts() const { return opts_; }

 private:
  UOp ast_;
  const Target& target_;
  std::vector<Opt> opts_;
};

// The hand-coded heuristic for `target` (heuristic.cpp): its actions, already applied.
OptPlan hand_coded_optimizations(const UOp& ast, const Target& target);
// The heuristic's actions applied (none with KILN_NOOPT); the chosen ones are appended to `applied`.
UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied = nullptr);

// What the heuristics look at: a kernel's ranges and memory accesses.
struct KernelShape {
  std::vector<UOp> out;      // output (LOOP) ranges in END order
  std::vector<UOp> reduce;   // REDUCE ranges
  UOp store_index;           // null when the kernel stores nothing
  UOp contiguous;            // the output range the store walks with stride 1 (null if none)
  std::vector<UOp> load_indices;
  int itemsize = 4;          // bytes per stored element
  // the stored dtype of that size: a float16/bfloat16 the target does not compute in is computed in
  // float32 (codegen/decompose.cpp), so its vectors hold float32 lanes (Kernel::lanes)
  Scalar stored = Scalar::float32;
};
KernelShape inspect_kernel(const UOp& ast);
int64_t const_size(const UOp& r);  // 0 when symbolic
// What is left of range r's size after `opts` split it (PADTO rounds it up, the exact splits on its
// axis divide it, a BLOCK leaves its block size; THREAD chunks and SWAP leave the count alone).
// 0 when symbolic.
int64_t remaining(const UOp& r, std::span<const Opt> opts);
bool has_stride(const UOp& idx, const UOp& r, int64_t want);
// Pads what is left of range r (PADTO) up to a multiple of `amount` unless it divides already;
// true when it divides now. Only when padding adds at most a quarter of r's iterations (the masked
// ones cost as much as real ones), so a heuristic asks before it splits r by `amount`.
bool pad_to(OptPlan& plan, const UOp& r, int64_t amount);

// STAGE (stage.cpp). The buffer lives on the stack of the thread running the kernel: at most
// this many bytes (thread stacks are 8 MiB on Linux; a larger panel is not staged).
inline constexpr int64_t kMaxStageBytes = int64_t{256} << 10;
// A vector gather whose index moves by 2 to this many elements a lane is the few vector loads that
// cover its span and a pick of their lanes (expander.cpp); PADTO gates such accesses rather than
// clamp them (a clamp is no stride, and the lanes would be gathered one by one).
inline constexpr int64_t kMaxShuffleStride = 4;
// Whether a vector of `lanes` lanes whose index moves by `stride` elements a lane is loaded that way
// (contiguous loads and picks: a stride of 2 to kMaxShuffleStride, at least 4 lanes picked from
// each load); otherwise it is gathered lane by lane. The expander and the heuristic both ask it.
bool picks_strided_lanes(int64_t stride, int64_t lanes);
// Why STAGE(axis, amount) does not apply to `ast` (r is the range of `axis`), or "".
std::string stage_problem(const UOp& ast, const UOp& r, const Opt& opt, const Target* target);
// Applies it (stage_problem must be ""): the copy loops get axis ids from `first_axis` on. On a
// target with DOT2 a bfloat16 panel of products over an unrolled K pair is staged in pairs.
UOp stage_operand(const UOp& ast, const UOp& r, const Opt& opt, int64_t first_axis, const Target* target);
// Whether the kernel sums products of two bfloat16 loads over `reduce`, one of them reading it
// contiguously (a bfloat16 matmul whose A pairs are one 32-bit load: DOT2's pattern; not A.T @ B,
// whose pairs of two loads a row apart measured slower than float32's multiply-adds).
bool bf16_products(const UOp& ast, const UOp& reduce);
// Whether a STAGE was applied: it is the kernel's last action (a later split could cut its copy
// loop or move the loads it replaced).
bool is_staged(const UOp& ast);

// A row buffer (row_values.cpp, before the actions) holds one row's values: copies along an
// output axis that does not index it (another row, a batch) would share it. Why expanding range
// r does not apply for that reason, or "".
std::string row_buffer_problem(const UOp& ast, const UOp& r);

// BLOCK (block.cpp): why it does not apply to `ast` (r is the reduce range), or ""; applying it
// (block_problem must be ""), the block loop getting axis id `block_axis`.
std::string block_problem(const UOp& ast, const UOp& r, const Opt& opt);
UOp block_reduce(const UOp& ast, const UOp& r, const Opt& opt, int64_t block_axis);

// Workgroup actions (LOCAL, ...) for targets with local memory, appended after the register
// ones (opt_gpu.cpp).
void add_workgroup_opts(const KernelShape& k, const Target& target, OptPlan& plan);

// Rebuilds every END (and REDUCE) that closes range `r` so it closes the `replacement` ranges
// instead (in that order), and puts `value` wherever r was used.
UOp replace_range(const UOp& ast, const UOp& r, const UOp& value, const std::vector<UOp>& replacement);

// Constant stride of `idx` along range `r` (idx(r+1) - idx(r), checked linear), if it has one.
// Five simplifications of the index each time: inside a StrideMemo the answer is kept.
bool stride_of(const UOp& idx, const UOp& r, int64_t& stride);
// While one lives, stride_of on this thread remembers its answers (a pure function of the two
// nodes, which the table holds): a kernel's heuristic and expander ask the same (load index, range)
// pairs again and again (MobileNetV2's codegen spent 38% of its time there). to_program opens one
// per kernel; nested ones share the outermost's table, which goes with it.
class StrideMemo {
 public:
  StrideMemo();
  ~StrideMemo();
  StrideMemo(const StrideMemo&) = delete;
  StrideMemo& operator=(const StrideMemo&) = delete;

 private:
  bool owner_;
};
// Whether PADTO on output axis `r` clamps a load at `idx` instead of gating it: the load steps
// over r by more than kMaxShuffleStride elements, or at all where `target` has no masked vectors
// (a gated vector there is gated lanes anyway; a null target has them) or where r can no longer
// take vector lanes (`lanes_elsewhere`: another axis has them) (pad_range; the heuristic asks
// before padding).
bool clamps_along(const UOp& idx, const UOp& r, const Target* target = nullptr, bool lanes_elsewhere = false);
// `idx` with PADTO's clamps of an output axis (where(e < n, e, n - 1), pad_range) replaced by e:
// how an access moves along its ranges, for layouts (STAGE's) and PADTO's clamp rule, never for
// addresses.
UOp without_clamps(const UOp& idx);
int64_t range_axis(const UOp& r);
// The kernel's ranges (toposort order).
std::vector<UOp> ranges_of(const UOp& ast);
// The range of axis id `axis` in the kernel, or a null UOp.
UOp find_axis(const UOp& ast, int64_t axis);
AxisType range_type(const UOp& r);
bool range_vectorized(const UOp& r);

}  // namespace kiln
