/// glr CUDA family, sm100 — the TMA half of sm100_glr_bwd's operand pipeline: the tensor maps
/// (encoded on the host through the driver entry point, no -lcuda link), the mbarrier and
/// cp.async.bulk.tensor instructions, and the one routine that issues an item's boxes into a ring
/// slot. Nothing here is Blackwell-only: TMA and transaction-count mbarriers exist from sm_90, so
/// glr/tests/sm100/tma_check.cu runs this exact code on the H200 (ctest tmem.tma_on_gpu), while the
/// tcgen05 half (tcgen05.cuh) needs sm_100a.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums only: the encoder comes from the driver at run time
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "glr/cuda/sm100/pipeline.hpp"
#include "glr/cuda/sm100/umma_desc.hpp"

namespace glr::cuda::sm100 {

/// cuTensorMapEncodeTiled from the driver through the runtime (no -lcuda link), once per process;
/// null when the driver does not give it.
inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

/// The tensor map of one operand, [rows, H, D] 16-bit with D contiguous, boxes of kBoxCols × 1 ×
/// chunk (TMA writes a box row-major: row r of group g at g · rows · 16 + 16 r, tile_offset). False
/// when the base is not 16-byte aligned, the arguments break the encoder's rules (tma_spec_valid)
/// or the driver refuses.
template <class E>
inline bool tma_encode(CUtensorMap* m, const void* base, int64_t D, int64_t H, int64_t rows, int chunk) {
  static_assert(sizeof(E) == 2, "16-bit operands");
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_tiled();
  const TmaSpec t = tma_spec(D, H, rows, chunk, int(sizeof(E)));  // checked on the CPU: tmem.Pipeline
  if (!encode || reinterpret_cast<uintptr_t>(base) % 16 != 0 || !tma_spec_valid(t, int(sizeof(E)))) return false;
  const cuuint64_t dims[3] = {t.dims[0], t.dims[1], t.dims[2]};
  const cuuint64_t strides[2] = {t.strides[0], t.strides[1]};
  const cuuint32_t box[3] = {t.box[0], t.box[1], t.box[2]};
  const cuuint32_t elem[3] = {t.elem_strides[0], t.elem_strides[1], t.elem_strides[2]};
  const CUtensorMapDataType dt =
      std::is_same<E, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(m, dt, 3, const_cast<void*>(base), dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t mbar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mbar), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t mbar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n\t}" ::"r"(mbar),
      "r"(parity)
      : "memory");
}
/// One probe of the same (for a bounded wait in a check; the kernel uses mbar_wait).
__device__ __forceinline__ bool mbar_test(uint32_t mbar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(mbar), "r"(parity)
      : "memory");
  return done != 0;
}
/// One thread: one arrival on the mbarrier (count 1: completes the phase).
__device__ __forceinline__ void mbar_arrive(uint32_t mbar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(mbar) : "memory");
}
/// One thread: one arrival that also expects `bytes` of asynchronous transactions (TMA) in this
/// phase; the phase completes when the arrivals are in and the bytes have landed.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t mbar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mbar), "r"(bytes) : "memory");
}
/// One thread: TMA tile load of the box at coordinates (x, y, z) of the 3-D tensor map `map` (a
/// generic address of a __grid_constant__ parameter) into shared memory at `dst`; its bytes
/// complete_tx on `mbar`.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* map, uint32_t mbar, int32_t x, int32_t y,
                                            int32_t z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(mbar), "r"(x), "r"(y), "r"(z)
      : "memory");
}
/// Generic-proxy writes to shared memory become visible to the async proxy (TMA, tensor core).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/// One thread: one item into the ring slot at `slot` (shared address): expect_tx of the item's
/// bytes on `full`, then per group g of kBoxCols columns a box of `ma` (the A operand, [kMmaM
/// rows, 32]) at slot + g·tile_lbo(kMmaM) and one of `mb` (the B operand, [kCM rows, 32]) at slot
/// + kOperandABytes + g·tile_lbo(kCM), at columns col0 + g·kBoxCols, head h, rows r0 .. r0+chunk−1.
__device__ __forceinline__ void tma_load_item(uint32_t slot, uint32_t full, const CUtensorMap* ma,
                                              const CUtensorMap* mb, int chunk, int32_t col0, int32_t h, int32_t r0) {
  mbar_arrive_expect_tx(full, pipe_tx_bytes(chunk));
#pragma unroll
  for (int g = 0; g < kBK / kBoxCols; ++g) {
    tma_load_3d(slot + uint32_t(g) * tile_lbo(kMmaM), ma, full, col0 + g * kBoxCols, h, r0);
    tma_load_3d(slot + uint32_t(kOperandABytes) + uint32_t(g) * tile_lbo(kCM), mb, full, col0 + g * kBoxCols, h, r0);
  }
}

#endif  // __CUDA_ARCH__ >= 900

}  // namespace glr::cuda::sm100
