// glr_torch — the PyTorch front of glr's CUDA API (include/glr/cuda.hpp): torch tensors in, checked
// against the API's layout, glr::cuda::forward / backward on torch's current stream, workspace
// from torch's caching allocator. The autograd Function and the FLA-style argument handling are in
// Python (glr_torch/__init__.py); this file only checks what would otherwise be a memory error and
// maps a Status to a Python RuntimeError.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <string>
#include <tuple>
#include <vector>

#include "glr/cuda.hpp"

namespace {

namespace gc = glr::cuda;
using OptTensor = c10::optional<at::Tensor>;

gc::DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return gc::DType::f32;
    case at::kBFloat16: return gc::DType::bf16;
    case at::kHalf: return gc::DType::f16;
    case at::kDouble: return gc::DType::f64;
    default: break;
  }
  TORCH_CHECK(false, "glr_torch: q, k, v must be float32, bfloat16, float16 or float64, not ", t.scalar_type());
}

// g and the states: fp64 with fp64 inputs (gradcheck), fp32 otherwise.
at::ScalarType state_type(const at::Tensor& q) { return q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

void check_tensor(const at::Tensor& t, const char* name, const at::Tensor& q, at::ScalarType dtype) {
  TORCH_CHECK(t.is_cuda(), "glr_torch: ", name, " must be a CUDA tensor");
  TORCH_CHECK(t.device() == q.device(), "glr_torch: ", name, " is on ", t.device(), ", q on ", q.device());
  TORCH_CHECK(t.scalar_type() == dtype, "glr_torch: ", name, " must be ", dtype, ", not ", t.scalar_type());
  TORCH_CHECK(t.is_contiguous(), "glr_torch: ", name, " must be contiguous");
}

void check_shape(const at::Tensor& t, const char* name, std::vector<int64_t> want) {
  TORCH_CHECK(t.sizes() == at::IntArrayRef(want), "glr_torch: ", name, " has shape ", t.sizes(), ", expected ",
              at::IntArrayRef(want));
}

// The geometry of a call, from q [B,T,H,K], v [B,T,H,V], g and cu_seqlens; every tensor checked.
struct Geometry {
  gc::Shape shape;
  at::ScalarType state = at::kFloat;
};

Geometry geometry(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                  const OptTensor& cu_seqlens) {
  TORCH_CHECK(q.is_cuda(), "glr_torch: q must be a CUDA tensor");
  TORCH_CHECK(q.dim() == 4, "glr_torch: q must be [B, T, H, K], got ", q.sizes());
  TORCH_CHECK(v.dim() == 4, "glr_torch: v must be [B, T, H, V], got ", v.sizes());
  Geometry geo;
  gc::Shape& s = geo.shape;
  s.dtype = dtype_of(q);
  geo.state = state_type(q);
  s.B = q.size(0), s.T = q.size(1), s.H = q.size(2), s.K = q.size(3), s.V = v.size(3);
  check_tensor(q, "q", q, q.scalar_type());
  check_tensor(k, "k", q, q.scalar_type());
  check_tensor(v, "v", q, q.scalar_type());
  check_tensor(g, "g", q, geo.state);
  check_shape(k, "k", {s.B, s.T, s.H, s.K});
  check_shape(v, "v", {s.B, s.T, s.H, s.V});
  if (g.dim() == 4) {
    s.gate = gc::Gate::vector;
    check_shape(g, "g (vector gate)", {s.B, s.T, s.H, s.K});
  } else {
    s.gate = gc::Gate::scalar;
    check_shape(g, "g (scalar gate)", {s.B, s.T, s.H});
  }
  if (cu_seqlens.has_value()) {
    const at::Tensor& cu = *cu_seqlens;
    check_tensor(cu, "cu_seqlens", q, at::kLong);
    TORCH_CHECK(cu.dim() == 1 && cu.numel() >= 2, "glr_torch: cu_seqlens must be [N+1] with N >= 1, got ",
                cu.sizes());
    TORCH_CHECK(s.B == 1, "glr_torch: with cu_seqlens the batch size must be 1, got B=", s.B);
    s.cu_seqlens = cu.data_ptr<int64_t>();
    s.N = cu.numel() - 1;
  }
  const std::string why = gc::unsupported(s);
  TORCH_CHECK(why.empty(), "glr_torch: unsupported: ", why);
  return geo;
}

const void* ptr_or_null(const OptTensor& t) { return t.has_value() ? t->data_ptr() : nullptr; }

void check_state(const OptTensor& t, const char* name, const at::Tensor& q, const Geometry& geo) {
  if (!t.has_value()) return;
  check_tensor(*t, name, q, geo.state);
  check_shape(*t, name, {geo.shape.sequences(), geo.shape.H, geo.shape.K, geo.shape.V});
}

// Device scratch from torch's caching allocator (none when the call needs none).
at::Tensor workspace(size_t bytes, const at::Tensor& q) {
  return bytes ? at::empty({static_cast<int64_t>(bytes)}, q.options().dtype(at::kByte)) : at::Tensor();
}

/// Forward: (o [B,T,H,V] in q's dtype, hT [N,H,K,V] in the state dtype or None, the kept states
/// (bytes) for bwd or None: kept only when save_states and the shape's kernels keep any).
std::tuple<at::Tensor, OptTensor, OptTensor> fwd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                 const at::Tensor& g, const OptTensor& h0,
                                                 const OptTensor& cu_seqlens, double scale, bool output_final_state,
                                                 bool save_states) {
  const Geometry geo = geometry(q, k, v, g, cu_seqlens);
  check_state(h0, "initial_state", q, geo);
  const gc::Shape& s = geo.shape;
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = at::empty({s.B, s.T, s.H, s.V}, q.options());
  OptTensor hT;
  if (output_final_state) hT = at::empty({s.sequences(), s.H, s.K, s.V}, q.options().dtype(geo.state));
  if (s.T == 0) {  // nothing to launch: the final state is the initial one
    if (hT.has_value()) h0.has_value() ? hT->copy_(*h0) : hT->zero_();
    return {o, hT, OptTensor()};
  }
  const size_t keep = save_states ? gc::saved_states_bytes(s) : 0;
  const size_t ws_bytes = gc::forward_workspace_bytes(s, keep > 0);
  at::Tensor ws = workspace(ws_bytes, q);
  OptTensor saved;
  if (keep) saved = workspace(keep, q);
  gc::FwdParams p;
  p.shape = s;
  p.q = q.data_ptr(), p.k = k.data_ptr(), p.v = v.data_ptr(), p.g = g.data_ptr();
  p.h0 = ptr_or_null(h0);
  p.o = o.data_ptr();
  p.hT = hT.has_value() ? hT->data_ptr() : nullptr;
  p.scale = scale;
  p.workspace = ws.defined() ? ws.data_ptr() : nullptr, p.workspace_bytes = ws_bytes;
  p.saved = saved.has_value() ? saved->data_ptr() : nullptr, p.saved_bytes = keep;
  const gc::Status st = gc::forward(p, at::cuda::getCurrentCUDAStream(q.device().index()).stream());
  TORCH_CHECK(st.ok(), "glr_torch: glr::cuda::forward: ", st.message);
  return {o, hT, saved};
}

/// Backward: (dq, dk, dv in q's dtype; dg shaped like g; dh0 [N,H,K,V] or None), from do and dhT.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, OptTensor> bwd(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g, const OptTensor& h0,
    const OptTensor& cu_seqlens, const at::Tensor& dO, const OptTensor& dhT, double scale, bool want_dh0,
    const OptTensor& saved) {
  const Geometry geo = geometry(q, k, v, g, cu_seqlens);
  check_state(h0, "initial_state", q, geo);
  check_state(dhT, "the final state's gradient", q, geo);
  check_tensor(dO, "the output's gradient", q, q.scalar_type());
  const gc::Shape& s = geo.shape;
  check_shape(dO, "the output's gradient", {s.B, s.T, s.H, s.V});
  const c10::cuda::CUDAGuard guard(q.device());
  at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v), dg = at::empty_like(g);
  OptTensor dh0;
  if (want_dh0) dh0 = at::empty({s.sequences(), s.H, s.K, s.V}, q.options().dtype(geo.state));
  if (s.T == 0) {  // the state passes through unchanged: dh0 = dhT
    if (dh0.has_value()) dhT.has_value() ? dh0->copy_(*dhT) : dh0->zero_();
    return {dq, dk, dv, dg, dh0};
  }
  // NOTES: kept states come from fwd on these same tensors (the autograd Function's ctx); their size
  // is checked against this shape's, a stale or foreign buffer of the right size is the caller's bug.
  const size_t keep = saved.has_value() ? gc::saved_states_bytes(s) : 0;
  if (saved.has_value()) {
    TORCH_CHECK(saved->is_cuda() && saved->device() == q.device() && saved->scalar_type() == at::kByte &&
                    saved->is_contiguous() && size_t(saved->numel()) == keep,
                "glr_torch: the kept states are not this shape's (", saved->numel(), " bytes, ", keep, " expected)");
  }
  const size_t ws_bytes = gc::backward_workspace_bytes(s, keep > 0);
  at::Tensor ws = workspace(ws_bytes, q);
  gc::BwdParams p;
  p.shape = s;
  p.q = q.data_ptr(), p.k = k.data_ptr(), p.v = v.data_ptr(), p.g = g.data_ptr();
  p.h0 = ptr_or_null(h0);
  p.dO = dO.data_ptr();
  p.dhT = ptr_or_null(dhT);
  p.dq = dq.data_ptr(), p.dk = dk.data_ptr(), p.dv = dv.data_ptr(), p.dg = dg.data_ptr();
  p.dh0 = dh0.has_value() ? dh0->data_ptr() : nullptr;
  p.scale = scale;
  p.workspace = ws.defined() ? ws.data_ptr() : nullptr, p.workspace_bytes = ws_bytes;
  p.saved = keep ? saved->data_ptr() : nullptr, p.saved_bytes = keep;
  const gc::Status st = gc::backward(p, at::cuda::getCurrentCUDAStream(q.device().index()).stream());
  TORCH_CHECK(st.ok(), "glr_torch: glr::cuda::backward: ", st.message);
  return {dq, dk, dv, dg, dh0};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "glr's CUDA forward and backward on torch tensors (use glr_torch.chunk_glr)";
  m.def("fwd", &fwd, "glr forward: (o, hT or None, kept states or None)", py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("g"), py::arg("h0"), py::arg("cu_seqlens"), py::arg("scale"), py::arg("output_final_state"),
        py::arg("save_states") = false);
  m.def("bwd", &bwd, "glr backward: (dq, dk, dv, dg, dh0 or None)", py::arg("q"), py::arg("k"), py::arg("v"),
        py::arg("g"), py::arg("h0"), py::arg("cu_seqlens"), py::arg("do"), py::arg("dht"), py::arg("scale"),
        py::arg("want_dh0"), py::arg("saved") = py::none());
}
