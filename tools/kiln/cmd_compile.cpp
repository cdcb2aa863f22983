// tools/kiln/cmd_compile.cpp - `kiln compile`: kernels rendered and compiled for one device,
// without running them (so also for targets this machine cannot run).
//
// The device is --device D, or --backend B with an optional --arch A: the device of B whose arch
// is A. The backend is also asked for an offline target of that arch, through its backend option
// offline_arch (set for this run before the plugin loads; the hip, cuda and cpu backends implement it),
// which is how `kiln compile --backend hip --arch gfx1100` works on a machine without an AMD GPU. The input is one of the bench workloads (every kernel of it) or a source file in the
// backend's own language. With -o, the sources and binaries are written to a directory (workload)
// or a file (--source).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "cli.hpp"
#include "codegen/lir.hpp"
#include "codegen/pipeline.hpp"
#include "commands.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/device_alloc.hpp"
#include "support/check.hpp"
#include "support/text.hpp"
#include "workloads.hpp"

namespace kiln::cli {

namespace {

std::string source_extension(const std::string& format) {
  if (format == "c") return ".c";
  if (format == "opencl-c") return ".cl";
  if (format == "hip") return ".hip";
  if (format == "cuda") return ".cu";
  return ".src";
}

std::string binary_extension(const std::string& backend) {
  if (backend == "hip") return ".co";
  if (backend == "cuda") return ".ptx";
  return ".bin";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) fail(ErrorCode::invalid_argument, "cannot write ", path.string());
}

// The device of `backend` whose arch is `arch` (any device when arch is empty).
std::string pick_device(Registry& registry, const std::string& backend, const std::string& arch) {
  const BackendRecord* r = registry.backend(backend);
  if (!r) fail(ErrorCode::not_found, "no backend named '", backend, "' (see `kiln list`)");
  if (!r->ok()) fail(ErrorCode::unavailable, "backend ", backend, " is ", status_name(r->status), ": ", r->reason);
  std::string archs;
  for (uint32_t i = 0; i < r->device_count; ++i) {
    std::string name = backend + ":" + std::to_string(i);
    if (arch.empty()) return name;
    std::shared_ptr<Device> d = registry.open(name);
    if (d->props().arch == arch) return name;
    archs += (archs.empty() ? "" : ", ") + d->props().arch;
  }
  fail(ErrorCode::not_found, "backend ", backend, " has no device for arch ", arch, " (its devices: ",
       archs.empty() ? "none" : archs, ")");
}

struct Compiled {
  std::string name, source, binary;
  double ms = 0;
};

}  // namespace

int run_compile(const std::vector<std::string>& args) {
  po::options_description options("kiln compile options");
  options.add_options()("device", po::value<std::string>(), "compile for this device (e.g. opencl:0)")(
      "backend", po::value<std::string>(), "compile for a device of this backend (with --arch: of that arch)")(
      "arch", po::value<std::string>(), "the target arch, e.g. gfx1100 (offline targets through the backend option offline_arch)")(
      "workload", po::value<std::string>(), "every kernel of a `kiln bench` workload")(
      "source", po::value<std::string>(), "a source file in the backend's language (with --entry)")(
      "entry", po::value<std::string>(), "the kernel function of --source")(
      "opts", po::value<std::string>(),
      "optimisation actions for every kernel of --workload instead of the heuristic's, e.g. \"UPCAST(1, 8, vector) THREAD(0, 2)\"; "
      "their axes are the kernel's after the early passes (KILN_DEBUG=2 shows the actions of every kernel that ran)")(
      "output,o", po::value<std::string>(), "directory (workload) or file (source) to write to")("json",
                                                                                                  "machine-readable output");
  po::variables_map vm;
  std::string names;
  for (const bench::Workload* w : bench::all_workloads()) names += (names.empty() ? "" : ", ") + w->name;
  if (!parse_args(args, options, {}, vm,
                  "kiln compile (--device D | --backend B [--arch A]) (--workload W [--opts ACTIONS] | --source FILE --entry NAME) "
                  "[-o OUT] [--json]",
                  "  kiln compile --backend hip --arch gfx1100 --workload matmul256 -o out/   # AMDGPU code objects\n"
                  "  kiln compile --device opencl:0 --workload softmax\n"
                  "  kiln compile --backend cuda --arch sm_90 --workload matmul256 -o out/   # PTX\n"
                  "  kiln compile --backend hip --arch gfx90a --source k.hip --entry vadd -o k.co\n\nworkloads: " +
                      names + "\n"))
    return kOk;
  if (vm.count("device") == vm.count("backend")) throw UsageError("give exactly one of --device and --backend");
  if (vm.count("arch") && !vm.count("backend")) throw UsageError("--arch goes with --backend");
  if (vm.count("workload") == vm.count("source")) throw UsageError("give exactly one of --workload and --source");
  if (vm.count("source") && !vm.count("entry")) throw UsageError("--source needs --entry (the kernel's function name)");
  if (vm.count("opts") && !vm.count("workload")) throw UsageError("--opts goes with --workload (a source file is compiled as it is)");
  std::optional<std::vector<Opt>> given;
  if (vm.count("opts")) {
    try {
      given = parse_opts(vm["opts"].as<std::string>());
    } catch (const Error& e) {
      throw UsageError(std::string("--opts: ") + e.what());
    }
  }

  std::string arch = vm.count("arch") ? vm["arch"].as<std::string>() : "";
  Registry& registry = Registry::get();
  // before the backend loads: it reads the option when it is probed; an unknown backend is
  // reported by pick_device
  if (!arch.empty())
    registry.set_option(vm["backend"].as<std::string>(),
                        {"offline_arch", "offline_arch", "[" + quote(arch) + "]", "kiln compile --arch"});
  std::string device_name =
      vm.count("device") ? registry.resolve(vm["device"].as<std::string>()) : pick_device(registry, vm["backend"].as<std::string>(), arch);
  std::shared_ptr<Device> dev = runtime::open_device(device_name);

  std::vector<Compiled> out;
  if (vm.count("source")) {
    Compiled c{vm["entry"].as<std::string>(), read_file(vm["source"].as<std::string>()), "", 0};
    auto t0 = std::chrono::steady_clock::now();
    c.binary = dev->compile(c.source, c.name);
    c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(std::move(c));
  } else {
    const bench::Workload* w = nullptr;
    for (const bench::Workload* x : bench::all_workloads())
      if (x->name == vm["workload"].as<std::string>()) w = x;
    if (!w) throw UsageError("unknown workload '" + vm["workload"].as<std::string>() + "'; the workloads are: " + names);
    // Inputs as uninitialised buffers of the workload's shapes: only the workload's own kernels
    // are scheduled, and scheduling needs no device memory, so offline targets work.
    std::vector<Tensor> inputs;
    for (const Tensor& t : w->inputs(device_name)) inputs.push_back(Tensor::empty(t.shape(), t.dtype(), device_name));
    std::vector<ExecItem> items = w->fn(inputs).schedule();
    for (const ExecItem& e : items) {
      if (e.is_copy) continue;
      auto t0 = std::chrono::steady_clock::now();
      // lowered, rendered and compiled, never loaded: the target may be one this host cannot run
      // (a higher x86-64 level, a GPU it lacks); the user's actions are checked against this kernel
      ProgramSpec p;
      try {
        p = to_program(e.ast, dev->target(), given ? &*given : nullptr);
      } catch (const Error& err) {
        fail(err.code(), "kernel ", e.name, ": ", err.what());
      }
      Compiled c{p.name, dev->render(p.lir.view()), "", 0};
      c.binary = runtime::compile_cached(*dev, c.source, c.name, lir_key(p.lir.view()));
      c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      out.push_back(std::move(c));
    }
  }

  if (vm.count("output")) {
    std::filesystem::path o = vm["output"].as<std::string>();
    if (vm.count("source")) {
      write_file(o, out[0].binary);
    } else {
      std::filesystem::create_directories(o);
      for (const Compiled& c : out) {
        write_file(o / (c.name + source_extension(dev->target().source_format)), c.source);
        write_file(o / (c.name + binary_extension(dev->backend())), c.binary);
      }
    }
  }
  if (vm.count("json")) {
    Json kernels = Json::array();
    for (const Compiled& c : out) {
      Json k = Json::object();
      k.set("name", c.name).set("source_bytes", uint64_t{c.source.size()}).set("binary_bytes", uint64_t{c.binary.size()});
      k.set("ms", c.ms);
      kernels.push(k);
    }
    Json doc = Json::object();
    doc.set("device", device_name).set("arch", dev->props().arch).set("kernels", kernels);
    std::printf("%s\n", doc.dump().c_str());
    return kOk;
  }
  std::printf("%s (%s):\n", device_name.c_str(), dev->props().description.c_str());
  for (const Compiled& c : out)
    std::printf("  %-28s source %7zu B  binary %8zu B  %8.1f ms\n", c.name.c_str(), c.source.size(), c.binary.size(), c.ms);
  return kOk;
}

}  // namespace kiln::cli
