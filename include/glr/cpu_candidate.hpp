/// glr — the kcv candidate front of the CPU chunked algorithm: checks a kcv_call against the glr
/// contracts (ABI order of DESIGN §7 / docs/glr.md), builds strided views of every tensor, and runs
/// a slice kernel over every (sequence, head). Refuses anything else cleanly (rc 1, message in
/// call->error). Header-only; a candidate file is a few lines:
///
///   #include <glr/cpu_candidate.hpp>
///   extern "C" int kcv_run(const kcv_call* call) { return glr::cpu::candidate_fwd(call, false); }
///
/// Gate form from g's rank: 4 = vector [B,T,H,K], 3 = scalar [B,T,H]. Varlen: B = 1 and a last
/// input cu_seqlens (i64, [N+1], first 0, last T, non-decreasing); states [N,H,K,V].
/// Dtypes from q's: f32, bf16 or f16 for q, k, v, do and o, dq, dk, dv alike (the glr_*_bf16 /
/// _f16 contracts); g, h0, hT, dhT, dg, dh0 are always f32. 16-bit inputs are widened to fp32
/// exactly, everything is computed in fp32, and 16-bit outputs are rounded to nearest even once,
/// at the store (glr/half.hpp).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "glr/cpu_chunked.hpp"
#include "kcv/abi.h"

namespace glr::cpu {

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

/// A parsed call: the problem, its cu_seqlens copy, and views of every operand.
struct Call {
  Problem p;
  std::vector<int64_t> cu;
  float scale = 1;
  FwdIO<float> fwd;
  BwdIO<float> bwd;
};

namespace detail {

inline View<float> view(const kcv_tensor& t) {
  View<float> v;
  v.data = t.data;
  v.storage = t.dtype == KCV_BF16 ? Storage::bf16 : t.dtype == KCV_F16 ? Storage::f16 : Storage::native;
  for (int d = 0; d < t.ndim && d < 4; ++d) v.stride[d] = t.stride[d];
  return v;
}

inline const char* dtype_name(int32_t d) {
  switch (d) {
    case KCV_F32: return "f32";
    case KCV_BF16: return "bf16";
    case KCV_F16: return "f16";
    default: return "an unsupported dtype";
  }
}

/// "" when t has dtype `want` and exactly these dims, else why not.
inline std::string check(const kcv_tensor& t, const char* name, int32_t want, std::initializer_list<int64_t> dims) {
  char buf[200];
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
  int64_t n = 1;
  for (int64_t want : dims) {
    if (t.shape[d] != want) {
      std::snprintf(buf, sizeof buf, "%s: dim %d is %lld, expected %lld", name, d, (long long)t.shape[d],
                    (long long)want);
      return buf;
    }
    n *= want;
    ++d;
  }
  if (n > 0 && t.data == nullptr) {
    std::snprintf(buf, sizeof buf, "%s: null data", name);
    return buf;
  }
  return "";
}

}  // namespace detail

/// Checks the call (abi version, counts, dtypes, shapes, cu_seqlens) and fills c. 0 or a refusal.
inline int parse(const kcv_call* call, bool backward, bool varlen, Call& c) {
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
  const kcv_tensor& q = in[0];
  if (q.ndim != 4) return refuse(call, "q: rank %d, expected 4", int(q.ndim));
  Problem& p = c.p;
  p.B = q.shape[0];
  p.T = q.shape[1];
  p.H = q.shape[2];
  p.K = q.shape[3];
  if (in[2].ndim != 4) return refuse(call, "v: rank %d, expected 4", int(in[2].ndim));
  p.V = in[2].shape[3];
  if (p.B < 1 || p.T < 0 || p.H < 1 || p.K < 1 || p.V < 1) return refuse(call, "empty or negative sizes");
  const kcv_tensor& g = in[3];
  if (g.ndim == 4) p.gate = GateForm::vector;
  else if (g.ndim == 3) p.gate = GateForm::scalar;
  else return refuse(call, "g: rank %d, expected 4 (vector gate) or 3 (scalar gate)", int(g.ndim));
  int64_t S = p.B;
  if (varlen) {
    const kcv_tensor& cu = in[call->n_inputs - 1];
    if (cu.dtype != KCV_I64 || cu.ndim != 1 || cu.shape[0] < 2 || !cu.data)
      return refuse(call, "cu_seqlens: expected i64 [N+1] with N >= 1");
    if (p.B != 1) return refuse(call, "varlen needs B == 1, got %lld", (long long)p.B);
    p.N = cu.shape[0] - 1;
    S = p.N;
    c.cu.resize(p.N + 1);
    for (int64_t i = 0; i <= p.N; ++i)
      std::memcpy(&c.cu[i], static_cast<const char*>(cu.data) + i * cu.stride[0] * int64_t(sizeof(int64_t)),
                  sizeof(int64_t));
    if (c.cu[0] != 0 || c.cu[p.N] != p.T) return refuse(call, "cu_seqlens must start at 0 and end at T");
    for (int64_t i = 0; i < p.N; ++i)
      if (c.cu[i + 1] < c.cu[i]) return refuse(call, "cu_seqlens must be non-decreasing");
    p.cu_seqlens = c.cu.data();
  }
  const int64_t B = p.B, T = p.T, H = p.H, K = p.K, V = p.V;
  const int32_t X = q.dtype, F = KCV_F32;  // X: the input dtype of q, k, v, do and o, dq, dk, dv
  if (X != KCV_F32 && X != KCV_BF16 && X != KCV_F16)
    return refuse(call, "q: dtype %d, only f32 (%d), bf16 (%d) and f16 (%d) are supported", int(X), int(KCV_F32),
                  int(KCV_BF16), int(KCV_F16));
  std::string why;
  auto chk = [&](const kcv_tensor& t, const char* name, int32_t dtype, std::initializer_list<int64_t> dims) {
    if (why.empty()) why = detail::check(t, name, dtype, dims);
  };
  auto chk_g = [&](const kcv_tensor& t, const char* name) {
    if (p.gate == GateForm::vector) chk(t, name, F, {B, T, H, K});
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
  c.scale = static_cast<float>(call->scalars[0]);
  using detail::view;
  if (backward) {
    BwdIO<float>& io = c.bwd;
    io.q = view(in[0]); io.k = view(in[1]); io.v = view(in[2]); io.g = view(in[3]); io.h0 = view(in[4]);
    io.dO = view(in[5]); io.dhT = view(in[6]);
    io.dq = view(out[0]); io.dk = view(out[1]); io.dv = view(out[2]); io.dg = view(out[3]); io.dh0 = view(out[4]);
  } else {
    FwdIO<float>& io = c.fwd;
    io.q = view(in[0]); io.k = view(in[1]); io.v = view(in[2]); io.g = view(in[3]); io.h0 = view(in[4]);
    io.o = view(out[0]); io.hT = view(out[1]);
  }
  return 0;
}

/// The chunked fp32 forward as a candidate (varlen: the contract with cu_seqlens), any input dtype,
/// in chunks of `chunk` steps (any chunk >= 1 is a legitimate evaluation order).
inline int candidate_fwd(const kcv_call* call, bool varlen, int64_t chunk = kChunk) {
  try {
    Call c;
    if (int rc = parse(call, false, varlen, c)) return rc;
    chunked_fwd<float>(c.p, c.fwd, c.scale, chunk);
    return 0;
  } catch (const std::exception& e) {
    return refuse(call, "glr_fwd: %s", e.what());
  }
}

/// The chunked fp32 backward as a candidate, in chunks of `chunk` steps.
inline int candidate_bwd(const kcv_call* call, bool varlen, int64_t chunk = kChunk) {
  try {
    Call c;
    if (int rc = parse(call, true, varlen, c)) return rc;
    chunked_bwd<float>(c.p, c.bwd, c.scale, chunk);
    return 0;
  } catch (const std::exception& e) {
    return refuse(call, "glr_bwd: %s", e.what());
  }
}

/// The chunked forward / backward with policy Policy<true> for bf16 inputs, Policy<false> for f16
/// (chosen from q's dtype) and plain fp32 for f32 inputs: TensorCore16 is a tensor-core kernel on
/// the CPU (every MMA operand rounded once to the input dtype, fp32 accumulation and state); in
/// chunks of `chunk` steps.
template <template <bool> class Policy>
int candidate_fwd_with(const kcv_call* call, bool varlen, int64_t chunk = kChunk) {
  try {
    Call c;
    if (int rc = parse(call, false, varlen, c)) return rc;
    switch (c.fwd.q.storage) {
      case Storage::bf16: chunked_fwd<float, Policy<true>>(c.p, c.fwd, c.scale, chunk); break;
      case Storage::f16: chunked_fwd<float, Policy<false>>(c.p, c.fwd, c.scale, chunk); break;
      default: chunked_fwd<float>(c.p, c.fwd, c.scale, chunk); break;
    }
    return 0;
  } catch (const std::exception& e) {
    return refuse(call, "glr_fwd: %s", e.what());
  }
}

template <template <bool> class Policy>
int candidate_bwd_with(const kcv_call* call, bool varlen, int64_t chunk = kChunk) {
  try {
    Call c;
    if (int rc = parse(call, true, varlen, c)) return rc;
    switch (c.bwd.q.storage) {
      case Storage::bf16: chunked_bwd<float, Policy<true>>(c.p, c.bwd, c.scale, chunk); break;
      case Storage::f16: chunked_bwd<float, Policy<false>>(c.p, c.bwd, c.scale, chunk); break;
      default: chunked_bwd<float>(c.p, c.bwd, c.scale, chunk); break;
    }
    return 0;
  } catch (const std::exception& e) {
    return refuse(call, "glr_bwd: %s", e.what());
  }
}

}  // namespace glr::cpu
