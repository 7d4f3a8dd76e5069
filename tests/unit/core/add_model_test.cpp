// Error model of `add`: fp32 passes everywhere, a bf16-rounded result fails.
#include <gtest/gtest.h>

#include "fp32_kernels.hpp"
#include "model_harness.hpp"

namespace kcv::testing {
namespace {

const Contract& add() { return *find_contract("add"); }

TEST(AddModel, Fp32PassesEveryKindAndShape) {
  const std::vector<Impl> impls = {{"fp32", [](auto& in, auto&) { return add_f32(in); }}};
  std::vector<Bindings> shapes;
  for (int64_t n : {1, 2, 7, 257, 1021, 65536}) shapes.push_back({{"N", n}});
  report_margin("add fp32 worst err/bound", expect_all_pass(add(), shapes, impls, {1, 2}));
}

TEST(AddModel, Bf16ResultFails) {
  const Impl bad{"bf16 result", [](auto& in, auto&) { return add_f32(in, /*bf16_result=*/true); }};
  report_margin("add bf16 least err/bound", expect_all_fail(add(), add().nominal(), bad, {1, 2, 3}));
}

TEST(AddModel, OverflowIsInfAndFtzFails) {
  const Contract& c = add();
  const Bindings b{{"N", 3}};
  const std::vector<HostTensor> in = {HostTensor::from_values(DType::f32, {3}, {3e38, -3e38, 1e-40}),
                                      HostTensor::from_values(DType::f32, {3}, {3e38, -3e38, 1e-40})};
  EXPECT_TRUE(judge(c, b, in, add_f32(in)).ok());  // +Inf, -Inf, 2e-40 (subnormal sum, exact)
  const HostTensor ftz = HostTensor::from_values(DType::f32, {3}, {INFINITY, -INFINITY, 0.0});
  EXPECT_FALSE(judge(c, b, in, ftz).ok());
  const HostTensor nan = HostTensor::from_values(DType::f32, {3}, {NAN, -INFINITY, 2e-40});
  EXPECT_FALSE(judge(c, b, in, nan).ok());
}

}  // namespace
}  // namespace kcv::testing
