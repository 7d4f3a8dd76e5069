#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, then configures and builds.
# Usage: ./scripts/setup.sh [--slurm] [build-dir]   (idempotent; run as root or with sudo available)
#   --slurm  also slurmctld, slurmd, slurm-client and munge, for scripts/slurm_local.sh and the
#            slurm.corpus_array test (which skips without them)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
slurm=0
if [ "${1:-}" = "--slurm" ]; then slurm=1; shift; fi
build="${1:-$here/build}"

packages=(build-essential cmake pkg-config libgtest-dev libgmock-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libtomlplusplus-dev valgrind python3
          python3-torch libtorch-dev pybind11-dev python3-dev python3-pip python3-setuptools python3-wheel python3-venv ninja-build libseccomp-dev)
# python3-venv: test KernelBenchCli.AVenvUnderTmpIsTheWorkersInterpreterToo makes a venv.
# libtorch-dev and pybind11-dev are only Recommends of python3-torch: without them load_inline
# finds no torch/extension.h, and the KernelBench controls built by load_inline cannot compile.
((slurm)) && packages+=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
echo "setup: built into $build (kcv is $build/kcv)"
