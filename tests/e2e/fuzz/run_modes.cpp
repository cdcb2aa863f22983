// tests/e2e/fuzz/run_modes.cpp - a fuzz program run on kiln and compared with the host evaluator, in
// each mode: eager (on cpu:0), ref (the reference executor in float64), sharded (inputs split over
// three cpu devices) through run_eager, the Jit through run_jit, and gradients through run_gradient.
// Each returns an Outcome: a Pass, a Skip that says why the value is not fixed (a comparison within
// rounding, a value beyond its dtype's range, a documented limit of sharding), or a Fail with what
// differs and the C++ reproducer of that mode (reproducer.cpp). Tolerances are per dtype (close).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>

#include "program.hpp"

namespace kiln::fuzz {
namespace {

// ---- running a program on kiln ----

// Input n with values v, placed as `at` says (realized; sharded parts too). `source`: where to put
// the unsharded tensor it was sharded from, when that was realized.
Tensor make_input(const Node& n, const std::vector<double>& v, const Placement& at, std::vector<Tensor>* sources = nullptr) {
  const DType d = run_dtype(n.dtype, at);
  auto host = [&]() {
    if (d.is_bool()) return Tensor::from_vector<bool>(std::vector<bool>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::int8) return Tensor::from_vector<int8_t>(std::vector<int8_t>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::uint8) return Tensor::from_vector<uint8_t>(std::vector<uint8_t>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::int32) return Tensor::from_vector<int32_t>(std::vector<int32_t>(v.begin(), v.end()), n.shape, at.device);
    if (d == dtypes::uint32) return Tensor::from_vector<uint32_t>(std::vector<uint32_t>(v.begin(), v.end()), n.shape, at.device);
    return Tensor::from_vector<double>(v, n.shape, at.device).cast(d);
  };
  Tensor t = host();
  t.realize();  // (a sharded input is cut from a realized tensor, which must not change: shards are copies)
  if (sources && !at.shard_over.empty()) sources->push_back(t);
  if (!at.shard_over.empty()) {
    t = n.shard >= 0 ? t.shard(at.shard_over, n.shard) : t.shard(at.shard_over);
    t.realize();
  }
  return t;
}

std::vector<Tensor> make_inputs(const Program& p, const Placement& at, std::vector<Tensor>* sources = nullptr) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (p.nodes[i].k == K::Input) out.push_back(make_input(p.nodes[i], p.nodes[i].values, at, sources));
  return out;
}

// kiln's value of every step, from `inputs` (one per Input step, in order).
std::vector<Tensor> kiln_eval(const Program& p, const std::vector<Tensor>& inputs, const Placement& at) {
  std::vector<Tensor> r;
  size_t input = 0;
  for (const Node& n : p.nodes) {
    auto A = [&]() -> Tensor& { return r[static_cast<size_t>(n.a)]; };
    auto B = [&]() -> const Tensor& { return r[static_cast<size_t>(n.b)]; };
    auto C = [&]() -> const Tensor& { return r[static_cast<size_t>(n.c)]; };
    const bool integer = n.dtype.is_int();
    std::vector<int> ints(n.ints.begin(), n.ints.end());
    Pads pairs;
    for (size_t i = 0; i + 1 < n.ints.size(); i += 2) pairs.push_back({n.ints[i], n.ints[i + 1]});
    switch (n.k) {
      case K::Input: r.push_back(inputs[input++]); break;
      case K::Unary: {
        const Tensor& x = A();
        switch (n.sub) {
          case kNeg: r.push_back(-x); break;
          case kRelu: r.push_back(x.relu()); break;
          case kAbs: r.push_back(x.abs()); break;
          case kTanh: r.push_back(x.tanh()); break;
          case kSigmoid: r.push_back(x.sigmoid()); break;
          case kExp: r.push_back((x * 0.25).exp()); break;
          case kSquare: r.push_back(x * x); break;
          default: r.push_back(x.logical_not());
        }
        break;
      }
      case K::Binary:
        switch (n.sub) {
          case kAdd: r.push_back(A() + B()); break;
          case kSub: r.push_back(A() - B()); break;
          case kMul: r.push_back(A() * B()); break;
          case kMax: r.push_back(A().maximum(B())); break;
          case kMin: r.push_back(A().minimum(B())); break;
          case kAnd: r.push_back(A() & B()); break;
          case kOr: r.push_back(A() | B()); break;
          default: r.push_back(A() ^ B());
        }
        break;
      case K::Scalar:
        if (integer) r.push_back(n.sub == 0 ? A() * static_cast<int64_t>(n.s) : A() + static_cast<int64_t>(n.s));
        else r.push_back(n.sub == 0 ? A() * n.s : A() + n.s);
        break;
      case K::Compare:
        switch (n.sub) {
          case kLt: r.push_back(A().lt(B())); break;
          case kGt: r.push_back(A().gt(B())); break;
          case kEq: r.push_back(A().eq(B())); break;
          default: r.push_back(A().ne(B()));
        }
        break;
      case K::Where: r.push_back(n.sub == 1 ? Tensor::where(A(), B(), C()) : Tensor::where(A().gt(B()), A(), C())); break;
      case K::Cast: r.push_back(A().cast(run_dtype(n.dtype, at))); break;
      case K::Reshape: r.push_back(A().reshape(n.ints)); break;
      case K::Permute: r.push_back(A().permute(ints)); break;
      case K::Pad: r.push_back(A().pad(pairs)); break;
      case K::Shrink: r.push_back(A().shrink(pairs)); break;
      case K::Flip: r.push_back(A().flip(ints)); break;
      case K::Expand: r.push_back(A().expand(n.ints)); break;
      case K::Reduce:
        switch (n.sub) {
          case kSum: r.push_back(A().sum({n.axis}, n.keep)); break;
          case kRMax: r.push_back(A().max({n.axis}, n.keep)); break;
          case kRMin: r.push_back(A().min({n.axis}, n.keep)); break;
          default: r.push_back(A().mean({n.axis}, n.keep));
        }
        break;
      case K::Softmax: r.push_back(n.sub ? A().log_softmax(n.axis) : A().softmax(n.axis)); break;
      case K::Var: r.push_back(n.sub ? A().std({n.axis}, n.keep) : A().var({n.axis}, n.keep)); break;
      case K::Matmul: r.push_back(A().matmul(B())); break;
      case K::Assign: A().assign(B()); r.push_back(A()); break;
      case K::Clone: r.push_back(A().clone()); break;
    }
  }
  return r;
}

// ---- comparing ----

// What a sharded program may run into by design (DESIGN.md 5.1 and tensor.hpp: placements that
// cannot combine throw): a reshape that would move elements between the parts, and the rows of one
// part (what a shrink of the shard axis keeps within one device) being a tensor on that device,
// which does not mix with another device's.
bool documented_sharding_error(const Error& e) {
  std::string m = e.what();
  return m.find("would move elements between the parts") != std::string::npos ||
         m.find("operands are on different devices (cpu:") != std::string::npos;
}

// Whether `got` (a step of dtype d, run as run_d) may be kiln's answer for `want`: integers and
// bools exactly; floats within a tolerance that scales with the magnitude (float programs
// accumulate rounding; half precision relative to the step's largest value).
bool close(DType run_d, double w, double g, double scale) {
  if (!run_d.is_float() || g == w) return g == w;
  if (run_d == dtypes::float64) return std::fabs(g - w) <= 1e-6 * (1 + std::fabs(w));
  if (run_d == dtypes::float32) return std::fabs(g - w) <= 2e-4 * (1 + std::fabs(w));
  return std::fabs(g - w) <= 4e-2 * scale;
}

// Compares step `node`'s value; "" when it agrees, else what differs.
std::string mismatch(const Program& p, int node, const Arr& want, const std::vector<double>& got, const Placement& at) {
  const DType d = run_dtype(p.nodes[static_cast<size_t>(node)].dtype, at);
  std::ostringstream o;
  o.precision(9);
  if (got.size() != want.v.size()) {
    o << "t" << node << " has " << got.size() << " elements, expected " << want.v.size();
    return o.str();
  }
  double scale = 1;
  for (double x : want.v) scale = std::max(scale, std::fabs(x));
  for (size_t e = 0; e < got.size(); ++e)
    if (!close(d, want.v[e], got[e], scale)) {
      o << "t" << node << " element " << e << ": got " << got[e] << ", expected " << want.v[e];
      return o.str();
    }
  return "";
}

template <typename T>
std::vector<double> doubles(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

// A tensor's elements, read in its own dtype where the host has one (a cast would be a kernel more
// to compile per read); half floats through float32, exactly.
std::vector<double> read(const Tensor& t) {
  const DType d = t.dtype();
  if (d == dtypes::float64) return t.to_vector<double>();
  if (d == dtypes::float32 || is_half(d)) return doubles(t.to_vector<float>());
  if (d == dtypes::int32) return doubles(t.to_vector<int32_t>());
  if (d == dtypes::uint32) return doubles(t.to_vector<uint32_t>());
  if (d == dtypes::int8) return doubles(t.to_vector<int8_t>());
  if (d == dtypes::uint8) return doubles(t.to_vector<uint8_t>());
  if (d.is_bool()) return doubles(t.to_vector<bool>());
  return t.cast(dtypes::float64).to_vector<double>();
}

Outcome skip(const std::string& why) { return {Outcome::Skip, why, ""}; }

// Whether a float step's host value is out of its dtype's range, or near enough to its end that
// kiln's rounding may overflow (x * x of float32 1.8e19 is inf or not): not compared.
bool beyond_range(const Program& p, const std::vector<Arr>& want, const Placement& at) {
  for (size_t i = 0; i < want.size(); ++i) {
    const DType d = run_dtype(p.nodes[i].dtype, at);
    if (!d.is_float()) continue;
    for (double x : want[i].v)
      if (!(std::fabs(x) < d.fmax_finite() / 64)) return true;
  }
  return false;
}

// Whether the host's values are fixed to within rounding (see Gaps).
bool ambiguous(bool f64) {
  if (f64) return std::min(g_gaps.cmp_f32, g_gaps.cmp_half) < 1e-6;
  return g_gaps.cmp_f32 < 1e-4 || g_gaps.cmp_half < 5e-2;
}

// The order the one-by-one eager mode realizes the compared steps in (from the program's seed).
std::vector<int> realize_order(const Program& p) {
  std::vector<int> order = compared(p);
  std::mt19937_64 rng(p.seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

// ---- the modes ----

// eager, sharded and ref: build every step, realize the compared ones (all at once, or one by one
// in the program's order), and read them.
Outcome run_eager(const Program& p, const Placement& at) {
  if (at.f64 && averages_an_integer(p)) return skip("an integer average, float32 by rule");
  const std::vector<Arr> want = host_eval(p);
  if (ambiguous(at.f64)) return skip("a comparison within rounding");
  if (beyond_range(p, want, at)) return skip("a value beyond its dtype's range");
  const std::vector<int> cmp = compared(p), order = realize_order(p);
  auto repro = [&](const std::string& why) {
    std::ostringstream o;
    o << steps_text(p, at, [&](int i, int) { return input_text(p.nodes[static_cast<size_t>(i)], p.nodes[static_cast<size_t>(i)].values, at); }, "  ");
    if (p.at_once) {
      o << "  std::vector<Tensor> all{";
      for (size_t q = 0; q < cmp.size(); ++q) o << (q ? ", t" : "t") << cmp[q];
      o << "};\n  Tensor::realize_all(all);\n";
    } else {
      for (int i : order) o << "  t" << i << ".realize();\n";
    }
    o << "  // " << why << "\n";
    return o.str();
  };
  try {
    std::vector<Tensor> sources;  // (sharded: what the inputs were sharded from; a shard is a copy)
    std::vector<Tensor> r = kiln_eval(p, make_inputs(p, at, &sources), at);
    if (p.at_once) {
      std::vector<Tensor> all;
      for (int i : cmp) all.push_back(r[static_cast<size_t>(i)]);
      Tensor::realize_all(all);
    } else {
      for (int i : order) r[static_cast<size_t>(i)].realize();
    }
    for (int i : cmp) {
      std::string why = mismatch(p, i, want[static_cast<size_t>(i)], read(r[static_cast<size_t>(i)]), at);
      if (!why.empty()) {
        std::string full = why + " (read with t" + std::to_string(i) + ".to_vector)";
        return {Outcome::Fail, why, repro(full)};
      }
    }
    size_t k = 0;
    for (size_t i = 0; i < p.nodes.size() && k < sources.size(); ++i) {
      if (p.nodes[i].k != K::Input) continue;
      std::string why = mismatch(p, static_cast<int>(i), {p.nodes[i].shape, p.nodes[i].values}, read(sources[k++]), at);
      if (!why.empty()) return {Outcome::Fail, "the source of sharded input " + why, repro("the tensor t" + std::to_string(i) + " was sharded from changed: " + why)};
    }
  } catch (const Error& e) {
    if (!at.shard_over.empty() && documented_sharding_error(e)) return skip("a documented limit of sharding");
    std::string why = std::string("kiln::Error: ") + e.what();
    return {Outcome::Fail, why, repro("throws " + why)};
  }
  return {};
}

// jit: a Jit of the program over three calls. Its outputs: the last compared step that is not an
// input, one from the middle, and every assigned input (a state: the same tensor is passed on every
// call, the other inputs are new each call).
Outcome run_jit(const Program& p, const Placement& at) {
  const std::vector<int> cmp = compared(p), states = assigned_inputs(p);
  std::vector<int> outs, computed;
  for (int i : cmp)
    if (p.nodes[static_cast<size_t>(i)].k != K::Input) computed.push_back(i);
  if (computed.empty()) return skip("nothing but its inputs to return");
  outs.push_back(computed.back());
  if (computed.size() > 1) outs.push_back(computed[computed.size() / 2 - (computed.size() % 2 == 0 ? 1 : 0)]);
  for (int s : states) outs.push_back(s);
  std::vector<int> input_index;  // per step: its position among the inputs, or -1
  int k = 0;
  for (const Node& n : p.nodes) input_index.push_back(n.k == K::Input ? k++ : -1);

  Jit f([&p, &at, &outs](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    std::vector<Tensor> r = kiln_eval(p, in, at), o;
    for (int i : outs) o.push_back(r[static_cast<size_t>(i)]);
    return o;
  });

  std::ostringstream text;
  text << "  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {\n"
       << steps_text(p, at, [&](int, int q) { return "in[" + std::to_string(q) + "]"; }, "    ") << "    return std::vector<Tensor>{";
  for (size_t q = 0; q < outs.size(); ++q) text << (q ? ", t" : "t") << outs[q];
  text << "};\n  });\n";
  std::map<int, Tensor> state_tensors;
  for (int s : states) {
    const Node& n = p.nodes[static_cast<size_t>(s)];
    state_tensors.emplace(s, make_input(n, n.values, at));
    text << "  Tensor s" << s << " = " << input_text(n, n.values, at) << ";  // assigned on every call\n";
  }
  text << "  std::vector<std::vector<Tensor>> kept;  // each call's outputs, cloned\n";
  auto fail = [&](const std::string& why) { return Outcome{Outcome::Fail, why, text.str() + "  // " + why + "\n"}; };

  Gen fresh(p.seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<Program> calls;
  std::vector<std::vector<Tensor>> kept;
  try {
    for (int call = 1; call <= 3; ++call) {
      Program pc = p;
      std::vector<Tensor> in;
      text << "  std::vector<Tensor> out" << call << " = f({";
      for (size_t i = 0; i < pc.nodes.size(); ++i) {
        Node& n = pc.nodes[i];
        if (n.k != K::Input) continue;
        if (state_tensors.count(static_cast<int>(i))) {  // the state as the last call left it
          if (call > 1) n.values = read(state_tensors.at(static_cast<int>(i)));
          in.push_back(state_tensors.at(static_cast<int>(i)));
          text << (input_index[i] ? ", s" : "s") << i;
        } else {
          if (call > 1) n.values = fresh.values(n.shape, n.dtype, false);
          in.push_back(make_input(n, n.values, at));
          text << (input_index[i] ? ", " : "") << input_text(n, n.values, at);
        }
      }
      text << "});\n";
      std::vector<Tensor> out;
      try {
        out = f(in);
      } catch (const Error& e) {
        // a function whose outputs are its inputs or views of them runs nothing and cannot be
        // captured (jit.hpp, a documented error)
        if (std::string(e.what()).find("ran no kernel and no copy") == std::string::npos) throw;
        return skip("the function runs no kernel");
      }
      std::vector<Tensor> clones;
      for (const Tensor& t : out) clones.push_back(t.clone());
      kept.push_back(clones);
      text << "  kept.push_back({";
      for (size_t q = 0; q < out.size(); ++q) text << (q ? ", out" : "out") << call << "[" << q << "].clone()";
      text << "});\n";
      const std::vector<Arr> want = host_eval(pc);
      if (ambiguous(at.f64)) return skip("a comparison within rounding");
      if (beyond_range(pc, want, at)) return skip("a value beyond its dtype's range");
      for (size_t q = 0; q < outs.size(); ++q) {
        std::string why = mismatch(p, outs[q], want[static_cast<size_t>(outs[q])], read(out[q]), at);
        if (!why.empty()) return fail("call " + std::to_string(call) + ", out" + std::to_string(call) + "[" + std::to_string(q) + "] (" + why + ")");
      }
      for (int s : states) {
        std::string why = mismatch(p, s, want[static_cast<size_t>(s)], read(state_tensors.at(s)), at);
        if (!why.empty()) return fail("after call " + std::to_string(call) + ", the state s" + std::to_string(s) + " (" + why + ")");
      }
      calls.push_back(pc);
    }
    // every call's clones still hold that call's values
    for (size_t call = 0; call < kept.size(); ++call) {
      const std::vector<Arr> want = host_eval(calls[call]);
      for (size_t q = 0; q < outs.size(); ++q) {
        std::string why = mismatch(p, outs[q], want[static_cast<size_t>(outs[q])], read(kept[call][q]), at);
        if (!why.empty())
          return fail("kept[" + std::to_string(call) + "][" + std::to_string(q) + "], the clone of call " + std::to_string(call + 1) +
                      "'s output read after call 3 (" + why + ")");
      }
    }
  } catch (const Error& e) {
    return fail(std::string("kiln::Error: ") + e.what());
  }
  return {};
}

// gradient: d((t_last * w).sum()) / d(each input), against central differences of the host's loss.
Outcome run_gradient(const Program& p, const Placement& at) {
  const int out = static_cast<int>(p.nodes.size()) - 1;
  const Shape& so = p.nodes[static_cast<size_t>(out)].shape;
  std::vector<double> w(static_cast<size_t>(count(so)));
  std::mt19937_64 rng(p.seed);
  for (double& x : w) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  if (beyond_range(p, host_eval(p), at)) return skip("a value beyond its dtype's range");
  if (g_gaps.any < 1e-4) return skip("a switch within rounding of its point");
  auto loss = [&](const Program& q) {
    Arr r = host_eval(q)[static_cast<size_t>(out)];
    double s = 0;
    for (size_t i = 0; i < r.v.size(); ++i) s += r.v[i] * w[i];
    return s;
  };
  Placement wat = at;
  Node wn;
  wn.shape = so;
  wn.dtype = dtypes::float32;
  std::vector<int> inputs;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (p.nodes[i].k == K::Input) inputs.push_back(static_cast<int>(i));
  auto repro = [&](const std::string& why) {
    std::ostringstream o;
    o << steps_text(p, at, [&](int i, int) { return input_text(p.nodes[static_cast<size_t>(i)], p.nodes[static_cast<size_t>(i)].values, at); }, "  ");
    o << "  Tensor w = " << input_text(wn, w, wat) << ";\n  Tensor loss = (t" << out << " * w).sum();\n  std::vector<Tensor> g = loss.gradient({";
    for (size_t q = 0; q < inputs.size(); ++q) o << (q ? ", t" : "t") << inputs[q];
    o << "});\n  // " << why << "\n";
    return o.str();
  };
  std::vector<Tensor> grads;
  try {
    std::vector<Tensor> in = make_inputs(p, at), all;
    try {
      all = kiln_eval(p, in, at);
    } catch (const Error& e) {  // (only the forward program: the gradient itself must never throw)
      if (at.shard_over.empty() || !documented_sharding_error(e)) throw;
      return skip("a documented limit of sharding");
    }
    wn.shard = -1;
    Tensor wt = make_input(wn, w, wat);
    Tensor l = (all.back() * wt).sum();
    grads = l.gradient(in);
    for (size_t k = 0; k < inputs.size(); ++k) {
      std::vector<double> got = read(grads[k]);
      for (size_t e = 0; e < got.size(); ++e) {
        auto fd = [&](double h) {
          Program up = p, down = p;
          up.nodes[static_cast<size_t>(inputs[k])].values[e] += h;
          down.nodes[static_cast<size_t>(inputs[k])].values[e] -= h;
          return (loss(up) - loss(down)) / (2 * h);
        };
        double d1 = fd(1e-3), d2 = fd(2.5e-4);
        if (std::fabs(d1 - d2) > 1e-4 * (1 + std::fabs(d2))) continue;  // a kink within reach
        if (!(std::fabs(got[e] - d2) <= 2e-3 * (1 + std::fabs(d2)))) {
          std::ostringstream o;
          o.precision(9);
          o << "g[" << k << "] (d loss / d t" << inputs[k] << ") element " << e << ": got " << got[e] << ", central differences of the loss in float64 "
            << d2;
          return {Outcome::Fail, o.str(), repro(o.str())};
        }
      }
    }
  } catch (const Error& e) {
    std::string why = std::string("kiln::Error: ") + e.what();
    return {Outcome::Fail, why, repro("throws " + why)};
  }
  return {};
}

}  // namespace kiln::fuzz
