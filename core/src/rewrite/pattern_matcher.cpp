// rewrite/pattern_matcher.cpp - rule construction checks, template instantiation, dispatch.
#include "rewrite/pattern_matcher.hpp"

#include <algorithm>
#include <cstring>

#include "ir/alu.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

Ops single_op(const OpMask& m) {
  for (int i = 0; i < kNumOps; ++i)
    if (m.has(static_cast<Ops>(i))) return static_cast<Ops>(i);
  KILN_UNREACHABLE("empty op mask");
}

void collect_slots(const UPat& p, uint32_t& out) {
  if (p.slot_ >= 0) out |= 1u << p.slot_;
  for (const UPat& s : p.src_) collect_slots(s, out);
}

std::string loc_str(const std::source_location& loc) {
  const char* f = loc.file_name();
  // keep the path below core/src/ (or the file name) so traces are short and stable
  if (const char* p = std::strstr(f, "core/src/")) f = p + 9;
  else if (const char* q = std::strrchr(f, '/')) f = q + 1;
  return cat(f, ":", loc.line());
}

void check_rule(const Rule& r) {
  KILN_CHECK(!r.pat.ops_.empty(), loc_str(r.loc), ": a rule's root pattern must name its op(s)");
  KILN_CHECK(r.pat.size() < 40, loc_str(r.loc), ": pattern too large (", r.pat.size(), " nodes)");
  bool is_template = !r.fn && !r.ctx_fn && !r.thunk;
  if (!is_template) return;
  uint32_t bound = 0, used = 0;
  collect_slots(r.pat, bound);
  collect_slots(r.rhs, used);
  KILN_CHECK((used & ~bound) == 0, loc_str(r.loc), ": the right-hand side uses a slot the pattern does not bind");
  // every template node must be buildable: a slot, a constant, or an ALU op
  std::vector<const UPat*> todo{&r.rhs};
  while (!todo.empty()) {
    const UPat* p = todo.back();
    todo.pop_back();
    bool leaf_slot = p->slot_ >= 0 && p->src_.empty() && (p->ops_.empty() || p->const_slot_);
    bool leaf_const = p->value_.has_value();
    bool alu = p->ops_.size() == 1 && groups::ALU.has(single_op(p->ops_));
    KILN_CHECK(leaf_slot || leaf_const || alu, loc_str(r.loc), ": template right-hand side node is not buildable");
    KILN_CHECK(p->src_.size() <= 3, loc_str(r.loc), ": template node with more than 3 sources");
    for (const UPat& s : p->src_) todo.push_back(&s);
  }
}

}  // namespace

Rule rule(UPat lhs, UPat rhs, std::source_location loc) {
  Rule r;
  r.pat = std::move(lhs);
  r.rhs = std::move(rhs);
  r.loc = loc;
  r.required = r.pat.required_src_ops();
  r.flat = r.pat.is_flat();
  if (r.pat.src_kind_ == UPat::Src::repeat && !r.pat.src_[0].ops_.empty()) r.only = r.pat.src_[0].ops_;
  return r;
}

Rule rule(UPat lhs, UPat rhs, Guard guard, std::source_location loc) {
  Rule r = rule(std::move(lhs), std::move(rhs), loc);
  r.guard = guard;
  return r;
}

std::string Rule::where() const { return loc_str(loc); }

UOp instantiate(const UPat& rhs, const Match& m, DType hint) {
  if (rhs.slot_ >= 0 && rhs.src_.empty() && (rhs.ops_.empty() || rhs.const_slot_)) return *m.s[rhs.slot_];
  if (rhs.value_) return UOp::cvalue(hint, *rhs.value_);
  // an ALU node: constants among the sources take the dtype of the first non-constant source
  // templates build ALU nodes, at most 3 sources (check_rule): no allocation on this path
  UOp src_buf[3];
  std::span<UOp> src(src_buf, rhs.src_.size());
  DType child_hint = hint;
  bool have_hint = false;
  for (size_t i = 0; i < rhs.src_.size(); ++i)
    if (!rhs.src_[i].value_) {
      src[i] = instantiate(rhs.src_[i], m, hint);
      if (!have_hint) child_hint = src[i].dtype(), have_hint = true;
    }
  Ops op = single_op(rhs.ops_);
  if (groups::Comparison.has(op) && !have_hint) child_hint = hint;
  for (size_t i = 0; i < rhs.src_.size(); ++i)
    if (rhs.src_[i].value_) src[i] = UOp::cvalue(child_hint, *rhs.src_[i].value_);
  // fold constant operands right away (what constant folding would do next, without the garbage)
  if (std::all_of(src.begin(), src.end(), [](const UOp& s) { return s.is_const(); })) {
    Value vals[3];
    for (size_t i = 0; i < src.size(); ++i) vals[i] = value_of(src[i]);
    DType in = op == Ops::WHERE ? src[1].dtype() : src[0].dtype();
    DType out = groups::Comparison.has(op) ? dtypes::bool_.vec(in.count()) : in;
    if (auto v = exec_alu(op, out.scalar_type(), in.scalar_type(), std::span<const Value>(vals, src.size())))
      return const_of(out, *v);
  }
  return UOp::alu(op, src);
}

UOp Rule::apply(const Match& m, const UOp& root, void* ctx) const {
  if (guard && !guard(m)) return {};
  if (fn) return fn(m);
  if (ctx_fn) return ctx_fn(m, ctx);
  if (thunk) {
    KILN_CHECK(ctx, where(), ": rule needs a context but graph_rewrite was given none");
    return thunk(typed, m, ctx);
  }
  return instantiate(rhs, m, root.dtype());
}

PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    check_rule(rules_[i]);
    for (int op = 0; op < kNumOps; ++op)
      if (rules_[i].pat.ops_.has(static_cast<Ops>(op))) by_op_[op].push_back(i);
  }
}

PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b) {
  std::vector<Rule> all = a.rules_;
  all.insert(all.end(), b.rules_.begin(), b.rules_.end());
  return PatternMatcher(std::move(all));
}

UOp PatternMatcher::rewrite(const UOp& u, void* ctx, int* fired) const {
  const OpMask have = u.src_ops();
  const ScalarMask dt = scalar_bit(u.dtype().scalar());
  for (uint32_t i : by_op_[static_cast<int>(u.op())]) {
    const Rule& r = rules_[i];
    if (!r.required.subset_of(have) || !have.subset_of(r.only) || (r.pat.scalars_ && !(r.pat.scalars_ & dt))) continue;
    if (r.flat) {
      Match m;
      if (!match_flat(r.pat, u, m)) continue;
      UOp o = r.apply(m, u, ctx);
      if (!o || o == u) continue;
      if (fired) *fired = static_cast<int>(i);
      return o;
    }
    struct Attempt {
      const Rule* rule;
      const UOp* node;
      void* ctx;
      UOp out;
    } at{&r, &u, ctx, {}};
    Match m;
    auto accept = [](Match& mm, void* p) {
      auto* a = static_cast<Attempt*>(p);
      UOp o = a->rule->apply(mm, *a->node, a->ctx);
      if (!o || o == *a->node) return false;
      a->out = std::move(o);
      return true;
    };
    if (match_each(r.pat, u, m, accept, &at)) {
      if (fired) *fired = static_cast<int>(i);
      return at.out;
    }
  }
  return {};
}

}  // namespace kiln
