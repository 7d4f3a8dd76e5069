// glr::cuda::forward (sm90_glr_fwd) against the fp64 reference of glr/reference/reference.hpp, judged with
// the kcv error model's bound built from the reference's own magnitudes (no hand-tuned
// tolerance): |got − r| ≤ c·(u·(depth·mag + amp) + depth·η) + u_out·|r| + η_out, c = 3 (the
// contracts' constant), u = 2^-24 for fp32 accumulation (f64: 2·c and u = 2^-53, the reference
// has an error of the same order). Shapes: K, V through 1..256, T through 0..1000, B and H > 1,
// varlen with empty and length-1 sequences, both gate forms, f32/bf16/f16/f64, h0 and hT null or
// not, the legacy default stream and a created one; bitwise repeatability; the refusals.
// Skips with the reason where there is no CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "glr/cuda.hpp"
#include "glr/half.hpp"
#include "glr/reference/reference.hpp"

namespace {

using glr::cuda::DType;
using glr::cuda::FwdParams;
using glr::cuda::Gate;
using glr::cuda::Shape;
using glr::cuda::Status;

/// Empty when a CUDA device can run kernels, else why not.
std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (n == 0) return "no CUDA device";
  return "";
}

#define SKIP_WITHOUT_GPU()                                                      \
  do {                                                                          \
    const std::string why_ = no_gpu_reason();                                   \
    if (!why_.empty()) GTEST_SKIP() << "glr CUDA forward needs a GPU: " << why_; \
  } while (0)

#define CUDA_OK(expr)                                                                               \
  do {                                                                                              \
    const cudaError_t e_ = (expr);                                                                  \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorName(e_) << " " << cudaGetErrorString(e_); \
  } while (0)

size_t io_bytes(DType d) { return d == DType::f64 ? 8 : d == DType::f32 ? 4 : 2; }
size_t state_bytes(DType d) { return d == DType::f64 ? 8 : 4; }
const char* name(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f64: return "f64";
  }
  return "?";
}

/// Round x to the storage type of `bytes`/`d` and write it; return the stored value, widened.
double store(void* dst, size_t i, double x, DType d, bool state) {
  if (state || d == DType::f64 || d == DType::f32) {
    if (d == DType::f64) {
      static_cast<double*>(dst)[i] = x;
      return x;
    }
    const float f = float(x);
    static_cast<float*>(dst)[i] = f;
    return f;
  }
  const uint16_t h = d == DType::bf16 ? glr::float_to_bf16(float(x)) : glr::float_to_f16(float(x));
  static_cast<uint16_t*>(dst)[i] = h;
  return d == DType::bf16 ? glr::bf16_to_float(h) : glr::f16_to_float(h);
}
double load(const void* src, size_t i, DType d, bool state) {
  if (d == DType::f64) return static_cast<const double*>(src)[i];
  if (state || d == DType::f32) return static_cast<const float*>(src)[i];
  const uint16_t h = static_cast<const uint16_t*>(src)[i];
  return d == DType::bf16 ? glr::bf16_to_float(h) : glr::f16_to_float(h);
}

double unit_roundoff(DType d, bool state) {
  if (d == DType::f64) return std::ldexp(1.0, -53);
  if (state || d == DType::f32) return std::ldexp(1.0, -24);
  return d == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

struct Case {
  int64_t B = 2, T = 65, H = 2, K = 32, V = 32;
  Gate gate = Gate::vector;
  DType dtype = DType::f32;
  std::vector<int64_t> cu;  // varlen when non-empty (B must be 1, T = cu.back())
  bool h0 = true, hT = true;
  bool own_stream = false;
  int chunk = 64;
  uint64_t seed = 1;
  int gates = 0;                       // 0: log sigmoid(2 + 1.5·N(0,1)); 1: the diagonal-form mix (make_inputs)
  int64_t minf_t = -1, minf_k = -1;    // a −Inf gate at (b 0, t, h 0, k) when minf_t >= 0 (B = H = 1)
  int64_t vbad_t = -1, vbad_v = -1;    // v[b 0, t, h 0, vv] = vbad when vbad_t >= 0 (B = H = 1)
  double vbad = INFINITY;

  std::string str() const {
    std::ostringstream s;
    s << "B=" << B << " T=" << T << " H=" << H << " K=" << K << " V=" << V
      << (gate == Gate::scalar ? " scalar" : " vector") << " " << name(dtype) << " chunk=" << chunk
      << (h0 ? "" : " h0=null") << (hT ? "" : " hT=null") << (own_stream ? " stream=created" : " stream=0")
      << (gates ? " gates=mix" : "");
    if (minf_t >= 0) s << " g[t=" << minf_t << ", k=" << minf_k << "]=-Inf";
    if (vbad_t >= 0) s << " v[t=" << vbad_t << ", v=" << vbad_v << "]=" << vbad;
    if (!cu.empty()) {
      s << " cu_seqlens=[";
      for (size_t i = 0; i < cu.size(); ++i) s << (i ? "," : "") << cu[i];
      s << "]";
    }
    return s.str();
  }
};

/// Host operands in their stored form plus their widened values, and the device run's outputs.
struct FwdRun {
  glr::Problem p;
  std::vector<int64_t> cu;
  std::vector<unsigned char> q, k, v, g, h0;      // stored bytes
  std::vector<double> qd, kd, vd, gd, h0d;        // the same values, widened
  double scale = 1;
  std::vector<unsigned char> o, hT;               // what the device wrote
};

/// Draws the operands of c: q, k, v, h0 ~ N(0,1), g = log sigmoid(2 + 1.5·N(0,1)) (docs/glr.md).
FwdRun make_inputs(const Case& c) {
  FwdRun r;
  r.cu = c.cu;
  glr::Problem& p = r.p;
  p.B = c.B;
  p.T = c.T;
  p.H = c.H;
  p.K = c.K;
  p.V = c.V;
  p.gate = c.gate == Gate::scalar ? glr::GateForm::scalar : glr::GateForm::vector;
  if (!r.cu.empty()) {
    p.cu_seqlens = r.cu.data();
    p.N = int64_t(r.cu.size()) - 1;
  }
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> N01;
  auto fill = [&](std::vector<unsigned char>& bytes, std::vector<double>& wide, int64_t n, bool state, auto draw) {
    bytes.assign(size_t(n) * (state ? state_bytes(c.dtype) : io_bytes(c.dtype)), 0);
    wide.resize(n);
    for (int64_t i = 0; i < n; ++i) wide[i] = store(bytes.data(), i, draw(), c.dtype, state);
  };
  auto normal = [&] { return N01(rng); };
  int64_t gi = 0;  // the element of g drawn next ([B, T, H, K] or [B, T, H])
  auto gate = [&] {
    const int64_t n = gi++;
    const double normal_gate = -std::log1p(std::exp(-(2 + 1.5 * N01(rng))));
    if (c.gates == 0 || c.gate == Gate::scalar) return normal_gate;
    // The split prep kernel factors a diagonal 16-block's decay per column where |b − b_ρ| <= 32
    // (diag_decay.hpp) and keeps the per-pair form elsewhere: columns of each kind side by side.
    const int64_t kk = n % c.K, t = (n / (c.H * c.K)) % c.T;
    switch (kk % 4) {
      case 0: return -20.0;                                   // every block per pair
      case 1: return normal_gate;                             // factored
      case 2: return -1.3;                                    // factored, |b − b_ρ| up to 30
      default: return t % 64 == 20 ? -30.0 : normal_gate;     // block 1 of a chunk per pair, the others factored
    }
  };
  fill(r.q, r.qd, p.qk_elems(), false, normal);
  fill(r.k, r.kd, p.qk_elems(), false, normal);
  fill(r.v, r.vd, p.v_elems(), false, normal);
  fill(r.g, r.gd, p.g_elems(), true, gate);
  if (c.minf_t >= 0) {
    const size_t at = size_t(c.minf_t * c.K + c.minf_k);
    r.gd[at] = store(r.g.data(), at, -INFINITY, c.dtype, true);
  }
  if (c.vbad_t >= 0) {
    const size_t at = size_t(c.vbad_t * c.V + c.vbad_v);
    r.vd[at] = store(r.v.data(), at, c.vbad, c.dtype, false);
  }
  fill(r.h0, r.h0d, p.state_elems(), true, normal);
  r.scale = c.dtype == DType::f64 ? 1.0 / std::sqrt(double(c.K)) : double(float(1.0 / std::sqrt(double(c.K))));
  return r;
}

struct DeviceBuf {
  void* p = nullptr;
  ~DeviceBuf() { if (p) cudaFree(p); }
};

/// Runs glr::cuda::forward on c's inputs (outputs pre-filled with 0xFF: NaN in every float type)
/// and copies o and hT back into r. Fails the test on a CUDA error or a refusal.
void run_device(const Case& c, FwdRun& r) {
  const glr::Problem& p = r.p;
  DeviceBuf q, k, v, g, h0, o, hT, cu;
  auto up = [](DeviceBuf& d, const void* src, size_t n) {
    ASSERT_EQ(cudaMalloc(&d.p, std::max<size_t>(n, 1)), cudaSuccess);
    if (n) {
      ASSERT_EQ(cudaMemcpy(d.p, src, n, cudaMemcpyHostToDevice), cudaSuccess);
    }
  };
  up(q, r.q.data(), r.q.size());
  up(k, r.k.data(), r.k.size());
  up(v, r.v.data(), r.v.size());
  up(g, r.g.data(), r.g.size());
  up(h0, r.h0.data(), r.h0.size());
  if (!r.cu.empty()) up(cu, r.cu.data(), r.cu.size() * sizeof(int64_t));
  const size_t o_bytes = size_t(p.v_elems()) * io_bytes(c.dtype);
  const size_t hT_bytes = size_t(p.state_elems()) * state_bytes(c.dtype);
  CUDA_OK(cudaMalloc(&o.p, std::max<size_t>(o_bytes, 1)));
  CUDA_OK(cudaMalloc(&hT.p, std::max<size_t>(hT_bytes, 1)));
  CUDA_OK(cudaMemset(o.p, 0xFF, std::max<size_t>(o_bytes, 1)));
  CUDA_OK(cudaMemset(hT.p, 0xFF, std::max<size_t>(hT_bytes, 1)));

  FwdParams fp;
  Shape& s = fp.shape;
  s.B = c.B; s.T = c.T; s.H = c.H; s.K = c.K; s.V = c.V;
  s.gate = c.gate;
  s.dtype = c.dtype;
  s.chunk = c.chunk;
  if (!r.cu.empty()) {
    s.cu_seqlens = static_cast<const int64_t*>(cu.p);
    s.N = p.N;
  }
  fp.q = q.p; fp.k = k.p; fp.v = v.p; fp.g = g.p;
  fp.h0 = c.h0 ? h0.p : nullptr;
  fp.o = o.p;
  fp.hT = c.hT ? hT.p : nullptr;
  fp.scale = r.scale;
  DeviceBuf ws;
  fp.workspace_bytes = glr::cuda::forward_workspace_bytes(s);
  if (fp.workspace_bytes) {
    CUDA_OK(cudaMalloc(&ws.p, fp.workspace_bytes));
    fp.workspace = ws.p;
  }
  // NOTES: the uploads (a pageable cudaMemcpy may return before its DMA lands) and the 0xFF
  // prefills (cudaMemset is asynchronous) run on the legacy stream, which a non-blocking stream
  // does not wait for: finish them before the call.
  CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t stream = nullptr;
  if (c.own_stream) CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Status st = glr::cuda::forward(fp, stream);
  ASSERT_TRUE(st.ok()) << c.str() << ": " << st.message;
  CUDA_OK(cudaStreamSynchronize(stream));
  if (stream) CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaGetLastError());
  r.o.resize(o_bytes);
  r.hT.resize(hT_bytes);
  if (o_bytes) CUDA_OK(cudaMemcpy(r.o.data(), o.p, o_bytes, cudaMemcpyDeviceToHost));
  if (hT_bytes) CUDA_OK(cudaMemcpy(r.hT.data(), hT.p, hT_bytes, cudaMemcpyDeviceToHost));
}

/// The verdict on one output against the error model.
struct Judgement {
  int64_t checked = 0, bad = 0;
  double worst = 0;       // largest err/bound
  double norm = 0;        // Σ |got|: the output is not vacuously zero
  std::string first_bad;  // capped diagnostics
};

/// κ of the bf16/f16 glr contracts' operand-rounding term (glr/reference/reference.hpp).
constexpr double kKappa = glr::kOperandRoundingKappa;

void judge(const char* what, const std::vector<unsigned char>& got_bytes, const glr::Estimate& ref, DType d,
           bool state, Judgement& j) {
  const double c = d == DType::f64 ? 6.0 : 3.0;
  const double u = d == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double eta = d == DType::f64 ? std::ldexp(1.0, -1075) : std::ldexp(1.0, -150);
  const double u_out = unit_roundoff(d, state);
  const double eta_out = d == DType::f64 ? std::ldexp(1.0, -1075) : state || d == DType::f32 ? std::ldexp(1.0, -150)
                         : d == DType::bf16 ? std::ldexp(1.0, -134) : std::ldexp(1.0, -25);
  for (size_t i = 0; i < ref.value.size(); ++i) {
    const double got = load(got_bytes.data(), i, d, state), r = ref.value[i];
    double bound = c * (u * (ref.depth[i] * ref.mag[i] + ref.amp[i]) + ref.depth[i] * eta) + u_out * std::abs(r) + eta_out;
    if (d == DType::bf16 || d == DType::f16) {  // tensor-core operands rounded once (the contracts' κ·u_in·op term)
      const double u_in = d == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
      const double eta_in = u_in * (d == DType::f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126));
      bound += kKappa * (u_in * ref.op[i] + eta_in * ref.opu[i]);
      if (ref.ovf[i] >= (d == DType::f16 ? 65504.0 : 3.3895313892515355e38) * (1 - std::ldexp(1.0, -8))) continue;
    }
    const double err = std::abs(got - r);
    ++j.checked;
    j.norm += std::isfinite(got) ? std::abs(got) : 0;
    const bool ok = std::isfinite(got) && err <= bound;
    if (std::isfinite(got) && bound > 0) j.worst = std::max(j.worst, err / bound);
    if (!ok) {
      if (j.bad < 5) {
        std::ostringstream s;
        s << "\n  " << what << "[" << i << "]: got " << got << ", expected " << r << ", |err| " << err << " > bound "
          << bound;
        j.first_bad += s.str();
      }
      ++j.bad;
    }
  }
}

/// Runs c on the device and judges o (and hT when asked for) against the fp64 reference.
void check_case(const Case& c) {
  SCOPED_TRACE(c.str());
  FwdRun r = make_inputs(c);
  ASSERT_NO_FATAL_FAILURE(run_device(c, r));
  glr::FwdInputs in;
  in.q = r.qd.data();
  in.k = r.kd.data();
  in.v = r.vd.data();
  in.g = r.gd.data();
  in.h0 = c.h0 ? r.h0d.data() : nullptr;
  in.scale = r.scale;
  const glr::FwdResult ref = glr::reference_fwd(r.p, in);
  Judgement j;
  if (c.minf_t >= 0) {  // rows before the −Inf gate only (B = H = 1): the later ones may hold NaN
    const size_t n = size_t(c.minf_t * c.V);
    glr::Estimate head = ref.o;
    for (auto* v : {&head.value, &head.mag, &head.depth, &head.amp, &head.under, &head.op, &head.opu, &head.ovf})
      v->resize(n);
    head.classes.resize(n);
    const std::vector<unsigned char> got(r.o.begin(), r.o.begin() + n * io_bytes(c.dtype));
    judge("o", got, head, c.dtype, false, j);
  } else if (c.vbad_t >= 0) {  // B = H = 1: every row before t, and every column but vv (o_i = q_i S_i)
    glr::Estimate keep;
    std::vector<unsigned char> got;
    const size_t es = io_bytes(c.dtype);
    for (size_t i = 0; i < ref.o.value.size(); ++i) {
      if (int64_t(i) / c.V >= c.vbad_t && int64_t(i) % c.V == c.vbad_v) continue;
      for (auto [to, from] : {std::pair{&keep.value, &ref.o.value}, {&keep.mag, &ref.o.mag},
                              {&keep.depth, &ref.o.depth}, {&keep.amp, &ref.o.amp}, {&keep.under, &ref.o.under},
                              {&keep.op, &ref.o.op}, {&keep.opu, &ref.o.opu}, {&keep.ovf, &ref.o.ovf}})
        to->push_back((*from)[i]);
      keep.classes.push_back(ref.o.classes[i]);
      got.insert(got.end(), r.o.begin() + i * es, r.o.begin() + (i + 1) * es);
    }
    judge("o (kept)", got, keep, c.dtype, false, j);
  } else {
    judge("o", r.o, ref.o, c.dtype, false, j);
    if (c.hT) judge("hT", r.hT, ref.hT, c.dtype, true, j);
  }
  EXPECT_EQ(j.bad, 0) << j.bad << " of " << j.checked << " elements outside the bound (worst err/bound " << j.worst
                      << "):" << j.first_bad;
  EXPECT_LE(j.worst, 1.0);
  if (r.p.v_elems() > 0 || (c.hT && c.h0)) {
    EXPECT_GT(j.norm, 0) << "all outputs zero: the check would be vacuous";
  }
}

TEST(GlrCudaFwd, EveryKAndVAtAPartialChunk) {
  SKIP_WITHOUT_GPU();
  const int64_t sizes[] = {1, 3, 13, 32, 64, 127, 128, 256};
  uint64_t seed = 100;
  for (int64_t K : sizes)
    for (int64_t V : sizes)
      for (Gate gate : {Gate::vector, Gate::scalar}) {
        Case c;
        c.B = 2; c.H = 2; c.T = 65; c.K = K; c.V = V; c.gate = gate; c.seed = ++seed;
        check_case(c);
      }
}

TEST(GlrCudaFwd, EveryLengthAndBothGates) {
  SKIP_WITHOUT_GPU();
  const int64_t lengths[] = {0, 1, 63, 64, 65, 200, 1000};
  const std::pair<int64_t, int64_t> kv[] = {{32, 32}, {13, 127}, {256, 256}};
  uint64_t seed = 200;
  for (int64_t T : lengths)
    for (auto [K, V] : kv)
      for (Gate gate : {Gate::vector, Gate::scalar}) {
        Case c;
        c.T = T; c.K = K; c.V = V; c.gate = gate; c.seed = ++seed;
        c.B = K == 256 ? 1 : 2;
        c.H = K == 256 ? 2 : 3;
        check_case(c);
      }
}

TEST(GlrCudaFwd, EveryDtypeAndGate) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 300;
  for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64})
    for (Gate gate : {Gate::vector, Gate::scalar})
      for (auto [K, V] : {std::pair<int64_t, int64_t>{64, 64}, {256, 13}, {3, 256}}) {
        Case c;
        c.T = 200; c.K = K; c.V = V; c.gate = gate; c.dtype = d; c.seed = ++seed;
        check_case(c);
      }
}

TEST(GlrCudaFwd, VarlenWithEmptyAndLengthOneSequences) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 400;
  const std::vector<std::vector<int64_t>> cuts = {
      {0, 0, 1, 65, 65, 200, 330},  // empty first, length 1, a whole chunk + 1, empty, ...
      {0, 1000},                    // one long sequence
      {0, 64, 128, 129, 129},       // chunk-aligned cuts, an empty last sequence
      {0, 0},                       // T = 0, one empty sequence: hT = h0
  };
  for (const auto& cu : cuts)
    for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64})
      for (Gate gate : {Gate::vector, Gate::scalar}) {
        Case c;
        c.B = 1; c.H = 2; c.K = 13; c.V = 40; c.cu = cu; c.T = cu.back(); c.gate = gate; c.dtype = d; c.seed = ++seed;
        check_case(c);
      }
}

// Many sequences: the split's per-chunk kernels launch a CTA per slot and find its sequence on the device
// (fwd_split::chunk_cta, 32 candidates a round): 70 sequences take two rounds, 1100 three. Lengths 0..90,
// empty ones and chunk-crossing ones among them.
TEST(GlrCudaFwd, VarlenWithManySequences) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 450;
  for (int64_t n : {70, 1100})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.cu = {0};
      for (int64_t s = 0; s < n; ++s) c.cu.push_back(c.cu.back() + (s % 7 == 3 ? 0 : (37 * s) % 90 + 1));
      c.B = 1; c.H = 1; c.K = 32; c.V = 24; c.T = c.cu.back(); c.gate = gate; c.dtype = DType::bf16; c.seed = ++seed;
      check_case(c);
    }
}

TEST(GlrCudaFwd, NullStatesStreamsAndChunks) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (bool h0 : {true, false})
    for (bool hT : {true, false})
      for (bool own : {false, true})
        for (int chunk : {16, 32, 64}) {
          Case c;
          c.T = 150; c.K = 40; c.V = 70; c.h0 = h0; c.hT = hT; c.own_stream = own; c.chunk = chunk;
          c.gate = (seed & 1) ? Gate::scalar : Gate::vector;
          c.seed = ++seed;
          check_case(c);
          Case v = c;  // the same with varlen
          v.B = 1; v.cu = {0, 3, 3, 150}; v.T = 150;
          check_case(v);
        }
}

TEST(GlrCudaFwd, EmptySequenceGivesH0Exactly) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::f32, DType::f64})
    for (bool h0 : {true, false}) {
      Case c;
      c.T = 0; c.K = 5; c.V = 44; c.dtype = d; c.h0 = h0;
      FwdRun r = make_inputs(c);
      ASSERT_NO_FATAL_FAILURE(run_device(c, r));
      std::vector<unsigned char> want = h0 ? r.h0 : std::vector<unsigned char>(r.h0.size(), 0);
      EXPECT_TRUE(r.hT == want) << c.str() << ": hT is not h0 bit for bit";
    }
}

TEST(GlrCudaFwd, TwoRunsAreBitwiseEqual) {
  SKIP_WITHOUT_GPU();
  for (DType d : {DType::f32, DType::bf16})
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c;
      c.B = 3; c.T = 777; c.H = 2; c.K = 128; c.V = 100; c.gate = gate; c.dtype = d; c.seed = 77;
      FwdRun a = make_inputs(c), b = make_inputs(c);
      ASSERT_NO_FATAL_FAILURE(run_device(c, a));
      c.own_stream = true;  // the other stream, other buffers
      ASSERT_NO_FATAL_FAILURE(run_device(c, b));
      EXPECT_TRUE(a.o == b.o) << c.str() << ": o differs between two runs";
      EXPECT_TRUE(a.hT == b.hT) << c.str() << ": hT differs between two runs";
    }
}

TEST(GlrCudaFwd, GateExtremesTakeBothDiagonalForms) {
  // Columns whose diagonal blocks the split prep kernel factors and columns it keeps per pair, side
  // by side in one chunk, at K in one, two and eight slices of 32 (a partial last one at 37).
  SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (DType d : {DType::bf16, DType::f16})
    for (auto [K, V] : {std::pair<int64_t, int64_t>{128, 64}, {37, 40}, {256, 32}}) {
      Case c;
      c.B = 2; c.T = 200; c.H = 2; c.K = K; c.V = V; c.dtype = d; c.gates = 1; c.seed = ++seed;
      check_case(c);
    }
}

TEST(GlrCudaFwd, MinusInfGateLeavesEarlierRowsFinite) {
  // A −Inf gate at step t: the chunk-local decays past it may hold −Inf − (−Inf) (the nonfinite
  // gate accepts NaN there), but every row before t is finite and within the bound; t mid-block,
  // at a block's first row, in the last block, and at step 1.
  SKIP_WITHOUT_GPU();
  uint64_t seed = 700;
  for (DType d : {DType::bf16, DType::f16})
    for (int64_t t : {23, 16, 50, 1}) {
      Case c;
      c.B = 1; c.T = 64; c.H = 1; c.K = 40; c.V = 32; c.dtype = d; c.seed = ++seed; c.minf_t = t; c.minf_k = 5;
      check_case(c);
    }
}

TEST(GlrCudaFwd, NonFiniteVLeavesEarlierRowsAndOtherColumnsFinite) {
  // A NaN or ±Inf v at (t, vv) reaches only column vv of rows t and later. An out kernel that
  // multiplies A's selected zeros (j > i) by v (a whole-chunk MMA: the wgmma out kernel,
  // glr_fwd_out_wgmma.cuh) would write 0·Inf = NaN into the rows before t of t's chunk; that kernel
  // takes the WMMA/FFMA path for such a tile. t mid-chunk (chunk 1), V tiles of 128 (two warpgroups)
  // and 64 (K steps split), partial chunk and V tile.
  SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (DType d : {DType::bf16, DType::f16})
    for (auto [K, V] : {std::pair<int64_t, int64_t>{128, 100}, {64, 64}, {40, 72}})
      for (double bad : {double(INFINITY), -double(INFINITY), double(NAN)}) {
        Case c;
        c.B = 1; c.T = 150; c.H = 1; c.K = K; c.V = V; c.dtype = d; c.seed = ++seed;
        c.vbad_t = 64 + 37; c.vbad_v = V - 3; c.vbad = bad;
        check_case(c);
      }
}

TEST(GlrCudaFwd, TheBenchmarksVTiles) {
  // The split's walk and out kernels take V tiles of 64 or 32 only when their grid fills the device
  // (fwd_split::tiles): every shape above runs tiles of 16. On an H200 (132 SMs) these run 64
  // (B·H·ceil(K/64) = 136 walkers, V = 100: a partial second tile) and 32 (68 walkers), as the
  // benchmark's shapes do; T = 130 ends in a partial chunk.
  SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (DType d : {DType::bf16, DType::f16})
    for (auto [B, V] : {std::pair<int64_t, int64_t>{4, 100}, {2, 64}}) {
      Case c;
      c.B = B; c.T = 130; c.H = 17; c.K = 128; c.V = V; c.dtype = d; c.seed = ++seed;
      check_case(c);
    }
}

TEST(GlrCudaFwd, SegmentedWalk) {
  // Long sequences with few heads walk in segments (fwd_split::walk_segments; docs/glr.md, "The
  // segmented walk"): 2a walks each segment from 0, 2b folds h0 through the earlier segments' (P, U)
  // and walks again with the stores; only chains of fwd_split::kMinSegWalk = 512 chunks or more
  // (shorter ones walk plainly: the last check below), one head and narrow V: the fp64 reference
  // of a long sequence is the test's cost. A partial last chunk, K in one, two and four row tiles, a
  // partial V tile, h0 null, the diagonal-form gate mix (strong gates: products that underflow),
  // both gates and dtypes; twice each, bitwise equal.
  struct Seg { int64_t B, T, H, K, V; Gate gate; DType d; bool h0; int gates; const char* segs; };
  const Seg cases[] = {
      {1, 64 * 520 + 13, 1, 64, 40, Gate::vector, DType::bf16, true, 0, "31"},
      {2, 64 * 512, 1, 128, 24, Gate::scalar, DType::f16, false, 0, "32"},
      {1, 32800, 1, 256, 16, Gate::vector, DType::bf16, true, 1, "31"},
      {1, 64 * 600, 1, 128, 48, Gate::vector, DType::f16, true, 1, "36"},
  };
  for (const Seg& x : cases) {  // the plan, checked without a GPU
    glr::cuda::Shape s;
    s.B = x.B; s.T = x.T; s.H = x.H; s.K = x.K; s.V = x.V; s.dtype = x.d; s.gate = x.gate; s.chunk = 64;
    EXPECT_EQ(glr::cuda::forward_kernels(s), std::string("sm90 split forward (tensor cores), walk in ") + x.segs +
                                                 " segments") << "T=" << x.T << " K=" << x.K << " V=" << x.V;
  }
  glr::cuda::Shape s;  // 511 chunks: one walk, however few its CTAs
  s.B = 1; s.T = 64 * 511; s.H = 1; s.K = 64; s.V = 64; s.dtype = DType::bf16; s.gate = Gate::vector; s.chunk = 64;
  EXPECT_EQ(glr::cuda::forward_kernels(s), std::string("sm90 split forward (tensor cores)"));
  SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (const Seg& x : cases) {
    Case c;
    c.B = x.B; c.T = x.T; c.H = x.H; c.K = x.K; c.V = x.V; c.gate = x.gate; c.dtype = x.d; c.h0 = x.h0;
    c.gates = x.gates; c.seed = ++seed;
    check_case(c);
    FwdRun a = make_inputs(c), b = make_inputs(c);
    ASSERT_NO_FATAL_FAILURE(run_device(c, a));
    ASSERT_NO_FATAL_FAILURE(run_device(c, b));
    EXPECT_TRUE(a.o == b.o && a.hT == b.hT) << c.str() << ": two runs differ";
  }
}

TEST(GlrCudaFwd, RefusesWhatItDoesNotSupport) {
  // No GPU needed: every refusal happens before any launch.
  auto refused = [](Shape s, const char* what) {
    FwdParams p;
    p.shape = s;
    int dummy = 0;
    p.q = p.k = p.v = p.g = &dummy;
    p.o = &dummy;
    const Status st = glr::cuda::forward(p, nullptr);
    EXPECT_FALSE(st.ok()) << what << " was accepted";
    EXPECT_FALSE(st.message.empty()) << what;
    EXPECT_NE(st.message.find("glr"), std::string::npos) << what << ": " << st.message;
  };
  Shape ok;
  ok.T = 10; ok.K = 8; ok.V = 8;
  EXPECT_TRUE(glr::cuda::unsupported(ok).empty());
  Shape s = ok; s.K = 257; refused(s, "K=257");
  s = ok; s.V = 257; refused(s, "V=257");
  s = ok; s.K = 0; refused(s, "K=0");
  s = ok; s.V = 0; refused(s, "V=0");
  s = ok; s.B = 0; refused(s, "B=0");
  s = ok; s.H = 0; refused(s, "H=0");
  s = ok; s.T = -1; refused(s, "T=-1");
  s = ok; s.chunk = 48; refused(s, "chunk 48");
  s = ok; s.chunk = 128; refused(s, "chunk 128");
  s = ok; s.B = 2; s.cu_seqlens = reinterpret_cast<const int64_t*>(&s); s.N = 1; refused(s, "varlen with B=2");
  s = ok; s.cu_seqlens = reinterpret_cast<const int64_t*>(&s); s.N = 0; refused(s, "varlen with N=0");
  s = ok; s.dtype = static_cast<DType>(7); refused(s, "dtype 7");
  s = ok; s.gate = static_cast<Gate>(5); refused(s, "gate 5");
  // null operands with steps to run
  FwdParams p;
  p.shape = ok;
  EXPECT_FALSE(glr::cuda::forward(p, nullptr).ok()) << "null q, k, v, g, o accepted";
}

}  // namespace
