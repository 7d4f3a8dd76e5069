# GPU controls for the matmul contract (cuda backend); see tests/controls.cmake. Each .cu starts
# with what it is and, for a negative control, the exact bug and the gate that must catch it.
kcv_control(NAME matmul.ok OP matmul CANDIDATE ${CONTROL_DIR}/matmul_ok.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME matmul.tf32 OP matmul CANDIDATE ${CONTROL_DIR}/matmul_tf32.cu EXPECT FAIL FAILS numerics shapes
            PASSES layout stateless concurrency BACKEND cuda)
# TF32 only from K = 1000 on (issue 21 item 3): the population test in shapes (docs/population-test.md).
kcv_control(NAME matmul.tf32_large_k OP matmul CANDIDATE ${CONTROL_DIR}/matmul_tf32_large_k.cu EXPECT FAIL
            FAILS shapes PASSES numerics values layout stateless concurrency BACKEND cuda)
kcv_control(NAME matmul.accumulates_into_output OP matmul CANDIDATE ${CONTROL_DIR}/matmul_accumulates_into_output.cu
            EXPECT FAIL FAILS coverage BACKEND cuda)
