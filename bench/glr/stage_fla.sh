#!/usr/bin/env bash
# Stage FLA's tree for the device benchmarks (bench/glr/device_bench.sh, device_gates.sh): the files of
# one commit of a fetched FLA repository, and FLA_COMMIT naming that commit (the benchmarks record it).
# The staged tree is git-ignored and never committed (brief: fetched code is for running side by side).
#
#   bench/glr/stage_fla.sh GIT_DIR [DEST]     (DEST default .xfer/fla; it must not exist)
#     e.g. bench/glr/stage_fla.sh /work/.mirror/fla-org+flash-linear-attention/repo
#
# GIT_DIR is a repository's git directory (a bare mirror, as the fetch tool gives, or a clone's .git).
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/glr/stage_fla.sh GIT_DIR [DEST]" >&2; exit 2; }
git_dir=$1
dest=${2:-.xfer/fla}
commit=$(git --git-dir="$git_dir" log -1 --format='%H %cI' HEAD 2>/dev/null) ||
  { echo "stage_fla.sh: $git_dir is not a git directory with a HEAD commit" >&2; exit 2; }
git --git-dir="$git_dir" cat-file -e HEAD:fla/ops/gla/chunk.py 2>/dev/null ||
  { echo "stage_fla.sh: $git_dir's HEAD has no fla/ops/gla/chunk.py: not FLA's repository?" >&2; exit 2; }
[ ! -e "$dest" ] || { echo "stage_fla.sh: $dest exists; remove it or name another DEST" >&2; exit 2; }
tmp="$dest.staging.$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
git --git-dir="$git_dir" archive HEAD | tar -x -C "$tmp"
echo "$commit" > "$tmp/FLA_COMMIT"
mv "$tmp" "$dest"
trap - EXIT
echo "staged FLA $commit in $dest ($(find "$dest" -type f | wc -l) files)"
