# scripts/lib/python_build.sh - sourced by the scripts that run a peer suite against the build's
# Python package (peer-tests.sh, onnx-suite.sh): sets `build` to the build tree (KILN_BUILD,
# default ./build) as an absolute path and checks that the kiln module is built there. The caller
# defines die(); check_python_matches PY checks a venv's interpreter against the module.
build="${KILN_BUILD:-$PWD/build}"
[ -d "$build" ] || die "no kiln build at $build (set KILN_BUILD; configure and build with: cmake -S . -B build -G Ninja && ninja -C build _kiln kiln_cpu)"
build="$(cd "$build" && pwd)"
ext="$(ls "$build"/python/kiln/_kiln*.so 2>/dev/null | head -n1 || true)"
[ -n "$ext" ] || die "the kiln Python module is not built in $build/python/kiln (run: ninja -C $build _kiln kiln_cpu)"

# The extension is built for one Python: the venv's interpreter ($1) must be that Python
# (cpython-311 -> 3.11).
check_python_matches() {
  local want have
  want="$(basename "$ext" | sed -n 's/.*cpython-\([0-9]\)\([0-9]*\)-.*/\1.\2/p')"
  have="$("$1" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  [ -z "$want" ] || [ "$want" = "$have" ] \
    || die "$(basename "$ext") is built for Python $want but $1 is Python $have (use a venv of Python $want)"
}
