# matmul controls, cpu backend (tests/controls.cmake sets CONTROL_DIR). Each file's header says
# what it is and, for a negative control, its bug and the gate that must catch it.

# Positive, clean-refusal and error-model controls: must pass every gate.
kcv_control(NAME matmul.ok OP matmul CANDIDATE ${CONTROL_DIR}/matmul_ok.c EXPECT PASS)
kcv_control(NAME matmul.refuses_strided OP matmul CANDIDATE ${CONTROL_DIR}/matmul_refuses_strided.c EXPECT PASS)
kcv_control(NAME matmul.sum_pairwise OP matmul CANDIDATE ${CONTROL_DIR}/matmul_sum_pairwise.c EXPECT PASS)
kcv_control(NAME matmul.sum_blocked OP matmul CANDIDATE ${CONTROL_DIR}/matmul_sum_blocked.c EXPECT PASS)
kcv_control(NAME matmul.sum_kahan OP matmul CANDIDATE ${CONTROL_DIR}/matmul_sum_kahan.c EXPECT PASS)
kcv_control(NAME matmul.split_k OP matmul CANDIDATE ${CONTROL_DIR}/matmul_split_k.c EXPECT PASS)

# Negative controls: one bug each, and the gate that must not pass.
# Reduced precision in an fp32 contract fails at every K: the worst-case bound catches it at K = 128,
# the population test at large K, where the bound no longer sees it (docs/population-test.md;
# tests/unit/engine/test_population.cpp replays each at K = 128, 1000, 4096 and 16384).
kcv_control(NAME matmul.tf32 OP matmul CANDIDATE ${CONTROL_DIR}/matmul_tf32.c EXPECT FAIL FAILS numerics shapes
            PASSES layout stateless concurrency)
kcv_control(NAME matmul.tf32_truncated OP matmul CANDIDATE ${CONTROL_DIR}/matmul_tf32_truncated.c EXPECT FAIL
            FAILS numerics shapes PASSES layout stateless concurrency)
kcv_control(NAME matmul.bf16_operands OP matmul CANDIDATE ${CONTROL_DIR}/matmul_bf16_operands.c EXPECT FAIL
            FAILS numerics shapes PASSES layout stateless concurrency)
# TF32 only from K = 1000 on (issue 21 item 3): fp32 at the nominal K = 128, caught by shapes alone.
kcv_control(NAME matmul.tf32_large_k OP matmul CANDIDATE ${CONTROL_DIR}/matmul_tf32_large_k.c EXPECT FAIL
            FAILS shapes PASSES numerics values layout stateless concurrency)
kcv_control(NAME matmul.bf16_accumulate OP matmul CANDIDATE ${CONTROL_DIR}/matmul_bf16_accumulate.c
            EXPECT FAIL FAILS numerics PASSES layout stateless concurrency)
kcv_control(NAME matmul.drops_tail OP matmul CANDIDATE ${CONTROL_DIR}/matmul_drops_tail.c EXPECT FAIL FAILS shapes)
kcv_control(NAME matmul.nan_laundering OP matmul CANDIDATE ${CONTROL_DIR}/matmul_nan_laundering.c
            EXPECT FAIL FAILS nonfinite)
kcv_control(NAME matmul.accumulates_into_output OP matmul CANDIDATE ${CONTROL_DIR}/matmul_accumulates_into_output.c
            EXPECT FAIL FAILS coverage)
kcv_control(NAME matmul.ignores_strides OP matmul CANDIDATE ${CONTROL_DIR}/matmul_ignores_strides.c
            EXPECT FAIL FAILS layout)
