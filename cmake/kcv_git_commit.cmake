# Writes OUT: `#define KCV_GIT_COMMIT "<short hash>[-dirty]"` for the tree at SRC, rewritten only
# when it changes (so a build after a commit recompiles one file: src/kcv/provenance.cpp).
# Run at every build by the kcv_git_commit target (CMakeLists.txt).
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    string(APPEND commit "-dirty")
  endif()
endif()
file(WRITE "${OUT}.tmp" "// Generated at build time by cmake/kcv_git_commit.cmake.\n#pragma once\n#define KCV_GIT_COMMIT \"${commit}\"\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
