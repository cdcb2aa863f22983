#!/usr/bin/env bash
# peer-tests.sh - run tinygrad's own test suite for the Tensor (test/backend/test_ops.py: each test
# compares a forward and backward pass with torch) against a kiln build's Python package. Outside CI:
# torch is several GB.
#
# The suite runs unchanged; only its `import tinygrad` is swapped: scripts/peer/tinygrad is a small
# stand-in package that re-exports kiln's Tensor, Device and dtypes, with stand-ins for the helpers
# test_ops.py imports (getenv, DEBUG, DEV, IMAGE, Context, _to_np_dtype, NIRRenderer, Device[...]).
#
# Usage: scripts/peer-tests.sh [--report[=FILE]] [pytest args, e.g. -k "cumsum or topk" -x]
#   --report          also write the counts and every failing test with a one-line reason, grouped
#                     by reason, to docs/peer-tests.md (or FILE)
# Environment:
#   KILN_BUILD        the kiln build tree whose python/ holds the package (default ./build); build
#                     it first: ninja -C "$KILN_BUILD" _kiln kiln_cpu
#   PEER_VENV         a venv with torch, numpy and pytest to use as is (default "$KILN_BUILD/peer-venv",
#                     created on first use with the CPU build of torch: a large download)
#   TINYGRAD_TEST_OPS a local copy of test_ops.py to use instead of downloading the pinned one
#   TINYGRAD_COMMIT   the tinygrad commit whose test_ops.py is downloaded (default pinned below)
#   PEER_TEST_TIMEOUT seconds one test may run before it fails as a timeout (default 300, 0 = none)
# Exit status: pytest's (0 all passed, 1 some failed, 2+ the run itself failed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pinned=a9069c177a9da9cca18593edf55acd2e6073cca6
commit="${TINYGRAD_COMMIT:-$pinned}"

die() { echo "peer-tests: $*" >&2; exit 2; }

report=""
args=()
for a in "$@"; do
  case "$a" in
    --report) report="$here/docs/peer-tests.md" ;;
    --report=*) report="${a#--report=}"; [[ "$report" = /* ]] || report="$PWD/$report" ;;
    *) args+=("$a") ;;
  esac
done

build="${KILN_BUILD:-$PWD/build}"
[ -d "$build" ] || die "no kiln build at $build (set KILN_BUILD; configure and build with: cmake -S . -B build -G Ninja && ninja -C build _kiln kiln_cpu)"
build="$(cd "$build" && pwd)"
ext="$(ls "$build"/python/kiln/_kiln*.so 2>/dev/null | head -n1 || true)"
[ -n "$ext" ] || die "the kiln Python module is not built in $build/python/kiln (run: ninja -C $build _kiln kiln_cpu)"

# ---- the venv with torch ----
venv="${PEER_VENV:-$build/peer-venv}"
py="$venv/bin/python"
if [ ! -x "$py" ]; then
  [ -z "${PEER_VENV:-}" ] || die "PEER_VENV=$PEER_VENV has no bin/python"
  echo "peer-tests: creating $venv with torch (CPU build), numpy, pytest: a large download" >&2
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q --index-url https://download.pytorch.org/whl/cpu torch \
    || die "could not install torch into $venv"
  "$venv/bin/pip" install --disable-pip-version-check -q numpy pytest || die "could not install numpy/pytest into $venv"
fi
"$py" -c "import torch, numpy, pytest" 2>/dev/null \
  || die "$py cannot import torch, numpy and pytest (install them, or point PEER_VENV at a venv that has them)"
# the extension is built for one Python: the venv must be that Python (cpython-311 -> 3.11)
want="$(basename "$ext" | sed -n 's/.*cpython-\([0-9]\)\([0-9]*\)-.*/\1.\2/p')"
have="$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
[ -z "$want" ] || [ "$want" = "$have" ] \
  || die "$(basename "$ext") is built for Python $want but $py is Python $have (use a venv of Python $want)"

# ---- the suite: a local copy or the pinned commit's file, cached in the build tree ----
work="$build/peer-tests"
mkdir -p "$work/run"
if [ -n "${TINYGRAD_TEST_OPS:-}" ]; then
  [ -f "$TINYGRAD_TEST_OPS" ] || die "TINYGRAD_TEST_OPS=$TINYGRAD_TEST_OPS is not a file"
  cp "$TINYGRAD_TEST_OPS" "$work/run/test_ops.py"
  source_note="local copy $TINYGRAD_TEST_OPS"
else
  cached="$work/test_ops-$commit.py"
  if [ ! -s "$cached" ]; then
    url="https://raw.githubusercontent.com/tinygrad/tinygrad/$commit/test/backend/test_ops.py"
    echo "peer-tests: downloading $url" >&2
    curl -fsSL "$url" -o "$cached.part" || die "could not download $url (set TINYGRAD_TEST_OPS to a local copy)"
    mv "$cached.part" "$cached"
  fi
  cp "$cached" "$work/run/test_ops.py"
  source_note="tinygrad $commit"
fi

# ---- run ----
junit="$work/junit.xml"
rm -f "$junit"
start=$(date +%s)
set +e
(
  cd "$work/run"  # nothing of the repository beside the test may shadow the packages
  PYTHONPATH="$here/scripts/peer:$build/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
    "$py" -m pytest test_ops.py -q --tb=short -p kiln_peer_plugin -p no:cacheprovider --junitxml="$junit" -o junit_family=xunit1 \
    ${args[@]+"${args[@]}"}
)
rc=$?
set -e
secs=$(( $(date +%s) - start ))
echo "peer-tests: pytest exited $rc after ${secs}s"
crashed=""
[ $rc -le 128 ] || crashed="pytest died from signal $((rc - 128)) (a crash in kiln's module?)"
[ -s "$junit" ] || die "pytest wrote no results (exit $rc)${crashed:+: $crashed}; its output above ends at the test that was running"
[ -z "$crashed" ] || echo "peer-tests: warning: $crashed after writing its results (e.g. at interpreter exit)" >&2

summ=("$py" "$here/scripts/peer/summarize.py" "$junit")
if [ -n "$report" ]; then
  mkdir -p "$(dirname "$report")"
  filter=""
  [ ${#args[@]} -eq 0 ] || filter=" pytest args: \`${args[*]}\`."
  note="Generated by scripts/peer-tests.sh ($source_note, kiln $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d), ${secs}s).$filter"
  summ+=(--report "$report" --note "$note")
fi
"${summ[@]}"
exit $rc
