// Host emulation of include/glr/cuda/sm90/wgmma.cuh for the split simulation (run_fwd.sh; gen.py puts
// this in place of wgmma.cuh): each thread computes its own accumulator registers (acc_row, acc_col of
// wgmma_desc.hpp) by reading shared memory where the PTX ISA's canonical layouts say the tensor core
// reads through the descriptor — the addressing of glr/tests/wgmma/wgmma_desc_test.cpp (hw_addr,
// hw_addr_mn, base offset 0). Synchronous: fence, commit and wait are no-ops. It checks the kernel's
// tiles, descriptors, K16 steps, fragment maps and barriers against the ISA's tables, not the hardware.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "glr/cuda/sm90/wgmma_desc.hpp"

#define GLR_SM90A_DEVICE 1

namespace glr::cuda::sm90::wgmma {

enum class Ab { f16, bf16 };

inline uint32_t smem_addr(const void* p) {
  return uint32_t(static_cast<const unsigned char*>(p) - ::glr::cuda::sm90::smem_raw);
}
inline void fence_proxy_async() {}
inline void fence() {}
inline void commit_group() {}
template <int N> inline void wait_group() {}
template <int R> inline void fence_operands(float (&)[R]) {}

namespace emu {
struct Desc { uint32_t start, lbo, sbo, swizzle; };
inline Desc decode(uint64_t d) {
  if ((d >> 49) & 0x7) { std::fprintf(stderr, "sim wgmma: base offset != 0\n"); std::abort(); }
  return {uint32_t(d & 0x3FFF) << 4, uint32_t((d >> 16) & 0x3FFF) << 4, uint32_t((d >> 32) & 0x3FFF) << 4,
          uint32_t((d >> 62) & 0x3)};
}
inline uint32_t bits(const Desc& d) { return d.swizzle == 1 ? 3 : d.swizzle == 2 ? 2 : d.swizzle == 3 ? 1 : 0; }
inline uint32_t hw_addr(const Desc& d, int r, int k) {  // K-major, element (r, k), k in [0, 16)
  const uint32_t b = bits(d), row_pitch = 16u << b, k_half = d.swizzle == 0 ? d.lbo : 16;
  const uint32_t addr = d.start + uint32_t(r % 8) * row_pitch + uint32_t(r / 8) * d.sbo + uint32_t(k % 8) * 2 +
                        uint32_t(k / 8) * k_half;
  return addr ^ (((addr >> 7) & ((1u << b) - 1)) << 4);
}
inline uint32_t hw_addr_mn(const Desc& d, int k, int n) {  // MN-major, element (k, n), k in [0, 16)
  const uint32_t b = bits(d);
  uint32_t addr;
  if (b == 0) {
    addr = d.start + uint32_t(n % 8) * 2 + uint32_t(n / 8) * d.sbo + uint32_t(k % 8) * 16 + uint32_t(k / 8) * d.lbo;
  } else {
    const uint32_t W = 1u << b;
    addr = d.start + uint32_t(n % 8) * 2 + uint32_t(n / 8 % W) * 16 + uint32_t(n / (8 * int(W))) * d.lbo +
           uint32_t(k % 8) * 16 * W + uint32_t(k / 8) * d.sbo;
  }
  return addr ^ (((addr >> 7) & ((1u << b) - 1)) << 4);
}
template <Ab T> inline float at(uint32_t addr) {
  if (addr + 2 > sizeof ::glr::cuda::sm90::smem_raw) {
    std::fprintf(stderr, "sim wgmma: read past shared memory\n");
    std::abort();
  }
  uint16_t h;
  std::memcpy(&h, ::glr::cuda::sm90::smem_raw + addr, 2);
  if constexpr (T == Ab::bf16) { __nv_bfloat16 x; std::memcpy(&x, &h, 2); return __bfloat162float(x); }
  else { __half x; std::memcpy(&x, &h, 2); return __half2float(x); }
}
}  // namespace emu

template <int N, Ab T, bool TransB = false, bool TransA = false>
inline void mma_ss(float (&d)[N / 2], uint64_t a_desc, uint64_t b_desc, bool accumulate) {
  static_assert(N == 64 || N == 128, "glr sm90 wgmma: N = 64 or 128");
  const emu::Desc a = emu::decode(a_desc), b = emu::decode(b_desc);
  const int t = int(threadIdx.x) % 128;
  for (int i = 0; i < N / 2; ++i) {
    const int m = acc_row(t, i), n = acc_col(t, i);
    float s = accumulate ? d[i] : 0.f;
    for (int k = 0; k < 16; ++k)
      s += emu::at<T>(TransA ? emu::hw_addr_mn(a, k, m) : emu::hw_addr(a, m, k)) *
           emu::at<T>(TransB ? emu::hw_addr_mn(b, k, n) : emu::hw_addr(b, n, k));
    d[i] = s;
  }
}

}  // namespace glr::cuda::sm90::wgmma
