// Drives the error-model tests: runs fp32 implementations on a contract's own input generator
// (every generic value kind, several shapes and seeds) and judges them as the gates do
// (reference in forward order, alternative in reverse order, the contract's c).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/error_model.hpp"

namespace kcv::testing {

using Run = std::function<HostTensor(const std::vector<HostTensor>& inputs, const Bindings& shape)>;

struct Impl {
  std::string name;
  Run run;
};

inline const std::vector<std::string>& generic_kinds() {
  static const std::vector<std::string> k = {
      value_kind::normal,       value_kind::scaled_up,  value_kind::scaled_down,
      value_kind::all_equal,    value_kind::zeros,      value_kind::cancellation,
      value_kind::wide_range,   value_kind::subnormal,  value_kind::negated};
  return k;
}

/// The reference of one case in both orders, as the gates compute it.
struct Refs {
  std::vector<RefTensor> ref, alt;
  Refs(const Contract& c, const Bindings& b, const std::vector<HostTensor>& in) {
    const auto scalars = c.scalar_values(b);
    ref = c.reference(in, scalars, b, SumOrder::forward);
    alt = c.reference(in, scalars, b, SumOrder::reverse);
  }
  Comparison judge(const Contract& c, const HostTensor& got) const {
    return compare(got, ref.at(0), &alt.at(0), c.accumulate, c.c);
  }
  /// The population test, as numerics, shapes and values run it on random inputs.
  Population population(const Contract& c, const HostTensor& got) const {
    return population_test(got, ref.at(0), c.accumulate, c.c);
  }
};

inline Comparison judge(const Contract& c, const Bindings& b, const std::vector<HostTensor>& in,
                        const HostTensor& got) {
  return Refs(c, b, in).judge(c, got);
}

inline std::string case_label(const std::string& impl, const std::string& kind, const Bindings& b, uint64_t seed) {
  return impl + " | " + kind + " | " + bindings_string(b) + " | seed " + std::to_string(seed);
}

inline void report_margin(const std::string& what, double value) {
  std::cout << "[ margin   ] " << what << ": " << value << "\n";
}

/// Every impl must pass on every (shape, kind, seed), and the population test on the random kinds
/// (docs/population-test.md). Returns the largest err/bound seen; reports the largest RMS err/σ.
inline double expect_all_pass(const Contract& c, const std::vector<Bindings>& shapes, const std::vector<Impl>& impls,
                              const std::vector<uint64_t>& seeds, const std::vector<std::string>& kinds = generic_kinds()) {
  double worst = 0, worst_rms = 0;
  for (const Bindings& b : shapes)
    for (const std::string& kind : kinds)
      for (uint64_t seed : seeds) {
        Rng rng(seed);
        const auto in = c.make_inputs(b, rng, kind);
        const Refs refs(c, b, in);
        for (const Impl& impl : impls) {
          const HostTensor got = impl.run(in, b);
          const Comparison cmp = refs.judge(c, got);
          EXPECT_TRUE(cmp.ok()) << case_label(impl.name, kind, b, seed) << ": "
                                << cmp.describe(c.outputs[0].name, got.shape);
          worst = std::max(worst, cmp.worst_ratio);
          if (!value_kind::is_random(kind)) continue;
          const Population pop = refs.population(c, got);
          EXPECT_TRUE(pop.ok()) << case_label(impl.name, kind, b, seed) << ": "
                                << pop.describe(c.outputs[0].name, got.shape);
          if (pop.ran()) worst_rms = std::max(worst_rms, pop.rms);
        }
      }
  report_margin(c.name + " legit worst population RMS err/sigma (lambda " + std::to_string(kPopulationLambda) + ")",
                worst_rms);
  return worst;
}

/// The impl must fail at every seed (at the given shape and kind). Returns the smallest of the
/// worst err/bound ratios (how far outside the model it lands at the least).
inline double expect_all_fail(const Contract& c, const Bindings& b, const Impl& impl, const std::vector<uint64_t>& seeds,
                              const std::string& kind = value_kind::normal) {
  double least = INFINITY;
  for (uint64_t seed : seeds) {
    Rng rng(seed);
    const auto in = c.make_inputs(b, rng, kind);
    const HostTensor got = impl.run(in, b);
    const Comparison cmp = judge(c, b, in, got);
    EXPECT_FALSE(cmp.ok()) << case_label(impl.name, kind, b, seed) << " passed but must fail: "
                           << cmp.describe(c.outputs[0].name, got.shape);
    least = std::min(least, cmp.worst_ratio);
  }
  return least;
}

}  // namespace kcv::testing
