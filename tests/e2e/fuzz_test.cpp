// tests/e2e/fuzz_test.cpp - a seeded differential fuzzer over the public Tensor API (issue 43).
//
// A case is a random program held as data: a list of steps over named tensors (t0, t1, ...) built
// from random inputs of odd and size-1 shapes. Steps: elementwise ops with tensors and host scalars,
// broadcasting, comparisons, where, casts, views (reshape, permute, pad, shrink, flip, expand),
// reductions (sum, max, min, mean, var, std, softmax, log_softmax over a random axis), matmul,
// clone, and assigns to an input (chained, read before and after). Inputs are float32, float16,
// bfloat16, int32, int8, uint8 or bool; a step's dtype follows kiln's rules (a comparison is bool, an
// int8 sum is int32, an integer mean is float32), and integers wrap as two's complement.
//
// Its value is computed by a plain host evaluator in float64 and exact integers (fuzz/host_eval.cpp:
// nothing of kiln's is trusted) and compared with kiln's, run these ways:
//   eager      on cpu:0, the steps realized all at once or one by one in a random order
//   ref        the same on the reference executor "ref", float inputs in float64 (a tight tolerance:
//              it checks the decompositions and the rewrites without float32's rounding)
//   jit        through a kiln::Jit over three calls with new inputs (an input the program assigns is
//              a state passed again every call); every call's outputs and states are compared, and
//              each call's outputs are kept with clone() and compared again after the last call
//   sharded    the inputs split over cpu:0..2 along a random axis or replicated (ctest runs this
//              executable with `devices = 3`; with fewer cpu devices the mode is skipped, and says so)
//   gradient   float32 programs: d((out * w).sum()) / d(each input), random w, on cpu:0 and
//              sharded, against central finite differences of the host evaluator in float64
//              (elements where a kink is within reach are skipped)
//
// A failure names the seed, the case, the mode and the first wrong element, prints the program as a
// C++ reproducer of that mode (the exact API calls, the inputs as literals), then shrinks it (steps
// nothing reads dropped, steps bypassed or replaced by an input holding their value, each change
// kept while the same mode still fails) and prints the smallest failing one. KILN_FUZZ_SEED and
// KILN_FUZZ_CASES choose the run (defaults: seed 43, cases sized for about two minutes on two cores
// with a cold kernel cache); KILN_FUZZ_ONLY=N runs case N alone; KILN_FUZZ_MODES=jit,sharded (a
// list of eager, ref, jit, sharded, gradient, "sharded gradient") runs only those modes.
//
// What is not compared, because its value is not fixed by the contract (tensor.hpp):
//  - a tensor that reads an input's buffer as it was before a later assign to that input: kiln
//    follows tinygrad (a reader realized before the assign sees the old contents, one realized after
//    sees the new), so its value depends on when it is realized. Such steps still run (they feed the
//    assign); they are not read, and no later step uses them. A clone of an unassigned input is a
//    snapshot (copied at once) and is compared.
//  - a comparison whose two sides are within the dtype's rounding of each other (either answer is
//    right); a gradient at a switch (relu, maximum, a max's top two) within 1e-4 of its point
//  - a float value out of its dtype's range, or near its end (kiln's inf against a finite float64)
//  - a sharded program that runs into a documented limit of sharding (a reshape that would move
//    elements between the parts; rows of one part, cut by a shrink, mixed with another device's).
//    Only the forward program may: the gradient of a program that ran must never throw.
// Each is counted and printed with the run.
//
// The parts, by concept, in fuzz/: program.hpp (the program as data, and what each part offers),
// program.cpp (what the contract fixes of a program with assigns), host_eval.cpp (the host
// evaluator), generator.cpp (random programs), run_modes.cpp (running a program on kiln in each mode
// and comparing), reproducer.cpp (a program as C++). This file: shrinking a failing program, and the
// run (the settings from the environment, the cases, the summary it prints).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/program.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;
using namespace kiln::fuzz;

namespace {

// ---- shrinking ----

// p without step i: reads of it read `instead` (an earlier step, or -1 when nothing reads it);
// later steps move down one.
Program without(const Program& p, int i, int instead) {
  Program q = p;
  q.nodes.erase(q.nodes.begin() + i);
  for (Node& n : q.nodes)
    for (int* o : {&n.a, &n.b, &n.c}) {
      if (*o == i) *o = instead;
      else if (*o > i) --*o;
    }
  return q;
}

bool read_by_any(const Program& p, int i) {
  for (const Node& n : p.nodes)
    for (int o : operands(n))
      if (o == i) return true;
  return false;
}

// Whether q is a program the generator could have made: operands earlier than their step, of the
// shapes and dtypes the step needs (a bypass keeps them), and the assign rules kept.
bool valid(const Program& q) {
  if (q.nodes.empty() || q.nodes[0].k != K::Input) return false;
  for (size_t i = 0; i < q.nodes.size(); ++i) {
    const Node& n = q.nodes[i];
    for (int o : operands(n))
      if (o < 0 || o >= static_cast<int>(i)) return false;
    if (n.k == K::Assign && (root(q, n.a) < 0 || root(q, n.b) == root(q, n.a))) return false;
  }
  return analyse(q).valid;
}

// Host values rounded to dtype d, as an input holding them would be.
std::vector<double> rounded(const std::vector<double>& v, const Shape& s, DType d) {
  if (!d.is_float()) return v;
  return Tensor::from_vector<double>(v, s, "ref").cast(d).cast(dtypes::float64).to_vector<double>();
}

// Smaller programs that may still fail: each step (last first) dropped when nothing reads it,
// bypassed (its readers read its first operand, of the same shape and dtype), or replaced by an
// input holding its value.
std::vector<Program> smaller(const Program& p) {
  std::vector<Program> out;
  std::vector<Arr> values;
  bool evaluated = false;
  for (int i = static_cast<int>(p.nodes.size()) - 1; i >= 0; --i) {
    const Node& n = p.nodes[static_cast<size_t>(i)];
    if (!read_by_any(p, i) && p.nodes.size() > 1) out.push_back(without(p, i, -1));
    if (n.k == K::Input) continue;
    const Node& a = p.nodes[static_cast<size_t>(n.a)];
    if (a.shape == n.shape && a.dtype == n.dtype) out.push_back(without(p, i, n.a));
    if (n.k == K::Assign) continue;  // (an input of its value would leave its target unassigned)
    if (!evaluated) values = host_eval(p), evaluated = true;
    Program q = p;
    Node in;
    in.shape = n.shape;
    in.dtype = n.dtype;
    in.values = rounded(values[static_cast<size_t>(i)].v, n.shape, n.dtype);
    for (size_t d = 0; d < n.shape.size(); ++d)
      if (n.shape[d] >= 3) {
        in.shard = static_cast<int>(d);
        break;
      }
    q.nodes[static_cast<size_t>(i)] = in;
    out.push_back(q);
  }
  return out;
}

struct Shrunk {
  Program p;
  Outcome o;
  int tries = 0;
};

// The smallest failing program found from p in at most 40 s or 300 checks.
Shrunk shrink(const Program& p, const Outcome& o, const std::function<Outcome(const Program&)>& check) {
  Shrunk best{p, o, 0};
  const auto start = std::chrono::steady_clock::now();
  bool progress = true;
  while (progress) {
    progress = false;
    for (const Program& q : smaller(best.p)) {
      if (best.tries >= 300 || std::chrono::steady_clock::now() - start > std::chrono::seconds(40)) return best;
      if (!valid(q)) continue;
      ++best.tries;
      Outcome r = check(q);
      if (r.kind == Outcome::Fail) {
        best.p = q;
        best.o = r;
        progress = true;
        break;
      }
    }
  }
  return best;
}

// ---- the run ----

int64_t env_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : def;
}

std::vector<std::string> cpu_devices() {
  std::vector<std::string> out;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) out.push_back(d);
  return out;
}

struct Fuzz {
  uint64_t seed = 43;
  int64_t cases = 0;
  std::vector<std::string> devs;  // cpu devices for the sharded modes (3), else empty
  std::vector<std::string> modes;  // the modes to run (KILN_FUZZ_MODES); empty: all
  int failures = 0;
  std::map<std::string, int> ran, skipped, made;  // (made: what the programs held, printed as coverage)

  // Runs one mode on p; a failure is reported with its reproducer, shrunk.
  void check(int64_t c, const std::string& mode, const Program& p, const std::function<Outcome(const Program&)>& f) {
    if (!modes.empty() && std::find(modes.begin(), modes.end(), mode) == modes.end()) return;
    Outcome o = f(p);
    if (o.kind == Outcome::Skip) {
      ++skipped[mode + " (" + o.why + ")"];
      return;
    }
    ++ran[mode];
    if (o.kind == Outcome::Pass) return;
    ++failures;
    Shrunk s = shrink(p, o, f);
    ADD_FAILURE() << "fuzz: seed " << seed << " case " << c << " (" << mode << "): " << o.why << "\nrerun it alone with KILN_FUZZ_SEED=" << seed
                  << " KILN_FUZZ_ONLY=" << c << "\nthe program (" << p.nodes.size() << " steps):\n"
                  << o.repro << "shrunk to " << s.p.nodes.size() << " steps (" << s.tries << " tries), which fails with: " << s.o.why << "\n"
                  << s.o.repro;
  }

  void run_case(int64_t c) {
    Gen g(seed * 1000003 + static_cast<uint64_t>(c));
    const bool smooth = c % 4 == 3;  // a gradient case: float32, differentiable, few ties
    Program p = g.program(smooth, 3);
    ++made[p.nodes[0].dtype.name() + " inputs"];
    std::map<int, int> assigns;
    bool clone = false;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      if (p.nodes[i].k == K::Assign) ++assigns[root(p, static_cast<int>(i))];
      clone |= p.nodes[i].k == K::Clone;
    }
    if (!assigns.empty()) ++made["with assigns"];
    if (std::any_of(assigns.begin(), assigns.end(), [](const auto& a) { return a.second > 1; })) ++made["with chained assigns"];
    if (clone) ++made["with clones"];
    const Placement cpu, ref{"ref", true, {}}, sharded{"cpu:0", false, devs};
    if (smooth) {
      check(c, "gradient", p, [&](const Program& q) { return run_gradient(q, cpu); });
      if (devs.empty()) ++skipped["sharded gradient (fewer than 3 cpu devices)"];
      else check(c, "sharded gradient", p, [&](const Program& q) { return run_gradient(q, sharded); });
      return;
    }
    check(c, "eager", p, [&](const Program& q) { return run_eager(q, cpu); });
    check(c, "ref", p, [&](const Program& q) { return run_eager(q, ref); });
    if (c % 2 == 0) check(c, "jit", p, [&](const Program& q) { return run_jit(q, cpu); });
    if (devs.empty()) ++skipped["sharded (fewer than 3 cpu devices)"];
    else if (c % 2 == 1) check(c, "sharded", p, [&](const Program& q) { return run_eager(q, sharded); });
  }
};

TEST(Fuzz, RandomProgramsAgreeWithAPlainReferenceEveryWay) {
  Fuzz z;
  z.seed = static_cast<uint64_t>(env_int("KILN_FUZZ_SEED", 43));
  z.cases = env_int("KILN_FUZZ_CASES", 1800);  // about 105 s on two idle cores with a cold kernel cache, 20 s warm
  std::vector<std::string> cpus = cpu_devices();
  if (cpus.size() >= 3) z.devs.assign(cpus.begin(), cpus.begin() + 3);
  else std::printf("fuzz: fewer than 3 cpu devices (%zu): the sharded modes are skipped (ctest runs this with devices = 3)\n", cpus.size());
  if (const char* m = std::getenv("KILN_FUZZ_MODES")) {  // e.g. "jit,sharded gradient": only these
    std::stringstream list(m);
    for (std::string mode; std::getline(list, mode, ',');)
      if (!mode.empty()) z.modes.push_back(mode);
  }
  const int64_t only = env_int("KILN_FUZZ_ONLY", -1);  // one case alone (what a failure says to rerun)
  for (int64_t c = only >= 0 ? only : 0; c < (only >= 0 ? only + 1 : z.cases) && z.failures < 3; ++c) z.run_case(c);
  std::string summary;
  for (const auto& [mode, n] : z.ran) summary += " " + mode + ": " + std::to_string(n) + ";";
  if (z.ran.empty()) summary += " nothing;";
  for (const auto& [why, n] : z.skipped) summary += " skipped " + why + ": " + std::to_string(n) + ";";
  summary += " programs:";
  for (const auto& [what, n] : z.made) summary += " " + std::to_string(n) + " " + what + ";";
  std::printf("fuzz: seed %llu, %lld cases; ran%s\n", static_cast<unsigned long long>(z.seed), static_cast<long long>(z.cases), summary.c_str());
}

}  // namespace
