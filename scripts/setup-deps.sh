#!/usr/bin/env bash
# shellcheck disable=SC2034  # the PKGS_* groups are read indirectly through ${!var}
# setup-deps.sh - install every Debian 12 (bookworm) package kiln needs to build, test and run.
#
# Idempotent and non-interactive: if every package is already installed it exits at once without
# touching the network; otherwise it runs `apt-get update` once and installs what is missing.
#
# Usage: setup-deps.sh [--check] [GROUP...]
#   GROUP: core llvm opencl hip test python onnx mpi   (default: all of them)
#   --check  only report what is missing (exit 1 if anything is), install nothing
#
# Measured on bookworm (2 cores): on the standard C++ image (which already has gcc, cmake, ninja,
# clang-14, llvm-14-dev, GoogleTest, Google Benchmark) the full install adds 50 packages,
# 129 MB download, ~900 MB on disk, ~13 s. From a minimal bookworm: ~200 packages, ~330 MB, ~31 s.
set -euo pipefail

# --- package groups (Debian 12 versions noted for reference) -----------------------------------
# core: compiler, build system, Boost 1.74 (DLL is header-only; filesystem needed unless
#       BOOST_DLL_USE_STD_FS), toml++ 3.3.0, ccache 4.7
PKGS_core="build-essential cmake ninja-build pkg-config ccache clang lld \
  libboost-dev libboost-filesystem-dev libboost-program-options-dev libtomlplusplus-dev"
# llvm: LLVM/Clang 15.0.6 - the version PoCL 3.1 and ROCm 5.2.3 (hipcc, comgr) are built against.
#       zlib1g-dev: LLVMConfig's static LLVMSupport links ZLIB::ZLIB, but llvm-15-dev doesn't depend on it.
PKGS_llvm="llvm-15-dev clang-15 lld-15 zlib1g-dev"
# opencl: ICD loader + headers + PoCL 3.1 CPU device + clinfo
PKGS_opencl="ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo"
# hip: ROCm 5.2.3 HIP runtime (libamdhip64, includes hiprtc), hipcc, device bitcode libs (<= gfx1036)
PKGS_hip="hipcc libamdhip64-dev rocm-device-libs"
# test: GoogleTest/GoogleMock 1.12.1, Google Benchmark 1.7.1
PKGS_test="libgtest-dev libgmock-dev libbenchmark-dev"
# python: Python 3.11 headers (the extension module), venv + pip (dev.sh's venv with the pinned
#         nanobind, numpy and pytest of frontends/python/requirements-dev.txt, from PyPI)
PKGS_python="python3-dev python3-venv python3-pip"
# onnx: ONNX 1.12's C++ library and its protobuf classes (kiln::onnx, `kiln run`; without them the
#       ONNX frontend is not built), protoc, and ONNX's node tests (tests/onnx: 932 models + data)
PKGS_onnx="libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata"
# mpi: Open MPI 4.1.4 headers, libmpi and mpirun (kiln::dist, its mpirun tests in tests/dist, the
#      example train_mlp_dist; without them kiln::dist is not built). ~53 MB, pulls openssh-client.
PKGS_mpi="libopenmpi-dev openmpi-bin"

check_only=0
groups=()
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    core|llvm|opencl|hip|test|python|onnx|mpi) groups+=("$arg") ;;
    -h|--help) sed -n '3,14p' "$0"; exit 0 ;;
    *) echo "setup-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[ ${#groups[@]} -eq 0 ] && groups=(core llvm opencl hip test python onnx mpi)

pkgs=()
for g in "${groups[@]}"; do
  var="PKGS_$g"
  # shellcheck disable=SC2206
  pkgs+=(${!var})
done

missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#pkgs[@]} packages already installed (${groups[*]})"
  exit 0
fi
echo "setup-deps: missing: ${missing[*]}"
[ "$check_only" -eq 1 ] && exit 1

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup-deps: need root (or sudo) to install packages" >&2; exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
$SUDO apt-get "${APT_OPTS[@]}" update -qq
$SUDO apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends "${missing[@]}"
echo "setup-deps: installed ${#missing[@]} package(s)"
