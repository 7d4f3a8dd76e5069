/* compile_bomb.c: hostile control (issue 25, class 5). A preprocessor bomb: each macro expands to
 * four of the one before, so the compiler's time and memory grow as 4^12 tokens per use and it
 * never finishes in practice (it grew cc1 to 24 GB before a limit existed).
 * Expected: `kcv verify` stops the compile at --compile-timeout (or its memory cap) and exits 2
 * with a one-line reason (tests/unit/engine/test_sandbox.cpp). */
#include <kcv/abi.h>
#define A0 x+x+x+x
#define A1 A0+A0+A0+A0
#define A2 A1+A1+A1+A1
#define A3 A2+A2+A2+A2
#define A4 A3+A3+A3+A3
#define A5 A4+A4+A4+A4
#define A6 A5+A5+A5+A5
#define A7 A6+A6+A6+A6
#define A8 A7+A7+A7+A7
#define A9 A8+A8+A8+A8
#define A10 A9+A9+A9+A9
#define A11 A10+A10+A10+A10
#define A12 A11+A11+A11+A11
static int f(int x) { return A12 + A12 + A12 + A12; }
KCV_EXPORT int kcv_run(const kcv_call* c) { (void)c; return f(1) == 0; }
