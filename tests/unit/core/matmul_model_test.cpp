// Error model of `matmul`: every fp32 summation order passes at every value kind and awkward
// shapes; TF32 inputs and a bf16 running sum fail at the nominal shape.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "fp32_kernels.hpp"
#include "model_harness.hpp"

namespace kcv::testing {
namespace {

const Contract& matmul() { return *find_contract("matmul"); }

Impl impl(Sum how, bool fma = false, MatmulInputs inputs = MatmulInputs::fp32) {
  std::string name = fma ? "fma sequential" : sum_name(how);
  if (inputs == MatmulInputs::tf32) name = "tf32 inputs, " + name;
  return {name, [=](const std::vector<HostTensor>& in, const Bindings& b) {
            return matmul_f32(in, b.at("M"), b.at("N"), b.at("K"), how, fma, inputs);
          }};
}

std::vector<Impl> legit() {
  std::vector<Impl> v;
  for (Sum s : legit_sums()) v.push_back(impl(s));
  v.push_back(impl(Sum::sequential, /*fma=*/true));
  return v;
}

Bindings mnk(int64_t m, int64_t n, int64_t k) { return {{"M", m}, {"N", n}, {"K", k}}; }

TEST(MatmulModel, LegitimateOrdersPassAwkwardShapes) {
  const std::vector<Bindings> shapes = {mnk(1, 1, 1), mnk(7, 5, 13), mnk(3, 4, 257), mnk(2, 3, 1021), mnk(1, 9, 127)};
  report_margin("matmul legit worst err/bound (awkward)", expect_all_pass(matmul(), shapes, legit(), {1, 2, 3}));
}

TEST(MatmulModel, LegitimateOrdersPassNominal) {
  report_margin("matmul legit worst err/bound (nominal)",
                expect_all_pass(matmul(), {matmul().nominal()}, legit(), {4}));
}

TEST(MatmulModel, Tf32InputsFailAtNominal) {
  report_margin("matmul tf32 least err/bound",
                expect_all_fail(matmul(), matmul().nominal(), impl(Sum::sequential, false, MatmulInputs::tf32),
                                {1, 2, 3, 4, 5}));
}

TEST(MatmulModel, Bf16AccumulationFailsAtNominal) {
  report_margin("matmul bf16-acc least err/bound",
                expect_all_fail(matmul(), matmul().nominal(), impl(Sum::bf16_acc), {1, 2, 3}));
}

TEST(MatmulModel, NonFiniteClasses) {
  const Contract& c = matmul();
  const Bindings b = mnk(2, 2, 3);
  // Row 0: +Inf times B[0,j] of either sign, plus finite terms: ±Inf. Row 1: +Inf and -Inf
  // terms meet in column 0 (NaN in any order), and agree in column 1 (-Inf).
  const std::vector<HostTensor> in = {
      HostTensor::from_values(DType::f32, {2, 3}, {INFINITY, 1, 2, INFINITY, -INFINITY, 0}),
      HostTensor::from_values(DType::f32, {3, 2}, {1, -1, 1, 1, 0, 0})};
  const auto ref = c.reference(in, {}, b, SumOrder::forward);
  EXPECT_EQ(ref[0].value[0], INFINITY);
  EXPECT_EQ(ref[0].value[1], -INFINITY);
  EXPECT_TRUE(std::isnan(ref[0].value[2]));
  EXPECT_EQ(ref[0].value[3], -INFINITY);
  for (Sum s : {Sum::sequential, Sum::reverse, Sum::pairwise, Sum::blocked32})
    EXPECT_TRUE(judge(c, b, in, matmul_f32(in, 2, 2, 3, s)).ok()) << sum_name(s);
  // NOTES: compensated (Kahan) summation turns an infinite term into NaN (its correction is
  // Inf - Inf) where IEEE summation in any order gives ±Inf: a class the contract rejects.
  const HostTensor kahan = matmul_f32(in, 2, 2, 3, Sum::kahan);
  EXPECT_TRUE(std::isnan(kahan.get(0)));
  EXPECT_FALSE(judge(c, b, in, kahan).ok());
  // A kernel that launders the infinities into numbers fails.
  EXPECT_FALSE(judge(c, b, in, HostTensor::from_values(DType::f32, {2, 2}, {FLT_MAX, -FLT_MAX, NAN, -INFINITY})).ok());
  EXPECT_FALSE(judge(c, b, in, HostTensor::from_values(DType::f32, {2, 2}, {INFINITY, -INFINITY, 0, -INFINITY})).ok());
  // Inf · 0 is NaN: a kernel that skips zero terms would not produce it.
  const std::vector<HostTensor> in2 = {HostTensor::from_values(DType::f32, {1, 1}, {INFINITY}),
                                       HostTensor::from_values(DType::f32, {1, 1}, {0})};
  EXPECT_TRUE(std::isnan(c.reference(in2, {}, mnk(1, 1, 1), SumOrder::forward)[0].value[0]));
  EXPECT_FALSE(judge(c, mnk(1, 1, 1), in2, HostTensor::from_values(DType::f32, {1, 1}, {0})).ok());
}

}  // namespace
}  // namespace kcv::testing
