// The bf16/f16 input variants of the glr contracts (glr_*_bf16, glr_*_f16): specs, inputs that stay
// representable, and the error model on purpose — an fp32-accumulating evaluation whose 16-bit
// outputs are rounded once (to nearest even) passes kcv::compare at every value kind the gates
// use. Tensor-core operand rounding, and the 16-bit states and accumulators that must fail, are in
// tensor_core_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>

#include "contract_harness.hpp"
#include "kcv/contracts/builtin.hpp"

namespace glr::test {
namespace {

namespace vk = kcv::value_kind;
using kcv::DType;

bool is16(DType t) { return t == DType::bf16 || t == DType::f16; }

TEST(GlrReduced, NamesDtypesAndRegistry) {
  const auto all = reduced_glr_contracts();
  ASSERT_EQ(all.size(), 16u);
  for (const auto& c : all) {
    const DType X = input_dtype(*c);
    ASSERT_TRUE(is16(X)) << c->name;
    EXPECT_TRUE(c->name.ends_with(X == DType::bf16 ? "_bf16" : "_f16")) << c->name;
    const auto* registered = kcv::find_contract(c->name);
    ASSERT_NE(registered, nullptr) << c->name << " is not registered";
    // The f32 twin: same names, shapes, scalars and error constant; only dtypes differ.
    const auto twin = kcv::make_glr_contract(c->name.substr(0, c->name.rfind('_')));
    ASSERT_EQ(c->inputs.size(), twin->inputs.size());
    ASSERT_EQ(c->outputs.size(), twin->outputs.size());
    EXPECT_EQ(c->c, twin->c);
    EXPECT_EQ(c->accumulate, DType::f32);
    EXPECT_NE(c->c_reasoning, twin->c_reasoning);
    EXPECT_EQ(c->nominal(), twin->nominal());
    const std::set<std::string> sixteen = {"q", "k", "v", "do", "o", "dq", "dk", "dv"};
    for (std::size_t i = 0; i < c->inputs.size(); ++i) {
      const auto& s = c->inputs[i];
      EXPECT_EQ(s.name, twin->inputs[i].name);
      EXPECT_EQ(s.dims, twin->inputs[i].dims);
      EXPECT_EQ(s.domain, twin->inputs[i].domain);
      const DType want = sixteen.count(s.name) ? X : twin->inputs[i].dtype;  // g, states f32; cu i64
      EXPECT_EQ(s.dtype, want) << c->name << " input " << s.name;
    }
    for (std::size_t o = 0; o < c->outputs.size(); ++o) {
      const auto& s = c->outputs[o];
      EXPECT_EQ(s.name, twin->outputs[o].name);
      EXPECT_EQ(s.dims, twin->outputs[o].dims);
      EXPECT_EQ(s.dtype, sixteen.count(s.name) ? X : DType::f32) << c->name << " output " << s.name;
    }
  }
  for (const char* bad : {"glr_fwd_bf32", "glr_fwd_bf16_scalar", "glr_scalar_fwd", "glr_fwd_bf16_f16", "glr", ""})
    EXPECT_THROW(kcv::make_glr_contract(bad), std::invalid_argument) << bad;
  EXPECT_EQ(kcv::make_glr_contract("glr_bwd_varlen_scalar_f16")->name, "glr_bwd_varlen_scalar_f16");
}

// NOTES: the values gate scales the f16 inputs by 1e4 (N(0,1)·1e4 stays below 65504 up to 6.5σ;
// beyond, the draw is clamped to the largest finite value, never Inf), and the outputs of that case
// overflow f16 (o ~ q·k·v ~ 1e12): the reference rounded to f16 is ±Inf there, and an fp32 kernel
// that rounds its result lands on the same Inf.
TEST(GlrReduced, InputsStayFiniteAndF16OutputsOverflowWhereTheReferenceDoes) {
  for (const auto& c : reduced_glr_contracts()) {
    kcv::Bindings b = c->nominal();
    b["T"] = 100;
    for (const std::string& kind : all_kinds(*c)) {
      kcv::Rng rng(41);
      const auto in = c->make_inputs(b, rng, kind);
      for (std::size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(in[i].dtype, c->inputs[i].dtype);
        for (double x : in[i].values()) ASSERT_TRUE(std::isfinite(x)) << c->name << " " << kind << " " << i;
      }
    }
  }
  const auto c = kcv::make_glr_contract("glr_fwd_f16");
  const kcv::Bindings b = c->nominal();
  kcv::Rng rng(42);
  const auto in = c->make_inputs(b, rng, vk::scaled_up);
  double qmax = 0;
  for (double x : in[0].values()) qmax = std::max(qmax, std::abs(x));
  EXPECT_GT(qmax, 2e4);
  EXPECT_LE(qmax, 65504.0);
  const auto ref = c->reference(in, c->scalar_values(b), b, kcv::SumOrder::forward);
  int64_t overflow = 0;
  for (double r : ref[0].value) overflow += std::isinf(kcv::round_to(DType::f16, r));
  EXPECT_GT(overflow, ref[0].value.size() / 2) << "scaled 1e4 should overflow most of o in f16";
  const Verdict v = judge(*c, b, vk::scaled_up, 42, {chunked_eval<float>(64)})[0];
  EXPECT_TRUE(v.ok) << v.evidence;
}

struct Named {
  std::string name;
  Evaluation eval;
};

/// Judges the evaluations at this kind; returns one verdict per evaluation.
std::vector<Verdict> run(const kcv::Contract& c, const kcv::Bindings& b, const std::string& kind, uint64_t seed,
                         const std::vector<Named>& evals) {
  std::vector<Evaluation> e;
  for (const auto& n : evals) e.push_back(n.eval);
  return judge(c, b, kind, seed, e);
}

/// Worst err/bound over the outputs whose dtype is 16-bit (o, dq, dk, dv).
double worst16(const kcv::Contract& c, const Verdict& v) {
  double w = 0;
  for (std::size_t o = 0; o < c.outputs.size(); ++o)
    if (is16(c.outputs[o].dtype)) w = std::max(w, v.output_ratio[o]);
  return w;
}

TEST(GlrReduced, Fp32AccumulationWithRoundedOutputsPassesAtEveryValueKind) {
  const std::vector<Named> all = {{"sequential fp32", sequential_eval<float>()},
                                  {"chunk64 fp32", chunked_eval<float>(64)},
                                  {"chunk16 fp32", chunked_eval<float>(16)}};
  const std::vector<Named> main = {all[0], all[1]};
  for (const auto& c : reduced_glr_contracts()) {
    double worst = 0, worst_16 = 0;
    std::string where;
    for (const std::string& kind : all_kinds(*c)) {
      const auto& evals = kind == vk::normal ? all : main;
      const std::vector<Verdict> v = run(*c, c->nominal(), kind, 43, evals);
      for (std::size_t i = 0; i < v.size(); ++i) {
        EXPECT_TRUE(v[i].ok) << c->name << " / " << kind << " / " << evals[i].name << ": " << v[i].evidence;
        if (v[i].worst_ratio > worst) {
          worst = v[i].worst_ratio;
          where = kind + " / " + evals[i].name;
        }
        worst_16 = std::max(worst_16, worst16(*c, v[i]));
      }
    }
    std::printf("  %-28s fp32 accumulation, rounded outputs: worst err/bound %.3g (16-bit outputs %.3g; at %s)\n",
                c->name.c_str(), worst, worst_16, where.c_str());
    // Not vacuous: the output rounding takes a visible share of the bound, whose u_out·|r| sits
    // beside the operand-rounding budget κ·u_in·ρ·Σ|term| ≥ 3·u_in·|r| of o, dv (2 of dq, dk).
    EXPECT_GT(worst_16, 0.15) << c->name;
  }
}

TEST(GlrReduced, RoundedOutputsPassAtBoundaryShapes) {
  const std::vector<Named> evals = {{"sequential fp32", sequential_eval<float>()},
                                    {"chunk64 fp32", chunked_eval<float>(64)}};
  for (const auto& c : reduced_glr_contracts())
    for (auto [T, K, V] : std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {63, 7, 33}, {65, 17, 5}, {1000, 16, 16}}) {
      kcv::Bindings b = c->nominal();
      b["T"] = T;
      b["K"] = K;
      b["V"] = V;
      const std::vector<Verdict> v = run(*c, b, vk::normal, 44, evals);
      for (std::size_t i = 0; i < v.size(); ++i)
        EXPECT_TRUE(v[i].ok) << c->name << " " << kcv::bindings_string(b) << " / " << evals[i].name << ": "
                             << v[i].evidence;
    }
}

// NOTES: a kernel that rounds the state it carries between chunks to bf16 (at every chunk
// boundary, once per 64 steps) errs by about u_in·|S| per boundary, and those errors add up like a
// random walk: on random data they stay within the budget of one operand rounding per term,
// u_in·Σ|term| (which a tensor-core kernel may use in full, adversarial data aligning its
// roundings). A per-element bound cannot tell the two apart; recorded here, it passes. A state
// rounded at every step (State16 / glr_fwd_bf16_accumulate.cpp) compounds 64 times as often and
// fails (tensor_core_test.cpp); a population test on random data (issue 21) is what could catch
// the chunk-boundary one.
TEST(GlrReduced, ChunkBoundaryStatesRoundedToBf16StayWithinTheOperandBudget) {
  const auto c = kcv::make_glr_contract("glr_fwd_bf16");
  const Evaluation boundary_bf16 = [](const Data& d, bool) -> std::vector<std::vector<double>> {
    const Problem& p = d.p;
    const int64_t K = p.K, V = p.V, GW = p.gate_width();
    std::vector<double> o(p.v_elems()), hT(p.state_elems());
    cpu::Workspace<float> w;
    std::vector<float> q, k, v, g, S(K * V), h(K * V), oc;
    for (int64_t n = 0; n < p.sequences(); ++n)
      for (int64_t hh = 0; hh < p.H; ++hh) {
        const int64_t b = p.batch_of(n), t0 = p.begin(n), L = p.end(n) - t0;
        for (int64_t e = 0; e < K * V; ++e) h[e] = round16<true>(float(d.h0[(n * p.H + hh) * K * V + e]));
        for (int64_t c0 = 0; c0 < L; c0 += cpu::kChunk) {
          const int64_t m = std::min(cpu::kChunk, L - c0);
          q.resize(m * K), k.resize(m * K), v.resize(m * V), g.resize(m * GW), oc.resize(m * V);
          for (int64_t i = 0; i < m; ++i) {
            const int64_t row = (b * p.T + t0 + c0 + i) * p.H + hh;
            for (int64_t x = 0; x < K; ++x) q[i * K + x] = float(d.q[row * K + x]), k[i * K + x] = float(d.k[row * K + x]);
            for (int64_t y = 0; y < V; ++y) v[i * V + y] = float(d.v[row * V + y]);
            for (int64_t x = 0; x < GW; ++x) g[i * GW + x] = float(d.g[row * GW + x]);
          }
          const cpu::Slice<float> s{m, K, V, GW, q.data(), k.data(), v.data(), g.data(), h.data(), float(d.scale)};
          cpu::fwd_slice<float>(s, oc.data(), S.data(), w);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t y = 0; y < V; ++y) o[((b * p.T + t0 + c0 + i) * p.H + hh) * V + y] = oc[i * V + y];
          for (int64_t e = 0; e < K * V; ++e) h[e] = round16<true>(S[e]);  // THE STORE: bf16 state
        }
        for (int64_t e = 0; e < K * V; ++e) hT[(n * p.H + hh) * K * V + e] = h[e];
      }
    return {o, hT};
  };
  double most = 0, most_o = 0;
  for (const std::string& kind : {std::string(vk::normal), std::string(kcv::glr_kind::decay_near_1),
                                  std::string(kcv::glr_kind::gates_zero)}) {
    const Verdict v = judge(*c, c->nominal(), kind, 46, {boundary_bf16})[0];
    EXPECT_TRUE(v.ok) << kind << ": " << v.evidence;
    most = std::max(most, v.worst_ratio);
    most_o = std::max(most_o, v.output_ratio[0]);
  }
  std::printf("  glr_fwd_bf16 chunk-boundary states in bf16: worst err/bound %.3g (o alone %.3g)\n", most, most_o);
}

}  // namespace
}  // namespace glr::test
