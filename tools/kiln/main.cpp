// tools/kiln/main.cpp - the kiln command line (grows with the plugin issue).
#include <cstdio>
#include <cstring>
#include <string>

#include "ir/print.hpp"
#include "symbolic/symbolic.hpp"

using namespace kiln;

static int demo() {
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 3);
  UOp e = (x * 4 + y).idiv(4) + (x * 4 + y).mod(4) * 0 + UOp::cint(dtypes::index, 2) * 3;
  std::printf("expression:  %s\nsimplified:  %s\n", render_expr(e).c_str(), render_expr(simplify(e)).c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--version")) {
    std::printf("kiln 0.1.0\n");
    return 0;
  }
  if (argc > 1 && !std::strcmp(argv[1], "demo")) return demo();
  std::fprintf(stderr, "usage: kiln --version | demo\n");
  return 2;
}
