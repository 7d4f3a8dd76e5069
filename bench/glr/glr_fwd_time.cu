// glr forward, tensor-core kernel (sm90_glr_fwd_tc) against the FFMA kernel (sm90_glr_fwd) on the
// same bf16 inputs at the issue-19 shapes: CUDA events, 256 MiB written between repetitions (L2
// flush), 3 warm-up calls, median of 20, the device synchronized around each call. A development
// measurement beside bench_glr_vs_fla.py (which times against FLA through torch): it also prints
// max |o_tc − o_ffma| / max |o_ffma| as a sanity check (the 12 gates are the verification).
//
//   nvcc -std=c++17 -O3 -Iinclude -gencode arch=compute_90a,code=sm_90a bench/glr/glr_fwd_time.cu -o build/glr_fwd_time
//   build/glr_fwd_time [N [split]] (H200; prints a markdown table; N: the first N shapes only;
//                                   split: time the split kernels alone, the FFMA kernel runs once for the check)
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "device_fill.cuh"
#include "timing.cuh"
#include "glr/cuda/api_impl.cuh"

int main(int argc, char** argv) {
  const int max_rows = argc > 1 ? std::atoi(argv[1]) : 1 << 30;  // first N shapes only (for ncu)
  const bool split_only = argc > 2 && std::string(argv[2]) == "split";  // time the split alone (FFMA runs once)
  namespace gc = glr::cuda;
  const size_t flush_bytes = glr_bench::kFlushBytes;
  void* flush = nullptr;
  CK(cudaMalloc(&flush, flush_bytes));
  std::printf("| B,T,H,D | seqs | split fwd ms | tc fwd ms | ffma fwd ms | tc/split | max|split-ffma|/max|ffma| | max|tc-ffma|/max|ffma| | split o hash |\n|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(1);
  int row_no = 0;
  for (const glr_bench::ShapeRow& r : glr_bench::kShapes) {
    if (row_no++ >= max_rows) break;
    if (!glr_bench::row_wanted(row_no)) continue;
    const int64_t N = r.B * r.T * r.H, K = r.D, V = r.D;
    void *q, *k, *v, *g, *o1, *o2;
    CK(cudaMalloc(&q, N * K * 2));
    CK(cudaMalloc(&k, N * K * 2));
    CK(cudaMalloc(&v, N * V * 2));
    CK(cudaMalloc(&g, N * K * 4));
    CK(cudaMalloc(&o1, N * V * 2));
    CK(cudaMalloc(&o2, N * V * 2));
    // Filled on the device (device_fill.cuh): the host's normal draws took minutes at the largest shapes.
    const uint64_t seed = 1000 * uint64_t(row_no);
    CK(glr_bench::fill(static_cast<__nv_bfloat16*>(q), N * K, seed + 1));
    CK(glr_bench::fill(static_cast<__nv_bfloat16*>(k), N * K, seed + 2));
    CK(glr_bench::fill(static_cast<__nv_bfloat16*>(v), N * V, seed + 3));
    CK(glr_bench::fill(static_cast<float*>(g), N * K, seed + 4, glr_bench::Fill::gate));  // logsigmoid(N(0,1)) / 16
    int64_t* cu = nullptr;
    gc::FwdParams p;
    p.shape.B = r.B;
    p.shape.T = r.T;
    p.shape.H = r.H;
    p.shape.K = K;
    p.shape.V = V;
    p.shape.dtype = gc::DType::bf16;
    if (r.seqs) {  // fixed pseudo-random lengths summing to T
      std::vector<int64_t> cuh{0};
      std::uniform_int_distribution<int64_t> ud(1, 2 * r.T / r.seqs);
      for (int i = 1; i < r.seqs; ++i) cuh.push_back(std::min<int64_t>(r.T - (r.seqs - i), cuh.back() + ud(rng)));
      cuh.push_back(r.T);
      CK(cudaMalloc(&cu, cuh.size() * 8));
      CK(cudaMemcpy(cu, cuh.data(), cuh.size() * 8, cudaMemcpyHostToDevice));
      p.shape.cu_seqlens = cu;
      p.shape.N = r.seqs;
    }
    p.q = q;
    p.k = k;
    p.v = v;
    p.g = g;
    p.scale = 1.0 / std::sqrt(double(K));
    const bool tc = gc::sm90::fwd_tc::takes(p), sp = gc::sm90::fwd_split::takes(p.shape);
    float t_tc = NAN, t_sp = NAN;
    void *o3 = nullptr, *ws = nullptr;
    CK(cudaMalloc(&o3, N * V * 2));
    const size_t ws_bytes = gc::sm90::fwd_split::workspace_bytes(p.shape);
    if (ws_bytes) CK(cudaMalloc(&ws, ws_bytes));
    if (sp) {
      p.o = o3;
      p.workspace = ws;
      p.workspace_bytes = ws_bytes;
      t_sp = glr_bench::median_ms([&] { CK(cudaError_t(gc::sm90::fwd_split::launch<__nv_bfloat16>(p, 0).ok() ? cudaSuccess : cudaErrorUnknown)); }, flush, flush_bytes);
    }
    p.o = o1;
    if (tc && !split_only) t_tc = glr_bench::median_ms([&] { CK(cudaError_t(gc::sm90::fwd_tc::launch<__nv_bfloat16>(p, 0).ok() ? cudaSuccess : cudaErrorUnknown)); }, flush, flush_bytes);
    p.o = o2;
    auto ffma = [&] { CK(cudaError_t(gc::sm90::fwd::launch_gate<__nv_bfloat16, float>(p, 0).ok() ? cudaSuccess : cudaErrorUnknown)); };
    float t_ff = NAN;
    if (split_only) {
      ffma();
      CK(cudaDeviceSynchronize());
    } else {
      t_ff = glr_bench::median_ms(ffma, flush, flush_bytes);
    }
    double dmax = 0, smax = 0, rmax = 0;
    if (sp) {
      std::vector<__nv_bfloat16> a(N * V), b(N * V), c(N * V);
      CK(cudaMemcpy(a.data(), o1, N * V * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(b.data(), o2, N * V * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(c.data(), o3, N * V * 2, cudaMemcpyDeviceToHost));
      for (int64_t i = 0; i < N * V; ++i) {
        const double x = __bfloat162float(a[i]), y = __bfloat162float(b[i]), z = __bfloat162float(c[i]);
        if (tc && !split_only) dmax = std::max(dmax, std::isfinite(x) ? std::abs(x - y) : INFINITY);
        smax = std::max(smax, std::isfinite(z) ? std::abs(z - y) : INFINITY);
        rmax = std::max(rmax, std::abs(y));
      }
    }
    const unsigned long long o_hash = sp ? glr_bench::device_hash(o3, N * V * 2) : 0;  // the split's o, bit for bit
    std::printf("| %lld,%lld,%lld,%lld | %lld | %.3f | %.3f | %.3f | %.2fx | %.2e | %.2e | %016llx |\n", (long long)r.B,
                (long long)r.T, (long long)r.H, (long long)r.D, (long long)r.seqs, t_sp, t_tc, t_ff, t_tc / t_sp,
                smax / rmax, dmax / rmax, o_hash);
    CK(cudaFree(o3));
    if (ws) CK(cudaFree(ws));
    std::fflush(stdout);
    for (void* x : {q, k, v, g, o1, o2}) CK(cudaFree(x));
    if (cu) CK(cudaFree(cu));
  }
  return 0;
}
