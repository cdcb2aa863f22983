// tensor/tensor_state.hpp - what a Tensor handle points at, and the graph-building helpers every
// frontend file shares (shapes, broadcasting, axis normalisation, constants).
//
// Tensor-level graph conventions (what the scheduler expects):
//  - Every tensor node has a shape; ALU and CAST nodes have sources of identical shape (the
//    frontend inserts RESHAPE/EXPAND for broadcasting).
//  - Constants are CONST nodes of shape () with the DEVICE as their only source; IOTA has the
//    DEVICE as its source too; realized data is BUFFER(DEVICE) with shape (size,).
//  - Movement args hold the shape; a symbolic dimension is stored as -1-k, meaning "source 1+k",
//    a BIND node (RESHAPE/EXPAND dims, SHRINK ends).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"
#include "support/check.hpp"

namespace kiln::detail {

struct TensorState {
  UOp uop;
  Shape shape;            // concrete sizes (a symbolic dimension shows its bound value)
  std::vector<UOp> vars;  // empty, or one entry per dimension: the BIND of a symbolic dimension
  std::string device;     // canonical device name
};

Tensor make(UOp uop, Shape shape, std::string device, std::vector<UOp> vars = {});
// Records a state so that realize can redirect lazy graphs to new buffers (done by make).
void register_state(const std::shared_ptr<TensorState>& s);
inline TensorState& st(const Tensor& t) { return *t.state(); }

// Canonical device name for a user string ("" = default device); throws for unknown devices.
std::string canonical_device(const std::string& device);

UOp device_node(const std::string& device);
// A scalar constant broadcast to `shape` on `device`.
Tensor const_tensor(double value, DType dtype, const Shape& shape, const std::string& device);
Tensor const_like(const Tensor& like, double value, DType dtype);
Tensor const_like(const Tensor& like, double value);

std::string shape_str(const Shape& s);
int64_t numel_of(const Shape& s);
// Normalises a possibly negative axis of a tensor of `shape` (`insert`: a position among
// shape.size() + 1, as unsqueeze and stack take); throws naming `op`, the axis and the shape.
int norm_axis(int axis, const Shape& shape, const char* op, bool insert = false);
std::string ints_str(const std::vector<int>& v);

// A movement op with its arg built from `dims` (symbolic entries from `vars`).
Tensor movement(const Tensor& x, Ops op, const std::vector<int64_t>& arg, const Shape& new_shape,
                const std::vector<UOp>& new_vars, const std::vector<UOp>& arg_vars = {});
// RESHAPE or EXPAND to `dims`, where vars[i] (if set) makes dimension i symbolic.
Tensor shaped(const Tensor& x, Ops op, const Shape& dims, const std::vector<UOp>& vars);
// Elementwise op over same-shaped, same-device operands (after broadcast/promotion).
Tensor alu(Ops op, const std::vector<Tensor>& srcs, DType out);
// Broadcasts a and b to a common shape (numpy rules); throws naming `op`.
std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, const char* op);
// Brings a and b to a common dtype (least_upper_dtype) and shape.
std::pair<Tensor, Tensor> promote(const Tensor& a, const Tensor& b, const char* op);

template <typename T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtypes::bool_;
  else if constexpr (std::is_same_v<T, int8_t>) return dtypes::int8;
  else if constexpr (std::is_same_v<T, int16_t>) return dtypes::int16;
  else if constexpr (std::is_same_v<T, int32_t>) return dtypes::int32;
  else if constexpr (std::is_same_v<T, int64_t>) return dtypes::int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return dtypes::uint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return dtypes::uint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return dtypes::uint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return dtypes::uint64;
  else if constexpr (std::is_same_v<T, float>) return dtypes::float32;
  else return dtypes::float64;
}

}  // namespace kiln::detail
