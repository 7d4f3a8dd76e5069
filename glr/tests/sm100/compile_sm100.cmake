# Run by the build (cmake -P): compiles the sm100 backward's test translation unit for sm_100a
# (cubin, with the PTX kept and ptxas -v's resource report) and for sm_90a (PTX), into OUT.
# Inputs: NVCC, SRC, INC, OUT.
file(MAKE_DIRECTORY ${OUT}/keep)
execute_process(
  COMMAND ${NVCC} -std=c++17 -gencode arch=compute_100a,code=sm_100a -cubin -Xptxas -v -keep -keep-dir ${OUT}/keep
          -I${INC} ${SRC} -o ${OUT}/glr_bwd_sm100.cubin
  ERROR_FILE ${OUT}/glr_bwd_sm100.ptxas.txt
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(READ ${OUT}/glr_bwd_sm100.ptxas.txt log)
  message(FATAL_ERROR "nvcc sm_100a failed (${rc}):\n${log}")
endif()
file(COPY_FILE ${OUT}/keep/glr_bwd_sm100.ptx ${OUT}/glr_bwd_sm100.ptx)
execute_process(
  COMMAND ${NVCC} -std=c++17 -gencode arch=compute_90a,code=sm_90a -ptx -I${INC} ${SRC} -o ${OUT}/glr_bwd_sm90.ptx
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc sm_90a failed (${rc})")
endif()
