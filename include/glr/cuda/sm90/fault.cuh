/// glr CUDA family — the compile-time fault switch of the negative controls. A control file
/// defines GLR_CUDA_FAULT (one of the enumerators below) before it includes the candidate front;
/// everything else (the library, the positive controls, the tests) compiles with `none`, so every
/// `if constexpr (kFault == ...)` branch is dead code there. Each fault is one known bug, and
/// glr/controls/cuda/controls.cmake names the gate that must catch it.
#pragma once

namespace glr::cuda::sm90 {

enum class Fault {
  none,
  gate_after_update,  ///< S ← exp(b_last) ⊙ (S + Σ_j k̃_jᵀ v_j): the decay applied after the add (numerics)
  drop_last_state,    ///< a last partial chunk's contribution not carried into the state (shapes)
  mask_by_multiply,   ///< the intra-chunk matrix formed for every j, then multiplied by a 0/1 mask (nonfinite)
  state_bf16,         ///< the running state rounded to bf16 after every chunk (numerics, _bf16)
  varlen_bleed,       ///< a sequence's state also takes the next sequence's first step (numerics)
  inter_race,         ///< no barrier between the inter-chunk reads of S and its update (sanitizer)
  default_stream,     ///< the candidate's work enqueued on the legacy default stream (concurrency)
};

#ifndef GLR_CUDA_FAULT
#define GLR_CUDA_FAULT none
#endif
inline constexpr Fault kFault = Fault::GLR_CUDA_FAULT;

}  // namespace glr::cuda::sm90
