// glr fp64 reference, chunked order: the algorithm of glr/cpu_chunked.hpp in double, with exp
// factors and decayed products below FLT_MIN flushed to zero as an fp32 device may flush them.
// One legitimate evaluation order, for the tests (the nonfinite gate takes its classes from the
// sequential reference's expansion, reference_terms.cpp). For the bf16/f16 contracts it also
// rounds every matrix-product operand to the input dtype (FwdInputs::operands), as a tensor-core
// kernel does.
#include <cfloat>
#include <cmath>

#include "glr/cpu_chunked.hpp"
#include "glr/reference/reference.hpp"

namespace glr {

namespace {

struct FlushF32 {
  template <class T> static T mm(T x) { return x; }
  template <class T> static T decay(T z) {
    const T e = std::exp(z);
    return e < T(FLT_MIN) ? T(0) : e;
  }
  template <class T> static T fl(T x) { return std::fabs(x) < T(FLT_MIN) ? std::copysign(T(0), x) : x; }
};

/// FlushF32 with every matrix-product operand rounded to the operand dtype (O), as a tensor-core
/// kernel rounds them: values only matter for their class here.
template <OperandDtype O>
struct FlushOperands : FlushF32 {
  static double mm(double x) {
    if constexpr (O == OperandDtype::f32) {
      return x;
    } else {
      const float f = float(x);
      return O == OperandDtype::bf16 ? bf16_to_float(float_to_bf16(f)) : f16_to_float(float_to_f16(f));
    }
  }
};

using cpu::View;

View<double> qk_view(const Problem& p, const double* x) { return View<double>::dense(x, p.T, p.H, p.K); }
View<double> v_view(const Problem& p, const double* x) { return View<double>::dense(x, p.T, p.H, p.V); }
View<double> g_view(const Problem& p, const double* x) { return View<double>::dense(x, p.T, p.H, p.gate_width()); }
View<double> st_view(const Problem& p, const double* x) { return View<double>::dense(x, p.H, p.K, p.V); }

}  // namespace

FwdResult reference_chunked_fwd(const Problem& p, const FwdInputs& in) {
  FwdResult out;
  out.o.resize(p.v_elems());
  out.hT.resize(p.state_elems());
  cpu::FwdIO<double> io;
  io.q = qk_view(p, in.q);
  io.k = qk_view(p, in.k);
  io.v = v_view(p, in.v);
  io.g = g_view(p, in.g);
  io.h0 = st_view(p, in.h0);
  io.has_h0 = in.h0 != nullptr;
  io.o = v_view(p, out.o.value.data());
  io.hT = st_view(p, out.hT.value.data());
  switch (in.operands) {
    case OperandDtype::f32: cpu::chunked_fwd<double, FlushF32>(p, io, in.scale); break;
    case OperandDtype::bf16: cpu::chunked_fwd<double, FlushOperands<OperandDtype::bf16>>(p, io, in.scale); break;
    case OperandDtype::f16: cpu::chunked_fwd<double, FlushOperands<OperandDtype::f16>>(p, io, in.scale); break;
  }
  return out;
}

BwdResult reference_chunked_bwd(const Problem& p, const BwdInputs& in) {
  BwdResult out;
  out.dq.resize(p.qk_elems());
  out.dk.resize(p.qk_elems());
  out.dv.resize(p.v_elems());
  out.dg.resize(p.g_elems());
  out.dh0.resize(p.state_elems());
  cpu::BwdIO<double> io;
  io.q = qk_view(p, in.q);
  io.k = qk_view(p, in.k);
  io.v = v_view(p, in.v);
  io.g = g_view(p, in.g);
  io.h0 = st_view(p, in.h0);
  io.has_h0 = in.h0 != nullptr;
  io.dO = v_view(p, in.dO);
  io.dhT = st_view(p, in.dhT);
  io.has_dhT = in.dhT != nullptr;
  io.dq = qk_view(p, out.dq.value.data());
  io.dk = qk_view(p, out.dk.value.data());
  io.dv = v_view(p, out.dv.value.data());
  io.dg = g_view(p, out.dg.value.data());
  io.dh0 = st_view(p, out.dh0.value.data());
  switch (in.operands) {
    case OperandDtype::f32: cpu::chunked_bwd<double, FlushF32>(p, io, in.scale); break;
    case OperandDtype::bf16: cpu::chunked_bwd<double, FlushOperands<OperandDtype::bf16>>(p, io, in.scale); break;
    case OperandDtype::f16: cpu::chunked_bwd<double, FlushOperands<OperandDtype::f16>>(p, io, in.scale); break;
  }
  return out;
}

}  // namespace glr
