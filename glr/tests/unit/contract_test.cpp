// The glr contracts: names, ABI order, shapes, input drawing (realistic gates, structural
// cu_seqlens with empty and length-1 sequences, the op-specific value kinds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "contract_harness.hpp"

namespace glr::test {
namespace {

std::vector<std::string> names(const std::vector<kcv::TensorSpec>& specs) {
  std::vector<std::string> n;
  for (const auto& s : specs) n.push_back(s.name);
  return n;
}

using Names = std::vector<std::string>;

TEST(GlrContract, NamesAndAbiOrder) {
  const auto all = all_glr_contracts();
  std::vector<std::string> got;
  for (const auto& c : all) got.push_back(c->name);
  EXPECT_EQ(got, (Names{"glr_fwd", "glr_bwd", "glr_fwd_scalar", "glr_bwd_scalar", "glr_fwd_varlen",
                        "glr_bwd_varlen", "glr_fwd_varlen_scalar", "glr_bwd_varlen_scalar"}));
  for (const auto& c : all) {
    const ContractInfo ci = info(*c);
    Names in = {"q", "k", "v", "g", "h0"};
    if (ci.backward) in.insert(in.end(), {"do", "dhT"});
    if (ci.varlen) in.push_back("cu_seqlens");
    EXPECT_EQ(names(c->inputs), in) << c->name;
    EXPECT_EQ(names(c->outputs), ci.backward ? (Names{"dq", "dk", "dv", "dg", "dh0"}) : (Names{"o", "hT"})) << c->name;
    ASSERT_EQ(c->scalars.size(), 1u);
    EXPECT_EQ(c->scalars[0].name, "scale");
    EXPECT_EQ(c->accumulate, kcv::DType::f32);
    EXPECT_GT(c->c, 1.0);
    EXPECT_FALSE(c->c_reasoning.empty());
    const kcv::Bindings b = c->nominal();
    EXPECT_EQ(b.at("T"), 256);
    EXPECT_EQ(b.at("K"), 32);
    EXPECT_EQ(b.at("V"), 32);
    EXPECT_DOUBLE_EQ(c->scalar_values(b)[0], 1 / std::sqrt(32.0));
    const int64_t B = ci.varlen ? 1 : b.at("B"), S = ci.varlen ? b.at("N") : B;
    const kcv::Shape g = ci.gate == GateForm::vector ? kcv::Shape{B, 256, 2, 32} : kcv::Shape{B, 256, 2};
    EXPECT_EQ(c->input_shape(0, b), (kcv::Shape{B, 256, 2, 32})) << c->name;
    EXPECT_EQ(c->input_shape(2, b), (kcv::Shape{B, 256, 2, 32})) << c->name;
    EXPECT_EQ(c->input_shape(3, b), g) << c->name;
    EXPECT_EQ(c->input_shape(4, b), (kcv::Shape{S, 2, 32, 32})) << c->name;
    EXPECT_EQ(c->inputs[3].domain, kcv::Domain::nonpositive);
    if (ci.varlen) {
      EXPECT_EQ(c->inputs.back().dtype, kcv::DType::i64);
      EXPECT_EQ(c->inputs.back().domain, kcv::Domain::structural);
      EXPECT_EQ(c->input_shape(c->inputs.size() - 1, b), (kcv::Shape{S + 1}));
    }
    if (ci.backward) {
      EXPECT_EQ(c->output_shape(3, b), g) << c->name;
    }
  }
}

void expect_valid_cu(const std::vector<int64_t>& cu, int64_t N, int64_t T) {
  ASSERT_EQ(int64_t(cu.size()), N + 1);
  EXPECT_EQ(cu.front(), 0);
  EXPECT_EQ(cu.back(), T);
  for (int64_t i = 0; i < N; ++i) ASSERT_LE(cu[i], cu[i + 1]);
}

TEST(GlrContract, CuSeqlensAreValidAndSometimesHaveEmptyAndLengthOneSequences) {
  for (auto [N, T] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {4, 256}, {8, 1}, {8, 3}, {2, 1000}}) {
    int empty = 0, one = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      kcv::Rng rng(seed);
      const std::vector<int64_t> cu = kcv::draw_cu_seqlens(N, T, rng);
      expect_valid_cu(cu, N, T);
      bool e = false, o = false;
      for (int64_t i = 0; i < N; ++i) {
        e |= cu[i + 1] == cu[i];
        o |= cu[i + 1] == cu[i] + 1;
      }
      empty += e;
      one += o;
    }
    if (N >= 2) {
      EXPECT_GT(empty, 40) << N << " " << T;
      EXPECT_GT(one, 40) << N << " " << T;
    }
    if (T >= 4 * N) {
      EXPECT_LT(empty, 160) << N << " " << T;  // not always
    }
  }
}

TEST(GlrContract, InputsAreRealisticDeterministicAndInDomain) {
  for (const auto& c : all_glr_contracts()) {
    kcv::Bindings b = c->nominal();
    b["T"] = 100;
    b["H"] = 1;
    for (const std::string& kind : all_kinds(*c)) {
      kcv::Rng r1(5), r2(5);
      const auto a = c->make_inputs(b, r1, kind), a2 = c->make_inputs(b, r2, kind);
      ASSERT_EQ(a.size(), c->inputs.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].same_bits(a2[i])) << c->name << " " << kind;
      for (double g : a[3].values()) ASSERT_LE(g, 0.0) << c->name << " " << kind;
      if (info(*c).varlen) {
        std::vector<int64_t> cu;
        for (double x : a.back().values()) cu.push_back(int64_t(x));
        expect_valid_cu(cu, b.at("N"), b.at("T"));
      }
    }
  }
  const auto c = kcv::make_glr_fwd_contract();
  const kcv::Bindings b = c->nominal();
  kcv::Rng rng(6);
  const std::vector<double> g = c->make_inputs(b, rng, "normal")[3].values();
  const auto [lo, hi] = std::minmax_element(g.begin(), g.end());
  EXPECT_GT(*lo, -8.0);
  EXPECT_LT(*lo, -2.0);   // some strong forgetting
  EXPECT_GT(*hi, -0.05);  // some long memory
  double mean_decay = 0;
  for (double x : g) mean_decay += std::exp(x) / double(g.size());
  EXPECT_GT(mean_decay, 0.7);
  EXPECT_LT(mean_decay, 0.95);
}

TEST(GlrContract, OpSpecificValueKinds) {
  const auto c = kcv::make_glr_fwd_contract();
  const kcv::Bindings b = c->nominal();
  auto draw = [&](const std::string& kind) {
    kcv::Rng rng(7);
    return c->make_inputs(b, rng, kind);
  };
  for (double g : draw(kcv::glr_kind::gates_zero)[3].values()) ASSERT_EQ(g, 0.0);
  for (double g : draw(kcv::glr_kind::gates_m20)[3].values()) ASSERT_EQ(g, -20.0);
  for (double g : draw(kcv::glr_kind::decay_near_1)[3].values()) {
    ASSERT_LT(g, -0.5e-3);
    ASSERT_GT(g, -1.5e-3);
  }
  // large qk: the typical |q_t · k_t| is ~1e2.
  const auto in = draw(kcv::glr_kind::large_qk);
  const std::vector<double> q = in[0].values(), k = in[1].values();
  std::vector<double> dots;
  for (std::size_t r = 0; r + 32 <= q.size(); r += 32) {
    double s = 0;
    for (int x = 0; x < 32; ++x) s += q[r + x] * k[r + x];
    dots.push_back(std::fabs(s));
  }
  std::nth_element(dots.begin(), dots.begin() + dots.size() / 2, dots.end());
  EXPECT_GT(dots[dots.size() / 2], 30.0);
  EXPECT_LT(dots[dots.size() / 2], 300.0);
}

TEST(GlrContract, ReferenceChecksItsInputs) {
  const auto c = kcv::make_glr_fwd_contract();
  const kcv::Bindings b = c->nominal();
  kcv::Rng rng(8);
  auto in = c->make_inputs(b, rng, "normal");
  in.pop_back();
  EXPECT_THROW(c->reference(in, c->scalar_values(b), b, kcv::SumOrder::forward), std::invalid_argument);
}

}  // namespace
}  // namespace glr::test
