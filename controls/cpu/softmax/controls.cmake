# softmax controls, cpu backend (tests/controls.cmake sets CONTROL_DIR). Each file's header says
# what it is and, for a negative control, its bug and the gate that must catch it.
set(softmax_all_gates numerics shapes values nonfinite bounds inputs_intact coverage determinism layout stateless
                      concurrency sanitizer)

# Positive, clean-refusal and error-model controls: must pass every gate.
kcv_control(NAME softmax.ok OP softmax CANDIDATE ${CONTROL_DIR}/softmax_ok.c EXPECT PASS)
kcv_control(NAME softmax.refuses_strided OP softmax CANDIDATE ${CONTROL_DIR}/softmax_refuses_strided.c EXPECT PASS)
kcv_control(NAME softmax.sum_pairwise OP softmax CANDIDATE ${CONTROL_DIR}/softmax_sum_pairwise.c EXPECT PASS)
kcv_control(NAME softmax.sum_blocked OP softmax CANDIDATE ${CONTROL_DIR}/softmax_sum_blocked.c EXPECT PASS)

# Negative controls: one bug each, and the gate that must not pass.
kcv_control(NAME softmax.fp16_sum OP softmax CANDIDATE ${CONTROL_DIR}/softmax_fp16_sum.c EXPECT FAIL FAILS numerics
            PASSES layout stateless concurrency)
kcv_control(NAME softmax.drops_tail OP softmax CANDIDATE ${CONTROL_DIR}/softmax_drops_tail.c EXPECT FAIL FAILS shapes
            OWN shapes)
kcv_control(NAME softmax.unstabilized_exp OP softmax CANDIDATE ${CONTROL_DIR}/softmax_unstabilized_exp.c
            EXPECT FAIL FAILS values)
kcv_control(NAME softmax.nan_laundering OP softmax CANDIDATE ${CONTROL_DIR}/softmax_nan_laundering.c
            EXPECT FAIL FAILS nonfinite)
kcv_control(NAME softmax.oob_write OP softmax CANDIDATE ${CONTROL_DIR}/softmax_oob_write.c EXPECT FAIL FAILS bounds)
kcv_control(NAME softmax.mutates_input OP softmax CANDIDATE ${CONTROL_DIR}/softmax_mutates_input.c
            EXPECT FAIL FAILS inputs_intact)
kcv_control(NAME softmax.skips_last_row OP softmax CANDIDATE ${CONTROL_DIR}/softmax_skips_last_row.c
            EXPECT FAIL FAILS coverage)
kcv_control(NAME softmax.run_to_run OP softmax CANDIDATE ${CONTROL_DIR}/softmax_run_to_run.c
            EXPECT FAIL FAILS determinism)
kcv_control(NAME softmax.ignores_strides OP softmax CANDIDATE ${CONTROL_DIR}/softmax_ignores_strides.c
            EXPECT FAIL FAILS layout LIBRARY layout)
kcv_control(NAME softmax.pointer_cache OP softmax CANDIDATE ${CONTROL_DIR}/softmax_pointer_cache.c
            EXPECT FAIL FAILS stateless OWN stateless)
kcv_control(NAME softmax.shared_scratch OP softmax CANDIDATE ${CONTROL_DIR}/softmax_shared_scratch.c
            EXPECT FAIL FAILS concurrency LIBRARY concurrency)
kcv_control(NAME softmax.heap_overflow OP softmax CANDIDATE ${CONTROL_DIR}/softmax_heap_overflow.c
            EXPECT FAIL FAILS sanitizer)

# Hostile controls: every gate calls the candidate, so no gate may pass (CRASH or TIMEOUT).
kcv_control(NAME softmax.hang OP softmax CANDIDATE ${CONTROL_DIR}/softmax_hang.c EXPECT FAIL FAILS ${softmax_all_gates}
            ARGS --timeout 2)
kcv_control(NAME softmax.crash OP softmax CANDIDATE ${CONTROL_DIR}/softmax_crash.c EXPECT FAIL FAILS ${softmax_all_gates})
kcv_control(NAME softmax.exit0 OP softmax CANDIDATE ${CONTROL_DIR}/softmax_exit0.c EXPECT FAIL FAILS ${softmax_all_gates})
kcv_control(NAME softmax._exit0 OP softmax CANDIDATE ${CONTROL_DIR}/softmax__exit0.c EXPECT FAIL FAILS ${softmax_all_gates})
unset(softmax_all_gates)

# Prebuilt shared objects (no source for kcv): the sanitizer gate runs them under valgrind memcheck.
foreach(ctl softmax_ok softmax_heap_overflow)
  add_library(prebuilt_${ctl} MODULE ${CONTROL_DIR}/${ctl}.c)
  target_include_directories(prebuilt_${ctl} PRIVATE ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(prebuilt_${ctl} PRIVATE m)
  set_target_properties(prebuilt_${ctl} PROPERTIES PREFIX "" OUTPUT_NAME ${ctl}
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/prebuilt-controls)
endforeach()
kcv_control(NAME softmax.prebuilt_ok OP softmax CANDIDATE $<TARGET_FILE:prebuilt_softmax_ok> EXPECT PASS)
kcv_control(NAME softmax.prebuilt_heap_overflow OP softmax CANDIDATE $<TARGET_FILE:prebuilt_softmax_heap_overflow>
            EXPECT FAIL FAILS sanitizer)
