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
/// Switches off by default (the variants being timed; a switch is a name listed here, `///   NAME`, or
/// GLR_NEXT: the build, glr_torch and include_with_defines.sh refuse any other, one gone into the
/// default included):
///   GLR_WALK_SEGMENTS_OFF  the forward walk in one segment (glr_fwd_split.cuh; the timers' `noseg`)
///   GLR_DSTATE_3CTAS       the backward's dstate three CTAs an SM instead of two: G in mma.sync registers
///                          across the chunks, two chunks in flight, 80 registers (glr_bwd_split.cuh,
///                          kDstateCtas; `dstate3`)
///   GLR_NOHOIST            the two-CTA dstate's prefetch offsets computed at each chunk, not hoisted
///                          into registers that spill (glr_bwd_split.cuh, kDstateNoHoist; `nohoist`;
///                          the walk has always done so since it runs three CTAs an SM)
///   GLR_DIAG_RANGE         the factored diagonal within fp32's range (a correctness fix, docs/glr.md "Range";
///                          bench/glr/split_sim/run.sh huge), tested after the fact: the forward prep
///                          recomputes a live diagonal entry of A per pair where its factored sum is not
///                          finite (fwd_split::redo_diagonal_per_pair: the CTA's vote folded into the barrier
///                          after A's two halves are added), the backward's dqk a row's diagonal dq
///                          (glr_fwd_split.cuh, glr_bwd_split.cuh: kDiagRange; `range`; bit-identical but
///                          there). Its earlier forms tested k before factoring (session 44: each k converted
///                          and compared; session 45 at 70f6b0c: a per-half max of the raw bits): the forward
///                          0.5-2.9% and the backward 0.5-3.8% slower on an H100, so it stayed a switch.
///                          Session 46: nothing in the forward's slice loop; eight compares a thread and the
///                          vote on a barrier the default has, once per CTA. Session 47 (an H100): the
///                          forward within noise (−1.2…+1.0%), the backward 0.1–1.8% slower (dqk's per-row
///                          vote); its 39 glr controls pass the 12 gates. Those timers were ff845db's; since
///                          b4f631d (chunk_cta) this switch's vector prep spills 4 B at its 64-register cap
///                          (-Xptxas -v; none in the default): recomputing the chunk in the cold path or a
///                          32-bit chunk index did not remove it.
/// Removed after their A/B: GLR_ASYNC_TILE_STRIDED, dstate's and dv's tile prefetch at a fixed stride a
/// thread (`tstride`; session 35: within ±3% of the default); GLR_DQK_WGMMA (`dqkwg`, dqk's V and
/// off-diagonal products on wgmma: 1.00-1.11x the default backward's time) and GLR_DQK_DIAG_WGMMA
/// (`dqkdiag`, its bf16 diagonal blocks on wgmma too: 1.30-1.75x), session 43 on an H100, removed in
/// session 44 (bench/results/glr-bwd-split.md; the code is in git before that commit); GLR_DQK_LEAN
/// (`dqklean`, dqk's factored diagonal with ex2.approx.ftz within the span and 16-byte DV rows, bit-identical:
/// -0.8% to +0.7% on an H100 in session 45), removed the same session (the code is in git at 70f6b0c);
/// GLR_DQK_EARLY_B (`earlyb`, dqk's b formed while its q, k and first V tile land, bit-identical: −0.9% to
/// +1.1% on an H100 in session 47), removed the same session (the code is in git at c9ffc42). wgmma.cuh keeps
/// the M-major A operand (imm-trans-a) that dqkwg used, tested by GlrCudaSm90Wgmma.MMajorA.
/// Gone into the default after their gate run (bench/results/glr-gates.md): the register walk,
/// dstate's four columns a pass, dqk's factored diagonal and dv's diagonal rows (session 34, GLR_NEXT
/// of sessions 33-34); the split kernels' WMMA shared-memory loads and stores as `.shared`
/// instructions (session 36, GLR_WMMA_SMEM, `wsmem`: wmma_smem.cuh); the vector-gate prep's slice pass
/// two columns a thread and the walk three CTAs an SM at 80 registers (session 39, GLR_NEXT of sessions
/// 36-38: GLR_PREP_PAIRS `prep2` and GLR_WALK_3CTAS `walk3`, glr_fwd_split.cuh).
#pragma once

// The next default set: the variants that won their A/B and wait for the rest of the gate run
// (empty: GLR_NEXT builds the default).
#ifdef GLR_NEXT
#endif
