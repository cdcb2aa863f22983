// tests/dist/dist_test.cpp - kiln::dist under mpirun (ctest: -np 2, -np 3 --oversubscribe) and
// alone (a world of one rank). Every rank runs every test; each compares with a reference it
// computes itself from what every rank contributes (rank r's value at i is a small integer made
// from i and r, so float16/bfloat16/float32 sums are exact and the reference is bitwise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/dist.hpp"
#include "kiln/kiln.hpp"
#include "support/half.hpp"

using namespace kiln;
using dist::ReduceOp;

namespace {

// The value rank r holds at element i: an integer in [-5, 5] (so every sum of a few ranks is exact
// in every dtype, and every dtype holds it: unsigned and bool take it mod 2 / abs).
int64_t val(int64_t i, int r) { return (i * 7 + r * 3 + (i >> 5)) % 11 - 5; }

// Element i of rank r's tensor as `dt` bytes, and the value a reduction over all ranks gives.
double as_dtype(double v, DType dt) {
  if (dt.is_bool()) return v != 0;
  if (dt.is_unsigned()) return v < 0 ? -v : v;
  return v;
}

void put(std::vector<uint8_t>& bytes, int64_t i, double v, DType dt) {
  uint8_t* p = bytes.data() + i * dt.itemsize();
  auto store = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (dt.scalar()) {
    case Scalar::bool_: store(static_cast<uint8_t>(v != 0)); break;
    case Scalar::int8: store(static_cast<int8_t>(v)); break;
    case Scalar::int16: store(static_cast<int16_t>(v)); break;
    case Scalar::int32: store(static_cast<int32_t>(v)); break;
    case Scalar::int64: store(static_cast<int64_t>(v)); break;
    case Scalar::uint8: store(static_cast<uint8_t>(v)); break;
    case Scalar::uint16: store(static_cast<uint16_t>(v)); break;
    case Scalar::uint32: store(static_cast<uint32_t>(v)); break;
    case Scalar::uint64: store(static_cast<uint64_t>(v)); break;
    case Scalar::float16: store(float_to_half(static_cast<float>(v))); break;
    case Scalar::bfloat16: store(float_to_bf16(static_cast<float>(v))); break;
    case Scalar::float32: store(static_cast<float>(v)); break;
    case Scalar::float64: store(v); break;
    default: FAIL() << "no such test dtype";
  }
}

Tensor rank_tensor(int64_t n, DType dt, int r) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n * dt.itemsize()));
  for (int64_t i = 0; i < n; ++i) put(bytes, i, as_dtype(static_cast<double>(val(i, r)), dt), dt);
  return Tensor::from_bytes(bytes.data(), bytes.size(), dt, {n});
}

// The expected bytes of `op` over every rank, computed as the library promises: exact integer
// sums, Mean = the sum divided in the dtype (halves through float32).
std::vector<uint8_t> expected(int64_t n, DType dt, ReduceOp op, int ranks) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n * dt.itemsize()));
  for (int64_t i = 0; i < n; ++i) {
    double acc = as_dtype(static_cast<double>(val(i, 0)), dt);
    for (int r = 1; r < ranks; ++r) {
      double v = as_dtype(static_cast<double>(val(i, r)), dt);
      if (dt.is_bool()) acc = op == ReduceOp::Min ? (acc != 0 && v != 0) : (acc != 0 || v != 0);
      else if (op == ReduceOp::Max) acc = std::max(acc, v);
      else if (op == ReduceOp::Min) acc = std::min(acc, v);
      else acc += v;
    }
    if (op == ReduceOp::Mean) {
      if (dt == dtypes::float64) acc = acc / ranks;
      else acc = static_cast<double>(static_cast<float>(acc) / static_cast<float>(ranks));
      if (dt == dtypes::float16) acc = half_to_float(float_to_half(static_cast<float>(acc)));
      if (dt == dtypes::bfloat16) acc = bf16_to_float(float_to_bf16(static_cast<float>(acc)));
    }
    put(bytes, i, acc, dt);
  }
  return bytes;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  std::vector<uint8_t> b(static_cast<size_t>(t.numel() * t.dtype().itemsize()));
  t.to_bytes(b.data(), b.size());
  return b;
}

const std::vector<DType> kDtypes = {dtypes::bool_,  dtypes::int8,   dtypes::int16,   dtypes::int32,   dtypes::int64,
                                    dtypes::uint8,  dtypes::uint16, dtypes::uint32,  dtypes::uint64,  dtypes::float16,
                                    dtypes::bfloat16, dtypes::float32, dtypes::float64};
const char* name(ReduceOp op) { return op == ReduceOp::Sum ? "Sum" : op == ReduceOp::Max ? "Max" : op == ReduceOp::Min ? "Min" : "Mean"; }

// The world every test expects: mpirun's size, or 1 without it.
int launched_size() {
  const char* s = std::getenv("OMPI_COMM_WORLD_SIZE");
  return s ? std::atoi(s) : 1;
}

TEST(DistWorld, RankAndSize) {
  EXPECT_TRUE(dist::initialized());
  EXPECT_EQ(dist::world_size(), launched_size());
  EXPECT_GE(dist::rank(), 0);
  EXPECT_LT(dist::rank(), dist::world_size());
  dist::init();  // idempotent
  EXPECT_EQ(dist::world_size(), launched_size());
  EXPECT_NE(dist::describe().find("rank " + std::to_string(dist::rank())), std::string::npos) << dist::describe();
  dist::barrier();
}

// 1, 7 and 1e6 elements of every dtype for every op (an integer or bool Mean is an error, the same
// on every rank, and leaves the world usable); 3e7 elements only for float32 Sum (the CI budget:
// 120 MB per rank per call).
TEST(DistAllReduce, EveryDtypeOpAndSize) {
  int ws = dist::world_size(), me = dist::rank();
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000000}})
    for (DType dt : kDtypes)
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean}) {
        SCOPED_TRACE(std::string(name(op)) + " " + dt.name() + " n=" + std::to_string(n));
        Tensor x = rank_tensor(n, dt, me);
        if (op == ReduceOp::Mean && !dt.is_float()) {
          try {
            dist::all_reduce(x, op);
            ADD_FAILURE() << "expected an error";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
            EXPECT_NE(std::string(e.what()).find("cast to a float dtype"), std::string::npos) << e.what();
          }
          continue;
        }
        Tensor y = dist::all_reduce(x, op);
        ASSERT_EQ(y.shape(), Shape{n});
        ASSERT_EQ(y.dtype(), dt);
        std::vector<uint8_t> got = bytes_of(y), want = expected(n, dt, op, ws);
        ASSERT_EQ(got.size(), want.size());
        if (got != want) {
          size_t at = 0;
          while (got[at] == want[at]) ++at;
          FAIL() << "first differing byte " << at << " (element " << at / static_cast<size_t>(dt.itemsize()) << ")";
        }
      }
}

TEST(DistAllReduce, ThirtyMillionFloat32Sum) {
  int ws = dist::world_size(), me = dist::rank();
  const int64_t n = 30000000;
  Tensor x = (Tensor::arange(0, static_cast<double>(n), 1, dtypes::int32).mod(Tensor::full({1}, 1000, dtypes::int32)) + me).cast(dtypes::float32);
  std::vector<float> got = dist::all_reduce(x, ReduceOp::Sum).to_vector<float>();
  ASSERT_EQ(static_cast<int64_t>(got.size()), n);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = static_cast<float>(ws * (i % 1000) + ws * (ws - 1) / 2);
    bad += got[static_cast<size_t>(i)] != want;
  }
  EXPECT_EQ(bad, 0);
}

// Non-integer float32 data: Sum within rounding of a double reference, and the same bits on
// every rank (the weights of a data-parallel model must not drift apart).
TEST(DistAllReduce, SameBitsOnEveryRank) {
  int ws = dist::world_size(), me = dist::rank();
  const int64_t n = 100003;
  std::vector<float> mine(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) mine[static_cast<size_t>(i)] = std::sin(0.001f * static_cast<float>(i) * static_cast<float>(me + 1)) / 3;
  std::vector<float> got = dist::all_reduce(Tensor::from_vector<float>(mine, {n}), ReduceOp::Sum).to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) {
    double want = 0;
    for (int r = 0; r < ws; ++r) want += std::sin(0.001f * static_cast<float>(i) * static_cast<float>(r + 1)) / 3;
    EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-5) << i;
  }
  Tensor from0 = dist::broadcast(Tensor::from_vector<float>(got, {n}), 0);
  EXPECT_EQ(from0.to_vector<float>(), got) << "rank " << me << "'s sum differs from rank 0's";
}

TEST(DistAllReduce, ShapeAndLazyInput) {
  int ws = dist::world_size();
  Tensor x = Tensor::ones({2, 3, 4}) * 2;  // lazy: realized by the collective
  Tensor y = dist::all_reduce(x, ReduceOp::Mean);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(24, 2.0f));
  EXPECT_EQ(dist::all_reduce(x.sum(), ReduceOp::Sum).item<float>(), 48.0f * static_cast<float>(ws));
  Tensor empty = Tensor::zeros({0, 5});
  EXPECT_EQ(dist::all_reduce(empty).shape(), (Shape{0, 5}));
}

TEST(DistBroadcast, FromEveryRoot) {
  int ws = dist::world_size(), me = dist::rank();
  for (int root = 0; root < ws; ++root)
    for (DType dt : {dtypes::float32, dtypes::bfloat16, dtypes::int64, dtypes::bool_, dtypes::uint8}) {
      SCOPED_TRACE("root " + std::to_string(root) + " " + dt.name());
      const int64_t n = 1001;
      Tensor mine = rank_tensor(n, dt, me).reshape({7, 11, 13});
      Tensor got = dist::broadcast(mine, root);
      EXPECT_EQ(got.shape(), (Shape{7, 11, 13}));
      EXPECT_EQ(bytes_of(got), bytes_of(rank_tensor(n, dt, root)));
    }
  try {
    dist::broadcast(Tensor::ones({2}), ws);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("root " + std::to_string(ws) + " is not a rank"), std::string::npos) << e.what();
  }
}

// Ranks that disagree get an error naming both sides, and nothing is exchanged: the world still
// works afterwards.
TEST(DistHeader, MismatchedShapeDtypeOpNamed) {
  int ws = dist::world_size(), me = dist::rank();
  if (ws < 2) GTEST_SKIP() << "needs two ranks (ctest: test_dist_np2, test_dist_np3)";
  auto expect_mismatch = [&](const Tensor& t, ReduceOp op, const std::string& mine_text, const std::string& other_text) {
    try {
      dist::all_reduce(t, op);
      ADD_FAILURE() << "expected an error on rank " << me;
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(m.find("the ranks disagree"), std::string::npos) << m;
      EXPECT_NE(m.find(mine_text), std::string::npos) << m;
      EXPECT_NE(m.find(other_text), std::string::npos) << m;
      EXPECT_NE(m.find("No data was exchanged"), std::string::npos) << m;
    }
  };
  // rank 0: (3, 4); the others: (4, 3)
  expect_mismatch(me == 0 ? Tensor::ones({3, 4}) : Tensor::ones({4, 3}), ReduceOp::Sum, "float32 (3, 4)", "float32 (4, 3)");
  // dtypes
  expect_mismatch(Tensor::ones({5}, me == 0 ? dtypes::float32 : dtypes::float16), ReduceOp::Sum, "all_reduce(Sum) of float32 (5,)",
                  "all_reduce(Sum) of float16 (5,)");
  // ops
  expect_mismatch(Tensor::ones({5}), me == 0 ? ReduceOp::Sum : ReduceOp::Max, "all_reduce(Sum)", "all_reduce(Max)");
  // the world still works
  EXPECT_EQ(dist::all_reduce(Tensor::ones({3})).to_vector<float>(), std::vector<float>(3, static_cast<float>(ws)));
}

// all_reduce_grads: each .grad() becomes the mean over the ranks, one message per dtype.
TEST(DistGrads, MeanOfEveryGradient) {
  int ws = dist::world_size(), me = dist::rank();
  Tensor w = Tensor::ones({3, 4}).contiguous().realize().requires_grad_();
  Tensor b = Tensor::zeros({4}).contiguous().realize().requires_grad_();
  Tensor h = Tensor::full({2}, 1.0, dtypes::bfloat16).contiguous().realize().requires_grad_();
  Tensor unused = Tensor::ones({2}).contiguous().realize().requires_grad_();  // no gradient: skipped
  Tensor x = Tensor::full({2, 3}, static_cast<double>(me + 1));
  Tensor loss = (x.matmul(w) + b).sum() * static_cast<double>(me + 1) + (h * static_cast<double>(me + 1)).sum().cast(dtypes::float32);
  loss.backward();
  dist::all_reduce_grads({w, b, unused, h});
  // d/dw = (me+1) * column sums of x = 2 (me+1)^2; d/db = 2 (me+1); d/dh = me+1
  double w_mean = 0, b_mean = 0, h_mean = 0;
  for (int r = 0; r < ws; ++r) {
    w_mean += 2.0 * (r + 1) * (r + 1) / ws;
    b_mean += 2.0 * (r + 1) / ws;
    h_mean += static_cast<double>(r + 1) / ws;
  }
  for (float v : w.grad()->to_vector<float>()) EXPECT_FLOAT_EQ(v, static_cast<float>(w_mean));
  for (float v : b.grad()->to_vector<float>()) EXPECT_FLOAT_EQ(v, static_cast<float>(b_mean));
  for (float v : h.grad()->cast(dtypes::float32).to_vector<float>()) EXPECT_NEAR(v, h_mean, 0.01);
  EXPECT_FALSE(unused.grad().has_value());
}

// A device with memory of its own (PoCL's OpenCL device where present): the tensor comes to the
// host in 4 MiB pieces on a helper thread while the piece before is all-reduced; the result is on
// that device.
TEST(DistDevices, OwnMemoryInOverlappedPieces) {
  std::string dev;
  for (const std::string& d : kiln::devices())
    if (d.rfind("opencl:", 0) == 0) dev = d;
  if (dev.empty()) GTEST_SKIP() << "no OpenCL device (KILN_BACKENDS with opencl.toml, PoCL)";
  int ws = dist::world_size(), me = dist::rank();
  for (int64_t n : {int64_t{7}, int64_t{1048576}, int64_t{3000001}}) {  // one piece, exactly one, three (uneven)
    SCOPED_TRACE(n);
    Tensor x = (Tensor::arange(0, static_cast<double>(n), 1, dtypes::int32, dev).mod(Tensor::full({1}, 97, dtypes::int32, dev)) + me)
                   .cast(dtypes::float32);
    Tensor y = dist::all_reduce(x, ReduceOp::Sum);
    EXPECT_EQ(y.device(), dev);
    std::vector<float> got = y.to_vector<float>();
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += got[static_cast<size_t>(i)] != static_cast<float>(ws * (i % 97) + ws * (ws - 1) / 2);
    EXPECT_EQ(bad, 0);
  }
  Tensor h = Tensor::full({2500000}, 1.5, dtypes::float16, dev);  // 5 MB: two pieces
  std::vector<uint8_t> mean = bytes_of(dist::all_reduce(h, ReduceOp::Mean));
  EXPECT_EQ(mean, bytes_of(Tensor::full({2500000}, 1.5, dtypes::float16)));
}

// A gradient may be another tensor's buffer (d(w*x)/dw is x): the mean replaces the gradient and
// never writes into that buffer.
TEST(DistGrads, GradientSharingABufferLeavesItAlone) {
  int ws = dist::world_size(), me = dist::rank();
  Tensor x = Tensor::full({5}, static_cast<double>(me + 1)).contiguous().realize();
  Tensor w = Tensor::ones({5}).contiguous().realize().requires_grad_();
  (w * x).sum().backward();
  dist::all_reduce_grads({w});
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(5, static_cast<float>(me + 1)));
  EXPECT_EQ(w.grad()->to_vector<float>(), std::vector<float>(5, static_cast<float>(ws + 1) / 2));
}

// A tensor on several local devices: each part is reduced over the ranks; placement and shard
// axis are kept (the ranks' all-reduce composes with a rank's own devices).
TEST(DistLocalDevices, ShardedAndReplicatedCompose) {
  std::vector<std::string> devs;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) devs.push_back(d);
  if (devs.size() < 2) GTEST_SKIP() << "needs two cpu devices (KILN_CONFIG=tests/e2e/cpu_two_devices.toml)";
  devs.resize(2);
  int ws = dist::world_size(), me = dist::rank();
  Tensor x = Tensor::arange(0, 8).reshape({4, 2}) + me;
  Tensor sharded = dist::all_reduce(x.shard(devs, 0), ReduceOp::Sum);
  EXPECT_EQ(sharded.placement(), devs);
  EXPECT_EQ(sharded.shard_axis(), std::optional<int>(0));
  std::vector<float> want(8);
  for (int i = 0; i < 8; ++i) want[static_cast<size_t>(i)] = static_cast<float>(ws * i + ws * (ws - 1) / 2);
  EXPECT_EQ(sharded.to(devs[0]).to_vector<float>(), want);
  Tensor replicated = dist::all_reduce(x.shard(devs), ReduceOp::Sum);
  EXPECT_EQ(replicated.placement(), devs);
  EXPECT_EQ(replicated.to(devs[1]).to_vector<float>(), want);
}

// With the MPI collective installed, a reduction over the shard axis spans every rank's devices.
TEST(DistLocalDevices, ShardingSpansRanks) {
  std::vector<std::string> devs;
  for (const std::string& d : kiln::devices())
    if (d.rfind("cpu:", 0) == 0) devs.push_back(d);
  if (devs.size() < 2) GTEST_SKIP() << "needs two cpu devices (KILN_CONFIG=tests/e2e/cpu_two_devices.toml)";
  devs.resize(2);
  int ws = dist::world_size(), me = dist::rank();
  Tensor x = (Tensor::arange(0, 8).reshape({4, 2}) + me).shard(devs, 0);
  dist::set_sharding_spans_ranks(true);
  EXPECT_TRUE(dist::sharding_spans_ranks());
  Tensor sum = x.sum({0}), mx = x.max({0});
  dist::set_sharding_spans_ranks(false);
  EXPECT_FALSE(dist::sharding_spans_ranks());
  for (int j = 0; j < 2; ++j) {
    EXPECT_EQ(sum.to(devs[0]).to_vector<float>()[static_cast<size_t>(j)], static_cast<float>(ws * (12 + 4 * j) + 2 * ws * (ws - 1))) << j;
    EXPECT_EQ(mx.to(devs[1]).to_vector<float>()[static_cast<size_t>(j)], static_cast<float>(6 + j + ws - 1)) << j;
  }
  // off again: this rank's devices only
  EXPECT_EQ(x.sum({0}).to(devs[0]).to_vector<float>()[0], static_cast<float>(12 + 4 * me));
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  kiln::dist::init();
  int rc = RUN_ALL_TESTS();
  // every rank's verdict: fail on every rank when one failed, so mpirun's exit code tells
  Tensor failed = kiln::dist::all_reduce(Tensor::full({1}, rc != 0 ? 1 : 0, dtypes::int32), ReduceOp::Max);
  int any = failed.item<int32_t>();
  kiln::dist::finalize();
  return any;
}
