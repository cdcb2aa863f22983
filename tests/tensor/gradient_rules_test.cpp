// tests/tensor/gradient_rules_test.cpp - every op of ops.def is classified for gradients.
//
// A tensor-level op (the Elementwise, Movement and TensorOnly kinds) has exactly one of: a rule in
// tensor/gradient.cpp or tensor/elementwise.cpp, a place in ops.def's NotDifferentiable group, or
// a place in the short list below of ops a backward pass never differentiates. A new op that has
// none fails here, before any backward pass meets it.
#include <gtest/gtest.h>

#include "tensor/tensor_state.hpp"

using namespace kiln;

TEST(GradientRules, EveryTensorLevelOpHasARuleOrIsNotDifferentiable) {
  // ops no gradient passes through: storage and identities without a differentiable source, the
  // multi-device ops a differentiated graph never contains (a multi-device tensor's parts are
  // differentiated one by one), and MULACC, which codegen fuses (a tensor graph has none; meeting
  // one is the error GradientKinks.AnOpWithoutARuleIsAnErrorNamingIt checks)
  const OpMask leaves = {Ops::DEVICE, Ops::BUFFER, Ops::IOTA, Ops::MSELECT, Ops::MSTACK, Ops::MULACC};
  const OpMask rules = detail::gradient_rule_ops();
  const OpMask tensor_level = groups::Elementwise | groups::Movement | groups::TensorOnly;
  int classified = 0;
  for (int i = 0; i < kNumOps; ++i) {
    Ops op = static_cast<Ops>(i);
    int n = rules.has(op) + groups::NotDifferentiable.has(op) + leaves.has(op);
    if (tensor_level.has(op)) {
      EXPECT_EQ(n, 1) << op_name(op) << ": give it a rule in tensor/gradient.cpp or list it in ops.def's NotDifferentiable"
                      << " (rule " << rules.has(op) << ", not differentiable " << groups::NotDifferentiable.has(op) << ", leaf "
                      << leaves.has(op) << ")";
      ++classified;
    } else {
      EXPECT_EQ(n, 0) << op_name(op) << " is kernel- or program-level: no gradient rule applies to it";
    }
  }
  EXPECT_EQ(classified, tensor_level.size());
}

TEST(GradientRules, TheDifferentiableAluOpsHaveRules) {
  for (Ops op : {Ops::ADD, Ops::SUB, Ops::MUL, Ops::FDIV, Ops::NEG, Ops::MAX, Ops::POW, Ops::EXP2, Ops::LOG2, Ops::SQRT,
                 Ops::SIN, Ops::RECIPROCAL, Ops::WHERE, Ops::CAST})
    EXPECT_TRUE(detail::gradient_rule_ops().has(op)) << op_name(op);
  EXPECT_TRUE(groups::NotDifferentiable.has(Ops::CMPLT));
  EXPECT_TRUE(groups::NotDifferentiable.has(Ops::DETACH));
}
