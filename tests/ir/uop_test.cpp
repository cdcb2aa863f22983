// tests/ir/uop_test.cpp - interning, lifetime, fingerprints, traversal, verification.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "ir/verify.hpp"
#include "kiln/error.hpp"
#include "kiln/uop.hpp"

using namespace kiln;

TEST(UOp, SameStructureSameHandle) {
  UOp x = UOp::variable("x", 0, 10);
  UOp a = x + 3, b = x + 3;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.node(), b.node());
  EXPECT_EQ(a.id(), b.id());
  EXPECT_NE((x + 4).node(), a.node());
  EXPECT_EQ(UOp::variable("x", 0, 10), x);
  EXPECT_NE(UOp::variable("x", 0, 11), x);
  // dtype and tag are part of the structure
  EXPECT_NE(UOp::cint(dtypes::int32, 1), UOp::cint(dtypes::int64, 1));
  EXPECT_NE(a.replace_tag(1), a);
}

TEST(UOp, FloatConstantsCompareByBits) {
  UOp pz = UOp::cfloat(dtypes::float32, 0.0), nz = UOp::cfloat(dtypes::float32, -0.0);
  EXPECT_NE(pz, nz);
  EXPECT_NE(pz.key(), nz.key());
  UOp n1 = UOp::cfloat(dtypes::float32, std::nan("")), n2 = UOp::cfloat(dtypes::float32, -std::nan("1"));
  EXPECT_EQ(n1, n2) << "every NaN is canonicalised, so NaN constants intern";
  EXPECT_EQ(UOp::cfloat(dtypes::float32, INFINITY), UOp::cfloat(dtypes::float32, INFINITY));
}

TEST(UOp, ArgVariants) {
  UOp a = UOp::make(Ops::CUSTOM, dtypes::void_, {}, Arg{std::string("x")});
  UOp b = UOp::make(Ops::CUSTOM, dtypes::void_, {}, Arg{std::string("x")});
  EXPECT_EQ(a, b);
  UOp p = UOp::make(Ops::PERMUTE, dtypes::float32, {UOp::cfloat(dtypes::float32, 1)}, Arg{std::vector<int64_t>{1, 0}});
  EXPECT_EQ(p.arg_ints(), (std::vector<int64_t>{1, 0}));
  EXPECT_THROW(p.arg_int(), Error);
}

TEST(UOp, ChildOpMask) {
  UOp x = UOp::variable("x", 0, 10);
  UOp e = (x * 2) + 1;
  EXPECT_TRUE(e.src_ops().has(Ops::MUL));
  EXPECT_TRUE(e.src_ops().has(Ops::CONST));
  EXPECT_FALSE(e.src_ops().has(Ops::DEFINE_VAR));
}

TEST(UOp, IdsAreNeverReused) {
  uint64_t first;
  {
    UOp t = UOp::variable("ids_unique_var", 0, 1);
    first = t.id();
  }
  UOp again = UOp::variable("ids_unique_var", 0, 1);
  EXPECT_NE(again.id(), first);
}

TEST(UOp, TableShrinksWhenHandlesDie) {
  size_t before = intern_table_size();
  {
    UOp v = UOp::variable("shrink", 0, 1000);
    UOp acc = v;
    for (int i = 0; i < 10000; ++i) acc = acc + i;
    EXPECT_GE(intern_table_size(), before + 10000);
  }
  EXPECT_EQ(intern_table_size(), before);
}

TEST(UOp, MillionDeepChain) {
  size_t before = intern_table_size();
  {
    UOp acc = UOp::variable("deep", 0, 1);
    UOp one = UOp::cint(dtypes::index, 1);
    for (int i = 0; i < 1000000; ++i) acc = UOp::alu(Ops::ADD, {acc, one});
    auto order = toposort_nodes(acc);
    EXPECT_EQ(order.size(), 1000002u);
    EXPECT_EQ(order.back(), acc.node());
    EXPECT_EQ(order.front()->op, Ops::DEFINE_VAR);
    Key128 k = acc.key();  // iterative too
    EXPECT_NE(k, Key128{});
  }  // releasing the chain must not recurse either
  EXPECT_EQ(intern_table_size(), before);
}

TEST(UOp, ConcurrentCreationIsConsistent) {
  constexpr int kThreads = 4, kN = 16384;  // odd multipliers permute a power of two
  // made[t][j]: thread t's handle for structure j; every thread builds all j, in its own order
  std::vector<std::vector<UOp>> made(kThreads, std::vector<UOp>(kN));
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      UOp x = UOp::variable("conc", 0, 100);
      for (int i = 0; i < kN; ++i) {
        int j = static_cast<int>((static_cast<int64_t>(i) * (2 * t + 1) * 7919) % kN);
        made[t][j] = (x + j) * (j % 13 + 2);
        if (i % 3 == 0) UOp tmp = x * (j + 100000);  // created and dropped while others create
      }
    });
  for (auto& th : ts) th.join();
  for (int t = 1; t < kThreads; ++t)
    for (int j = 0; j < kN; ++j) ASSERT_EQ(made[t][j], made[0][j]) << "thread " << t << " structure " << j;
  UOp x = UOp::variable("conc", 0, 100);
  EXPECT_EQ(made[2][7], (x + 7) * 9);
}

TEST(UOp, KeyIsStructuralAndStable) {
  // The fingerprint depends only on structure: rebuilding gives the same key, and the value is
  // pinned so a change to the hashing (which would invalidate on-disk caches) is noticed.
  auto build = [] { return UOp::variable("k", 0, 7) * 4 + UOp::cint(dtypes::int32, 3).cast(dtypes::index); };
  Key128 k1 = build().key();
  Key128 k2 = build().key();
  EXPECT_EQ(k1, k2);
  EXPECT_NE(k1, (UOp::variable("k", 0, 7) * 5).key());
  EXPECT_EQ(k1.hex().size(), 32u);
  EXPECT_EQ(k1.hex(), "3f40f121686102eaef21ab5d507f2eec");
}

TEST(UOp, ProcessKeyTellsEveryFieldApart) {
  // The schedule cache keys graphs by process_key without building them: equal fields over equal
  // source keys must give one key, and a change in any field, or in the sources' order, another
  // (in both halves, so neither is a copy of the other).
  const Key128 s1{1, 2}, s2{3, 4};
  const std::vector<Key128> srcs{s1, s2}, swapped{s2, s1}, one{s1};
  const Arg arg{std::vector<int64_t>{4, 4}};
  const Key128 base = process_key(Ops::RESHAPE, dtypes::float32, 0, arg, srcs);
  EXPECT_EQ(base, process_key(Ops::RESHAPE, dtypes::float32, 0, Arg{std::vector<int64_t>{4, 4}}, srcs));
  const Key128 others[] = {
      process_key(Ops::EXPAND, dtypes::float32, 0, arg, srcs),
      process_key(Ops::RESHAPE, dtypes::float16, 0, arg, srcs),
      process_key(Ops::RESHAPE, dtypes::float32, 1, arg, srcs),
      process_key(Ops::RESHAPE, dtypes::float32, 0, Arg{std::vector<int64_t>{4, 5}}, srcs),
      process_key(Ops::RESHAPE, dtypes::float32, 0, Arg{std::vector<int64_t>{16}}, srcs),
      process_key(Ops::RESHAPE, dtypes::float32, 0, Arg{int64_t{4}}, srcs),
      process_key(Ops::RESHAPE, dtypes::float32, 0, arg, swapped),
      process_key(Ops::RESHAPE, dtypes::float32, 0, arg, one),
      process_key(Ops::RESHAPE, dtypes::float32, 0, arg, std::vector<Key128>{s1, Key128{3, 5}}),
  };
  for (size_t i = 0; i < std::size(others); ++i) {
    EXPECT_NE(others[i].hi, base.hi) << "variation " << i;
    EXPECT_NE(others[i].lo, base.lo) << "variation " << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(others[i], others[j]) << "variations " << j << " and " << i;
  }
  // a node's own fields, read from the node
  UOp x = UOp::variable("pk", 0, 7) + 1;
  std::vector<Key128> xs{x.src(0).key(), x.src(1).key()};
  EXPECT_EQ(process_key(x.node(), xs), process_key(x.op(), x.dtype(), x.tag(), x.arg(), xs));
}

TEST(UOp, Substitute) {
  UOp x = UOp::variable("x", 0, 10), y = UOp::variable("y", 0, 10);
  UOp e = (x + 1) * x;
  EXPECT_EQ(substitute(e, {{x, y}}), (y + 1) * y);
}

TEST(UOp, SubstituteAcrossNodeAges) {
  // substitute stops at nodes older than every key (they cannot contain one): the old parts of a
  // graph are kept as they are, the newer parts that reach a key are rebuilt, however they mix
  UOp a = UOp::variable("sa", 0, 10), b = UOp::variable("sb", 0, 10);
  UOp old_part = a * 3 + b;  // made before the key
  UOp key = UOp::variable("sk", 0, 10), to = UOp::variable("st", 0, 10);
  UOp e = (old_part + key * 2) * (old_part + 7) + key;
  EXPECT_EQ(substitute(e, {{key, to}}), (old_part + to * 2) * (old_part + 7) + to);
  EXPECT_EQ(substitute(old_part, {{key, to}}), old_part);             // a root older than the key
  EXPECT_EQ(substitute(e, {{key, to}, {a, b}}), (b * 3 + b + to * 2) * (b * 3 + b + 7) + to);  // an old key too
  UOp newer = b * 5;  // made after the key, without it
  EXPECT_EQ(substitute(newer + key, {{key, to}}), newer + to);
  EXPECT_EQ(substitute(e, {}), e);
}

TEST(UOp, TreeSizeCountsEveryUseAndSaturates) {
  UOp x = UOp::variable("ts", 0, 10);
  EXPECT_EQ(tree_size(x), 1u);
  UOp sq = x * x;                 // x is used twice: 3 tree nodes, 2 DAG nodes
  EXPECT_EQ(tree_size(sq), 3u);
  EXPECT_EQ(tree_size(sq + sq), 7u);
  // doubling 40 times describes a tree of 2^41 - 1 nodes in a DAG of 41: the size saturates
  UOp big = x;
  for (int i = 0; i < 40; ++i) big = big + big;
  EXPECT_EQ(tree_size(big), kTreeSizeSaturated);
  // a million-deep chain is measured without recursion
  UOp chain = x;
  for (int i = 0; i < 1000000; ++i) chain = UOp::alu(Ops::ADD, {chain, x});
  EXPECT_EQ(tree_size(chain), 2000001u);
}

TEST(Verify, AcceptsGoodGraphs) {
  UOp x = UOp::variable("x", 0, 10);
  EXPECT_NO_THROW(verify((x * 4 + 1).lt(x)));
  UOp buf = UOp::make(Ops::PARAM, dtypes::float32.ptr(16), {}, Arg{int64_t{0}});
  UOp idx = UOp::make(Ops::INDEX, dtypes::float32.ptr(16), {buf, x});
  UOp ld = UOp::make(Ops::LOAD, dtypes::float32, {idx});
  UOp st = UOp::make(Ops::STORE, dtypes::void_, {idx, ld + ld});
  EXPECT_NO_THROW(verify(UOp::sink({st})));
}

TEST(Verify, RejectsBadGraphs) {
  UOp f = UOp::cfloat(dtypes::float32, 1.0), i = UOp::cint(dtypes::int32, 1);
  EXPECT_NE(verify_node(UOp::make(Ops::ADD, dtypes::float32, {f, i})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::EXP2, dtypes::int32, {i})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::CMPLT, dtypes::int32, {i, i})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::WHERE, dtypes::int32, {i, i, i})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::CONST, dtypes::float32, {}, Arg{int64_t{1}})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::IDIV, dtypes::float32, {f, f})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::BITCAST, dtypes::int16, {i})), "");
  EXPECT_NE(verify_node(UOp::make(Ops::DEFINE_VAR, dtypes::index, {}, Arg{NamedInts{"v", {5, 1}}})), "");
  try {
    verify(UOp::make(Ops::ADD, dtypes::float32, {f, i}) * f, "test pass");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_NE(std::string(e.what()).find("after 'test pass'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ADD float32"), std::string::npos) << e.what();
  }
}

TEST(Ops, GroupsAndNames) {
  EXPECT_STREQ(op_name(Ops::ADD), "ADD");
  EXPECT_STREQ(op_name(Ops::REDUCE_AXIS), "REDUCE_AXIS");
  EXPECT_TRUE(groups::Commutative.has(Ops::ADD));
  EXPECT_FALSE(groups::Commutative.has(Ops::CMPLT));
  EXPECT_TRUE(groups::Movement.has(Ops::PAD));
  EXPECT_TRUE(groups::ALU.has(Ops::WHERE));
  EXPECT_EQ(groups::All.size(), kNumOps);
}
