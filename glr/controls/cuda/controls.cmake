# GPU controls for the glr contracts (cuda backend, issue 18); see tests/controls.cmake. Each .cu is a
# few lines over include/glr/cuda/candidate.cuh, which runs the library's own kernels
# (include/glr/cuda/sm90/); a negative control is the same kernel with one compile-time fault
# (include/glr/cuda/sm90/fault.cuh), and its header names the bug and the gate that must catch it.
#
# Positive: every glr contract (kcv contracts): fwd/bwd x vector/scalar x fixed/varlen x f32/bf16/f16.
# The candidate front takes the gate form from g's rank and the dtype from q's; each file names its
# contracts' dtype (GLR_ONLY_F32|BF16|F16) and, for the forward, GLR_FORWARD_ONLY, so that it compiles only
# those kernels (include/glr/cuda/built.hpp: all 161 kernels took about 150 s a file on the H200 host; a
# bf16 backward file builds about half of them, a forward one about a quarter). One file serves the
# vector and the scalar contract of its direction, length kind and dtype.
# (Written out, not looped: scripts/verify_controls.py reads these declarations as they stand.)
kcv_control(NAME glr_fwd OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_bf16 OP glr_fwd_bf16 CANDIDATE ${CONTROL_DIR}/glr_fwd_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_f16 OP glr_fwd_f16 CANDIDATE ${CONTROL_DIR}/glr_fwd_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_scalar OP glr_fwd_scalar CANDIDATE ${CONTROL_DIR}/glr_fwd.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_scalar_bf16 OP glr_fwd_scalar_bf16 CANDIDATE ${CONTROL_DIR}/glr_fwd_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_scalar_f16 OP glr_fwd_scalar_f16 CANDIDATE ${CONTROL_DIR}/glr_fwd_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_varlen OP glr_fwd_varlen CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_varlen_bf16 OP glr_fwd_varlen_bf16 CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_varlen_f16 OP glr_fwd_varlen_f16 CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_varlen_scalar OP glr_fwd_varlen_scalar CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_varlen_scalar_bf16 OP glr_fwd_varlen_scalar_bf16 CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_fwd_varlen_scalar_f16 OP glr_fwd_varlen_scalar_f16 CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd OP glr_bwd CANDIDATE ${CONTROL_DIR}/glr_bwd.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_bf16 OP glr_bwd_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_f16 OP glr_bwd_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_scalar OP glr_bwd_scalar CANDIDATE ${CONTROL_DIR}/glr_bwd.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_scalar_bf16 OP glr_bwd_scalar_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_scalar_f16 OP glr_bwd_scalar_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen OP glr_bwd_varlen CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_bf16 OP glr_bwd_varlen_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_f16 OP glr_bwd_varlen_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_scalar OP glr_bwd_varlen_scalar CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_scalar_bf16 OP glr_bwd_varlen_scalar_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_scalar_f16 OP glr_bwd_varlen_scalar_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_f16.cu EXPECT PASS BACKEND cuda)

# The backward from a forward's kept states (glr::cuda::FwdParams::saved, issue 19: what glr_torch's
# autograd runs): the 16-bit contracts, whose split kernels keep them.
kcv_control(NAME glr_bwd_bf16.saved OP glr_bwd_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_saved_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_f16.saved OP glr_bwd_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_saved_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_scalar_bf16.saved OP glr_bwd_scalar_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_saved_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_scalar_f16.saved OP glr_bwd_scalar_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_saved_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_bf16.saved OP glr_bwd_varlen_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_saved_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_f16.saved OP glr_bwd_varlen_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_saved_f16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_scalar_bf16.saved OP glr_bwd_varlen_scalar_bf16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_saved_bf16.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME glr_bwd_varlen_scalar_f16.saved OP glr_bwd_varlen_scalar_f16 CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_saved_f16.cu EXPECT PASS BACKEND cuda)

# Negative: the issue's seven GPU flaws, each on the contract where it shows.
kcv_control(NAME glr_fwd.gate_after_update OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_gate_after_update.cu
            EXPECT FAIL FAILS numerics BACKEND cuda)
kcv_control(NAME glr_fwd.drop_last_state OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_drop_last_state.cu
            EXPECT FAIL FAILS shapes BACKEND cuda)
kcv_control(NAME glr_fwd.mask_by_multiply OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_mask_by_multiply.cu
            EXPECT FAIL FAILS nonfinite BACKEND cuda)
kcv_control(NAME glr_fwd_bf16.state_bf16 OP glr_fwd_bf16 CANDIDATE ${CONTROL_DIR}/glr_fwd_state_bf16.cu
            EXPECT FAIL FAILS shapes PASSES layout stateless concurrency BACKEND cuda)
kcv_control(NAME glr_fwd_varlen.bleed OP glr_fwd_varlen CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_bleed.cu
            EXPECT FAIL FAILS numerics BACKEND cuda)
kcv_control(NAME glr_fwd.inter_race OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_inter_race.cu
            EXPECT FAIL FAILS sanitizer BACKEND cuda)
kcv_control(NAME glr_fwd.default_stream OP glr_fwd CANDIDATE ${CONTROL_DIR}/glr_fwd_default_stream.cu
            EXPECT FAIL FAILS concurrency BACKEND cuda)
