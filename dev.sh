#!/usr/bin/env bash
# dev.sh - the two set-up commands of the README, and a few helpers around them.
#
#   ./dev.sh run     install what is missing, build what the main job needs (CLI, backends,
#                    examples), run the examples on the default device
#   ./dev.sh test    install what is missing, build everything in the same tree (so after `run`
#                    only the tests and benchmarks are left to compile), run every test, then the
#                    conformance kit on the cpu and opencl backends and the ONNX loader's fuzzer
#                    under ASan/UBSan, and the threaded tests under ThreadSanitizer
#   ./dev.sh build   build only (no package check)
#   ./dev.sh bench   build, then `kiln bench` on the default device
#
# Environment: BUILD_DIR (default ./build; the sanitized builds go to $BUILD_DIR-asan and
# $BUILD_DIR-tsan), JOBS (default: nproc), KILN_SANITIZE (e.g. address,undefined), PYTHON (the
# interpreter of the venv, default python3).
#
# The Python package (frontends/python) is built in the same tree with the interpreter of a venv,
# $BUILD_DIR/venv, holding the pinned nanobind, numpy and pytest (requirements-dev.txt); without
# network or python3-venv the build goes on without it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BUILD_DIR:-$here/build}"
jobs="${JOBS:-$(nproc)}"

# run and test configure the tree alike (warnings are errors in both: the toolchain is the one
# setup-deps.sh installs, and one set of flags means `test` after `run` recompiles nothing).
configure() {
  local py=()
  python_venv && py=(-DPython_EXECUTABLE="$build/venv/bin/python")
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DKILN_WERROR=ON -DKILN_SANITIZE="${KILN_SANITIZE:-}" "${py[@]}" >/dev/null
}

# The venv the Python package builds and tests with; made once, remade when the pins change.
python_venv() {
  local venv="$build/venv" req="$here/frontends/python/requirements-dev.txt"
  if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/requirements-dev.txt"; then return 0; fi
  mkdir -p "$build"
  rm -rf "$venv"
  if "${PYTHON:-python3}" -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"; then
    cp "$req" "$venv/requirements-dev.txt"
    return 0
  fi
  rm -rf "$venv"
  echo "dev.sh: no Python venv (python3-venv missing or PyPI unreachable): building without the Python package" >&2
  return 1
}

compile() { cmake --build "$build" -j "$jobs" "$@"; }

# The conformance kit's leak check (level 5, L5.leaks) only runs under AddressSanitizer: a
# sanitized build of the CLI and the in-tree backends (no tests, no benchmarks; warnings are not
# errors there), then `kiln test` on the backends that can run here.
sanitized_conformance() {
  local asan="${build}-asan"
  cmake -S "$here" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=OFF \
    -DKILN_SANITIZE=address,undefined -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF -DKILN_BUILD_PYTHON=OFF >/dev/null
  cmake --build "$asan" -j "$jobs"
  env -u KILN_BACKENDS LSAN_OPTIONS="suppressions=$here/tests/opencl/lsan.supp" "$asan/tools/kiln/kiln" test cpu opencl
  # The ONNX loader on mutated models (built when ONNX's C++ package is found): a crash, a hang or
  # an error other than kiln::Error fails. A fixed seed, so a failure reruns with its --case.
  if [ -x "$asan/frontends/onnx/kiln_onnx_fuzz" ]; then
    env -u KILN_BACKENDS "$asan/frontends/onnx/kiln_onnx_fuzz" --seed 46 --iters 2000 --timeout 60 --max-seconds 150
  fi
}

# The tests that use threads under ThreadSanitizer, in a third tree: interning (test_ir), the
# cpu thread pool and concurrent launches (test_plugin_cpu, test_cpu_internals), the runtime's
# caches, realizing tensors from several threads on the reference device and on cpu:0, two cpu
# devices running at once, and backends loading on first use from several threads (only those cases of test_tensor,
# test_e2e_cpu and test_plugins: the rest of them takes minutes under TSan).
thread_sanitized_tests() {
  local tsan="${build}-tsan"
  cmake -S "$here" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=OFF \
    -DKILN_SANITIZE=thread -DKILN_BUILD_BENCH=OFF -DKILN_BUILD_PYTHON=OFF >/dev/null
  cmake --build "$tsan" -j "$jobs" --target test_ir test_plugin_cpu test_cpu_internals test_runtime test_tensor \
    test_e2e_cpu test_plugins kiln_cpu
  # GTEST_FILTER keeps each entry's ctest environment (manifests, configs) and picks the cases
  local run=(ctest --test-dir "$tsan" --output-on-failure --timeout 900)
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  "${run[@]}" -j "$jobs" -R '^(test_ir|test_plugin_cpu|test_cpu_internals|test_runtime)$'
  GTEST_FILTER='Threads.*' "${run[@]}" -R '^test_tensor$'
  GTEST_FILTER='CpuSweep.ConcurrentReads' "${run[@]}" -R '^test_e2e_cpu$'
  GTEST_FILTER='Threads.*' "${run[@]}" -R '^test_plugins$'
  "${run[@]}" -R '^test_e2e_cpu_devices$'  # two cpu devices: lanes on their own threads, all-reduces
}

cmd="${1:-}"
case "$cmd" in
  run)
    "$here/scripts/setup-deps.sh"
    configure && compile --target main_job
    "$build/tools/kiln/kiln" devices
    "$build/examples/mlp"        # an MLP classifying batches through a kiln::Jit, checked against plain C++, with per-kernel times
    "$build/examples/softmax"
    "$build/examples/train_mlp"  # trains a classifier (backward, Adam, a Jit per step); held-out accuracy about 99%
    if [ -f "$build/python/kiln/__init__.py" ]; then  # the Python package, from the build tree
      PYTHONPATH="$build/python" "$build/venv/bin/python" -c \
        "import kiln; print('python: kiln.Tensor([1,2]).sum().item() =', kiln.Tensor([1,2]).sum().item(), 'on', kiln.Device.DEFAULT)"
    fi
    ;;
  test)
    "$here/scripts/setup-deps.sh"
    configure && compile
    ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900
    sanitized_conformance
    thread_sanitized_tests
    ;;
  build)
    configure && compile
    ;;
  bench)
    configure && compile
    shift
    "$build/tools/kiln/kiln" bench "$@"
    ;;
  *)
    sed -n '2,14p' "$0"
    exit 2
    ;;
esac
