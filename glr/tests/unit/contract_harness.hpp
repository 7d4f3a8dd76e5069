// Runs glr evaluations (fp32 sequential, fp32 chunked, TF32-like) on a glr contract's inputs and
// judges them with the real error model (kcv::compare), as the numerics/values gates would.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "glr/contracts/glr_contracts.hpp"
#include "glr_test_util.hpp"
#include "kcv/error_model.hpp"

namespace glr::test {

struct ContractInfo {
  bool backward = false, varlen = false;
  GateForm gate = GateForm::vector;
};

inline ContractInfo info(const kcv::Contract& c) {
  ContractInfo i;
  i.backward = c.outputs.size() == 5;
  i.varlen = c.inputs.back().name == "cu_seqlens";
  i.gate = c.inputs[3].dims.size() == 3 ? GateForm::scalar : GateForm::vector;
  return i;
}

/// The contract's inputs as a Data (values widened from f32, cu_seqlens from i64).
inline Data data_from(const kcv::Contract& c, const std::vector<kcv::HostTensor>& in, const kcv::Bindings& b,
                      const std::vector<double>& scalars) {
  const ContractInfo ci = info(c);
  Data d;
  d.p.B = ci.varlen ? 1 : b.at("B");
  d.p.T = b.at("T");
  d.p.H = b.at("H");
  d.p.K = b.at("K");
  d.p.V = b.at("V");
  d.p.gate = ci.gate;
  d.q = in[0].values();
  d.k = in[1].values();
  d.v = in[2].values();
  d.g = in[3].values();
  d.h0 = in[4].values();
  if (ci.backward) {
    d.dO = in[5].values();
    d.dhT = in[6].values();
  } else {
    d.dO.assign(d.p.v_elems(), 0.0);
    d.dhT.assign(d.p.state_elems(), 0.0);
  }
  if (ci.varlen) {
    for (double x : in.back().values()) d.cu.push_back(static_cast<int64_t>(x));
    d.p.cu_seqlens = d.cu.data();
    d.p.N = b.at("N");
  }
  d.scale = scalars.at(0);
  return d;
}

/// An evaluation: the contract's outputs, in ABI order, as double vectors.
using Evaluation = std::function<std::vector<std::vector<double>>(const Data&, bool backward)>;

template <class T, class P = cpu::Plain>
Evaluation chunked_eval(int64_t C = cpu::kChunk) {
  return [C](const Data& d, bool backward) -> std::vector<std::vector<double>> {
    if (!backward) {
      FwdOut o = chunked_fwd<T, P>(d, C);
      return {o.o, o.hT};
    }
    BwdOut o = chunked_bwd<T, P>(d, C);
    return {o.dq, o.dk, o.dv, o.dg, o.dh0};
  };
}

template <class T, class P = cpu::Plain>
Evaluation sequential_eval() {
  return [](const Data& d, bool backward) -> std::vector<std::vector<double>> {
    if (!backward) {
      FwdOut o = sequential_fwd<T, P>(d);
      return {o.o, o.hT};
    }
    BwdOut o = sequential_bwd<T, P>(d);
    return {o.dq, o.dk, o.dv, o.dg, o.dh0};
  };
}

struct Verdict {
  bool ok = true;
  double worst_ratio = 0;     // max over outputs of err / bound
  std::string evidence;       // the first failing output's description
  std::vector<bool> output_ok;        // per output, ABI order
  std::vector<double> output_ratio;   // per output: max err / bound (finite elements)
  /// On random kinds (value_kind::is_random), as numerics, shapes and values judge them: the
  /// population test (docs/population-test.md). A failure makes ok false (output_ok stays the
  /// worst-case bound's); population_rms is the largest RMS err/sigma over the outputs it ran on.
  bool population_ok = true;
  double population_rms = 0;
};

/// Judges evaluations on the contract's inputs of this kind and seed, at shape b (one reference).
inline std::vector<Verdict> judge(const kcv::Contract& c, const kcv::Bindings& b, const std::string& kind,
                                  uint64_t seed, const std::vector<Evaluation>& evals) {
  kcv::Rng rng(seed);
  const std::vector<kcv::HostTensor> in = c.make_inputs(b, rng, kind);
  const std::vector<double> sc = c.scalar_values(b);
  const std::vector<kcv::RefTensor> ref = c.reference(in, sc, b, kcv::SumOrder::forward);
  const Data d = data_from(c, in, b, sc);
  std::vector<Verdict> out;
  for (const Evaluation& eval : evals) {
    const std::vector<std::vector<double>> got = eval(d, info(c).backward);
    Verdict v;
    for (std::size_t o = 0; o < c.outputs.size(); ++o) {
      const kcv::HostTensor t = kcv::HostTensor::from_values(c.outputs[o].dtype, c.output_shape(o, b), got[o]);
      const kcv::Comparison cmp = kcv::compare(t, ref[o], nullptr, c.accumulate, c.c);
      v.worst_ratio = std::max(v.worst_ratio, cmp.worst_ratio);
      v.output_ok.push_back(cmp.ok());
      v.output_ratio.push_back(cmp.worst_ratio);
      if (!cmp.ok() && v.ok) {
        v.ok = false;
        v.evidence = cmp.describe(c.outputs[o].name, t.shape);
      }
      if (!kcv::value_kind::is_random(kind)) continue;
      const kcv::Population pop = kcv::population_test(t, ref[o], c.accumulate, c.c);
      if (pop.ran()) v.population_rms = std::max(v.population_rms, pop.rms);
      if (!pop.ok() && v.population_ok) {
        v.population_ok = false;
        if (v.ok) v.evidence = pop.describe(c.outputs[o].name, t.shape);
        v.ok = false;
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

/// The bf16/f16 input variants of every glr contract (names as in docs/glr.md).
inline std::vector<std::unique_ptr<kcv::Contract>> reduced_glr_contracts() {
  std::vector<std::unique_ptr<kcv::Contract>> v;
  for (const char* dt : {"_bf16", "_f16"})
    for (const char* form : {"", "_scalar", "_varlen", "_varlen_scalar"})
      for (const char* dir : {"glr_fwd", "glr_bwd"}) v.push_back(kcv::make_glr_contract(std::string(dir) + form + dt));
  return v;
}

/// The dtype of q (and of o, dq, dk, dv) in a glr contract.
inline kcv::DType input_dtype(const kcv::Contract& c) { return c.inputs[0].dtype; }

/// The f32 glr contracts.
inline std::vector<std::unique_ptr<kcv::Contract>> all_glr_contracts() {
  std::vector<std::unique_ptr<kcv::Contract>> v;
  v.push_back(kcv::make_glr_fwd_contract());
  v.push_back(kcv::make_glr_bwd_contract());
  v.push_back(kcv::make_glr_fwd_scalar_contract());
  v.push_back(kcv::make_glr_bwd_scalar_contract());
  v.push_back(kcv::make_glr_fwd_varlen_contract());
  v.push_back(kcv::make_glr_bwd_varlen_contract());
  v.push_back(kcv::make_glr_fwd_varlen_scalar_contract());
  v.push_back(kcv::make_glr_bwd_varlen_scalar_contract());
  return v;
}

/// Every value kind the values gate asks a glr contract for (and "normal").
inline std::vector<std::string> all_kinds(const kcv::Contract& c) {
  namespace vk = kcv::value_kind;
  std::vector<std::string> k = {vk::normal, vk::scaled_up, vk::scaled_down, vk::all_equal, vk::zeros,
                                vk::cancellation, vk::wide_range, vk::subnormal, vk::negated};
  for (const auto& e : c.extra_value_kinds()) k.push_back(e);
  return k;
}

}  // namespace glr::test
