// tools/kiln/main.cpp - the `kiln` command line: global options and the subcommand table.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli.hpp"
#include "commands.hpp"

using namespace kiln::cli;

namespace {

// Add a subcommand: one cmd_<name>.cpp file, one line here.
const Command kCommands[] = {
    {"list", "every backend found, its status and devices", &run_list},
    {"devices", "one line per usable device", &run_devices},
    {"info", "everything about one backend (diagnosis)", &run_info},
    {"config", "the effective configuration and where each value came from", &run_config},
    {"demo", "simplify a small index expression", &run_demo},
    {"bench", "workload sets (the eight peer workloads, --sizes, --set extra): times and % of peak", &run_bench},
    {"beam", "beam-search the optimisation actions of a workload's kernels on a device (KILN_BEAM)", &run_beam},
    {"compile", "render and compile kernels for a device or an offline target", &run_compile},
    {"test", "the conformance kit on backend plugins (each in a child process)", &run_test},
    {"run", "run an ONNX model: its outputs' checksums, first and steady times", &run_run},
};

void usage(std::FILE* out) {
  std::fprintf(out, "usage: kiln [--version] [--help] <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n`kiln <command> --help` shows a command's options.\n\n"
               "examples:\n"
               "  kiln list                       # backends and their devices\n"
               "  kiln list -v                    # ... with the manifest search path and options\n"
               "  kiln devices --json             # usable devices, machine-readable\n"
               "  kiln info cpu                   # why a backend is (not) usable\n"
               "  kiln bench --only matmul512     # time a workload against its reference\n"
               "  kiln bench --sizes              # matmul over sizes, %% of peak and of the best size\n"
               "  kiln beam --width 4 matmul1024  # search the kernels' actions, remember the fastest\n"
               "  kiln test opencl --level 3      # conformance of a backend plugin\n"
               "  kiln run model.onnx --jit       # an ONNX model on random inputs: checksums and times\n"
               "  kiln compile --backend hip --arch gfx1100 --workload matmul256 -o out/   # offline AMDGPU code objects\n"
               "  kiln compile --backend cuda --arch sm_90 --workload matmul256 -o out/    # offline PTX\n"
               "  KILN_BACKENDS=build/share/kiln/backends.d/cpu.toml kiln list   # one manifest only\n\n"
               "environment: KILN_DEVICE, KILN_CONFIG, KILN_BACKENDS, KILN_BACKEND_PATH, KILN_DEBUG, KILN_PROBE_TIMEOUT\n"
               "exit codes: 0 ok, 1 failure, 2 usage error, 3 configuration error\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return kUsage;
  }
  const char* first = argv[1];
  if (!std::strcmp(first, "--help") || !std::strcmp(first, "-h") || !std::strcmp(first, "help")) {
    usage(stdout);
    return kOk;
  }
  if (!std::strcmp(first, "--version")) {
    std::printf("kiln %s (plugin ABI %s)\n", KILN_VERSION, abi_version().c_str());
    return kOk;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(first, c.name) != 0) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    int exit = kFailure;
    std::string message;
    try {
      return c.run(args);
    } catch (const UsageError& e) {
      exit = kUsage, message = e.what();
    } catch (const kiln::Error& e) {
      exit = e.code() == kiln::ErrorCode::config_error ? kConfigError : kFailure, message = e.what();
    } catch (const std::exception& e) {
      message = e.what();
    }
    std::fprintf(stderr, "kiln %s: %s\n", c.name, message.c_str());
    // Commands print their document at the end, so a failure before it leaves stdout empty: a
    // caller that asked for JSON still gets a document, saying what went wrong.
    if (std::find(args.begin(), args.end(), "--json") != args.end()) {
      Json doc = Json::object();
      doc.set("schema_version", 1);
      doc.set("error", Json(Json::Object{{"command", c.name}, {"message", message}, {"exit_code", exit}}));
      std::printf("%s\n", doc.dump().c_str());
    }
    return exit;
  }
  std::fprintf(stderr, "kiln: unknown command '%s'\n\n", first);
  usage(stderr);
  return kUsage;
}
