// tests/e2e/fuzz/program.hpp - the differential fuzzer's shared declarations (test_fuzz; the fuzzer
// as a whole is described at the top of tests/e2e/fuzz_test.cpp). A case is a Program: a list of
// Nodes (steps over t0, t1, ...), each an op of earlier steps, held as plain data so that it can be
// evaluated on the host (host_eval.cpp), run on kiln in each mode (run_modes.cpp), printed as C++
// (reproducer.cpp), drawn at random (generator.cpp) and shrunk (fuzz_test.cpp). Reads (program.cpp)
// is the analysis of a program's assigns that says which steps' values the contract fixes. Nothing
// here is kiln's beyond the public API; everything is in kiln::fuzz.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln::fuzz {

// ---- the host evaluator's arrays and dtypes (host_eval.cpp) ----

// A host value: row-major, float64 (integers exact).
struct Arr {
  Shape shape;
  std::vector<double> v;
};

// The number of elements of shape s.
int64_t count(const Shape& s);
// The shape a and b broadcast to (numpy's rules; the two must be compatible).
Shape broadcast_shape(const Shape& a, const Shape& b);
// Whether shape `from` broadcasts to `to` exactly (no more axes than it, and `to` unchanged).
bool broadcasts_to(const Shape& from, const Shape& to);

// Whether d is float16 or bfloat16.
bool is_half(DType d);
// d as the C++ expression that names it ("dtypes::float32", "dtypes::bool_").
std::string cpp_dtype(DType d);
// The dtype kiln sums d in (reduce.cpp's sum_acc_dtype: small integers and bools in 32 bits; half
// floats are summed in float32 and cast back, so their sum keeps their dtype).
DType sum_dtype(DType d);

// ---- programs ----

enum class K { Input, Unary, Binary, Scalar, Compare, Where, Cast, Reshape, Permute, Pad, Shrink, Flip, Expand, Reduce, Softmax, Var, Matmul, Assign, Clone };
enum Unary { kNeg, kRelu, kAbs, kTanh, kSigmoid, kExp, kSquare, kNot };
enum Binary { kAdd, kSub, kMul, kMax, kMin, kAnd, kOr, kXor };
enum Cmp { kLt, kGt, kEq, kNe };
enum Reduce { kSum, kRMax, kRMin, kMean };

// One step: t<i> = op(t<a>, t<b>, t<c>).
struct Node {
  K k = K::Input;
  int a = -1, b = -1, c = -1;  // operands (Assign: a the target, b the value)
  int sub = 0;  // Unary/Binary/Cmp/Reduce kind; Scalar: 0 multiply, 1 add; Where: 0 where(a > b, a, c),
                // 1 where(a, b, c) with a bool; Softmax: 1 log_softmax; Var: 1 std
  std::vector<int64_t> ints;  // reshape shape, permute order, pad/shrink pairs, flip axes, expand shape
  int axis = 0;
  bool keep = false;
  double s = 0;  // Scalar: the host scalar (an integer for integer tensors)
  Shape shape;
  DType dtype = dtypes::float32;  // Cast: the dtype cast to
  std::vector<double> values;     // Input: its elements
  int shard = -1;                 // Input, when sharded: the axis split over the devices; -1 replicated
};

struct Program {
  std::vector<Node> nodes;
  uint64_t seed = 0;     // orders the one-by-one realizes and draws the Jit's later inputs
  bool at_once = true;   // eager: Tensor::realize_all of every compared step, else one realize each
};

// ---- what the contract fixes of a program with assigns (program.cpp) ----

// The steps node n reads (a, b, c that are set), in that order.
std::vector<int> operands(const Node& n);
// The input whose buffer node i is a handle of (an Input, or an Assign to one), else -1.
int root(const Program& p, int i);

// The analysis of a program's assigns: which inputs' buffers each step reads (as they were when the
// step was built), which steps are stale (a later assign writes a buffer they read: their value
// depends on when they are realized), and whether the program keeps to what is fixed.
struct Reads {
  std::vector<std::set<int>> roots;  // per step
  std::vector<int> stale_at;         // per step: the first later assign that makes it stale, or INT_MAX
  bool valid = true;
};
Reads analyse(const Program& p);

// The steps whose values the contract fixes (see fuzz_test.cpp's file comment), in order.
std::vector<int> compared(const Program& p);
// The inputs some step assigns.
std::vector<int> assigned_inputs(const Program& p);

// ---- the host evaluator (host_eval.cpp) ----

// What the last host_eval saw at the points where a value or a gradient switches: the smallest gap
// (relative) between the two sides of a float comparison, per dtype class, and of any switch (also
// maximum/minimum, relu and abs at 0, a max or min reduction's top two) for gradients. Where a gap
// is within rounding, kiln may take the other side and both answers are right.
struct Gaps {
  double cmp_f32 = 0, cmp_half = 0, any = 0;
};
extern Gaps g_gaps;  // (set by every host_eval: read it after the call whose program it is about)

// The value of every step (an assign's target reads the assigned value from then on); sets g_gaps.
std::vector<Arr> host_eval(const Program& p);

// ---- where a program runs (run_modes.cpp runs it; reproducer.cpp prints it) ----

// Where and how a program runs: the device of its inputs, float dtypes as float64 (the ref mode), the
// devices its inputs are sharded over (empty: none).
struct Placement {
  std::string device = "cpu:0";
  bool f64 = false;
  std::vector<std::string> shard_over;
};

// The dtype a step of dtype d runs in at `at` (the ref mode runs floats as float64).
inline DType run_dtype(DType d, const Placement& at) { return at.f64 && d.is_float() ? dtypes::float64 : d; }

// Whether a step averages an integer input (mean, var, std): kiln's answer is float32 by rule (an
// integer mean is float32, its sum wrapping in the integer's accumulator), also in the ref mode,
// whose float64 tolerance such a value and what follows it cannot meet (seed 505 case 212: a
// log_softmax of a uint8 var off by float32's rounding). Widening the input to float64 first
// would not be the same program: it does not wrap (seed 1607 case 1597). The ref mode skips them.
inline bool averages_an_integer(const Program& p) {
  for (const Node& n : p.nodes)
    if ((n.k == K::Var || (n.k == K::Reduce && n.sub == kMean)) && !p.nodes[static_cast<size_t>(n.a)].dtype.is_float()) return true;
  return false;
}

// ---- the reproducer: the program as C++ against the public API (reproducer.cpp) ----

// The expression that makes input n with values v as `at` says (the values as literals; realized,
// then sharded and realized when `at` shards).
std::string input_text(const Node& n, const std::vector<double>& v, const Placement& at);
// The steps as statements, one a line, each after `indent`; `input(i, k)` is the expression of
// Input step i (the k-th input). A step that is not compared says so in its comment.
std::string steps_text(const Program& p, const Placement& at, const std::function<std::string(int, int)>& input, const std::string& indent);

// ---- the generator (generator.cpp) ----

// Random programs and input values, all drawn from one std::mt19937_64: the same seed draws the same
// programs and values.
class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin(int percent = 50) { return pick(100) < percent; }
  int64_t dim() { return std::array<int64_t, 6>{1, 2, 3, 3, 5, 7}[static_cast<size_t>(pick(6))]; }
  uint64_t next() { return rng_(); }

  // Exact in every dtype: floats are multiples of 1/64 in [-2, 2] (gradient cases: any float32 in
  // [-1.5, 1.5], so that ties are rare); narrow integers reach their ends, where they wrap.
  std::vector<double> values(const Shape& s, DType d, bool smooth);

  // A random program; `smooth`: float32 and differentiable (no comparisons, casts, assigns or
  // clones). Its inputs' shard axes have at least `shard_devices` rows.
  Program program(bool smooth, int shard_devices);

 private:
  int add_input(Program& p, const Shape& s, DType d, bool smooth);
  std::vector<int> usable(const Program& p);
  int operand(Program& p, const Shape& s0, DType d, int besides, bool smooth);
  void push(Program& p, Node n) { p.nodes.push_back(std::move(n)); }
  void step(Program& p, bool smooth, int& muls);

  std::mt19937_64 rng_;
  DType base_ = dtypes::float32;
  int shard_devices_ = 3;
};

// ---- checking a program in one mode (run_modes.cpp) ----

// The outcome of one check of a program in one mode.
struct Outcome {
  enum Kind { Pass, Fail, Skip } kind = Pass;
  std::string why;    // Fail: what was wrong; Skip: why it was not compared
  std::string repro;  // Fail: the C++ reproducer
};

// eager, sharded and ref (as `at` says): every step built, the compared ones realized all at once
// or one by one (Program::at_once), read and compared with host_eval. A sharded program that runs
// into a documented limit of sharding is a Skip.
Outcome run_eager(const Program& p, const Placement& at);
// jit: a kiln::Jit of the program over three calls with new inputs (assigned inputs are states),
// every call's outputs and states compared, and each call's outputs cloned and compared again after
// the last call.
Outcome run_jit(const Program& p, const Placement& at);
// gradient: d((t_last * w).sum()) / d(each input), random w, against central differences of
// host_eval's loss in float64 (elements where a kink is within reach are skipped).
Outcome run_gradient(const Program& p, const Placement& at);

}  // namespace kiln::fuzz
