# KernelBench-format controls on linear_gelu (weights from nn.Linear under the init seed), cpu.
set(p ${CONTROL_DIR}/problem.py)
kcv_torch_control(NAME linear_gelu.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME linear_gelu.ok PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_ok.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME linear_gelu.bf16_matmul PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_bf16_matmul.py
                  EXPECT FAIL FAILS numerics BASELINE pass ARGS --gates numerics,shapes)
