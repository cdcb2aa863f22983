// tests/cli/run_cli.hpp - run the built `kiln` binary in a clean environment; capture everything.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "json_check.hpp"

namespace kiln::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs KILN_CLI_PATH with `args`. The child's environment holds only PATH, HOME and XDG_* (both
// pointing at an empty directory, so no user configuration or manifests leak in) plus `env`.
CliResult run_kiln(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});

#ifdef KILN_FIXTURE_MANIFESTS
// A file of the plugin tests' fixture manifest directory (tests/plugins/manifests, configured).
inline std::string fixture(const std::string& name) { return std::string(KILN_FIXTURE_MANIFESTS) + "/" + name; }
#endif

}  // namespace kiln::test

#ifndef EXPECT_CONTAINS
#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in:\n" << (haystack)
#endif
#define EXPECT_JSON(text)                                                                \
  do {                                                                                   \
    std::string why;                                                                     \
    EXPECT_TRUE(::kiln::test::is_valid_json(text, &why)) << why << "\n" << (text);      \
  } while (0)
