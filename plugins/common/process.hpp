// plugins/common/process.hpp - run a program with stdin/stdout/stderr connected to pipes (the
// compilers the cpu, hip and opencl backends run; part of kiln_plugin_common).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln::plugins {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out, err;
};

// Runs argv[0] (searched in PATH), feeds `input` to its stdin and collects stdout and stderr
// (poll loop, so large outputs cannot deadlock). SIGPIPE from a child that exits early is
// swallowed. Throws sdk::Error: FAILED_PRECONDITION when the program cannot be found/started
// (the message names it and how to install or configure it), INTERNAL for pipe errors.
ProcessResult run_process(const std::vector<std::string>& argv, std::string_view input, const char* missing_hint);

}  // namespace kiln::plugins
