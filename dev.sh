#!/usr/bin/env bash
# dev.sh - the two set-up commands of the README, and a few helpers around them.
#
#   ./dev.sh run     install what is missing, build, run the examples on the default device
#   ./dev.sh test    install what is missing, build (warnings are errors), run every test
#   ./dev.sh build   build only (no package check)
#   ./dev.sh bench   build, then `kiln bench` on the default device
#
# Environment: BUILD_DIR (default ./build), JOBS (default: nproc), KILN_SANITIZE (e.g. address,undefined).
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
