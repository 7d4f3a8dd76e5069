# ctest wgmma.sm90a_ptx (cmake -P): the wgmma test kernels (tests/cuda/sm90_wgmma_kernels.cu) as each
# target compiles them — the sm_90a PTX must hold every wgmma.mma_async the kernels issue (a guard
# that went false would turn them into traps, seen only on a GPU), ptxas must assemble it for sm_90a
# without a warning (e.g. "wgmma ... serialized"), and the sm_100a PTX must hold none (the trap path).
# Inputs: NVCC, SRC, INC, OUT (a scratch folder), EXPECT (the number of wgmma.mma_async); DEFS (optional,
# e.g. -DGLR_FWD_WGMMA). ptxas reports serialized wgmma (C7520) and an injected warpgroup.arrive (C7519)
# as "info ... Potential Performance Loss", not as warnings: those fail too.
file(MAKE_DIRECTORY ${OUT})
get_filename_component(srcdir ${SRC} DIRECTORY)
foreach(arch 90a 100a)
  execute_process(
    COMMAND ${NVCC} -std=c++17 ${DEFS} -gencode arch=compute_${arch},code=compute_${arch} -ptx -I${INC} -I${srcdir}
            ${SRC} -o ${OUT}/wgmma_${arch}.ptx
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc compute_${arch} -ptx failed (${rc}):\n${err}")
  endif()
  file(READ ${OUT}/wgmma_${arch}.ptx ptx)
  string(REGEX MATCHALL "wgmma\\.mma_async\\.sync\\.aligned\\.m64n(64|128)k16\\.f32\\.b?f16\\.b?f16" hits "${ptx}")
  list(LENGTH hits n_${arch})
endforeach()
if(NOT n_90a EQUAL EXPECT)
  message(FATAL_ERROR "sm_90a PTX: ${n_90a} wgmma.mma_async, expected ${EXPECT}")
endif()
if(NOT n_100a EQUAL 0)
  message(FATAL_ERROR "sm_100a PTX: ${n_100a} wgmma.mma_async, expected 0 (wgmma is sm_90a only)")
endif()
execute_process(COMMAND ${NVCC} -gencode arch=compute_90a,code=sm_90a -cubin -Xptxas -v ${OUT}/wgmma_90a.ptx
                        -o ${OUT}/wgmma_90a.cubin
                RESULT_VARIABLE rc ERROR_VARIABLE log)
if(NOT rc EQUAL 0 OR log MATCHES "[Ww]arning|Potential Performance Loss|C75[0-9][0-9]")
  message(FATAL_ERROR "ptxas sm_90a (${rc}):\n${log}")
endif()
message(STATUS "wgmma: sm_90a PTX ${n_90a} wgmma.mma_async, assembled without warnings; sm_100a PTX none")
