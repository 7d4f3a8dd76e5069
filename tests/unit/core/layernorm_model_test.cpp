// Error model of `layernorm`: two-pass, Welford, one-pass (clamped) and folded-affine forms in
// every summation order pass at every value kind; bf16 running sums fail at nominal.
#include <gtest/gtest.h>

#include <algorithm>

#include "fp32_kernels.hpp"
#include "model_harness.hpp"

namespace kcv::testing {
namespace {

const Contract& layernorm() { return *find_contract("layernorm"); }

Impl impl(Sum how, LayernormForm form, const std::string& name) {
  return {name + " / " + sum_name(how), [=](const std::vector<HostTensor>& in, const Bindings& b) {
            return layernorm_f32(in, 1e-5f, b.at("M"), b.at("N"), how, form);
          }};
}

std::vector<Impl> legit() {
  std::vector<Impl> v;
  for (Sum s : legit_sums()) v.push_back(impl(s, LayernormForm::two_pass, "two-pass"));
  v.push_back(impl(Sum::sequential, LayernormForm::welford, "welford"));
  v.push_back(impl(Sum::sequential, LayernormForm::one_pass, "one-pass"));
  v.push_back(impl(Sum::blocked32, LayernormForm::one_pass, "one-pass"));
  v.push_back(impl(Sum::pairwise, LayernormForm::folded, "folded"));
  return v;
}

Bindings mn(int64_t m, int64_t n) { return {{"M", m}, {"N", n}}; }

TEST(LayernormModel, LegitimateFormsPassEverywhere) {
  const std::vector<Bindings> shapes = {mn(1, 1), mn(3, 7), mn(2, 257), mn(2, 1021), mn(1, 4099)};
  double worst = expect_all_pass(layernorm(), shapes, legit(), {1, 2});
  worst = std::max(worst, expect_all_pass(layernorm(), {layernorm().nominal()}, legit(), {3}));
  report_margin("layernorm legit worst err/bound", worst);
}

TEST(LayernormModel, Bf16AccumulationFailsAtNominal) {
  report_margin("layernorm bf16-acc least err/bound",
                expect_all_fail(layernorm(), layernorm().nominal(),
                                impl(Sum::bf16_acc, LayernormForm::two_pass, "two-pass bf16 sums"), {1, 2, 3, 4, 5}));
}

TEST(LayernormModel, NonFiniteRows) {
  const Contract& c = layernorm();
  const Bindings b = mn(3, 2);
  const std::vector<HostTensor> in = {
      HostTensor::from_values(DType::f32, {3, 2}, {1, NAN, INFINITY, 0, 1, 2}),
      HostTensor::from_values(DType::f32, {2}, {1, INFINITY}),
      HostTensor::from_values(DType::f32, {2}, {0, 0})};
  const auto ref = c.reference(in, {1e-5}, b, SumOrder::forward);
  EXPECT_TRUE(std::isnan(ref[0].value[0]) && std::isnan(ref[0].value[1]));  // NaN in the row
  EXPECT_TRUE(std::isnan(ref[0].value[2]) && std::isnan(ref[0].value[3]));  // Inf - Inf in the variance
  EXPECT_LT(ref[0].value[4], 0);                                             // finite, w = 1
  EXPECT_EQ(ref[0].value[5], INFINITY);                                      // w = +Inf, d > 0
  EXPECT_TRUE(judge(c, b, in, layernorm_f32(in, 1e-5f, 3, 2, Sum::sequential, LayernormForm::two_pass)).ok());
  EXPECT_TRUE(judge(c, b, in, layernorm_f32(in, 1e-5f, 3, 2, Sum::sequential, LayernormForm::one_pass)).ok());
}

}  // namespace
}  // namespace kcv::testing
