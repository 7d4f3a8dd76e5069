# add controls, cpu backend (tests/controls.cmake sets CONTROL_DIR). Each file's header says
# what it is and, for a negative control, its bug and the gate that must catch it.

# Positive controls, in C and in C++ (kcv's two host build paths).
kcv_control(NAME add.ok OP add CANDIDATE ${CONTROL_DIR}/add_ok.c EXPECT PASS)
kcv_control(NAME add.ok_cxx OP add CANDIDATE ${CONTROL_DIR}/add_ok_cxx.cpp EXPECT PASS)

# Negative controls.
kcv_control(NAME add.drops_tail OP add CANDIDATE ${CONTROL_DIR}/add_drops_tail.c EXPECT FAIL FAILS shapes)
kcv_control(NAME add.caches_by_ends OP add CANDIDATE ${CONTROL_DIR}/add_caches_by_ends.c EXPECT FAIL FAILS stateless
            PASSES numerics shapes values nonfinite coverage determinism layout)

# A refusal message with a control character, an escape sequence and bytes that are not UTF-8:
# the JSON and JUnit reports still parse and the terminal shows no raw escape (issue 21 item 6).
kcv_control(NAME add.hostile_refusal OP add CANDIDATE ${CONTROL_DIR}/add_hostile_refusal.c EXPECT FAIL
            FAILS numerics PARSE_REPORTS)

# Split across files: add_ok.c with its helpers in split/add_args.h. The plain and the sanitized
# builds compile kcv's private copy of the candidate's directory (docs/security.md).
kcv_control(NAME add.ok_split OP add CANDIDATE ${CONTROL_DIR}/add_ok_split.c EXPECT PASS)
