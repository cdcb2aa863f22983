#!/usr/bin/env bash
# The multi-device benchmarks of issue 18 (bench/multi_bench.cpp): all-reduce between two one-thread
# cpu devices next to memcpy, and the MLP workload data-parallel over cpu:0 + cpu:1 (one thread
# each) next to one device with two threads. Usage: bench/multi.sh [build-dir]
set -euo pipefail
build=${1:-build}
bin=$build/bench/bench_multi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[backends.cpu.options]\ndevices = 2\nthreads = 1\n' >"$tmp/two.toml"
printf '[backends.cpu.options]\ndevices = 1\nthreads = 2\n' >"$tmp/one.toml"
export KILN_BACKENDS=$build/share/kiln/backends.d/cpu.toml
KILN_CONFIG=$tmp/two.toml "$bin" allreduce
KILN_CONFIG=$tmp/two.toml "$bin" mlp
KILN_CONFIG=$tmp/one.toml "$bin" mlp
