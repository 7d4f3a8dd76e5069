// derive_reference_output (src/kcv/kernelbench/reference_arrays.cpp): the arrays a KernelBench
// case is judged by, from the reference server's blobs. Checked bit for bit against the
// derivation as KernelBenchContract::reference wrote it before session 31 (a pass for the
// calibrated scale, then one loop over every array), kept here as the oracle: the derivation now
// (a pass an array) must change no verdict, evidence number or report count.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"
#include "kcv/dtype.hpp"
#include "kcv/error_model.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/kernelbench/reference_arrays.hpp"
#include "kcv/terms.hpp"
#include "reference_arrays_before.hpp"

namespace kcv {
namespace {

std::string blob_of(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// An answer of n elements: r64 with NaN/±Inf sprinkled in, r32 near it (sometimes far: eager
/// over the bound), E and W, and statuses drawn from `statuses`; all r zero where `zero_output`.
std::array<std::string, 5> answer(std::size_t n, const std::vector<uint8_t>& statuses, bool zero_output,
                                  uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> r64(n), r32(n), E(n), W(n);
  std::string S(n, '\0');
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 3.5e38, 0.0};
  for (std::size_t i = 0; i < n; ++i) {
    r64[i] = zero_output ? 0.0 : normal(rng) * 100;
    r32[i] = zero_output ? 0.0 : static_cast<float>(r64[i]);
    if (!zero_output && rng() % 11 == 0) r32[i] += normal(rng) * 1e-3;  // beyond the derived bound
    if (!zero_output && rng() % 13 == 0) r64[i] = specials[rng() % 5];
    if (!zero_output && rng() % 17 == 0) r32[i] = specials[rng() % 5];
    E[i] = std::abs(normal(rng)) * 50;
    W[i] = rng() % 19 == 0 ? std::numeric_limits<double>::quiet_NaN() : std::abs(normal(rng)) * 7;
    S[i] = static_cast<char>(statuses[rng() % statuses.size()]);
  }
  return {blob_of(r64), blob_of(r32), blob_of(E), blob_of(W), S};
}

void expect_same(const RefTensor& a, const RefTensor& b) {
  EXPECT_TRUE(same_bytes(a.value, b.value));
  EXPECT_TRUE(same_bytes(a.amp, b.amp));
  EXPECT_TRUE(same_bytes(a.mag, b.mag));
  EXPECT_TRUE(same_bytes(a.depth, b.depth));
  EXPECT_TRUE(same_bytes(a.walk, b.walk));
  EXPECT_TRUE(same_bytes(a.classes, b.classes));
}

TEST(KernelBenchReferenceArrays, EqualTheTwoPassDerivationBitForBit) {
  // 3: not a status the server sends; judged as free, as before.
  const std::vector<std::vector<uint8_t>> mixes = {{0}, {1}, {2}, {0, 1}, {0, 1, 2}, {1, 2}, {0, 3}};
  for (bool zero_output : {false, true})
    for (const auto& statuses : mixes)
      for (std::size_t n : {std::size_t{1}, std::size_t{111}, std::size_t{989}}) {
        const auto blobs = answer(n, statuses, zero_output, static_cast<uint32_t>(n * 7 + statuses.size()));
        for (bool with_bound : {true, false})
          for (SumOrder order : {SumOrder::forward, SumOrder::reverse}) {
            SCOPED_TRACE(testing::Message() << "n " << n << " statuses " << statuses.size() << " zero " << zero_output
                                            << " bound " << with_bound << " forward " << (order == SumOrder::forward));
            std::array<int64_t, 4> want_counts{};
            const RefTensor want = reference_arrays_before::derive(blobs.data(), with_bound, order, 12.5, want_counts);
            BoundCounts got_counts;
            int asked = 0;
            const RefTensor got = derive_reference_output(
                blobs.data(), with_bound, order, [&] { return ++asked, 12.5; }, got_counts);
            expect_same(got, want);
            EXPECT_EQ(got_counts.derived, want_counts[0]);
            EXPECT_EQ(got_counts.calibrated, want_counts[1]);
            EXPECT_EQ(got_counts.free, want_counts[2]);
            EXPECT_EQ(got_counts.eager_over, want_counts[3]);
            EXPECT_LE(asked, 1);  // the largest input: at most once, and only where the output is zero
            if (!zero_output) {
              EXPECT_EQ(asked, 0);
            }
          }
      }
}

TEST(KernelBenchReferenceArrays, AZeroOutputsCalibratedScaleComesFromTheLargestInput) {
  // Not vacuous: the calibrated amp must move with the largest input where every r is 0.
  const auto blobs = answer(64, {1}, /*zero_output=*/true, 3);
  BoundCounts c1, c2;
  const RefTensor small = derive_reference_output(blobs.data(), true, SumOrder::forward, [] { return 1.0; }, c1);
  const RefTensor large = derive_reference_output(blobs.data(), true, SumOrder::forward, [] { return 1e6; }, c2);
  ASSERT_EQ(c1.calibrated, 64);
  std::size_t moved = 0;
  for (std::size_t i = 0; i < small.amp.size(); ++i) moved += large.amp[i] > small.amp[i];
  EXPECT_GT(moved, 0u);
}

TEST(KernelBenchReferenceArrays, AnAnswerIsKeptOnceAndFoundAgainWhateverItReplaced) {
  // Real torch: reference() keeps a fresh answer before deriving its arrays (freeing the one it
  // replaces first). The last answer is found again with the same arrays; another case replaces
  // it; each fresh answer is tallied once (kernelbench.bound.references), a found one not at all.
  corpus_test::TempDir tmp;
  KernelBenchSetup setup;
  setup.problem = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum/problem.py";
  setup.python = resolve_python(corpus_test::torch_python(), Settings{});
  setup.workdir = tmp.path();
  const auto k = KernelBenchContract::create(setup);
  const Bindings b = k->nominal();
  Rng rng(5);
  const std::vector<HostTensor> x = k->make_inputs(b, rng, value_kind::normal);
  const std::vector<HostTensor> y = k->make_inputs(b, rng, value_kind::normal);
  auto same = [](const std::vector<RefTensor>& p, const std::vector<RefTensor>& q) {
    if (p.size() != q.size()) return false;
    for (std::size_t o = 0; o < p.size(); ++o)
      if (!same_bytes(p[o].value, q[o].value) || !same_bytes(p[o].amp, q[o].amp) || !same_bytes(p[o].mag, q[o].mag) ||
          !same_bytes(p[o].depth, q[o].depth) || !same_bytes(p[o].walk, q[o].walk) ||
          !same_bytes(p[o].classes, q[o].classes))
        return false;
    return true;
  };
  const auto first = k->reference(x, {}, b, SumOrder::forward);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].value.size(), 4u * 33u);
  EXPECT_TRUE(same(k->reference(x, {}, b, SumOrder::forward), first));  // found: the same arrays
  const auto eager = k->reference(x, {}, b, SumOrder::reverse);         // found: the other order
  EXPECT_FALSE(same_bytes(eager[0].value, first[0].value));
  EXPECT_EQ(k->reference_cache().hits, 2);
  EXPECT_EQ(k->reference_cache().misses, 1);
  const auto other = k->reference(y, {}, b, SumOrder::forward);  // replaces x's answer
  EXPECT_FALSE(same_bytes(other[0].value, first[0].value));
  EXPECT_TRUE(same(k->reference(y, {}, b, SumOrder::forward), other));
  EXPECT_TRUE(same(k->reference(x, {}, b, SumOrder::forward), first));  // asked again, the same
  EXPECT_EQ(k->reference_cache().hits, 3);
  EXPECT_EQ(k->reference_cache().misses, 3);
  const KernelBenchBound bound = k->bound_summary();
  EXPECT_EQ(bound.references, 3);
  ASSERT_EQ(bound.outputs.size(), 1u);
  EXPECT_EQ(bound.outputs[0].derived, 3 * 4 * 33);
}

}  // namespace
}  // namespace kcv
