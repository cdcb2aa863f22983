// run_state.hpp - the values of one Model::run (or of the check at load): name -> Tensor.
#pragma once
#include <string>
#include <unordered_map>

#include "kiln/tensor.hpp"

namespace kiln::onnx::detail {

class RunState {
 public:
  RunState(std::string model, std::string device, std::string base_dir)
      : model_(std::move(model)), device_(std::move(device)), base_dir_(std::move(base_dir)) {}
  const std::string& model() const { return model_; }
  const std::string& device() const { return device_; }
  const std::string& base_dir() const { return base_dir_; }
  const Tensor* find(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  void set(const std::string& name, Tensor t) { values_.insert_or_assign(name, std::move(t)); }

 private:
  std::string model_, device_, base_dir_;
  std::unordered_map<std::string, Tensor> values_;
};

}  // namespace kiln::onnx::detail
