// schedule/create_schedule.cpp - ordering, memory planning, the schedule cache and the entry
// point schedule_graph.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "schedule/kernelize.hpp"
#include "schedule/schedule.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/flat_map.hpp"
#include "support/half.hpp"
#include "support/lru_map.hpp"
#include "support/trace.hpp"

namespace kiln {

void create_schedule(Template& t) {
  size_t n = t.kernels.size();
  std::vector<std::vector<int>> users(n);
  std::vector<int> pending(n, 0);
  for (size_t k = 0; k < n; ++k) {
    std::sort(t.kernels[k].after.begin(), t.kernels[k].after.end());
    t.kernels[k].after.erase(std::unique(t.kernels[k].after.begin(), t.kernels[k].after.end()), t.kernels[k].after.end());
    for (int j : t.kernels[k].after) {
      users[j].push_back(static_cast<int>(k));
      ++pending[k];
    }
  }
  // Kahn: among ready kernels, the one created first (toposort order) runs first
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t k = 0; k < n; ++k)
    if (!pending[k]) ready.push(static_cast<int>(k));
  std::vector<int> order;
  while (!ready.empty()) {
    int k = ready.top();
    ready.pop();
    order.push_back(k);
    for (int u : users[k])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != n) {
    std::string stuck;
    for (size_t k = 0; k < n; ++k)
      if (pending[k]) stuck += cat(stuck.empty() ? "" : ", ", "#", k, " (", t.kernels[k].is_copy ? "copy" : "kernel", ")");
    fail(ErrorCode::invalid_argument, "schedule: the kernels ", stuck,
         " depend on each other in a cycle (an assign whose value needs a later write of the same buffer?)");
  }
  std::vector<int> pos(n);
  for (size_t i = 0; i < n; ++i) pos[order[i]] = static_cast<int>(i);
  std::vector<TemplateKernel> sorted;
  for (int k : order) sorted.push_back(std::move(t.kernels[k]));
  for (TemplateKernel& k : sorted)
    for (int& j : k.after) j = pos[j];
  t.kernels = std::move(sorted);
}

void memory_planner(Template& t) {
  size_t nl = t.locals.size();
  std::vector<int> first(nl, -1), last(nl, -1);
  for (size_t k = 0; k < t.kernels.size(); ++k)
    for (const BufRef& b : t.kernels[k].bufs)
      if (b.local) {
        if (first[b.index] < 0) first[b.index] = static_cast<int>(k);
        last[b.index] = static_cast<int>(k);
      }
  auto bytes = [&](size_t i) { return static_cast<uint64_t>(t.locals[i].size) * t.locals[i].dtype.itemsize(); };
  // intermediates by start; a group is free once its last member's last use is before the start
  std::vector<size_t> inter;
  for (size_t i = 0; i < nl; ++i) {
    if (t.locals[i].output) t.locals[i].group = t.n_groups++;
    else if (first[i] >= 0) inter.push_back(i);
  }
  std::sort(inter.begin(), inter.end(), [&](size_t a, size_t b) { return first[a] != first[b] ? first[a] < first[b] : a < b; });
  struct Group {
    std::string device;
    uint64_t bytes;
    int busy_until;
    int id;
  };
  std::vector<Group> groups;
  for (size_t i : inter) {
    t.unplanned_bytes += bytes(i);
    // best fit among free groups on this device: the smallest that holds it, else the largest
    Group* best = nullptr;
    for (Group& g : groups) {
      if (g.device != t.locals[i].device || g.busy_until >= first[i]) continue;
      bool fits = g.bytes >= bytes(i), best_fits = best && best->bytes >= bytes(i);
      if (!best || (fits && !best_fits) || (fits && best_fits && g.bytes < best->bytes) ||
          (!fits && !best_fits && g.bytes > best->bytes))
        best = &g;
    }
    if (!best) {
      groups.push_back(Group{t.locals[i].device, bytes(i), last[i], t.n_groups++});
      best = &groups.back();
    }
    best->bytes = std::max(best->bytes, bytes(i));
    best->busy_until = last[i];
    t.locals[i].group = best->id;
  }
  for (const Group& g : groups) t.planned_bytes += g.bytes;
  for (size_t i = 0; i < nl; ++i)
    if (t.locals[i].group < 0) t.locals[i].group = t.n_groups++;  // never used (a no-op output?)
}

namespace {

struct Cache {
  std::mutex mu;
  LruMap<Key128, std::shared_ptr<const Template>, Key128Hash> map;  // KILN_CACHE_ENTRIES
};
Cache& cache() {
  // never destroyed: templates own prepared kernels and so loaded programs, which must not be
  // unloaded during static destruction (a plugin's runtime may be gone by then)
  static Cache* c = new Cache;
  return *c;
}

// BIND(var, value) -> var, collecting the values; one variable bound to two values is an error.
UOp strip_binds(const UOp& sink, VarVals& vals) {
  std::vector<std::pair<UOp, UOp>> repl;
  std::map<std::string, int64_t> seen;
  for (const UOpNode* n : toposort_nodes(sink)) {
    if (n->op != Ops::BIND) continue;
    UOp b = UOpAccess::from_node(n);
    const std::string& name = std::get<NamedInts>(b.src(0).arg()).name;
    int64_t v = b.src(1).arg_int();
    auto [it, fresh] = seen.emplace(name, v);
    if (!fresh && it->second != v)
      fail(ErrorCode::invalid_argument, "schedule: variable '", name, "' is bound to two different values in one graph: ",
           it->second, " and ", v);
    repl.push_back({b, b.src(0)});
  }
  for (auto& [name, v] : seen) vals.push_back({name, v});
  return repl.empty() ? sink : substitute(sink, repl);
}

// Host scalars are kernel arguments (docs/architecture.md, "Scalars"): a float CONST of the tensor
// graph, other than the values that shape a kernel (0, -0, 1, -1, +-inf, NaN: identities, masks and
// padding the simplifier folds), becomes a variable bound to the constant's bits in its dtype, as a
// Variable is bound. A new scalar then runs the same schedule and kernels (`for i: (x * i + 1).sum()`
// compiles once). A graph lifts at most kMaxScalars, in graph order, so no kernel takes more
// arguments than every backend passes; the rest stay baked, and so stay in the cache key.
constexpr size_t kMaxScalars = 16;

bool liftable(const UOpNode* n) {
  if (n->op != Ops::CONST || n->nsrc != 1 || !n->dtype.is_float() || n->dtype.count() != 1) return false;
  double v = std::get<Float>(n->arg).v;
  return !(v == 0 || v == 1 || v == -1 || std::isinf(v) || std::isnan(v));
}

int64_t scalar_bits(DType d, double v) {
  switch (d.scalar()) {
    case Scalar::float64: {
      int64_t b;
      std::memcpy(&b, &v, sizeof b);
      return b;
    }
    case Scalar::float16: return float_to_half(static_cast<float>(v));
    case Scalar::bfloat16: return float_to_bf16(static_cast<float>(v));
    default: return f32_bits(static_cast<float>(v));  // float32 (liftable() takes only floats)
  }
}

// The CONSTs to lift, as (CONST, its variable), the variables' values appended to `vals`. The
// variable keeps the CONST's DEVICE source (kernelize places a kernel by it); rangeify turns it
// into the bits of an int64 kernel argument (schedule/rangeify.cpp, scalar_argument).
std::vector<std::pair<UOp, UOp>> lift_scalars(const std::vector<const UOpNode*>& order, VarVals& vals) {
  std::vector<std::pair<UOp, UOp>> out;
  for (const UOpNode* n : order) {
    if (out.size() == kMaxScalars) break;
    if (!liftable(n)) continue;
    UOp c = UOpAccess::from_node(n);
    std::string name = cat(kScalarVarPrefix, out.size());
    vals.push_back({name, scalar_bits(c.dtype(), std::get<Float>(c.arg()).v)});
    out.push_back({c, UOp::make(Ops::DEFINE_VAR, c.dtype(), {c.src(0)}, Arg{NamedInts{name, {0, 0}}})});
  }
  return out;
}

// ASSIGN args (a global program-order counter, see Tensor::assign) -> their rank among the graph's
// ASSIGNs: kernelize needs only the order, and the same program on later steps must hit the cache.
UOp rank_assigns(const UOp& sink) {
  std::vector<const UOpNode*> order = toposort_nodes(sink);
  std::vector<int64_t> seqs;
  for (const UOpNode* n : order)
    if (n->op == Ops::ASSIGN && std::holds_alternative<int64_t>(n->arg)) seqs.push_back(std::get<int64_t>(n->arg));
  if (seqs.empty()) return sink;
  std::sort(seqs.begin(), seqs.end());
  PtrMap<UOp> done(order.size() * 2 + 16);
  for (const UOpNode* n : order) {  // bottom-up, so an ASSIGN inside another's value is renumbered too
    UOp self = with_rebuilt_srcs(n, done);
    if (n->op == Ops::ASSIGN && std::holds_alternative<int64_t>(n->arg)) {
      int64_t rank = std::lower_bound(seqs.begin(), seqs.end(), std::get<int64_t>(n->arg)) - seqs.begin();
      self = self.replace_arg(Arg{rank});
    }
    done[n] = self;
  }
  return *done.find(sink.node());
}

// The graph as the schedule cache keys it: binds stripped (their values collected), assigns
// ranked, input buffers replaced by PARAM(slot) (slots in toposort order, so deterministic). A
// cache hit needs only its key and its inputs, on every call: the key comes from the graph as it
// is (each node above a buffer keyed by process_key over its sources' new keys, a buffer by the
// key its PARAM would have), and the graph with PARAMs is built on a miss only. Without BINDs and
// ASSIGNs (most calls) one toposort serves.
struct Normalized {
  UOp sink;                  // binds stripped, assigns ranked; buffers still in place
  std::vector<UOp> assigns;  // the ASSIGNs of the graph as given (before ranking)
  std::vector<UOp> inputs;   // each input BUFFER, in slot order
  Key128 key;                // the schedule cache's key of the graph with PARAMs
  static UOp param(const UOp& buffer, size_t slot) {
    return UOp::make(Ops::PARAM, buffer.dtype().ptr(buffer.arg_ints()[1]), {buffer.src(0)}, Arg{static_cast<int64_t>(slot)});
  }
  UOp build() const {
    std::vector<std::pair<UOp, UOp>> params;
    for (size_t i = 0; i < inputs.size(); ++i) params.push_back({inputs[i], param(inputs[i], i)});
    return params.empty() ? sink : substitute(sink, params);
  }
};

Normalized normalize(const UOp& big_sink, VarVals& vals) {
  Normalized out{big_sink, {}, {}, {}};
  std::vector<const UOpNode*> order = toposort_nodes(big_sink);
  bool binds = false, scalars = false;
  for (const UOpNode* n : order) {
    if (n->op == Ops::ASSIGN) out.assigns.push_back(UOpAccess::from_node(n));
    binds |= n->op == Ops::BIND;
    scalars |= liftable(n);
  }
  if (!out.assigns.empty() || binds || scalars) {
    UOp sink = binds || !out.assigns.empty() ? rank_assigns(strip_binds(big_sink, vals)) : big_sink;
    if (scalars) {
      std::vector<std::pair<UOp, UOp>> lifted = lift_scalars(binds || !out.assigns.empty() ? toposort_nodes(sink) : order, vals);
      sink = substitute(sink, lifted);
    }
    out.sink = sink;
    order = toposort_nodes(out.sink);
  }
  PtrMap<Key128> changed(order.size() * 2 + 16);  // nodes whose key the PARAMs change
  std::vector<Key128> srcs;
  for (const UOpNode* n : order) {
    srcs.clear();
    if (n->op == Ops::BUFFER) {  // the key of param(buffer, slot), without making it
      UOp b = UOpAccess::from_node(n);
      srcs.push_back(b.src(0).key());
      changed[n] = process_key(Ops::PARAM, b.dtype().ptr(b.arg_ints()[1]), 0, Arg{static_cast<int64_t>(out.inputs.size())}, srcs);
      out.inputs.push_back(std::move(b));
      continue;
    }
    bool any = false;
    for (uint32_t i = 0; i < n->nsrc; ++i) {
      const UOpNode* c = n->srcs()[i].node();
      const Key128* k = changed.find(c);
      any |= k != nullptr;
      srcs.push_back(k ? *k : n->srcs()[i].key());
    }
    if (any) changed[n] = process_key(n, srcs);
  }
  const Key128* root = changed.find(out.sink.node());
  out.key = root ? *root : out.sink.key();
  return out;
}

}  // namespace

ScheduledGraph schedule_graph(const UOp& big_sink, const ScheduleContext& ctx) {
  trace::Span span("schedule", "schedule");
  auto t0 = std::chrono::steady_clock::now();
  ScheduledGraph out;
  // the first step of the schedule, before its cache (it makes the key): traced as the others are
  Normalized norm = [&] {
    StepScope step("normalize", big_sink);
    Normalized n = normalize(big_sink, out.var_vals);
    step.finish(n.sink);
    return n;
  }();
  out.assigns = norm.assigns;
  bool use_cache = knob(Knob::scache) != 0;
  const Key128& key = norm.key;
  std::shared_ptr<const Template> tmpl;
  if (use_cache) {
    std::lock_guard<std::mutex> lock(cache().mu);
    if (auto* hit = cache().map.find(key)) tmpl = *hit;
  }
  out.cache_hit = static_cast<bool>(tmpl);
  if (trace::on()) span.set_args(cat("\"cache\": \"", out.cache_hit ? "hit" : "miss", "\""));
  if (!tmpl) {
    auto t = std::make_shared<Template>(build_template(norm.build(), norm.inputs.size(), ctx));
    t->state = ctx.new_state();
    tmpl = t;
    if (use_cache) {
      std::lock_guard<std::mutex> lock(cache().mu);
      cache().map.put(key, tmpl, cache_entries());
    }
  }
  out.inputs = std::move(norm.inputs);
  out.tmpl = tmpl;
  int kernels = 0;
  for (const TemplateKernel& k : tmpl->kernels) kernels += !k.is_copy;
  if (debug_level() >= 1) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    log_line(cat("scheduled ", kernels, " kernels in ", ms, " ms | cache ", out.cache_hit ? "hit" : "miss",
                 " | memory planner: ", tmpl->unplanned_bytes, " -> ", tmpl->planned_bytes, " bytes of intermediates"));
  }
  // every kernel's AST, hit or miss (a cache hit runs the same ASTs), in execution order; the
  // buffers are PARAMs, numbered in the CALL's buffer order
  if (debug_level() >= 3) {
    int i = 0;
    for (const TemplateKernel& k : tmpl->kernels) {
      if (k.is_copy) continue;
      std::string ast = print_graph(k.body);
      if (!ast.empty() && ast.back() == '\n') ast.pop_back();
      log_line(cat("kernel ", ++i, "/", kernels, " ", k.body.arg_string(), " AST:\n", ast));
    }
  }
  return out;
}

void clear_schedule_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().map.clear();
}

size_t schedule_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().map.size();
}

}  // namespace kiln
