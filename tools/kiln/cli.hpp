// tools/kiln/cli.hpp - what the `kiln` subcommands share: exit codes, argument parsing,
// diagnostics, formatting. Data goes to stdout, diagnostics to stderr.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "json.hpp"
#include "plugin/registry.hpp"

namespace kiln::cli {

namespace po = boost::program_options;

// Exit codes (documented in `kiln --help`).
enum Exit : int { kOk = 0, kFailure = 1, kUsage = 2, kConfigError = 3 };

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One subcommand: `kiln <name> ...`. `run` gets the arguments after the name.
struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

// Parses `args`. Returns false when --help was given (the help is printed; exit 0). Throws
// UsageError for unknown options or bad values.
bool parse_args(const std::vector<std::string>& args, po::options_description& options,
                const po::positional_options_description& positional, po::variables_map& vm, const std::string& usage,
                const std::string& examples);

// Discovery settings from the environment; the CLI prints diagnostics itself. Every backend is
// tried in a child process first (Settings::isolate_timeout_s; KILN_PROBE_TIMEOUT seconds,
// default 30), so a plugin that crashes, exits or hangs is a status, not the end of the command.
Settings cli_settings(bool load = true);

// While alive, whatever is written to stdout (a plugin's prints while it is loaded or a device
// opened) goes to stderr: stdout carries the command's data only, and --json stays parseable.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_;
};

// The default device, chosen like every other command chooses it: each backend tried in a child
// first, so a broken plugin elsewhere on the search path is a warning, not the end of the run. A
// KILN_DEVICE or devices.default naming nothing usable is a configuration error (exit 3).
std::string default_device_or_config_error();

// Exit code for the backends' state: 1 when one crashed, exited or hung while being probed.
int backends_exit(Registry& registry);

// Prints the user config's and every manifest's diagnostics to stderr (each once).
void print_diagnostics(Registry& registry);

// Exit code for a command that read the configuration: 3 when the user config is invalid.
int config_exit(Registry& registry);

std::string human_bytes(uint64_t bytes);              // "23.4 GiB"
std::string abi_version();                            // "0.1"
const char* kind_name(uint32_t kind);                 // "cpu", "gpu", "accelerator"
std::string lir_dtype_name(uint32_t dtype);           // "float32"
std::string lir_op_name(uint32_t op);                 // "ADD"

Json device_json(const Device& device);               // id, name, kind, arch, memory, ...
Json target_json(const Target& target);
Json diagnostics_json(const std::vector<Diagnostic>& diagnostics);

}  // namespace kiln::cli
