#!/usr/bin/env bash
# A copy of an include/ tree whose glr/cuda/sm90/switches.cuh defines the given kernel switches first:
# what kcv compiles a glr control against when the binaries under test were built with GLR_DEFINES
# (kcv compiles a candidate with one include directory and no defines of the caller's; glr's kernels
# read every switch through switches.cuh). bench/glr/device_check.sh uses it for the gates.
#
#   bench/glr/include_with_defines.sh SRC_INCLUDE DST DEFINE...      e.g. include /tmp/inc GLR_NEXT
#
# DST must not exist yet; each DEFINE must be a switch switches.cuh lists (`///   NAME ...`) or GLR_NEXT.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: include_with_defines.sh SRC_INCLUDE DST DEFINE..." >&2; exit 2; }
src=$1 dst=$2; shift 2
sw=glr/cuda/sm90/switches.cuh
[ -f "$src/$sw" ] || { echo "include_with_defines.sh: $src/$sw not found (not an include/ tree of this repository?)" >&2; exit 2; }
[ ! -e "$dst" ] || { echo "include_with_defines.sh: $dst exists; give a new path" >&2; exit 2; }
for d in "$@"; do
  if ! [[ "$d" =~ ^GLR_[A-Z0-9_]+$ ]] || ! grep -qE "^(///   |#ifdef )$d( |$)" "$src/$sw"; then
    echo "include_with_defines.sh: '$d' is not a switch listed in $src/$sw" >&2; exit 2
  fi
done
mkdir -p "$(dirname "$dst")"
cp -r "$src" "$dst"
{
  echo "// include_with_defines.sh: this copy of include/ is built with $*"
  for d in "$@"; do printf '#ifndef %s\n#define %s\n#endif\n' "$d" "$d"; done
  cat "$src/$sw"
} > "$dst/$sw"
