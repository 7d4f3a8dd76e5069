# KernelBench-format controls of the derived bound (issue 27; docs/kernelbench.md, "The error bound,
# derived"): the problem itself, its fp32 rewrites in other orders (must pass every gate on cpu),
# bf16 accumulation (must fail numerics), and torch.compile on cuda.
set(p ${CONTROL_DIR}/problem.py)
kcv_torch_control(NAME cumsum.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cumsum.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME cumsum.chunked PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_chunked.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cumsum.hillis_steele PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_hillis_steele.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
# Inductor's scan is not run-to-run reproducible (issue 27): determinism must fail, and coverage
# must not blame the prefill for it; every other gate must pass.
kcv_torch_control(NAME cumsum.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,layout,stateless,concurrency)
