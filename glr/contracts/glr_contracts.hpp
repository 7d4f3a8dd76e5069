/// The glr contracts (DESIGN §7): gated linear recurrence forward and backward, fixed-length and
/// varlen, one contract per gate form (a contract has fixed tensor specs, and the candidate tells
/// the form from g's rank). Names (docs/glr.md):
///   glr_fwd, glr_bwd                          vector gate g[B,T,H,K] (GLA)
///   glr_fwd_scalar, glr_bwd_scalar            scalar gate g[B,T,H] (Mamba-2/SSD, simple GLA)
///   glr_fwd_varlen, glr_bwd_varlen            vector gate, B = 1, cu_seqlens[N+1], states [N,H,K,V]
///   glr_fwd_varlen_scalar, glr_bwd_varlen_scalar
/// and each with a suffix _bf16 or _f16 (e.g. glr_bwd_scalar_bf16): q, k, v, do and o, dq, dk, dv
/// in that dtype; g, h0, hT, dhT, dg, dh0 f32; fp32 accumulation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kcv/contract.hpp"

namespace kcv {

/// Every glr contract, in the order `kcv contracts` lists them: the eight forms
/// (fwd, bwd) x (fixed, varlen) x (vector, scalar) in f32, then the same in bf16, then in f16.
/// kcv's registry (src/kcv/contracts/registry.cpp) appends them with this one call.
std::vector<std::unique_ptr<Contract>> glr_contracts();

/// The glr contract of this name: glr_{fwd,bwd}[_varlen][_scalar][_bf16|_f16]. Throws
/// std::invalid_argument for any other name.
std::unique_ptr<Contract> make_glr_contract(const std::string& name);

std::unique_ptr<Contract> make_glr_fwd_contract();
std::unique_ptr<Contract> make_glr_bwd_contract();
std::unique_ptr<Contract> make_glr_fwd_scalar_contract();
std::unique_ptr<Contract> make_glr_bwd_scalar_contract();
std::unique_ptr<Contract> make_glr_fwd_varlen_contract();
std::unique_ptr<Contract> make_glr_bwd_varlen_contract();
std::unique_ptr<Contract> make_glr_fwd_varlen_scalar_contract();
std::unique_ptr<Contract> make_glr_bwd_varlen_scalar_contract();

namespace glr_kind {
inline constexpr const char* gates_zero = "gates zero";      // g = 0 over the whole sequence
inline constexpr const char* gates_m20 = "gates -20";        // g = −20: every step forgets
inline constexpr const char* decay_near_1 = "decay near 1";  // g ≈ −1e-3: long memory
inline constexpr const char* large_qk = "large qk";          // q, k scaled so q·k ~ 1e2
}  // namespace glr_kind

/// cu_seqlens for N sequences over T positions (first 0, last T, non-decreasing), drawn so that
/// an empty and a length-1 sequence appear now and then.
std::vector<int64_t> draw_cu_seqlens(int64_t N, int64_t T, Rng& rng);

}  // namespace kcv
