#!/usr/bin/env bash
# gpu-check.sh - the device check: kiln on an NVIDIA GPU in one command, inside 8 minutes.
#
# Runs on a bare GPU machine (CUDA toolkit, driver, PyTorch; no Debian packages of ours, no
# network; as root) from the bundle scripts/gpu-bundle.sh makes on a build machine:
#   tar xJf kiln-gpu-bundle.tar.xz && kiln-gpu/gpu-check.sh          (or)
#   scripts/gpu-check.sh kiln-gpu-bundle.tar.xz                       (unpacks to $WORK)
# Steps, each under its own timeout inside a global deadline (GPU_CHECK_DEADLINE seconds, default
# 450), logs under $WORK/logs:
#   1. ldd of every bundled file (bundled libstdc++ only when the machine's is missing/too old)
#   2. kiln list (-v)                                    (stops here, exit 2, without a CUDA device)
#   3. in parallel: kiln test cuda (the conformance kit); the op corpus on cuda:0 (sharded); the
#      other end-to-end tests on cuda:0 (sweeps, Jit replay, multi-device with cpu:0); and, where
#      NVIDIA's OpenCL driver is installed, the op corpus on opencl:0 (the GPU through OpenCL)
#   4. kiln bench --device cuda:0 --json --jit (alone on the GPU) on the default set and on the gpu
#      set (issue 48's targets), then torch on the same workloads (bench/peers.py, TF32 off) where
#      PyTorch sees the GPU, and tinygrad's first calls on CUDA where tinygrad imports; one table
#   5. BEAM on cuda:0, if the deadline leaves time
# then one summary: a line per step (PASS / FAIL / SKIP / TIMEOUT, seconds, the key line).
# Exit status: 0 all ran steps passed, 1 something failed, 2 no CUDA device (or no bundle).
# Environment: WORK (default /tmp/kiln-gpu-check), GPU_CHECK_DEADLINE, GPU_CHECK_SHARDS (default 8),
# GPU_CHECK_DRY_RUN=1 (no GPU: an offline sm_90 target stands in, so every step runs and the GPU
# tests skip; to test this script on a build machine),
# KILN_CUDA_NVRTC (a libnvrtc to use; else found here: ldconfig, /usr/local/cuda*, Python wheels).
set -uo pipefail
start=$(date +%s)
deadline=$((start + ${GPU_CHECK_DEADLINE:-450}))
work="${WORK:-/tmp/kiln-gpu-check}"
shards="${GPU_CHECK_SHARDS:-8}"
self_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

say() { echo "gpu-check: $*"; }
left() { echo $((deadline - $(date +%s))); }

# ---- the bundle ----
bundle=""
if [ $# -ge 1 ] && [ -d "$1" ]; then
  bundle="$(cd "$1" && pwd)"
elif [ $# -ge 1 ] && [ -f "$1" ]; then
  mkdir -p "$work" && rm -rf "$work/kiln-gpu"
  if command -v xz >/dev/null; then
    tar -C "$work" -xJf "$1" || { say "cannot unpack $1"; exit 2; }
  else  # Python's lzma where xz-utils is not installed
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$work" || { say "cannot unpack $1"; exit 2; }
  fi
  bundle="$work/kiln-gpu"
elif [ -x "$self_dir/bin/kiln" ]; then
  bundle="$self_dir"
else
  for f in "$self_dir/kiln-gpu-bundle.tar.xz" "$self_dir/../build/kiln-gpu-bundle.tar.xz" "$PWD/kiln-gpu-bundle.tar.xz"; do
    [ -f "$f" ] && exec "$0" "$f"
  done
  say "no bundle: run scripts/gpu-bundle.sh on the build machine and bring kiln-gpu-bundle.tar.xz here"
  exit 2
fi
mkdir -p "$work/logs" "$work/cache"
logs="$work/logs"
say "bundle $bundle ($(sed -n 2p "$bundle/BUNDLE_INFO" 2>/dev/null)), logs in $logs, $(left) s to go"
say "$(sed -n 3p "$bundle/BUNDLE_INFO" 2>/dev/null); here: $(ldd --version 2>&1 | head -1)"

export LD_LIBRARY_PATH="$bundle/lib:$bundle/lib/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_BACKENDS="$bundle/share/kiln/backends.d/cuda.toml:$bundle/share/kiln/backends.d/cpu.toml"
export KILN_CACHE_DIR="$work/cache"
export KILN_TEST_CPU_PEER=optional  # tests/common/backend_e2e.hpp: the reference decides if cpu:0 cannot load
unset KILN_CUDA_OFFLINE_ARCH KILN_CUDA_DRIVER KILN_DEVICE
[ -n "${GPU_CHECK_DRY_RUN:-}" ] && export KILN_CUDA_OFFLINE_ARCH=sm_90 && say "dry run: offline sm_90 instead of a GPU"

# ---- summary bookkeeping ----
declare -a rows=()
failed=0
record() {  # step status seconds note
  rows+=("$(printf '%-26s %-8s %5ss  %s' "$1" "$2" "$3" "$4")")
  case "$2" in FAIL|TIMEOUT) failed=1 ;; esac
}
summary() {
  echo
  echo "==== gpu-check summary ($(($(date +%s) - start)) s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)) ===="
  for r in "${rows[@]}"; do echo "$r"; done
  echo "logs: $logs"
}
# run_step NAME TIMEOUT LOG cmd...: runs in the foreground, records the result
run_step() {
  local name=$1 limit=$2 log=$3; shift 3
  local t0=$(date +%s) rc
  if [ "$limit" -lt 5 ]; then record "$name" SKIP 0 "no time left"; return; fi
  timeout -k 5 "$limit" "$@" >"$log" 2>&1; rc=$?
  note_and_record "$name" "$rc" "$(($(date +%s) - t0))" "$log"
}
note_and_record() {  # name rc seconds log
  local note skipped
  note="$(grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ tests?|^\[  SKIPPED \] [0-9]+ tests?|tests? (passed|failed)|passed, [0-9]+ failed|"message"' "$4" | tail -3 | tr -s ' \n' ' ')"
  [ -n "$note" ] || note="$(grep -v '^\s*$' "$4" | tail -1 | cut -c1-110)"
  skipped=""  # gtest ran nothing but skips: not a pass
  grep -q '^\[  PASSED  \] 0 tests' "$4" && grep -q '^\[  SKIPPED \]' "$4" && skipped=yes
  if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then record "$1" TIMEOUT "$3" "$note"
  elif [ "$2" -eq 0 ] && [ -n "$skipped" ]; then record "$1" SKIP "$3" "$note"
  elif [ "$2" -eq 0 ]; then record "$1" PASS "$3" "$note"
  else record "$1" FAIL "$3" "rc $2: $note"; fi
}

# ---- 1. libraries ----
t0=$(date +%s)
unresolved() { for f in "$bundle"/bin/* "$bundle"/lib/*.so.* "$bundle"/lib/kiln/backends/*.so; do ldd "$f" 2>&1; done | grep -E 'not found' | sort -u; }
miss="$(unresolved)"
if [ -n "$miss" ]; then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$bundle/lib/fallback"
  echo "$miss" > "$logs/ldd-before-fallback.txt"
  miss="$(unresolved)"
fi
if [ -n "$miss" ]; then record "ldd" FAIL $(($(date +%s) - t0)) "$(echo "$miss" | head -2 | tr -s ' \n' ' ')"
else record "ldd" PASS $(($(date +%s) - t0)) "all resolved$([ -f "$logs/ldd-before-fallback.txt" ] && echo ' (with the bundled libstdc++)')"; fi

# NVRTC: the plugin looks for libnvrtc.so* on the loader's path and in /usr/local/cuda/lib64; a
# toolkit elsewhere, or only PyTorch's wheel, is found here
if [ -z "${KILN_CUDA_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so' && [ ! -e /usr/local/cuda/lib64/libnvrtc.so ]; then
  cand="$(ls /usr/local/cuda*/lib*/libnvrtc.so* /usr/local/cuda*/targets/*/lib/libnvrtc.so* 2>/dev/null | grep -v alt | head -1)"
  [ -n "$cand" ] || cand="$(python3 -c 'import glob, site, sys; ps = [p for d in site.getsitepackages() + [site.getusersitepackages()] for p in glob.glob(d + "/nvidia/cu*/lib/libnvrtc.so*") + glob.glob(d + "/nvidia/cuda_nvrtc/lib/libnvrtc.so*") if "alt" not in p and "builtins" not in p]; print(ps[0] if ps else "")' 2>/dev/null)"
  [ -n "$cand" ] && export KILN_CUDA_NVRTC="$cand"
fi
say "NVRTC: ${KILN_CUDA_NVRTC:-found by the plugin itself}"

# NVIDIA's OpenCL: the ICD loader (the bundle's if the machine has none) and a vendor file naming
# libnvidia-opencl.so.1 when the driver's is not registered in /etc/OpenCL/vendors
# (by its full path where the loader's cache does not know it: a driver mounted at /usr/local/nvidia)
opencl=""
nvocl="$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1 .*x86-64/ {print $NF; exit}')"
[ -n "$nvocl" ] || nvocl="$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1 \
                              /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)"
if [ -n "$nvocl" ]; then
  ldconfig -p | grep -q 'libOpenCL.so.1' || export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$bundle/lib/icd"
  if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    mkdir -p "$work/vendors" && echo "$nvocl" > "$work/vendors/nvidia.icd"
    export OCL_ICD_VENDORS="$work/vendors"
  fi
  opencl=yes
  say "NVIDIA OpenCL: $nvocl${OCL_ICD_VENDORS:+ (vendor file $OCL_ICD_VENDORS/nvidia.icd)}"
fi

# ---- 2. kiln list ----
"$bundle/bin/kiln" list -v >"$logs/kiln-list.txt" 2>&1
rc=$?
cat "$logs/kiln-list.txt"
cuda_line="$(grep -E '^cuda ' "$logs/kiln-list.txt" | head -1)"
if [ $rc -ne 0 ]; then record "kiln list" FAIL 0 "rc $rc"; summary; exit 1; fi
if ! echo "$cuda_line" | grep -q ' ok '; then
  record "kiln list" PASS 0 "${cuda_line:-no cuda line}"
  say "no CUDA device: ${cuda_line:-the cuda backend did not load}"
  summary
  exit 2
fi
record "kiln list" PASS 0 "$(grep -E '^  cuda:0' "$logs/kiln-list.txt" | sed 's/  */ /g' | cut -c1-110)"
nvidia-smi >"$logs/nvidia-smi.txt" 2>&1 || true

# ---- 3. correctness, in parallel ----
phase=$(( $(left) - 200 ))  # keep 200 s for the benches and the summary
[ $phase -gt 240 ] && phase=240
declare -A pids=() logsof=() began=()
spawn() {  # name log cmd... (in the background)
  local name=$1 log=$2; shift 2
  began[$name]=$(date +%s); logsof[$name]=$log
  timeout -k 5 "$phase" "$@" >"$log" 2>&1 &
  pids[$name]=$!
}
spawn "kiln test cuda" "$logs/kiln-test-cuda.txt" "$bundle/bin/kiln" test cuda --timeout "$phase"
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
    spawn "corpus cuda $i/$shards" "$logs/corpus-cuda-$i.txt" "$bundle/bin/test_cuda_gpu" --gtest_filter='Corpus/CudaCorpus.*'
done
spawn "e2e cuda (jit, multi)" "$logs/e2e-cuda.txt" "$bundle/bin/test_cuda_gpu" --gtest_filter='-Corpus/CudaCorpus.*:CudaBeam.*'
if [ -n "$opencl" ]; then
  KILN_BACKENDS="$bundle/share/kiln/backends.d/opencl.toml:$bundle/share/kiln/backends.d/cpu.toml" "$bundle/bin/kiln" list >"$logs/kiln-list-opencl.txt" 2>&1
  KILN_BACKENDS="$bundle/share/kiln/backends.d/opencl.toml:$bundle/share/kiln/backends.d/cpu.toml" KILN_DEVICE=opencl:0 \
    KILN_CONFIG="$bundle/config/opencl.toml" spawn "corpus opencl (NVIDIA)" "$logs/corpus-opencl.txt" \
    "$bundle/bin/test_opencl" --gtest_filter='*OpenclCorpus*:OpenclJit*'
else
  record "corpus opencl (NVIDIA)" SKIP 0 "no libnvidia-opencl.so.1 (NVIDIA's OpenCL driver) here"
fi
for name in "${!pids[@]}"; do
  wait "${pids[$name]}"; rc=$?
  note_and_record "$name" "$rc" "$(($(date +%s) - ${began[$name]}))" "${logsof[$name]}"
done
failing="$(grep -h '^\[  FAILED  \] [A-Za-z]' "$logs"/corpus-*.txt "$logs"/e2e-*.txt 2>/dev/null | sort -u | head -40)"
[ -n "$failing" ] && { echo "$failing" > "$logs/failing-tests.txt"; say "failing tests:"; echo "$failing"; }

# ---- 4. bench: kiln and torch on the same GPU, same workloads; tinygrad's first calls ----
# the default set (with the Jit's replay cost), then the gpu set (issue 48's targets: memory-bound
# work past the L2, layernorm, matmul 4096 — its float64 host reference would take half a minute,
# so it runs unchecked: matmuls are checked by the corpus, the sweeps and matmul1024 above)
bench_step() {  # name budget log kiln-bench-args...: leaves `budget` seconds for what follows
  local name=$1 budget=$2 log=$3; shift 3
  local b=$(( $(left) - budget )); [ $b -gt 150 ] && b=150
  run_step "$name" "$b" "$log" "$bundle/bin/kiln" bench --device cuda:0 --json "$@"
}
bench_step "kiln bench cuda:0" 100 "$logs/bench-cuda.json" --jit
bench_step "kiln bench gpu set" 70 "$logs/bench-gpu.json" --set gpu --only elementwise_128M,sum_128M,softmax_32768,layernorm_32768
bench_step "kiln matmul4096" 60 "$logs/bench-mm4096.json" --set gpu --only matmul4096 --no-check
# torch on the same GPU, the same workloads (bench/peers.py, TF32 off), where PyTorch sees the GPU
if python3 -c 'import sys, torch, numpy; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  for set in default gpu; do
    b=$(( $(left) - 40 )); [ $b -gt 90 ] && b=90
    run_step "torch cuda ($set set)" "$b" "$logs/torch-$set.json" \
      python3 "$bundle/tools/peers.py" --worker torch --set $set --torch-device cuda --min-time 0.3
  done
else
  record "torch cuda" SKIP 0 "python3 has no torch with CUDA (or no numpy)"
fi
# tinygrad's CUDA backend, first calls with an empty compile cache (where tinygrad imports)
if python3 -c 'import tinygrad' 2>/dev/null; then
  b=$(( $(left) - 30 )); [ $b -gt 90 ] && b=90
  DEV=CUDA CACHELEVEL=0 run_step "tinygrad first calls" "$b" "$logs/tinygrad-first.json" \
    python3 "$bundle/tools/peers.py" --worker tinygrad --set default --first-call
else
  record "tinygrad first calls" SKIP 0 "python3 cannot import tinygrad"
fi
python3 - "$logs" <<'EOF' 2>&1 | tee "$logs/bench-cuda.txt"
import json, os, sys
logs = sys.argv[1]
def kiln_doc(name):  # the log may hold stderr lines too: the JSON document starts at the first "{"
    try:
        text = open(os.path.join(logs, name)).read()
        return json.JSONDecoder().raw_decode(text[text.index("{"):])[0]
    except Exception:
        return {}
def peer_doc(name):
    try:
        return json.loads(open(os.path.join(logs, name)).read().strip().splitlines()[-1])
    except Exception:
        return {}
torch = {**peer_doc("torch-default.json"), **peer_doc("torch-gpu.json")}
tg_first = peer_doc("tinygrad-first.json")
docs = [kiln_doc(n) for n in ("bench-cuda.json", "bench-gpu.json", "bench-mm4096.json")]
rows = [w for d in docs for w in d.get("workloads", [])]
if rows:
    print(f"  {'workload':<17} {'first ms':>9} {'tg first':>9} {'steady ms':>10} {'jit ms':>8} {'rate':>15}  check  {'torch ms':>9}  kiln/torch speed")
for w in rows:
    rate = f"{w['rate']:.1f} {w['unit']}" if w.get("rate") is not None else "-"
    t, f = torch.get(w["name"]), tg_first.get(w["name"])
    vs = f"{t:9.3f}  {t / w['steady_ms']:.2f}x" if t and w.get("steady_ms") else ""
    jit = f"{w['jit_ms']:8.3f}" if w.get("jit_ms") is not None else f"{'-':>8}"
    tgf = f"{f:9.1f}" if f else f"{'-':>9}"
    check = {True: "ok   ", None: "-    "}.get(w.get("ok"), "WRONG")
    print(f"  {w['name']:<17} {w['first_ms']:9.1f} {tgf} {w['steady_ms']:10.3f} {jit} {rate:>15}  {check}  {vs}")
j = docs[0].get("jit_overhead") or {}
if j:
    print(f"  Jit replay {j.get('replay_us_per_kernel', 0):.2f} us per kernel (eager realize {j.get('eager_us_per_kernel', 0):.2f} us)")
EOF

# ---- 5. BEAM, if there is time ----
b=$(( $(left) - 10 ))
if [ $b -ge 60 ]; then
  run_step "beam cuda" "$b" "$logs/beam-cuda.txt" "$bundle/bin/test_cuda_gpu" --gtest_filter='CudaBeam.*'
else
  record "beam cuda" SKIP 0 "not enough time left ($b s)"
fi

summary
exit $failed
