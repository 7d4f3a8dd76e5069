# KernelBench-format controls of the derived bound (issue 27; docs/kernelbench.md, "The error bound,
# derived"), one directory so that every solution's private copy (kcv copies the solution's
# directory) holds the one orders.py they import: per op, the problem itself, its fp32 rewrites in
# other orders (must pass every gate on cpu), bf16 accumulation (must fail numerics), and
# torch.compile on cuda. Files: <op>_problem.py, <op>_solution_<variant>.py.

# ---- cumprod
set(p ${CONTROL_DIR}/cumprod_problem.py)
kcv_torch_control(NAME cumprod.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cumprod.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumprod_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME cumprod.hillis_steele PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumprod_solution_hillis_steele.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME cumprod.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumprod_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)

# ---- cosine_loss (written after the issue's list: an op none of the controls above named; the
# problem as its own candidate is not a test here, as the 250 reference controls are not: kept for CI's time)
set(p ${CONTROL_DIR}/cosine_loss_problem.py)
kcv_torch_control(NAME cosine_loss.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cosine_loss_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME cosine_loss.sequential PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cosine_loss_solution_sequential.py EXPECT PASS
                  BASELINE pass)
# The issue's class on an op it did not name: the calibrated bound rejects the sequential kernel on
# "all equal" (3.5x to 22x the bound at seeds 1, 2, 3; seed 7 passes by luck), the derived bound
# accepts it at every seed. Pinned to seed 1 (21.7x), as mse_loss.sequential_calibrated.
kcv_torch_control(NAME cosine_loss.sequential_calibrated PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cosine_loss_solution_sequential.py
                  EXPECT FAIL FAILS values ENV KCV_TORCH_BOUND=calibrated ARGS --gates values --seed 1)

# ---- cumsum
set(p ${CONTROL_DIR}/cumsum_problem.py)
kcv_torch_control(NAME cumsum.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cumsum.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumsum_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME cumsum.chunked PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumsum_solution_chunked.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME cumsum.hillis_steele PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumsum_solution_hillis_steele.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
# Inductor's scan is not run-to-run reproducible (issue 27): determinism must fail, and coverage
# must not blame the prefill for it; every other gate must pass.
kcv_torch_control(NAME cumsum.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/cumsum_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,layout,stateless,concurrency)

# ---- kl_div
set(p ${CONTROL_DIR}/kl_div_problem.py)
# torch's own CPU sum over 2^18 terms adds in an order that depends on its thread count, which the
# cpu determinism gate varies: the problem itself is judged at every gate but that one.
kcv_torch_control(NAME kl_div.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass ARGS --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,layout,stateless,concurrency,sanitizer)
kcv_torch_control(NAME kl_div.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/kl_div_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME kl_div.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/kl_div_solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME kl_div.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/kl_div_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)

# ---- l2_norm
set(p ${CONTROL_DIR}/l2_norm_problem.py)
kcv_torch_control(NAME l2_norm.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME l2_norm.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/l2_norm_solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME l2_norm.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/l2_norm_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)

# ---- logsumexp (written after the issue's list: the one-pass formula GPU kernels use)
set(p ${CONTROL_DIR}/logsumexp_problem.py)
kcv_torch_control(NAME logsumexp.online_bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/logsumexp_solution_online_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME logsumexp.online PROBLEM ${p} SOLUTION ${CONTROL_DIR}/logsumexp_solution_online.py EXPECT PASS BASELINE pass)

# ---- mse_loss
set(p ${CONTROL_DIR}/mse_loss_problem.py)
# torch's own CPU mean over 2^18 terms sums in an order that depends on its thread count, which the
# cpu determinism gate varies: the problem itself is judged at every gate but that one.
kcv_torch_control(NAME mse_loss.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass ARGS --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,layout,stateless,concurrency,sanitizer)
kcv_torch_control(NAME mse_loss.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/mse_loss_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME mse_loss.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/mse_loss_solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME mse_loss.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/mse_loss_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)
# The calibrated bound (KCV_TORCH_BOUND=calibrated, the switch back) hangs on eager's luck: on
# "all equal" inputs it rejects the sequential order the derived bound accepts (issue 27).
kcv_torch_control(NAME mse_loss.sequential PROBLEM ${p} SOLUTION ${CONTROL_DIR}/mse_loss_solution_sequential.py EXPECT PASS
                  BASELINE pass)
# Under a fresh seed the calibrated bound's miss is a matter of luck too: the "all equal" case draws
# one value per input, and for some values the sequential sum's rounding stays inside the bound and
# it passes (4 of 16 seeds on cpu, session 24: seeds 1, 8, 13 and CI's 2189899204530013839 pass; the
# others fail at 1.2x to 21x the bound). The seed is pinned to one that fails at 18x, so the control
# says what the calibrated bound does on that input every run, not what a draw happened to give.
kcv_torch_control(NAME mse_loss.sequential_calibrated PROBLEM ${p} SOLUTION ${CONTROL_DIR}/mse_loss_solution_sequential.py
                  EXPECT FAIL FAILS values ENV KCV_TORCH_BOUND=calibrated ARGS --gates values --seed 7)

# ---- softmax
set(p ${CONTROL_DIR}/softmax_problem.py)
kcv_torch_control(NAME softmax.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME softmax.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/softmax_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME softmax.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/softmax_solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME softmax.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/softmax_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)

# ---- sum_dim
set(p ${CONTROL_DIR}/sum_dim_problem.py)
kcv_torch_control(NAME sum_dim.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME sum_dim.bf16 PROBLEM ${p} SOLUTION ${CONTROL_DIR}/sum_dim_solution_bf16.py EXPECT FAIL FAILS numerics ARGS --gates numerics)
kcv_torch_control(NAME sum_dim.pairwise PROBLEM ${p} SOLUTION ${CONTROL_DIR}/sum_dim_solution_pairwise.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME sum_dim.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/sum_dim_solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME sum_dim.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/sum_dim_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)

# ---- triplet_margin
set(p ${CONTROL_DIR}/triplet_margin_problem.py)
kcv_torch_control(NAME triplet_margin.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME triplet_margin.split PROBLEM ${p} SOLUTION ${CONTROL_DIR}/triplet_margin_solution_split.py EXPECT PASS BASELINE pass)
# torch.compile (cuda, torch >= 2; skipped, saying so, where torch has no torch.compile): Inductor's
# own kernels for the problem, every gate but sanitizer, each new shape within the compile grace.
kcv_torch_control(NAME triplet_margin.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/triplet_margin_solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda REQUIRES torch_compile ARGS --timeout 10 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)
