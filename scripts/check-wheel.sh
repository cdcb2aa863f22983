#!/usr/bin/env bash
# check-wheel.sh - build the wheel with `pip wheel .` (scikit-build-core; the build tree is
# build-wheel/, reused by the next run), install it into a fresh venv outside the repository and
# run the one-liner there, with no KILN_* variable: the backends must be found beside the package.
# Then the Python tests against the installed package. Minutes on 2 cores for a first build, so not
# a ctest entry.
#
# Usage: scripts/check-wheel.sh [WORKDIR]   (default: a temporary directory, removed afterwards)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-}"
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
py="${PYTHON:-python3}"

"$py" -m venv "$work/build-venv"
"$work/build-venv/bin/pip" wheel --disable-pip-version-check -q "$here" -w "$work/wheelhouse"
wheel="$(ls "$work"/wheelhouse/kiln-*.whl)"
echo "check-wheel: built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

"$py" -m venv "$work/venv"
"$work/venv/bin/pip" install --disable-pip-version-check -q "$wheel"
cd "$work"  # not the repository: nothing there may shadow the installed package
out="$(env -u KILN_BACKENDS -u KILN_BACKEND_PATH -u PYTHONPATH "$work/venv/bin/python" -c \
  "import kiln; print(kiln.Tensor([1,2]).sum().item())")"
echo "check-wheel: import kiln; print(kiln.Tensor([1,2]).sum().item()) -> $out"
[ "$out" = "3" ]
env -u PYTHONPATH "$work/venv/bin/python" -c "import kiln; print('check-wheel: devices', kiln.devices(), 'from', kiln.__file__)"

"$work/venv/bin/pip" install --disable-pip-version-check -q -r "$here/frontends/python/requirements-dev.txt"
env -u KILN_BACKENDS -u KILN_BACKEND_PATH -u PYTHONPATH "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$here/frontends/python/tests"
echo "check-wheel: OK"
