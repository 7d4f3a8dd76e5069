// The sm90 wgmma building block (include/glr/cuda/sm90/wgmma.cuh and wgmma_desc.hpp) on an H200:
// one warpgroup computes D[64, N] = A[64, 64] · B[N, 64]ᵀ with 4 K16 steps of
// wgmma.mma_async.m64nNk16.f32 (sm90_wgmma_kernels.cu), for bf16 and f16, N = 64 and 128, A from
// shared memory (SS) or registers (RS), operands in the 128B-swizzle or the no-swizzle K-major
// layout, and B N-major (imm-trans-b = 1; how fwd_out holds S_c and v). The inputs are small
// integers (|x| ≤ 8), exact in bf16 and f16, so every product and partial sum is an integer below
// 2^24 and fp32 accumulation in any order is exact: the check is equality with the fp64 product,
// and any element the hardware reads from the wrong place (a layout, descriptor or fragment-map
// error) shows as a wrong element of D. The accumulators start as NaN, so the first step's
// scale-d = 0 is checked too. Negative control: the same kernel with a wrong SBO must fail. Skips,
// saying why, where there is no GPU or the GPU is not compute capability 9.0.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "glr/half.hpp"
#include "sm90_wgmma_kernels.hpp"

namespace {

using glr_test::WgmmaMode;

/// Empty when a compute capability 9.0 device can run the sm_90a kernels, else why not.
std::string no_sm90a_reason() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (n == 0) return "no CUDA device";
  int dev = 0, major = 0, minor = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess) return std::string("cudaGetDevice: ") + cudaGetErrorName(e);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (major != 9 || minor != 0)
    return "wgmma needs sm_90a (compute capability 9.0); device " + std::to_string(dev) + " is " +
           std::to_string(major) + "." + std::to_string(minor);
  return "";
}

#define SKIP_WITHOUT_SM90A()                                                     \
  do {                                                                           \
    const std::string why_ = no_sm90a_reason();                                  \
    if (!why_.empty()) GTEST_SKIP() << "glr sm90 wgmma needs an H100/H200: " << why_; \
  } while (0)

#define CUDA_OK(expr)                                                                                       \
  do {                                                                                                      \
    const cudaError_t e_ = (expr);                                                                          \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorName(e_) << " " << cudaGetErrorString(e_); \
  } while (0)

const char* name(WgmmaMode m) {
  switch (m) {
    case WgmmaMode::ss_sw128: return "SS 128B-swizzle";
    case WgmmaMode::ss_core: return "SS no-swizzle";
    case WgmmaMode::rs_sw128: return "RS (B 128B-swizzle)";
    case WgmmaMode::rs_core: return "RS (B no-swizzle)";
    case WgmmaMode::ss_nmajor: return "SS, B N-major 128B (trans-b)";
    case WgmmaMode::rs_nmajor: return "RS, B N-major 128B (trans-b)";
    case WgmmaMode::ss_sw128_wrong_sbo: return "SS 128B-swizzle, SBO 512 (negative control)";
    case WgmmaMode::ss_mmajor: return "SS, A M-major 128B (trans-a), B N-major 128B (trans-b)";
  }
  return "?";
}

struct Outcome {
  int mismatches = 0;      // elements of D != the fp64 product (NaN compared explicitly)
  double max_err = 0;      // over the finite ones
  std::string first;       // the first 8 mismatches, with coordinates
};

/// Runs one tile on the device and compares it with the host product. Seeded per case.
void run_case(int N, bool bf16, WgmmaMode mode, uint32_t seed, Outcome* out) {
  constexpr int M = 64, K = 64;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<uint16_t> a(size_t(M) * K), b(size_t(N) * K);
  std::vector<double> av(a.size()), bv(b.size());  // the values the device sees, widened
  auto fill = [&](std::vector<uint16_t>& bits, std::vector<double>& val) {
    for (size_t i = 0; i < bits.size(); ++i) {
      const float x = float(small(rng));
      bits[i] = bf16 ? glr::float_to_bf16(x) : glr::float_to_f16(x);
      val[i] = bf16 ? glr::bf16_to_float(bits[i]) : glr::f16_to_float(bits[i]);
    }
  };
  fill(a, av);
  fill(b, bv);

  uint16_t *da = nullptr, *db = nullptr;
  float* dd = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&da), a.size() * 2));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&db), b.size() * 2));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dd), size_t(M) * N * 4));
  CUDA_OK(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dd, 0xFF, size_t(M) * N * 4));  // NaN bits: an element never written fails
  CUDA_OK(glr_test::sm90_wgmma_tile(N, bf16, mode, da, db, dd, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<float> d(size_t(M) * N);
  CUDA_OK(cudaMemcpy(d.data(), dd, d.size() * 4, cudaMemcpyDeviceToHost));
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);

  std::ostringstream os;
  double norm = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double want = 0;
      for (int k = 0; k < K; ++k) want += av[size_t(m) * K + k] * bv[size_t(n) * K + k];
      norm += want * want;
      const double got = d[size_t(m) * N + n];
      const bool ok = !std::isnan(got) && got == want;
      if (!std::isnan(got)) out->max_err = std::max(out->max_err, std::fabs(got - want));
      if (!ok && out->mismatches++ < 8) os << "(" << m << ", " << n << "): got " << got << ", want " << want << "; ";
    }
  out->first = os.str();
  ASSERT_GT(norm, 0.0) << "the reference product is zero: the check would be vacuous";
}

void expect_exact(int N, bool bf16, WgmmaMode mode) {
  const uint32_t seed = 20261204u + uint32_t(N) * 10 + (bf16 ? 1 : 0) + uint32_t(mode) * 1000;
  Outcome o;
  ASSERT_NO_FATAL_FAILURE(run_case(N, bf16, mode, seed, &o));
  EXPECT_EQ(o.mismatches, 0) << (bf16 ? "bf16" : "f16") << " N " << N << " " << name(mode) << ": " << o.mismatches
                             << " of " << 64 * N << " elements wrong (bound: exact), max |err| " << o.max_err
                             << ", seed " << seed << "; first: " << o.first;
}

TEST(GlrCudaSm90Wgmma, Bf16SharedShared) {
  SKIP_WITHOUT_SM90A();
  for (int N : {64, 128})
    for (WgmmaMode m : {WgmmaMode::ss_sw128, WgmmaMode::ss_core}) expect_exact(N, true, m);
}

TEST(GlrCudaSm90Wgmma, Bf16RegisterShared) {
  SKIP_WITHOUT_SM90A();
  for (int N : {64, 128})
    for (WgmmaMode m : {WgmmaMode::rs_sw128, WgmmaMode::rs_core}) expect_exact(N, true, m);
}

TEST(GlrCudaSm90Wgmma, F16SharedShared) {
  SKIP_WITHOUT_SM90A();
  for (int N : {64, 128})
    for (WgmmaMode m : {WgmmaMode::ss_sw128, WgmmaMode::ss_core}) expect_exact(N, false, m);
}

TEST(GlrCudaSm90Wgmma, F16RegisterShared) {
  SKIP_WITHOUT_SM90A();
  for (int N : {64, 128})
    for (WgmmaMode m : {WgmmaMode::rs_sw128, WgmmaMode::rs_core}) expect_exact(N, false, m);
}

TEST(GlrCudaSm90Wgmma, NMajorB) {
  SKIP_WITHOUT_SM90A();
  for (bool bf16 : {true, false})
    for (int N : {64, 128})
      for (WgmmaMode m : {WgmmaMode::ss_nmajor, WgmmaMode::rs_nmajor}) expect_exact(N, bf16, m);
}

// A transposed in shared memory (imm-trans-a: the backward dqk's DVᵀ operand under the removed GLR_DQK_WGMMA).
TEST(GlrCudaSm90Wgmma, MMajorA) {
  SKIP_WITHOUT_SM90A();
  for (bool bf16 : {true, false})
    for (int N : {64, 128}) expect_exact(N, bf16, WgmmaMode::ss_mmajor);
}

// The check can fail: SBO 512 (half an atom) reads rows 8.. from the wrong place.
TEST(GlrCudaSm90Wgmma, WrongSboIsCaught) {
  SKIP_WITHOUT_SM90A();
  for (int N : {64, 128}) {
    Outcome o;
    ASSERT_NO_FATAL_FAILURE(run_case(N, true, WgmmaMode::ss_sw128_wrong_sbo, 7u + uint32_t(N), &o));
    EXPECT_GT(o.mismatches, 64 * N / 4) << "N " << N << ": a wrong SBO went unnoticed";
  }
}

TEST(GlrCudaSm90Wgmma, UnknownNIsRefused) {
  SKIP_WITHOUT_SM90A();
  EXPECT_EQ(glr_test::sm90_wgmma_tile(96, true, WgmmaMode::ss_sw128, nullptr, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
