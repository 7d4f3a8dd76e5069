/// glr — the fp64 reference of the gated linear recurrence (DESIGN §7), forward and backward
/// (reverse mode derived by hand), in recurrent form, for both gate forms and varlen. Beside every
/// output value it returns what the kcv error model (DESIGN §4) needs. Plain functions on
/// contiguous row-major double arrays (layouts in glr/problem.hpp); of kcv only the header-only
/// kcv/terms.hpp, so that glr's CUDA tests use it too. Not a public header: candidates include
/// include/glr/ and kcv/abi.h alone, and never see the reference (library glr_contracts).
///
/// Error data, per output element r = Σ terms:
///   mag   = Σ |term|
///   depth = effective number of roundings a term passes (mag-weighted average), so that
///           depth·mag = Σ_term |term| · (len_term + contraction + 2), where len_term counts
///           the decay chain (t − s + 1) plus the longest chunk sum (min(kMaxChunk, sequence length))
///   amp   = in units of c·u (c = kBoundC): Σ_term |term| · ζ_term / c, with u·ζ_term a first-order
///           bound on the absolute error of the term's exp argument, charged once (c multiplies
///           the roundings of the depth, not this bound). A chunked evaluation forms the decay of
///           a term (s → t) from cumulative log-gates b_r = Σ_{c..r} g summed in fp32 from its
///           chunk start c (exp(b_t − b_s) within a chunk; exp(b_last − b_s), exp(b_last), exp(b_t)
///           across chunks). Sequentially, each partial sum errs by u·|b_r| and the errors up to s
///           cancel in b_t − b_s: Σ_{r=s+1..t} u·|b_r|; a tree scan (depth ≤ kScanDepth) errs by
///           ≤ kScanDepth·u·|b_r| at each end. The chunk start is the kernel's, unknown: |b_r| ≤ M_r,
///           the largest |Σ_{c..r} g| over every start c a chunk of ≤ kMaxChunk steps allows (for
///           g ≤ 0 the sum of the kMaxChunk steps ending at r), so per pair
///           ζ = Σ_{r=s+1..t} M_r + kScanDepth·(M_s + M_t) (docs/glr.md, *The exp-argument term*).
///           ζ = 0 for s = t: exp(0) = 1 exactly in every order.
///   under = number of roundings that may underflow (each loses at most one fp32 subnormal ulp,
///           2^-149), already multiplied by the largest factor such an error can meet later.
///   op    = Σ_term |term| · ρ_term: the budget of tensor-core operand rounding (bf16/f16 contracts),
///           in units of u_in (the input dtype's unit roundoff). ρ_term is the number of operands
///           rounded once to the input dtype along the term's path through the chunked algorithm
///           (glr/cpu_chunked.hpp), independent of the chunk size and of T (kRho* below); where an
///           operand is itself a sum (A, the state S or H, the state gradient G, do·vᵀ), its
///           rounding errs by u_in·|value| ≤ u_in·Σ|its terms|, counted the same way.
///   opu   = the same kernel's operand roundings that underflow: each errs by at most η_in absolute
///           (half the input dtype's smallest subnormal: 2^-25 f16, 2^-134 bf16) times the
///           magnitude of what multiplies it on the way to the output. opu = Σ over the rounded
///           operands on the element's paths of that co-factor, bounded per slice from the largest
///           inputs, states and intra-chunk products (a count like the fp32 `under`, not decayed).
///   classes = the classes (finite / NaN / ±Inf, a kcv::kClass* mask) some legitimate evaluation
///           order gives, from the kinds of the element's terms (kcv/terms.hpp; sequential order
///           only, docs/nonfinite-classes.md): kClassFinite everywhere when every input is finite.
///           Partial products below the smallest normal of `operands` (f32/bf16 2^-126, f16 2^-14)
///           may be flushed to zero beside an infinity.
///   ovf   = the largest magnitude an operand a tensor-core kernel rounds to the input dtype may
///           reach on this element's paths (an upper bound: Σ|terms| of A, S/H, G, do·vᵀ over the
///           slice; 0 where every rounded operand is an input times a decay ≤ 1). Where it reaches
///           the input dtype's range (f16: 65504), such a kernel may overflow an operand and return
///           ±Inf or NaN: the contract then judges no class there.
/// The kcv contract turns these into |got − r| ≤ c·u·(depth·mag + amp + under·2^-149/u) + u_out·|r|,
/// with amp += κ·(u_in/u)·op/c in the bf16/f16 contracts (glr/contracts/glr_contracts.cpp).
/// dg carries, on top of its direct form Σ_v dS_t ⊙ (exp(g_t) S_{t−1}), the budget of the chunked
/// identity dg_t = Σ_{t'=t..e} (q⊙dq − k⊙dk)_{t'} + Σ_v G ⊙ S_e (e = chunk end ≤ t + kMaxChunk − 1).
#pragma once

#include <cstdint>
#include <vector>

#include "glr/problem.hpp"
#include "kcv/terms.hpp"

namespace glr {

/// κ of the bf16/f16 contracts' operand-rounding term κ·u_in·op: γ_ρ ≤ κ·ρ·u_in for nestings ρ ≤ 4
/// (κ = 17/16 ≥ 1/(1 − 4·u_in) at u_in ≤ 2^-8; the reasoning beside the contracts' c,
/// glr/contracts/glr_contracts.cpp). The contracts and the GPU tests' bound use this one value.
inline constexpr double kOperandRoundingKappa = 17.0 / 16.0;

/// Which evaluation the reference performs.
enum class Order {
  /// The recurrence, step by step, sums in natural order: the reference values and error data.
  sequential,
  /// The chunk-64 form of glr/cpu_chunked.hpp in fp64, exp factors and decayed products below
  /// FLT_MIN flushed to zero as an fp32 device may: values only (error data left zero). One
  /// legitimate order among many, for the tests; the classes the nonfinite gate accepts come from
  /// the sequential order's `classes`, which cover every chunk size.
  chunked,
};

/// One output: per element (row-major) the value and the error-model data described above.
struct Estimate {
  std::vector<double> value, mag, depth, amp, under, op, opu, ovf;
  std::vector<uint8_t> classes;
  void resize(std::size_t n) {
    classes.assign(n, kcv::kClassFinite);
    value.assign(n, 0);
    mag.assign(n, 0);
    depth.assign(n, 0);
    amp.assign(n, 0);
    under.assign(n, 0);
    op.assign(n, 0);
    opu.assign(n, 0);
    ovf.assign(n, 0);
  }
};

/// ρ per output: the operands rounded to the input dtype along any term's path in the chunked
/// algorithm, with one rounding per operand of every matrix product (a tensor-core kernel: MMA
/// operands in bf16/f16, fp32 accumulation, fp32 state carried between chunks).
///   o   3  intra-chunk: q⊙exp(b_i−b_r), k⊙exp(b_r−b_j) (the two operands of A), then A itself;
///          older terms: k⊙exp(b_last−b_j) in the state update, the state S, q⊙exp(b_i)
///   hT  1  k⊙exp(b_last−b_j) in the state update (the decay of the fp32 state is elementwise)
///   dq  2  intra: do·vᵀ and k⊙exp(b_i−b_j); inter: the state H and its own k⊙exp in the state pass
///   dk  2  intra: do·vᵀ and q⊙exp(b_i−b_j); inter: the state gradient G and its own q⊙exp
///   dv  3  intra: A and its two operands; inter: k⊙exp(b_last−b_j), G and G's own q⊙exp
///   dh0 1  q⊙exp(b_i) in the state-gradient update
///   dg  the chunked identity: 3 on every q⊙dq and k⊙dk term (dq, dk's own ρ = 2, and one more
///       where dg is formed from dq, dk stored in the input dtype, as FLA does), 4 on Σ_v G⊙S_e
///       (G and S_e each rounded as operands and each carrying one rounding per term)
inline constexpr int kRhoO = 3, kRhoHT = 1, kRhoDq = 2, kRhoDk = 2, kRhoDv = 3, kRhoDh0 = 1, kRhoDgQK = 3,
                     kRhoDgGS = 4;

/// The dtype a tensor-core kernel rounds the operands of its matrix products to: the input dtype of
/// the bf16/f16 contracts. Order::chunked rounds them so (after its fp32 flushes), as such a kernel
/// would; `classes` flushes partial products below its smallest normal beside an infinity.
enum class OperandDtype { f32, bf16, f16 };

/// Forward operands: q, k [B,T,H,K]; v [B,T,H,V]; g [B,T,H,K] or [B,T,H]; h0 [S,H,K,V] (null: 0).
struct FwdInputs {
  const double *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *h0 = nullptr;
  double scale = 1;
  OperandDtype operands = OperandDtype::f32;  // Order::chunked; and the flush threshold of classes
};
/// Backward operands: the forward's, plus dO [B,T,H,V] and dhT [S,H,K,V] (null: 0).
struct BwdInputs {
  const double *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *h0 = nullptr;
  const double *dO = nullptr, *dhT = nullptr;
  double scale = 1;
  OperandDtype operands = OperandDtype::f32;  // Order::chunked; and the flush threshold of classes
};

struct FwdResult { Estimate o, hT; };                  // o [B,T,H,V], hT [S,H,K,V]
struct BwdResult { Estimate dq, dk, dv, dg, dh0; };    // dg shaped like g, dh0 like h0

/// Throws std::invalid_argument for an invalid problem.
FwdResult reference_fwd(const Problem& p, const FwdInputs& in, Order order = Order::sequential);
BwdResult reference_bwd(const Problem& p, const BwdInputs& in, Order order = Order::sequential);

/// The longest chunk a legitimate chunked evaluation may use (Mamba-2/SSD: 128–256; FLA and the
/// CUDA kernels: 64); the error data assume it: the in-chunk sums' length in depth, the window of
/// the dg identity, and the chunk starts M_r of the exp-argument term ranges over.
inline constexpr int64_t kMaxChunk = 256;

/// The depth of a tree scan of the cumulative log-gates that the exp-argument term admits at each
/// end of a pair: ⌈log2 256⌉, a Kogge–Stone (Hillis–Steele) scan of a whole 256-step chunk.
inline constexpr double kScanDepth = 8;

/// c of the glr contracts' bound c·u·(depth·mag + amp) (the reasoning beside kC in
/// glr/contracts/glr_contracts.cpp, which takes this value); amp is in units of c·u, so the
/// reference divides the exp-argument term, a bound charged once, by it.
inline constexpr double kBoundC = 3;

}  // namespace glr
