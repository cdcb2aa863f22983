// run_state.hpp - the values of one Model::run (or of the check at load): name -> Tensor.
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "kiln/tensor.hpp"

namespace kiln::onnx::detail {

// The tensors of a model's TENSOR attributes (Constant's value and the like), made (realized)
// once per device and kept with the model: they are the same on every run, and one made afresh
// would be copied from the host on every call (in a Jit's replay too, as one more item).
class ConstantCache {
 public:
  Tensor get(const void* key, const std::string& device, const std::function<Tensor()>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find({key, device});
    if (it != values_.end()) return it->second;
    return values_.emplace(std::make_pair(key, device), make()).first->second;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<const void*, std::string>, Tensor> values_;
};

// What run() knows of a value computed from a feed's symbolic dimension ("tainted"; symbolic.hpp
// has the rules). Shape of such a feed yields its bound size as plain int64 data, right for this
// run, but a kiln::Jit replays the graph with other values without rebuilding it, so any number
// read from it stays the old one. One element of such a value: exactly a variable's bound value
// (`var`), some other function of one (`depends`), or neither (a fixed size Shape read too).
struct SymElem {
  std::optional<BoundVariable> var;
  bool depends = false;
  bool tainted() const { return var.has_value() || depends; }
};
struct Taint {
  std::vector<SymElem> elems;  // row-major, when the rules could follow each element; empty: all depend
  std::string dim;             // a variable it depends on, for messages: "'N' (bound to 3)"
  std::string node;            // the node that made this value
};

class RunState {
 public:
  RunState(std::string model, std::string device, std::string base_dir, ConstantCache* constants = nullptr)
      : model_(std::move(model)), device_(std::move(device)), base_dir_(std::move(base_dir)), constants_(constants) {}
  const std::string& model() const { return model_; }
  const std::string& device() const { return device_; }
  const std::string& base_dir() const { return base_dir_; }
  ConstantCache* constants() const { return constants_; }  // nullptr: make attribute tensors per run
  const Tensor* find(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  void set(const std::string& name, Tensor t) { values_.insert_or_assign(name, std::move(t)); }
  // The taint of a value (nullptr: it depends on no symbolic size).
  const Taint* taint(const std::string& name) const {
    auto it = taints_.find(name);
    return it == taints_.end() ? nullptr : &it->second;
  }
  void set_taint(const std::string& name, Taint t) { taints_.insert_or_assign(name, std::move(t)); }

 private:
  std::string model_, device_, base_dir_;
  ConstantCache* constants_;
  std::unordered_map<std::string, Tensor> values_;
  std::unordered_map<std::string, Taint> taints_;
};

}  // namespace kiln::onnx::detail
