// tools/kiln/cli.cpp - shared helpers of the subcommands.
#include "cli.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>

#include "kiln/sdk/lir.hpp"

namespace kiln::cli {

bool parse_args(const std::vector<std::string>& args, po::options_description& options,
                const po::positional_options_description& positional, po::variables_map& vm, const std::string& usage,
                const std::string& examples) {
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << options << (examples.empty() ? "" : "\nexamples:\n" + examples);
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + "\nusage: " + usage);
  }
  return true;
}

Settings cli_settings(bool load) {
  Settings s = Settings::from_environment();
  s.load = load;
  s.report_problems = false;
  s.isolate_timeout_s = 30;
  if (const char* v = std::getenv("KILN_PROBE_TIMEOUT"); v && *v) {
    char* end = nullptr;
    double t = std::strtod(v, &end);
    if (*end == '\0' && t > 0 && t <= 86400)
      s.isolate_timeout_s = t;
    else
      std::fprintf(stderr, "kiln: warning: KILN_PROBE_TIMEOUT=%s is not a number of seconds in (0, 86400]; using 30\n", v);
  }
  return s;
}

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = dup(STDOUT_FILENO);
  if (saved_ >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::~StdoutToStderr() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  dup2(saved_, STDOUT_FILENO);
  close(saved_);
}

int backends_exit(Registry& registry) {
  for (const BackendRecord& r : registry.known_backends())
    if (r.status == BackendStatus::crashed) return kFailure;
  return kOk;
}

void print_diagnostics(Registry& registry) {
  std::set<std::string> seen;
  auto print = [&](const Diagnostic& d) {
    std::string line = d.str();
    if (seen.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
  };
  for (const Diagnostic& d : registry.config().diagnostics) print(d);
  for (const BackendRecord& r : registry.known_backends())
    for (const Diagnostic& d : r.diagnostics) print(d);
  for (const Diagnostic& d : registry.diagnostics()) print(d);
}

int config_exit(Registry& registry) { return registry.config().ok() ? kOk : kConfigError; }

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string abi_version() { return std::to_string(KILN_ABI_MAJOR) + "." + std::to_string(KILN_ABI_MINOR); }

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case KILN_DEVICE_KIND_CPU: return "cpu";
    case KILN_DEVICE_KIND_GPU: return "gpu";
    case KILN_DEVICE_KIND_ACCELERATOR: return "accelerator";
  }
  return "unknown";
}

std::string lir_dtype_name(uint32_t dtype) {
  const char* name = sdk::lir_dtype_name(dtype);
  return name ? name : "dtype" + std::to_string(dtype);
}

std::string lir_op_name(uint32_t op) {
  const char* name = sdk::lir_op_name(op);
  return name ? name : "op" + std::to_string(op);
}

Json device_json(const Device& d) {
  const DeviceProps& p = d.props();
  Json j = Json::object();
  j.set("id", d.name());
  j.set("name", p.name);
  j.set("description", p.description);
  j.set("kind", kind_name(p.kind));
  j.set("arch", p.arch);
  j.set("features", p.features);
  j.set("compute_units", p.compute_units);
  j.set("memory_total", p.memory_total);
  j.set("memory_free", p.memory_free);
  j.set("threadsafe", d.threadsafe());
  j.set("renderer", d.has_renderer());
  j.set("device_copy", d.has_device_copy());
  return j;
}

Json target_json(const Target& t) {
  Json j = Json::object();
  Json flags = Json::array();
  if (t.has(KILN_TARGET_HAS_LOCAL)) flags.push("local");
  if (t.has(KILN_TARGET_HAS_SHARED)) flags.push("shared");
  if (t.has(KILN_TARGET_HAS_THREADS)) flags.push("threads");
  if (t.has(KILN_TARGET_HAS_FMA)) flags.push("fma");
  j.set("flags", flags);
  j.set("threads", t.threads);
  j.set("global_max", Json(Json::Array{t.global_max[0], t.global_max[1], t.global_max[2]}));
  j.set("local_max", Json(Json::Array{t.local_max[0], t.local_max[1], t.local_max[2]}));
  j.set("local_prod_max", t.local_prod_max);
  j.set("max_vector_width", t.max_vector_width);
  j.set("shared_max", t.shared_max);
  j.set("l1d_bytes", t.l1d_bytes);  // 0 = unknown
  j.set("l2_bytes", t.l2_bytes);
  j.set("vector_registers", t.vector_registers);  // 0 = unknown
  j.set("fma_pipes", t.fma_pipes);
  Json dtypes = Json::array(), ops = Json::array();
  for (uint32_t d = 0; d < KILN_LIR_DTYPE_COUNT; ++d)
    if (t.supports_dtype(d)) dtypes.push(lir_dtype_name(d));
  for (uint32_t o = 1; o < KILN_LIR_OP_COUNT; ++o)
    if (t.supports_op(o)) ops.push(lir_op_name(o));
  Json stored = Json::array();  // loaded, stored and converted natively, computed in float32
  for (uint32_t d = 0; d < KILN_LIR_DTYPE_COUNT; ++d)
    if (t.stores_dtype(d)) stored.push(lir_dtype_name(d));
  j.set("dtypes", dtypes);
  j.set("storage_dtypes", stored);
  j.set("ops", ops);
  j.set("source_format", t.source_format);
  return j;
}

Json diagnostics_json(const std::vector<Diagnostic>& diagnostics) {
  Json a = Json::array();
  for (const Diagnostic& d : diagnostics) {
    Json j = Json::object();
    j.set("file", d.file);
    j.set("line", d.line);
    j.set("column", d.column);
    j.set("severity", d.is_error() ? "error" : "warning");
    j.set("message", d.message);
    j.set("text", d.str());
    a.push(j);
  }
  return a;
}

std::string default_device_or_config_error() {
  Registry registry(cli_settings());
  StdoutToStderr quiet;
  try {
    return registry.default_device();
  } catch (const Error& e) {
    bool configured = !registry.settings().device.empty() || !registry.config().default_device.empty();
    if (configured) throw Error(ErrorCode::config_error, e.what());
    throw;
  }
}

}  // namespace kiln::cli
