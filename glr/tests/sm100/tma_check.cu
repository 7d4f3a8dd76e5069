// ctest tmem.tma_on_gpu — the TMA half of the sm100 backward's operand pipeline, executed on any
// GPU with TMA (compute capability ≥ 9.0: the H200 runs it; no Blackwell needed): the host's
// tensor maps (tma_encode) and the kernel's own routine that loads an item into a ring slot
// (tma_load_item, include/glr/cuda/sm100/tma.cuh), into one slot reused item after item (full
// barrier parities 0, 1, 0, …), each wait bounded. It checks what the CPU tests can only emulate:
// the driver accepts the maps; the boxes land where tile_offset says (so the MMA's canonical
// layout holds); columns past D and rows past the tensor come in as zeros; rows ≥ the chunk of
// the A operand stay zero; and the expect_tx byte count (pipe_tx_bytes, out-of-bounds bytes
// included) is exactly what the boxes deliver — a wrong count would hang the backward; here it
// is a FAIL with the item's number. Without a GPU of CC ≥ 9.0 it prints "SKIP: <why>" and exits 0.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "glr/cuda/sm100/pipeline.hpp"
#include "glr/cuda/sm100/tma.cuh"
#include "glr/cuda/sm100/umma_desc.hpp"

namespace s1 = glr::cuda::sm100;

namespace {

struct Item {
  int col0, h, r0;
};
constexpr int kMaxItems = 8;
struct Items {
  Item it[kMaxItems];
  int n;
};

/// One CTA: items into one ring slot in turn, each copied out after its full-barrier phase;
/// status[i] = 1 when item i's phase completed within the bound, 0 if not (then the rest stop).
/// extra_tx: bytes expected on top of the item's (the negative control: the phase must not complete).
__global__ void fill_slot(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb, int chunk,
                          Items items, uint32_t extra_tx, unsigned char* out, int* status) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char sm[];
  const uint32_t slot = s1::smem_u32(sm), full = s1::smem_u32(sm + s1::kSlotBytes);
  for (int e = threadIdx.x; e < s1::kSlotBytes / 16; e += blockDim.x) reinterpret_cast<uint4*>(sm)[e] = uint4{};
  if (threadIdx.x == 0) s1::mbar_init(full, 1);
  s1::fence_proxy_async();
  __syncthreads();
  for (int i = 0; i < items.n; ++i) {
    const Item it = items.it[i];
    if (threadIdx.x == 0) {
      if (extra_tx) asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(full), "r"(extra_tx) : "memory");
      s1::tma_load_item(slot, full, &ma, &mb, chunk, it.col0, it.h, it.r0);
    }
    bool done = false;
    const long long t0 = clock64();
    while (!done && clock64() - t0 < (1LL << 31)) done = s1::mbar_test(full, uint32_t(i & 1));  // ~1 s
    const int ok = __syncthreads_and(done ? 1 : 0);
    if (threadIdx.x == 0) status[i] = ok;
    if (!ok) return;  // the phase never completed: the byte count is wrong (the backward would hang)
    for (int e = threadIdx.x; e < s1::kSlotBytes / 16; e += blockDim.x)
      reinterpret_cast<uint4*>(out + size_t(i) * s1::kSlotBytes)[e] = reinterpret_cast<const uint4*>(sm)[e];
    __syncthreads();  // every thread has read the slot before the next item overwrites it
  }
#endif
}

#define CHECK_CUDA(x)                                                                            \
  do {                                                                                           \
    const cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                                     \
      std::printf("FAIL: %s:%d %s: %s\n", __FILE__, __LINE__, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

uint16_t bits(__nv_bfloat16 x) {
  uint16_t b;
  std::memcpy(&b, &x, 2);
  return b;
}

/// One chunk size: A operand from tensor qa, B from qb, both [rows, H, D] bf16.
int run(int chunk, int* failures) {
  const int64_t rows = 3 * chunk - 5, H = 3, D = 40;  // a 32-column tile at 32 is 8 in, 24 out
  std::mt19937 rng{static_cast<uint32_t>(chunk)};
  std::uniform_int_distribution<int> val(1, 200);  // no zeros: an element read as 0 is a real miss
  std::vector<uint16_t> ha(size_t(rows * H * D)), hb(ha.size());
  for (auto& x : ha) x = bits(__float2bfloat16(float(val(rng))));
  for (auto& x : hb) x = bits(__float2bfloat16(-float(val(rng))));
  void *da = nullptr, *db = nullptr;
  CHECK_CUDA(cudaMalloc(&da, ha.size() * 2));
  CHECK_CUDA(cudaMalloc(&db, hb.size() * 2));
  CHECK_CUDA(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
  CUtensorMap ma{}, mb{};
  if (!s1::tma_encode<__nv_bfloat16>(&ma, da, D, H, rows, chunk) ||
      !s1::tma_encode<__nv_bfloat16>(&mb, db, D, H, rows, chunk)) {
    std::printf("FAIL: chunk %d: cuTensorMapEncodeTiled refused the maps (or no driver entry point)\n", chunk);
    ++*failures;
    return 0;
  }
  // Inside; past D; past the last row; a last head; an odd first row; again the first (phase 1 → 0 → 1).
  const Items items{{{0, 0, 0}, {32, 1, chunk}, {0, 2, int(rows) - 5}, {32, 2, int(rows) - 3}, {0, 1, 1}, {0, 0, 0}},
                    6};
  unsigned char* dout = nullptr;
  int* dstatus = nullptr;
  CHECK_CUDA(cudaMalloc(&dout, size_t(items.n) * s1::kSlotBytes));
  CHECK_CUDA(cudaMalloc(&dstatus, sizeof(int) * kMaxItems));
  CHECK_CUDA(cudaMemset(dout, 0xFF, size_t(items.n) * s1::kSlotBytes));
  CHECK_CUDA(cudaMemset(dstatus, 0, sizeof(int) * kMaxItems));
  const int smem = s1::kSlotBytes + 64;
  CHECK_CUDA(cudaFuncSetAttribute(fill_slot, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (chunk == 16) {
    // Negative control: 16 bytes more expected than the boxes deliver must leave the phase open
    // (else the bounded wait could not catch a wrong count, and a pass below would mean nothing).
    fill_slot<<<1, 128, smem>>>(ma, mb, chunk, items, 16u, dout, dstatus);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    int st0 = -1;
    CHECK_CUDA(cudaMemcpy(&st0, dstatus, sizeof st0, cudaMemcpyDeviceToHost));
    if (st0 != 0) {
      std::printf("FAIL: the negative control (expect_tx 16 bytes too many) completed its phase: the wait bound is vacuous\n");
      ++*failures;
    }
    CHECK_CUDA(cudaMemset(dstatus, 0, sizeof(int) * kMaxItems));
  }
  fill_slot<<<1, 128, smem>>>(ma, mb, chunk, items, 0u, dout, dstatus);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> out(size_t(items.n) * s1::kSlotBytes);
  int status[kMaxItems] = {};
  CHECK_CUDA(cudaMemcpy(out.data(), dout, out.size(), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(status, dstatus, sizeof status, cudaMemcpyDeviceToHost));
  auto at = [&](const std::vector<uint16_t>& t, int64_t r, int64_t h, int64_t d) -> uint16_t {
    return (r < 0 || r >= rows || d < 0 || d >= D) ? uint16_t(0) : t[size_t((r * H + h) * D + d)];
  };
  for (int i = 0; i < items.n; ++i) {
    const Item it = items.it[i];
    if (!status[i]) {
      std::printf("FAIL: chunk %d item %d (cols %d, head %d, rows %d..): the full barrier's phase never completed: "
                  "expect_tx %u bytes is not what the boxes delivered\n",
                  chunk, i, it.col0, it.h, it.r0, s1::pipe_tx_bytes(chunk));
      ++*failures;
      break;
    }
    const unsigned char* slot = out.data() + size_t(i) * s1::kSlotBytes;
    int bad = 0;
    for (int r = 0; r < s1::kMmaM; ++r)
      for (int k = 0; k < s1::kBK; ++k) {
        uint16_t got;
        std::memcpy(&got, slot + s1::tile_offset(r, k, s1::kMmaM), 2);
        const uint16_t want = r < chunk ? at(ha, it.r0 + r, it.h, it.col0 + k) : uint16_t(0);
        if (got != want && ++bad <= 3)
          std::printf("FAIL: chunk %d item %d: A operand (%d, %d) = 0x%04x, want 0x%04x\n", chunk, i, r, k, got, want);
        if (r < chunk) {
          std::memcpy(&got, slot + s1::kOperandABytes + s1::tile_offset(r, k, s1::kCM), 2);
          const uint16_t wb = at(hb, it.r0 + r, it.h, it.col0 + k);
          if (got != wb && ++bad <= 3)
            std::printf("FAIL: chunk %d item %d: B operand (%d, %d) = 0x%04x, want 0x%04x\n", chunk, i, r, k, got, wb);
        }
      }
    if (bad) ++*failures;
    // The comparison is not vacuous: reading the A operand with the B tile's group stride misses.
    if (i == 0) {
      int miss = 0;
      for (int r = 0; r < chunk; ++r)
        for (int k = 8; k < s1::kBK; ++k) {
          uint16_t got;
          std::memcpy(&got, slot + s1::tile_offset(r, k, s1::kCM), 2);
          miss += got != at(ha, it.r0 + r, it.h, it.col0 + k);
        }
      if (miss == 0) {
        std::printf("FAIL: chunk %d: a wrong layout matched too (the check is vacuous)\n", chunk);
        ++*failures;
      }
    }
  }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  cudaFree(dstatus);
  return 0;
}

}  // namespace

int main() {
  int n = 0, dev = 0, major = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIP: no CUDA device (the TMA half of the sm100 pipeline runs on any GPU of CC >= 9.0)\n");
    return 0;
  }
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      major < 9) {
    std::printf("SKIP: device of compute capability %d.x has no TMA\n", major);
    return 0;
  }
  int failures = 0;
  for (int chunk : {16, 32, 64})
    if (run(chunk, &failures) != 0) return 1;
  if (failures) {
    std::printf("FAIL: %d chunk/item case(s)\n", failures);
    return 1;
  }
  std::printf("ok: tensor maps encoded; 6 items x chunk 16/32/64 through one slot (parities 0,1,0,1,0,1): every box "
              "where tile_offset says, out-of-bounds zero, rows >= chunk zero, expect_tx = %u/%u/%u bytes delivered\n",
              s1::pipe_tx_bytes(16), s1::pipe_tx_bytes(32), s1::pipe_tx_bytes(64));
  return 0;
}
