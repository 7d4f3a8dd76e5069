// GLR_DQK_LEAN's premise on the device: within the factored diagonal's span (|x| <= diag_decay::kSpan)
// diag_decay::exp2_in_span (ex2.approx.ftz.f32) gives exactly CUDA's exp2f, for every float argument, so
// the switch changes no bit of dq or dk. Negative control: the same comparison where exp2f's results are
// subnormal (x in [-149, -126)), which ftz flushes to zero, must find differences. Skips, saying why,
// where there is no CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "glr/cuda/sm90/diag_decay.hpp"
#include "sm90_diag_decay_kernels.hpp"

namespace {

std::string no_gpu_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e);
  return n == 0 ? "no CUDA device" : "";
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(GlrCudaSm90DiagDecay, Exp2InSpanIsExp2f) {
  const std::string why = no_gpu_reason();
  if (!why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  unsigned long long differ = 1;
  uint32_t first = 0;
  const float span = glr::cuda::sm90::diag_decay::kSpan;
  ASSERT_EQ(glr_test::exp2_in_span_mismatches(0.f, span, &differ, &first), cudaSuccess);
  EXPECT_EQ(differ, 0u) << "first at x = " << from_bits(first);
}

TEST(GlrCudaSm90DiagDecay, Exp2InSpanDiffersWhereExp2fIsSubnormal) {
  const std::string why = no_gpu_reason();
  if (!why.empty()) GTEST_SKIP() << "needs a GPU: " << why;
  unsigned long long differ = 0;
  uint32_t first = 0;
  ASSERT_EQ(glr_test::exp2_in_span_mismatches(126.5f, 148.5f, &differ, &first), cudaSuccess);
  EXPECT_GT(differ, 0u) << "exp2_in_span flushes exp2f's subnormal results: the comparison must see it";
}

}  // namespace
