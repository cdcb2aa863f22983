// schedule/group.cpp - multi-output kernels: realized nodes that share an iteration space share a
// kernel, which stores each of them.
//
// A realized node X "reads Y in its own space" when every path from X's value down to Y (through
// nodes that are not realized) visits Y at the very element X stores: through elementwise ops and
// RESHAPEs (same flat index), and through a REDUCE_AXIS whose source broadcasts Y back over
// exactly the reduced axes (softmax's sum of exp(x - max): the max is per row, like the sum). A
// kernel then computes Y once per output element, in registers, before X's reduce loop needs it.
// Two realized nodes join one kernel when
//  - one reads the other in its own space (a = f(x), b = g(a): one pass, a stored on the way), or
//  - both read one computed node in their own space (two outputs of one reduce, or differing only
//    in an elementwise tail: the shared part is computed and loaded once), or
//  - neither computes a reduce and both read one input buffer in their own space (r0 + y and
//    r1 + y: y is loaded once; a matmul's kernel takes no such partner, see run()),
// and neither reads the other any other way, the kernel would not compute two contractions
// (kernelize.hpp: a matmul read by another's epilogue keeps its buffer), they live on one device,
// and the kernels that run between them (one reads a third that reads the other) do not make the
// merge a cycle. COPY,
// ASSIGN and CONTIGUOUS (a boundary the user asked for) kernels stay alone, and a graph with an
// ASSIGN is not grouped: an assign's write-after-read edges (kernelize.cpp) are not known here,
// and a group could need to run both before and after it.
// Last, a reduce (or an elementwise chain over one) that was realized only because several
// consumers share it, and whose consumers all joined its kernel, is not stored at all (a reduce consumed by several outputs is computed
// once, with no buffer and no extra kernel).
#include <algorithm>
#include <set>
#include <tuple>

#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "schedule/kernelize.hpp"

namespace kiln {

namespace {

bool is_one(const UOp& u) { return u.is_const() && u.arg_int() == 1; }

// How a node is indexed relative to the root's output element.
enum class Space : uint8_t { same, reduced, other };

struct Grouper {
  const GraphInfo& g;
  PtrMap<char>& realize;
  const UOp& sink;
  std::vector<const UOpNode*> roots;          // realized nodes, in graph order
  PtrMap<int> id;                             // realized node -> index in roots
  std::vector<std::vector<std::pair<int, bool>>> reads;  // per root: realized nodes read, in own space?
  PtrMap<std::vector<int>> sharers;           // computed node -> roots reading it in their own space
  PtrMap<std::vector<int>> input_sharers;     // input buffer -> roots reading it in their own space
  std::vector<char> reduces;                  // per root: computes a reduce (not a realized one it reads)
  std::vector<int> parent;
  std::vector<std::vector<const UOpNode*>> contractions;  // per root: the contractions its kernel computes

  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  // (a CONTIGUOUS is a kernel boundary the user asked for; a realize entry of 2 one that keeps a
  // kernel under the buffers a launch binds: kernelize.cpp's limit_buffers)
  bool groupable(int x) const {
    Ops op = roots[x]->op;
    return op != Ops::COPY && op != Ops::ASSIGN && op != Ops::CONTIGUOUS && *realize.find(roots[x]) != 2;
  }
  const std::string& device(int x) const { return *g.device.find(roots[x]); }

  // The state of `src` when `u` (in state s, within reduce `r` when s is `reduced`) reads it.
  Space step(const UOpNode* u, Space s, const UOpNode*& r, const UOpNode* src) const {
    Ops op = u->op;
    if (s == Space::same) {
      if (groups::Elementwise.has(op) || op == Ops::RESHAPE || op == Ops::CONTIGUOUS || op == Ops::DETACH)
        return Space::same;
      if (op == Ops::REDUCE_AXIS) {
        r = u;
        return Space::reduced;
      }
      return Space::other;
    }
    if (s == Space::reduced) {
      if (groups::Elementwise.has(op)) return Space::reduced;
      if (op != Ops::EXPAND) return Space::other;
      // broadcast back over exactly the reduced axes: the source is per output element
      const auto& in = *g.shape.find(src);
      const auto& out = *g.shape.find(u);
      const auto& axes = std::get<std::vector<int64_t>>(r->arg);
      for (size_t d = 0; d < in.size(); ++d) {
        bool reduced = std::find(axes.begin() + 1, axes.end(), static_cast<int64_t>(d)) != axes.end();
        if (reduced ? !is_one(in[d]) : !(in[d] == out[d])) return Space::other;
      }
      return Space::same;
    }
    return Space::other;
  }

  // Walks root x's value down to realized nodes, recording what it reads and in which space.
  void walk(int x) {
    // (a CONTIGUOUS root starts at itself too: step() passes its source on in the same space,
    // and a realized source is a read like any other, which merges and drops must see)
    const UOpNode* n = roots[x];
    struct Item {
      const UOpNode* u;
      Space s;
      const UOpNode* r;
    };
    std::vector<Item> stack{{n, Space::same, nullptr}};
    std::set<std::tuple<const UOpNode*, Space, const UOpNode*>> seen;
    PtrMap<char> read, read_other;
    std::vector<const UOpNode*> order;
    while (!stack.empty()) {
      Item it = stack.back();
      stack.pop_back();
      if (!seen.insert({it.u, it.s, it.r}).second) continue;
      bool is_root = it.u == n;
      if (!is_root && (realize.contains(it.u) || it.u->op == Ops::PARAM)) {
        if (it.u->op == Ops::PARAM && it.s == Space::same) {
          auto& v = input_sharers[it.u];
          if (v.empty() || v.back() != x) v.push_back(x);
        }
        if (realize.contains(it.u)) {
          if (!read.contains(it.u)) order.push_back(it.u);
          read[it.u] = 1;
          if (it.s != Space::same) read_other[it.u] = 1;
        }
        continue;
      }
      if (it.u->op == Ops::REDUCE_AXIS) reduces[x] = 1;
      if (it.u->op == Ops::REDUCE_AXIS && contraction(it.u)) {
        auto& c = contractions[x];
        if (std::find(c.begin(), c.end(), it.u) == c.end()) c.push_back(it.u);
      }
      // a computed value several nodes use (not a constant: that shares nothing worth a kernel)
      bool computed = groups::Elementwise.has(it.u->op) || it.u->op == Ops::REDUCE_AXIS;
      if (it.s == Space::same && !is_root && computed) {
        const int* users = g.consumers.find(it.u);
        if (users && *users > 1) {
          auto& v = sharers[it.u];
          if (v.empty() || v.back() != x) v.push_back(x);
        }
      }
      for (uint32_t i = 0; i < it.u->nsrc; ++i) {
        const UOpNode* src = it.u->srcs()[i].node();
        const UOpNode* r = it.r;
        Space s = it.s == Space::other ? Space::other : step(it.u, it.s, r, src);
        stack.push_back({src, s, s == Space::reduced ? r : nullptr});
      }
    }
    for (const UOpNode* y : order) reads[x].push_back({*id.find(y), !read_other.contains(y)});
  }

  // Would one kernel for the groups of a and b run before and after some other kernel, or read
  // one of them elsewhere than at its own element?
  bool merge_is_cycle(int a, int b) {
    const int n = static_cast<int>(roots.size()), ga = find(a), gb = find(b);
    std::vector<std::vector<int>> members(n);
    for (int x = 0; x < n; ++x) members[find(x)].push_back(x);
    for (int gx : {ga, gb})
      for (int x : members[gx])
        for (auto [y, own] : reads[x])
          if (!own && find(y) == (gx == ga ? gb : ga)) return true;
    auto reaches = [&](int from, int to) {  // through at least one other group
      std::vector<char> seen(n, 0);
      std::vector<int> stack;
      for (int x : members[from])
        for (auto [y, own] : reads[x])
          if (find(y) != from && find(y) != to) stack.push_back(find(y));
      while (!stack.empty()) {
        int gx = stack.back();
        stack.pop_back();
        if (gx == to) return true;
        if (seen[gx]) continue;
        seen[gx] = 1;
        for (int x : members[gx])
          for (auto [y, own] : reads[x])
            if (find(y) != gx) stack.push_back(find(y));
      }
      return false;
    };
    return reaches(ga, gb) || reaches(gb, ga);
  }

  bool group_reduces(int a) {
    for (size_t x = 0; x < roots.size(); ++x)
      if (reduces[x] && find(static_cast<int>(x)) == find(a)) return true;
    return false;
  }

  PtrMap<char> contraction_memo;  // reduce -> 1 + is_contraction
  bool contraction(const UOpNode* r) {
    char& c = contraction_memo[r];
    if (!c) c = static_cast<char>(1 + is_contraction(g, realize, UOpAccess::from_node(r)));
    return c == 2;
  }

  // Would one kernel for the groups of a and b compute two contractions (kernelize.hpp)? The
  // optimizer tiles one: a matmul's output read by another's epilogue stays a buffer.
  bool merge_adds_contraction(int a, int b) {
    const int ga = find(a), gb = find(b);
    std::vector<const UOpNode*> all;
    for (size_t x = 0; x < roots.size(); ++x)
      if (int gx = find(static_cast<int>(x)); gx == ga || gx == gb)
        for (const UOpNode* c : contractions[x])
          if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
    return all.size() > 1;
  }

  void try_merge(int a, int b) {
    if (find(a) == find(b) || !groupable(a) || !groupable(b) || device(a) != device(b)) return;
    if (merge_is_cycle(a, b) || merge_adds_contraction(a, b)) return;
    parent[find(b)] = find(a);
  }

  std::vector<std::vector<const UOpNode*>> run() {
    for (const UOp& n : g.order)
      if (realize.contains(n.node())) {
        id[n.node()] = static_cast<int>(roots.size());
        roots.push_back(n.node());
      }
    parent.resize(roots.size());
    for (size_t i = 0; i < roots.size(); ++i) parent[i] = static_cast<int>(i);
    bool has_assign = std::any_of(g.order.begin(), g.order.end(), [](const UOp& n) { return n.op() == Ops::ASSIGN; });
    if (!has_assign) {
      reads.resize(roots.size());
      reduces.assign(roots.size(), 0);
      contractions.resize(roots.size());
      for (size_t x = 0; x < roots.size(); ++x) walk(static_cast<int>(x));
      for (size_t x = 0; x < roots.size(); ++x)
        for (auto [y, own] : reads[x])
          if (own) try_merge(y, static_cast<int>(x));
      for (const UOp& n : g.order)
        if (const auto* v = sharers.find(n.node()))
          for (size_t i = 1; i < v->size(); ++i) try_merge((*v)[0], (*v)[i]);
      // Elementwise kernels that read one input buffer at their own element share a kernel, which
      // loads it once (out0 = r0 + y, out1 = r1 + y; tinygrad's test_cache_reduce_multiple_children).
      // Not a kernel with a reduce: a second output in a matmul's kernel slowed 1024^3 by 1.3x.
      for (const UOp& n : g.order)
        if (const auto* v = input_sharers.find(n.node()))
          for (size_t i = 1; i < v->size(); ++i)
            if (!group_reduces((*v)[0]) && !group_reduces((*v)[i])) try_merge((*v)[0], (*v)[i]);
      drop_absorbed_reduces();
    }
    std::vector<std::vector<const UOpNode*>> out;
    std::vector<int> slot(roots.size(), -1);
    for (size_t x = 0; x < roots.size(); ++x) {
      if (!realize.contains(roots[x])) continue;
      int gx = find(static_cast<int>(x));
      if (slot[gx] < 0) {
        slot[gx] = static_cast<int>(out.size());
        out.emplace_back();
      }
      out[slot[gx]].push_back(roots[x]);
    }
    return out;
  }

  // A reduce realized because it is shared (or an elementwise chain over one, realized because
  // a reduce reads it broadcast: a variance's mean), all of whose readers are in its kernel and
  // read it there in their own space, needs no buffer.
  void drop_absorbed_reduces() {
    PtrMap<char> output;
    for (const UOp& s : sink.src()) output[s.node()] = 1;
    std::vector<char> absorbed(roots.size(), 0);
    for (size_t y = 0; y < roots.size(); ++y) {
      bool computed = roots[y]->op == Ops::REDUCE_AXIS || groups::Elementwise.has(roots[y]->op);
      if (!computed || output.contains(roots[y])) continue;
      bool all_inside = true, any = false;
      for (size_t x = 0; x < roots.size() && all_inside; ++x)
        for (auto [r, own] : reads[x])
          if (r == static_cast<int>(y)) {
            any = true;
            all_inside &= own && find(static_cast<int>(x)) == find(static_cast<int>(y));
          }
      absorbed[y] = any && all_inside;
    }
    PtrMap<char> kept;
    realize.for_each([&](const void* k, char v) {
      const int* x = id.find(k);
      if (!x || !absorbed[*x]) kept[k] = v;
    });
    realize = std::move(kept);
  }
};

}  // namespace

std::vector<std::vector<const UOpNode*>> group_kernels(const GraphInfo& g, const UOp& sink, PtrMap<char>& realize) {
  return Grouper{g, realize, sink, {}, {}, {}, {}, {}, {}, {}, {}, {}}.run();
}

}  // namespace kiln
