// tools/kiln/cmd_run.cpp - `kiln run MODEL.onnx`: load an ONNX model, feed it, run it, time it.
//
// The first call is timed from nothing (load, graph, schedule, compile, run); the steady calls
// (--iters) run the model again on the same feeds (with --jit: replays of a kiln::Jit that captured
// the model's run) and their median is reported. Each output is summarised by a checksum (sum and
// sum of |x| in float64) and its first values, so two runs (two devices, kiln and another runtime)
// compare at a glance. Feeds: .npy files, ONNX TensorProto .pb files, or random numbers drawn with
// a fixed seed (the default), a symbolic dimension taking --dim NAME=VALUE or 1.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "cli.hpp"
#include "commands.hpp"
#include "kiln/jit.hpp"
#include "kiln/tensor.hpp"
#include "npy.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "plugin/device.hpp"
#ifdef KILN_HAVE_ONNX
#include "kiln/onnx.hpp"
#endif

namespace kiln::cli {

#ifdef KILN_HAVE_ONNX
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// "NAME=VALUE" -> (NAME, VALUE); a usage error naming the option otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& s, const char* option) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw UsageError(std::string("--") + option + " " + s + ": expected NAME=" + (std::string(option) == "dim" ? "VALUE" : "FILE"));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::string shape_text(const Shape& shape) {
  std::string out;
  for (auto d : shape) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "(" + out + ")";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The declared shape with symbolic dimensions resolved (--dim, else 1).
Shape resolve(const onnx::ValueInfo& in, const std::map<std::string, int64_t>& dims, std::vector<std::string>& defaulted) {
  Shape shape;
  for (const std::string& d : in.dims) {
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
      shape.push_back(std::stoll(d));
    } else if (auto it = dims.find(d); it != dims.end()) {
      shape.push_back(it->second);
    } else {
      shape.push_back(1);
      if (std::find(defaulted.begin(), defaulted.end(), d) == defaulted.end()) defaulted.push_back(d);
    }
  }
  return shape;
}

// Random numbers of the input's dtype: floats uniform in [-1, 1), integers in [0, 10), bools.
Tensor random_feed(DType dt, const Shape& shape, const std::string& device) {
  if (dt.is_float()) return Tensor::uniform(shape, -1, 1, dt, device).realize();
  if (dt.is_bool()) return Tensor::randint(shape, 0, 2, dtypes::int32, device).cast(dt).realize();
  return Tensor::randint(shape, 0, 10, dtypes::int32, device).cast(dt).realize();
}

struct Summary {
  std::string name;
  Tensor value;
  double sum = 0, abs_sum = 0;
  std::vector<double> first;
};

Summary summarise(const std::string& name, const Tensor& t, size_t show) {
  Summary s{name, t, 0, 0, {}};
  if (t.numel() == 0) return s;
  std::vector<double> v = t.cast(dtypes::float64).to_vector<double>();
  for (double x : v) s.sum += x, s.abs_sum += std::fabs(x);
  s.first.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(show, v.size())));
  return s;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace
#endif

int run_run(const std::vector<std::string>& args) {
  po::options_description options("kiln run options");
  options.add_options()("model", po::value<std::string>(), "the ONNX model file (positional)")(
      "input,i", po::value<std::vector<std::string>>()->composing(),
      "NAME=FILE.npy, NAME=FILE.pb (an ONNX TensorProto) or NAME=random; repeat per input (default: random for "
      "every input not given)")(
      "dim", po::value<std::vector<std::string>>()->composing(),
      "NAME=VALUE: the size of a symbolic dimension for random inputs (default 1)")(
      "device", po::value<std::string>(), "device to run on (default: the default device)")(
      "iters", po::value<int>()->default_value(10), "steady calls after the first (their median is reported)")(
      "jit", "run the steady calls as replays of a kiln::Jit that captured the model's run")(
      "seed", po::value<uint64_t>()->default_value(0), "seed of the random inputs")(
      "show", po::value<int>()->default_value(5), "values shown per output")("json", "machine-readable output");
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm,
                  "kiln run MODEL.onnx [--input NAME=FILE.npy|FILE.pb|random]... [--dim NAME=VALUE]... [--device D] "
                  "[--iters N] [--jit] [--json]",
                  "  kiln run model.onnx                          # random inputs, 10 steady calls\n"
                  "  kiln run model.onnx --input x=x.npy --json   # a given input, machine-readable\n"
                  "  kiln run model.onnx --dim batch=8 --jit      # batch 8, steady calls replayed by a Jit\n"
                  "  kiln run test_add/model.onnx -i x=test_add/test_data_set_0/input_0.pb\n"))
    return kOk;
#ifndef KILN_HAVE_ONNX
  throw Error(ErrorCode::unimplemented,
              "this kiln was built without ONNX support (kiln::onnx); install ONNX's C++ package "
              "(scripts/setup-deps.sh onnx: libonnx-dev, libprotobuf-dev) and configure and build kiln again");
#else
  if (!vm.count("model")) throw UsageError("no model given\nusage: kiln run MODEL.onnx [options]");
  const std::string path = vm["model"].as<std::string>();
  const int iters = vm["iters"].as<int>(), show = vm["show"].as<int>();
  if (iters < 0) throw UsageError("--iters must be at least 0");
  if (show < 0) throw UsageError("--show must be at least 0");
  const bool json = vm.count("json"), jit = vm.count("jit");
  if (jit && iters < 1) throw UsageError("--jit needs --iters of at least 1 (the replays are the steady calls)");
  std::map<std::string, std::string> given;
  if (vm.count("input"))
    for (const std::string& s : vm["input"].as<std::vector<std::string>>()) {
      auto [name, source] = split_assignment(s, "input");
      if (!given.emplace(name, source).second) throw UsageError("--input " + name + " is given twice");
    }
  std::map<std::string, int64_t> dims;
  if (vm.count("dim"))
    for (const std::string& s : vm["dim"].as<std::vector<std::string>>()) {
      auto [name, value] = split_assignment(s, "dim");
      char* end = nullptr;
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (*end != '\0' || v < 0) throw UsageError("--dim " + s + ": the size must be a non-negative integer");
      dims[name] = v;
    }
  if (!std::filesystem::exists(path)) throw Error(ErrorCode::not_found, path + ": no such model file");
  const std::string device = vm.count("device") ? vm["device"].as<std::string>() : default_device_or_config_error();
  {
    StdoutToStderr quiet;  // (a plugin's prints while its device opens)
    runtime::open_device(device);
  }

  // Progress while kernels build: one stderr line rewritten in place on a terminal.
  const bool progress = isatty(STDERR_FILENO);
  std::atomic<size_t> built{0}, compiled{0};
  runtime::set_build_observer([&](const runtime::BuildProgress& p) {
    ++built;
    if (p.compiled) ++compiled;
    if (progress)
      std::fprintf(stderr, "\033[Kcompiling kernels on %s: %zu/%zu (%s)\r", p.device.c_str(), p.done, p.total, p.kernel.c_str());
  });
  struct Unset {  // (also when the run fails: the error must not land on the progress line)
    bool progress;
    ~Unset() {
      runtime::set_build_observer(nullptr);
      if (progress) std::fprintf(stderr, "\033[K");
    }
  } unset{progress};
  auto clear_progress = [&] {
    if (progress) std::fprintf(stderr, "\033[K");
  };

  // first: load (parse, check, initializers), then feeds (not timed), then the first run
  auto t0 = Clock::now();
  onnx::Model model = onnx::Model::load(path);
  const double load_ms = ms_since(t0);

  for (const auto& [name, source] : given) {
    bool known = false;
    for (const auto& in : model.inputs()) known = known || in.name == name;
    if (!known) {
      std::string names;
      for (const auto& in : model.inputs()) names += (names.empty() ? "" : ", ") + in.name;
      throw UsageError("--input " + name + ": the model has no input '" + name + "' (its inputs: " +
                       (names.empty() ? "none" : names) + ")");
    }
  }
  for (const auto& [name, value] : dims) {
    bool used = false;
    for (const auto& in : model.inputs()) used = used || std::find(in.dims.begin(), in.dims.end(), name) != in.dims.end();
    if (!used) {
      std::string names;
      for (const auto& in : model.inputs())
        for (const auto& d : in.dims)
          if (!d.empty() && !std::isdigit(static_cast<unsigned char>(d[0])) && names.find("'" + d + "'") == std::string::npos)
            names += (names.empty() ? "'" : ", '") + d + "'";
      throw UsageError("--dim " + name + ": no input of the model has a dimension named '" + name + "' (its symbolic dimensions: " +
                       (names.empty() ? "none" : names) + ")");
    }
  }
  manual_seed(vm["seed"].as<uint64_t>());
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> sources, defaulted;
  for (const auto& in : model.inputs()) {
    auto it = given.find(in.name);
    const std::string source = it == given.end() ? "random" : it->second;
    auto feed = [&] {
      if (source == "random") return random_feed(in.dtype, resolve(in, dims, defaulted), device);
      if (ends_with(source, ".npy")) return read_npy(source, device);
      if (ends_with(source, ".pb")) return onnx::load_tensor(source, device);
      throw UsageError("--input " + in.name + "=" + source + ": give a .npy file, an ONNX TensorProto .pb file or 'random'");
    };
    feeds.emplace(in.name, feed());
    sources.push_back(source);
  }
  for (const std::string& d : defaulted)
    std::fprintf(stderr, "kiln run: symbolic dimension '%s' set to 1 for the random inputs (--dim %s=VALUE sets it)\n",
                 d.c_str(), d.c_str());

  auto dev = runtime::open_device(device);
  std::vector<std::string> names;
  for (const auto& o : model.outputs()) names.push_back(o.name);
  auto run_once = [&](const std::map<std::string, Tensor>& f) {
    std::map<std::string, Tensor> outs = model.run(f, device);
    std::vector<Tensor> list;
    for (const auto& n : names) list.push_back(outs.at(n));
    return list;
  };
  built = 0, compiled = 0;  // (the random feeds' kernels are not the model's)
  auto t1 = Clock::now();
  std::vector<Tensor> outs;
  try {
    outs = run_once(feeds);
    Tensor::realize_all(outs);
    dev->synchronize();
  } catch (const Error& e) {
    // Random numbers suit data inputs; an input that is a shape, an index or a count usually
    // needs real values, and the operator's refusal of a random one is only a symptom.
    std::string random;
    for (size_t i = 0; i < sources.size(); ++i)
      if (sources[i] == "random") random += (random.empty() ? "" : ", ") + model.inputs()[i].name;
    if (random.empty()) throw;
    throw Error(e.code(), std::string(e.what()) + "\n(inputs " + random +
                              " were random: one that holds a shape, indices or sizes needs real values, "
                              "--input NAME=FILE.npy|FILE.pb)");
  }
  const double first_run_ms = ms_since(t1);
  clear_progress();
  const size_t first_built = built, first_compiled = compiled;

  // steady: the same feeds again (schedules and kernels cached), or a Jit's replays
  std::vector<double> times;
  std::optional<Jit> jitted;
  std::vector<Tensor> inputs;
  if (jit) {
    for (const auto& in : model.inputs()) inputs.push_back(feeds.at(in.name));
    jitted.emplace([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
      std::map<std::string, Tensor> f;
      for (size_t i = 0; i < in.size(); ++i) f.emplace(model.inputs()[i].name, in[i]);
      return run_once(f);
    });
    for (int warm = 0; warm < 2; ++warm) {  // call 1 runs, call 2 captures
      outs = (*jitted)(inputs);
      dev->synchronize();
    }
    clear_progress();
  }
  for (int i = 0; i < iters; ++i) {
    auto t = Clock::now();
    if (jitted) {
      outs = (*jitted)(inputs);
    } else {
      outs = run_once(feeds);
      Tensor::realize_all(outs);
    }
    dev->synchronize();
    times.push_back(ms_since(t));
  }
  clear_progress();
  double steady_ms = 0;
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    steady_ms = times.size() % 2 ? times[times.size() / 2] : (times[times.size() / 2 - 1] + times[times.size() / 2]) / 2;
  }

  std::vector<Summary> summaries;
  for (size_t i = 0; i < names.size(); ++i) summaries.push_back(summarise(names[i], outs[i], static_cast<size_t>(show)));

  if (json) {
    Json doc = Json::object();
    doc.set("schema_version", 1).set("model", path).set("opset", model.opset()).set("device", device);
    Json ins = Json::array();
    size_t k = 0;
    for (const auto& in : model.inputs()) {
      const Tensor& t = feeds.at(in.name);
      Json shape = Json::array(), declared = Json::array();
      for (auto d : t.shape()) shape.push(d);
      for (const auto& d : in.dims) declared.push(d);
      ins.push(Json(Json::Object{{"name", in.name}, {"dtype", t.dtype().name()}, {"shape", shape},
                                 {"declared", declared}, {"source", sources[k++]}}));
    }
    doc.set("inputs", ins);
    Json list = Json::array();
    for (const Summary& s : summaries) {
      Json shape = Json::array(), first = Json::array();
      for (auto d : s.value.shape()) shape.push(d);
      for (double v : s.first) first.push(v);
      list.push(Json(Json::Object{{"name", s.name}, {"dtype", s.value.dtype().name()}, {"shape", shape},
                                  {"sum", s.sum}, {"abs_sum", s.abs_sum}, {"first", first}}));
    }
    doc.set("outputs", list);
    doc.set("load_ms", load_ms).set("first_ms", load_ms + first_run_ms).set("first_run_ms", first_run_ms);
    doc.set("steady_ms", times.empty() ? Json() : Json(steady_ms)).set("iters", iters).set("jit", jit);
    doc.set("jit_kernels", jitted ? Json(uint64_t{jitted->kernel_count()}) : Json());
    doc.set("kernels_built", uint64_t{first_built}).set("kernels_compiled", uint64_t{first_compiled});
    std::printf("%s\n", doc.dump().c_str());
    return kOk;
  }
  std::printf("model   %s (opset %lld) on %s\n", path.c_str(), static_cast<long long>(model.opset()), device.c_str());
  size_t k = 0;
  for (const auto& in : model.inputs()) {
    const Tensor& t = feeds.at(in.name);
    std::printf("input   %s %s %s <- %s\n", in.name.c_str(), t.dtype().name().c_str(), shape_text(t.shape()).c_str(),
                sources[k++].c_str());
  }
  for (const Summary& s : summaries) {
    std::string first;
    for (double v : s.first) first += (first.empty() ? "" : ", ") + number(v);
    if (s.first.size() < static_cast<size_t>(s.value.numel())) first += first.empty() ? "..." : ", ...";
    std::printf("output  %s %s %s sum %s |sum| %s [%s]\n", s.name.c_str(), s.value.dtype().name().c_str(),
                shape_text(s.value.shape()).c_str(), number(s.sum).c_str(), number(s.abs_sum).c_str(), first.c_str());
  }
  std::printf("first   %.2f ms (load %.2f ms, first run %.2f ms; %zu kernel%s built, %zu compiled)\n", load_ms + first_run_ms,
              load_ms, first_run_ms, first_built, first_built == 1 ? "" : "s", first_compiled);
  if (!times.empty())
    std::printf("steady  %.3f ms (median of %d%s)\n", steady_ms, iters,
                jitted ? (" Jit replays of " + std::to_string(jitted->kernel_count()) + " kernels").c_str() : " runs");
  return kOk;
#endif
}

}  // namespace kiln::cli
