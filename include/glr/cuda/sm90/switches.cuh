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
///   GLR_PREP_PAIRS         the vector-gate prep's slice pass two columns a thread, its stores and shared
///                          loads in pairs (glr_fwd_split.cuh; `prep2`)
///   GLR_WALK_3CTAS         the walk three CTAs an SM instead of two: 80 registers, and the WMMA walk's
///                          unused shared state not reserved (glr_fwd_split.cuh, kWalkCtas; `walk3`)
///   GLR_DSTATE_3CTAS       the backward's dstate three CTAs an SM instead of two: G in mma.sync registers
///                          across the chunks, two chunks in flight, 80 registers (glr_bwd_split.cuh,
///                          kDstateCtas; `dstate3`)
///   GLR_NOHOIST            the two-CTA walk's and dstate's prefetch offsets computed at each chunk, not
///                          hoisted into registers that spill (glr_fwd_split.cuh, kPrefetchNoHoist; `nohoist`)
/// Removed after its A/B (session 35: within ±3% of the default, bench/results/glr-bwd-split.md):
/// GLR_ASYNC_TILE_STRIDED, dstate's and dv's tile prefetch at a fixed stride a thread (`tstride`).
/// Gone into the default after their gate run (bench/results/glr-gates.md): the register walk,
/// dstate's four columns a pass, dqk's factored diagonal and dv's diagonal rows (session 34, GLR_NEXT
/// of sessions 33-34); the split kernels' WMMA shared-memory loads and stores as `.shared`
/// instructions (session 36, GLR_WMMA_SMEM, `wsmem`: wmma_smem.cuh).
#pragma once

// The next default set: the variants that won their A/B and wait for the rest of the gate run.
// GLR_PREP_PAIRS: the forward 2-4% faster at every shape on the H100 in session 36, both rounds
// (bench/results/glr-fwd-split.md); the 16 forward-running glr controls (the 8 forward ones and the
// 8 `.saved` backward ones) passed on it the same session (bench/results/glr-gates.md);
// glr_cuda_tests on it owed.
// GLR_WALK_3CTAS: the forward 4-12% faster at five of the seven timer shapes (D = 256 9.5%, T = 65536
// 11.7%), 3% slower at (8,1024,8,64) and (2,16384,16,128), both rounds, on the H100 in session 38
// (bench/results/glr-fwd-split.md); host simulation bit for bit with GLR_PREP_PAIRS beside it (ctest
// glr.split_sim.fwd_next, bwd_next); glr_cuda_tests and the gates on the pair owed.
#ifdef GLR_NEXT
#ifndef GLR_PREP_PAIRS
#define GLR_PREP_PAIRS
#endif
#ifndef GLR_WALK_3CTAS
#define GLR_WALK_3CTAS
#endif
#endif
