# ctest install.find_package (issue 22): the install as a user gets it, from this build tree.
#   cmake -DBUILD=<build dir> -DSRC=<source dir> -DSCRATCH=<scratch dir> -DGENERATOR=<gen> -P check_install.cmake
# 1. `cmake --install BUILD --prefix SCRATCH/prefix`;
# 2. the installed `kcv --version` names the version and finds include/, share/kcv/adapters and
#    kcv-worker under the prefix (from its own location: KCV_* unset), none in this tree;
# 3. the installed kcv verifies a cpu candidate (add_ok.c copied out of the tree) and passes;
# 4. tests/install/consumer (find_package(kcv), kcv::kcv, <kcv/abi.h>) configures, builds and runs.
cmake_minimum_required(VERSION 3.25)
foreach(v BUILD SRC SCRATCH GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_install.cmake: -D${v}=... missing")
  endif()
endforeach()
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH})
set(prefix ${SCRATCH}/prefix)

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}\n${err}")
endif()
foreach(f bin/kcv bin/kcv-worker include/kcv/abi.h include/kcv/engine.hpp include/glr/cuda.hpp
          share/kcv/adapters/torch/kcv_torch_worker.py lib/cmake/kcv/kcvConfig.cmake
          lib/cmake/kcv/kcvConfigVersion.cmake lib/cmake/kcv/kcvTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
message("installed into ${prefix}")

# The installed tool, with nothing in its environment pointing at this tree.
set(clean ${CMAKE_COMMAND} -E env --unset=KCV_INCLUDE_DIR --unset=KCV_ADAPTERS_DIR --unset=KCV_WORKER)
execute_process(COMMAND ${clean} ${prefix}/bin/kcv --version
                RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed kcv --version exited ${rc}: ${version}${err}")
endif()
message("kcv --version:\n${version}")
if(NOT version MATCHES "^kcv [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit [^;]+; ")
  message(FATAL_ERROR "kcv --version does not start with 'kcv X.Y.Z (commit ...; ...)'")
endif()
foreach(pair "include:  ${prefix}/include" "adapters: ${prefix}/share/kcv/adapters" "worker:   ${prefix}/bin/kcv-worker")
  string(FIND "${version}" "${pair}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "kcv --version should say '${pair}' (paths from the installed binary's location)")
  endif()
endforeach()

# A verify by the installed tool, on a candidate outside the tree.
file(COPY ${SRC}/controls/cpu/add/add_ok.c DESTINATION ${SCRATCH})
execute_process(COMMAND ${clean} ${prefix}/bin/kcv verify --op add --candidate ${SCRATCH}/add_ok.c --backend cpu
                        --gates numerics,shapes --seed 1 --json ${SCRATCH}/add_ok.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed kcv verify exited ${rc}:\n${out}\n${err}")
endif()
file(READ ${SCRATCH}/add_ok.json report)
string(JSON verdict GET "${report}" verdict)
string(JSON rv GET "${report}" provenance kcv_version)
if(NOT verdict STREQUAL "PASS")
  message(FATAL_ERROR "installed kcv: add_ok.c ${verdict}")
endif()
string(FIND "${version}" "kcv ${rv} " vat)
if(NOT vat EQUAL 0)
  message(FATAL_ERROR "the report's provenance.kcv_version (${rv}) is not the one --version prints")
endif()
message("installed kcv verify: PASS, report version ${rv}")

# A C++ user: find_package(kcv) against the prefix only.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC}/tests/install/consumer -B ${SCRATCH}/consumer -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer does not configure against the install:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${SCRATCH}/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer does not build against the install:\n${out}\n${err}")
endif()
execute_process(COMMAND ${SCRATCH}/consumer/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer: kcv [0-9.]+, ABI [0-9]+, contract softmax, kcv at ${prefix}/bin/kcv")
  message(FATAL_ERROR "the consumer ran (${rc}) but said:\n${out}${err}")
endif()
message("${out}find_package(kcv): ok")
