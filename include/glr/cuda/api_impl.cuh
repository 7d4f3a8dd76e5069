/// glr CUDA family — the API of glr/cuda.hpp, inline in namespace glr::cuda::impl: checks,
/// workspace sizes and the dispatch to the arch's kernels. The library (glr/cuda/api.cu)
/// defines the public functions over these; each kcv candidate (one translation unit, compiled by
/// kcv from glr/controls/cuda/) calls them directly, so both run the same source.
#pragma once

#include <cstdio>
#include <string>

#include "glr/cuda.hpp"
#include "glr/cuda/sm100/glr_bwd.cuh"
#include "glr/cuda/sm90/glr_bwd.cuh"
#include "glr/cuda/sm90/glr_fwd.cuh"

namespace glr::cuda::impl {

inline std::string unsupported(const Shape& s) {
  char buf[256];
  if (s.B < 1 || s.H < 1 || s.T < 0) {
    std::snprintf(buf, sizeof buf, "glr: B=%lld, H=%lld, T=%lld: B, H >= 1 and T >= 0 required",
                  (long long)s.B, (long long)s.H, (long long)s.T);
    return buf;
  }
  if (s.K < 1 || s.K > 256 || s.V < 1 || s.V > 256) {
    std::snprintf(buf, sizeof buf, "glr: K=%lld, V=%lld: K and V in [1, 256] are supported",
                  (long long)s.K, (long long)s.V);
    return buf;
  }
  if (s.chunk != 16 && s.chunk != 32 && s.chunk != 64) {
    std::snprintf(buf, sizeof buf, "glr: chunk %d: 16, 32 or 64 are supported", s.chunk);
    return buf;
  }
  if (s.cu_seqlens && (s.B != 1 || s.N < 1)) return "glr: varlen needs B == 1 and N >= 1";
  if (int(s.dtype) < 0 || int(s.dtype) > 3) return "glr: unknown dtype";
  if (int(s.gate) < 0 || int(s.gate) > 1) return "glr: unknown gate form";
  return {};
}

/// What a forward can keep for the backward: the split kernels' states, when both directions run
/// the sm90 split kernels (sm100_glr_bwd recomputes its own).
inline size_t saved_states_bytes(const Shape& s) {
  if (!impl::unsupported(s).empty() || sm100::runs_here(s)) return 0;
  return sm90::fwd_tensor_cores(s) && sm90::bwd_tensor_cores(s) ? sm90::fwd_split::saved_bytes(s) : 0;
}

inline size_t forward_workspace_bytes(const Shape& s, bool saving = false) {
  return saving && impl::saved_states_bytes(s) ? sm90::fwd_split::workspace_bytes_saving(s) : sm90::fwd_workspace_bytes(s);
}
/// sm100_glr_bwd (a 10.x device, bf16/f16) uses the FFMA backward's workspace; sm90 the one of the
/// kernels launch_bwd picks.
inline size_t backward_workspace_bytes(const Shape& s, bool from_saved = false) {
  if (sm100::runs_here(s)) return sm90::bwd_ffma_workspace_bytes(s);
  return from_saved && impl::saved_states_bytes(s) ? sm90::bwd_split::layout(s, /*from_saved=*/true).bytes
                                             : sm90::bwd_workspace_bytes(s);
}

/// The kernels a call runs for this shape on the current device, in words (benchmarks and tests
/// report and check the routing with it), with the forward walk's segments where it has more than one.
inline std::string walk_note(const Shape& s) {
  const int64_t segs = sm90::fwd_split::layout(s).segs;
  return segs > 1 ? ", walk in " + std::to_string(segs) + " segments" : "";
}
inline std::string forward_kernels(const Shape& s) {
  return sm90::fwd_tensor_cores(s) ? "sm90 split forward (tensor cores)" + walk_note(s) : "sm90 FFMA forward";
}
inline std::string backward_kernels(const Shape& s) {  // its states pass walks plainly (fwd_split::Walk)
  if (sm100::runs_here(s)) return "sm100 tcgen05 backward";
  return sm90::bwd_tensor_cores(s) ? "sm90 split backward (tensor cores)" : "sm90 FFMA backward";
}

namespace detail {
inline Status check_workspace(const char* what, size_t need, const void* ws, size_t have) {
  if (need == 0) return {};
  if (!ws || have < need)
    return {std::string(what) + ": workspace of " + std::to_string(need) + " bytes needed, " +
            std::to_string(ws ? have : 0) + " given"};
  return {};
}
}  // namespace detail

namespace detail {
inline Status check_saved(const char* what, size_t need, const void* saved, size_t have) {
  if (!saved || have >= need) return {};
  return {std::string(what) + ": saved states of " + std::to_string(need) + " bytes needed, " +
          std::to_string(have) + " given"};
}
}  // namespace detail

inline Status forward(const FwdParams& given, cudaStream_t stream) {
  if (std::string why = impl::unsupported(given.shape); !why.empty()) return {why};
  FwdParams p = given;
  const size_t keep = impl::saved_states_bytes(p.shape);
  if (!keep) p.saved = nullptr, p.saved_bytes = 0;  // this shape keeps nothing: the backward recomputes
  if (Status st = detail::check_saved("glr::cuda::forward", keep, p.saved, p.saved_bytes); !st.ok()) return st;
  if (Status st = detail::check_workspace("glr::cuda::forward", impl::forward_workspace_bytes(p.shape, p.saved != nullptr),
                                          p.workspace, p.workspace_bytes);
      !st.ok())
    return st;
  return sm90::launch_fwd(p, stream);
}

inline Status backward(const BwdParams& given, cudaStream_t stream) {
  if (std::string why = impl::unsupported(given.shape); !why.empty()) return {why};
  BwdParams p = given;
  const size_t keep = impl::saved_states_bytes(p.shape);
  if (!keep) p.saved = nullptr, p.saved_bytes = 0;
  if (Status st = detail::check_saved("glr::cuda::backward", keep, p.saved, p.saved_bytes); !st.ok()) return st;
  if (Status st = detail::check_workspace("glr::cuda::backward", impl::backward_workspace_bytes(p.shape, p.saved != nullptr),
                                          p.workspace, p.workspace_bytes);
      !st.ok())
    return st;
  if (sm100::runs_here(p.shape)) return sm100::launch_bwd(p, stream);  // bf16/f16 on a 10.x device
  return sm90::launch_bwd(p, stream);
}

}  // namespace glr::cuda::impl
