#!/usr/bin/env bash
# Builds what the glr device scripts carry and stages it in one folder, stripped: glr_cuda_tests, the
# timers (and the A/B variants named), kcv, kcv-worker and the build's glr_defines.txt (which
# device_check.sh requires: the switches the binaries were built with, for the gates). On this host,
# before a device session (cold ccache: 9 minutes on 2 cores in session 39, GLR_NEXT, no A/B timers;
# each A/B timer named adds about two CPU-minutes).
#
#   bench/glr/stage_bins.sh DEST BUILD_DIR [GLR_DEFINES [AB...]]
#   e.g. bench/glr/stage_bins.sh .xfer/ab build "" dstate3
#
# GLR_DEFINES: a ;-list of switches (include/glr/cuda/sm90/switches.cuh), "" for the defaults; AB:
# timer variants to add (glr/CMakeLists.txt: noseg dstate3 nohoist range). Prints what DEST holds and its
# size: the device tool carries 64 MiB with the tree (about 5 MB); pack DEST with `tar cJf` when over.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: stage_bins.sh DEST BUILD_DIR [GLR_DEFINES [AB...]]" >&2; exit 2; }
dest=$1 build=$2 defines=${3:-}; shift $(( $# < 3 ? $# : 3 ))
[ -f CMakeLists.txt ] && [ -d glr ] || { echo "stage_bins.sh: run it from the repository root" >&2; exit 2; }
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD/..} CCACHE_DIR=${CCACHE_DIR:-$PWD/../.ccache}
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
log=$build/stage_bins.configure.log  # inside the build folder: git-ignored with it
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" -DGLR_DEFINES="$defines" > "$log" 2>&1 ||
  { echo "stage_bins.sh: configure failed (see $log)" >&2; tail -5 "$log" >&2; exit 1; }
targets=(glr_cuda_tests glr_fwd_time glr_bwd_time kcv kcv-worker)
for ab in "$@"; do targets+=("glr_fwd_time_$ab" "glr_bwd_time_$ab"); done
ninja -C "$build" "${targets[@]}"
mkdir -p "$dest"
for t in "${targets[@]}"; do cp "$build/$t" "$dest/"; done
cp "$build/glr_defines.txt" "$dest/"
for f in "$dest"/*; do [ -x "$f" ] && strip "$f"; done
echo "staged in $dest (switches: ${defines:-none}):"
ls -l "$dest"
du -sh "$dest"
