# GPU controls for the glr contracts (cuda backend, issue 18); see tests/controls.cmake. Each .cu is a
# few lines over include/glr/cuda/candidate.cuh, which runs the library's own kernels
# (include/glr/cuda/sm90/); a negative control is the same kernel with one compile-time fault
# (include/glr/cuda/sm90/fault.cuh), and its header names the bug and the gate that must catch it.
#
# Positive: every glr contract (kcv contracts): fwd/bwd x vector/scalar x fixed/varlen x f32/bf16/f16.
# The candidate takes the gate form from g's rank and the dtype from q's, so one file serves the six
# contracts of its direction and length kind.
foreach(dir fwd bwd)
  foreach(len "" "_varlen")
    foreach(form "" "_scalar")
      foreach(dt "" "_bf16" "_f16")
        set(op glr_${dir}${len}${form}${dt})
        kcv_control(NAME ${op} OP ${op} CANDIDATE ${CONTROL_DIR}/glr_${dir}${len}.cu EXPECT PASS BACKEND cuda)
      endforeach()
    endforeach()
  endforeach()
endforeach()

# Negative: the issue's seven GPU flaws, each on the contract where it shows.
kcv_control(NAME glr_fwd.gate_after_update OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_gate_after_update.cu
            EXPECT FAIL FAILS numerics BACKEND cuda)
kcv_control(NAME glr_fwd.drop_last_state OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_drop_last_state.cu
            EXPECT FAIL FAILS shapes BACKEND cuda)
kcv_control(NAME glr_fwd.mask_by_multiply OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_mask_by_multiply.cu
            EXPECT FAIL FAILS nonfinite BACKEND cuda)
kcv_control(NAME glr_fwd_bf16.state_bf16 OP glr_fwd_bf16 CANDIDATE ${CONTROL_DIR}/glr_fwd_state_bf16.cu
            EXPECT FAIL FAILS numerics PASSES layout stateless concurrency BACKEND cuda)
kcv_control(NAME glr_fwd_varlen.bleed OP glr_fwd_varlen CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_bleed.cu
            EXPECT FAIL FAILS numerics BACKEND cuda)
kcv_control(NAME glr_fwd.inter_race OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_inter_race.cu
            EXPECT FAIL FAILS sanitizer BACKEND cuda)
kcv_control(NAME glr_fwd.default_stream OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_default_stream.cu
            EXPECT FAIL FAILS concurrency BACKEND cuda)
