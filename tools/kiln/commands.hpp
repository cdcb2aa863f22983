// tools/kiln/commands.hpp - the subcommands; each lives in its own cmd_*.cpp file.
#pragma once
#include <string>
#include <vector>

namespace kiln::cli {

int run_list(const std::vector<std::string>& args);
int run_devices(const std::vector<std::string>& args);
int run_info(const std::vector<std::string>& args);
int run_config(const std::vector<std::string>& args);
int run_demo(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_beam(const std::vector<std::string>& args);
int run_compile(const std::vector<std::string>& args);
int run_test(const std::vector<std::string>& args);
int run_run(const std::vector<std::string>& args);

}  // namespace kiln::cli
