/// glr — the CUDA kernel family's C++ API (DESIGN §7): the chunked gated linear recurrence,
/// forward and backward, on the caller's stream. No framework headers; raw device pointers, sizes
/// and a stream in, a Status out. The kcv candidates (glr/controls/cuda/) and the PyTorch op
/// (glr/python/glr_torch/) are thin fronts over these two calls.
///
/// Layout (contiguous, row-major): q, k [B,T,H,K]; v, o, do [B,T,H,V]; g, dg [B,T,H,K] (vector
/// gate) or [B,T,H] (scalar gate); h0, hT, dhT, dh0 [N,H,K,V] with N = B (fixed length) or the
/// number of sequences (varlen: B = 1 and cu_seqlens[N+1] on the device, first 0, last T,
/// non-decreasing, empty sequences allowed).
///
/// Dtypes: q, k, v, o, do, dq, dk, dv in `dtype` (f32, bf16, f16 or f64). g, dg and the states
/// (h0, hT, dhT, dh0) are f32, or f64 when dtype is f64 (the float64 path exists for
/// torch.autograd.gradcheck). Accumulation and state are fp32 (fp64 for f64).
///
/// Supported: K, V in [1, 256], any T >= 0, B, H >= 1. Anything else is refused with a Status
/// that says why; no launch happens then. All work goes on `stream`; nothing synchronizes the
/// host; the result is bitwise deterministic (fixed reduction orders, no float atomics).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace glr::cuda {

enum class DType : int { f32 = 0, bf16 = 1, f16 = 2, f64 = 3 };
enum class Gate : int { vector = 0, scalar = 1 };

/// What a call returns: ok, or why not (a refusal before any launch, or a CUDA error).
struct Status {
  std::string message;  ///< empty when ok
  bool ok() const { return message.empty(); }
};

/// Geometry shared by forward and backward.
struct Shape {
  int64_t B = 1, T = 0, H = 1, K = 1, V = 1;
  Gate gate = Gate::vector;
  DType dtype = DType::f32;
  const int64_t* cu_seqlens = nullptr;  ///< device [N+1], or null for fixed length
  int64_t N = 0;                        ///< sequences when varlen (B must be 1)
  int chunk = 64;                       ///< chunk length: 16, 32 or 64

  int64_t sequences() const { return cu_seqlens ? N : B; }
  int64_t gate_width() const { return gate == Gate::vector ? K : 1; }
};

/// Forward: o = scale · q S_t per step, hT = S_last.
struct FwdParams {
  Shape shape;
  const void* q = nullptr;   ///< [B,T,H,K] dtype
  const void* k = nullptr;   ///< [B,T,H,K] dtype
  const void* v = nullptr;   ///< [B,T,H,V] dtype
  const void* g = nullptr;   ///< [B,T,H,K] or [B,T,H], state dtype (log-gate, normally <= 0)
  const void* h0 = nullptr;  ///< [N,H,K,V] state dtype, or null for a zero initial state
  void* o = nullptr;         ///< [B,T,H,V] dtype
  void* hT = nullptr;        ///< [N,H,K,V] state dtype, or null when not wanted
  double scale = 1.0;        ///< the caller's; K^-1/2 is the usual choice
  void* workspace = nullptr;       ///< device scratch of forward_workspace_bytes(shape, saved != null) bytes
  size_t workspace_bytes = 0;
  /// Optional: device memory of saved_states_bytes(shape) bytes that keeps what the backward
  /// would otherwise recompute (the chunk states and the factored operands), for a backward of
  /// the same inputs given BwdParams::saved. Ignored when saved_states_bytes(shape) is 0.
  void* saved = nullptr;
  size_t saved_bytes = 0;
};

/// Backward of the forward above, from do (and dhT when given).
struct BwdParams {
  Shape shape;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;
  const void* h0 = nullptr;   ///< null: zero initial state
  const void* dO = nullptr;   ///< [B,T,H,V] dtype
  const void* dhT = nullptr;  ///< [N,H,K,V] state dtype, or null: no gradient into hT
  void* dq = nullptr;         ///< [B,T,H,K] dtype
  void* dk = nullptr;         ///< [B,T,H,K] dtype
  void* dv = nullptr;         ///< [B,T,H,V] dtype
  void* dg = nullptr;         ///< shaped like g, state dtype
  void* dh0 = nullptr;        ///< [N,H,K,V] state dtype, or null when not wanted
  double scale = 1.0;
  void* workspace = nullptr;  ///< device scratch of backward_workspace_bytes(shape, saved != null) bytes
  size_t workspace_bytes = 0;
  /// Optional: what a forward of the same shape, q, k, v, g and h0 kept in FwdParams::saved (and
  /// that nothing wrote since); the backward then skips recomputing it. Ignored when
  /// saved_states_bytes(shape) is 0.
  const void* saved = nullptr;
  size_t saved_bytes = 0;
};

/// Why `shape` cannot run (empty when it can): sizes out of range, an unsupported chunk, ...
std::string unsupported(const Shape& shape);

/// Device scratch the calls need (may be 0). Varlen sizes are bounded by T, not by the actual
/// lengths, so the host never reads cu_seqlens. With saved states (`saving`, `from_saved`) the
/// scratch is what remains beside them.
size_t forward_workspace_bytes(const Shape& shape, bool saving = false);
size_t backward_workspace_bytes(const Shape& shape, bool from_saved = false);

/// Bytes a forward can keep for the backward of the same inputs (FwdParams::saved,
/// BwdParams::saved), or 0 when this shape's kernels keep nothing (the backward recomputes): the
/// sm90 split kernels (bf16/f16, K <= 256, chunk 64) on a device whose backward is the sm90 one.
/// Where the forward walks plainly the backward's results are the same bits either way; where it
/// walks in segments (forward_kernels says so) the backward reads the segmented walk's states, an
/// fp32 order the contracts' error model covers.
size_t saved_states_bytes(const Shape& shape);

/// The kernels forward / backward run for `shape` on the current device, in words (e.g. "sm90
/// split forward (tensor cores), walk in 9 segments"): which path a shape takes, for benchmarks
/// and tests.
std::string forward_kernels(const Shape& shape);
std::string backward_kernels(const Shape& shape);

/// Enqueues the forward / backward on `stream` (0 is the legacy default stream).
Status forward(const FwdParams& params, cudaStream_t stream);
Status backward(const BwdParams& params, cudaStream_t stream);

}  // namespace glr::cuda
