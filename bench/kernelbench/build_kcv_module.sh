#!/usr/bin/env bash
# The kcv Python module (kcv._kcv) compiled on the device for its python, from the staged kcv
# libraries (bench/kernelbench/stage_issue22.sh or stage_pool.sh): one g++ of src/python/kcv_module.cpp
# (with tools/kcv/environment.cpp, as CMake's kcv_python target) against that python's Python.h
# and the pybind11 torch bundles. Nothing happens when `import kcv` already works with
# PYTHONPATH=X/python.
#   bench/kernelbench/build_kcv_module.sh X PYTHON LOG      (repo root; exit 2 when the build fails)
set -uo pipefail
X="${1:?X}"; py="${2:?PYTHON}"; log="${3:?LOG}"
PYTHONPATH=$X/python "$py" -c "import kcv" 2>/dev/null && exit 0
d=$X/python/kcv
mkdir -p "$d"; cp python/kcv/*.py "$d/"
inc=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
ext=$("$py" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
pb=$("$py" -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'include'))")
[ -f "$pb/pybind11/pybind11.h" ] || pb=$("$py" -c "import pybind11; print(pybind11.get_include())" 2>/dev/null || echo /usr/include)
pbflag=(-isystem "$pb"); [ "$pb" = /usr/include ] && pbflag=()  # -isystem /usr/include breaks #include_next
g++ -O2 -fPIC -shared -std=c++20 -fvisibility=hidden -DFMT_HEADER_ONLY=1 -DKCV_WITH_CUDA \
  -Iinclude -Isrc -Itools/kcv -I"$X/generated" -isystem "$inc" "${pbflag[@]}" \
  src/python/kcv_module.cpp tools/kcv/environment.cpp \
  "$X/libkcv_core.a" "$X/libkcv_registry.a" "$X/libglr_contracts.a" "$X/libkcv_base.a" -ldl "$X/libseccomp.a" \
  -o "$d/_kcv$ext" > "$log" 2>&1 ||
  { echo "module build failed: $log"; exit 2; }
