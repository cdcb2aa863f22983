// tools/kiln/cmd_info.cpp - `kiln info NAME`: everything known about one backend, for diagnosis.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"

namespace kiln::cli {
namespace {

void print_device(const Device& d) {
  const DeviceProps& p = d.props();
  const Target& t = d.target();
  std::printf("device %s:\n", d.name().c_str());
  std::printf("  name:           %s\n", terminal_safe(p.name).c_str());
  std::printf("  description:    %s\n", terminal_safe(p.description).c_str());
  std::printf("  kind:           %s\n", kind_name(p.kind));
  std::printf("  arch:           %s\n", terminal_safe(p.arch).c_str());
  std::printf("  features:       %s\n", p.features.empty() ? "-" : terminal_safe(p.features).c_str());
  std::printf("  compute units:  %u\n", p.compute_units);
  std::printf("  memory:         %s total, %s free\n", human_bytes(p.memory_total).c_str(),
              p.memory_free ? human_bytes(p.memory_free).c_str() : "unknown");  // the ABI's 0 = unknown
  std::printf("  thread-safe:    %s\n", d.threadsafe() ? "yes" : "no (calls are serialised)");
  std::printf("  renderer:       %s\n", d.has_renderer() ? "yes" : "no (the core renders source)");
  std::printf("  device copy:    %s\n", d.has_device_copy() ? "yes" : "no");
  std::string flags;
  if (t.has(KILN_TARGET_HAS_LOCAL)) flags += " local";
  if (t.has(KILN_TARGET_HAS_SHARED)) flags += " shared";
  if (t.has(KILN_TARGET_HAS_THREADS)) flags += " threads";
  if (t.has(KILN_TARGET_HAS_FMA)) flags += " fma";
  std::printf("  target:\n    flags:        %s\n", flags.empty() ? "-" : flags.c_str() + 1);
  std::printf("    threads:      %u\n", t.threads);
  std::printf("    global max:   %u %u %u\n", t.global_max[0], t.global_max[1], t.global_max[2]);
  std::printf("    local max:    %u %u %u (product %u)\n", t.local_max[0], t.local_max[1], t.local_max[2],
              t.local_prod_max);
  std::printf("    vector width: %u\n", t.max_vector_width);
  std::printf("    shared mem:   %s\n", human_bytes(t.shared_max).c_str());
  if (t.has(KILN_TARGET_HAS_THREADS))  // the ABI's 0 = unknown: the heuristics assume a common core's
    std::printf("    caches:       L1d %s, L2 %s per core\n", t.l1d_bytes ? human_bytes(t.l1d_bytes).c_str() : "unknown",
                t.l2_bytes ? human_bytes(t.l2_bytes).c_str() : "unknown");
  if (t.has(KILN_TARGET_HAS_THREADS))  // (0 = unknown: the heuristics assume an x86-64 core of that width)
    std::printf("    vector unit:  %s registers, %s FMA pipes\n",
                t.vector_registers ? std::to_string(t.vector_registers).c_str() : "unknown",
                t.fma_pipes ? std::to_string(t.fma_pipes).c_str() : "unknown");
  std::string dtypes, missing;
  for (uint32_t x = 1; x < KILN_LIR_DTYPE_COUNT; ++x) (t.supports_dtype(x) ? dtypes : missing) += " " + lir_dtype_name(x);
  std::printf("    dtypes:      %s%s\n", dtypes.c_str(), missing.empty() ? "" : ("  (not:" + missing + ")").c_str());
  std::string stored;
  for (uint32_t x = 1; x < KILN_LIR_DTYPE_COUNT; ++x)
    if (t.stores_dtype(x)) stored += " " + lir_dtype_name(x);
  if (!stored.empty())  // the rest of the missing half types are emulated with 16-bit integers
    std::printf("    stored:      %s  (loaded, stored and converted natively; computed in float32)\n", stored.c_str());
  int n_ops = 0;
  std::string missing_ops;
  for (uint32_t o = 1; o < KILN_LIR_OP_COUNT; ++o) {
    if (t.supports_op(o)) ++n_ops;
    else missing_ops += " " + lir_op_name(o);
  }
  std::printf("    LIR ops:      %d of %u%s\n", n_ops, KILN_LIR_OP_COUNT - 1,
              missing_ops.empty() ? "" : ("  (not:" + missing_ops + ")").c_str());
  std::printf("    source:       %s\n", t.source_format.empty() ? "-" : terminal_safe(t.source_format).c_str());
}

}  // namespace

int run_info(const std::vector<std::string>& args) {
  po::options_description options("kiln info options");
  options.add_options()("name", po::value<std::string>(), "backend name (or a device, e.g. cpu:0)")(
      "json", "machine-readable output (schema_version 1)");
  po::positional_options_description positional;
  positional.add("name", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, "kiln info NAME [--json]", "  kiln info cpu\n  kiln info hip --json\n"))
    return kOk;
  if (!vm.count("name")) throw UsageError("which backend? give its NAME, e.g. kiln info cpu\nusage: kiln info NAME [--json]");
  bool json = vm.count("json") > 0;
  std::string name = vm["name"].as<std::string>();
  std::string backend = name.substr(0, name.find(':'));
  Registry registry(cli_settings());
  const BackendRecord* r = nullptr;
  std::vector<std::shared_ptr<Device>> devices;
  std::string device_error;
  {
    StdoutToStderr quiet;
    r = registry.backend(backend);
    for (uint32_t i = 0; r && r->ok() && i < r->device_count; ++i) {
      try {
        devices.push_back(registry.open(r->name + ":" + std::to_string(i)));
      } catch (const std::exception& e) {
        device_error = e.what();
      }
    }
  }
  print_diagnostics(registry);
  Json doc = Json::object();
  doc.set("schema_version", 1);
  doc.set("core_abi", abi_version());
  if (!r) {
    std::string known;
    for (const BackendRecord& b : registry.known_backends()) known += (known.empty() ? "" : ", ") + b.name;
    std::string message = "no backend named '" + backend + "' (known: " + (known.empty() ? "none" : known) + ")";
    if (json) {
      doc.set("error", message);
      std::printf("%s\n", doc.dump().c_str());
    }
    std::fprintf(stderr, "kiln info: %s\n", message.c_str());
    return kFailure;
  }
  int exit = r->status == BackendStatus::config_error ? kConfigError
             : !r->ok() || !device_error.empty()      ? kFailure
                                                      : config_exit(registry);
  if (json) {
    doc.set("name", r->name);
    doc.set("status", status_name(r->status));
    doc.set("error", r->ok() && device_error.empty() ? Json() : Json(r->ok() ? device_error : r->reason));
    doc.set("manifest", r->manifest);
    doc.set("found_via", r->manifest_origin);
    doc.set("library", Json::string_or_null(r->library));
    doc.set("resolved_library", Json::string_or_null(r->library_path));
    doc.set("manifest_abi", Json::string_or_null(r->abi));
    doc.set("plugin_abi", Json::string_or_null(r->plugin_abi));
    doc.set("version", Json::string_or_null(r->version));
    doc.set("priority", r->priority);
    doc.set("enabled", r->enabled);
    doc.set("probe", Json(Json::Object{{"score", r->probe_score}, {"reason", r->probe_reason}}));
    Json opts = Json::array();
    for (const OptionEntry& o : r->options)
      opts.push(Json(Json::Object{{"key", o.key}, {"value", o.value}, {"origin", o.origin}}));
    doc.set("options", opts);
    doc.set("diagnostics", diagnostics_json(r->diagnostics));
    Json devs = Json::array();
    for (const auto& d : devices) {
      Json j = device_json(*d);
      j.set("target", target_json(d->target()));
      devs.push(j);
    }
    doc.set("devices", devs);
    std::printf("%s\n", doc.dump().c_str());
    return exit;
  }
  std::printf("backend:        %s\n", r->name.c_str());
  std::printf("status:         %s\n", status_name(r->status));
  if (!r->reason.empty()) std::printf("reason:         %s\n", terminal_safe(r->reason).c_str());
  std::printf("manifest:       %s (via %s)\n", r->manifest.c_str(), r->manifest_origin.c_str());
  std::printf("library:        %s\n", r->library.empty() ? "-" : r->library.c_str());
  std::printf("resolved:       %s\n", r->library_path.empty() ? "-" : r->library_path.c_str());
  std::printf("abi:            manifest %s, plugin %s, core %s\n", r->abi.empty() ? "-" : r->abi.c_str(),
              r->plugin_abi.empty() ? "-" : r->plugin_abi.c_str(), abi_version().c_str());
  std::printf("version:        %s\n", r->version.empty() ? "-" : terminal_safe(r->version).c_str());
  std::printf("description:    %s\n", r->description.empty() ? "-" : terminal_safe(r->description).c_str());
  std::printf("priority:       %lld\n", static_cast<long long>(r->priority));
  std::printf("enabled:        %s (%s)\n", r->enabled ? "yes" : "no", r->enabled_origin.c_str());
  if (r->probe_score || !r->probe_reason.empty())
    std::printf("probe:          score %d: %s\n", r->probe_score, terminal_safe(r->probe_reason).c_str());
  std::printf("options:%s\n", r->options.empty() ? "        (none)" : "");
  for (const OptionEntry& o : r->options)
    std::printf("  %s = %s    (%s)\n", o.key_toml.c_str(), o.value.c_str(), o.origin.c_str());
  std::printf("devices:        %u\n", r->device_count);
  for (const auto& d : devices) print_device(*d);
  if (!device_error.empty()) std::fprintf(stderr, "kiln info: %s\n", terminal_safe(device_error).c_str());
  return exit;
}

}  // namespace kiln::cli
