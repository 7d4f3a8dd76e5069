# glr controls on the CPU backend (issue 3). Positive: the chunked fp32 algorithm of
# include/glr/cpu_chunked.hpp, each file verified against the vector- and the scalar-gate contract
# (the candidate follows g's rank). Negative: one flaw each, and the gate that must catch it.
foreach(form "" "_scalar")
  kcv_control(NAME glr_fwd_chunked${form} OP glr_fwd${form}
              CANDIDATE ${CONTROL_DIR}/glr_fwd_chunked.cpp EXPECT PASS)
  kcv_control(NAME glr_bwd_chunked${form} OP glr_bwd${form}
              CANDIDATE ${CONTROL_DIR}/glr_bwd_chunked.cpp EXPECT PASS)
  kcv_control(NAME glr_fwd_varlen_chunked${form} OP glr_fwd_varlen${form}
              CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_chunked.cpp EXPECT PASS)
  kcv_control(NAME glr_bwd_varlen_chunked${form} OP glr_bwd_varlen${form}
              CANDIDATE ${CONTROL_DIR}/glr_bwd_varlen_chunked.cpp EXPECT PASS)
endforeach()

kcv_control(NAME glr_fwd_mask_by_multiply OP glr_fwd
            CANDIDATE ${CONTROL_DIR}/glr_fwd_mask_by_multiply.cpp EXPECT FAIL FAILS nonfinite)
kcv_control(NAME glr_fwd_drop_last_chunk OP glr_fwd
            CANDIDATE ${CONTROL_DIR}/glr_fwd_drop_last_chunk.cpp EXPECT FAIL FAILS shapes)
kcv_control(NAME glr_fwd_gate_after_add OP glr_fwd
            CANDIDATE ${CONTROL_DIR}/glr_fwd_gate_after_add.cpp EXPECT FAIL FAILS numerics)
kcv_control(NAME glr_fwd_varlen_h0_first_only OP glr_fwd_varlen
            CANDIDATE ${CONTROL_DIR}/glr_fwd_varlen_h0_first_only.cpp EXPECT FAIL FAILS numerics)
