// tests/plugins/isolate_test.cpp - run_in_child: a crash, an exit or a hang in the child is a
// result for the caller, whatever else the child started.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "plugin/isolate.hpp"

using namespace kiln;

TEST(Isolate, ReturnsAndCrashesAreTold) {
  EXPECT_TRUE(run_in_child([] {}, 10).ok);
  ChildOutcome crash = run_in_child([] { raise(SIGSEGV); }, 10);
  EXPECT_FALSE(crash.ok);
  EXPECT_NE(crash.failure.find("SIGSEGV"), std::string::npos) << crash.failure;
  ChildOutcome hang = run_in_child([] { pause(); }, 0.5);
  EXPECT_FALSE(hang.ok);
  EXPECT_NE(hang.failure.find("did not answer"), std::string::npos) << hang.failure;
}

// The child starts a long-lived program, then crashes. The program must not inherit the child's
// end of the "done" pipe (close-on-exec): it would keep the pipe open, and the crash would be
// reported as a timeout once the deadline passed.
TEST(Isolate, ACrashIsToldWhileAProgramTheChildStartedRuns) {
  ChildOutcome crash = run_in_child(
      [] {
        if (fork() == 0) {
          execlp("sleep", "sleep", "20", static_cast<char*>(nullptr));
          _exit(127);
        }
        raise(SIGSEGV);
      },
      8);
  EXPECT_FALSE(crash.ok);
  EXPECT_NE(crash.failure.find("SIGSEGV"), std::string::npos) << crash.failure;
}
