/* matmul_tf32_large_k.cu: negative error-model control for the matmul contract, cuda backend.
 *
 * BUG: a precision heuristic (issue 21 item 3): plain fp32 for K < 1000, TF32 operands
 * (cvt.rna.tf32.f32 when staged into shared memory) for K >= 1000, where TF32 pays. Products and
 * the sum over k are fp32 (an fmaf chain). At the nominal K = 128 it is matmul_ok.cu; at K >= 1000
 * its error sits inside the worst-case bound (0.006 of it at K = 16384) but far outside the
 * population test's spread of fp32 rounding on random inputs (docs/population-test.md).
 * Expected: FAIL; gate shapes must fail (K = 1000..1023, 4096, 16384), numerics must pass.
 */
#include <kcv/abi.h>

#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The ABI's clean refusal: a message in call->error, a non-zero return. */
static int refuse(const kcv_call* call, const char* fmt, ...) {
  if (call && call->error && call->error_len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call->error, (size_t)call->error_len, fmt, ap);
    va_end(ap);
  }
  return 1;
}

/* The call's header: ABI version and argument counts. */
static int check_call(const kcv_call* call, int n_in, int n_out, int n_sc) {
  if (!call) return 1;
  if (call->abi_version != KCV_ABI_VERSION)
    return refuse(call, "ABI version %d, this candidate speaks %d", (int)call->abi_version, KCV_ABI_VERSION);
  if (call->n_inputs != n_in || call->n_outputs != n_out || call->n_scalars != n_sc)
    return refuse(call, "expected %d inputs, %d outputs, %d scalars; got %d, %d, %d", n_in, n_out, n_sc,
                  (int)call->n_inputs, (int)call->n_outputs, (int)call->n_scalars);
  if ((n_in && !call->inputs) || (n_out && !call->outputs) || (n_sc && !call->scalars))
    return refuse(call, "null inputs, outputs or scalars array");
  return 0;
}

/* One tensor argument: f32, the expected rank, non-negative extents, data unless empty. */
static int check_f32(const kcv_call* call, const kcv_tensor* t, const char* name, int ndim) {
  if (t->dtype != KCV_F32) return refuse(call, "%s: dtype %d, only f32 is supported", name, (int)t->dtype);
  if (t->ndim != ndim) return refuse(call, "%s: rank %d, expected %d", name, (int)t->ndim, ndim);
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) {
    if (t->shape[d] < 0) return refuse(call, "%s: negative extent in dim %d", name, d);
    n *= t->shape[d];
  }
  if (n > 0 && !t->data) return refuse(call, "%s: null data", name);
  return 0;
}

/* After enqueueing: a launch that failed (bad configuration, no device, ...) is reported, never
   hidden. cudaGetLastError also clears a non-sticky error, so the next call starts clean. */
static int launch_status(const kcv_call* call, const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return refuse(call, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return 0;
}

/* One matmul call, unpacked: A[M,K], B[K,N] -> C[M,N] (device pointers), strides in elements
   (any sign). */
typedef struct {
  const float* A;
  const float* B;
  float* C;
  int64_t M, K, N;
  int64_t sa0, sa1, sb0, sb1, sc0, sc1;
  cudaStream_t stream;
} matmul_args;

static int matmul_unpack(const kcv_call* call, matmul_args* a) {
  memset(a, 0, sizeof *a);
  int rc = check_call(call, 2, 1, 0);
  if (rc) return rc;
  const kcv_tensor* A = &call->inputs[0];
  const kcv_tensor* B = &call->inputs[1];
  const kcv_tensor* C = &call->outputs[0];
  if ((rc = check_f32(call, A, "A", 2)) || (rc = check_f32(call, B, "B", 2)) || (rc = check_f32(call, C, "C", 2)))
    return rc;
  if (B->shape[0] != A->shape[1] || C->shape[0] != A->shape[0] || C->shape[1] != B->shape[1])
    return refuse(call, "shapes do not compose: A[%lld,%lld] B[%lld,%lld] C[%lld,%lld]", (long long)A->shape[0],
                  (long long)A->shape[1], (long long)B->shape[0], (long long)B->shape[1], (long long)C->shape[0],
                  (long long)C->shape[1]);
  a->A = (const float*)A->data;
  a->B = (const float*)B->data;
  a->C = (float*)C->data;
  a->M = A->shape[0];
  a->K = A->shape[1];
  a->N = B->shape[1];
  a->sa0 = A->stride[0];
  a->sa1 = A->stride[1];
  a->sb0 = B->stride[0];
  a->sb1 = B->stride[1];
  a->sc0 = C->stride[0];
  a->sc1 = C->stride[1];
  a->stream = (cudaStream_t)call->stream;
  return 0;
}

/* NOTES: a 16 x 16 tile of C per block, one element per thread; K walked in steps of 16 through
   shared memory. Each C element is one fp32 fmaf chain over k = 0, 1, ..., K-1 (a fixed order:
   bitwise deterministic); plain SIMT fp32, no tensor cores (TF32 only as the bug's rounded operands).
   Tiles beyond the grid are taken by grid-stride loops, uniform per block (the barriers inside stay
   legal). */
constexpr int kTile = 16;
constexpr int64_t kMaxGrid = 65535;  // gridDim.y's limit, used for both dimensions

static dim3 tile_grid(int64_t M, int64_t N) {
  const int64_t tm = (M + kTile - 1) / kTile, tn = (N + kTile - 1) / kTile;
  return dim3((unsigned)(tn < kMaxGrid ? tn : kMaxGrid), (unsigned)(tm < kMaxGrid ? tm : kMaxGrid));
}

/* v rounded to TF32, kept in an fp32 register. The mask clears the 13 low bits whatever the
   hardware leaves there; a NaN is passed through untouched (masking could turn one into Inf). */
__device__ __forceinline__ float to_tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
  return v != v ? v : __uint_as_float(r & 0xffffe000u);
}

__global__ void __launch_bounds__(kTile * kTile)
    matmul_tiled_tf32(const float* __restrict__ A, int64_t sa0, int64_t sa1, const float* __restrict__ B,
                      int64_t sb0, int64_t sb1, float* __restrict__ C, int64_t sc0, int64_t sc1, int64_t M, int64_t K,
                      int64_t N, bool tf32) {
  __shared__ float As[kTile][kTile];  // [BM, BK], TF32 values when tf32
  __shared__ float Bs[kTile][kTile];  // [BK, BN], TF32 values when tf32
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t tiles_m = (M + kTile - 1) / kTile, tiles_n = (N + kTile - 1) / kTile;
  for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y)
    for (int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
      const int64_t i = tm * kTile + ty, j = tn * kTile + tx;
      float acc = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += kTile) {
        // the bug: operands rounded to TF32 when tf32 (K >= 1000)
        const float a = (i < M && k0 + tx < K) ? A[i * sa0 + (k0 + tx) * sa1] : 0.0f;
        const float b = (k0 + ty < K && j < N) ? B[(k0 + ty) * sb0 + j * sb1] : 0.0f;
        As[ty][tx] = tf32 ? to_tf32(a) : a;
        Bs[ty][tx] = tf32 ? to_tf32(b) : b;
        __syncthreads();
        const int kn = K - k0 < kTile ? (int)(K - k0) : kTile;
        for (int kk = 0; kk < kn; ++kk) acc = fmaf(As[ty][kk], Bs[kk][tx], acc);
        __syncthreads();
      }
      if (i < M && j < N) C[i * sc0 + j * sc1] = acc;
    }
}

KCV_EXPORT int kcv_run(const kcv_call* call) {
  matmul_args a;
  int rc = matmul_unpack(call, &a);
  if (rc) return rc;
  if (a.M == 0 || a.N == 0) return 0;
  matmul_tiled_tf32<<<tile_grid(a.M, a.N), dim3(kTile, kTile), 0, a.stream>>>(a.A, a.sa0, a.sa1, a.B, a.sb0, a.sb1,
                                                                               a.C, a.sc0, a.sc1, a.M, a.K, a.N,
                                                                               a.K >= 1000);
  return launch_status(call, "matmul_tiled_tf32");
}
