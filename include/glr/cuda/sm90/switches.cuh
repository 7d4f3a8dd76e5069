/// glr CUDA family — the sm90 kernels' build switches, in one place (included first by common.cuh, so
/// every sm90 kernel file sees the same set).
///
/// A switch is a variant of one kernel that waits for its A/B on the H200 (bench/glr/device_ab.sh;
/// glr/CMakeLists.txt builds the timers `glr_{fwd,bwd}_time_<name>`). A variant that wins its A/B
/// joins GLR_NEXT below; GLR_NEXT becomes the default only after the gate run on it
/// (bench/results/glr-gates.md: glr_cuda_tests and every glr control, judged by kcv).
///
/// GLR_NEXT is how the next default set is built and judged without a branch of its own:
///   - binaries: `cmake -DGLR_DEFINES=GLR_NEXT` (glr/CMakeLists.txt) builds glr_cuda, glr_cuda_tests
///     and the timers with it, and writes the list to <build>/glr_defines.txt;
///   - gates: bench/glr/device_check.sh reads BINDIR/glr_defines.txt and gives kcv a copy of include/
///     whose copy of this file defines the same list first, so each control compiles what the tests ran.
///
/// Switches off by default (the variants being timed):
///   GLR_WALK_SEGMENTS_OFF  the forward walk in one segment (glr_fwd_split.cuh; the timers' `noseg`)
///   GLR_WALK_REGS          the forward walk's state in registers (glr_fwd_split.cuh; `regs`)
///   GLR_DSTATE_VEC         the backward's dstate pass four columns of G a pass (glr_bwd_split.cuh; `dsvec`)
///   GLR_DQK_FACTORED_DIAG  dqk's diagonal blocks in prep's factored form (glr_bwd_split.cuh; `fdiag`)
///   GLR_DV_DIAG_ROWS       dv's diagonal blocks a thread per (block, column) (glr_bwd_split.cuh; `dvrows`)
///   GLR_WMMA_SMEM          the split kernels' WMMA loads and stores of shared memory as `.shared`
///                          instructions (wmma_smem.cuh; `wsmem`)
///   GLR_ASYNC_TILE_STRIDED dstate's and dv's tile prefetch at a fixed stride a thread (`tstride`)
#pragma once

// The next default set: each won its A/B on the H200 (sessions 30 and 32, bench/results/glr-fwd-split.md
// and glr-bwd-split.md); together they passed glr_cuda_tests 47/47 there (session 32) and wait for the
// gate run.
#ifdef GLR_NEXT
#ifndef GLR_WALK_REGS
#define GLR_WALK_REGS
#endif
#ifndef GLR_DSTATE_VEC
#define GLR_DSTATE_VEC
#endif
#ifndef GLR_DQK_FACTORED_DIAG
#define GLR_DQK_FACTORED_DIAG
#endif
#ifndef GLR_DV_DIAG_ROWS
#define GLR_DV_DIAG_ROWS
#endif
#endif
