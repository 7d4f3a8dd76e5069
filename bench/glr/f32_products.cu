// bench/glr/f32_products.cu — glr's chunk products at f32: FFMA against split-operand tensor cores.
//
// Issue 18 §0: the f32 glr contracts stay strict (fp32 accuracy, so no plain TF32): FFMA, or
// split-operand tensor-core products that reach fp32 accuracy — measure which is faster. This
// standalone benchmark times, on the H200, batched products of the shapes a chunk-64 glr kernel
// runs at f32, in five implementations, each checked against an fp64 reference on the device:
//
//   ffma         register-blocked SIMT GEMM: each thread a TM x TN micro-tile from shared memory
//   3xtf32       mma.sync m16n8k8 tf32: a = big + small (big = tf32(a) by cvt.rna, small =
//                tf32(a - big)), acc += small·big_b; acc += big·small_b; acc += big·big_b
//                (one fp32 accumulator, the small terms first: CUTLASS's "3xTF32 fast accurate")
//   3xtf32-2acc  the same three products, the two corrections in an accumulator of their own,
//                added to the big·big accumulator once at the end (twice the accumulators)
//   3xtf32-int   3xtf32 with the split done by integer rounding of the bit pattern, not cvt
//   1xtf32       one mma per product on tf32(a)·tf32(b): what FLA's tl.dot does; not fp32-accurate
//
// Shapes (batch = 4096 products, one per CTA; inputs random normal fp32 in global memory, outputs
// fp32 to global):
//   qk    [64 x 128]·[128 x 64]    A row-major [M][K], B row-major [K][N]   (q·kᵀ of a chunk, K = 128)
//   qs    [64 x 128]·[128 x 128]   A row-major, B row-major                 (q·S, S the [K, V] state)
//   kv    [128 x 64]·[64 x 128]    A = kᵀ stored as k [64][128] (K-major), B row-major
//                                                                           (kᵀ·v, the state update)
// Each at reps = 1 (global → shared → registers → global: the whole product, memory included) and
// reps = 8 (the product accumulated 8 times out of the same shared-memory operands: the compute
// side alone, as in a fused chunk kernel whose operands are already on chip).
//
// Accuracy: per output element, ratio = |c − R·r| / (u · R·Σ_k |a_ik b_kj|), u = 2^-24, r and the
// magnitude Σ|ab| in fp64 (R = reps). kcv's f32 matmul contract allows ratio ≤ 2·K·R (c = 2,
// src/kcv/contracts/matmul.cpp); plain fp32 stays ≤ K·R in the worst case and near √K on random
// data; TF32 inputs (2^-11 relative per operand) land around 2^13 times higher.
//
// Usage: f32_products [JSON_PATH] [--batch N] [--iters N] [--warmup N] [--reps 1,8] [--seed S]
//                     [--shapes qk,qs,kv] [--impls ffma,3xtf32,3xtf32-2acc,3xtf32-int,1xtf32]
// Prints a markdown table (stdout); writes the JSON to JSON_PATH when given. Exit 0: every
// result finite and within the gross bound, and every accuracy class as expected; 1: a non-finite
// result or an error beyond the gross bound (2^17 u·Σ|ab|, far above TF32's ~2^14 worst case); 3:
// all sane, but an implementation's accuracy class was not the expected one (ffma / 3xtf32 outside
// kcv's bound, or 1xtf32 inside it); 2: usage or CUDA error. Results are written in every case.
//
// Build: nvcc -O3 -std=c++20 -gencode arch=compute_90a,code=sm_90a bench/glr/f32_products.cu
// (bench/glr/f32_products.sh does it and runs it on the device; bench/glr/README.md).
//
// Timing (STYLE.md rule 11): every configuration is verified first and timed only if it passed
// the gross bound; per repetition 256 MiB written (L2 flush, not timed), then a CUDA event pair
// around the one launch; warm-up 3, median of 25 (≥ 20 enforced). Each implementation runs in a few
// tile configurations; the table shows the fastest verified one, the JSON all of them.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr double kU = 0x1p-24;           // fp32 unit roundoff
constexpr double kGrossRatio = 0x1p17;   // beyond this (in u·Σ|ab|) a kernel is broken, not imprecise

// ---------------------------------------------------------------------------------------------
// errors

void fatal_exit(int code);  // writes what was measured, then exits (below)

#define CUDA_CHECK(expr)                                                                           \
  do {                                                                                             \
    cudaError_t err_ = (expr);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #expr, cudaGetErrorName(err_), \
                   cudaGetErrorString(err_));                                                      \
      fatal_exit(2);                                                                               \
    }                                                                                              \
  } while (0)

// ---------------------------------------------------------------------------------------------
// problem shapes: compile-time, with their shared-memory layouts

/// One product C[M,N] = A[M,K]·B[K,N] per CTA. Global: A row-major [M][K] or, AK, K-major [K][M]
/// (kᵀ read from k [C][K]); B row-major [K][N]; C row-major [M][N]. Shared memory holds the whole
/// of A and B, loaded in NS slices of BK along K by cp.async (one commit group per slice, so the
/// first slice's products start while the rest arrive). Row pitches padded so that every
/// fragment load below is free of bank conflicts:
///   As [M][K+4]  (row-major):  mma a-fragment (row g, col t): bank 4g + t       (K+4 ≡ 4 mod 32)
///   As [K][M+8]  (K-major):    mma a-fragment: bank 8t + g                      (M+8 ≡ 8 mod 32)
///   Bs [K][N+8]:               mma b-fragment (row t, col g): bank 8t + g       (N+8 ≡ 8 mod 32)
/// and every pitch a multiple of 4 floats, so FFMA's float4 loads stay aligned.
template <int M_, int N_, int K_, bool AK_>
struct Prob {
  static constexpr int M = M_, N = N_, K = K_;
  static constexpr bool AK = AK_;
  static constexpr int BK = 32, NS = K / BK;
  static constexpr int LDA = AK ? M + 8 : K + 4;
  static constexpr int LDB = N + 8;
  static constexpr int A_FLOATS = AK ? K * LDA : M * LDA;
  static constexpr int B_FLOATS = K * LDB;
  static constexpr size_t SMEM = size_t(A_FLOATS + B_FLOATS) * sizeof(float);
  static_assert(K % BK == 0 && NS >= 1 && NS <= 8, "K in slices of BK, at most 8 commit groups");
  static_assert(M % 16 == 0 && N % 8 == 0 && BK % 8 == 0, "mma m16n8k8 tiling");
  static_assert(LDA % 4 == 0 && LDB % 4 == 0, "16-byte aligned rows (cp.async, float4)");
  static_assert(LDA % 32 == (AK ? 8 : 4) && LDB % 32 == 8, "conflict-free fragment pitches");
  __device__ static __forceinline__ int a_idx(int m, int k) { return AK ? k * LDA + m : m * LDA + k; }
  __device__ static __forceinline__ int b_idx(int k, int n) { return k * LDB + n; }
};

using ProbQK = Prob<64, 64, 128, false>;   // q·kᵀ  [64,128]·[128,64]
using ProbQS = Prob<64, 128, 128, false>;  // q·S   [64,128]·[128,128]
using ProbKV = Prob<128, 128, 64, true>;   // kᵀ·v  [128,64]·[64,128], A K-major

// ---------------------------------------------------------------------------------------------
// device helpers

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most `pending` commit groups are in flight (an immediate in PTX: switch).
__device__ __forceinline__ void cp_async_wait(int pending) {
  switch (pending) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_all;\n" ::: "memory"); break;
  }
}

/// Issues the loads of one product's A and B into shared memory: NS commit groups, slice s =
/// columns [s·BK, (s+1)·BK) of A and rows of B. 16-byte chunks, consecutive threads on
/// consecutive chunks of a row (coalesced).
template <class P, int THREADS>
__device__ __forceinline__ void issue_loads(float* As, float* Bs, const float* A, const float* B, int tid) {
#pragma unroll
  for (int s = 0; s < P::NS; ++s) {
    if constexpr (P::AK) {
      constexpr int CPR = P::M / 4;  // chunks per row of A [K][M]
      for (int c = tid; c < P::BK * CPR; c += THREADS) {
        const int k = s * P::BK + c / CPR, m = (c % CPR) * 4;
        cp_async16(As + P::a_idx(m, k), A + size_t(k) * P::M + m);
      }
    } else {
      constexpr int CPR = P::BK / 4;  // chunks per row of A [M][K] within the slice
      for (int c = tid; c < P::M * CPR; c += THREADS) {
        const int m = c / CPR, k = s * P::BK + (c % CPR) * 4;
        cp_async16(As + P::a_idx(m, k), A + size_t(m) * P::K + k);
      }
    }
    constexpr int CPRB = P::N / 4;
    for (int c = tid; c < P::BK * CPRB; c += THREADS) {
      const int k = s * P::BK + c / CPRB, n = (c % CPRB) * 4;
      cp_async16(Bs + P::b_idx(k, n), B + size_t(k) * P::N + n);
    }
    cp_async_commit();
  }
}

// ---------------------------------------------------------------------------------------------
// fp64 reference and error statistics

/// splitmix64: counter-based, so that every element's value depends on (seed, index) alone.
__host__ __device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Standard normal fp32 values (Box–Muller in double, rounded once).
__global__ void fill_normal(float* x, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint64_t h1 = mix64(seed ^ mix64(2 * i)), h2 = mix64(seed ^ mix64(2 * i + 1));
    const double u1 = (double(h1 >> 11) + 1.0) * 0x1p-53;  // (0, 1]
    const double u2 = double(h2 >> 11) * 0x1p-53;          // [0, 1)
    x[i] = float(sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
  }
}

/// ref = Σ_k a_ik b_kj and mag = Σ_k |a_ik b_kj| in fp64 (each product of two floats is exact in
/// double; the sum's own error, ~K·2^-53·mag, is 2^-29 of the fp32 scale), one thread per element.
template <bool AK>
__global__ void reference_products(const float* A, const float* B, double* ref, double* mag, int M, int N, int K,
                                   size_t total) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < total; e += size_t(gridDim.x) * blockDim.x) {
    const size_t b = e / (size_t(M) * N);
    const int m = int((e / N) % M), n = int(e % N);
    const float* a = A + b * size_t(M) * K;
    const float* bb = B + b * size_t(K) * N;
    double s = 0, sa = 0;
    for (int k = 0; k < K; ++k) {
      const double p = double(AK ? a[size_t(k) * M + m] : a[size_t(m) * K + k]) * double(bb[size_t(k) * N + n]);
      s += p;
      sa += fabs(p);
    }
    ref[e] = s;
    mag[e] = sa;
  }
}

constexpr int kErrBlocks = 1024, kErrThreads = 256;

struct ErrPartial {
  double max_ratio;
  double sum_sq;
  unsigned long long argmax;
  unsigned long long nonfinite;
};

/// Per block: max and Σ of ratio² over its elements, the index of the max, the count of
/// non-finite outputs (an output never written keeps the NaN prefill and lands here).
__global__ void error_stats(const float* C, const double* ref, const double* mag, double reps, size_t total,
                            ErrPartial* out) {
  __shared__ double s_max[kErrThreads], s_sq[kErrThreads];
  __shared__ unsigned long long s_arg[kErrThreads], s_nf[kErrThreads];
  double mx = -1, sq = 0;
  unsigned long long arg = 0, nf = 0;
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < total; e += size_t(gridDim.x) * blockDim.x) {
    const double c = C[e];
    if (!isfinite(c)) {
      ++nf;
      continue;
    }
    const double err = fabs(c - reps * ref[e]), scale = kU * reps * mag[e];
    const double r = scale > 0 ? err / scale : (err == 0 ? 0.0 : HUGE_VAL);
    if (!isfinite(r)) {
      ++nf;
      continue;
    }
    sq += r * r;
    if (r > mx) mx = r, arg = e;
  }
  const int t = threadIdx.x;
  s_max[t] = mx, s_sq[t] = sq, s_arg[t] = arg, s_nf[t] = nf;
  __syncthreads();
  for (int w = kErrThreads / 2; w > 0; w /= 2) {
    if (t < w) {
      if (s_max[t + w] > s_max[t]) s_max[t] = s_max[t + w], s_arg[t] = s_arg[t + w];
      s_sq[t] += s_sq[t + w];
      s_nf[t] += s_nf[t + w];
    }
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = {s_max[0], s_sq[0], s_arg[0], s_nf[0]};
}

// ---------------------------------------------------------------------------------------------
// 1. FFMA: register-blocked SIMT GEMM

/// TY x TX threads, each a TM x TN micro-tile of C: rows ty·TM .. +TM (contiguous), columns in
/// TN/4 groups of 4, group j at j·(N/(TN/4)) + tx·4, so that 8 consecutive threads of a quarter
/// warp read 128 contiguous bytes of a B row (float4, conflict-free) and store 128 contiguous
/// bytes of a C row. A's TM values per k are one address per quarter warp (broadcast). K walked
/// in blocks of KB (4: A row-major read as float4 along k; 2: float2, half the fragment registers,
/// room for the next block's loads): per block KB·(TM + TN) values from shared memory for
/// KB·TM·TN FFMA (8 x 8: 16 FFMA per loaded value). Sums run over k in order, one fma each.
template <class P, int TM, int TN, int KB>
__global__ void __launch_bounds__((P::M / TM) * (P::N / TN))
    ffma_product(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int reps) {
  constexpr int TX = P::N / TN, TY = P::M / TM, THREADS = TX * TY;
  constexpr int NG = TN / 4, GS = P::N / NG;  // column groups per thread, their stride
  static_assert(P::M % TM == 0 && P::N % TN == 0 && TM % 4 == 0 && TN % 4 == 0, "micro-tile");
  static_assert((KB == 2 || KB == 4) && P::BK % KB == 0, "k-block");
  static_assert(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0, "whole warps");
  extern __shared__ float4 smem_f4[];
  float* As = reinterpret_cast<float*>(smem_f4);
  float* Bs = As + P::A_FLOATS;
  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  const size_t b = blockIdx.x;
  issue_loads<P, THREADS>(As, Bs, A + b * P::M * P::K, B + b * P::K * P::N, tid);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  // one block of KB k: every register array indexed by unrolled constants only
  auto kblock = [&](int k0) {
    float a[KB][TM], bv[KB][TN];  // [k][row], [k][col]
    if constexpr (P::AK) {
#pragma unroll
      for (int kk = 0; kk < KB; ++kk)
#pragma unroll
        for (int i4 = 0; i4 < TM / 4; ++i4) {
          const float4 v = *reinterpret_cast<const float4*>(As + P::a_idx(ty * TM + i4 * 4, k0 + kk));
          a[kk][i4 * 4 + 0] = v.x, a[kk][i4 * 4 + 1] = v.y, a[kk][i4 * 4 + 2] = v.z, a[kk][i4 * 4 + 3] = v.w;
        }
    } else if constexpr (KB == 4) {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(As + P::a_idx(ty * TM + i, k0));
        a[0][i] = v.x, a[1][i] = v.y, a[2][i] = v.z, a[3][i] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const float2 v = *reinterpret_cast<const float2*>(As + P::a_idx(ty * TM + i, k0));
        a[0][i] = v.x, a[1][i] = v.y;
      }
    }
#pragma unroll
    for (int kk = 0; kk < KB; ++kk)
#pragma unroll
      for (int g = 0; g < NG; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(Bs + P::b_idx(k0 + kk, g * GS + tx * 4));
        bv[kk][g * 4 + 0] = v.x, bv[kk][g * 4 + 1] = v.y, bv[kk][g * 4 + 2] = v.z, bv[kk][g * 4 + 3] = v.w;
      }
#pragma unroll
    for (int kk = 0; kk < KB; ++kk)
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[kk][i], bv[kk][j], acc[i][j]);
  };
#pragma unroll 1
  for (int s = 0; s < P::NS; ++s) {
    cp_async_wait(P::NS - 1 - s);
    __syncthreads();  // every thread's chunks of slice s have landed
#pragma unroll 2
    for (int kb = 0; kb < P::BK; kb += KB) kblock(s * P::BK + kb);
  }
#pragma unroll 1
  for (int r = 1; r < reps; ++r)
#pragma unroll 2
    for (int k0 = 0; k0 < P::K; k0 += KB) kblock(k0);

  float* c = C + b * P::M * P::N;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int g = 0; g < NG; ++g)
      *reinterpret_cast<float4*>(c + size_t(ty * TM + i) * P::N + g * GS + tx * 4) =
          make_float4(acc[i][g * 4 + 0], acc[i][g * 4 + 1], acc[i][g * 4 + 2], acc[i][g * 4 + 3]);
}

// ---------------------------------------------------------------------------------------------
// 2./3. tensor cores: mma.sync m16n8k8 tf32, split (3xTF32) or plain (1xTF32)

/// x3: 3xTF32, split by cvt.rna; x3_2acc: the corrections in accumulators of their own; x3_int:
/// 3xTF32 split by integer rounding instead of cvt; x1: plain TF32.
enum class Tc { x3, x3_2acc, x3_int, x1 };

/// fp32 → tf32, round to nearest, ties away (the low 13 bits of the result are zero).
__device__ __forceinline__ uint32_t tf32_rna(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
/// x ≈ big + small, both tf32: big = tf32(x), small = tf32(x − big) (x − big is exact in fp32);
/// |x − big − small| ≤ 2^-11·|x − big| ≤ 2^-22·|x|.
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
  big = tf32_rna(x);
  small = tf32_rna(x - __uint_as_float(big));
}
/// The same rounding on the bit pattern, two integer ops on the full-rate ALU: adding half a tf32
/// ulp (bit 12) to the magnitude and clearing the 13 low bits rounds to nearest, ties away, a carry
/// into the exponent included (finite x; NaN payloads are not kept, irrelevant here). Measured
/// beside cvt because whether cvt.rna.tf32.f32 issues at full rate is the SASS's to say.
__device__ __forceinline__ uint32_t tf32_rna_int(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }
__device__ __forceinline__ void split_tf32_int(float x, uint32_t& big, uint32_t& small) {
  big = tf32_rna_int(x);
  small = tf32_rna_int(x - __uint_as_float(big));
}

/// d += a·b, A 16x8 (row), B 8x8 (col), fp32 accumulators. Fragments (PTX ISA, mma.m16n8k8 tf32),
/// g = lane/4, t = lane%4: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k=t, n=g),
/// b1 (k=t+4, n=g); c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// WARPS_M x WARPS_N warps, each a (M/WARPS_M) x (N/WARPS_N) tile of C in MI x NI mma tiles.
/// Per k-step of 8: the warp loads its A (MI x 4) and B (NI x 2) fragments from shared memory
/// (conflict-free, see Prob), converts them (3x: split into big and small, 2 cvt + 1 fadd per
/// value, or 4 integer ops + 1 fadd; 1x: 1 cvt), then issues MI·NI mma per product term: 3x in
/// CUTLASS's order, the small terms first over the whole warp tile, then big·big.
/// NOTES: every warp splits the fragments it loads, so an A value is split WARPS_N times and a B
/// value WARPS_M times per product; a fused kernel could split once into shared memory instead
/// (twice the operand bytes there).
template <class P, int WARPS_M, int WARPS_N, Tc MODE>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32)
    tc_product(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int reps) {
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int WTM = P::M / WARPS_M, WTN = P::N / WARPS_N;  // warp tile
  constexpr int MI = WTM / 16, NI = WTN / 8;
  static_assert(P::M % (16 * WARPS_M) == 0 && P::N % (8 * WARPS_N) == 0, "warp tiling");
  constexpr bool SPLIT = MODE != Tc::x1, TWO_ACC = MODE == Tc::x3_2acc, INT_SPLIT = MODE == Tc::x3_int;
  extern __shared__ float4 smem_f4[];
  float* As = reinterpret_cast<float*>(smem_f4);
  float* Bs = As + P::A_FLOATS;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = (warp / WARPS_N) * WTM, n0 = (warp % WARPS_N) * WTN;
  const size_t b = blockIdx.x;
  issue_loads<P, THREADS>(As, Bs, A + b * P::M * P::K, B + b * P::K * P::N, tid);

  // [MI, NI] mma tiles of 4 accumulators; acc2 (the corrections of 3xtf32-2acc) is dead code and
  // takes no registers in the other modes
  float acc[MI][NI][4], acc2[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f, acc2[i][j][r] = 0.f;

  // one k-step of 8: every register array indexed by unrolled constants only
  auto kstep = [&](int k0) {
    uint32_t ab[MI][4], as[MI][4], bb[NI][2], bs[NI][2];  // big / small fragments
#pragma unroll
    for (int i = 0; i < MI; ++i) {
      const int r = m0 + i * 16 + g;
      const float v[4] = {As[P::a_idx(r, k0 + t)], As[P::a_idx(r + 8, k0 + t)], As[P::a_idx(r, k0 + t + 4)],
                          As[P::a_idx(r + 8, k0 + t + 4)]};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if constexpr (INT_SPLIT) split_tf32_int(v[q], ab[i][q], as[i][q]);
        else if constexpr (SPLIT) split_tf32(v[q], ab[i][q], as[i][q]);
        else ab[i][q] = tf32_rna(v[q]);
      }
    }
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      const int n = n0 + j * 8 + g;
      const float v[2] = {Bs[P::b_idx(k0 + t, n)], Bs[P::b_idx(k0 + t + 4, n)]};
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        if constexpr (INT_SPLIT) split_tf32_int(v[q], bb[j][q], bs[j][q]);
        else if constexpr (SPLIT) split_tf32(v[q], bb[j][q], bs[j][q]);
        else bb[j][q] = tf32_rna(v[q]);
      }
    }
    if constexpr (SPLIT) {
      auto& corr = TWO_ACC ? acc2 : acc;
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma_tf32(corr[i][j], as[i], bb[j]);
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma_tf32(corr[i][j], ab[i], bs[j]);
    }
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j) mma_tf32(acc[i][j], ab[i], bb[j]);
  };
#pragma unroll 1
  for (int s = 0; s < P::NS; ++s) {
    cp_async_wait(P::NS - 1 - s);
    __syncthreads();  // every thread's chunks of slice s have landed
#pragma unroll 2
    for (int kk = 0; kk < P::BK; kk += 8) kstep(s * P::BK + kk);
  }
#pragma unroll 1
  for (int r = 1; r < reps; ++r)
#pragma unroll 2
    for (int k0 = 0; k0 < P::K; k0 += 8) kstep(k0);

  float* c = C + b * P::M * P::N;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) {
      float d[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) d[r] = TWO_ACC ? acc[i][j][r] + acc2[i][j][r] : acc[i][j][r];
      const int row = m0 + i * 16 + g, col = n0 + j * 8 + 2 * t;
      *reinterpret_cast<float2*>(c + size_t(row) * P::N + col) = make_float2(d[0], d[1]);
      *reinterpret_cast<float2*>(c + size_t(row + 8) * P::N + col) = make_float2(d[2], d[3]);
    }
}

// ---------------------------------------------------------------------------------------------
// variants: every (implementation, tile configuration) of a shape

using KernelFn = void (*)(const float*, const float*, float*, int);

struct Variant {
  std::string impl;    // ffma, 3xtf32, 3xtf32-2acc, 1xtf32
  std::string config;  // the tile configuration, in words
  int threads;
  size_t smem;
  double tc_factor;    // tensor-core (or FFMA) FLOPs issued per useful FLOP
  KernelFn kernel;
};

template <class P, int TM, int TN, int KB = 4>
Variant ffma_variant() {
  const int threads = (P::M / TM) * (P::N / TN);
  return {"ffma",
          std::to_string(TM) + "x" + std::to_string(TN) + " per thread, k by " + std::to_string(KB) + ", " +
              std::to_string(threads) + " thr",
          threads, P::SMEM, 1.0, &ffma_product<P, TM, TN, KB>};
}

template <class P, int WM, int WN, Tc MODE>
Variant tc_variant() {
  const char* name = MODE == Tc::x3        ? "3xtf32"
                     : MODE == Tc::x3_2acc ? "3xtf32-2acc"
                     : MODE == Tc::x3_int  ? "3xtf32-int"
                                           : "1xtf32";
  return {name,
          std::to_string(WM) + "x" + std::to_string(WN) + " warps of " + std::to_string(P::M / WM) + "x" +
              std::to_string(P::N / WN),
          WM * WN * 32, P::SMEM, MODE == Tc::x1 ? 1.0 : 3.0, &tc_product<P, WM, WN, MODE>};
}

template <class P, int WM, int WN>
void add_tc(std::vector<Variant>& v) {
  v.push_back(tc_variant<P, WM, WN, Tc::x3>());
  v.push_back(tc_variant<P, WM, WN, Tc::x3_2acc>());
  v.push_back(tc_variant<P, WM, WN, Tc::x3_int>());
  v.push_back(tc_variant<P, WM, WN, Tc::x1>());
}

struct ShapeCase {
  std::string name, role, a_layout;
  int M, N, K;
  bool a_kmajor;
  std::vector<Variant> variants;
};

std::vector<ShapeCase> all_shapes() {
  std::vector<ShapeCase> s;
  {
    using P = ProbQK;
    ShapeCase c{"qk", "q·kᵀ of a chunk (C=64, K=128)", "A [M][K]", P::M, P::N, P::K, P::AK, {}};
    c.variants = {ffma_variant<P, 4, 4>(), ffma_variant<P, 8, 4>(), ffma_variant<P, 4, 8>(), ffma_variant<P, 8, 8>(),
                  ffma_variant<P, 8, 8, 2>()};
    add_tc<P, 2, 2>(c.variants);
    add_tc<P, 4, 2>(c.variants);
    s.push_back(std::move(c));
  }
  {
    using P = ProbQS;
    ShapeCase c{"qs", "q·S, the state as operand (C=64, K=V=128)", "A [M][K]", P::M, P::N, P::K, P::AK, {}};
    c.variants = {ffma_variant<P, 4, 4>(), ffma_variant<P, 8, 4>(), ffma_variant<P, 4, 8>(), ffma_variant<P, 8, 8>(),
                  ffma_variant<P, 8, 8, 2>()};
    add_tc<P, 2, 2>(c.variants);
    add_tc<P, 2, 4>(c.variants);
    s.push_back(std::move(c));
  }
  {
    using P = ProbKV;
    ShapeCase c{"kv", "kᵀ·v, the state update (C=64, K=V=128)", "A = kᵀ, K-major [K][M]", P::M, P::N, P::K, P::AK, {}};
    c.variants = {ffma_variant<P, 8, 4>(), ffma_variant<P, 4, 8>(), ffma_variant<P, 8, 8>(), ffma_variant<P, 8, 8, 2>()};
    add_tc<P, 2, 4>(c.variants);
    add_tc<P, 4, 2>(c.variants);
    s.push_back(std::move(c));
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// measurement

struct Options {
  std::string json_path;
  int batch = 4096, iters = 25, warmup = 3;
  std::vector<int> reps = {1, 8};
  uint64_t seed = 20261218;
  std::vector<std::string> shapes = {"qk", "qs", "kv"};
  std::vector<std::string> impls = {"ffma", "3xtf32", "3xtf32-2acc", "3xtf32-int", "1xtf32"};
};

struct Result {
  std::string shape, impl, config;
  int threads = 0, reps = 1, regs = 0, ctas_per_sm = 0;
  size_t smem = 0, local_bytes = 0;
  double tc_factor = 1;
  std::string status;  // ok, FAIL gross, FAIL nonfinite, not run
  double max_ratio = NAN, rms_ratio = NAN, kcv_bound = NAN;
  unsigned long long nonfinite = 0, argmax = 0;
  bool within_kcv = false;
  double median_ms = NAN, p10_ms = NAN, p90_ms = NAN, min_ms = NAN, max_ms = NAN;
  double useful_tflops = NAN, issued_tflops = NAN, gbps = NAN;
  bool best = false;  // fastest verified configuration of its (shape, impl, reps)
};

struct Run {
  Options opt;
  std::string gpu, command;
  int sm_count = 0, runtime = 0, driver = 0;
  std::vector<Result> results;
  std::vector<std::string> problems;
  bool json_written = false;
};
Run g_run;

std::string json_num(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}
std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if (static_cast<unsigned char>(ch) < 0x20) o += ' ';
    else o += ch;
  }
  return o + "\"";
}

void write_json(int exit_code) {
  if (g_run.opt.json_path.empty() || g_run.json_written) return;
  FILE* f = std::fopen(g_run.opt.json_path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "f32_products: cannot write %s\n", g_run.opt.json_path.c_str());
    return;
  }
  const Options& o = g_run.opt;
  std::fprintf(f, "{\n  \"schema\": \"glr.f32_products/1\",\n  \"gpu\": %s,\n  \"sm_count\": %d,\n", json_str(g_run.gpu).c_str(),
               g_run.sm_count);
  std::fprintf(f, "  \"cuda_runtime\": %d,\n  \"cuda_driver\": %d,\n  \"command\": %s,\n", g_run.runtime, g_run.driver,
               json_str(g_run.command).c_str());
  std::fprintf(f, "  \"batch\": %d,\n  \"iters\": %d,\n  \"warmup\": %d,\n  \"seed\": %llu,\n  \"u\": %s,\n", o.batch,
               o.iters, o.warmup, static_cast<unsigned long long>(o.seed), json_num(kU).c_str());
  std::fprintf(f, "  \"gross_ratio\": %s,\n  \"kcv_bound\": \"2*K*reps (kcv matmul contract, c = 2)\",\n",
               json_num(kGrossRatio).c_str());
  std::fprintf(f,
               "  \"method\": \"ratio = |c - reps*ref| / (u * reps * sum_k |a_ik b_kj|), fp64 reference on the device; "
               "time: CUDA events around one launch after a 256 MiB L2 flush, median of iters after warmup; "
               "useful_tflops = 2*M*N*K*batch*reps / time; issued_tflops = tc_factor * useful (3 for 3xtf32)\",\n");
  std::fprintf(f, "  \"exit_code\": %d,\n  \"problems\": [", exit_code);
  for (size_t i = 0; i < g_run.problems.size(); ++i)
    std::fprintf(f, "%s%s", i ? ", " : "", json_str(g_run.problems[i]).c_str());
  std::fprintf(f, "],\n  \"results\": [\n");
  for (size_t i = 0; i < g_run.results.size(); ++i) {
    const Result& r = g_run.results[i];
    std::fprintf(f,
                 "    {\"shape\": %s, \"impl\": %s, \"config\": %s, \"threads\": %d, \"smem_bytes\": %zu, \"reps\": %d, "
                 "\"regs\": %d, \"local_bytes\": %zu, \"ctas_per_sm\": %d, "
                 "\"status\": %s, \"best\": %s, \"median_ms\": %s, \"p10_ms\": %s, \"p90_ms\": %s, \"min_ms\": %s, "
                 "\"max_ms\": %s, \"useful_tflops\": %s, \"issued_tflops\": %s, \"tc_factor\": %s, \"gbps\": %s, "
                 "\"max_ratio\": %s, \"rms_ratio\": %s, \"argmax\": %llu, \"kcv_bound_ratio\": %s, "
                 "\"within_kcv_bound\": %s, \"nonfinite\": %llu}%s\n",
                 json_str(r.shape).c_str(), json_str(r.impl).c_str(), json_str(r.config).c_str(), r.threads, r.smem,
                 r.reps, r.regs, r.local_bytes, r.ctas_per_sm, json_str(r.status).c_str(), r.best ? "true" : "false", json_num(r.median_ms).c_str(),
                 json_num(r.p10_ms).c_str(), json_num(r.p90_ms).c_str(), json_num(r.min_ms).c_str(),
                 json_num(r.max_ms).c_str(), json_num(r.useful_tflops).c_str(), json_num(r.issued_tflops).c_str(),
                 json_num(r.tc_factor).c_str(), json_num(r.gbps).c_str(), json_num(r.max_ratio).c_str(),
                 json_num(r.rms_ratio).c_str(), r.argmax, json_num(r.kcv_bound).c_str(),
                 r.within_kcv ? "true" : "false", r.nonfinite, i + 1 < g_run.results.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  g_run.json_written = true;
  std::fprintf(stderr, "f32_products: wrote %s\n", g_run.opt.json_path.c_str());
}

void fatal_exit(int code) {
  g_run.problems.push_back("aborted on a CUDA error (see stderr); results up to it are kept");
  write_json(code);
  std::exit(code);
}

/// Device buffers of one shape, freed at scope exit.
struct DeviceBuffers {
  float *A = nullptr, *B = nullptr, *C = nullptr;
  double *ref = nullptr, *mag = nullptr;
  ErrPartial* part = nullptr;
  ~DeviceBuffers() {
    cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(ref), cudaFree(mag), cudaFree(part);
  }
};

cudaError_t launch_raw(const Variant& v, const DeviceBuffers& d, int batch, int reps, cudaStream_t st) {
  const float* a = d.A;
  const float* b = d.B;
  float* c = d.C;
  void* args[] = {&a, &b, &c, &reps};
  return cudaLaunchKernel(reinterpret_cast<const void*>(v.kernel), dim3(batch), dim3(v.threads), args, v.smem, st);
}
void launch(const Variant& v, const DeviceBuffers& d, int batch, int reps, cudaStream_t st) {
  CUDA_CHECK(launch_raw(v, d, batch, reps, st));
}

void measure_shape(ShapeCase& sc, const Options& o, void* flush, size_t flush_bytes, cudaStream_t st) {
  const size_t nA = size_t(o.batch) * sc.M * sc.K, nB = size_t(o.batch) * sc.K * sc.N,
               nC = size_t(o.batch) * sc.M * sc.N;
  DeviceBuffers d;
  CUDA_CHECK(cudaMalloc(&d.A, nA * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d.B, nB * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d.C, nC * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d.ref, nC * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&d.mag, nC * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&d.part, kErrBlocks * sizeof(ErrPartial)));
  const uint64_t shape_seed = mix64(o.seed ^ (uint64_t(sc.M) << 40 | uint64_t(sc.N) << 20 | uint64_t(sc.K)));
  fill_normal<<<2048, 256, 0, st>>>(d.A, nA, mix64(shape_seed ^ 1));
  fill_normal<<<2048, 256, 0, st>>>(d.B, nB, mix64(shape_seed ^ 2));
  CUDA_CHECK(cudaGetLastError());
  if (sc.a_kmajor) reference_products<true><<<4096, 256, 0, st>>>(d.A, d.B, d.ref, d.mag, sc.M, sc.N, sc.K, nC);
  else reference_products<false><<<4096, 256, 0, st>>>(d.A, d.B, d.ref, d.mag, sc.M, sc.N, sc.K, nC);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(st));

  std::vector<ErrPartial> part(kErrBlocks);
  std::vector<cudaEvent_t> ev(2 * size_t(o.iters));
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  const double flops = 2.0 * sc.M * sc.N * double(sc.K) * o.batch;
  const double bytes = 4.0 * (double(nA) + double(nB) + double(nC));

  for (const Variant& v : sc.variants) {
    const void* fn = reinterpret_cast<const void*>(v.kernel);
    cudaFuncAttributes attr{};
    int ctas_per_sm = 0;
    cudaError_t setup = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(v.smem));
    if (setup == cudaSuccess) setup = cudaFuncGetAttributes(&attr, fn);
    if (setup == cudaSuccess) setup = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, fn, v.threads, v.smem);
    for (int reps : o.reps) {
      Result r;
      r.shape = sc.name, r.impl = v.impl, r.config = v.config, r.threads = v.threads, r.reps = reps;
      r.smem = v.smem, r.tc_factor = v.tc_factor, r.kcv_bound = 2.0 * sc.K * reps;
      r.regs = attr.numRegs, r.local_bytes = attr.localSizeBytes, r.ctas_per_sm = ctas_per_sm;
      // verify: NaN prefill (0xff bytes), so that an element never written shows as non-finite
      CUDA_CHECK(cudaMemsetAsync(d.C, 0xff, nC * sizeof(float), st));
      const cudaError_t le = setup != cudaSuccess ? setup : launch_raw(v, d, o.batch, reps, st);
      if (le != cudaSuccess) {  // a configuration the device refuses (resources): recorded, not fatal
        (void)cudaGetLastError();
        r.status = std::string("FAIL launch: ") + cudaGetErrorName(le);
        g_run.problems.push_back(sc.name + " " + v.impl + " [" + v.config + "]: " + r.status);
        std::fprintf(stderr, "  %-3s %-12s %-32s reps %d: %s\n", sc.name.c_str(), v.impl.c_str(), v.config.c_str(),
                     reps, r.status.c_str());
        g_run.results.push_back(r);
        continue;
      }
      error_stats<<<kErrBlocks, kErrThreads, 0, st>>>(d.C, d.ref, d.mag, double(reps), nC, d.part);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaMemcpyAsync(part.data(), d.part, kErrBlocks * sizeof(ErrPartial), cudaMemcpyDeviceToHost, st));
      CUDA_CHECK(cudaStreamSynchronize(st));
      double mx = -1, sq = 0;
      for (const ErrPartial& p : part) {
        if (p.max_ratio > mx) mx = p.max_ratio, r.argmax = p.argmax;
        sq += p.sum_sq;
        r.nonfinite += p.nonfinite;
      }
      r.max_ratio = mx, r.rms_ratio = std::sqrt(sq / double(nC - std::min<size_t>(nC, r.nonfinite)));
      r.within_kcv = r.nonfinite == 0 && r.max_ratio <= r.kcv_bound;
      if (r.nonfinite) {
        r.status = "FAIL nonfinite";
        g_run.problems.push_back(sc.name + " " + v.impl + " [" + v.config + "] reps " + std::to_string(reps) + ": " +
                                 std::to_string(r.nonfinite) + " non-finite outputs");
      } else if (!(r.max_ratio <= kGrossRatio)) {
        r.status = "FAIL gross";
        const unsigned long long e = r.argmax;
        char where[160];
        std::snprintf(where, sizeof where, " at product %llu, row %llu, col %llu",
                      e / (unsigned long long)(sc.M * sc.N), (e / sc.N) % sc.M, e % sc.N);
        g_run.problems.push_back(sc.name + " " + v.impl + " [" + v.config + "] reps " + std::to_string(reps) +
                                 ": max ratio " + json_num(r.max_ratio) + " > gross bound " + json_num(kGrossRatio) +
                                 where);
      } else {
        r.status = "ok";
      }
      if (r.status == "ok") {  // time only what passed
        for (int w = 0; w < o.warmup; ++w) launch(v, d, o.batch, reps, st);
        for (int it = 0; it < o.iters; ++it) {
          CUDA_CHECK(cudaMemsetAsync(flush, it & 0xff, flush_bytes, st));  // L2 flush, not timed
          CUDA_CHECK(cudaEventRecord(ev[2 * it], st));
          launch(v, d, o.batch, reps, st);
          CUDA_CHECK(cudaEventRecord(ev[2 * it + 1], st));
        }
        CUDA_CHECK(cudaStreamSynchronize(st));
        std::vector<double> ms(o.iters);
        for (int it = 0; it < o.iters; ++it) {
          float t = 0;
          CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * it], ev[2 * it + 1]));
          ms[it] = t;
        }
        std::sort(ms.begin(), ms.end());
        const int n = o.iters;
        r.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
        r.p10_ms = ms[size_t(0.1 * (n - 1) + 0.5)], r.p90_ms = ms[size_t(0.9 * (n - 1) + 0.5)];
        r.min_ms = ms.front(), r.max_ms = ms.back();
        r.useful_tflops = flops * reps / (r.median_ms * 1e-3) / 1e12;
        r.issued_tflops = r.useful_tflops * v.tc_factor;
        r.gbps = bytes / (r.median_ms * 1e-3) / 1e9;
        if (!std::isfinite(r.median_ms) || r.median_ms <= 0) {
          r.status = "FAIL timing";
          g_run.problems.push_back(sc.name + " " + v.impl + " [" + v.config + "]: non-finite timing");
        }
      }
      std::fprintf(stderr, "  %-3s %-12s %-32s reps %d: %-14s max %-9s rms %-9s median %s ms\n", sc.name.c_str(),
                   v.impl.c_str(), v.config.c_str(), reps, r.status.c_str(), json_num(r.max_ratio).c_str(),
                   json_num(r.rms_ratio).c_str(), json_num(r.median_ms).c_str());
      g_run.results.push_back(r);
    }
  }
  for (auto& e : ev) CUDA_CHECK(cudaEventDestroy(e));
}

/// Marks, per (shape, impl, reps), the fastest configuration that passed.
void mark_best() {
  for (size_t i = 0; i < g_run.results.size(); ++i) {
    Result& r = g_run.results[i];
    if (r.status != "ok") continue;
    bool best = true;
    for (const Result& q : g_run.results)
      if (&q != &r && q.status == "ok" && q.shape == r.shape && q.impl == r.impl && q.reps == r.reps &&
          q.median_ms < r.median_ms)
        best = false;
    r.best = best;
  }
}

void print_tables(const std::vector<ShapeCase>& shapes, const Options& o) {
  std::printf("\n## glr chunk products at f32: FFMA vs split-operand tensor cores (%s, %d SMs)\n\n", g_run.gpu.c_str(),
              g_run.sm_count);
  std::printf("batch %d products per launch (one per CTA), inputs N(0,1) fp32, median of %d after %d warm-up, "
              "L2 flushed before each.\n", o.batch, o.iters, o.warmup);
  std::printf("ratio = |err| / (u·Σ_k|a_ik b_kj|), u = 2^-24; kcv's f32 matmul bound is ratio ≤ 2·K·reps. "
              "TFLOP/s useful = 2·M·N·K per product (3xtf32 issues 3x that on the tensor cores: 'issued').\n");
  std::printf("reps 1: global → smem → global, the whole product; reps %s: the product accumulated from the same "
              "smem operands (compute only).\n\n", o.reps.size() > 1 ? std::to_string(o.reps.back()).c_str() : "-");
  std::printf("| shape | impl | best config | reps | median µs | useful TFLOP/s | issued TFLOP/s | GB/s | max ratio | "
              "rms ratio | kcv bound | fp32-accurate |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const ShapeCase& sc : shapes)
    for (int reps : o.reps)
      for (const char* impl : {"ffma", "3xtf32", "3xtf32-2acc", "3xtf32-int", "1xtf32"}) {
        const Result* best = nullptr;
        const Result* any = nullptr;
        for (const Result& r : g_run.results)
          if (r.shape == sc.name && r.impl == impl && r.reps == reps) {
            if (!any) any = &r;
            if (r.best) best = &r;
          }
        if (!any) continue;
        const Result& r = best ? *best : *any;
        std::printf("| %s %dx%dx%d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", sc.name.c_str(), sc.M,
                    sc.N, sc.K, impl, r.config.c_str(), reps, best ? json_num(r.median_ms * 1e3).c_str() : r.status.c_str(),
                    json_num(r.useful_tflops).c_str(), json_num(r.issued_tflops).c_str(), json_num(r.gbps).c_str(),
                    json_num(r.max_ratio).c_str(), json_num(r.rms_ratio).c_str(), json_num(r.kcv_bound).c_str(),
                    r.within_kcv ? "yes" : "NO");
      }
  std::printf("\nSpeed-up of the fastest fp32-accurate tensor-core product over FFMA (best configs, median time; "
              "> 1: 3xtf32 faster):\n\n");
  std::printf("| shape | reps | ffma µs | best 3xtf32 µs (variant) | ffma / 3xtf32 |\n|---|---|---|---|---|\n");
  for (const ShapeCase& sc : shapes)
    for (int reps : o.reps) {
      const Result *f = nullptr, *t = nullptr;
      for (const Result& r : g_run.results) {
        if (r.shape != sc.name || r.reps != reps || !r.best) continue;
        if (r.impl == "ffma") f = &r;
        if (r.impl.rfind("3xtf32", 0) == 0 && r.within_kcv && (!t || r.median_ms < t->median_ms)) t = &r;
      }
      std::printf("| %s | %d | %s | %s (%s) | %s |\n", sc.name.c_str(), reps, f ? json_num(f->median_ms * 1e3).c_str() : "-",
                  t ? json_num(t->median_ms * 1e3).c_str() : "-", t ? t->impl.c_str() : "none accurate",
                  f && t ? json_num(f->median_ms / t->median_ms).c_str() : "-");
    }
  std::printf("\nAll configurations (verified, then timed):\n\n| shape | impl | config | regs | CTAs/SM | reps | status | "
              "median µs | useful TFLOP/s | max ratio | rms ratio |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Result& r : g_run.results)
    std::printf("| %s | %s | %s | %d%s | %d | %d | %s | %s | %s | %s | %s |\n", r.shape.c_str(), r.impl.c_str(),
                r.config.c_str(), r.regs, r.local_bytes ? (" +" + std::to_string(r.local_bytes) + " B local").c_str() : "",
                r.ctas_per_sm, r.reps, r.status.c_str(), json_num(r.median_ms * 1e3).c_str(),
                json_num(r.useful_tflops).c_str(), json_num(r.max_ratio).c_str(), json_num(r.rms_ratio).c_str());
}

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [JSON_PATH] [--batch N] [--iters N (>= 20)] [--warmup N] [--reps 1,8] [--seed S] "
               "[--shapes qk,qs,kv] [--impls ffma,3xtf32,3xtf32-2acc,3xtf32-int,1xtf32]\n",
               argv0);
  return 2;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    const size_t q = s.find(',', p);
    out.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options& o = g_run.opt;
  for (int i = 0; i < argc; ++i) g_run.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "f32_products: %s needs a value\n", a.c_str());
        std::exit(usage(argv[0]));
      }
      return argv[++i];
    };
    try {
      if (a == "--batch") o.batch = std::stoi(value());
      else if (a == "--iters") o.iters = std::stoi(value());
      else if (a == "--warmup") o.warmup = std::stoi(value());
      else if (a == "--seed") o.seed = std::stoull(value());
      else if (a == "--reps") {
        o.reps.clear();
        for (const std::string& r : split_commas(value())) o.reps.push_back(std::stoi(r));
      } else if (a == "--shapes") o.shapes = split_commas(value());
      else if (a == "--impls") o.impls = split_commas(value());
      else if (a == "-h" || a == "--help") return usage(argv[0]), 0;
      else if (a.rfind("--", 0) != 0 && o.json_path.empty()) o.json_path = a;
      else {
        std::fprintf(stderr, "f32_products: unknown argument %s\n", a.c_str());
        return usage(argv[0]);
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "f32_products: bad value for %s\n", a.c_str());
      return usage(argv[0]);
    }
  }
  if (o.batch < 1 || o.iters < 20 || o.warmup < 0 || o.reps.empty()) {
    std::fprintf(stderr, "f32_products: need batch >= 1, iters >= 20, warmup >= 0, reps non-empty\n");
    return usage(argv[0]);
  }
  for (int r : o.reps)
    if (r < 1 || r > 1024) return std::fprintf(stderr, "f32_products: reps in 1..1024\n"), usage(argv[0]);

  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  g_run.gpu = prop.name, g_run.sm_count = prop.multiProcessorCount;
  CUDA_CHECK(cudaRuntimeGetVersion(&g_run.runtime));
  CUDA_CHECK(cudaDriverGetVersion(&g_run.driver));
  std::fprintf(stderr, "f32_products: %s, %d SMs, cc %d.%d, runtime %d, driver %d\n", prop.name,
               prop.multiProcessorCount, prop.major, prop.minor, g_run.runtime, g_run.driver);
  if (prop.major != 9) {
    std::fprintf(stderr, "f32_products: built for sm_90a; this device is cc %d.%d\n", prop.major, prop.minor);
    g_run.problems.push_back("device is not sm_90");
    write_json(2);
    return 2;
  }

  std::vector<ShapeCase> shapes;
  for (ShapeCase& sc : all_shapes())
    if (std::find(o.shapes.begin(), o.shapes.end(), sc.name) != o.shapes.end()) {
      std::erase_if(sc.variants, [&](const Variant& v) {
        return std::find(o.impls.begin(), o.impls.end(), v.impl) == o.impls.end();
      });
      if (!sc.variants.empty()) shapes.push_back(std::move(sc));
    }
  if (shapes.empty()) return std::fprintf(stderr, "f32_products: no known shape or implementation selected\n"), usage(argv[0]);

  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const size_t flush_bytes = size_t(256) << 20;  // > 4x the H200's 60 MiB L2
  void* flush = nullptr;
  CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  for (ShapeCase& sc : shapes) {
    std::fprintf(stderr, "shape %s: [%d x %d]·[%d x %d], %s, batch %d\n", sc.name.c_str(), sc.M, sc.K, sc.K, sc.N,
                 sc.a_layout.c_str(), o.batch);
    measure_shape(sc, o, flush, flush_bytes, st);
  }
  CUDA_CHECK(cudaFree(flush));
  CUDA_CHECK(cudaStreamDestroy(st));
  mark_best();

  // accuracy classes: ffma and 3xtf32 must sit inside kcv's bound, 1xtf32 outside it
  bool gross = false, unexpected = false;
  for (const Result& r : g_run.results) {
    if (r.status != "ok") {
      gross = true;
      continue;
    }
    const bool want_accurate = r.impl != "1xtf32";
    if (r.within_kcv != want_accurate) {
      unexpected = true;
      g_run.problems.push_back("UNEXPECTED accuracy: " + r.shape + " " + r.impl + " [" + r.config + "] reps " +
                               std::to_string(r.reps) + ": max ratio " + json_num(r.max_ratio) +
                               (want_accurate ? " > " : " <= ") + "kcv bound " + json_num(r.kcv_bound));
    }
  }
  print_tables(shapes, o);
  const int rc = gross ? 1 : unexpected ? 3 : 0;
  std::printf("\n");
  for (const std::string& p : g_run.problems) std::printf("- PROBLEM: %s\n", p.c_str());
  std::printf("RESULT: %s (exit %d)\n",
              rc == 0   ? "every result finite and sane; ffma/3xtf32 within kcv's f32 bound, 1xtf32 outside"
              : rc == 1 ? "a result was non-finite or beyond the gross bound"
                        : "sane, but an accuracy class was not the expected one",
              rc);
  write_json(rc);
  return rc;
}
