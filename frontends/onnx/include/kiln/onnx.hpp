// kiln/onnx.hpp - ONNX models on kiln (library kiln::onnx; DESIGN.md §5.3).
//
// A Model is read with ONNX's own protobuf classes and checked at load: every node's operator,
// opset and attributes must be ones kiln implements (else a kiln::Error naming the node, its op
// type, the opset and what is missing), the graph must be acyclic and every value defined. The
// initializers become realized tensors once, at load. run() builds the graph from kiln::Tensor
// ops, so it fuses, schedules, JITs and BEAM-searches like any other kiln program; its outputs are
// lazy.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::onnx {

// A graph input or output: its dtype and its dimensions as written in the model ("3" for a fixed
// size, a name such as "N" for a symbolic one, "?" for an unknown one).
struct ValueInfo {
  std::string name;
  DType dtype;
  std::vector<std::string> dims;
};

class Model {
 public:
  // The model in `path`; tensors stored as external data are read from files beside it.
  // kiln::Error (data_loss for a file that is not a model, not_found for a missing file,
  // unimplemented for an operator kiln lacks) naming the file and, where one is at fault, the node.
  static Model load(const std::string& path);
  // A model held in memory; external data is resolved against `base_dir` (empty: the working
  // directory); `name` stands for the file in messages (empty: "<bytes>").
  static Model from_bytes(std::string_view bytes, const std::string& base_dir = "", const std::string& name = "");
  const std::vector<ValueInfo>& inputs() const;   // the graph inputs that are not initializers
  const std::vector<ValueInfo>& outputs() const;
  int64_t opset() const;                          // the default domain's opset version
  const std::string& name() const;                // the file (or "<bytes>"), for messages
  // Builds the graph for these feeds (every input by name; a feed of another dtype than declared
  // is an error) on `device` ("" the default) and returns every graph output by name, lazy.
  // A feed dimension may be symbolic (Tensor::shrink(axis, BoundVariable) of a max-sized buffer):
  // the kernels then serve every value of the variable, and a kiln::Jit around run() replays with
  // new values. It must be declared by name (not a fixed size), and one name used by several
  // inputs takes one size (one variable where symbolic). Whatever would fix the bound size into
  // the graph - read on the host as a number, returned as an output, given to an operator not
  // known to keep it symbolic - is a kiln::Error naming the node (docs/onnx.md, "Symbolic
  // dimensions"); fixed feeds run such models.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds, const std::string& device = "") const;

  struct Impl;

 private:
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  static std::shared_ptr<const Impl> load_checked(std::shared_ptr<Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// An ONNX TensorProto file (the node tests' input_N.pb / output_N.pb, a `kiln run --input`) as a
// realized tensor on `device`. kiln::Error for a file that does not parse or a dtype kiln lacks.
Tensor load_tensor(const std::string& path, const std::string& device = "");
// The same from bytes held in memory (`what` names them in messages).
Tensor tensor_from_bytes(std::string_view bytes, const std::string& what, const std::string& device = "");

// The ONNX operators kiln implements (default domain), sorted: for `kiln list`-style tooling.
std::vector<std::string> supported_ops();

}  // namespace kiln::onnx
