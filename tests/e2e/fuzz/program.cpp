// tests/e2e/fuzz/program.cpp - what the contract fixes of a fuzz program with assigns: which
// inputs' buffers each step reads, which steps are stale (a later assign writes a buffer they read,
// so their value depends on when they are realized: not compared, and not read by a later step),
// and whether a program keeps to those rules (the generator and the shrinker only keep programs that
// do). The rules themselves are in tests/e2e/fuzz_test.cpp's file comment.
#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "program.hpp"

namespace kiln::fuzz {

std::vector<int> operands(const Node& n) {
  std::vector<int> o;
  for (int x : {n.a, n.b, n.c})
    if (x >= 0) o.push_back(x);
  return o;
}

// The input whose buffer node i is a handle of (an Input, or an Assign to one), else -1.
int root(const Program& p, int i) {
  const Node& n = p.nodes[static_cast<size_t>(i)];
  if (n.k == K::Input) return i;
  if (n.k == K::Assign) return root(p, n.a);
  return -1;
}

Reads analyse(const Program& p) {
  const size_t n = p.nodes.size();
  Reads r;
  r.roots.resize(n);
  r.stale_at.assign(n, std::numeric_limits<int>::max());
  auto reads_of = [&](int o) {  // what reading step o reads: its reads, and its own buffer if a handle
    std::set<int> s = r.roots[static_cast<size_t>(o)];
    if (int h = root(p, o); h >= 0) s.insert(h);
    return s;
  };
  for (size_t i = 0; i < n; ++i) {
    const Node& x = p.nodes[i];
    if (x.k == K::Input) continue;
    // a clone of an input no assign has touched yet is copied at once (tensor.hpp): a snapshot
    if (x.k == K::Clone && p.nodes[static_cast<size_t>(x.a)].k == K::Input) {
      bool assigned = false;
      for (size_t j = 0; j < i; ++j) assigned |= p.nodes[j].k == K::Assign && root(p, static_cast<int>(j)) == x.a;
      if (!assigned) continue;
    }
    if (x.k == K::Assign) {
      r.roots[i] = reads_of(x.b);
    } else {
      for (int o : operands(x))
        for (int h : reads_of(o)) r.roots[i].insert(h);
    }
  }
  for (size_t j = 0; j < n; ++j) {
    if (p.nodes[j].k != K::Assign) continue;
    const int h = root(p, static_cast<int>(j));
    for (size_t i = 0; i < j; ++i) {
      if (!r.roots[i].count(h) || root(p, static_cast<int>(i)) == h) continue;
      if (p.nodes[i].k == K::Assign) r.valid = false;  // another input's assign read this one's old contents
      r.stale_at[i] = std::min(r.stale_at[i], static_cast<int>(j));
    }
  }
  for (size_t k = 0; k < n; ++k)
    for (int o : operands(p.nodes[k]))
      if (r.stale_at[static_cast<size_t>(o)] < static_cast<int>(k)) r.valid = false;  // read after it went stale
  return r;
}

// The steps whose values the contract fixes (see fuzz_test.cpp's file comment), in order.
std::vector<int> compared(const Program& p) {
  Reads r = analyse(p);
  std::vector<int> out;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (r.stale_at[i] == std::numeric_limits<int>::max()) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> assigned_inputs(const Program& p) {
  std::set<int> s;
  for (size_t j = 0; j < p.nodes.size(); ++j)
    if (p.nodes[j].k == K::Assign) s.insert(root(p, static_cast<int>(j)));
  return {s.begin(), s.end()};
}

}  // namespace kiln::fuzz
