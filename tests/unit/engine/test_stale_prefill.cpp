// gates::vary_prefill's stale data (src/kcv/gates/common.cpp): the outputs hold the case's own
// finite input values, from a seeded place on, in order and wrapping around, output after output;
// a strided output's gaps stay zero. Checked element by element on a contiguous and a strided
// output, so a fast path for either that drops, repeats or misplaces a value fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "kcv/gate.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/tensor.hpp"

namespace kcv {
namespace {

TEST(GateStalePrefill, OutputsHoldTheInputsFiniteValuesInOrderFromOnePlace) {
  uint64_t seed = 1;
  const int64_t index = 3;
  while (gates::prefill_for(seed, index) != gates::Prefill::stale) ++seed;  // a case that gets stale data
  // 29 inputs values, one NaN and one Inf among them (skipped), 27 finite: fewer than an output's
  // 111 elements, so the values wrap around.
  HostTensor in = HostTensor::zeros(DType::f32, {29});
  std::vector<double> finite;
  for (int64_t i = 0; i < in.numel(); ++i) {
    const double v = i == 5 ? std::nan("") : i == 17 ? INFINITY : 0.25 * (i + 1);
    in.set(i, v);
    if (std::isfinite(v)) finite.push_back(v);
  }
  Case c;
  CallSpec call;
  call.inputs.push_back(in);
  call.outputs.push_back(HostTensor::zeros(DType::f32, {3, 37}));
  call.outputs.push_back(HostTensor::zeros(DType::f32, {3, 37}).relayout({40, 1}, 2, std::byte{0xFF}));
  c.calls.push_back(call);
  gates::vary_prefill(c, seed, index);

  const HostTensor& a = c.calls[0].outputs[0];
  std::size_t start = 0;  // where the stale values begin: found from the first element
  while (start < finite.size() && finite[start] != a.get(0)) ++start;
  ASSERT_LT(start, finite.size()) << "the first element is not an input value";
  std::size_t at = start;
  for (const HostTensor& out : c.calls[0].outputs)
    for (int64_t i = 0; i < out.numel(); ++i, at = (at + 1) % finite.size())
      ASSERT_EQ(out.get(i), finite[at]) << "output element " << i;
  // The strided output's gaps: zero bytes (every storage byte is zeroed first).
  const HostTensor& b = c.calls[0].outputs[1];
  for (std::size_t byte = 0; byte < 2 * sizeof(float); ++byte) EXPECT_EQ(b.storage[byte], std::byte{0});
}

}  // namespace
}  // namespace kcv
