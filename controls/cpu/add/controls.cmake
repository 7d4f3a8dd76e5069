# add controls, cpu backend (tests/controls.cmake sets CONTROL_DIR). Each file's header says
# what it is and, for a negative control, its bug and the gate that must catch it.

# Positive controls, in C and in C++ (kcv's two host build paths).
kcv_control(NAME add.ok OP add CANDIDATE ${CONTROL_DIR}/add_ok.c EXPECT PASS)
kcv_control(NAME add.ok_cxx OP add CANDIDATE ${CONTROL_DIR}/add_ok_cxx.cpp EXPECT PASS)

# Negative controls.
kcv_control(NAME add.drops_tail OP add CANDIDATE ${CONTROL_DIR}/add_drops_tail.c EXPECT FAIL FAILS shapes)
kcv_control(NAME add.caches_by_ends OP add CANDIDATE ${CONTROL_DIR}/add_caches_by_ends.c EXPECT FAIL FAILS stateless
            PASSES numerics shapes values nonfinite coverage determinism layout)
