// Host simulation of glr's split backward (bench/glr/split_sim/run.sh) (the real kernels and launchers of glr_bwd_split.cuh and
// glr_fwd_split.cuh, CUDA constructs mocked by sim.hpp) against glr::cpu::bwd_slice<double>.
#include "sim.hpp"
#include "glr/cuda/sm90/glr_bwd_split.cuh"
#include "glr/cpu_chunked.hpp"
#include <random>
#include <string>
namespace gc = glr::cuda;
using glr::cuda::DType;
using glr::cuda::Gate;

struct Case { int64_t B = 1, T = 64, H = 1, K = 32, V = 32; Gate gate = Gate::vector; bool f16 = false; std::vector<int64_t> cu; bool h0 = true, dhT = true; int sms = 132; unsigned seed = 1; int gv = 0;
              int64_t neginf = -1;  // neginf >= 0: g = −Inf at that step (B = 1); rows before it judged against the cut problem
              bool far = false;     // far: q of every 7th row and k of every 11th times 2^-100
              int huge = 0; };  // huge 1: k of every 9th row times 2^100; 2: q of every 5th row (bf16)

template <class E> E rnd(float x) { if constexpr (std::is_same_v<E, __nv_bfloat16>) return __float2bfloat16_rn(x); else return __float2half_rn(x); }
template <class E> double wide(E x) { if constexpr (std::is_same_v<E, __nv_bfloat16>) return __bfloat162float(x); else return __half2float(x); }

template <class E> double run(const Case& c) {
  std::mt19937 rng(c.seed); std::normal_distribution<float> nd;
  const bool varlen = !c.cu.empty();
  const int64_t B = varlen ? 1 : c.B, T = c.T, H = c.H, K = c.K, V = c.V, N = varlen ? int64_t(c.cu.size()) - 1 : B;
  const int64_t GW = c.gate == Gate::vector ? K : 1, BT = B * T;
  std::vector<E> q(BT * H * K), k(BT * H * K), v(BT * H * V), dO(BT * H * V);
  for (auto* x : {&q, &k}) for (auto& e : *x) e = rnd<E>(nd(rng));
  for (auto* x : {&v, &dO}) for (auto& e : *x) e = rnd<E>(nd(rng));
  if (c.far)  // tiny q and k rows: the factored diagonal's x = q·2^(b_i − b_ρ) reaches fp32's subnormals
    for (int64_t t = 0; t < BT; ++t)
      for (int64_t e = 0; e < H * K; ++e) {
        if (t % 7 == 3) q[t * H * K + e] = rnd<E>(wide(q[t * H * K + e]) * 0x1p-100f);
        if (t % 11 == 5) k[t * H * K + e] = rnd<E>(wide(k[t * H * K + e]) * 0x1p-100f);
      }
  // huge: large k (or q) rows, every term and output finite in fp32, where a factored diagonal's
  // y = k·2^(b_ρ − b_j) (or dk's 2^(b_ρ − b_j)·Σ_i DV_ij x_i) with a span near 32 would pass fp32's range
  for (int64_t t = 0; t < BT && c.huge; ++t)
    for (int64_t e = 0; e < H * K; ++e) {
      if (c.huge == 1 && t % 9 == 4) k[t * H * K + e] = rnd<E>(wide(k[t * H * K + e]) * 0x1p110f);
      if (c.huge == 2 && t % 5 == 2) q[t * H * K + e] = rnd<E>(wide(q[t * H * K + e]) * 0x1p100f);
    }
  std::vector<float> g(BT * H * GW), h0(N * H * K * V), dhT(N * H * K * V);
  // gv 1: −20 or −0.01 a step (most 16-row blocks far wider than diag_decay::kSpan); gv 2: about −1.3 a
  // step (a block spans 26–33 log2 units: its columns on both sides of the factored form's span)
  for (auto& e : g)
    e = c.gv == 1 ? (nd(rng) > 0 ? -20.f : -0.01f)
        : c.gv == 2 ? -1.3f - 0.08f * std::fabs(nd(rng))
                    : -std::log1p(std::exp(-(2 + 1.5f * nd(rng))));
  for (auto& e : h0) e = nd(rng);
  for (auto& e : dhT) e = nd(rng);
  if (c.neginf >= 0)
    for (int64_t x = 0; x < H * GW; ++x) g[c.neginf * H * GW + x] = -INFINITY;
  const double scale = 1 / std::sqrt(double(K));
  gc::BwdParams p;
  p.shape.B = B; p.shape.T = T; p.shape.H = H; p.shape.K = K; p.shape.V = V; p.shape.gate = c.gate;
  p.shape.dtype = c.f16 ? DType::f16 : DType::bf16; p.shape.chunk = 64;
  if (varlen) { p.shape.cu_seqlens = c.cu.data(); p.shape.N = N; }
  if (!gc::sm90::bwd_split::takes(p.shape)) { std::printf("not taken\n"); std::abort(); }
  std::vector<E> dq(BT * H * K, rnd<E>(NAN)), dk(BT * H * K, rnd<E>(NAN)), dv(BT * H * V, rnd<E>(NAN));
  std::vector<float> dg(BT * H * GW, NAN), dh0(N * H * K * V, NAN);
  const size_t wsb = gc::sm90::bwd_split::workspace_bytes(p.shape);
  std::vector<unsigned char> ws(wsb, 0xFF);  // NaN everywhere: a slot read before it is written shows
  p.q = q.data(); p.k = k.data(); p.v = v.data(); p.g = g.data(); p.h0 = c.h0 ? h0.data() : nullptr; p.dO = dO.data();
  p.dhT = c.dhT ? dhT.data() : nullptr; p.dq = dq.data(); p.dk = dk.data(); p.dv = dv.data(); p.dg = dg.data(); p.dh0 = dh0.data();
  p.scale = scale; p.workspace = ws.data(); p.workspace_bytes = wsb;
  sim::sms = c.sms;
  const gc::Status st = gc::sm90::bwd_split::launch<E>(p, nullptr);
  if (!st.ok()) { std::printf("launch: %s\n", st.message.c_str()); std::abort(); }
  // reference per (sequence, head)
  double worst = 0;
  double err[5] = {0, 0, 0, 0, 0}, mag[5] = {0, 0, 0, 0, 0};
  bool nonfinite = false;
  auto acc = [&](int o, double x, double r) { if (!std::isfinite(x)) nonfinite = true; err[o] = std::max(err[o], std::fabs(x - r)); mag[o] = std::max(mag[o], std::fabs(r)); };
  for (int64_t n = 0; n < N; ++n) for (int64_t h = 0; h < H; ++h) {
    const int64_t bos = varlen ? c.cu[n] : n * T, L = c.neginf >= 0 ? c.neginf : (varlen ? c.cu[n + 1] : n * T + T) - bos;
    const bool cut = c.neginf >= 0;  // nothing after the −Inf step reaches earlier rows: the problem cut there, no dhT
    std::vector<double> sq(L * K), sk(L * K), sv(L * V), sg(L * GW), sd(L * V), sh0(K * V), sdh(K * V);
    for (int64_t t = 0; t < L; ++t) {
      for (int64_t x = 0; x < K; ++x) { sq[t * K + x] = wide(q[((bos + t) * H + h) * K + x]); sk[t * K + x] = wide(k[((bos + t) * H + h) * K + x]); }
      for (int64_t y = 0; y < V; ++y) { sv[t * V + y] = wide(v[((bos + t) * H + h) * V + y]); sd[t * V + y] = wide(dO[((bos + t) * H + h) * V + y]); }
      for (int64_t x = 0; x < GW; ++x) sg[t * GW + x] = g[((bos + t) * H + h) * GW + x];
    }
    for (int64_t e = 0; e < K * V; ++e) { sh0[e] = c.h0 ? h0[(n * H + h) * K * V + e] : 0; sdh[e] = c.dhT && !cut ? dhT[(n * H + h) * K * V + e] : 0; }
    glr::cpu::Slice<double> s{L, K, V, GW, sq.data(), sk.data(), sv.data(), sg.data(), sh0.data(), scale};
    glr::cpu::Workspace<double> w;
    std::vector<double> rq(L * K), rk(L * K), rv(L * V), rg(L * GW), rh(K * V);
    glr::cpu::bwd_slice<double>(s, sd.data(), sdh.data(), rq.data(), rk.data(), rv.data(), rg.data(), rh.data(), w);
    for (int64_t t = 0; t < L; ++t) {
      for (int64_t x = 0; x < K; ++x) { acc(0, wide(dq[((bos + t) * H + h) * K + x]), rq[t * K + x]); acc(1, wide(dk[((bos + t) * H + h) * K + x]), rk[t * K + x]); }
      for (int64_t y = 0; y < V; ++y) acc(2, wide(dv[((bos + t) * H + h) * V + y]), rv[t * V + y]);
      if (!cut) for (int64_t x = 0; x < GW; ++x) acc(3, dg[((bos + t) * H + h) * GW + x], rg[t * GW + x]);
    }
    if (!cut) for (int64_t e = 0; e < K * V; ++e) acc(4, dh0[(n * H + h) * K * V + e], rh[e]);
  }
  std::printf("B=%ld T=%ld H=%ld K=%ld V=%ld %s %s N=%ld h0=%d dhT=%d sms=%d gv=%d:", long(B), long(T), long(H), long(K), long(V),
              c.gate == Gate::vector ? "vector" : "scalar", c.f16 ? "f16" : "bf16", long(N), c.h0, c.dhT, c.sms, c.gv);
  const char* names[5] = {"dq", "dk", "dv", "dg", "dh0"};
  for (int o = 0; o < 5; ++o) { const double r = mag[o] > 0 ? err[o] / mag[o] : err[o]; worst = std::max(worst, r); std::printf(" %s %.1e", names[o], r); }
  if (nonfinite) { worst = INFINITY; std::printf(" NONFINITE"); }
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of every output's bytes: the same in both thread orders
  auto mix = [&](const void* p, size_t n) { for (size_t i = 0; i < n; ++i) hash = (hash ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull; };
  mix(dq.data(), dq.size() * sizeof(E)); mix(dk.data(), dk.size() * sizeof(E)); mix(dv.data(), dv.size() * sizeof(E));
  mix(dg.data(), dg.size() * 4); mix(dh0.data(), dh0.size() * 4);
  std::printf(" hash %016llx\n", (unsigned long long)hash);
  std::fflush(stdout);
  return worst;
}

int main(int argc, char** argv) {
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(c); };
  const bool quick = argc > 1 && std::string(argv[1]) == "quick";  // one gate per K
  // K around the K tiles, both gates, both dtypes; sms = 1 picks dstate's widest V tile
  int i = 0;
  for (int64_t K : {13, 33, 64, 65, 96, 128}) for (Gate gate : {Gate::vector, Gate::scalar}) {
    Case c; c.B = 2; c.T = i % 2 ? 130 : 77; c.H = 2; c.K = K; c.V = (i % 3 == 0) ? 70 : (i % 3 == 1 ? 31 : 128); c.gate = gate; c.f16 = i % 2; c.sms = i % 4 == 0 ? 1 : 132; c.seed = 10 + i++; add(c);
    if (quick) break;
  }
  if (!quick) {
    for (Gate gate : {Gate::vector, Gate::scalar}) {
      Case c; c.cu = {0, 0, 1, 65, 65, 130, 200, 200}; c.T = 200; c.H = 2; c.K = 96; c.V = 45; c.gate = gate; c.seed = 50 + int(gate); c.sms = 1; add(c);
      Case d = c; d.K = 128; d.V = 20; d.h0 = false; d.dhT = false; d.sms = 132; d.seed = 60 + int(gate); add(d);
      Case e; e.B = 1; e.T = 200; e.H = 1; e.K = 128; e.V = 40; e.gv = 1; e.gate = gate; e.f16 = true; e.seed = 70 + int(gate); add(e);
      Case f; f.B = 1; f.T = 17; f.H = 1; f.K = 100; f.V = 256; f.gate = gate; f.seed = 80 + int(gate); f.sms = 1; add(f);
      for (int64_t T : {0, 1, 64}) { Case t; t.B = 2; t.T = T; t.H = 1; t.K = 128; t.V = 24; t.gate = gate; t.seed = 90 + int(T) + int(gate); add(t); }
    }
    {  // 40 sequences, empty ones and chunk-crossing ones among them: chunk_cta finds a slot's sequence in two
       // rounds of 32 (K 96: dqk's remapped grid of two K tiles; the cases above take one round, both grids)
      Case m; m.cu = {0};
      for (int s = 0; s < 40; ++s) m.cu.push_back(m.cu.back() + (s % 7 == 3 ? 0 : (37 * s) % 100 + 1));
      m.T = m.cu.back(); m.H = 1; m.K = 96; m.V = 24; m.seed = 95; add(m);
    }
  }
  if (argc > 1 && std::string(argv[1]) == "sweep") {  // the GPU tests' other sizes: K, V and T around every tile
    cases.clear();
    int j = 0;
    const int64_t Ks[] = {1, 3, 32, 127, 40, 100}, Vs[] = {1, 3, 13, 65, 127, 256};
    for (int u = 0; u < 6; ++u) { Case c; c.B = 1; c.H = 2; c.T = 77; c.K = Ks[u]; c.V = Vs[u]; c.gate = u % 2 ? Gate::scalar : Gate::vector; c.f16 = u % 3 == 0; c.sms = u % 2 ? 1 : 132; c.seed = 300 + j++; cases.push_back(c); }
    for (int64_t T : {15, 16, 17, 31, 33, 48, 63, 129}) { Case c; c.B = 2; c.H = 1; c.T = T; c.K = 72; c.V = 40; c.gate = T % 2 ? Gate::vector : Gate::scalar; c.seed = 400 + j++; cases.push_back(c); }
    { Case c; c.cu = {0, 17, 17, 50, 178, 179, 243}; c.T = 243; c.H = 2; c.K = 80; c.V = 45; c.gate = Gate::scalar; c.f16 = true; c.seed = 500; cases.push_back(c); }
    for (Gate gate : {Gate::vector, Gate::scalar})  // a −Inf gate mid-block (step 37 of 64): rows before it finite and right
      for (int64_t K : {64, 100}) { Case c; c.T = 64; c.H = 2; c.K = K; c.V = 48; c.gate = gate; c.f16 = K == 100; c.neginf = 37; c.seed = 600 + int(K) + int(gate); cases.push_back(c); }
    for (Gate gate : {Gate::vector, Gate::scalar}) {  // q and k rows times 2^-100 (tiny factored operands)
      Case c; c.B = 1; c.T = 100; c.H = 2; c.K = 64; c.V = 40; c.gate = gate; c.far = true; c.seed = 800 + int(gate); cases.push_back(c);
    }
    for (Gate gate : {Gate::vector, Gate::scalar}) {  // steep decays: 16-row blocks around the factored span's edge
      Case c; c.B = 1; c.T = 150; c.H = 2; c.K = 96; c.V = 40; c.gv = 2; c.gate = gate; c.f16 = gate == Gate::scalar; c.seed = 700 + int(gate); cases.push_back(c);
    }
  }
  if (argc > 1 && std::string(argv[1]) == "huge") {  // a known limit, not a test (docs/glr.md, "Range"): k rows
    // times 2^100 make dq Inf where every term is finite (the factored diagonal's y = k·2^(b_ρ − b_j)
    // overflows); q rows times 2^100 pass (dk's factors balance before they multiply)
    cases.clear();
    for (int huge : {1, 2})
      for (Gate gate : {Gate::vector, Gate::scalar}) {
        Case c; c.B = 1; c.T = 100; c.H = 2; c.K = 64; c.V = 40; c.gate = gate; c.huge = huge; c.gv = 2; c.seed = 900 + 10 * huge + int(gate);
        cases.push_back(c);
      }
  }
  if (argc > 1 && std::string(argv[1]) == "ktiles")  // the cases with two K tiles only
    std::erase_if(cases, [](const Case& c) { return c.K <= 64; });
  double worst = 0;
  for (const Case& c : cases) worst = std::max(worst, c.f16 ? run<__half>(c) : run<__nv_bfloat16>(c));
  std::printf("worst %.2e (CTAs run %ld)\n", worst, sim::ctas_run);
  return worst < 3e-2 ? 0 : 1;
}
