// tests/cli/run_cli.hpp - run the built `kiln` binary in a clean environment; capture everything.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace kiln::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs KILN_CLI_PATH with `args`. The child's environment holds only PATH, HOME and XDG_* (both
// pointing at an empty directory, so no user configuration or manifests leak in) plus `env`.
CliResult run_kiln(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});

// A strict JSON well-formedness check (RFC 8259 grammar); `error` says where it failed.
bool is_valid_json(const std::string& text, std::string* error = nullptr);

}  // namespace kiln::test
