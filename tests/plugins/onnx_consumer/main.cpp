// A program outside the project: loads an ONNX model with the installed kiln::onnx, feeds ones, prints the sum.
#include <kiln/onnx.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto model = kiln::onnx::Model::load(argv[1]);
  std::map<std::string, kiln::Tensor> feeds;
  for (const auto& in : model.inputs()) {
    kiln::Shape s;
    for (const auto& d : in.dims) s.push_back(std::stoll(d));
    feeds.emplace(in.name, kiln::Tensor::ones(s, in.dtype, "cpu:0"));  // the prefix also holds the null backend
  }
  auto outs = model.run(feeds, "cpu:0");
  double sum = 0;
  for (auto& [name, t] : outs) sum += t.sum().item<float>();
  std::printf("ops %zu outputs %zu sum %g\n", kiln::onnx::supported_ops().size(), outs.size(), sum);
  return 0;
}
