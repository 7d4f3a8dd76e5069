# GPU controls for the softmax contract (cuda backend); see tests/controls.cmake. Each .cu starts
# with what it is and, for a negative control, the exact bug and the gate that must catch it.
# softmax.stale_output, softmax.zeroes_inputs and softmax.own_stream are KernelBench's three
# exploit patterns (a), (b), (c) re-expressed in the ABI (issue 4, item 3).
kcv_control(NAME softmax.ok OP softmax CANDIDATE ${CONTROL_DIR}/softmax_ok.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME softmax.drops_tail OP softmax CANDIDATE ${CONTROL_DIR}/softmax_drops_tail.cu EXPECT FAIL
            FAILS shapes BACKEND cuda)
kcv_control(NAME softmax.unstabilized_exp OP softmax CANDIDATE ${CONTROL_DIR}/softmax_unstabilized_exp.cu EXPECT FAIL
            FAILS values BACKEND cuda)
kcv_control(NAME softmax.nan_laundering OP softmax CANDIDATE ${CONTROL_DIR}/softmax_nan_laundering.cu EXPECT FAIL
            FAILS nonfinite BACKEND cuda)
kcv_control(NAME softmax.mutates_input OP softmax CANDIDATE ${CONTROL_DIR}/softmax_mutates_input.cu EXPECT FAIL
            FAILS inputs_intact BACKEND cuda)
kcv_control(NAME softmax.atomic_sum OP softmax CANDIDATE ${CONTROL_DIR}/softmax_atomic_sum.cu EXPECT FAIL
            FAILS determinism BACKEND cuda)
kcv_control(NAME softmax.ignores_strides OP softmax CANDIDATE ${CONTROL_DIR}/softmax_ignores_strides.cu EXPECT FAIL
            FAILS layout LIBRARY layout BACKEND cuda)
kcv_control(NAME softmax.pointer_cache OP softmax CANDIDATE ${CONTROL_DIR}/softmax_pointer_cache.cu EXPECT FAIL
            FAILS stateless BACKEND cuda)
kcv_control(NAME softmax.default_stream OP softmax CANDIDATE ${CONTROL_DIR}/softmax_default_stream.cu EXPECT FAIL
            FAILS concurrency LIBRARY concurrency BACKEND cuda)
kcv_control(NAME softmax.shared_race OP softmax CANDIDATE ${CONTROL_DIR}/softmax_shared_race.cu EXPECT FAIL
            FAILS sanitizer BACKEND cuda)
# KernelBench exploits: (a) output left unwritten, (b) inputs zeroed, (c) work on its own stream.
kcv_control(NAME softmax.stale_output OP softmax CANDIDATE ${CONTROL_DIR}/softmax_stale_output.cu EXPECT FAIL
            FAILS numerics coverage BACKEND cuda)
kcv_control(NAME softmax.zeroes_inputs OP softmax CANDIDATE ${CONTROL_DIR}/softmax_zeroes_inputs.cu EXPECT FAIL
            FAILS inputs_intact BACKEND cuda)
kcv_control(NAME softmax.own_stream OP softmax CANDIDATE ${CONTROL_DIR}/softmax_own_stream.cu EXPECT FAIL
            FAILS concurrency OWN concurrency BACKEND cuda)
# Production's way of calling (issue 26): the null stream handle, exact-size buffers of their own,
# thousands of calls in one process.
kcv_control(NAME softmax.null_stream_only OP softmax CANDIDATE ${CONTROL_DIR}/softmax_null_stream_only.cu
            EXPECT FAIL FAILS numerics values OWN numerics values BACKEND cuda)
kcv_control(NAME softmax.allocation_probe OP softmax CANDIDATE ${CONTROL_DIR}/softmax_allocation_probe.cu
            EXPECT FAIL FAILS numerics values BACKEND cuda)
kcv_control(NAME softmax.call_count_bomb OP softmax CANDIDATE ${CONTROL_DIR}/softmax_call_count_bomb.cu
            EXPECT FAIL FAILS stateless BACKEND cuda)
kcv_control(NAME softmax.overread OP softmax CANDIDATE ${CONTROL_DIR}/softmax_overread.cu EXPECT FAIL
            FAILS sanitizer BACKEND cuda)
# Verification that looks like production (issue 25 class 3; docs/security.md): each passed every
# gate before its protection. --seed 1 fixes which cases draw offsets and stale data; the draws are
# checked on a CPU (tests/unit/engine/test_placement.cpp).
kcv_control(NAME softmax.fixed_offset_tell OP softmax CANDIDATE ${CONTROL_DIR}/softmax_fixed_offset_tell.cu EXPECT FAIL
            FAILS numerics shapes values PASSES bounds EVIDENCE "past their 4096-byte leading guard band" BACKEND cuda
            ARGS --gates numerics,shapes,values,bounds --seed 1)
kcv_control(NAME softmax.skips_computed_output OP softmax CANDIDATE ${CONTROL_DIR}/softmax_skips_computed_output.cu
            EXPECT FAIL FAILS numerics shapes values EVIDENCE "elements outside the model" BACKEND cuda
            ARGS --gates numerics,shapes,values --seed 1)
