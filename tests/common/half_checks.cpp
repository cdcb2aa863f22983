// tests/common/half_checks.cpp - float16 and bfloat16 on one device, through the native
// conversions where the device lists them (kiln_target.storage_dtypes: float16 on the cpu with
// F16C, on OpenCL without cl_khr_fp16) and through the integer emulation (the same device with
// that cap cleared): every bit pattern converts as the reference conversion does
// (support/half.hpp), and a fused chain of half ops gives the unfused ops' bits.
#include "half_checks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "codegen/target.hpp"
#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "support/half.hpp"

namespace kiln::testing {

namespace {

// The ways `device` computes half types: its own target (native conversions where it lists
// them) and, where it does, the same target without them (integer emulation).
struct Variant {
  std::string name;
  std::optional<Target> target;  // nullopt: the device's own
};
std::vector<Variant> variants(const std::string& device) {
  const Target& own = runtime::open_device(device)->target();
  std::vector<Variant> out{{own.storage_dtypes ? "native" : "emulated (the device stores no half type natively)", std::nullopt}};
  if (own.storage_dtypes) {
    Target emulated = own;
    emulated.storage_dtypes = 0;
    out.push_back({"emulated", emulated});
  }
  return out;
}

template <typename F>
void for_each_variant(const std::string& device, F&& body) {
  for (const Variant& v : variants(device)) {
    SCOPED_TRACE(v.name);
    runtime::set_target_override(v.target ? &*v.target : nullptr);
    body();
    runtime::set_target_override(nullptr);
  }
}

std::vector<uint16_t> every_pattern() {
  std::vector<uint16_t> p(65536);
  for (uint32_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint16_t>(i);
  return p;
}

// float32 inputs whose rounding to 16 bits covers every case: each 16-bit prefix with low bits
// that are exact, below, at and above the halfway points of float16 (bit 12) and bfloat16 (bit 15),
// ties to even and odd results.
std::vector<float> rounding_cases() {
  static const uint32_t lows[] = {0x0000, 0x0fff, 0x1000, 0x1001, 0x3000, 0x7fff, 0x8000, 0x8001, 0xffff};
  std::vector<float> out;
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : lows) out.push_back(f32_from_bits(hi << 16 | lo));
  return out;
}

bool is_nan16(uint16_t h, bool bf) { return bf ? (h & 0x7fff) > 0x7f80 : (h & 0x7fff) > 0x7c00; }

// Bits equal, or both NaN of the same sign (payloads may differ: F16C keeps the top payload bits).
void expect_same_half(const std::vector<uint16_t>& got, const std::vector<float>& in, bool bf) {
  ASSERT_EQ(got.size(), in.size());
  size_t wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    uint16_t want = bf ? float_to_bf16(in[i]) : float_to_half(in[i]);
    bool same = got[i] == want || (is_nan16(got[i], bf) && is_nan16(want, bf) && (got[i] >> 15) == (want >> 15));
    if (!same && wrong++ < 5)
      ADD_FAILURE() << std::hex << "float32 bits 0x" << f32_bits(in[i]) << " -> 0x" << got[i] << ", want 0x" << want;
  }
  EXPECT_EQ(wrong, 0u);
}

void expect_same_float(const std::vector<float>& got, const std::vector<uint16_t>& in, bool bf) {
  ASSERT_EQ(got.size(), in.size());
  size_t wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    float want = bf ? bf16_to_float(in[i]) : half_to_float(in[i]);
    bool same = f32_bits(got[i]) == f32_bits(want) || (std::isnan(got[i]) && std::isnan(want) && std::signbit(got[i]) == std::signbit(want));
    if (!same && wrong++ < 5)
      ADD_FAILURE() << std::hex << "16-bit 0x" << in[i] << " -> float32 bits 0x" << f32_bits(got[i]) << ", want 0x" << f32_bits(want);
  }
  EXPECT_EQ(wrong, 0u);
}

}  // namespace

void check_half_widening(const std::string& device) {
  const std::vector<uint16_t> p = every_pattern();
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      Tensor bits = Tensor::from_vector<uint16_t>(p, {65536}, device);
      expect_same_float(bits.bitcast(d).cast(dtypes::float32).to_vector<float>(), p, d == dtypes::bfloat16);
    }
  });
}

void check_half_rounding(const std::string& device) {
  const std::vector<float> in = rounding_cases();
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      Tensor x = Tensor::from_vector<float>(in, {static_cast<int64_t>(in.size())}, device);
      expect_same_half(x.cast(d).bitcast(dtypes::uint16).to_vector<uint16_t>(), in, d == dtypes::bfloat16);
      // rounded by the store of the cast's own kernel (OpenCL without cl_khr_fp16: vstore_half_rte
      // into the buffer, where the bit cast above goes through a private half)
      SCOPED_TRACE("stored");
      expect_same_half(x.cast(d).realize().bitcast(dtypes::uint16).to_vector<uint16_t>(), in, d == dtypes::bfloat16);
    }
  });
}

// Every op of a fused kernel rounds to the half type as storing it would: the chain in one kernel
// equals the ops realized one by one, bit for bit (overflow to inf, subnormals, and a product that
// float32 would keep but float16 cannot: 300 * 300 = inf in float16).
void check_half_fused_chain(const std::string& device) {
  std::vector<float> host;
  for (int i = 0; i < 4099; ++i) host.push_back(static_cast<float>((i * 37 % 1201) - 600) * (i % 7 == 0 ? 0.5f : 0.013f));
  host[5] = 300, host[6] = 1e-6f, host[7] = -65504;
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      const int64_t n = static_cast<int64_t>(host.size());
      Tensor a = Tensor::from_vector<float>(host, {n}, device).cast(d).realize();
      Tensor b = a.flip({0}).contiguous().realize();
      auto chain = [&](bool realize_each) {
        auto step = [&](Tensor t) { return realize_each ? t.realize() : t; };
        Tensor t = step(a * b);
        t = step(t + 1.0);
        t = step(t * a);
        t = step(t.maximum(b) - a);
        t = step(t.abs().sqrt());
        return (t / 3.0).bitcast(dtypes::uint16).to_vector<uint16_t>();
      };
      EXPECT_EQ(chain(false), chain(true));
    }
  });
}

// A store of a value the half type holds exactly (a load, and WHERE, MAX, NEG of such values)
// writes its bits without rounding again (codegen/decompose.cpp, holds_own_value); constants
// mixed in (1/3, which neither type holds: the tensor's constant is rounded to the type) end as
// the rounded value. Every pattern, both types: the reference rounds the expected float.
void check_half_exact_stores(const std::string& device) {
  const std::vector<uint16_t> p = every_pattern();
  const int64_t n = static_cast<int64_t>(p.size());
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      const bool bf = d == dtypes::bfloat16;
      std::vector<float> x(p.size()), y(p.size());
      for (size_t i = 0; i < p.size(); ++i) {
        x[i] = bf ? bf16_to_float(p[i]) : half_to_float(p[i]);
        y[i] = bf ? bf16_to_float(p[p.size() - 1 - i]) : half_to_float(p[p.size() - 1 - i]);  // x reversed
      }
      Tensor tx = Tensor::from_vector<uint16_t>(p, {n}, device).bitcast(d).realize();
      Tensor ty = tx.flip({0}).contiguous().realize();
      auto bits = [](const Tensor& t) { return t.bitcast(dtypes::uint16).to_vector<uint16_t>(); };
      const float third = static_cast<float>(1.0 / 3.0);
      std::vector<float> relu(x.size()), neg(x.size()), mx(x.size()), sel(x.size()), selc(x.size()), mxc(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        relu[i] = (x[i] > 0 || std::isnan(x[i])) ? x[i] : 0.0f;
        neg[i] = -x[i];
        mx[i] = std::isnan(x[i]) ? x[i] : std::isnan(y[i]) ? y[i] : std::max(x[i], y[i]);  // MAX propagates NaN
        sel[i] = x[i] < y[i] ? x[i] : y[i];
        selc[i] = x[i] < 0 ? third : x[i];
        mxc[i] = std::isnan(x[i]) ? x[i] : std::max(x[i], third);
      }
      Tensor third_t = Tensor::full({n}, third, d, device);
      {
        SCOPED_TRACE("relu");
        expect_same_half(bits(tx.relu()), relu, bf);
      }
      {
        SCOPED_TRACE("neg");
        expect_same_half(bits(-tx), neg, bf);
      }
      {
        SCOPED_TRACE("maximum");
        expect_same_half(bits(tx.maximum(ty)), mx, bf);
      }
      {
        SCOPED_TRACE("where");
        expect_same_half(bits(Tensor::where(tx.lt(ty), tx, ty)), sel, bf);
      }
      {
        SCOPED_TRACE("where with a constant");
        expect_same_half(bits(Tensor::where(tx.lt(Tensor::full({n}, 0.0, d, device)), third_t, tx)), selc, bf);
      }
      {
        SCOPED_TRACE("maximum with a constant");
        expect_same_half(bits(tx.maximum(third_t)), mxc, bf);
      }
      {
        SCOPED_TRACE("full");
        expect_same_half(bits(Tensor::full({5}, third, d, device)), std::vector<float>(5, third), bf);
      }
    }
  });
}

// Found by the fuzzer with float16 stored natively: a stored cast also read by another op of the
// same kernel (the softmax's rounding compared with its input) made LLVM IR that did not parse.
void check_half_stored_cast_also_read(const std::string& device) {
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      Tensor x = Tensor::from_vector<double>({1.109375, 1.578125, -0.5, 0.25}, {4}, device).cast(d).realize();
      Tensor sm = x.softmax(0), less = x.lt(sm);
      std::vector<Tensor> both{sm, less};
      Tensor::realize_all(both);
      std::vector<float> alone = x.softmax(0).cast(dtypes::float32).to_vector<float>();
      std::vector<float> xs = x.cast(dtypes::float32).to_vector<float>();
      EXPECT_EQ(sm.cast(dtypes::float32).to_vector<float>(), alone);
      std::vector<bool> want;
      for (size_t i = 0; i < xs.size(); ++i) want.push_back(xs[i] < alone[i]);
      EXPECT_EQ(less.to_vector<bool>(), want);
    }
  });
}

// Found by the fuzzer (seed 2002, sharded, then alone): pad(x) + s stores s itself in the padded
// elements (0 + s folded away), the same scalar parameter node x + s also reads. With float16
// stored natively the padded store wrote s widened to float32: 4 bytes into a 2-byte element
// (0 read back, the next element or past the buffer overwritten).
void check_half_moved_scalar_also_added(const std::string& device) {
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      Tensor x = Tensor::from_vector<double>({1.34375, -0.5}, {2}, device).cast(d).realize();
      for (int64_t before : {0, 1, 2})
        for (int64_t after : {1, 2, 5}) {
          SCOPED_TRACE("pad " + std::to_string(before) + ", " + std::to_string(after));
          std::vector<float> want(size_t(before), 2.75f);
          want.insert(want.end(), {4.09375f, 2.25f});
          want.insert(want.end(), size_t(after), 2.75f);
          EXPECT_EQ((x.pad({{before, after}}) + 2.75).realize().cast(dtypes::float32).to_vector<float>(), want);
          // one element of x: the kernel has no loop left, each element its own store (realized
          // in the half type first: a cast fused into the kernel would store float32)
          std::vector<float> one(want.begin() + before, want.begin() + before + 1);
          one.insert(one.begin(), size_t(before), 2.75f);
          one.insert(one.end(), size_t(after), 2.75f);
          EXPECT_EQ((x.shrink({{0, 1}}).pad({{before, after}}) + 2.75).realize().cast(dtypes::float32).to_vector<float>(), one);
        }
    }
  });
}

// Found by the fuzzer with float16 stored natively: a view realized with the buffer it views
// (t1 and its reshape in one schedule) read 0.
void check_half_view_with_its_source(const std::string& device) {
  for_each_variant(device, [&] {
    std::vector<float> v{-1.609375f, 0.375f, 1.125f, -0.84375f, 0.15625f, 0.375f, -0.171875f};
    Tensor t0 = Tensor::from_vector<float>(v, {1, 7}, device).cast(dtypes::float16).realize();
    Tensor t1 = t0.shrink({{0, 1}, {1, 3}});
    Tensor t2 = t1.reshape({1, 1, 2});
    std::vector<Tensor> all{t0, t1, t2};
    Tensor::realize_all(all);
    EXPECT_EQ(t2.to_vector<float>(), (std::vector<float>{0.375f, 1.125f}));
    EXPECT_EQ(t1.to_vector<float>(), (std::vector<float>{0.375f, 1.125f}));
  });
}

// Vector loads of half values at every alignment: a half buffer read from offsets 0..8 (a
// shrink: the kernel reads x + k, so its vectors start anywhere), and a padded write. (The
// OpenCL spec asks vload_halfn for 2-byte alignment only; PoCL 3.1's declares 16-byte loads.)
void check_half_unaligned_vectors(const std::string& device) {
  const int64_t n = 4096 + 9, m = 4096;
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i % 61) * 0.5f - 15.0f;
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      Tensor x = Tensor::from_vector<float>(host, {n}, device).cast(d).realize();
      for (int64_t k = 0; k <= 8; ++k) {
        SCOPED_TRACE("offset " + std::to_string(k));
        Tensor y = x.shrink({{k, k + m}}) * 2.0 + 1.0;
        std::vector<float> got = y.cast(dtypes::float32).to_vector<float>();
        std::vector<float> padded = y.pad({{k, n - m - k}}).cast(dtypes::float32).to_vector<float>();
        size_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          const bool inside = i >= k && i < k + m;
          const float want = inside ? host[static_cast<size_t>(i)] * 2.0f + 1.0f : 0.0f;  // exact in both types
          if (inside && got[static_cast<size_t>(i - k)] != want) ++wrong;
          if (padded[static_cast<size_t>(i)] != want) ++wrong;
        }
        EXPECT_EQ(wrong, 0u);
      }
    }
  });
}

// A half matmul or convolution takes each product in float32 (exact) and rounds once at the end,
// as torch does: (1 + 2^-7)(1 + 2^-6) - 1 is 3*2^-7 + 2^-13 in bfloat16, representable, where
// rounding the first product to bfloat16 first gave 3*2^-7 (and cost a conversion per product);
// float16 likewise with (1 + 2^-10)(1 + 2^-9) - 1 = 3*2^-10 + 2^-19.
void check_half_products_round_once(const std::string& device) {
  struct Case {
    DType d;
    double e1, e2;  // the operands' small parts
  };
  for_each_variant(device, [&] {
    for (const Case& c : {Case{dtypes::bfloat16, 0x1p-7, 0x1p-6}, Case{dtypes::float16, 0x1p-10, 0x1p-9}}) {
      SCOPED_TRACE(c.d.name());
      const double want = (1 + c.e1) * (1 + c.e2) - 1;  // exact in double; representable in the dtype
      Tensor a = Tensor::from_vector<float>({static_cast<float>(1 + c.e1), -1.0f}, {1, 2}, device).cast(c.d);
      Tensor b = Tensor::from_vector<float>({static_cast<float>(1 + c.e2), 1.0f}, {2, 1}, device).cast(c.d);
      EXPECT_EQ(a.matmul(b).cast(dtypes::float32).to_vector<float>(), std::vector<float>{static_cast<float>(want)});
      // the same sum as a 1x1 convolution over two input channels, and its weight's gradient
      Tensor x = a.reshape({1, 2, 1, 1});
      Tensor w = b.reshape({1, 2, 1, 1});
      EXPECT_EQ(x.conv2d(w).cast(dtypes::float32).to_vector<float>(), std::vector<float>{static_cast<float>(want)});
      // and as einsum (two operands, and a third of ones: still one rounding)
      EXPECT_EQ(Tensor::einsum("ij,jk->ik", {a, b}).cast(dtypes::float32).to_vector<float>(), std::vector<float>{static_cast<float>(want)});
      Tensor ones = Tensor::full({2}, 1.0, c.d, device);
      EXPECT_EQ(Tensor::einsum("ij,jk,j->ik", {a, b, ones}).cast(dtypes::float32).to_vector<float>(), std::vector<float>{static_cast<float>(want)});
      EXPECT_EQ(Tensor::einsum("ij,jk->ik", {a, b}).dtype(), c.d);
    }
  });
}

// softmax, log_softmax, logsumexp and layernorm of a 16-bit float compute in float32 and round once
// (torch's kernels): each result within one unit in the last place of the float64 result on the
// same (16-bit) inputs, rounded to the type. Rounding every step (x - max, exp, the division, the
// mean and variance in the 16-bit type) was up to 9 units off in a float16 softmax, 61 in its
// layernorm and thousands in a bfloat16 layernorm, and 2-3x slower.
void check_half_composites_round_once(const std::string& device) {
  const int64_t rows = 16, cols = 300;
  std::vector<float> host(rows * cols);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 6 + (i % 7) * 0.3);
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    SCOPED_TRACE(d.name());
    const bool bf = d == dtypes::bfloat16;
    Tensor x = Tensor::from_vector<float>(host, {rows, cols}, device).cast(d).realize();
    std::vector<float> xs = x.cast(dtypes::float32).to_vector<float>();  // the 16-bit inputs, exactly
    auto ordered = [](uint16_t h) { return (h & 0x8000) ? -static_cast<int>(h & 0x7fff) : static_cast<int>(h); };
    auto check = [&](const char* what, const Tensor& got, const std::vector<double>& want) {
      SCOPED_TRACE(what);
      std::vector<uint16_t> g = got.bitcast(dtypes::uint16).to_vector<uint16_t>();
      ASSERT_EQ(g.size(), want.size());
      int worst = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        uint16_t w = bf ? float_to_bf16(static_cast<float>(want[i])) : float_to_half(static_cast<float>(want[i]));
        worst = std::max(worst, std::abs(ordered(g[i]) - ordered(w)));
      }
      EXPECT_LE(worst, 1);
    };
    std::vector<double> sm(xs.size()), lsm(xs.size()), ln(xs.size()), lse(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = &xs[static_cast<size_t>(r * cols)];
      double m = *std::max_element(row, row + cols), s = 0, mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c) s += std::exp(row[c] - m), mean += row[c];
      mean /= cols;
      for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
      var /= cols;
      lse[static_cast<size_t>(r)] = m + std::log(s);
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(r * cols + c);
        sm[i] = std::exp(row[c] - m) / s;
        lsm[i] = row[c] - m - std::log(s);
        ln[i] = (row[c] - mean) / std::sqrt(var + 1e-5);
      }
    }
    check("softmax", x.softmax(-1), sm);
    check("log_softmax", x.log_softmax(-1), lsm);
    check("logsumexp", x.logsumexp({-1}), lse);
    check("layernorm", x.layernorm({-1}, 1e-5), ln);
  }
}

// A copy of a half tensor moves its bits (codegen/decompose.cpp moved_bits): it used to widen and
// round, quieting signaling NaNs.
void check_half_copy_keeps_bits(const std::string& device, bool exact_nans) {
  const std::vector<uint16_t> p = every_pattern();
  const int64_t n = static_cast<int64_t>(p.size());
  for_each_variant(device, [&] {
    for (DType d : {dtypes::float16, dtypes::bfloat16}) {
      SCOPED_TRACE(d.name());
      Tensor t = Tensor::from_vector<uint16_t>(p, {n}, device).bitcast(d).realize();
      std::vector<uint16_t> flipped = t.flip({0}).contiguous().bitcast(dtypes::uint16).to_vector<uint16_t>();
      std::reverse(flipped.begin(), flipped.end());
      ASSERT_EQ(flipped.size(), p.size());
      size_t wrong = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        const bool bf = d == dtypes::bfloat16;
        const bool same = flipped[i] == p[i] || (!exact_nans && is_nan16(p[i], bf) && is_nan16(flipped[i], bf) && (p[i] >> 15) == (flipped[i] >> 15));
        if (!same && wrong++ < 5) ADD_FAILURE() << std::hex << "0x" << p[i] << " copied as 0x" << flipped[i];
      }
      EXPECT_EQ(wrong, 0u);
    }
  });
}

}  // namespace kiln::testing
