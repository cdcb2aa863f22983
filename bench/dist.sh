#!/usr/bin/env bash
# The kiln::dist benchmarks of issue 49 (bench/dist_bench.cpp) under `mpirun -np 2` on this machine,
# one one-thread cpu device per rank: all_reduce of 4-64 MiB float32 next to a bare MPI_Allreduce of
# the same bytes in the same run, and a data-parallel training step next to the rank's step on its
# half of the batch without the all-reduce. Usage: bench/dist.sh [build-dir] [repetitions]
# MPIRUN_FLAGS replaces the launcher flags (these run as root, without ssh, in a container).
set -euo pipefail
build=${1:-build}
reps=${2:-15}
bin=$build/bench/bench_dist
[ -x "$bin" ] || { echo "bench/dist.sh: no $bin (build the target bench_dist: kiln::dist needs MPI, scripts/setup-deps.sh mpi)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[backends.cpu.options]\ndevices = 1\nthreads = 1\n' >"$tmp/one_thread.toml"
flags=${MPIRUN_FLAGS:---allow-run-as-root --bind-to none --mca plm isolated --mca btl_vader_single_copy_mechanism none}
# shellcheck disable=SC2086  # the flags are words
KILN_BACKENDS=$build/share/kiln/backends.d/cpu.toml KILN_CONFIG=$tmp/one_thread.toml \
  mpirun $flags -np 2 "$bin" all "$reps"
