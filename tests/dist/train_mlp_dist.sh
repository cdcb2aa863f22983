#!/usr/bin/env bash
# tests/dist/train_mlp_dist.sh - data parallelism changes nothing but the speed: the example's loss
# curve on NP ranks (each rank a share of every batch, gradients averaged) equals the 1-rank curve
# on the whole batch within float tolerance (the sums are grouped differently: |a-b| <= 1e-3|a| +
# 1e-6), and every rank ends with rank 0's weights bit for bit (the example checks and prints it).
#   train_mlp_dist.sh NP STEPS MPIEXEC [MPIEXEC FLAGS...] -- PROGRAM [ARGS...]
# (PROGRAM ARGS: the C++ example, or a Python and examples/python/train_mlp_dist.py)
set -euo pipefail
np=$1 steps=$2
shift 2
launcher=()
while [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
one=$("$@" --steps "$steps")
many=$("${launcher[@]}" -np "$np" "$@" --steps "$steps")
printf '%s\n--- %s ranks ---\n%s\n' "$one" "$np" "$many"
for out in "$one" "$many"; do
  grep -q "weights: bit-identical on all" <<<"$out" || { echo "FAILED: no bit-identical weights line"; exit 1; }
done
paste <(grep -o 'loss [-+0-9.e]*' <<<"$one") <(grep -o 'loss [-+0-9.e]*' <<<"$many") | awk -v np="$np" '
  { n++; a = $2; b = $4; d = a - b; if (d < 0) d = -d; t = 1e-3 * (a < 0 ? -a : a) + 1e-6
    if (b == "" || d > t) { printf "FAILED: loss %d: 1 rank %s, %s ranks %s\n", n, a, np, b; bad = 1 } }
  END { if (n < 2) { print "FAILED: too few losses"; exit 1 } if (bad) exit 1; printf "%d losses agree\n", n }'
