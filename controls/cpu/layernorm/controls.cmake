# layernorm controls, cpu backend (tests/controls.cmake sets CONTROL_DIR). Each file's header says
# what it is and, for a negative control, its bug and the gate that must catch it.

# Positive (double statistics) and the textbook all-fp32 version: both must pass every gate.
kcv_control(NAME layernorm.ok OP layernorm CANDIDATE ${CONTROL_DIR}/layernorm_ok.c EXPECT PASS)
kcv_control(NAME layernorm.fp32 OP layernorm CANDIDATE ${CONTROL_DIR}/layernorm_fp32.c EXPECT PASS)

# Negative control.
kcv_control(NAME layernorm.unbiased_var OP layernorm CANDIDATE ${CONTROL_DIR}/layernorm_unbiased_var.c
            EXPECT FAIL FAILS numerics)
