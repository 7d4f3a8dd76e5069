# KernelBench-format controls on a deep matmul (K = 16384, 32 x 32 output): TF32 must fail the bound
# calibrated on fp32 eager's error (issue 21 item 3; docs/population-test.md, "Limits"). KernelBench's
# own allclose fails it too at this depth.
set(p ${CONTROL_DIR}/problem.py)
kcv_torch_control(NAME matmul_large_k.tf32 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_tf32.py
                  EXPECT FAIL FAILS numerics BASELINE fail ARGS --gates numerics)
kcv_torch_control(NAME matmul_large_k.tf32 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_tf32.py
                  EXPECT FAIL FAILS numerics BASELINE fail BACKEND cuda ARGS --gates numerics)
kcv_torch_control(NAME matmul_large_k.tf32_cublas PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_tf32_cuda.py
                  EXPECT FAIL FAILS numerics BASELINE fail BACKEND cuda ARGS --gates numerics)
# bf16 (issue 27): operands rounded to bf16, and a bf16 split-K workspace; the derived bound must
# reject both (numerics), as it rejects TF32 (its population test at this depth).
kcv_torch_control(NAME matmul_large_k.bf16_operands PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_bf16_operands.py
                  EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME matmul_large_k.bf16_accumulate PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_bf16_accumulate.py
                  EXPECT FAIL FAILS numerics ARGS --gates numerics)
# The calibrated bound (KCV_TORCH_BOUND=calibrated), kept as the switch back: TF32 fails it too.
kcv_torch_control(NAME matmul_large_k.tf32_calibrated PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_tf32.py
                  EXPECT FAIL FAILS numerics BASELINE fail ENV KCV_TORCH_BOUND=calibrated ARGS --gates numerics)
