// rewrite/pattern_matcher.hpp - rules and the op-indexed PatternMatcher.
//
// A rule is a pattern plus either a template right-hand side (instantiated from the bindings) or
// a callback returning the replacement (an empty UOp means "no rewrite"). Rules remember where
// they were written (std::source_location) for traces and errors. A PatternMatcher indexes rules
// by root op, rejects early when a rule needs a child op the node does not have, and tries rules
// in insertion order; the first non-empty result wins. Matchers compose with `+` (left first).
#pragma once
#include <array>
#include <memory>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "rewrite/upat.hpp"

namespace kiln {

using Guard = bool (*)(const Match&);
using RewriteFn = UOp (*)(const Match&);
using RewriteCtxFn = UOp (*)(const Match&, void* ctx);

struct Rule {
  UPat pat;
  UPat rhs;                      // template form (when fn and ctx_fn are null)
  Guard guard = nullptr;
  RewriteFn fn = nullptr;
  RewriteCtxFn ctx_fn = nullptr;
  // Typed-context callbacks: `typed` is the user's function, `thunk` casts the context back.
  void (*typed)() = nullptr;
  UOp (*thunk)(void (*typed)(), const Match&, void* ctx) = nullptr;
  OpMask required;               // early reject: ops the node's sources must include
  OpMask only = groups::All;     // early reject: ops the node's sources may include (repeat patterns)
  bool flat = false;             // pat.is_flat(): matched without the backtracking matcher
  std::source_location loc;

  UOp apply(const Match& m, const UOp& root, void* ctx) const;
  std::string where() const;     // "symbolic/rules.cpp:42"
};

template <typename P>
struct CtxFnTraits : std::false_type {};
template <typename Ctx>
struct CtxFnTraits<UOp (*)(const Match&, Ctx&)> : std::true_type {
  using ctx = Ctx;
};
// A callback: a function or captureless lambda taking (const Match&) or (const Match&, Ctx&).
template <typename F>
concept RuleCallback = requires(F f) { +f; } && !std::is_arithmetic_v<F> &&
                       (std::is_same_v<decltype(+std::declval<F>()), RewriteFn> ||
                        std::is_same_v<decltype(+std::declval<F>()), RewriteCtxFn> ||
                        CtxFnTraits<decltype(+std::declval<F>())>::value);

// rule(lhs, rhs[, guard]): template rewrite.
Rule rule(UPat lhs, UPat rhs, std::source_location loc = std::source_location::current());
Rule rule(UPat lhs, UPat rhs, Guard guard, std::source_location loc = std::source_location::current());
// rule(lhs, fn): callback rewrite.
template <RuleCallback F>
Rule rule(UPat lhs, F f, std::source_location loc = std::source_location::current()) {
  Rule r = rule(std::move(lhs), UPat(), loc);
  auto fp = +f;
  using P = decltype(fp);
  if constexpr (std::is_same_v<P, RewriteFn>) {
    r.fn = fp;
  } else if constexpr (std::is_same_v<P, RewriteCtxFn>) {
    r.ctx_fn = fp;
  } else {
    using Ctx = typename CtxFnTraits<P>::ctx;
    r.typed = reinterpret_cast<void (*)()>(fp);
    r.thunk = [](void (*typed)(), const Match& m, void* ctx) {
      return reinterpret_cast<UOp (*)(const Match&, Ctx&)>(typed)(m, *static_cast<Ctx*>(ctx));
    };
  }
  return r;
}

// Builds the node a template right-hand side describes (exposed for tests).
UOp instantiate(const UPat& rhs, const Match& m, DType root_dtype);

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);  // NOLINT(implicit): lets `{rule(...), ...}` build one
  PatternMatcher(std::initializer_list<Rule> rules) : PatternMatcher(std::vector<Rule>(rules)) {}

  // The first rule that matches `u` and returns a non-empty, different node; `fired` (if given)
  // receives the index of that rule.
  UOp rewrite(const UOp& u, void* ctx = nullptr, int* fired = nullptr) const;
  size_t size() const { return rules_.size(); }
  const Rule& rule_at(size_t i) const { return rules_[i]; }
  const std::vector<Rule>& rules() const { return rules_; }
  friend PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b);

 private:
  std::vector<Rule> rules_;
  std::array<std::vector<uint32_t>, kNumOps> by_op_;
};

}  // namespace kiln
