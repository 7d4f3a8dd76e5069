# GPU controls for the add contract (cuda backend); see tests/controls.cmake. Each .cu starts with
# what it is and, for a negative control, the exact bug and the gate that must catch it.
kcv_control(NAME add.ok OP add CANDIDATE ${CONTROL_DIR}/add_ok.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME add.drops_tail OP add CANDIDATE ${CONTROL_DIR}/add_drops_tail.cu EXPECT FAIL FAILS shapes BACKEND cuda)
kcv_control(NAME add.oob_write OP add CANDIDATE ${CONTROL_DIR}/add_oob_write.cu EXPECT FAIL FAILS bounds BACKEND cuda)
kcv_control(NAME add.uninit_read OP add CANDIDATE ${CONTROL_DIR}/add_uninit_read.cu EXPECT FAIL FAILS sanitizer
            BACKEND cuda)
