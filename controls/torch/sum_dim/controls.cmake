# KernelBench-format controls of the derived bound (issue 27; docs/kernelbench.md, "The error bound,
# derived"): the problem itself, its fp32 rewrites in other orders (must pass every gate on cpu),
# bf16 accumulation (must fail numerics), and torch.compile on cuda.
set(p ${CONTROL_DIR}/problem.py)
kcv_torch_control(NAME sum_dim.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME sum_dim.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME sum_dim.pairwise PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_pairwise.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME sum_dim.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME sum_dim.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)
