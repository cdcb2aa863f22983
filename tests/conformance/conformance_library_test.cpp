// tests/conformance/conformance_library_test.cpp - the kit as a library inside a gtest harness,
// the way a plugin's own repository runs it: in a forked child, and in this process.
#include <gtest/gtest.h>

#include "kiln/conformance.hpp"

namespace kc = kiln::conformance;

// A crash in a child is a report, and the observer saw the test that crashed start.
TEST(ConformanceLibrary, IsolatedRunSurvivesACrash) {
  struct Seen : kc::Observer {
    std::vector<std::string> names;
    void started(const std::string& t) override { names.push_back(t); }
  } seen;
  kc::Options o;
  o.filter = "^L(0|2)\\.";
  kc::Report r = kc::run_isolated(KILN_CRASH_MANIFEST, o, &seen);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.crash, "SIGSEGV in L2.sizes");
  ASSERT_FALSE(seen.names.empty());
  EXPECT_EQ(seen.names.back(), "L2.sizes");
  EXPECT_EQ(r.count(kc::Status::failed), 1u);
}

// In this process (after the isolated run: a child inherits the registry a process has set up).
TEST(ConformanceLibrary, InProcessUpToTheAllocator) {
  kc::Options o;
  o.max_level = 2;
  kc::Report r = kc::run_in_process(KILN_CPU_MANIFEST, o);
  EXPECT_TRUE(r.ok()) << (r.tests.empty() ? "no tests" : r.tests.back().detail);
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_GT(r.count(kc::Status::passed), 10u);
  for (const kc::TestResult& t : r.tests) {
    EXPECT_LE(t.level, 2) << t.name;
    EXPECT_NE(t.status, kc::Status::failed) << t.name << ": " << t.detail;
  }
}
