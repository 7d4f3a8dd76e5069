# matmul controls, cpu backend (tests/controls.cmake sets CONTROL_DIR). Each file's header says
# what it is and, for a negative control, its bug and the gate that must catch it.

# Positive, clean-refusal and error-model controls: must pass every gate.
kcv_control(NAME matmul.ok OP matmul CANDIDATE ${CONTROL_DIR}/matmul_ok.c EXPECT PASS)
kcv_control(NAME matmul.refuses_strided OP matmul CANDIDATE ${CONTROL_DIR}/matmul_refuses_strided.c EXPECT PASS)
kcv_control(NAME matmul.sum_pairwise OP matmul CANDIDATE ${CONTROL_DIR}/matmul_sum_pairwise.c EXPECT PASS)
kcv_control(NAME matmul.sum_blocked OP matmul CANDIDATE ${CONTROL_DIR}/matmul_sum_blocked.c EXPECT PASS)

# Negative controls: one bug each, and the gate that must not pass.
kcv_control(NAME matmul.tf32 OP matmul CANDIDATE ${CONTROL_DIR}/matmul_tf32.c EXPECT FAIL FAILS numerics
            PASSES layout stateless concurrency)
kcv_control(NAME matmul.bf16_accumulate OP matmul CANDIDATE ${CONTROL_DIR}/matmul_bf16_accumulate.c
            EXPECT FAIL FAILS numerics PASSES layout stateless concurrency)
kcv_control(NAME matmul.drops_tail OP matmul CANDIDATE ${CONTROL_DIR}/matmul_drops_tail.c EXPECT FAIL FAILS shapes)
kcv_control(NAME matmul.nan_laundering OP matmul CANDIDATE ${CONTROL_DIR}/matmul_nan_laundering.c
            EXPECT FAIL FAILS nonfinite)
kcv_control(NAME matmul.accumulates_into_output OP matmul CANDIDATE ${CONTROL_DIR}/matmul_accumulates_into_output.c
            EXPECT FAIL FAILS coverage)
kcv_control(NAME matmul.ignores_strides OP matmul CANDIDATE ${CONTROL_DIR}/matmul_ignores_strides.c
            EXPECT FAIL FAILS layout)
