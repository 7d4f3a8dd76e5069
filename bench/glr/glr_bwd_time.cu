// glr backward, the tensor-core split (glr_bwd_split.cuh) against the FFMA backward (glr_bwd.cuh) on
// the same bf16 inputs at the issue-19 shapes: CUDA events, 256 MiB written between repetitions (L2
// flush), 3 warm-up calls, median of 20, the device synchronized around each call. A development
// measurement beside bench_glr_vs_fla.py: it also prints max |x_split − x_ffma| / max |x_ffma| for
// dq, dk, dv, dg and dh0 as a sanity check (the 12 gates and glr_cuda_tests are the verification).
//
//   nvcc -std=c++17 -O3 -Iinclude -gencode arch=compute_90a,code=sm_90a bench/glr/glr_bwd_time.cu -o build/glr_bwd_time
//   build/glr_bwd_time [--no-ffma [N]]   (H200; prints a markdown table; --no-ffma times the split only;
//                                         N: the first N shapes only)
// GLR_BWD_DQK_AB=1 adds, per row and in the same process (K > 32): kernel 4 (dqk) alone in four
// forms (bwd_split::kDqkPipe 2, kDqkRemap 4, kDqkVec 8): 0 (the kernel of sessions 15-18), 6, 8,
// 14, on the inputs that the whole backward just timed left in the workspace (every form reads the
// same ones); the default is dqk_form(K): 14 at K > 64, 8 at K <= 64.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "device_fill.cuh"
#include "timing.cuh"
#include "glr/cuda/api_impl.cuh"

namespace {

#define OK(st)                                                                          \
  do {                                                                                  \
    const glr::cuda::Status s_ = (st);                                                  \
    if (!s_.ok()) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_.message.c_str());      \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

void* dmalloc(size_t n) {
  void* p = nullptr;
  if (n) CK(cudaMalloc(&p, n));
  return p;
}

template <class T> void upload(void* d, const std::vector<T>& h) {
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}

double to_double(__nv_bfloat16 x) { return __bfloat162float(x); }
double to_double(float x) { return x; }

/// max |a − b| / max |b| over n elements of device arrays (a non-finite a counts as Inf).
template <class T> double rel_diff(const void* a, const void* b, size_t n) {
  if (n == 0) return 0;
  std::vector<T> x(n), y(n);
  CK(cudaMemcpy(x.data(), a, n * sizeof(T), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(y.data(), b, n * sizeof(T), cudaMemcpyDeviceToHost));
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double u = to_double(x[i]), v = to_double(y[i]);
    d = std::max(d, std::isfinite(u) ? std::abs(u - v) : INFINITY);
    m = std::max(m, std::abs(v));
  }
  return m > 0 ? d / m : d;
}

}  // namespace

int main(int argc, char** argv) {
  namespace gc = glr::cuda;
  const bool ffma = !(argc > 1 && std::strcmp(argv[1], "--no-ffma") == 0);
  const int max_rows = argc > 2 ? std::atoi(argv[2]) : 1 << 30;  // the first N shapes only (for ncu)
  const size_t flush_bytes = glr_bench::kFlushBytes;
  void* flush = dmalloc(flush_bytes);
  const char* ab_env = std::getenv("GLR_BWD_DQK_AB");
  const bool ab = ab_env && *ab_env && *ab_env != '0';
  std::printf("| B,T,H,D | seqs | gate | split bwd ms | ffma bwd ms | ffma/split | rel dq | rel dk | rel dv | rel dg | rel dh0 |"
              " dqk form 0 ms | dqk form 6 ms | dqk form 8 ms | dqk form 14 ms | split hash |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(1);
  int row_no = 0;
  for (const glr_bench::ShapeRow& r : glr_bench::kShapes)
    for (gc::Gate gate : {gc::Gate::vector, gc::Gate::scalar}) {
      if (row_no / 2 >= max_rows) break;
      ++row_no;
      if (!glr_bench::row_wanted((row_no + 1) / 2)) continue;
      const int64_t BT = r.B * r.T, NTH = BT * r.H, K = r.D, V = r.D, S = r.seqs ? r.seqs : r.B;
      const int64_t GW = gate == gc::Gate::vector ? K : 1;
      void* q = dmalloc(NTH * K * 2);
      void* k = dmalloc(NTH * K * 2);
      void* v = dmalloc(NTH * V * 2);
      void* dO = dmalloc(NTH * V * 2);
      void* g = dmalloc(NTH * GW * 4);
      void* h0 = dmalloc(S * r.H * K * V * 4);
      void* dhT = dmalloc(S * r.H * K * V * 4);
      // Filled on the device (device_fill.cuh): the host's normal draws took minutes at the largest shapes.
      namespace gb = glr_bench;
      const uint64_t seed = 1000 * uint64_t(row_no);
      CK(gb::fill(static_cast<__nv_bfloat16*>(q), NTH * K, seed + 1));
      CK(gb::fill(static_cast<__nv_bfloat16*>(k), NTH * K, seed + 2));
      CK(gb::fill(static_cast<__nv_bfloat16*>(v), NTH * V, seed + 3));
      CK(gb::fill(static_cast<__nv_bfloat16*>(dO), NTH * V, seed + 4));
      CK(gb::fill(static_cast<float*>(g), NTH * GW, seed + 5, gb::Fill::gate));  // logsigmoid(N(0,1)) / 16
      CK(gb::fill(static_cast<float*>(h0), S * r.H * K * V, seed + 6));
      CK(gb::fill(static_cast<float*>(dhT), S * r.H * K * V, seed + 7));
      void* out[2][5];  // [split, ffma][dq, dk, dv, dg, dh0]
      const size_t out_bytes[5] = {size_t(NTH * K * 2), size_t(NTH * K * 2), size_t(NTH * V * 2), size_t(NTH * GW * 4),
                                   size_t(S * r.H * K * V * 4)};
      for (auto& o : out)
        for (int t = 0; t < 5; ++t) o[t] = dmalloc(out_bytes[t]);
      int64_t* cu = nullptr;
      gc::BwdParams p;
      p.shape.B = r.B;
      p.shape.T = r.T;
      p.shape.H = r.H;
      p.shape.K = K;
      p.shape.V = V;
      p.shape.gate = gate;
      p.shape.dtype = gc::DType::bf16;
      if (r.seqs) {  // fixed pseudo-random lengths summing to T (the fwd bench's draw)
        std::vector<int64_t> cuh{0};
        std::uniform_int_distribution<int64_t> ud(1, 2 * r.T / r.seqs);
        for (int i = 1; i < r.seqs; ++i) cuh.push_back(std::min<int64_t>(r.T - (r.seqs - i), cuh.back() + ud(rng)));
        cuh.push_back(r.T);
        cu = static_cast<int64_t*>(dmalloc(cuh.size() * 8));
        upload(cu, cuh);
        p.shape.cu_seqlens = cu;
        p.shape.N = r.seqs;
      }
      p.q = q;
      p.k = k;
      p.v = v;
      p.g = g;
      p.h0 = h0;
      p.dO = dO;
      p.dhT = dhT;
      p.scale = 1.0 / std::sqrt(double(K));
      auto bind = [&](int w) {
        p.dq = out[w][0];
        p.dk = out[w][1];
        p.dv = out[w][2];
        p.dg = out[w][3];
        p.dh0 = out[w][4];
      };
      const bool split = gc::sm90::bwd_split::takes(p.shape);
      float t_sp = NAN, t_ff = NAN, t_dqk[4] = {NAN, NAN, NAN, NAN};
      unsigned long long hash = 0;
      if (split) {
        namespace bs = gc::sm90::bwd_split;
        const size_t wsb = bs::workspace_bytes(p.shape);
        void* ws = dmalloc(wsb);
        bind(0);
        p.workspace = ws;
        p.workspace_bytes = wsb;
        t_sp = glr_bench::median_ms([&] { OK(bs::launch<__nv_bfloat16>(p, 0)); }, flush, flush_bytes);
        // the split's dq, dk, dv, dg and dh0 bit for bit, before the dqk forms below write over dq and dk
        hash = glr_bench::device_hash(out[0][0], out_bytes[0]);
        for (int t = 1; t < 5; ++t) hash = glr_bench::device_hash(out[0][t], out_bytes[t], hash);
        if (ab && K > 32) {
          const bs::Layout l = bs::layout(p.shape);
          const int64_t nvt_seed = gc::sm90::fwd_split::cdiv(V, bs::dstate_bv<bs::k_tile(128)>(p.shape));
          int64_t nkt = 0;
          auto dqk = [&](auto kt, auto var) {
            constexpr int KT = decltype(kt)::value, kVar = decltype(var)::value;
            return gate == gc::Gate::vector ? bs::launch_dqk<__nv_bfloat16, false, KT, kVar>(p, l, 0, nvt_seed, &nkt)
                                            : bs::launch_dqk<__nv_bfloat16, true, KT, kVar>(p, l, 0, nvt_seed, &nkt);
          };
          using std::integral_constant;
          auto time = [&](auto kt, auto var) { return glr_bench::median_ms([&] { OK(dqk(kt, var)); }, flush, flush_bytes); };
          t_dqk[0] = time(integral_constant<int, 64>{}, integral_constant<int, 0>{});
          t_dqk[1] = time(integral_constant<int, 64>{}, integral_constant<int, 6>{});
          t_dqk[2] = time(integral_constant<int, 64>{}, integral_constant<int, 8>{});
          t_dqk[3] = time(integral_constant<int, 64>{}, integral_constant<int, 14>{});
        }
        CK(cudaFree(ws));
      }
      if (ffma) {
        const size_t wsb = gc::sm90::bwd_ffma_workspace_bytes(p.shape);
        void* ws = dmalloc(wsb);
        bind(1);
        p.workspace = ws;
        p.workspace_bytes = wsb;
        t_ff = glr_bench::median_ms([&] { OK((gc::sm90::bwd_detail::launch_gate<__nv_bfloat16, float>(p, 0))); }, flush,
                         flush_bytes);
        CK(cudaFree(ws));
      }
      double rel[5] = {NAN, NAN, NAN, NAN, NAN};
      if (split && ffma) {
        rel[0] = rel_diff<__nv_bfloat16>(out[0][0], out[1][0], size_t(NTH * K));
        rel[1] = rel_diff<__nv_bfloat16>(out[0][1], out[1][1], size_t(NTH * K));
        rel[2] = rel_diff<__nv_bfloat16>(out[0][2], out[1][2], size_t(NTH * V));
        rel[3] = rel_diff<float>(out[0][3], out[1][3], size_t(NTH * GW));
        rel[4] = rel_diff<float>(out[0][4], out[1][4], size_t(S * r.H * K * V));
      }
      std::printf("| %lld,%lld,%lld,%lld | %lld | %s | %.3f | %.3f | %.2fx | %.2e | %.2e | %.2e | %.2e | %.2e | %.3f | %.3f | %.3f | %.3f | %016llx |\n",
                  (long long)r.B, (long long)r.T, (long long)r.H, (long long)r.D, (long long)r.seqs,
                  gate == gc::Gate::vector ? "vector" : "scalar", t_sp, t_ff, t_ff / t_sp, rel[0], rel[1], rel[2],
                  rel[3], rel[4], t_dqk[0], t_dqk[1], t_dqk[2], t_dqk[3], hash);
      std::fflush(stdout);
      for (auto& o : out)
        for (void* x : o) CK(cudaFree(x));
      for (void* x : {q, k, v, dO, g, h0, dhT}) CK(cudaFree(x));
      if (cu) CK(cudaFree(cu));
    }
  CK(cudaFree(flush));
  return 0;
}
