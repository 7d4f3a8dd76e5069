#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (unit tests and controls).
# GPU tests skip with their reason when there is no GPU. Usage: ./scripts/test.sh [ctest args]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh" "$here/build"
cd "$here/build"
ctest --output-on-failure -j "$(nproc)" "$@"
