# KernelBench-format controls on cross_entropy (an integer input, a 0-d output), cpu.
set(p ${CONTROL_DIR}/problem.py)
kcv_torch_control(NAME cross_entropy.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cross_entropy.ok PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_ok.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cross_entropy.unshifted PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_unshifted.py
                  EXPECT FAIL FAILS values BASELINE pass ARGS --gates values,numerics)
