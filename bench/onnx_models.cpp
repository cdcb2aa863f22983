// onnx_models.cpp - kiln_onnx_bench: one ONNX model on kiln, timed as scripts/onnx-models.sh
// compares it with onnxruntime.
//
//   kiln_onnx_bench MODEL.onnx --input NAME=FILE.pb ... [--out DIR] [--iters N] [--profile]
//
// Prints one JSON object on stdout:
//   first_s   Model::load + run + the outputs realized and waited for, in a fresh process (the
//             counterpart of onnxruntime's session creation + first run; the caller empties
//             KILN_CACHE_DIR so compiles are counted). load_s, build_s and realize_s split it.
//   steady_s  the median of N kiln::Jit replays of run (each waited for): what a server calling
//             the model repeatedly pays. steady_min_s is the fastest of them.
//   eager_s   the median of a few plain run + realize calls (graph built and scheduled each time,
//             schedule cache hits): the cost of not using the Jit.
//   kernels   the items (kernels and copies) in the Jit's plan.
// With --out, each graph output is written to DIR/NAME.npy (from the first call) for comparison.
// With --profile, five plain calls are profiled and each kernel's fastest time goes to stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kiln/jit.hpp"
#include "kiln/onnx.hpp"
#include "kiln/profile.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Blocks until the tensor's kernels have finished (cpu memory is the host's: no copy).
void wait(kiln::Tensor& t) {
  if (!t.host_data()) t.realize();
}

std::string npy_descr(kiln::DType dt) {
  using namespace kiln::dtypes;
  if (dt == float32) return "<f4";
  if (dt == float64) return "<f8";
  if (dt == float16) return "<f2";
  if (dt == int64) return "<i8";
  if (dt == int32) return "<i4";
  if (dt == int8) return "|i1";
  if (dt == uint8) return "|u1";
  if (dt == bool_) return "|b1";
  throw kiln::Error(kiln::ErrorCode::unimplemented, "kiln_onnx_bench: no .npy type for output dtype " + dt.name());
}

// numpy's .npy format, version 1.0: magic, header length, a Python dict literal padded to 64.
void write_npy(const std::string& path, const kiln::Tensor& t) {
  std::string shape = "(";  // a Python tuple: "(2, 3)", "(5,)", "()"
  for (size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + npy_descr(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::vector<char> data(static_cast<size_t>(t.numel()) * t.dtype().itemsize());
  t.to_bytes(data.data(), data.size());
  std::ofstream f(path, std::ios::binary);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw kiln::Error(kiln::ErrorCode::internal, "kiln_onnx_bench: cannot write " + path);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int usage() {
  std::fprintf(stderr, "usage: kiln_onnx_bench MODEL.onnx --input NAME=FILE.pb ... [--out DIR] [--iters N] [--profile]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) return usage();
  std::string model_path = argv[1], out_dir;
  std::vector<std::pair<std::string, std::string>> input_files;
  int iters = 20;
  bool profile = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--input" && i + 1 < argc) {
      std::string kv = argv[++i];
      auto eq = kv.find('=');
      if (eq == std::string::npos) return usage();
      input_files.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--profile") {
      profile = true;
    } else {
      return usage();
    }
  }
  // The inputs are read before the clock starts (onnxruntime's are numpy arrays already).
  std::map<std::string, kiln::Tensor> feeds;
  // contiguous(): load_tensor gives a view of a flat buffer; the Jit wants buffers of their own.
  for (const auto& [name, file] : input_files) feeds.emplace(name, kiln::onnx::load_tensor(file).contiguous().realize());

  // First call: load + build the graph + schedule, compile and run it.
  auto t0 = Clock::now();
  auto model = kiln::onnx::Model::load(model_path);
  const double load_s = since(t0);
  auto t1 = Clock::now();
  auto outs = model.run(feeds);
  const double build_s = since(t1);
  auto t2 = Clock::now();
  std::vector<kiln::Tensor> first;
  for (auto& [name, t] : outs) first.push_back(t);
  kiln::Tensor::realize_all(first);
  for (auto& t : first) wait(t);
  const double realize_s = since(t2);
  const double first_s = since(t0);

  // Plain calls: the graph is built and scheduled again each time (caches warm).
  std::vector<double> eager;
  for (int i = 0; i < std::min(iters, 5); ++i) {
    auto t = Clock::now();
    auto o = model.run(feeds);
    std::vector<kiln::Tensor> v;
    for (auto& [name, x] : o) v.push_back(x);
    kiln::Tensor::realize_all(v);
    for (auto& x : v) wait(x);
    eager.push_back(since(t));
  }

  // Steady: Jit replays (the inputs are the same buffers each call, as a server's would be refilled).
  std::vector<std::string> names;
  std::vector<kiln::Tensor> inputs;
  for (const auto& [name, t] : feeds) {
    names.push_back(name);
    inputs.push_back(t);
  }
  kiln::Jit jit([&](const std::vector<kiln::Tensor>& in, const std::vector<kiln::BoundVariable>&) {
    std::map<std::string, kiln::Tensor> f;
    for (size_t i = 0; i < in.size(); ++i) f.emplace(names[i], in[i]);
    std::vector<kiln::Tensor> o;
    for (auto& [name, t] : model.run(f)) o.push_back(t);
    return o;
  });
  for (int i = 0; i < 2; ++i) {  // warm-up and capture
    auto o = jit(inputs);
    for (auto& x : o) wait(x);
  }
  std::vector<double> steady;
  for (int i = 0; i < iters; ++i) {
    auto t = Clock::now();
    auto o = jit(inputs);
    for (auto& x : o) wait(x);
    steady.push_back(since(t));
  }

  if (profile) {
    // Five profiled plain calls; each kernel's fastest of the five (a busy machine slows single
    // launches by whole milliseconds), in launch order.
    std::vector<kiln::KernelRun> best;
    for (int r = 0; r < 5; ++r) {
      kiln::Profile prof;
      auto o = model.run(feeds);
      std::vector<kiln::Tensor> v;
      for (auto& [name, x] : o) v.push_back(x);
      kiln::Tensor::realize_all(v);
      for (auto& x : v) wait(x);
      if (best.empty()) best = prof.runs();
      for (size_t i = 0; i < best.size() && i < prof.runs().size(); ++i)
        best[i].seconds = std::min(best[i].seconds, prof.runs()[i].seconds);
    }
    double total = 0;
    for (const auto& k : best) {
      total += k.seconds;
      std::fprintf(stderr, "  %-34s %9.3f ms %9.1f GFLOP/s %8.1f GB/s\n", k.name.c_str(), k.seconds * 1e3,
                   k.flops / k.seconds / 1e9, k.bytes / k.seconds / 1e9);
    }
    std::fprintf(stderr, "  %zu kernels, %.3f ms in kernels (each kernel's fastest of 5 calls)\n", best.size(), total * 1e3);
  }

  std::string out_json;
  if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
  size_t k = 0;
  for (auto& [name, t] : outs) {
    std::string file;
    if (!out_dir.empty()) {
      std::string safe = name;
      for (char& c : safe)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
      file = (std::filesystem::path(out_dir) / (safe + ".npy")).string();
      write_npy(file, first[k]);
    }
    out_json += std::string(k ? ", " : "") + "{\"name\": \"" + name + "\", \"file\": \"" + file + "\"}";
    ++k;
  }
  std::printf(
      "{\"model\": \"%s\", \"first_s\": %.6f, \"load_s\": %.6f, \"build_s\": %.6f, \"realize_s\": %.6f, "
      "\"eager_s\": %.6f, \"steady_s\": %.6f, \"steady_min_s\": %.6f, \"iters\": %d, \"kernels\": %zu, "
      "\"outputs\": [%s]}\n",
      model_path.c_str(), first_s, load_s, build_s, realize_s, median(eager), median(steady),
      *std::min_element(steady.begin(), steady.end()), iters, jit.kernel_count(), out_json.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "kiln_onnx_bench: %s\n", e.what());
  return 1;
}
