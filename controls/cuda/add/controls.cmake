# GPU controls for the add contract (cuda backend); see tests/controls.cmake. Each .cu starts with
# what it is and, for a negative control, the exact bug and the gate that must catch it.
kcv_control(NAME add.ok OP add CANDIDATE ${CONTROL_DIR}/add_ok.cu EXPECT PASS BACKEND cuda)
# add_ok.cu with its helpers in split/add_args.cuh: nvcc finds them through kcv's private copy.
kcv_control(NAME add.ok_split OP add CANDIDATE ${CONTROL_DIR}/add_ok_split.cu EXPECT PASS BACKEND cuda)
# 16-byte vector loads on buffers it requires 256-byte aligned: kcv's varied placement (issue 25
# class 3) keeps every buffer 512-byte aligned outside the layout gate.
kcv_control(NAME add.ok_float4 OP add CANDIDATE ${CONTROL_DIR}/add_ok_float4.cu EXPECT PASS BACKEND cuda)
kcv_control(NAME add.drops_tail OP add CANDIDATE ${CONTROL_DIR}/add_drops_tail.cu EXPECT FAIL FAILS shapes BACKEND cuda)
kcv_control(NAME add.oob_write OP add CANDIDATE ${CONTROL_DIR}/add_oob_write.cu EXPECT FAIL FAILS bounds BACKEND cuda)
kcv_control(NAME add.uninit_read OP add CANDIDATE ${CONTROL_DIR}/add_uninit_read.cu EXPECT FAIL FAILS sanitizer
            BACKEND cuda)
# Hostile: a sticky device error, and a kernel that never ends. Every gate must not pass, and each
# gate's fresh worker must find the GPU working again.
kcv_control(NAME add.illegal_address OP add CANDIDATE ${CONTROL_DIR}/add_illegal_address.cu EXPECT FAIL
            FAILS numerics shapes values nonfinite bounds inputs_intact coverage determinism layout stateless
                  concurrency sanitizer BACKEND cuda)
kcv_control(NAME add.kernel_hang OP add CANDIDATE ${CONTROL_DIR}/add_kernel_hang.cu EXPECT FAIL
            FAILS numerics shapes values nonfinite bounds inputs_intact coverage determinism layout stateless
                  concurrency sanitizer BACKEND cuda ARGS --timeout 3)
