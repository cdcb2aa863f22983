// tests/tensor/realize_groups_test.cpp - detail::realize_in_groups (what kiln::dist overlaps its
// gradient transfers with): the same bits as realize_all, each group reported once, in order,
// readable in its callback; a group with nothing to compute is reported too.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/kiln.hpp"
#include "tensor/realize_groups.hpp"

using namespace kiln;

namespace {

// A two-layer MLP's gradients (w1, b1, w2, b2) and loss, built afresh from the same seed.
std::vector<Tensor> backward_pass(const std::string& dev) {
  manual_seed(3);
  std::vector<Tensor> p{Tensor::randn({8, 6}, dtypes::float32, dev), Tensor::randn({8}, dtypes::float32, dev),
                        Tensor::randn({3, 8}, dtypes::float32, dev), Tensor::randn({3}, dtypes::float32, dev)};
  for (Tensor& t : p) t = t.contiguous().realize().requires_grad_();
  Tensor x = Tensor::randn({5, 6}, dtypes::float32, dev).realize();
  Tensor loss = x.linear(p[0], p[1]).relu().linear(p[2], p[3]).square().mean();
  loss.backward();
  return {*p[0].grad(), *p[1].grad(), *p[2].grad(), *p[3].grad(), loss};
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  std::vector<uint8_t> b(static_cast<size_t>(t.numel() * t.dtype().itemsize()));
  t.to_bytes(b.data(), b.size());
  return b;
}

TEST(RealizeInGroups, SameBitsAsRealizeAllGroupsInOrder) {
  for (const char* dev : {"ref", ""}) {
    SCOPED_TRACE(dev);
    std::vector<Tensor> plain = backward_pass(dev);
    Tensor::realize_all(plain);
    std::vector<Tensor> grouped = backward_pass(dev);
    Tensor done = Tensor::ones({4}, dtypes::float32, dev).contiguous().realize();  // nothing to compute
    grouped.push_back(done);
    // the last layer first (as kiln::dist asks), then the first layer, then the realized tensor
    std::vector<std::vector<size_t>> groups{{2, 3}, {0, 1}, {5}};
    std::vector<size_t> order;
    std::vector<std::vector<uint8_t>> read(grouped.size());
    detail::realize_in_groups(grouped, groups, [&](size_t g, const detail::GroupRead& rd) {
      order.push_back(g);
      for (size_t i : groups[g]) {
        read[i].resize(static_cast<size_t>(grouped[i].numel() * 4));
        rd(i, read[i].data(), read[i].size());
      }
    });
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(read[i], bytes_of(plain[i])) << "tensor " << i << " as read in its group";
      EXPECT_EQ(bytes_of(grouped[i]), bytes_of(plain[i])) << "tensor " << i << " after the realize";
    }
    EXPECT_EQ(bytes_of(grouped[4]), bytes_of(plain[4])) << "the loss (in no group)";
    EXPECT_EQ(read[5], bytes_of(done));
  }
}

}  // namespace
