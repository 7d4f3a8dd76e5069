/// glr CUDA family — the kcv candidate front (the GPU twin of glr/cpu_candidate.hpp): checks a
/// kcv_call against the glr contracts (ABI order of docs/glr.md), gathers every input that is not
/// dense into contiguous scratch, runs impl::forward / impl::backward (the library's own code),
/// and scatters outputs that are not dense back through their strides. Refuses anything else
/// cleanly (rc 1, message in call->error). A candidate file is a few lines:
///
///   #include <glr/cuda/candidate.cuh>
///   KCV_EXPORT int kcv_run(const kcv_call* call) { return glr::cuda::candidate_fwd(call, false); }
///
/// Gate form from g's rank: 4 = vector [B,T,H,K], 3 = scalar [B,T,H]. Varlen: B = 1 and a last
/// input cu_seqlens (i64, [N+1]); states [N,H,K,V]. cu_seqlens stays on the device (the host
/// never waits for it): the kernels clamp its values to [0, T], so a malformed one gives defined
/// (wrong) results, never an out-of-bounds access. Dtype from q's: f32, bf16 or f16 for q, k, v,
/// do and o, dq, dk, dv alike, with g and the states f32 (the glr_*[_bf16|_f16] contracts); f64
/// throughout is also taken.
///
/// Every operation — scratch allocation (cudaMallocAsync), the strided copies, the kernels, the
/// frees — goes on call->stream, which may be null (the legacy default stream). Nothing waits
/// on the host; nothing is kept between calls.
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "glr/cuda/api_impl.cuh"
#include "glr/cuda/sm90/fault.cuh"
#include "kcv/abi.h"

namespace glr::cuda {

namespace cand {

/// Writes a message into call->error (when there is room) and returns 1: a clean refusal.
inline int refuse(const kcv_call* call, const char* fmt, ...) {
  if (call && call->error && call->error_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(call->error, static_cast<std::size_t>(call->error_len), fmt, ap);
    va_end(ap);
  }
  return 1;
}

inline const char* dtype_name(int32_t d) {
  switch (d) {
    case KCV_F64: return "f64";
    case KCV_F32: return "f32";
    case KCV_BF16: return "bf16";
    case KCV_F16: return "f16";
    case KCV_I64: return "i64";
    default: return "an unsupported dtype";
  }
}

inline size_t dtype_bytes(int32_t d) {
  switch (d) {
    case KCV_F64: case KCV_I64: return 8;
    case KCV_F32: case KCV_I32: return 4;
    case KCV_F16: case KCV_BF16: return 2;
    default: return 1;
  }
}

inline int64_t numel(const kcv_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

/// "" when t has dtype `want` and exactly these dims (and data unless empty), else why not.
inline std::string check(const kcv_tensor& t, const char* name, int32_t want, std::initializer_list<int64_t> dims) {
  char buf[240];
  if (t.dtype != want) {
    std::snprintf(buf, sizeof buf,
                  "%s: dtype %d, expected %s (%d) (q, k, v, do, o, dq, dk, dv share q's dtype: f32, bf16 "
                  "or f16; g and the states are f32)",
                  name, int(t.dtype), dtype_name(want), int(want));
    return buf;
  }
  if (t.ndim != static_cast<int32_t>(dims.size())) {
    std::snprintf(buf, sizeof buf, "%s: rank %d, expected %zu", name, int(t.ndim), dims.size());
    return buf;
  }
  int d = 0;
  for (int64_t want_d : dims) {
    if (t.shape[d] != want_d) {
      std::snprintf(buf, sizeof buf, "%s: dim %d is %lld, expected %lld", name, d, (long long)t.shape[d],
                    (long long)want_d);
      return buf;
    }
    ++d;
  }
  if (numel(t) > 0 && t.data == nullptr) {
    std::snprintf(buf, sizeof buf, "%s: null data", name);
    return buf;
  }
  return "";
}

/// Row-major contiguous (strides of extent-1 dims ignored) and aligned to its element size: the
/// kernels read and write such a tensor in place.
inline bool dense(const kcv_tensor& t) {
  if (reinterpret_cast<uintptr_t>(t.data) % dtype_bytes(t.dtype) != 0) return false;
  int64_t want = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.stride[d] != want) return false;
    want *= t.shape[d];
  }
  return true;
}

struct Dims {
  int64_t shape[8], stride[8];
  int ndim;
};

/// An element of N bytes with byte alignment: the copy of a tensor whose address is misaligned.
template <int N> struct Bytes {
  unsigned char b[N];
};

/// dst[i] (dense, row-major) = src[strided index of i] when gather, the reverse when not.
/// Scalar loads and stores, int64 offsets (strides of any sign).
template <class U>
__global__ void strided_copy(const U* __restrict__ src, U* __restrict__ dst, int64_t n, Dims d, bool gather) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, off = 0;
    for (int a = d.ndim - 1; a >= 0; --a) {
      const int64_t x = rest % d.shape[a];
      rest /= d.shape[a];
      off += x * d.stride[a];
    }
    if (gather) dst[i] = src[off];
    else dst[off] = src[i];
  }
}

template <class U>
inline void copy_as(const void* src, void* dst, int64_t n, const Dims& d, bool gather, cudaStream_t stream) {
  const int64_t blocks = (n + 255) / 256;
  const unsigned grid = unsigned(blocks < 4096 ? blocks : 4096);
  strided_copy<U><<<grid, 256, 0, stream>>>(static_cast<const U*>(src), static_cast<U*>(dst), n, d, gather);
}

/// Enqueues a gather (strided t -> dense buf) or a scatter (dense buf -> strided t).
inline void strided(const kcv_tensor& t, void* buf, bool gather, cudaStream_t stream) {
  const int64_t n = numel(t);
  if (n == 0) return;
  Dims d{};
  d.ndim = t.ndim;
  for (int a = 0; a < t.ndim; ++a) {
    d.shape[a] = t.shape[a];
    d.stride[a] = t.stride[a];
  }
  const void* src = gather ? t.data : buf;
  void* dst = gather ? buf : t.data;
  const size_t es = dtype_bytes(t.dtype);
  const bool aligned = reinterpret_cast<uintptr_t>(t.data) % es == 0;
  switch (es) {
    case 8: aligned ? copy_as<uint64_t>(src, dst, n, d, gather, stream) : copy_as<Bytes<8>>(src, dst, n, d, gather, stream); break;
    case 4: aligned ? copy_as<uint32_t>(src, dst, n, d, gather, stream) : copy_as<Bytes<4>>(src, dst, n, d, gather, stream); break;
    case 2: aligned ? copy_as<uint16_t>(src, dst, n, d, gather, stream) : copy_as<Bytes<2>>(src, dst, n, d, gather, stream); break;
    default: copy_as<Bytes<1>>(src, dst, n, d, gather, stream); break;
  }
}

/// One operand as the kernels see it: the caller's pointer when dense, else a scratch slot.
struct Slot {
  const kcv_tensor* t = nullptr;
  bool copy = false;  // not dense: gathered before (inputs) / scattered after (outputs)
  size_t offset = 0;  // in the scratch block, when copy
  void* ptr = nullptr;
};

/// The scratch of one call: one cudaMallocAsync on the call's stream, freed on it at the end.
struct Scratch {
  size_t bytes = 0;
  char* base = nullptr;
  size_t take(size_t n) {
    const size_t at = bytes;
    bytes += (n + 255) / 256 * 256;
    return at;
  }
};

inline int cuda_refusal(const kcv_call* call, const char* what, cudaError_t e) {
  return refuse(call, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

/// The whole candidate: parse, gather, run, scatter. backward: the glr_bwd* ABI, else glr_fwd*.
/// from_saved (backward only): a forward of the same inputs first, keeping its states
/// (FwdParams::saved, its o in scratch), then the backward from them, as an autograd caller runs it.
inline int run(const kcv_call* call, bool backward, bool varlen, bool from_saved = false) {
  if (!call) return 1;
  if (call->abi_version != KCV_ABI_VERSION)
    return refuse(call, "abi_version %d, this candidate speaks %d", int(call->abi_version), KCV_ABI_VERSION);
  const int want_in = (backward ? 7 : 5) + (varlen ? 1 : 0), want_out = backward ? 5 : 2;
  if (call->n_inputs != want_in || call->n_outputs != want_out || call->n_scalars != 1)
    return refuse(call, "expected %d inputs, %d outputs, 1 scalar; got %d, %d, %d", want_in, want_out,
                  int(call->n_inputs), int(call->n_outputs), int(call->n_scalars));
  if (!call->inputs || !call->outputs || !call->scalars) return refuse(call, "null operand arrays");
  const kcv_tensor* in = call->inputs;
  const kcv_tensor* out = call->outputs;
  if (in[0].ndim != 4) return refuse(call, "q: rank %d, expected 4", int(in[0].ndim));
  if (in[2].ndim != 4) return refuse(call, "v: rank %d, expected 4", int(in[2].ndim));
  Shape s;
  s.B = in[0].shape[0];
  s.T = in[0].shape[1];
  s.H = in[0].shape[2];
  s.K = in[0].shape[3];
  s.V = in[2].shape[3];
  if (s.B < 1 || s.T < 0 || s.H < 1 || s.K < 1 || s.V < 1) return refuse(call, "empty or negative sizes");
  const kcv_tensor& g = in[3];
  if (g.ndim == 4) s.gate = Gate::vector;
  else if (g.ndim == 3) s.gate = Gate::scalar;
  else return refuse(call, "g: rank %d, expected 4 (vector gate) or 3 (scalar gate)", int(g.ndim));
  int64_t S = s.B;
  const kcv_tensor* cu = varlen ? &in[call->n_inputs - 1] : nullptr;
  if (cu) {
    if (cu->dtype != KCV_I64 || cu->ndim != 1 || cu->shape[0] < 2 || !cu->data)
      return refuse(call, "cu_seqlens: expected i64 [N+1] with N >= 1");
    if (s.B != 1) return refuse(call, "varlen needs B == 1, got %lld", (long long)s.B);
    s.N = cu->shape[0] - 1;
    S = s.N;
  }
  const int32_t X = in[0].dtype;  // q, k, v, do and o, dq, dk, dv
  switch (X) {
    case KCV_F32: s.dtype = DType::f32; break;
    case KCV_BF16: s.dtype = DType::bf16; break;
    case KCV_F16: s.dtype = DType::f16; break;
    case KCV_F64: s.dtype = DType::f64; break;
    default:
      return refuse(call, "q: dtype %d, only f32 (%d), bf16 (%d), f16 (%d) and f64 (%d) are supported", int(X),
                    int(KCV_F32), int(KCV_BF16), int(KCV_F16), int(KCV_F64));
  }
  const int32_t F = X == KCV_F64 ? KCV_F64 : KCV_F32;  // g and the states
  const int64_t B = s.B, T = s.T, H = s.H, K = s.K, V = s.V;
  std::string why;
  auto chk = [&](const kcv_tensor& t, const char* name, int32_t dtype, std::initializer_list<int64_t> dims) {
    if (why.empty()) why = check(t, name, dtype, dims);
  };
  auto chk_g = [&](const kcv_tensor& t, const char* name) {
    if (s.gate == Gate::vector) chk(t, name, F, {B, T, H, K});
    else chk(t, name, F, {B, T, H});
  };
  chk(in[0], "q", X, {B, T, H, K});
  chk(in[1], "k", X, {B, T, H, K});
  chk(in[2], "v", X, {B, T, H, V});
  chk_g(in[3], "g");
  chk(in[4], "h0", F, {S, H, K, V});
  if (backward) {
    chk(in[5], "do", X, {B, T, H, V});
    chk(in[6], "dhT", F, {S, H, K, V});
    chk(out[0], "dq", X, {B, T, H, K});
    chk(out[1], "dk", X, {B, T, H, K});
    chk(out[2], "dv", X, {B, T, H, V});
    chk_g(out[3], "dg");
    chk(out[4], "dh0", F, {S, H, K, V});
  } else {
    chk(out[0], "o", X, {B, T, H, V});
    chk(out[1], "hT", F, {S, H, K, V});
  }
  if (!why.empty()) return refuse(call, "%s", why.c_str());
  if (std::string u = impl::unsupported(s); !u.empty()) return refuse(call, "%s", u.c_str());

  // Operands: inputs in ABI order (cu_seqlens last), then outputs; a scratch slot for each one
  // that is not dense, and the kernels' workspace.
  Slot ins[8], outs[5];
  Scratch scratch;
  const int n_in = call->n_inputs, n_out = call->n_outputs;
  auto plan = [&](Slot& sl, const kcv_tensor& t) {
    sl.t = &t;
    sl.copy = numel(t) > 0 && !dense(t);
    if (sl.copy) sl.offset = scratch.take(size_t(numel(t)) * dtype_bytes(t.dtype));
  };
  for (int i = 0; i < n_in; ++i) plan(ins[i], in[i]);
  for (int i = 0; i < n_out; ++i) plan(outs[i], out[i]);
  // NOTES: the workspace is sized for varlen only when cu_seqlens is set (its size depends on N);
  // the pointer is rebound to the dense copy below, if one is made.
  if (cu) s.cu_seqlens = static_cast<const int64_t*>(in[n_in - 1].data);
  const size_t keep = from_saved ? impl::saved_states_bytes(s) : 0;  // 0: this shape keeps nothing
  const size_t ws_bytes =
      backward ? impl::backward_workspace_bytes(s, keep > 0) : impl::forward_workspace_bytes(s);
  const size_t ws_at = scratch.take(ws_bytes);
  const size_t fws_bytes = keep ? impl::forward_workspace_bytes(s, true) : 0;  // the forward's, beside ws
  const size_t keep_at = scratch.take(keep), fws_at = scratch.take(fws_bytes),
               o_at = scratch.take(keep ? size_t(s.B * s.T * s.H * s.V) * dtype_bytes(in[0].dtype) : 0);

  // NOTES: the fault default_stream (a negative control) puts everything on the legacy stream.
  cudaStream_t stream = static_cast<cudaStream_t>(call->stream);
  if constexpr (sm90::kFault == sm90::Fault::default_stream) stream = nullptr;  // THE FLAW

  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_refusal(call, "before the call", e);
  if (scratch.bytes > 0) {
    void* p = nullptr;
    if (cudaError_t e = cudaMallocAsync(&p, scratch.bytes, stream); e != cudaSuccess)
      return cuda_refusal(call, "cudaMallocAsync", e);
    scratch.base = static_cast<char*>(p);
  }
  auto bind = [&](Slot& sl) { sl.ptr = sl.copy ? scratch.base + sl.offset : sl.t->data; };
  for (int i = 0; i < n_in; ++i) {
    bind(ins[i]);
    if (ins[i].copy) strided(*ins[i].t, ins[i].ptr, /*gather=*/true, stream);
  }
  for (int i = 0; i < n_out; ++i) bind(outs[i]);
  void* ws = ws_bytes ? scratch.base + ws_at : nullptr;
  if (cu) s.cu_seqlens = static_cast<const int64_t*>(ins[n_in - 1].ptr);

  Status st;
  if (backward) {
    BwdParams p;
    p.shape = s;
    p.q = ins[0].ptr; p.k = ins[1].ptr; p.v = ins[2].ptr; p.g = ins[3].ptr; p.h0 = ins[4].ptr;
    p.dO = ins[5].ptr; p.dhT = ins[6].ptr;
    p.dq = outs[0].ptr; p.dk = outs[1].ptr; p.dv = outs[2].ptr; p.dg = outs[3].ptr; p.dh0 = outs[4].ptr;
    p.scale = call->scalars[0];
    p.workspace = ws;
    p.workspace_bytes = ws_bytes;
    if (keep) {
      FwdParams f;
      f.shape = s;
      f.q = p.q; f.k = p.k; f.v = p.v; f.g = p.g; f.h0 = p.h0;
      f.o = scratch.base + o_at;
      f.scale = p.scale;
      f.workspace = fws_bytes ? scratch.base + fws_at : nullptr;
      f.workspace_bytes = fws_bytes;
      f.saved = scratch.base + keep_at;
      f.saved_bytes = keep;
      st = impl::forward(f, stream);
      p.saved = f.saved;
      p.saved_bytes = keep;
    }
    if (st.ok()) st = impl::backward(p, stream);
  } else {
    FwdParams p;
    p.shape = s;
    p.q = ins[0].ptr; p.k = ins[1].ptr; p.v = ins[2].ptr; p.g = ins[3].ptr; p.h0 = ins[4].ptr;
    p.o = outs[0].ptr; p.hT = outs[1].ptr;
    p.scale = call->scalars[0];
    p.workspace = ws;
    p.workspace_bytes = ws_bytes;
    st = impl::forward(p, stream);
  }
  if (st.ok())
    for (int i = 0; i < n_out; ++i)
      if (outs[i].copy) strided(*outs[i].t, outs[i].ptr, /*gather=*/false, stream);
  const cudaError_t launch = cudaGetLastError();
  if (scratch.base) {
    if (cudaError_t e = cudaFreeAsync(scratch.base, stream); e != cudaSuccess && st.ok() && launch == cudaSuccess)
      return cuda_refusal(call, "cudaFreeAsync", e);
  }
  if (!st.ok()) return refuse(call, "%s", st.message.c_str());
  if (launch != cudaSuccess) return cuda_refusal(call, "glr candidate launch", launch);
  return 0;
}

}  // namespace cand

/// The forward as a kcv candidate (varlen: the contract with cu_seqlens), any input dtype.
inline int candidate_fwd(const kcv_call* call, bool varlen) { return cand::run(call, /*backward=*/false, varlen); }

/// The backward as a kcv candidate.
inline int candidate_bwd(const kcv_call* call, bool varlen) { return cand::run(call, /*backward=*/true, varlen); }

/// The backward as an autograd caller runs it: the forward keeps its states, the backward reads
/// them (glr::cuda::saved_states_bytes; shapes that keep nothing run candidate_bwd's path).
inline int candidate_bwd_from_saved(const kcv_call* call, bool varlen) {
  return cand::run(call, /*backward=*/true, varlen, /*from_saved=*/true);
}

}  // namespace glr::cuda
