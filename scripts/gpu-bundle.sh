#!/usr/bin/env bash
# gpu-bundle.sh - pack what scripts/gpu-check.sh runs on a bare NVIDIA GPU machine (CUDA toolkit,
# driver and PyTorch, but none of our Debian packages and no network) into one archive built here:
# libkiln, the cpu, cuda and opencl plugins with their manifests, the kiln CLI (whose `kiln test`
# is the conformance runner), the cuda and opencl end-to-end test binaries (op corpus, sweeps, Jit,
# multi-device), gpu-check.sh itself, and the shared libraries those need that a bare machine
# lacks. The cpu plugin comes along because the end-to-end tests hold every backend to cpu:0's
# answers too; it (and the opencl plugin) need libLLVM-15, the bulk of the archive.
#
# Which libraries: everything `ldd` lists for the bundled files, except glibc's own (libc, libm,
# libdl, libpthread, librt, the loader) and libz and libgcc_s, which every glibc system has.
# libstdc++ goes to lib/fallback/: gpu-check.sh adds it to the library path only when the
# machine's own is missing or too old (ldd says so). libOpenCL.so.1 (dlopened by the opencl
# plugin, so not in ldd) goes to lib/icd/, used only where the machine has no ICD loader.
#
# Usage: scripts/gpu-bundle.sh [OUT.tar.xz]   (default: $BUILD_DIR/kiln-gpu-bundle.tar.xz)
# Environment: BUILD_DIR  the build tree to build in and pack from (default ./build; configured
#                         like dev.sh's Release build if it does not exist yet)
# The archive must stay under 60 MiB (checked). Unpack and run anywhere:
#   tar xJf kiln-gpu-bundle.tar.xz && kiln-gpu/gpu-check.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$here/build}"
out="${1:-$build/kiln-gpu-bundle.tar.xz}"
limit_mib=60

die() { echo "gpu-bundle: $*" >&2; exit 1; }

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
targets=(kiln_cli kiln_cpu kiln_cuda kiln_opencl test_cuda_gpu test_opencl)
nice -n 10 ninja -C "$build" -j"${JOBS:-2}" "${targets[@]}" >/dev/null || die "building ${targets[*]} failed"

stage="$build/gpu-bundle/kiln-gpu"
rm -rf "$build/gpu-bundle"
mkdir -p "$stage"/{bin,lib/kiln/backends,lib/deps,lib/fallback,lib/icd,share/kiln/backends.d,config}

# executables and plugins, stripped (symbols are of no use on the GPU machine)
install -m 755 -s "$build/tools/kiln/kiln" "$stage/bin/kiln"
install -m 755 -s "$build/tests/cuda/test_cuda_gpu" "$stage/bin/test_cuda_gpu"
install -m 755 -s "$build/tests/opencl/test_opencl" "$stage/bin/test_opencl"
for p in cpu cuda opencl; do
  install -m 755 -s "$build/lib/kiln/backends/libkiln_$p.so" "$stage/lib/kiln/backends/"
  # the build tree's manifests name the library relative to themselves, and the bundle keeps the
  # build tree's layout (share/kiln/backends.d -> ../../../lib/kiln/backends)
  cp "$build/share/kiln/backends.d/$p.toml" "$stage/share/kiln/backends.d/"
done
# libkiln and friends under their sonames (what the executables ask for)
for f in "$build"/lib/libkiln*.so.*; do
  soname="$(objdump -p "$f" | awk '/SONAME/ {print $2}')"
  [ -n "$soname" ] && [ ! -e "$stage/lib/$soname" ] && install -m 755 -s "$f" "$stage/lib/$soname"
done
cp "$here/tests/opencl/opencl.toml" "$stage/config/opencl.toml"
install -m 755 "$here/scripts/gpu-check.sh" "$stage/gpu-check.sh"
mkdir -p "$stage/tools" && install -m 644 "$here/bench/peers.py" "$stage/tools/peers.py"  # torch beside kiln

# shared libraries: resolved here by ldd over everything bundled (the bundle's own first)
is_glibc() {
  case "$1" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*|libutil.so.*|linux-vdso*) return 0 ;;
  esac
  return 1
}
declare -A seen=()
missing=""
while read -r name path; do
  [ -n "$name" ] || continue
  [ -n "${seen[$name]:-}" ] && continue
  seen[$name]=1
  is_glibc "$name" && continue
  case "$name" in
    libkiln*) continue ;;                               # ours, already in lib/
    libz.so.*|libgcc_s.so.*) continue ;;                # on every glibc system
    libstdc++.so.*) cp -L "$path" "$stage/lib/fallback/$name" ;;
    *) [ "$path" = "not" ] && { missing+=" $name"; continue; }
       cp -L "$path" "$stage/lib/deps/$name" ;;
  esac
done < <(for f in "$stage"/bin/* "$stage"/lib/*.so.* "$stage"/lib/kiln/backends/*.so; do
           LD_LIBRARY_PATH="$stage/lib" ldd "$f" | awk '/=>/ {print $1, $3}'
         done | sort -u)
[ -z "$missing" ] || die "ldd cannot resolve:$missing"
strip --strip-unneeded "$stage"/lib/deps/*.so* 2>/dev/null || true
ocl="$(ldconfig -p | awk '/libOpenCL.so.1 .*x86-64/ {print $NF; exit}')"
[ -n "$ocl" ] && cp -L "$ocl" "$stage/lib/icd/libOpenCL.so.1"

{
  echo "kiln GPU bundle"
  echo "commit:  $(git -C "$here" rev-parse --short HEAD)$([ -z "$(git -C "$here" status --porcelain)" ] || echo ' (with uncommitted changes)')"
  echo "needs:   glibc >= $(for f in "$stage"/bin/* "$stage"/lib/*.so.* "$stage"/lib/kiln/backends/*.so "$stage"/lib/deps/*; do objdump -T "$f"; done 2>/dev/null | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1 | cut -d_ -f2); the cuda plugin and the CLI alone: glibc >= $(for f in "$stage"/bin/kiln "$stage"/lib/*.so.* "$stage"/lib/kiln/backends/libkiln_cuda.so; do objdump -T "$f"; done 2>/dev/null | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1 | cut -d_ -f2)"
  echo "built:   $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "bundled libraries (lib/deps; lib/fallback used only when the machine's own is missing or too old):"
  (cd "$stage/lib" && ls deps fallback icd | sed 's/^/  /')
} > "$stage/BUNDLE_INFO"

mkdir -p "$(dirname "$out")"
tar -C "$build/gpu-bundle" -cf - kiln-gpu | xz -T"${JOBS:-2}" -6 > "$out.tmp"
mv "$out.tmp" "$out"
size=$(stat -c %s "$out")
echo "gpu-bundle: $out ($((size / 1024 / 1024)) MiB, $(du -sh "$stage" | cut -f1) unpacked)"
[ "$size" -lt $((limit_mib * 1024 * 1024)) ] || die "the bundle is over ${limit_mib} MiB"
