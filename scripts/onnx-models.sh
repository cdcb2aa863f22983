#!/usr/bin/env bash
# onnx-models.sh - real models on kiln against onnxruntime (issue 46): ResNet-18, MobileNetV2, a
# BERT-style encoder and a GPT-2-style decoder with random weights, exported from torch at opset 17
# (static shapes, once per batch size), run with kiln and with onnxruntime (CPU, 2 threads) on the
# same inputs; the outputs must agree (rtol 1e-3) and the first and steady times are printed side
# by side. Outside CI: torch is a large download. scripts/onnx/models.py says what is measured.
#
# Usage: scripts/onnx-models.sh [--models resnet18,mobilenet_v2,bert,gpt2] [--batches 1,8]
#                               [--iters N] [--profile] [--json FILE] [--markdown FILE]
# Environment:
#   KILN_BUILD        the kiln build tree (default ./build); kiln_onnx_bench is built in it
#   ONNX_MODELS_VENV  a venv with torch, torchvision, onnx, onnxruntime and numpy (default
#                     "$KILN_BUILD/onnx-venv", created on first use; what is missing is installed)
#   ONNX_MODELS_CACHE the exported models and their inputs (default ~/.cache/kiln/onnx-models)
# Exit status: 0 when every model ran on kiln and agreed with onnxruntime, 1 otherwise, 2 setup.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "onnx-models: $*" >&2; exit 2; }

build="${KILN_BUILD:-$here/build}"
[ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] || die "no kiln build tree at $build (configure one, or set KILN_BUILD)"
cmake --build "$build" --target kiln_onnx_bench kiln_cpu >/dev/null \
  || die "could not build kiln_onnx_bench in $build (kiln::onnx needs libonnx-dev and libprotobuf-dev)"
bench="$build/bench/kiln_onnx_bench"

venv="${ONNX_MODELS_VENV:-$build/onnx-venv}"
py="$venv/bin/python"
if [ ! -x "$py" ]; then
  echo "onnx-models: creating $venv (torch's CPU build, torchvision, onnx, onnxruntime, numpy): a large download" >&2
  "${PYTHON:-python3}" -m venv "$venv" || die "could not create a venv at $venv"
fi
if ! "$py" -c "import torch" 2>/dev/null; then
  "$venv/bin/pip" install --disable-pip-version-check -q --index-url https://download.pytorch.org/whl/cpu torch torchvision \
    || die "could not install torch into $venv"
fi
for mod in torchvision onnx onnxruntime numpy; do
  if ! "$py" -c "import $mod" 2>/dev/null; then
    # torchvision's wheel must match the torch already there; --no-deps keeps pip from replacing it.
    extra=(); [ "$mod" = torchvision ] && extra=(--no-deps pillow)
    "$venv/bin/pip" install --disable-pip-version-check -q "$mod" "${extra[@]}" || die "could not install $mod into $venv"
  fi
done

export ONNX_MODELS_CACHE="${ONNX_MODELS_CACHE:-$HOME/.cache/kiln/onnx-models}"
exec "$py" "$here/scripts/onnx/models.py" --kiln-bench "$bench" --cache "$ONNX_MODELS_CACHE" "$@"
