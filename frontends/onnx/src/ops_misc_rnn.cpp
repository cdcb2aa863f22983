// ops_misc_rnn.cpp - ONNX operators: the recurrent layers RNN, GRU and LSTM.
//
// The sequence length is static in the input's shape, so each layer is unrolled over its time
// steps into ordinary tensor ops (one lazy graph: the steps fuse and schedule like anything else).
// The input projection X W^T + Wb of all steps is one matmul up front; each step adds H R^T + Rb.
// Gate order in W, R, B (and P) is the spec's: GRU z, r, h; LSTM i, o, f, c (P: i, o, f).
//
// sequence_lens: a batch entry's steps at or past its length leave its state unchanged and give
// zeros in Y. In reverse, entry b's steps run from its length - 1 down to 0: its first `length`
// time steps are reversed (a gather along time), run forward, and reversed back.
#include <algorithm>

#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {

enum class Cell { rnn, gru, lstm };

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Tensor activate(const Node& n, const Activation& f, const Tensor& x) {
  const std::string& a = f.name;
  if (a == "Tanh") return x.tanh();
  if (a == "Sigmoid") return x.sigmoid();
  if (a == "Relu") return x.relu();
  if (a == "Affine") return x * f.alpha + f.beta;
  if (a == "LeakyRelu") return x.leaky_relu(f.alpha);
  if (a == "ThresholdedRelu") return Tensor::where(x.gt(Tensor::full({}, f.alpha, x.dtype(), x.device())), x, x * 0.0);
  if (a == "ScaledTanh") return (x * f.beta).tanh() * f.alpha;
  if (a == "HardSigmoid") return x.hardsigmoid(f.alpha, f.beta);
  if (a == "Elu") return x.elu(f.alpha);
  if (a == "Softsign") return x.softsign();
  if (a == "Softplus") return x.softplus();
  n.fail("activation '" + a + "' is not supported (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
         "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus are)");
}

// The activations attribute for `dirs` directions of `per_dir` functions each, with their alpha and
// beta taken in order by the functions that have them (defaults where the lists run out). A list
// for one direction serves both of a bidirectional layer.
std::vector<Activation> activations(const Node& n, int dirs, const std::vector<std::string>& defaults) {
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = n.attr_strings("activations");
  if (names.empty()) names = defaults;
  if (names.size() == per_dir && dirs == 2) {
    const auto one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    n.fail("activations must name " + std::to_string(per_dir) + " functions per direction", ErrorCode::invalid_argument);
  const auto alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const auto& name : names) {
    Activation f{name};
    // (alpha default, beta default, uses alpha, uses beta) per function, as the spec defines them
    double da = 0, db = 0;
    bool ua = false, ub = false;
    if (name == "Affine") da = 1, db = 0, ua = ub = true;
    else if (name == "LeakyRelu") da = 0.01, ua = true;
    else if (name == "ThresholdedRelu") da = 1, ua = true;
    else if (name == "ScaledTanh") da = 1, db = 1, ua = ub = true;
    else if (name == "HardSigmoid") da = 0.2, db = 0.5, ua = ub = true;
    else if (name == "Elu") da = 1, ua = true;
    f.alpha = ua && ai < alphas.size() ? alphas[ai++] : da;
    f.beta = ub && bi < betas.size() ? betas[bi++] : db;
    out.push_back(f);
  }
  return out;
}

// X's steps reordered so that batch entry b reads its first lens[b] steps backwards (the rest stay
// in place, masked off anyway); applying it twice is the identity. x: (T, B, ...).
Tensor reverse_steps(const Tensor& x, const std::optional<Tensor>& lens) {
  if (!lens) return x.flip({0});
  const int64_t T = x.shape()[0], B = x.shape()[1];
  Tensor t = Tensor::arange(0, static_cast<double>(T), 1, dtypes::int64, x.device()).reshape({T, 1});
  Tensor len = lens->reshape({1, B});
  Tensor idx = Tensor::where(t.lt(len), len - t - 1, t.expand({T, B}));  // (T, B)
  Shape s = x.shape();
  Shape is{T, B};
  for (size_t i = 2; i < s.size(); ++i) is.push_back(1);
  return x.gather(0, idx.reshape(is).expand(s));
}

// Tensor::stack(steps, 0), built from stacks of a few steps at a time: one kernel may read at most
// 64 buffers (runtime/prepared.cpp), and every step's output is a buffer of its own.
Tensor stack_steps(const std::vector<Tensor>& steps) {
  constexpr size_t group = 8;
  if (steps.size() <= group) return Tensor::stack(steps, 0);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < steps.size(); i += group) {
    std::vector<Tensor> g(steps.begin() + static_cast<long>(i), steps.begin() + static_cast<long>(std::min(i + group, steps.size())));
    parts.push_back(Tensor::stack(g, 0).contiguous());
  }
  while (parts.size() > group) {
    std::vector<Tensor> merged;
    for (size_t i = 0; i < parts.size(); i += group) {
      std::vector<Tensor> g(parts.begin() + static_cast<long>(i), parts.begin() + static_cast<long>(std::min(i + group, parts.size())));
      merged.push_back(Tensor::cat(g, 0).contiguous());
    }
    parts = std::move(merged);
  }
  return Tensor::cat(parts, 0);
}

std::vector<Tensor> recurrent(const Node& n, Cell cell) {
  const int gates = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
  const int64_t layout = n.attr_int("layout", 0);
  if (layout != 0 && layout != 1) n.fail("layout must be 0 or 1", ErrorCode::invalid_argument);
  Tensor X = layout == 1 ? n.in(0).permute({1, 0, 2}) : n.in(0);  // (T, B, I)
  if (X.ndim() != 3) n.fail("X must be 3-d", ErrorCode::invalid_argument);
  const Tensor& W = n.in(1);  // (dirs, gates * H, I)
  const Tensor& R = n.in(2);  // (dirs, gates * H, H)
  const std::string direction = n.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    n.fail("direction '" + direction + "' is not forward, reverse or bidirectional", ErrorCode::invalid_argument);
  const int dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t T = X.shape()[0], B = X.shape()[1];
  const int64_t H = n.attr_int("hidden_size", R.ndim() == 3 ? R.shape()[2] : 0);
  if (n.has_attr("hidden_size") && (H < 1 || H > (int64_t{1} << 32)))  // (and gates * H below stays in range)
    n.fail("hidden_size " + std::to_string(H) + " is not a positive size", ErrorCode::invalid_argument);
  if (W.ndim() != 3 || R.ndim() != 3 || W.shape()[0] != dirs || R.shape()[0] != dirs || W.shape()[1] != gates * H ||
      R.shape()[1] != gates * H || R.shape()[2] != H || W.shape()[2] != X.shape()[2])
    n.fail("W and R must be (num_directions, " + std::to_string(gates) + " * hidden_size, input_size / hidden_size)",
           ErrorCode::invalid_argument);
  const DType dt = X.dtype();
  const std::string& dev = X.device();
  const double clip = n.attr_float("clip", 0);
  const bool clipped = n.has_attr("clip");
  const bool linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  const bool input_forget = n.attr_int("input_forget", 0) != 0;
  const auto acts = activations(n, dirs, cell == Cell::rnn   ? std::vector<std::string>{"Tanh"}
                                         : cell == Cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                             : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"});
  const size_t per_dir = acts.size() / static_cast<size_t>(dirs);

  std::optional<Tensor> lens;
  if (auto s = n.opt(4)) lens = s->cast(dtypes::int64).reshape({B});
  auto initial = [&](size_t i) -> std::optional<Tensor> {  // (dirs, B, H), whatever the layout
    auto t = n.opt(i);
    if (t && layout == 1) t = t->permute({1, 0, 2});
    return t;
  };
  const std::optional<Tensor> h0 = initial(5), c0 = cell == Cell::lstm ? initial(6) : std::nullopt;
  const std::optional<Tensor> bias = n.opt(3), peep = cell == Cell::lstm ? n.opt(7) : std::nullopt;

  std::vector<Tensor> ys, hs, cs;
  for (int d = 0; d < dirs; ++d) {
    using Index = Tensor::Index;
    auto pick = [&](const Tensor& t) { return t.getitem({Index::integer(d)}); };
    const bool reverse = direction == "reverse" || d == 1;
    const Activation* f = &acts[static_cast<size_t>(d) * per_dir];
    Tensor Wd = pick(W), Rd = pick(R);
    Tensor Wb = Tensor::zeros({gates * H}, dt, dev), Rb = Wb;
    if (bias) {
      auto wr = pick(*bias).split({gates * H, gates * H}, 0);
      Wb = wr[0], Rb = wr[1];
    }
    Tensor Xd = reverse ? reverse_steps(X, lens) : X;
    Tensor xw = Xd.matmul(Wd.transpose()) + Wb;  // (T, B, gates * H): the input projection of every step
    auto Rg = Rd.split(std::vector<int64_t>(static_cast<size_t>(gates), H), 0);   // per gate (H, H)
    auto Rbg = Rb.split(std::vector<int64_t>(static_cast<size_t>(gates), H), 0);  // per gate (H)
    std::vector<Tensor> Pg;
    if (peep) Pg = pick(*peep).split({H, H, H}, 0);  // i, o, f
    Tensor h = h0 ? pick(*h0) : Tensor::zeros({B, H}, dt, dev);
    Tensor c = c0 ? pick(*c0) : Tensor::zeros({B, H}, dt, dev);
    auto clip_gate = [&](const Tensor& g) {
      if (!clipped) return g;
      return g.clip(Tensor::full({}, -clip, dt, dev), Tensor::full({}, clip, dt, dev));
    };
    auto act = [&](size_t i, const Tensor& g) { return activate(n, f[i], clip_gate(g)); };
    std::vector<Tensor> y;
    for (int64_t t = 0; t < T; ++t) {
      auto xg = xw.getitem({Index::integer(t)}).split(std::vector<int64_t>(static_cast<size_t>(gates), H), -1);
      auto rec = [&](int g, const Tensor& state) { return state.matmul(Rg[static_cast<size_t>(g)].transpose()) + Rbg[static_cast<size_t>(g)]; };
      Tensor h_new = h, c_new = c;
      if (cell == Cell::rnn) {
        h_new = act(0, xg[0] + rec(0, h));
      } else if (cell == Cell::gru) {
        Tensor z = act(0, xg[0] + rec(0, h)), r = act(0, xg[1] + rec(1, h));
        Tensor cand = linear_before_reset ? act(1, xg[2] + r * rec(2, h)) : act(1, xg[2] + rec(2, r * h));
        h_new = (1.0 - z) * cand + z * h;
      } else {
        Tensor gi = xg[0] + rec(0, h), go = xg[1] + rec(1, h), gf = xg[2] + rec(2, h), gc = xg[3] + rec(3, h);
        if (peep) gi = gi + Pg[0] * c, gf = gf + Pg[2] * c;
        Tensor i = act(0, gi);
        Tensor fg = input_forget ? 1.0 - i : act(0, gf);
        c_new = fg * c + i * act(1, gc);
        if (peep) go = go + Pg[1] * c_new;
        h_new = act(0, go) * act(2, c_new);
      }
      std::optional<Tensor> live;  // (B, 1): the entries still within their length
      if (lens) {  // entries past their length keep their state and output zeros
        live = Tensor::full({}, static_cast<double>(t), dtypes::int64, dev).lt(*lens).reshape({B, 1});
        h_new = Tensor::where(*live, h_new, h);
        if (cell == Cell::lstm) c_new = Tensor::where(*live, c_new, c);
      }
      // each step's state is a buffer of its own: the next step reads it more than once, and the
      // steps' kernels stay small instead of growing with (or recomputing) the earlier steps
      h = h_new.contiguous();
      if (cell == Cell::lstm) c = c_new.contiguous();
      y.push_back(live ? Tensor::where(*live, h, Tensor::zeros({}, dt, dev)) : h);
    }
    Tensor yd = stack_steps(y);  // (T, B, H)
    ys.push_back(reverse ? reverse_steps(yd, lens) : yd);
    hs.push_back(h);
    cs.push_back(c);
  }
  Tensor Y = Tensor::stack(ys, 1);     // (T, dirs, B, H)
  Tensor Y_h = Tensor::stack(hs, 0);   // (dirs, B, H)
  Tensor Y_c = Tensor::stack(cs, 0);
  if (layout == 1) {
    Y = Y.permute({2, 0, 1, 3});
    Y_h = Y_h.permute({1, 0, 2});
    Y_c = Y_c.permute({1, 0, 2});
  }
  if (cell == Cell::lstm) return {Y, Y_h, Y_c};
  return {Y, Y_h};
}

std::vector<Tensor> rnn(const Node& n) { return recurrent(n, Cell::rnn); }
std::vector<Tensor> gru(const Node& n) { return recurrent(n, Cell::gru); }
std::vector<Tensor> lstm(const Node& n) { return recurrent(n, Cell::lstm); }

}  // namespace

void misc_rnn_ops(std::vector<OpDef>& out) {
  const std::vector<std::string_view> common{"activation_alpha", "activation_beta", "activations", "clip",
                                             "direction", "hidden_size", "layout", "output_sequence"};
  auto with = [&](std::initializer_list<std::string_view> extra) {
    auto v = common;
    v.insert(v.end(), extra);
    return v;
  };
  out.insert(out.end(), {
      {"RNN", 1, common, rnn},
      {"GRU", 1, with({"linear_before_reset"}), gru},
      {"LSTM", 1, with({"input_forget"}), lstm},
  });
}

}  // namespace kiln::onnx::detail
