// tools/kiln/cmd_demo.cpp - `kiln demo`: simplify a small index expression (a smoke test of the IR).
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "ir/print.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln::cli {

int run_demo(const std::vector<std::string>& args) {
  po::options_description options("kiln demo options");
  po::variables_map vm;
  if (!parse_args(args, options, {}, vm, "kiln demo", "")) return kOk;
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 3);
  UOp e = (x * 4 + y).idiv(4) + (x * 4 + y).mod(4) * 0 + UOp::cint(dtypes::index, 2) * 3;
  std::printf("expression:  %s\nsimplified:  %s\n", render_expr(e).c_str(), render_expr(simplify(e)).c_str());
  return kOk;
}

}  // namespace kiln::cli
