#!/usr/bin/env bash
# dev.sh - the two set-up commands of the README, and a few helpers around them.
#
#   ./dev.sh run     install what is missing, build, run the examples on the default device
#   ./dev.sh test    install what is missing, build (warnings are errors), run every test, then
#                    the conformance kit on the cpu and opencl backends under ASan/UBSan
#   ./dev.sh build   build only (no package check)
#   ./dev.sh bench   build, then `kiln bench` on the default device
#
# Environment: BUILD_DIR (default ./build; the sanitized build goes to $BUILD_DIR-asan), JOBS (default:
# nproc), KILN_SANITIZE (e.g. address,undefined).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BUILD_DIR:-$here/build}"
jobs="${JOBS:-$(nproc)}"

configure() {
  local werror="$1"
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DKILN_WERROR="$werror" -DKILN_SANITIZE="${KILN_SANITIZE:-}" >/dev/null
}

compile() { cmake --build "$build" -j "$jobs"; }

# The conformance kit's leak check (level 5, L5.leaks) only runs under AddressSanitizer: a
# sanitized build of the CLI and the in-tree backends (no tests, no benchmarks; warnings are not
# errors there), then `kiln test` on the backends that can run here.
sanitized_conformance() {
  local asan="${build}-asan"
  cmake -S "$here" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=OFF \
    -DKILN_SANITIZE=address,undefined -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF >/dev/null
  cmake --build "$asan" -j "$jobs"
  env -u KILN_BACKENDS LSAN_OPTIONS="suppressions=$here/tests/opencl/lsan.supp" "$asan/tools/kiln/kiln" test cpu opencl
}

cmd="${1:-}"
case "$cmd" in
  run)
    "$here/scripts/setup-deps.sh"
    configure OFF && compile
    "$build/tools/kiln/kiln" devices
    "$build/examples/mlp"        # an MLP forward pass, checked against plain C++, with per-kernel times
    "$build/examples/softmax"
    ;;
  test)
    "$here/scripts/setup-deps.sh"
    configure ON && compile
    ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900
    sanitized_conformance
    ;;
  build)
    configure OFF && compile
    ;;
  bench)
    configure OFF && compile
    shift
    "$build/tools/kiln/kiln" bench "$@"
    ;;
  *)
    sed -n '2,10p' "$0"
    exit 2
    ;;
esac
