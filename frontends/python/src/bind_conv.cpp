// frontends/python/src/bind_conv.cpp - convolutions and pools in tinygrad's names, keywords and
// defaults: conv2d, conv_transpose2d, max_pool2d (return_indices), avg_pool2d, max_unpool2d, all
// for any number of spatial axes. Python's conventions only: an int or a tuple per spatial axis,
// tinygrad's three padding forms (an int; one per spatial axis; a flat torch-style tuple of
// 2 * axes, last axis first), stride=None meaning the kernel. Each call is one kiln::Tensor
// method (tensor/conv.cpp); only graphs are built, so the GIL stays held.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>  // every file that casts to std::string: another instantiation would break it (ODR)
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "common.hpp"

namespace kiln_py {

namespace {

using ConvOptions = Tensor::ConvOptions;
using PoolOptions = Tensor::PoolOptions;

bool is_int(nb::handle h) { return nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h); }
bool is_seq(nb::handle h) { return nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h); }

std::string repr_of(nb::handle h) { return nb::cast<std::string>(nb::repr(h)); }

// An int (one value for every axis) or a tuple/list of ints (one per axis).
std::vector<int64_t> ints(nb::handle v, const char* fn, const char* arg) {
  if (is_int(v)) return {i64(v)};
  if (is_seq(v) && nb::len(v) > 0) {
    std::vector<int64_t> xs;
    for (nb::handle h : v) {
      if (!is_int(h)) break;
      xs.push_back(i64(h));
    }
    if (xs.size() == nb::len(v)) return xs;
  }
  throw nb::type_error((std::string(fn) + "(): " + arg + " must be an int or a tuple of ints, got " + repr_of(v)).c_str());
}

// tinygrad's padding forms for `axes` spatial axes: an int; a tuple of `axes` ints (each axis
// padded on both sides); or a flat tuple of 2 * axes ints, (before, after) pairs from the LAST axis
// (torch.nn.functional.pad's order). Another length is a ValueError, as tinygrad's.
kiln::Pads padding_arg(nb::handle v, size_t axes, const char* fn) {
  if (is_int(v)) return kiln::Pads(1, {i64(v), i64(v)});
  std::vector<int64_t> p = ints(v, fn, "padding");
  if (p.size() == 2 * axes) {
    kiln::Pads pads(axes);
    for (size_t j = 0; j < axes; ++j) pads[axes - 1 - j] = {p[2 * j], p[2 * j + 1]};
    return pads;
  }
  if (p.size() == axes) {
    kiln::Pads pads;
    for (int64_t x : p) pads.push_back({x, x});
    return pads;
  }
  throw nb::value_error((std::string(fn) + "(): padding must be an int or a sequence of length " + std::to_string(axes) + " or " +
                         std::to_string(2 * axes) + " (for " + std::to_string(axes) + " spatial axes), got " + repr_of(v))
                            .c_str());
}

// The spatial axes a convolution's weight (out, in, *kernel) has; 1 for a weight too small, so
// that kiln reports its shape.
size_t weight_axes(const Tensor& weight) { return weight.ndim() > 2 ? static_cast<size_t>(weight.ndim() - 2) : 1; }

// kernel_size: an int k is (k, k), as tinygrad's make_tuple(kernel_size, 2).
std::vector<int64_t> kernel_arg(nb::handle v, const char* fn) {
  std::vector<int64_t> k = ints(v, fn, "kernel_size");
  if (is_int(v)) k.push_back(k[0]);
  return k;
}

PoolOptions pool_options(nb::handle kernel_size, nb::handle stride, nb::handle dilation, nb::handle padding, size_t axes, const char* fn) {
  PoolOptions o;
  o.kernel = kernel_arg(kernel_size, fn);
  o.stride = stride.is_none() ? std::vector<int64_t>{} : ints(stride, fn, "stride");
  o.dilation = ints(dilation, fn, "dilation");
  o.padding = padding_arg(padding, axes, fn);
  return o;
}

}  // namespace

void bind_conv(nb::class_<Tensor>& T) {
  T.def(
      "conv2d",
      [](const Tensor& t, const Tensor& weight, std::optional<Tensor> bias, int groups, nb::handle stride, nb::handle dilation,
         nb::handle padding, nb::handle dtype) {
        return t.conv2d(weight, bias,
                        ConvOptions{.groups = groups, .stride = ints(stride, "conv2d", "stride"), .dilation = ints(dilation, "conv2d", "dilation"),
                                    .padding = padding_arg(padding, weight_axes(weight), "conv2d"), .dtype = dtype_arg(dtype, "conv2d")});
      },
      nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("groups") = 1, nb::arg("stride") = 1, nb::arg("dilation") = 1,
      nb::arg("padding") = 0, nb::arg("dtype").none() = nb::none());
  T.def(
      "conv_transpose2d",
      [](const Tensor& t, const Tensor& weight, std::optional<Tensor> bias, int groups, nb::handle stride, nb::handle dilation,
         nb::handle padding, nb::handle output_padding) {
        const char* fn = "conv_transpose2d";
        return t.conv_transpose2d(weight, bias,
                                  ConvOptions{.groups = groups, .stride = ints(stride, fn, "stride"), .dilation = ints(dilation, fn, "dilation"),
                                              .padding = padding_arg(padding, weight_axes(weight), fn),
                                              .output_padding = ints(output_padding, fn, "output_padding")});
      },
      nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("groups") = 1, nb::arg("stride") = 1, nb::arg("dilation") = 1,
      nb::arg("padding") = 0, nb::arg("output_padding") = 0);
  T.def(
      "max_pool2d",
      [](const Tensor& t, nb::handle kernel_size, nb::handle stride, nb::handle dilation, nb::handle padding, bool ceil_mode,
         bool return_indices) -> nb::object {
        PoolOptions o = pool_options(kernel_size, stride, dilation, padding, kernel_arg(kernel_size, "max_pool2d").size(), "max_pool2d");
        o.ceil_mode = ceil_mode;
        if (!return_indices) return nb::cast(t.max_pool2d(o));
        auto [values, indices] = t.max_pool2d_with_indices(o);
        return nb::make_tuple(values, indices);
      },
      nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(), nb::arg("dilation") = 1,
      nb::arg("padding") = 0, nb::arg("ceil_mode") = false, nb::arg("return_indices") = false);
  T.def(
      "avg_pool2d",
      [](const Tensor& t, nb::handle kernel_size, nb::handle stride, nb::handle dilation, nb::handle padding, bool ceil_mode,
         bool count_include_pad) {
        PoolOptions o = pool_options(kernel_size, stride, dilation, padding, kernel_arg(kernel_size, "avg_pool2d").size(), "avg_pool2d");
        o.ceil_mode = ceil_mode;
        o.count_include_pad = count_include_pad;
        return t.avg_pool2d(o);
      },
      nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(), nb::arg("dilation") = 1,
      nb::arg("padding") = 0, nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true);
  T.def(
      "max_unpool2d",
      [](const Tensor& t, const Tensor& indices, nb::handle kernel_size, nb::handle stride, nb::handle dilation, nb::handle padding,
         nb::handle output_size) {
        const size_t axes = t.ndim() > 2 ? static_cast<size_t>(t.ndim() - 2) : 1;
        PoolOptions o = pool_options(kernel_size, stride, dilation, padding, axes, "max_unpool2d");
        Shape out;
        if (!output_size.is_none())
          for (int64_t v : ints(output_size, "max_unpool2d", "output_size")) out.push_back(v);
        return t.max_unpool2d(indices, o, out);
      },
      nb::arg("indices"), nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(),
      nb::arg("dilation") = 1, nb::arg("padding") = 0, nb::arg("output_size").none() = nb::none());
}

}  // namespace kiln_py
