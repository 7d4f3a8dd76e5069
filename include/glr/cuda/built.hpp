/// glr CUDA family — which kernels a translation unit builds. The library (glr/cuda/api.cu) builds
/// them all. A kcv candidate judged on one contract may name that contract's element type and
/// direction before it includes glr/cuda/candidate.cuh, and then compiles only those kernels:
///
///   GLR_ONLY_F32, GLR_ONLY_BF16, GLR_ONLY_F16, GLR_ONLY_F64   one element type (at most one of them)
///   GLR_FORWARD_ONLY                                          no backward kernels
///
/// Every kernel template is instantiated wherever a launcher names it, used or not, so without these a
/// candidate compiles all 161 kernels of both directions and four types (about 150 s a control on the
/// H200 host, the bulk of a gate run); a bf16 backward control builds about half of them and a bf16
/// forward one about a quarter (glr/controls/cuda/controls.cmake). A call the translation unit has no
/// kernels for is refused with a Status that names the macro; nothing is launched.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "glr/cuda.hpp"

#if defined(GLR_ONLY_F32) + defined(GLR_ONLY_BF16) + defined(GLR_ONLY_F16) + defined(GLR_ONLY_F64) > 1
#error "glr/cuda/built.hpp: define at most one of GLR_ONLY_F32, GLR_ONLY_BF16, GLR_ONLY_F16, GLR_ONLY_F64"
#endif

#if defined(GLR_ONLY_F32) || defined(GLR_ONLY_BF16) || defined(GLR_ONLY_F16) || defined(GLR_ONLY_F64)
#ifdef GLR_ONLY_F32
#define GLR_BUILDS_F32 1
#else
#define GLR_BUILDS_F32 0
#endif
#ifdef GLR_ONLY_BF16
#define GLR_BUILDS_BF16 1
#else
#define GLR_BUILDS_BF16 0
#endif
#ifdef GLR_ONLY_F16
#define GLR_BUILDS_F16 1
#else
#define GLR_BUILDS_F16 0
#endif
#ifdef GLR_ONLY_F64
#define GLR_BUILDS_F64 1
#else
#define GLR_BUILDS_F64 0
#endif
#else
#define GLR_BUILDS_F32 1
#define GLR_BUILDS_BF16 1
#define GLR_BUILDS_F16 1
#define GLR_BUILDS_F64 1
#endif

#ifdef GLR_FORWARD_ONLY
#define GLR_BUILDS_BACKWARD 0
#else
#define GLR_BUILDS_BACKWARD 1
#endif

namespace glr::cuda::built {

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f64: return "f64";
  }
  return "an unknown dtype";
}

/// The refusal of a call of element type d that this translation unit has no kernels for.
inline Status missing(const char* who, DType d) {
  return {std::string(who) + ": " + dtype_name(d) +
          " kernels are not built into this translation unit (it defines GLR_ONLY_" +
          (GLR_BUILDS_F32 ? "F32" : GLR_BUILDS_BF16 ? "BF16" : GLR_BUILDS_F16 ? "F16" : "F64") +
          ", glr/cuda/built.hpp)"};
}

/// An element type and its accumulator, as `for_type` hands them to its function.
template <class ElemT, class AccT>
struct Types {
  using E = ElemT;
  using Acc = AccT;
};

/// fn(Types<E, Acc>{}) for d's element type (f32, bf16 and f16 accumulate in float, f64 in double)
/// where this translation unit builds it, else `missing`: the one place the GLR_BUILDS_* arms are, so
/// that fn's body is instantiated for those types alone.
template <class Fn>
Status for_type(DType d, const char* who, Fn&& fn) {
  switch (d) {
#if GLR_BUILDS_F32
    case DType::f32: return fn(Types<float, float>{});
#endif
#if GLR_BUILDS_BF16
    case DType::bf16: return fn(Types<__nv_bfloat16, float>{});
#endif
#if GLR_BUILDS_F16
    case DType::f16: return fn(Types<__half, float>{});
#endif
#if GLR_BUILDS_F64
    case DType::f64: return fn(Types<double, double>{});
#endif
    default: break;
  }
  if (int(d) < 0 || int(d) > 3) return {std::string(who) + ": unknown dtype"};
  return missing(who, d);
}

/// The refusal of a backward in a translation unit built with GLR_FORWARD_ONLY.
inline Status no_backward(const char* who) {
  return {std::string(who) + ": no backward kernels in this translation unit (it defines GLR_FORWARD_ONLY, "
                             "glr/cuda/built.hpp)"};
}

}  // namespace glr::cuda::built
