// tests/conformance/conformance_cli_test.cpp - `kiln test` as users run it: a crashing plugin is a
// reported failure (exit 1) and the run goes on; a hanging one is killed after --timeout; a
// manifest that does not parse is exit 3 with file:line:col; level 0 catches printing and extra
// exports; --json stays valid through all of it.
#include <gtest/gtest.h>

#include "error_check.hpp"
#include "run_cli.hpp"

using kiln::test::CliResult;
using kiln::test::is_valid_json;
using kiln::test::run_kiln;

namespace {

std::string fixture(const std::string& name) { return std::string(KILN_FIXTURES) + "/" + name + ".toml"; }

}  // namespace

TEST(KilnTest, CpuPassesEveryLevelUpToTheKernels) {
  CliResult r = run_kiln({"test", "cpu", "--level", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "[       OK ] L0.exports");
  EXPECT_CONTAINS(r.out, "[       OK ] L3.matmul");
  EXPECT_CONTAINS(r.out, "cpu: ");
  EXPECT_CONTAINS(r.out, " passed, 0 failed");
  EXPECT_EQ(r.out.find("L4."), std::string::npos);  // --level 3
}

TEST(KilnTest, ACrashIsAFailureAndTheRunGoesOn) {
  CliResult r = run_kiln({"test", fixture("conformance_crash"), "cpu", "--level", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.out, "FAILED (SIGSEGV in L2.sizes)");
  EXPECT_CONTAINS(r.out, "[  FAILED  ] L2.sizes");
  EXPECT_CONTAINS(r.out, "cpu: ");  // the second plugin still ran
  EXPECT_CONTAINS(r.out, "[       OK ] L2.round_trip");
  CliResult j = run_kiln({"test", fixture("conformance_crash"), "--level", "2", "--json"});
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_JSON(j.out);
  EXPECT_CONTAINS(j.out, "\"crash\": \"SIGSEGV in L2.sizes\"");
}

TEST(KilnTest, AHangIsKilledAfterTheTimeout) {
  CliResult r = run_kiln({"test", fixture("conformance_hang"), "--timeout", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.out, "FAILED (timeout after 3 s in L1.props)");  // the first test that opens a device
}

TEST(KilnTest, AManifestThatDoesNotParseIsAConfigurationError) {
  CliResult r = run_kiln({"test", fixture("broken")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_CONTAINS(r.err, fixture("broken") + ":4:");  // file:line:col
  EXPECT_CONTAINS(r.err, "error:");
  CliResult j = run_kiln({"test", fixture("broken"), "--json"});
  EXPECT_EQ(j.exit_code, 3);
  EXPECT_JSON(j.out);
}

TEST(KilnTest, LevelZeroCatchesPrintingAndExtraExports) {
  CliResult r = run_kiln({"test", fixture("conformance_noisy")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.out, "[  FAILED  ] L0.exports");
  EXPECT_CONTAINS(r.out, "fixture_helper_that_leaked_out");
  EXPECT_CONTAINS(r.out, "[  FAILED  ] L0.quiet");
  EXPECT_CONTAINS(r.out, "level 0 (load) has failures");  // the higher levels did not run
}

TEST(KilnTest, FilterExpectedFailuresAndUsage) {
  CliResult r = run_kiln({"test", "cpu", "--filter", "^L2\\.(sizes|zeroed)$", "--xfail", "L2.zeroed=stale expectation"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "[       OK ] L2.sizes");
  EXPECT_CONTAINS(r.out, "[    XPASS ] L2.zeroed");
  EXPECT_EQ(r.out.find("L0.manifest"), std::string::npos);
  CliResult crash = run_kiln({"test", fixture("conformance_crash"), "--filter", "L2.round", "--xfail",
                              "L2\\.round_trip=the fixture crashes in every allocation"});
  EXPECT_EQ(crash.exit_code, 1);  // a crash is never an expected failure: the process died
  EXPECT_EQ(run_kiln({"test"}).exit_code, 2);
  EXPECT_EQ(run_kiln({"test", "cpu", "--level", "9"}).exit_code, 2);
  EXPECT_EQ(run_kiln({"test", "cpu", "--filter", "("}).exit_code, 2);
  EXPECT_EQ(run_kiln({"test", "cpu", "--xfail", "no-reason"}).exit_code, 2);
  // a pattern that is not a regular expression is the caller's mistake, caught before any child runs
  CliResult bad_xfail = run_kiln({"test", "cpu", "--level", "0", "--xfail", "(=a reason"});
  EXPECT_EQ(bad_xfail.exit_code, 2) << bad_xfail.out << bad_xfail.err;
  EXPECT_CONTAINS(bad_xfail.err, "--xfail '(' is not a regular expression");
  EXPECT_EQ(run_kiln({"test", "cpu", "--timeout", "0"}).exit_code, 2);
  EXPECT_EQ(run_kiln({"test", "cpu", "--timeout", "-1"}).exit_code, 2);
  CliResult unknown = run_kiln({"test", "nope"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.err, "no backend named 'nope'");
}

// A plugin claiming absurd caps (here a vector width of 10^6, once accepted) fails L1.target,
// which says what the bound is and why.
TEST(KilnTest, ImplausibleTargetCapsFailLevelOne) {
  CliResult r = run_kiln({"test", fixture("conformance_caps"), "--level", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "[  FAILED  ] L1.target");
  EXPECT_CONTAINS(r.out, "max_vector_width 1000000 is not one of 1, 2, 4, ..., 64");
}

// Cache sizes in KiB where bytes are due (48 for a 48 KiB L1d) would size every staged panel a
// thousand times too small: L1.target names the field and the unit.
TEST(KilnTest, CacheSizesThatAreNotBytesFailLevelOne) {
  CliResult r = run_kiln({"test", fixture("conformance_caches"), "--level", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "[  FAILED  ] L1.target");
  EXPECT_CONTAINS(r.out, "l1d_bytes 48 is not 0 (unknown) or 1 KiB..1 GiB (the field is in bytes)");
}

// The vector unit the heuristics size register tiles by: an implausible register count would
// plan tiles no core holds, so L1.target names the field and its range.
TEST(KilnTest, AnImplausibleVectorUnitFailsLevelOne) {
  CliResult r = run_kiln({"test", fixture("conformance_vector"), "--level", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "[  FAILED  ] L1.target");
  EXPECT_CONTAINS(r.out, "vector_registers 4096 is not 0 (unknown) or 1..256");
}
