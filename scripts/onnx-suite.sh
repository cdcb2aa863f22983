#!/usr/bin/env bash
# onnx-suite.sh - run the node tests of the `onnx` wheel (pinned: onnx 1.22.0 ships 1765 of them,
# opsets up to 27) with onnx's own runner, onnx.backend.test.BackendTest, against a kiln build's
# Python package through kiln.onnx.backend; prints passed/failed/skipped and the pass rate. Outside
# CI: it needs the onnx wheel from PyPI. (ctest grades Debian's older set of 932 node tests with the
# C++ runner tests/onnx/node_suite_test.cpp; this is the newer set, through the Python side.)
#
# Usage: scripts/onnx-suite.sh [--report FILE | --report=FILE] [pytest args, e.g. -k "conv or pool"]
#   --report FILE     also write the counts and every failing test with a one-line reason, grouped by
#                     reason (missing operators listed per operator), to FILE (Markdown)
# Environment:
#   KILN_BUILD        the kiln build tree whose python/ holds the package (default ./build); build it
#                     first: ninja -C "$KILN_BUILD" _kiln kiln_cpu (a build that found libonnx-dev)
#   ONNX_VENV         the venv with onnx, numpy and pytest (default $KILN_BUILD/onnx-venv; created on first
#                     use with python3 -m venv and pip install onnx==1.22.0 numpy pytest)
#   ONNX_TEST_TIMEOUT seconds one test may run before it fails as a timeout (default 120, 0 = none)
#   ONNX_SUITE_DEVICE a kiln device to run the tests on instead of onnx's "CPU" (cpu:0), e.g. opencl:0
# A test that crashes or hangs the process is recorded as such and the run goes on with the next
# (scripts/onnx/suite_plugin.py). Exit status: 0 when every test passed, 1 when some failed, 2 when
# the run itself failed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
onnx_version=1.22.0

die() { echo "onnx-suite: $*" >&2; exit 2; }

report=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --report) [ $# -ge 2 ] || die "--report needs a FILE"; report="$2"; shift ;;
    --report=*) report="${1#--report=}" ;;
    *) args+=("$1") ;;
  esac
  shift
done
[ -z "$report" ] || [[ "$report" = /* ]] || report="$PWD/$report"

# shellcheck source=lib/python_build.sh
source "$here/scripts/lib/python_build.sh"  # sets build (absolute) and checks the module

# ---- the venv with the pinned onnx ----
venv="${ONNX_VENV:-$build/onnx-venv}"
py="$venv/bin/python"
if [ ! -x "$py" ]; then
  echo "onnx-suite: creating $venv with onnx==$onnx_version, numpy, pytest" >&2
  "${PYTHON:-python3}" -m venv "$venv" || die "could not create the venv $venv"
  "$venv/bin/pip" install --disable-pip-version-check -q "onnx==$onnx_version" numpy pytest \
    || die "could not install onnx==$onnx_version numpy pytest into $venv"
fi
have_onnx="$("$py" -c 'import onnx, numpy, pytest; print(onnx.__version__)' 2>/dev/null)" \
  || die "$py cannot import onnx, numpy and pytest (install them, or point ONNX_VENV at a venv that has them)"
[ "$have_onnx" = "$onnx_version" ] \
  || echo "onnx-suite: warning: $venv has onnx $have_onnx, not the pinned $onnx_version (the counts are not comparable)" >&2
check_python_matches "$py"
PYTHONPATH="$build/python" "$py" -c 'import kiln.onnx' 2>/dev/null \
  || die "$build's kiln has no kiln.onnx: $(PYTHONPATH="$build/python" "$py" -c 'import kiln.onnx' 2>&1 | tail -n1)"

# ---- run: pytest again after a crash, skipping the tests that have an outcome ----
work="$build/onnx-suite"
rm -rf "$work"
mkdir -p "$work/run"
cp "$here/scripts/onnx/node_suite.py" "$work/run/"
results="$work/results.tsv"
: >"$results"
export ONNX_SUITE_RESULTS="$results" PEER_TEST_TIMEOUT="${ONNX_TEST_TIMEOUT:-120}" PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$here/scripts/onnx:$here/scripts/peer:$build/python${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
restarts=0
while :; do
  set +e
  # in $work/run: nothing of the repository beside the test may shadow the packages
  (cd "$work/run" && "$py" -m pytest node_suite.py -q --tb=no -p suite_plugin -p kiln_peer_plugin -p no:cacheprovider \
     ${args[@]+"${args[@]}"} 2>&1) | tee -a "$work/pytest.log"
  rc=${PIPESTATUS[0]}
  set -e
  # a test that started and has no outcome: the process died in it (a crash, or faulthandler's exit on a hang)
  dead="$(awk -F'\t' '{s[$1]=$2} END {for (n in s) if (s[n] == "started") print n}' "$results")"
  [ -n "$dead" ] || break
  why="exit status $rc"
  [ "$rc" -le 128 ] || why="signal $((rc - 128))"
  # faulthandler's exit on a hang writes "Timeout (h:mm:ss)!" and the stacks there
  if [ -s "$results.hang" ]; then
    why="a hang: ended after twice ONNX_TEST_TIMEOUT; stacks in $work/hangs.log"
    cat "$results.hang" >>"$work/hangs.log"
    : >"$results.hang"
  fi
  printf '%s\tfailed\tcrash: the process died in this test (%s; output in %s)\n' "$dead" "$why" "$work/pytest.log" >>"$results"
  echo "onnx-suite: $dead crashed the process ($why); going on with the rest" >&2
  restarts=$((restarts + 1))
  [ $restarts -le 200 ] || die "more than 200 crashes; giving up (see $work/pytest.log)"
done
secs=$(( $(date +%s) - start ))
[ -s "$results" ] || die "pytest ran no test (exit $rc; see $work/pytest.log)"
echo "onnx-suite: ${secs}s, $restarts restart(s) after a crash"

summ=("$py" "$here/scripts/onnx/summarize.py" "$results" --debian /usr/share/libonnx-testdata/data/node
      --known "$here/tests/onnx/unsupported.txt")
if [ -n "$report" ]; then
  mkdir -p "$(dirname "$report")"
  filter=""
  [ ${#args[@]} -eq 0 ] || filter=" pytest args: \`${args[*]}\`."
  note="Generated by scripts/onnx-suite.sh (onnx $have_onnx, device ${ONNX_SUITE_DEVICE:-cpu:0}, kiln $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d), ${secs}s).$filter"
  summ+=(--report "$report" --note "$note")
fi
"${summ[@]}"
! grep -q $'\tfailed\t' "$results" || exit 1
