// tests/common/golden.hpp - golden-text comparisons with an update switch.
//
// EXPECT_GOLDEN("ir/print_small", text) compares text with tests/golden/ir/print_small.txt.
// Run a test with KILN_UPDATE_GOLDEN=1 to (re)write the expectation files, then review the diff.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kiln::testing {

inline std::string golden_path(const std::string& name) { return std::string(KILN_GOLDEN_DIR) + "/" + name + ".txt"; }

inline ::testing::AssertionResult golden_matches(const std::string& name, const std::string& text) {
  std::string path = golden_path(name);
  const char* upd = std::getenv("KILN_UPDATE_GOLDEN");
  if (upd && *upd && std::string(upd) != "0") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return ::testing::AssertionSuccess();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ::testing::AssertionFailure() << "missing golden file " << path << " (run with KILN_UPDATE_GOLDEN=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str() == text) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "golden mismatch for " << path << "\n--- expected ---\n"
                                       << ss.str() << "\n--- actual ---\n"
                                       << text << "\n(run with KILN_UPDATE_GOLDEN=1 to accept)";
}

}  // namespace kiln::testing

#define EXPECT_GOLDEN(name, text) EXPECT_TRUE(::kiln::testing::golden_matches(name, text))
