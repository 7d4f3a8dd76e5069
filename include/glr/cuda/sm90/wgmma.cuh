/// glr CUDA family, sm90 — warpgroup MMA (`wgmma.mma_async`, PTX ISA "Asynchronous Warpgroup Level
/// Matrix Multiply-Accumulate Instructions") as inline PTX: the fences, commit/wait, and
/// m64nNk16 with fp32 accumulators for f16 and bf16 operands, N = 64 and 128, in the SS form (A and B
/// in shared memory, through descriptors) and the RS form (A in registers, B in shared memory); A
/// K-major or M-major (imm-trans-a, SS form), B K-major or N-major (imm-trans-b).
/// The operand layouts, descriptors and register fragment maps (which thread holds which element):
/// wgmma_desc.hpp, checked without a GPU by glr_wgmma_tests; the instructions themselves by
/// glr_cuda_tests' GlrCudaSm90Wgmma.* on an H200 (not yet run: bench/results/glr-fwd-split.md, Session 26).
///
/// Every instruction here exists only in the sm_90a device pass (GLR_SM90A_DEVICE: wgmma is not in
/// plain sm_90 nor in sm_100a); in any other device pass each helper is a trap, so a file that
/// includes this still compiles for sm_100a, and the caller checks the device (compute capability 9.0)
/// before launching a kernel that uses it.
///
/// Use, by all 128 threads of a warpgroup (4 consecutive warps from a warp index divisible by 4):
///   operands in shared memory written by ordinary stores → fence_proxy_async() in every writer, then
///   a barrier; fence(); mma_ss/mma_rs ...; commit_group(); wait_group<0>(); fence_operands(d);
/// then d[i] is element (acc_row(t, i), acc_col(t, i)) of the 64 × N tile, t = thread in warpgroup.
/// NOTES: `accumulate` false is scale-d = 0 (D = A·B, the registers' old values ignored). The
/// fence_operands after the wait keeps the compiler from reading the accumulators before it: the
/// registers are the asm's outputs, but nothing else ties their later uses to the wait.
#pragma once

#include <cstdint>

#include "glr/cuda/sm90/wgmma_desc.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GLR_SM90A_DEVICE 1
#endif

#if defined(GLR_SM90A_DEVICE)
#define GLR_WGMMA_OR_TRAP(...) __VA_ARGS__
#elif defined(__CUDA_ARCH__)
#define GLR_WGMMA_OR_TRAP(...) asm volatile("trap;")
#else
#define GLR_WGMMA_OR_TRAP(...)
#endif

// The accumulator operand lists of the asm statements below ({%0, ..., %N/2-1} and their "+f"
// bindings), written out for N = 64 and 128.
#define GLR_WGMMA_D64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define GLR_WGMMA_D64_OPS(d) \
      "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define GLR_WGMMA_D128 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"  \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"  \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define GLR_WGMMA_D128_OPS(d) \
      "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

namespace glr::cuda::sm90::wgmma {

/// The 16-bit operand type: selects `.f16.f16` or `.bf16.bf16`.
enum class Ab { f16, bf16 };

/// Shared-window address of a pointer into shared memory (what a descriptor's start address holds).
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

/// Every thread that wrote operands with ordinary stores, before the barrier ahead of the MMAs
/// (the tensor core reads shared memory through the async proxy). Plain sm_90: no guard.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// wgmma.fence.sync.aligned: before the first MMA, and whenever the accumulator or A registers were
/// touched by other instructions since the last one.
__device__ __forceinline__ void fence() { GLR_WGMMA_OR_TRAP(asm volatile("wgmma.fence.sync.aligned;" ::: "memory")); }

/// wgmma.commit_group.sync.aligned: the MMAs issued since the last commit become one group.
__device__ __forceinline__ void commit_group() {
  GLR_WGMMA_OR_TRAP(asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"));
}

/// wgmma.wait_group.sync.aligned N: wait until at most N groups are pending.
template <int N>
__device__ __forceinline__ void wait_group() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group: 0..7 pending groups");
  GLR_WGMMA_OR_TRAP(asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"));
}

/// Ties later uses of the accumulators to this point in the instruction stream (after wait_group).
template <int R>
__device__ __forceinline__ void fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// D[64 × N] (+)= A[64 × 16] · B[16 × N], fp32 accumulators, A K-major (TransA false) or M-major (TransA
/// true, imm-trans-a = 1) in shared memory, B K-major (TransB false) or N-major (TransB true, imm-trans-b = 1)
/// in shared memory (descriptors of wgmma_desc.hpp: sw128_desc, core_desc; mn_sw128_desc for an M-major A
/// or N-major B). d: N/2 registers a thread.
template <int N, Ab T, bool TransB = false, bool TransA = false>
__device__ __forceinline__ void mma_ss(float (&d)[N / 2], uint64_t a_desc, uint64_t b_desc, bool accumulate) {
  static_assert(N == 64 || N == 128, "glr sm90 wgmma: N = 64 or 128");
  const int scale_d = accumulate ? 1 : 0;
#if defined(GLR_SM90A_DEVICE)
  // scale-d as a predicate; imm-scale-a = imm-scale-b = 1; imm-trans-a; imm-trans-b.
  if constexpr (N == 64 && T == Ab::bf16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " GLR_WGMMA_D64 ", %32, %33, p, 1, 1, %36, %35;\n}\n"
                 : GLR_WGMMA_D64_OPS(d)
                 : "l"(a_desc), "l"(b_desc), "r"(scale_d), "n"(int(TransB)), "n"(int(TransA)));
  else if constexpr (N == 64 && T == Ab::f16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " GLR_WGMMA_D64 ", %32, %33, p, 1, 1, %36, %35;\n}\n"
                 : GLR_WGMMA_D64_OPS(d)
                 : "l"(a_desc), "l"(b_desc), "r"(scale_d), "n"(int(TransB)), "n"(int(TransA)));
  else if constexpr (N == 128 && T == Ab::bf16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " GLR_WGMMA_D128 ", %64, %65, p, 1, 1, %68, %67;\n}\n"
                 : GLR_WGMMA_D128_OPS(d)
                 : "l"(a_desc), "l"(b_desc), "r"(scale_d), "n"(int(TransB)), "n"(int(TransA)));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " GLR_WGMMA_D128 ", %64, %65, p, 1, 1, %68, %67;\n}\n"
                 : GLR_WGMMA_D128_OPS(d)
                 : "l"(a_desc), "l"(b_desc), "r"(scale_d), "n"(int(TransB)), "n"(int(TransA)));
#else
  (void)d, (void)a_desc, (void)b_desc, (void)scale_d;
  GLR_WGMMA_OR_TRAP();
#endif
}

/// D[64 × N] (+)= A[64 × 16] · B[16 × N] with A in registers: a[j] packs elements 2j (low half) and
/// 2j+1 of the thread's A fragment (a_row, a_col of wgmma_desc.hpp); B in shared memory, K-major
/// (TransB false) or N-major (TransB true).
template <int N, Ab T, bool TransB = false>
__device__ __forceinline__ void mma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b_desc, bool accumulate) {
  static_assert(N == 64 || N == 128, "glr sm90 wgmma: N = 64 or 128");
  const int scale_d = accumulate ? 1 : 0;
#if defined(GLR_SM90A_DEVICE)
  // scale-d as a predicate; imm-scale-a = imm-scale-b = 1; imm-trans-b.
  if constexpr (N == 64 && T == Ab::bf16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " GLR_WGMMA_D64
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 : GLR_WGMMA_D64_OPS(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d), "n"(int(TransB)));
  else if constexpr (N == 64 && T == Ab::f16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " GLR_WGMMA_D64
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 : GLR_WGMMA_D64_OPS(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d), "n"(int(TransB)));
  else if constexpr (N == 128 && T == Ab::bf16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " GLR_WGMMA_D128
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
                 : GLR_WGMMA_D128_OPS(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d), "n"(int(TransB)));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " GLR_WGMMA_D128
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
                 : GLR_WGMMA_D128_OPS(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(scale_d), "n"(int(TransB)));
#else
  (void)d, (void)a, (void)b_desc, (void)scale_d;
  GLR_WGMMA_OR_TRAP();
#endif
}

}  // namespace glr::cuda::sm90::wgmma
