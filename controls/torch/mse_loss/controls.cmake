# KernelBench-format controls of the derived bound (issue 27; docs/kernelbench.md, "The error bound,
# derived"): the problem itself, its fp32 rewrites in other orders (must pass every gate on cpu),
# bf16 accumulation (must fail numerics), and torch.compile on cuda.
set(p ${CONTROL_DIR}/problem.py)
# torch's own CPU mean over 2^18 terms sums in an order that depends on its thread count, which the
# cpu determinism gate varies: the problem itself is judged at every gate but that one.
kcv_torch_control(NAME mse_loss.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass ARGS --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,layout,stateless,concurrency,sanitizer)
kcv_torch_control(NAME mse_loss.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME mse_loss.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME mse_loss.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)
# The calibrated bound (KCV_TORCH_BOUND=calibrated, the switch back) hangs on eager's luck: on
# "all equal" inputs it rejects the sequential order the derived bound accepts (issue 27).
kcv_torch_control(NAME mse_loss.sequential PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_sequential.py EXPECT PASS
                  BASELINE pass)
kcv_torch_control(NAME mse_loss.sequential_calibrated PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_sequential.py
                  EXPECT FAIL FAILS values ENV KCV_TORCH_BOUND=calibrated ARGS --gates values)
