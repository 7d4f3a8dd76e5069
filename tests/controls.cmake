# Control candidates, judged by the real CLI. Each controls/<backend>/<op>/controls.cmake declares
# its controls with kcv_control(), as does each glr/controls/<backend>/controls.cmake (glr's family
# keeps its controls in its folder); the test runs `kcv verify` and asserts the overall verdict and,
# for negative controls, that every named gate did not pass.
#
#   kcv_control(NAME <test name> OP <op> CANDIDATE <file> EXPECT PASS|FAIL [PARSE_REPORTS]
#               [FAILS <gate> ...] [PASSES <gate> ...] [OWN <gate> ...] [LIBRARY <gate> ...]
#               [BACKEND cpu|cuda] [ARGS <extra kcv verify args> ...] [EVIDENCE <regex>] [ABSENT <regex>])
# EVIDENCE must match the JSON report's text and ABSENT must not (hostile controls: what the
# evidence says, and that nothing is flagged that must not be).
# PASSES names gates that must pass even so: a precision bug is not a layout, state or race one
# (docs/tolerance-independence.md). PARSE_REPORTS also writes the JUnit report and reads both
# reports with Python's own json and xml parsers, and checks that the terminal output holds no
# raw control character (a candidate's text must not break them: issue 21 item 6). OWN and LIBRARY
# name failing gates whose report must say "convention": "own" (a failing case in the problem's
# own calling convention) or "library" (only as a library op): issue 21 item 4.

# One control test: `kcv verify` through tests/check_control.cmake with the given -D settings.
function(kcv_add_control_test test backend labels report)
  add_test(NAME ${test}
           COMMAND ${CMAKE_COMMAND} -DKCV=$<TARGET_FILE:kcv> -DBACKEND=${backend} ${ARGN}
             -DOUT=${CMAKE_BINARY_DIR}/control-reports/${report}.json
             -P ${CMAKE_SOURCE_DIR}/tests/check_control.cmake)
  set_tests_properties(${test} PROPERTIES TIMEOUT 900 LABELS "${labels}")
  if(backend STREQUAL "cuda")
    # No GPU here: the checker prints "SKIP: <why>" and the test reports as skipped.
    set_tests_properties(${test} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
  endif()
endfunction()

function(kcv_control)
  cmake_parse_arguments(C "PARSE_REPORTS" "NAME;OP;CANDIDATE;EXPECT;BACKEND;EVIDENCE;ABSENT" "FAILS;PASSES;OWN;LIBRARY;ARGS"
                        ${ARGN})
  if(NOT C_BACKEND)
    set(C_BACKEND cpu)
  endif()
  string(REPLACE ";" "," fails "${C_FAILS}")
  string(REPLACE ";" "," passes "${C_PASSES}")
  string(REPLACE ";" "," own "${C_OWN}")
  string(REPLACE ";" "," library "${C_LIBRARY}")
  string(REPLACE ";" " " extra "${C_ARGS}")
  kcv_add_control_test(control.${C_BACKEND}.${C_NAME} ${C_BACKEND} "control;${C_BACKEND}" ${C_BACKEND}.${C_NAME}
                       -DOP=${C_OP} -DCANDIDATE=${C_CANDIDATE} -DEXPECT=${C_EXPECT} -DFAILS=${fails}
                       -DPASSES=${passes} -DOWN=${own} -DLIBRARY=${library} -DEXTRA=${extra}
                       -DPARSE_REPORTS=${C_PARSE_REPORTS} "-DEVIDENCE=${C_EVIDENCE}" "-DABSENT=${C_ABSENT}")
endfunction()

# KernelBench-format controls (docs/kernelbench.md): a problem file and a solution file, run with
# `kcv verify --kernelbench PROBLEM SOLUTION --baseline kernelbench`; BASELINE asserts the verdict
# of KernelBench's own check (pass|fail) beside the strict one.
#
#   kcv_torch_control(NAME <test name> PROBLEM <file> SOLUTION <file> EXPECT PASS|FAIL
#                     [FAILS <gate> ...] [PASSES <gate> ...] [TIMEOUTS <gate> ...] [OWN <gate> ...]
#                     [LIBRARY <gate> ...] [BASELINE pass|fail]
#                     [BACKEND cpu|cuda] [REQUIRES torch_compile] [ENV VAR=VALUE ...] [ARGS ...])
# TIMEOUTS names gates that must report TIMEOUT (not only not pass). REQUIRES torch_compile: the test
# says "SKIP: <why>" (and reports skipped) where kcv's torch ($KCV_PYTHON, else /usr/bin/python3) has
# no torch.compile. ENV sets variables for kcv (KCV_TORCH_BOUND=calibrated: the calibrated bound).
function(kcv_torch_control)
  cmake_parse_arguments(C "" "NAME;PROBLEM;SOLUTION;EXPECT;BACKEND;BASELINE;REQUIRES" "FAILS;PASSES;TIMEOUTS;OWN;LIBRARY;ARGS;ENV"
                        ${ARGN})
  if(NOT C_BACKEND)
    set(C_BACKEND cpu)
  endif()
  string(REPLACE ";" "," fails "${C_FAILS}")
  string(REPLACE ";" "," passes "${C_PASSES}")
  string(REPLACE ";" "," timeouts "${C_TIMEOUTS}")
  string(REPLACE ";" "," own "${C_OWN}")
  string(REPLACE ";" "," library "${C_LIBRARY}")
  string(REPLACE ";" " " extra "${C_ARGS}")
  kcv_add_control_test(control.torch.${C_BACKEND}.${C_NAME} ${C_BACKEND} "control;torch;${C_BACKEND}"
                       torch.${C_BACKEND}.${C_NAME}
                       -DKB_PROBLEM=${C_PROBLEM} -DCANDIDATE=${C_SOLUTION} -DEXPECT=${C_EXPECT} -DFAILS=${fails}
                       -DPASSES=${passes} -DTIMEOUTS=${timeouts} -DOWN=${own} -DLIBRARY=${library}
                       -DEXTRA=${extra} -DBASELINE=${C_BASELINE} -DREQUIRES=${C_REQUIRES})
  if(C_REQUIRES)
    set_tests_properties(control.torch.${C_BACKEND}.${C_NAME} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: ")
  endif()
  if(C_ENV)
    set_tests_properties(control.torch.${C_BACKEND}.${C_NAME} PROPERTIES ENVIRONMENT "${C_ENV}")
  endif()
endfunction()

file(GLOB_RECURSE KCV_CONTROL_LISTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/controls/*/controls.cmake
                                                      ${CMAKE_SOURCE_DIR}/controls/*/*/controls.cmake
                                                      ${CMAKE_SOURCE_DIR}/controls/*/*/*/controls.cmake
                                                      ${CMAKE_SOURCE_DIR}/glr/controls/*/controls.cmake)
list(REMOVE_DUPLICATES KCV_CONTROL_LISTS)
foreach(list_file ${KCV_CONTROL_LISTS})
  get_filename_component(CONTROL_DIR ${list_file} DIRECTORY)
  include(${list_file})
endforeach()
