// codegen/linearize.cpp - the kernel DAG becomes an ordered program with structured loops.
//
// Every node lives in the innermost loop among the ranges it depends on (its loop set), so
// loop-invariant values are computed outside the loops they do not depend on. The loop tree
// comes from the ENDs: END(x, r1..rk) opens r1 inside the innermost loop of the END's own loop
// set and nests r2..rk inside r1. Inside one loop, its nodes and its child loops are ordered
// depth-first by dependencies (ties by toposort position, so output is deterministic); a child
// loop is emitted as RANGE, its body, END(range).
//
// The result is a list of nodes: RANGE opens a loop, END(range) (one source) closes it, and
// AFTER/GROUP/SINK/END(value, ranges...) carry ordering only.
#include <algorithm>

#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "support/check.hpp"
#include "support/flat_map.hpp"

namespace kiln {

namespace {

using Node = const UOpNode*;

struct Linearizer {
  std::vector<Node> order;
  PtrMap<int> pos;                       // toposort position
  PtrMap<std::vector<Node>> loops;       // loop set of each node
  PtrMap<Node> parent;                   // loop tree: range -> enclosing range (nullptr: top level)
  PtrMap<int> depth;                     // range -> nesting depth (top-level loops: 1)
  PtrMap<Node> block;                    // node -> its innermost range (nullptr: top level)
  std::vector<UOp> out;
  PtrMap<char> emitted;
  // items of a scope: a node, or a child loop (its range)
  struct Item {
    Node n;
    bool loop;
  };
  PtrMap<std::vector<Item>> deps;  // for nodes and loop items: what must come first, same scope

  int depth_of(Node r) { return r ? *depth.find(r) : 0; }

  Node deepest(const std::vector<Node>& set) {
    Node best = nullptr;
    for (Node r : set)
      if (!best || depth_of(r) > depth_of(best)) best = r;
    return best;
  }

  void compute_loops() {
    for (Node n : order) {
      std::vector<Node> set;
      auto add = [&](Node r) {
        if (std::find(set.begin(), set.end(), r) == set.end()) set.push_back(r);
      };
      uint32_t first_range = n->op == Ops::END ? 1 : n->nsrc;
      for (uint32_t i = 0; i < n->nsrc; ++i)
        for (Node r : *loops.find(n->srcs()[i].node())) add(r);
      if (n->op == Ops::RANGE) add(n);
      if (n->op == Ops::END)
        for (uint32_t i = first_range; i < n->nsrc; ++i) set.erase(std::remove(set.begin(), set.end(), n->srcs()[i].node()), set.end());
      loops[n] = std::move(set);
    }
  }

  void compute_tree() {
    // ENDs from the outside in: an END's loop set only holds ranges of enclosing ENDs
    std::vector<Node> ends;
    for (Node n : order)
      if (n->op == Ops::END && n->nsrc > 1) ends.push_back(n);
    // (by loop set size, then each once every range of its loop set is open: an END nested in
    // another's loop, as a peeled loop's, may depend on fewer ranges than the one around it)
    std::stable_sort(ends.begin(), ends.end(), [&](Node a, Node b) { return loops.find(a)->size() < loops.find(b)->size(); });
    auto ready = [&](Node e) {
      const auto& set = *loops.find(e);
      return std::all_of(set.begin(), set.end(), [&](Node r) { return depth.contains(r); });
    };
    for (size_t done = 0; done < ends.size(); ++done) {
      auto next = std::find_if(ends.begin() + static_cast<std::ptrdiff_t>(done), ends.end(), ready);
      KILN_CHECK(next != ends.end(), "linearize: range used by an END before the END that opens it");
      std::rotate(ends.begin() + static_cast<std::ptrdiff_t>(done), next, next + 1);
      Node e = ends[done];
      Node up = nullptr;
      for (Node r : *loops.find(e))
        if (!up || *depth.find(r) > *depth.find(up)) up = r;
      for (uint32_t i = 1; i < e->nsrc; ++i) {
        Node r = e->srcs()[i].node();
        KILN_CHECK(!parent.contains(r), "linearize: a range closed by two ENDs (", arg_str(r->arg), ")");
        parent[r] = up;
        depth[r] = depth_of(up) + 1;
        up = r;
      }
    }
    for (Node n : order) {
      if (n->op == Ops::RANGE) KILN_CHECK(depth.contains(n), "linearize: a RANGE without END (", arg_str(n->arg), ")");
      const auto& set = *loops.find(n);
      Node b = deepest(set);
      // the loop set must be a chain of the tree
      for (Node r : set) {
        Node x = b;
        while (x && x != r) x = *parent.find(x);
        KILN_CHECK(x == r, "linearize: a node depends on ranges of two sibling loops");
      }
      block[n] = b;
    }
  }

  // The item representing node n inside scope s (n is in s or below it).
  Item item_in(Node n, Node scope) {
    Node b = *block.find(n);
    if (b == scope) return {n, false};
    while (*parent.find(b) != scope) b = *parent.find(b);
    return {b, true};
  }

  Node lca(Node a, Node b) {
    while (depth_of(a) > depth_of(b)) a = *parent.find(a);
    while (depth_of(b) > depth_of(a)) b = *parent.find(b);
    while (a != b) a = *parent.find(a), b = *parent.find(b);
    return a;
  }

  void compute_deps() {
    for (Node m : order)
      for (uint32_t i = 0; i < m->nsrc; ++i) {
        Node s = m->srcs()[i].node();
        Node scope = lca(*block.find(m), *block.find(s));
        Item im = item_in(m, scope), is = item_in(s, scope);
        if (im.n == is.n) continue;
        if (!is.loop && is.n == scope) continue;  // the loop's own RANGE: emitted when the loop opens
        auto& d = deps[im.n];
        if (std::none_of(d.begin(), d.end(), [&](const Item& x) { return x.n == is.n; })) d.push_back(is);
      }
    for (Node n : order) {
      auto* d = deps.find(n);
      if (d) std::sort(d->begin(), d->end(), [&](const Item& a, const Item& b) { return *pos.find(a.n) < *pos.find(b.n); });
    }
  }

  void emit_item(const Item& it, Node scope) {
    if (emitted.contains(it.n)) return;
    emitted[it.n] = 1;
    if (auto* d = deps.find(it.n))
      for (const Item& x : std::vector<Item>(*d)) emit_item(x, scope);
    if (it.loop) {
      out.push_back(UOpAccess::from_node(it.n));  // RANGE opens the loop
      emit_scope(it.n);
      out.push_back(UOp::make(Ops::END, dtypes::void_, {UOpAccess::from_node(it.n)}));
      return;
    }
    out.push_back(UOpAccess::from_node(it.n));
  }

  void emit_scope(Node scope) {
    for (Node n : order) {
      if (n == scope) continue;  // the RANGE itself was emitted when the loop opened
      Item it = *block.find(n) == scope ? Item{n, false} : Item{nullptr, false};
      if (!it.n) {
        Node b = *block.find(n);
        if (!b || depth_of(b) <= depth_of(scope)) continue;
        Node x = b;
        while (x && *parent.find(x) != scope) x = *parent.find(x);
        if (!x) continue;
        it = Item{x, true};
      }
      emit_item(it, scope);
    }
  }
};

}  // namespace

std::vector<UOp> linearize(const UOp& ast) {
  Linearizer L;
  L.order = toposort_nodes(ast);
  for (size_t i = 0; i < L.order.size(); ++i) L.pos[L.order[i]] = static_cast<int>(i);
  L.compute_loops();
  L.compute_tree();
  L.compute_deps();
  L.emit_scope(nullptr);
  return L.out;
}

}  // namespace kiln
