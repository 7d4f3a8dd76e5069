// glr::cuda::backward (sm90_glr_bwd) against the fp64 reference backward (glr/reference/reference.hpp), judged
// with the kcv error model's own bound (c = 3, the glr contracts' constant): per element
//   |got − r| ≤ 3·(u·(depth·mag + amp) + under·2^-149 + depth·η) + u_out·|r| + η_out
// (u = 2^-24, η = 2^-150 for the fp32 path; u = 2^-53, no underflow terms for f64; u_out, η_out of
// the output's dtype), which a TF32-like or bf16-state kernel exceeds (glr/tests/unit). Outputs are
// poisoned with NaN before each call, so an element left unwritten fails. GPU tests skip with the
// reason when no device is present.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "glr/cuda.hpp"
#include "glr/half.hpp"
#include "glr/problem.hpp"
#include "glr/reference/reference.hpp"

namespace {

using glr::cuda::DType;
using glr::cuda::Gate;

#define BWD_CUDA(call)                                                                                     \
  do {                                                                                                     \
    const cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess)                                                                                 \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #call ": " + \
                               cudaGetErrorName(e_) + ": " + cudaGetErrorString(e_));                     \
  } while (0)

/// Empty when a CUDA device is usable, else why not.
std::string no_gpu() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  return {};
}
#define REQUIRE_GPU()                                     \
  do {                                                    \
    if (std::string why_ = no_gpu(); !why_.empty()) GTEST_SKIP() << why_; \
  } while (0)

size_t io_bytes(DType t) { return t == DType::f64 ? 8 : t == DType::f32 ? 4 : 2; }

/// x rounded to the storage type t (round to nearest even), as a double.
double round_to(DType t, double x) {
  switch (t) {
    case DType::f64: return x;
    case DType::f32: return double(float(x));
    case DType::bf16: return double(glr::bf16_to_float(glr::float_to_bf16(float(x))));
    case DType::f16: return double(glr::f16_to_float(glr::float_to_f16(float(x))));
  }
  return x;
}

std::vector<unsigned char> encode(DType t, const std::vector<double>& x) {
  std::vector<unsigned char> out(x.size() * io_bytes(t));
  for (size_t i = 0; i < x.size(); ++i) {
    unsigned char* p = out.data() + i * io_bytes(t);
    if (t == DType::f64) {
      std::memcpy(p, &x[i], 8);
    } else if (t == DType::f32) {
      const float f = float(x[i]);
      std::memcpy(p, &f, 4);
    } else {
      const uint16_t h = t == DType::bf16 ? glr::float_to_bf16(float(x[i])) : glr::float_to_f16(float(x[i]));
      std::memcpy(p, &h, 2);
    }
  }
  return out;
}

std::vector<double> decode(DType t, const std::vector<unsigned char>& b) {
  std::vector<double> out(b.size() / io_bytes(t));
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = b.data() + i * io_bytes(t);
    if (t == DType::f64) {
      std::memcpy(&out[i], p, 8);
    } else if (t == DType::f32) {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      out[i] = t == DType::bf16 ? glr::bf16_to_float(h) : glr::f16_to_float(h);
    }
  }
  return out;
}

struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DevBuf(size_t n = 0) : bytes(n) {
    if (n) BWD_CUDA(cudaMalloc(&p, n));
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
};

/// One backward problem.
struct Case {
  int64_t B = 1, T = 64, H = 1, K = 32, V = 32;
  Gate gate = Gate::vector;
  DType dtype = DType::f32;
  std::vector<int64_t> cu;  // varlen when non-empty (B = 1, T = cu.back())
  bool h0 = true, dhT = true, dh0 = true;
  int chunk = 64;
  bool own_stream = false;
  bool from_saved = false;  // a forward keeps its states first (FwdParams::saved), the backward reads them
  uint64_t seed = 1;
  enum class GateValues { random, zero, mixed_m20 } gv = GateValues::random;

  std::string name() const {
    std::ostringstream s;
    s << "B=" << B << " T=" << T << " H=" << H << " K=" << K << " V=" << V
      << (gate == Gate::vector ? " vector" : " scalar") << " dtype=" << int(dtype) << " chunk=" << chunk
      << (cu.empty() ? "" : " varlen N=" + std::to_string(cu.size() - 1)) << " h0=" << h0 << " dhT=" << dhT
      << " dh0=" << dh0 << (own_stream ? " own-stream" : " stream0") << (from_saved ? " from-saved" : "")
      << " seed=" << seed;
    return s.str();
  }
};

/// Operands as doubles (already rounded to their storage types), the reference's layout.
struct Operands {
  glr::Problem p;
  std::vector<int64_t> cu;
  std::vector<double> q, k, v, g, h0, dO, dhT;
  double scale = 1;
};

Operands make_operands(const Case& c) {
  Operands o;
  o.cu = c.cu;
  o.p.B = c.B;
  o.p.T = c.T;
  o.p.H = c.H;
  o.p.K = c.K;
  o.p.V = c.V;
  o.p.gate = c.gate == Gate::vector ? glr::GateForm::vector : glr::GateForm::scalar;
  if (!o.cu.empty()) {
    o.p.cu_seqlens = o.cu.data();
    o.p.N = int64_t(o.cu.size()) - 1;
  }
  const DType st = c.dtype == DType::f64 ? DType::f64 : DType::f32;
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> N01;
  auto fill = [&](std::vector<double>& x, int64_t n, DType t) {
    x.resize(size_t(n));
    for (auto& e : x) e = round_to(t, N01(rng));
  };
  fill(o.q, o.p.qk_elems(), c.dtype);
  fill(o.k, o.p.qk_elems(), c.dtype);
  fill(o.v, o.p.v_elems(), c.dtype);
  fill(o.dO, o.p.v_elems(), c.dtype);
  fill(o.h0, o.p.state_elems(), st);
  fill(o.dhT, o.p.state_elems(), st);
  o.g.resize(size_t(o.p.g_elems()));
  std::uniform_int_distribution<int> coin(0, 3);
  for (auto& e : o.g) {
    double x;
    switch (c.gv) {
      case Case::GateValues::zero: x = 0; break;
      case Case::GateValues::mixed_m20: x = coin(rng) == 0 ? -20.0 : -0.01 * std::fabs(N01(rng)); break;
      default: {
        const double z = 2 + 1.5 * N01(rng);
        x = -std::log1p(std::exp(-z));
      }
    }
    e = round_to(st, x);
  }
  o.scale = round_to(DType::f32, 1.0 / std::sqrt(double(c.K)));
  return o;
}

/// Raw output bytes of one call.
struct Outputs {
  std::vector<unsigned char> dq, dk, dv, dg, dh0;
  bool operator==(const Outputs&) const = default;
};

/// Uploads the operands, runs glr::cuda::backward, downloads every output.
Outputs run_backward(const Case& c, const Operands& o) {
  const DType io = c.dtype, st = c.dtype == DType::f64 ? DType::f64 : DType::f32;
  auto upload = [](DevBuf& d, const std::vector<unsigned char>& b) {
    if (!b.empty()) BWD_CUDA(cudaMemcpy(d.p, b.data(), b.size(), cudaMemcpyHostToDevice));
  };
  const auto eq = encode(io, o.q), ek = encode(io, o.k), ev = encode(io, o.v), edo = encode(io, o.dO);
  const auto eg = encode(st, o.g), eh0 = encode(st, o.h0), edhT = encode(st, o.dhT);
  DevBuf q(eq.size()), k(ek.size()), v(ev.size()), dO(edo.size()), g(eg.size()), h0(eh0.size()),
      dhT(edhT.size());
  upload(q, eq);
  upload(k, ek);
  upload(v, ev);
  upload(dO, edo);
  upload(g, eg);
  upload(h0, eh0);
  upload(dhT, edhT);
  DevBuf dq(eq.size()), dk(ek.size()), dv(ev.size()), dg(eg.size()), dh0(eh0.size());
  for (DevBuf* b : {&dq, &dk, &dv, &dg, &dh0})
    if (b->bytes) BWD_CUDA(cudaMemset(b->p, 0xFF, b->bytes));  // NaN in every float type
  DevBuf cu(o.cu.size() * sizeof(int64_t));
  if (!o.cu.empty()) BWD_CUDA(cudaMemcpy(cu.p, o.cu.data(), cu.bytes, cudaMemcpyHostToDevice));

  glr::cuda::Shape s;
  s.B = c.B;
  s.T = c.T;
  s.H = c.H;
  s.K = c.K;
  s.V = c.V;
  s.gate = c.gate;
  s.dtype = io;
  s.chunk = c.chunk;
  if (!o.cu.empty()) {
    s.cu_seqlens = static_cast<const int64_t*>(cu.p);
    s.N = int64_t(o.cu.size()) - 1;
  }
  const size_t keep = c.from_saved ? glr::cuda::saved_states_bytes(s) : 0;
  if (c.from_saved && keep == 0) throw std::runtime_error("saved_states_bytes is 0 for " + c.name());
  const size_t wsb = glr::cuda::backward_workspace_bytes(s, keep > 0);
  DevBuf ws(wsb);
  if (wsb) BWD_CUDA(cudaMemset(ws.p, 0xFF, wsb));  // stale garbage must never leak into a result
  const size_t fwsb = keep ? glr::cuda::forward_workspace_bytes(s, true) : 0;
  DevBuf saved(keep), fws(fwsb), o_scratch(keep ? ev.size() : 0);
  if (keep) BWD_CUDA(cudaMemset(saved.p, 0xFF, keep));
  if (fwsb) BWD_CUDA(cudaMemset(fws.p, 0xFF, fwsb));
  glr::cuda::BwdParams prm;
  prm.shape = s;
  prm.q = q.p;
  prm.k = k.p;
  prm.v = v.p;
  prm.g = g.p;
  prm.h0 = c.h0 ? h0.p : nullptr;
  prm.dO = dO.p;
  prm.dhT = c.dhT ? dhT.p : nullptr;
  prm.dq = dq.p;
  prm.dk = dk.p;
  prm.dv = dv.p;
  prm.dg = dg.p;
  prm.dh0 = c.dh0 ? dh0.p : nullptr;
  prm.scale = o.scale;
  prm.workspace = ws.p;
  prm.workspace_bytes = wsb;
  BWD_CUDA(cudaDeviceSynchronize());
  cudaStream_t stream = nullptr;
  if (c.own_stream) BWD_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (keep) {
    const glr::cuda::FwdParams f{.shape = s, .q = q.p, .k = k.p, .v = v.p, .g = g.p, .h0 = prm.h0,
                                 .o = o_scratch.p, .scale = o.scale, .workspace = fws.p, .workspace_bytes = fwsb,
                                 .saved = saved.p, .saved_bytes = keep};
    if (const glr::cuda::Status fs = glr::cuda::forward(f, stream); !fs.ok()) {
      if (stream) cudaStreamDestroy(stream);
      throw std::runtime_error("glr::cuda::forward (saving) refused: " + fs.message);
    }
    prm.saved = saved.p;
    prm.saved_bytes = keep;
  }
  const glr::cuda::Status status = glr::cuda::backward(prm, stream);
  if (!status.ok()) {
    if (stream) cudaStreamDestroy(stream);
    throw std::runtime_error("glr::cuda::backward refused: " + status.message);
  }
  Outputs out;
  auto down = [&](std::vector<unsigned char>& h, const DevBuf& d) {
    h.resize(d.bytes);
    if (d.bytes) BWD_CUDA(cudaMemcpyAsync(h.data(), d.p, d.bytes, cudaMemcpyDeviceToHost, stream));
  };
  down(out.dq, dq);
  down(out.dk, dk);
  down(out.dv, dv);
  down(out.dg, dg);
  if (c.dh0) down(out.dh0, dh0);
  BWD_CUDA(cudaStreamSynchronize(stream));
  if (stream) BWD_CUDA(cudaStreamDestroy(stream));
  BWD_CUDA(cudaGetLastError());
  return out;
}

double unit_out(DType t) {
  switch (t) {
    case DType::f64: return 0x1p-53;
    case DType::f32: return 0x1p-24;
    case DType::bf16: return 0x1p-8;
    case DType::f16: return 0x1p-11;
  }
  return 0;
}
double eta_out(DType t) {
  switch (t) {
    case DType::f64: return 0;
    case DType::f32: return 0x1p-150;
    case DType::bf16: return 0x1p-134;
    case DType::f16: return 0x1p-25;
  }
  return 0;
}

/// Result of judging one output against the reference.
struct Judged {
  int64_t bad = 0;
  double worst = 0;       // max |got − r| / bound
  double max_ref = 0;     // max |r|
  std::string first;      // the first mismatches, capped
};

/// κ of the bf16/f16 glr contracts' operand-rounding term (glr/reference/reference.hpp).
constexpr double kKappa = glr::kOperandRoundingKappa;

Judged judge(const char* what, DType in_t, DType out_t, bool f64_path, const std::vector<double>& got,
             const glr::Estimate& ref) {
  constexpr double c = 3.0;
  const double u = f64_path ? 0x1p-53 : 0x1p-24, eta = f64_path ? 0.0 : 0x1p-150,
               under_unit = f64_path ? 0.0 : 0x1p-149;
  const double uo = unit_out(out_t), eo = eta_out(out_t);
  Judged j;
  if (got.size() != ref.value.size()) {
    j.bad = 1;
    j.first = std::string(what) + ": size " + std::to_string(got.size()) + " vs reference " +
              std::to_string(ref.value.size());
    return j;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref.value[i];
    double bound =
        c * (u * (ref.depth[i] * ref.mag[i] + ref.amp[i]) + ref.under[i] * under_unit + ref.depth[i] * eta) +
        uo * std::fabs(r) + eo;
    if (in_t == DType::bf16 || in_t == DType::f16) {  // tensor-core operands rounded once (the contracts' κ·u_in·op term)
      const double u_in = in_t == DType::bf16 ? 0x1p-8 : 0x1p-11;
      const double eta_in = u_in * (in_t == DType::f16 ? 0x1p-14 : 0x1p-126);
      bound += kKappa * (u_in * ref.op[i] + eta_in * ref.opu[i]);
      if (ref.ovf[i] >= (in_t == DType::f16 ? 65504.0 : 3.3895313892515355e38) * (1 - 0x1p-8)) continue;
    }
    const double err = std::fabs(got[i] - r);
    j.max_ref = std::max(j.max_ref, std::fabs(r));
    const bool ok = std::isfinite(got[i]) && err <= bound;
    if (std::isfinite(got[i]) && bound > 0) j.worst = std::max(j.worst, err / bound);
    if (!ok) {
      if (j.bad < 5) {
        std::ostringstream s;
        s.precision(9);
        s << "  " << what << "[" << i << "]: got " << got[i] << ", expected " << r << ", |err| " << err
          << " > bound " << bound << "\n";
        j.first += s.str();
      }
      ++j.bad;
    }
  }
  return j;
}

/// Runs case c and checks every output against the fp64 reference (evaluated with `ref_scale`
/// times the kernel's scale: 1 normally; other values prove the check can fail).
struct Verdict {
  int64_t bad = 0;
  std::string report;
  double worst = 0;
};

Verdict check_case(const Case& c, double ref_scale = 1.0) {
  const Operands o = make_operands(c);
  const Outputs got = run_backward(c, o);
  glr::BwdInputs in{o.q.data(), o.k.data(), o.v.data(), o.g.data(), c.h0 ? o.h0.data() : nullptr,
                    o.dO.data(), c.dhT ? o.dhT.data() : nullptr, o.scale * ref_scale};
  const glr::BwdResult ref = glr::reference_bwd(o.p, in);
  const bool f64 = c.dtype == DType::f64;
  const DType st = f64 ? DType::f64 : DType::f32;
  Verdict v;
  auto one = [&](const char* name, DType t, const std::vector<unsigned char>& bytes, const glr::Estimate& e) {
    const Judged j = judge(name, c.dtype, t, f64, decode(t, bytes), e);
    v.bad += j.bad;
    v.worst = std::max(v.worst, j.worst);
    v.report += j.first;
    // Non-vacuous: every output of a non-empty problem has a non-zero reference somewhere.
    if (!e.value.empty() && j.max_ref == 0) {
      ++v.bad;
      v.report += std::string("  ") + name + ": the reference is all zero (vacuous case)\n";
    }
  };
  one("dq", c.dtype, got.dq, ref.dq);
  one("dk", c.dtype, got.dk, ref.dk);
  one("dv", c.dtype, got.dv, ref.dv);
  one("dg", st, got.dg, ref.dg);
  if (c.dh0) {
    if (c.dhT || c.T > 0) {
      one("dh0", st, got.dh0, ref.dh0);
    } else {  // no gradient reaches dh0 at all: it must be exactly zero
      const std::vector<double> d = decode(st, got.dh0);
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i] != 0) {
          ++v.bad;
          v.report += "  dh0[" + std::to_string(i) + "] = " + std::to_string(d[i]) + ", expected 0\n";
          break;
        }
    }
  }
  return v;
}

void expect_pass(const Case& c) {
  const Verdict v = check_case(c);
  EXPECT_EQ(v.bad, 0) << c.name() << "\n" << v.report;
  // Recorded so a later change that costs accuracy shows (how close to the bound this kernel sits).
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(v.worst));
  if (v.bad == 0) std::printf("  [%s] worst error/bound %.3g\n", c.name().c_str(), v.worst);
}

// ---- tests ----

TEST(GlrCudaBwd, RefusesTooSmallWorkspace) {
  // No launch happens on a refusal, so this runs without a GPU too.
  glr::cuda::Shape s;
  s.B = 2;
  s.T = 100;
  s.H = 3;
  s.K = 13;
  s.V = 40;
  const size_t need = glr::cuda::backward_workspace_bytes(s);
  ASSERT_GT(need, 0u);
  glr::cuda::BwdParams p;
  p.shape = s;
  alignas(16) static unsigned char dummy[16];
  p.workspace = dummy;
  p.workspace_bytes = need - 1;
  glr::cuda::Status st = glr::cuda::backward(p, nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message.find("workspace"), std::string::npos) << st.message;
  p.workspace = nullptr;
  p.workspace_bytes = need;
  st = glr::cuda::backward(p, nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message.find("workspace"), std::string::npos) << st.message;
  // Varlen sizes depend on T and N only (the host never reads cu_seqlens).
  glr::cuda::Shape vl = s;
  vl.B = 1;
  vl.N = 5;
  vl.cu_seqlens = reinterpret_cast<const int64_t*>(dummy);
  EXPECT_GT(glr::cuda::backward_workspace_bytes(vl), 0u);
}

TEST(GlrCudaBwd, SizesK) {
  REQUIRE_GPU();
  const int64_t Vs[] = {13, 32, 3, 127, 64, 1, 256, 128};
  int i = 0;
  for (int64_t K : {1, 3, 13, 32, 64, 127, 128, 256}) {
    Case c;
    c.B = 2;
    c.H = 2;
    c.T = 65;
    c.K = K;
    c.V = Vs[i];
    c.gate = i % 2 ? Gate::scalar : Gate::vector;
    c.own_stream = i % 3 == 0;
    c.seed = 100 + i++;
    expect_pass(c);
  }
}

TEST(GlrCudaBwd, SizesV) {
  REQUIRE_GPU();
  const int64_t Ks[] = {32, 13, 256, 1, 127, 64, 3, 128};
  int i = 0;
  for (int64_t V : {1, 3, 13, 32, 64, 127, 128, 256}) {
    Case c;
    c.B = 1;
    c.H = 3;
    c.T = 63;
    c.K = Ks[i];
    c.V = V;
    c.gate = i % 2 ? Gate::vector : Gate::scalar;
    c.own_stream = i % 2 == 0;
    c.seed = 200 + i++;
    expect_pass(c);
  }
}

TEST(GlrCudaBwd, SizesLargest) {
  REQUIRE_GPU();
  for (Gate gate : {Gate::vector, Gate::scalar}) {
    Case c;
    c.T = 200;
    c.K = 256;
    c.V = 256;
    c.gate = gate;
    c.seed = 300 + int(gate);
    expect_pass(c);
  }
}

TEST(GlrCudaBwd, LengthsT) {
  REQUIRE_GPU();
  int i = 0;
  for (int64_t T : {0, 1, 63, 64, 65, 200})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 3;
      c.H = 2;
      c.T = T;
      c.K = 13;
      c.V = 40;
      c.gate = gate;
      c.own_stream = i % 2 == 1;
      c.seed = 400 + i++;
      expect_pass(c);
    }
}

TEST(GlrCudaBwd, Chunks) {
  REQUIRE_GPU();
  int i = 0;
  for (int chunk : {16, 32, 64})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 2;
      c.T = 200;
      c.H = 2;
      c.K = 40;
      c.V = 70;
      c.chunk = chunk;
      c.gate = gate;
      c.seed = 500 + i++;
      expect_pass(c);
    }
}

TEST(GlrCudaBwd, Varlen) {
  REQUIRE_GPU();
  // empty first, length 1, exactly one chunk, empty in the middle, chunk-unaligned starts, empty last
  const std::vector<int64_t> cu = {0, 0, 1, 65, 65, 130, 200, 200};
  int i = 0;
  for (DType dt : {DType::f32, DType::bf16})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.cu = cu;
      c.T = cu.back();
      c.H = 2;
      c.K = 37;
      c.V = 45;
      c.dtype = dt;
      c.gate = gate;
      c.own_stream = i % 2 == 0;
      c.chunk = i == 3 ? 32 : 64;
      c.seed = 600 + i++;
      expect_pass(c);
    }
  // Every sequence empty (T = 0): dh0 = dhT, nothing else.
  Case e;
  e.cu = {0, 0, 0};
  e.T = 0;
  e.H = 2;
  e.K = 5;
  e.V = 7;
  e.seed = 650;
  expect_pass(e);
}

TEST(GlrCudaBwd, Dtypes) {
  REQUIRE_GPU();
  int i = 0;
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::f64})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 2;
      c.H = 2;
      c.T = 130;
      c.K = 64;
      c.V = 48;
      c.dtype = dt;
      c.gate = gate;
      c.own_stream = i % 2 == 1;
      c.seed = 700 + i++;
      expect_pass(c);
    }
}

TEST(GlrCudaBwd, OptionalStates) {
  REQUIRE_GPU();
  for (int m = 0; m < 8; ++m)
    for (int64_t T : {0, 70}) {
      Case c;
      c.B = 2;
      c.H = 2;
      c.T = T;
      c.K = 20;
      c.V = 36;
      c.h0 = m & 1;
      c.dhT = m & 2;
      c.dh0 = m & 4;
      c.gate = m % 3 == 0 ? Gate::scalar : Gate::vector;
      c.dtype = m == 5 ? DType::f64 : DType::f32;
      c.seed = 800 + m * 2 + (T > 0);
      expect_pass(c);
    }
}

TEST(GlrCudaBwd, GateExtremes) {
  REQUIRE_GPU();
  int i = 0;
  for (auto gv : {Case::GateValues::zero, Case::GateValues::mixed_m20})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 1;
      c.H = 2;
      c.T = 200;
      c.K = 33;
      c.V = 33;
      c.gv = gv;
      c.gate = gate;
      c.seed = 900 + i++;
      expect_pass(c);
    }
}

TEST(GlrCudaBwd, BitwiseDeterministicAcrossRunsAndStreams) {
  REQUIRE_GPU();
  Case c;
  c.cu = {0, 3, 3, 150, 300};
  c.T = 300;
  c.H = 3;
  c.K = 128;
  c.V = 256;  // 8 V tiles: the cross-tile reductions run
  c.seed = 1000;
  const Operands o = make_operands(c);
  c.own_stream = false;
  const Outputs a = run_backward(c, o);
  c.own_stream = true;
  const Outputs b = run_backward(c, o);
  const Outputs d = run_backward(c, o);
  EXPECT_TRUE(a == b) << "stream 0 and a created stream differ bitwise";
  EXPECT_TRUE(b == d) << "two runs on created streams differ bitwise";
}

// ---- the tensor-core split backward (glr_bwd_split.cuh): bf16/f16, K <= 128, chunk 64 ----
// Judged with the contracts' operand term (κ·u_in·op). Sizes straddle the 16-row blocks of the
// factored off-diagonal products, the K padding to 32/64/128 and the V tiles of 64 (and 16/32/64
// of the two walks, which wider grids pick).

TEST(GlrCudaBwdSplit, SizesK) {
  REQUIRE_GPU();
  const int64_t Vs[] = {13, 256, 3, 127, 64, 1, 45};
  int i = 0;
  for (int64_t K : {1, 3, 13, 32, 64, 127, 128}) {
    Case c;
    c.B = 2;
    c.H = 2;
    c.T = 130;
    c.K = K;
    c.V = Vs[i];
    c.dtype = i % 2 ? DType::f16 : DType::bf16;
    c.gate = i % 3 == 1 ? Gate::scalar : Gate::vector;
    c.own_stream = i % 2 == 0;
    c.seed = 2000 + i++;
    expect_pass(c);
  }
}

// K in tiles of 64 in kernels 3 (dstate) and 4 (dqk): K just past a tile (65, 129), a part tile
// (96, 100), two, three and four whole tiles (128, 192, 256: kernel 5 then holds K = 256), one
// tile (33, 64); V around dqk's V-loop tile (32) and dstate's V
// tiles; both gates (the scalar gate's dg adds the K tiles' partials in kernel 5, dv), varlen and the
// −20 gates at two tiles.
TEST(GlrCudaBwdSplit, KTiles) {
  REQUIRE_GPU();
  const int64_t Ks[] = {33, 64, 65, 96, 100, 128, 129, 192, 256};
  const int64_t Vs[] = {45, 31, 128, 33, 200, 64, 17, 256, 100};
  int i = 0;
  for (int j = 0; j < 9; ++j)
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 2;
      c.H = 2;
      c.T = j % 2 ? 130 : 77;
      c.K = Ks[j];
      c.V = Vs[j];
      c.dtype = i % 2 ? DType::f16 : DType::bf16;
      c.gate = gate;
      c.own_stream = i % 3 == 0;
      c.seed = 2050 + i++;
      expect_pass(c);
    }
  for (Gate gate : {Gate::vector, Gate::scalar}) {
    Case c;  // varlen, an empty and a length-1 sequence, K = 65 + 31 (two tiles)
    c.cu = {0, 0, 1, 65, 65, 130, 200, 200};
    c.T = 200;
    c.H = 2;
    c.K = 96;
    c.V = 70;
    c.dtype = gate == Gate::scalar ? DType::f16 : DType::bf16;
    c.gate = gate;
    c.seed = 2070 + int(gate);
    expect_pass(c);
    Case x;  // the −20 gates at two K tiles
    x.B = 1;
    x.H = 2;
    x.T = 200;
    x.K = 128;
    x.V = 40;
    x.gv = Case::GateValues::mixed_m20;
    x.gate = gate;
    x.dtype = gate == Gate::scalar ? DType::bf16 : DType::f16;
    x.seed = 2080 + int(gate);
    expect_pass(x);
  }
}

// Which kernels run (glr::cuda::forward_kernels / backward_kernels): bf16/f16 at chunk 64 take
// the split kernels up to K = 256 (the D = 256 shape of issue 19 ran the FFMA backward, 60x
// slower, until session 16); f32, chunk 32 and K > 256 (refused) do not. On a Blackwell device the
// backward is sm100's.
TEST(GlrCudaBwdSplit, TakesKUpTo256) {
  glr::cuda::Shape s;
  s.B = 8;
  s.T = 2048;
  s.H = 32;
  s.K = 256;
  s.V = 256;
  s.chunk = 64;
  const std::string split_bwd = "sm90 split backward (tensor cores)", split_fwd = "sm90 split forward (tensor cores)";
  const bool blackwell = glr::cuda::backward_kernels(s) == "sm100 tcgen05 backward";
  for (DType d : {DType::bf16, DType::f16})
    for (int64_t K : {int64_t(1), int64_t(128), int64_t(129), int64_t(200), int64_t(256)}) {
      s.dtype = d;
      s.K = K;
      EXPECT_EQ(glr::cuda::forward_kernels(s), split_fwd) << "K=" << K;
      if (!blackwell) {
        EXPECT_EQ(glr::cuda::backward_kernels(s), split_bwd) << "K=" << K;
      }
    }
  s.dtype = DType::bf16;
  s.K = 256;
  s.chunk = 32;
  EXPECT_EQ(glr::cuda::backward_kernels(s), std::string("sm90 FFMA backward"));
  EXPECT_EQ(glr::cuda::forward_kernels(s), std::string("sm90 FFMA forward"));
  s.chunk = 64;
  s.dtype = DType::f32;
  EXPECT_EQ(glr::cuda::backward_kernels(s), std::string("sm90 FFMA backward"));
  EXPECT_EQ(glr::cuda::forward_kernels(s), std::string("sm90 FFMA forward"));
}

// The backward's first steps are the forward's prep and walk, but walked plainly where the forward
// walks in segments (fwd_split::Walk::plain), and its reverse state pass (kernel 3) walks the whole
// chain: in segments both lost on the H200 (bench/results/glr-bwd-split.md, "The segmented walk on
// the H200"). Shapes where the forward segments: the backward's workspace and walk are its own.
TEST(GlrCudaBwdSplit, PlainWalkWhereTheForwardSegments) {
  // 512 chunks and more (fwd_split::kMinSegWalk), one head: the fp64 reference backward of a long
  // sequence is the test's cost (58 s for the pair at H = 2, K = V = 64 on the H200's host), so K
  // and V stay small; a partial last chunk, one and two K tiles.
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {{64 * 520 + 13, 32, 32}, {64 * 520, 128, 20}};
  for (auto [T, K, V] : shapes) {  // the plan, checked without a GPU
    glr::cuda::Shape s;
    s.B = 1; s.T = T; s.H = 1; s.K = K; s.V = V; s.dtype = DType::bf16; s.gate = Gate::vector; s.chunk = 64;
    EXPECT_EQ(glr::cuda::forward_kernels(s), std::string("sm90 split forward (tensor cores), walk in 31 segments"))
        << "T=" << T << " K=" << K << " V=" << V;
    EXPECT_EQ(glr::cuda::backward_kernels(s), std::string("sm90 split backward (tensor cores)"))
        << "T=" << T << " K=" << K << " V=" << V;
  }
  REQUIRE_GPU();
  int i = 0;
  for (auto [T, K, V] : shapes) {
    Case c;
    c.B = 1;
    c.H = 1;
    c.T = T;
    c.K = K;
    c.V = V;
    c.dtype = i % 2 ? DType::f16 : DType::bf16;
    c.gate = i % 2 ? Gate::scalar : Gate::vector;
    c.seed = 2200 + i++;
    expect_pass(c);
  }
}

TEST(GlrCudaBwdSplit, SizesV) {
  REQUIRE_GPU();
  const int64_t Ks[] = {32, 13, 128, 1, 127, 64, 3, 100, 128};
  int i = 0;
  for (int64_t V : {1, 3, 13, 64, 65, 127, 128, 200, 256}) {
    Case c;
    c.B = 1;
    c.H = 3;
    c.T = 77;
    c.K = Ks[i];
    c.V = V;
    c.dtype = i % 2 ? DType::bf16 : DType::f16;
    c.gate = i % 2 ? Gate::vector : Gate::scalar;
    c.own_stream = i % 2 == 1;
    c.seed = 2100 + i++;
    expect_pass(c);
  }
}

TEST(GlrCudaBwdSplit, LengthsT) {
  REQUIRE_GPU();
  int i = 0;
  for (int64_t T : {0, 1, 15, 16, 17, 31, 33, 48, 63, 64, 65, 129, 200})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 3;
      c.H = 2;
      c.T = T;
      c.K = 40;
      c.V = 70;
      c.dtype = i % 4 < 2 ? DType::bf16 : DType::f16;
      c.gate = gate;
      c.own_stream = i % 2 == 1;
      c.seed = 2200 + i++;
      expect_pass(c);
    }
}

TEST(GlrCudaBwdSplit, Varlen) {
  REQUIRE_GPU();
  const std::vector<int64_t> cus[] = {{0, 0, 1, 65, 65, 130, 200, 200}, {0, 17, 17, 50, 178, 179, 243}};
  int i = 0;
  for (const auto& cu : cus)
    for (DType dt : {DType::bf16, DType::f16})
      for (Gate gate : {Gate::vector, Gate::scalar}) {
        Case c;
        c.cu = cu;
        c.T = cu.back();
        c.H = 2;
        c.K = 37;
        c.V = 45;
        c.dtype = dt;
        c.gate = gate;
        c.own_stream = i % 2 == 0;
        c.seed = 2300 + i++;
        expect_pass(c);
      }
  Case e;  // every sequence empty: dh0 = dhT
  e.cu = {0, 0, 0};
  e.T = 0;
  e.H = 2;
  e.K = 5;
  e.V = 7;
  e.dtype = DType::bf16;
  e.seed = 2350;
  expect_pass(e);
}

// Many sequences: the per-chunk kernels (prep, out, dqk, dv) launch a CTA per slot and find its sequence on the
// device (fwd_split::chunk_cta, 32 candidates a round): 70 sequences take two rounds, 1100 three. Lengths
// 0..90, empty ones and chunk-crossing ones among them; K 96 gives dqk two K tiles (its remapped grid).
TEST(GlrCudaBwdSplit, VarlenWithManySequences) {
  REQUIRE_GPU();
  int i = 0;
  for (int64_t n : {70, 1100})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.cu = {0};
      for (int64_t s = 0; s < n; ++s) c.cu.push_back(c.cu.back() + (s % 7 == 3 ? 0 : (37 * s) % 90 + 1));
      c.T = c.cu.back();
      c.H = 1;
      c.K = gate == Gate::vector ? 96 : 32;
      c.V = 24;
      c.dtype = DType::bf16;
      c.gate = gate;
      c.seed = 2360 + i++;
      expect_pass(c);
    }
}

TEST(GlrCudaBwdSplit, OptionalStates) {
  REQUIRE_GPU();
  for (int m = 0; m < 8; ++m)
    for (int64_t T : {0, 70}) {
      Case c;
      c.B = 2;
      c.H = 2;
      c.T = T;
      c.K = 20;
      c.V = 36;
      c.h0 = m & 1;
      c.dhT = m & 2;
      c.dh0 = m & 4;
      c.gate = m % 3 == 0 ? Gate::scalar : Gate::vector;
      c.dtype = m % 2 ? DType::f16 : DType::bf16;
      c.seed = 2400 + m * 2 + (T > 0);
      expect_pass(c);
    }
}

TEST(GlrCudaBwdSplit, GateExtremes) {
  REQUIRE_GPU();
  int i = 0;
  for (auto gv : {Case::GateValues::zero, Case::GateValues::mixed_m20})
    for (Gate gate : {Gate::vector, Gate::scalar})
      for (DType dt : {DType::bf16, DType::f16}) {
        Case c;
        c.B = 1;
        c.H = 2;
        c.T = 200;
        c.K = 64;
        c.V = 33;
        c.gv = gv;
        c.gate = gate;
        c.dtype = dt;
        c.seed = 2500 + i++;
        expect_pass(c);
      }
}

TEST(GlrCudaBwdSplit, WideGridsPickWiderWalkTiles) {
  REQUIRE_GPU();
  // H·N >= 132: the walks take V tiles of 64 (V = 128, 48) or 32 (V = 40) on an H200.
  // K = 128 (two K tiles) with H·N = 68: V tiles of 64 in dstate and the forward's walk.
  const int64_t Hs[] = {34, 34, 17, 17}, Vs[] = {128, 48, 40, 128}, Bs[] = {4, 4, 4, 4}, Ks[] = {64, 64, 64, 128};
  for (int i = 0; i < 4; ++i) {
    Case c;
    c.B = Bs[i];
    c.H = Hs[i];
    c.T = 70;
    c.K = Ks[i];
    c.V = Vs[i];
    c.dtype = i == 1 ? DType::f16 : DType::bf16;
    c.gate = i == 2 ? Gate::scalar : Gate::vector;
    c.seed = 2600 + i;
    expect_pass(c);
  }
}

TEST(GlrCudaBwdSplit, BitwiseDeterministicAcrossRunsAndStreams) {
  REQUIRE_GPU();
  for (Gate gate : {Gate::vector, Gate::scalar}) {
    Case c;
    c.cu = {0, 3, 3, 150, 300};
    c.T = 300;
    c.H = 3;
    c.K = 128;
    c.V = 256;  // 4 V tiles in dq/dk, 16 in the walks' dg seeds
    c.dtype = DType::bf16;
    c.gate = gate;
    c.seed = 2700 + int(gate);
    const Operands o = make_operands(c);
    c.own_stream = false;
    const Outputs a = run_backward(c, o);
    c.own_stream = true;
    const Outputs b = run_backward(c, o);
    const Outputs d = run_backward(c, o);
    EXPECT_TRUE(a == b) << "stream 0 and a created stream differ bitwise";
    EXPECT_TRUE(b == d) << "two runs on created streams differ bitwise";
    expect_pass(c);
  }
}

// The backward from a forward's kept states (FwdParams::saved; glr_torch's autograd path). Where
// the forward walks plainly it must give the recomputing backward's bits; the sizes and refusals
// are checked without a GPU.
TEST(GlrCudaBwdSplit, SavedStatesSizesAndRefusals) {
  glr::cuda::Shape s;
  s.B = 2; s.T = 300; s.H = 3; s.K = 128; s.V = 96; s.dtype = DType::bf16; s.chunk = 64;
  const size_t keep = glr::cuda::saved_states_bytes(s);
  ASSERT_GT(keep, 0u) << "the split kernels keep their states";
  EXPECT_LT(glr::cuda::forward_workspace_bytes(s, true), glr::cuda::forward_workspace_bytes(s));
  EXPECT_LT(glr::cuda::backward_workspace_bytes(s, true), glr::cuda::backward_workspace_bytes(s));
  // The kept states and the backward's own scratch are the recomputing backward's workspace, split.
  EXPECT_EQ(keep + glr::cuda::backward_workspace_bytes(s, true), glr::cuda::backward_workspace_bytes(s));
  for (auto other : {DType::f32, DType::f64}) {  // the FFMA kernels keep nothing
    glr::cuda::Shape t = s;
    t.dtype = other;
    EXPECT_EQ(glr::cuda::saved_states_bytes(t), 0u) << int(other);
    EXPECT_EQ(glr::cuda::backward_workspace_bytes(t, true), glr::cuda::backward_workspace_bytes(t));
  }
  glr::cuda::Shape c32 = s;
  c32.chunk = 32;
  EXPECT_EQ(glr::cuda::saved_states_bytes(c32), 0u);
  glr::cuda::Shape bad = s;
  bad.K = 300;
  EXPECT_EQ(glr::cuda::saved_states_bytes(bad), 0u) << "an unsupported shape keeps nothing";
  // Too little kept memory is refused before anything is launched (no GPU needed).
  char dummy = 0;
  const std::string too_little = "saved states of " + std::to_string(keep) + " bytes needed";
  const glr::cuda::Status fs =
      glr::cuda::forward(glr::cuda::FwdParams{.shape = s, .saved = &dummy, .saved_bytes = keep - 1}, nullptr);
  EXPECT_NE(fs.message.find(too_little), std::string::npos) << fs.message;
  glr::cuda::BwdParams b{.shape = s, .saved = &dummy, .saved_bytes = keep - 1};
  const glr::cuda::Status bs = glr::cuda::backward(b, nullptr);
  EXPECT_NE(bs.message.find(too_little), std::string::npos) << bs.message;
  // Enough kept memory, but the workspace sized for the recomputing backward's split is checked too.
  b.saved_bytes = keep;
  b.workspace = &dummy;
  b.workspace_bytes = glr::cuda::backward_workspace_bytes(s, true) - 1;
  EXPECT_NE(glr::cuda::backward(b, nullptr).message.find("workspace of"), std::string::npos);
}

TEST(GlrCudaBwdSplit, FromSavedStatesGivesTheRecomputedBits) {
  REQUIRE_GPU();
  struct Shape5 {
    int64_t B, T, H, K, V;
    std::vector<int64_t> cu;
  };
  const Shape5 shapes[] = {
      {2, 130, 3, 128, 96, {}},            // a partial last chunk, two K tiles
      {1, 300, 2, 64, 33, {0, 3, 3, 150, 300}},  // varlen, an empty sequence, V off the tiles
      {1, 64, 1, 256, 64, {}},             // four K tiles, one chunk
      {3, 17, 2, 13, 200, {}},             // K below the tile, V over 3 tiles
  };
  int i = 0;
  for (const Shape5& sh : shapes)
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = sh.B; c.T = sh.T; c.H = sh.H; c.K = sh.K; c.V = sh.V; c.cu = sh.cu;
      c.dtype = i % 2 ? DType::f16 : DType::bf16;
      c.gate = gate;
      c.h0 = c.dhT = c.dh0 = i % 3 != 1;  // with and without the optional states
      c.own_stream = i % 2 == 1;
      c.seed = 3100 + i++;
      const Operands o = make_operands(c);
      const Outputs recomputed = run_backward(c, o);
      c.from_saved = true;
      const Outputs kept = run_backward(c, o);
      EXPECT_TRUE(kept == recomputed) << "from saved states and recomputed differ bitwise: " << c.name();
    }
}

TEST(GlrCudaBwdSplit, FromSavedStatesWhereTheForwardSegments) {
  REQUIRE_GPU();
  Case c;  // 520 chunks: the forward walks in segments, the backward reads its states
  c.B = 1; c.H = 1; c.T = 64 * 520 + 13; c.K = 32; c.V = 32;
  c.dtype = DType::bf16;
  c.from_saved = true;
  c.seed = 3200;
  expect_pass(c);
}

// A −Inf gate at step t of a chunk, mid-way through a 16-row block (kcv's nonfinite gate, H200
// session 14: dk and dv at rows [32, 37) of the block came out NaN, where every pair through step
// t decays to exactly 0). Nothing after step t reaches rows j < t, so those rows must equal the
// gradients of the problem cut at t with no dhT: finite, and the same values.
TEST(GlrCudaBwdSplit, NegInfGateMidBlockLeavesEarlierRowsFinite) {
  REQUIRE_GPU();
  for (Gate gate : {Gate::vector, Gate::scalar})
    for (DType dt : {DType::bf16, DType::f16}) {
      const int64_t t = 37;
      Case c;
      c.T = 64;
      c.H = 2;
      c.K = dt == DType::bf16 ? 64 : 100;  // one K tile; two (64 + 36)
      c.V = 48;
      c.gate = gate;
      c.dtype = dt;
      c.seed = 2800 + int(gate) * 2 + int(dt == DType::f16);
      Operands o = make_operands(c);
      const int64_t GW = gate == Gate::vector ? c.K : 1;
      for (int64_t x = 0; x < c.H * GW; ++x) o.g[size_t(t * c.H * GW + x)] = -INFINITY;
      const Outputs full = run_backward(c, o);

      Case cut = c;
      cut.T = t;
      cut.dhT = false;
      Operands oc = o;
      oc.p.T = t;
      auto prefix = [&](std::vector<double>& x, int64_t width) { x.resize(size_t(t * c.H * width)); };
      prefix(oc.q, c.K);
      prefix(oc.k, c.K);
      prefix(oc.g, GW);
      prefix(oc.v, c.V);
      prefix(oc.dO, c.V);
      const Outputs part = run_backward(cut, oc);

      auto same_rows = [&](const char* name, const std::vector<unsigned char>& a, const std::vector<unsigned char>& b,
                           int64_t width) {
        const std::vector<double> x = decode(dt, a), y = decode(dt, b);
        const size_t n = size_t(t * c.H * width);
        ASSERT_GE(x.size(), n);
        ASSERT_EQ(y.size(), n);
        double big = 0;
        for (size_t i = 0; i < n; ++i) big = std::max(big, std::fabs(y[i]));
        for (size_t i = 0; i < n; ++i) {
          ASSERT_TRUE(std::isfinite(x[i])) << name << "[" << i << "] (row " << i / (c.H * width) << " < " << t
                                           << ") is " << x[i] << ", " << c.name();
          EXPECT_LE(std::fabs(x[i] - y[i]), 1e-2 * big) << name << "[" << i << "], " << c.name();
        }
      };
      same_rows("dq", full.dq, part.dq, c.K);
      same_rows("dk", full.dk, part.dk, c.K);
      same_rows("dv", full.dv, part.dv, c.V);
    }
}

TEST(GlrCudaBwd, ToleranceRejectsAWrongAnswer) {
  REQUIRE_GPU();
  // The same kernel judged against the reference of a 0.1%-different scale must fail: the bound is
  // tight enough to see a relative error of 1e-3 in an f32 result.
  Case c;
  c.B = 2;
  c.H = 2;
  c.T = 100;
  c.K = 32;
  c.V = 32;
  c.seed = 1100;
  const Verdict v = check_case(c, 1.001);
  EXPECT_GT(v.bad, 0) << "a 0.1% scale error went unnoticed";
  const Verdict ok = check_case(c, 1.0);
  EXPECT_EQ(ok.bad, 0) << ok.report;
}

}  // namespace
