# KernelBench-format controls on the rowsum problem, cpu (tests/controls.cmake). Each solution's
# header says what it is and, for a negative control, its bug and the gate that must catch it.
# Positive controls run all 12 gates; negative ones run their gate (and numerics, which they pass
# unless said).
set(p ${CONTROL_DIR}/problem.py)
kcv_torch_control(NAME rowsum.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass)
kcv_torch_control(NAME rowsum.ok PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_ok.py EXPECT PASS BASELINE pass)
kcv_torch_control(NAME rowsum.ext_ok PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_ext_ok.py EXPECT PASS BASELINE pass)
# Catches a C++ exception torch throws: the sanitizer gate's preloaded ASan must let it through.
kcv_torch_control(NAME rowsum.catches_torch_error PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_catches_torch_error.py
                  EXPECT PASS BASELINE pass)
# Split across modules, the solution's and the problem's: each imports a module beside it, which
# kcv's private copies of their directories must carry (docs/security.md).
# A helper process started by the first call and kept (as Inductor's compile workers): contained
# by the worker's namespace, not a side effect of a torch candidate (docs/security.md).
kcv_torch_control(NAME rowsum.keeps_a_helper_process PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_keeps_a_helper_process.py
                  EXPECT PASS BASELINE pass ARGS --gates numerics,shapes,determinism,stateless)
kcv_torch_control(NAME rowsum.split PROBLEM ${CONTROL_DIR}/problem_waits.py SOLUTION ${CONTROL_DIR}/solution_split.py
                  EXPECT PASS BASELINE pass)

# convention: OWN (the gate fails where the problem itself calls the solution) or LIBRARY (only
# as a library op: strided views, two callers at once); issue 21 item 4.
function(rowsum_negative name gate baseline convention)
  kcv_torch_control(NAME rowsum.${name} PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_${name}.py EXPECT FAIL
                    FAILS ${gate} ${convention} ${gate} BASELINE ${baseline} ARGS --gates ${gate},numerics)
endfunction()
rowsum_negative(bf16 numerics fail OWN)
rowsum_negative(fixed_dim shapes pass OWN)
rowsum_negative(saturates values pass OWN)
rowsum_negative(nan_laundering nonfinite pass OWN)
rowsum_negative(oob_write bounds pass OWN)
rowsum_negative(mutates_input inputs_intact pass OWN)
rowsum_negative(stale_output coverage fail OWN)
rowsum_negative(stale_by_reuse coverage fail OWN)
rowsum_negative(random_order determinism pass OWN)
kcv_torch_control(NAME rowsum.dithers PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_dithers.py EXPECT FAIL
                  FAILS determinism PASSES coverage numerics BASELINE pass ARGS --gates determinism,coverage,numerics)
rowsum_negative(assumes_contiguous layout pass LIBRARY)
# Its only bug is a state bug: numerics must pass, which it does only if no fresh input ever lands
# at an address where it cached another input's result (issue 26, run 6).
kcv_torch_control(NAME rowsum.caches_by_address PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_caches_by_address.py
                  EXPECT FAIL FAILS stateless PASSES numerics BASELINE pass ARGS --gates stateless,numerics)
rowsum_negative(shared_scratch concurrency pass LIBRARY)
rowsum_negative(ext_heap_overflow sanitizer pass OWN)

# Hostile candidates: each gate reports CRASH or TIMEOUT; the verifier finishes with a verdict.
function(rowsum_hostile name)
  kcv_torch_control(NAME rowsum.${name} PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_${name}.py EXPECT FAIL
                    FAILS numerics shapes BASELINE fail ARGS --gates numerics,shapes --timeout 3 --compile-grace 4)
endfunction()
# Compile grace (issue 21 item 2): a first call at each new shape that takes 6 s, as a JIT compiling
# there, passes with --timeout 2 (the grace is 300 s); a hang on a later call, and a call at a shape
# already seen that outlasts the timeout, are TIMEOUT all the same.
kcv_torch_control(NAME rowsum.compiles_per_shape PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_compiles_per_shape.py
                  EXPECT PASS BASELINE pass ARGS --gates numerics,coverage,layout --timeout 2)
kcv_torch_control(NAME rowsum.compiles_then_hangs PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_compiles_then_hangs.py
                  EXPECT FAIL FAILS numerics TIMEOUTS numerics BASELINE fail ARGS --gates numerics --timeout 2)
kcv_torch_control(NAME rowsum.slow_every_call PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_slow_every_call.py
                  EXPECT FAIL FAILS numerics TIMEOUTS numerics BASELINE fail ARGS --gates numerics --timeout 2)
rowsum_hostile(exits)
rowsum_hostile(segfault)
rowsum_hostile(hangs)

# cuda (skipped without a GPU): a load_inline CUDA kernel, correct and with two bugs that only a
# GPU shows (cuda_rowsum.py).
kcv_torch_control(NAME rowsum.reference PROBLEM ${p} SOLUTION ${p} EXPECT PASS BASELINE pass BACKEND cuda)
kcv_torch_control(NAME rowsum.cuda_ok PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_cuda_ok.py EXPECT PASS
                  BASELINE pass BACKEND cuda)
# torch.compile (Inductor's Triton kernels): each new shape compiles within the compile grace; the
# per-call timeout stays short so that the grace is what lets those calls finish. Not sanitizer:
# Triton kernels compiled under compute-sanitizer are a run of their own.
kcv_torch_control(NAME rowsum.torch_compile PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_torch_compile.py EXPECT PASS
                  BASELINE pass BACKEND cuda ARGS --timeout 5 --gates
                  numerics,shapes,values,nonfinite,bounds,inputs_intact,coverage,determinism,layout,stateless,concurrency)
kcv_torch_control(NAME rowsum.cuda_default_stream PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_cuda_default_stream.py
                  EXPECT FAIL FAILS concurrency LIBRARY concurrency BASELINE pass BACKEND cuda ARGS --gates concurrency,numerics)
kcv_torch_control(NAME rowsum.cuda_shared_race PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_cuda_shared_race.py
                  EXPECT FAIL FAILS sanitizer BASELINE pass BACKEND cuda ARGS --gates sanitizer,numerics)
kcv_torch_control(NAME rowsum.cuda_tail_overrun PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_cuda_tail_overrun.py
                  EXPECT FAIL FAILS sanitizer BASELINE pass BACKEND cuda ARGS --gates sanitizer,numerics)
# cuda, kcv's own torch processes: the worker and the reference server wait for the GPU by blocking,
# not spinning (kcv_torch_common.sleep_while_waiting_for_the_gpu). Each control adds 1 to its outputs
# when its process spins (gpu_waits.py), so numerics fails if kcv forgets.
kcv_torch_control(NAME rowsum.cuda_worker_waits PROBLEM ${p} SOLUTION ${CONTROL_DIR}/solution_cuda_waits.py EXPECT PASS
                  BASELINE pass BACKEND cuda ARGS --gates numerics)
kcv_torch_control(NAME rowsum.cuda_reference_waits PROBLEM ${CONTROL_DIR}/problem_waits.py
                  SOLUTION ${CONTROL_DIR}/solution_cuda_ok.py EXPECT PASS BASELINE pass BACKEND cuda ARGS --gates numerics)
