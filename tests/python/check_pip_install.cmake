# ctest python.kcv_pip_install: `pip install --no-build-isolation --target SCRATCH SRC` with this build
# tree reused (KCV_CMAKE_BUILD_DIR), then the installed package, imported from another directory,
# verifies add_ok.c (PASS) and add_drops_tail.c (FAIL) from source text with its bundled files.
# Args: -DPYTHON= -DSRC= -DBUILD= -DSCRATCH=
execute_process(COMMAND ${PYTHON} -m pip --version RESULT_VARIABLE has_pip OUTPUT_QUIET ERROR_QUIET)
if(NOT has_pip EQUAL 0)
  message("SKIP: no pip for ${PYTHON} (python3-pip; ./scripts/setup.sh installs it)")
  return()
endif()
file(REMOVE_RECURSE ${SCRATCH})
set(ENV{KCV_CMAKE_BUILD_DIR} ${BUILD})
execute_process(COMMAND ${PYTHON} -m pip install --no-build-isolation --no-deps --no-cache-dir --target ${SCRATCH}/site ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pip install failed (${rc}):\n${out}\n${err}")
endif()
file(WRITE ${SCRATCH}/check.py [=[
import os, sys
import kcv
here = os.path.dirname(os.path.abspath(kcv.__file__))
assert os.environ["KCV_WORKER"].startswith(here), os.environ["KCV_WORKER"]
assert os.path.isfile(os.path.join(os.environ["KCV_INCLUDE_DIR"], "kcv", "abi.h"))
add = os.path.join(sys.argv[1], "controls", "cpu", "add")
ok = kcv.verify("add", open(os.path.join(add, "add_ok.c")).read(), language="c", gates=["numerics", "shapes"], seed=5)
bad = kcv.verify("add", open(os.path.join(add, "add_drops_tail.c")).read(), language="c", gates=["shapes"], seed=5)
print("installed kcv", kcv.__version__, "at", here, ":", ok.verdict, bad.verdict)
sys.exit(0 if ok.verdict == "PASS" and bad.verdict == "FAIL" else 1)
]=])
set(ENV{PYTHONPATH} ${SCRATCH}/site)
execute_process(COMMAND ${PYTHON} ${SCRATCH}/check.py ${SRC} WORKING_DIRECTORY ${SCRATCH} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed package did not give PASS for add_ok and FAIL for add_drops_tail (${rc})")
endif()
