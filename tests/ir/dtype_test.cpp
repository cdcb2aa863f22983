// tests/ir/dtype_test.cpp - dtype properties, names and the promotion lattice.
#include <gtest/gtest.h>

#include "kiln/dtype.hpp"

using namespace kiln;

TEST(DType, SizesAndKinds) {
  EXPECT_EQ(dtypes::bool_.itemsize(), 1);
  EXPECT_EQ(dtypes::int16.itemsize(), 2);
  EXPECT_EQ(dtypes::float16.itemsize(), 2);
  EXPECT_EQ(dtypes::bfloat16.itemsize(), 2);
  EXPECT_EQ(dtypes::float64.itemsize(), 8);
  EXPECT_EQ(dtypes::float32.vec(4).itemsize(), 16);
  EXPECT_EQ(dtypes::float32.ptr().itemsize(), 8);
  EXPECT_TRUE(dtypes::uint8.is_unsigned() && dtypes::uint8.is_int());
  EXPECT_FALSE(dtypes::bool_.is_int());
  EXPECT_TRUE(dtypes::bfloat16.is_float());
  EXPECT_TRUE(dtypes::index.is_int());
}

TEST(DType, MinMax) {
  EXPECT_EQ(dtypes::int8.imin(), -128);
  EXPECT_EQ(dtypes::int8.imax(), 127);
  EXPECT_EQ(dtypes::uint16.imax(), 65535);
  EXPECT_EQ(dtypes::int32.imin(), INT32_MIN);
  EXPECT_EQ(dtypes::int64.imax(), INT64_MAX);
  EXPECT_EQ(dtypes::uint64.imin(), 0);
  EXPECT_EQ(dtypes::bool_.imax(), 1);
  EXPECT_DOUBLE_EQ(dtypes::float16.fmax_finite(), 65504.0);
}

TEST(DType, VectorsAndPointers) {
  DType v = dtypes::float32.vec(4);
  EXPECT_EQ(v.count(), 4);
  EXPECT_EQ(v.scalar_type(), dtypes::float32);
  DType p = v.ptr(64, AddrSpace::local);
  EXPECT_TRUE(p.is_ptr());
  EXPECT_EQ(p.base(), v);
  EXPECT_EQ(p.ptr_size(), 64);
  EXPECT_EQ(p.addrspace(), AddrSpace::local);
  EXPECT_FALSE(p == v);
  EXPECT_EQ(v.name(), "float32x4");
  EXPECT_EQ(p.name(), "float32x4*[local,64]");
  EXPECT_EQ(dtypes::int32.ptr().name(), "int32*");
}

TEST(DType, Promotion) {
  struct Case { DType a, b, want; };
  const Case cases[] = {
      {dtypes::int32, dtypes::float32, dtypes::float32},   {dtypes::int8, dtypes::uint8, dtypes::int16},
      {dtypes::int32, dtypes::uint32, dtypes::int64},      {dtypes::uint8, dtypes::uint16, dtypes::uint16},
      {dtypes::float16, dtypes::bfloat16, dtypes::float32}, {dtypes::bool_, dtypes::int8, dtypes::int8},
      {dtypes::bool_, dtypes::float16, dtypes::float16},   {dtypes::int32, dtypes::float16, dtypes::float16},
      {dtypes::int64, dtypes::uint64, dtypes::float32},    {dtypes::float32, dtypes::float64, dtypes::float64},
      {dtypes::uint32, dtypes::int8, dtypes::int64},       {dtypes::bool_, dtypes::bool_, dtypes::bool_},
      {dtypes::uint64, dtypes::int8, dtypes::float32},     {dtypes::bfloat16, dtypes::int64, dtypes::bfloat16},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(least_upper_dtype(c.a, c.b), c.want) << c.a.name() << " + " << c.b.name();
    EXPECT_EQ(least_upper_dtype(c.b, c.a), c.want) << "symmetric: " << c.b.name() << " + " << c.a.name();
  }
}

TEST(DType, PromotionIsALattice) {
  const DType all[] = {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8,
                       dtypes::uint16, dtypes::uint32, dtypes::uint64, dtypes::float16, dtypes::bfloat16,
                       dtypes::float32, dtypes::float64};
  for (DType a : all) {
    EXPECT_EQ(least_upper_dtype(a, a), a);
    for (DType b : all) {
      DType ab = least_upper_dtype(a, b);
      EXPECT_EQ(ab, least_upper_dtype(b, a));
      // promoting with the result changes nothing (the result is above both)
      EXPECT_EQ(least_upper_dtype(ab, a), ab) << a.name() << "," << b.name();
      EXPECT_EQ(least_upper_dtype(ab, b), ab) << a.name() << "," << b.name();
    }
  }
}

TEST(DType, ParseRoundTrip) {
  DType d;
  EXPECT_TRUE(parse_dtype("bfloat16", d));
  EXPECT_EQ(d, dtypes::bfloat16);
  EXPECT_FALSE(parse_dtype("float128", d));
}
