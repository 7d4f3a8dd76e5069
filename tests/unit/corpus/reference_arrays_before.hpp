// The derivation of a KernelBench case's arrays as KernelBenchContract::reference wrote it before
// session 31 (df75b76: a pass for the calibrated scale, then one loop appending to every array),
// verbatim but for its container of counts: the oracle test_reference_arrays.cpp holds
// derive_reference_output (src/kcv/kernelbench/reference_arrays.cpp) to, bit for bit, and the
// "before" that bench/kernelbench/reference_arrays_time.cpp times it against.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "kcv/candidate.hpp"
#include "kcv/dtype.hpp"
#include "kcv/error_model.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/kernelbench/reference_arrays.hpp"
#include "kcv/terms.hpp"

namespace kcv::reference_arrays_before {

/// counts: derived, calibrated, free, eager over (BoundCounts' order).
inline RefTensor derive(const std::string* blobs, bool with_bound, SumOrder order, double largest_input,
                        std::array<int64_t, 4>& counts) {
  const double u = unit_roundoff(DType::f32);
  const std::string &b64 = blobs[0], &b32 = blobs[1];
  const std::size_t n = b64.size() / sizeof(double);
  double e_max = 0, r_max = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r64 = double_at(b64, i), r32 = double_at(b32, i);
    if (!std::isfinite(r64) || !std::isfinite(r32)) continue;
    e_max = std::max(e_max, std::abs(r32 - r64));
    r_max = std::max(r_max, std::abs(r64));
  }
  const double floor = r_max > 0 ? r_max : largest_input;
  const double scale = kKernelBenchK * std::max(e_max, u * floor);
  RefTensor t;
  const std::string& v = order == SumOrder::forward ? b64 : b32;
  auto calibrated_amp = [&](double r) { return scale / u + (std::isfinite(r) ? std::abs(r) : 0); };
  if (!with_bound) {
    for (std::size_t i = 0; i < n; ++i) {
      t.value.push_back(double_at(v, i));
      t.amp.push_back(calibrated_amp(t.value.back()));
    }
    return t;
  }
  const std::string &bE = blobs[2], &bW = blobs[3], &bS = blobs[4];
  auto class_bit = [](double x) { return static_cast<uint8_t>(1u << static_cast<int>(classify(x))); };
  for (std::size_t i = 0; i < n; ++i) {
    const double r64 = double_at(b64, i), r32 = double_at(b32, i);
    t.value.push_back(double_at(v, i));
    const auto status = static_cast<uint8_t>(bS[i]);
    t.classes.push_back(static_cast<uint8_t>(class_bit(r64) | class_bit(r32) | (status == 2 ? kClassAny : 0)));
    if (status == 0) {
      const double eager = std::isfinite(r64) && std::isfinite(r32) ? 2 * std::abs(r32 - r64) / u : 0;
      const double E = double_at(bE, i), W = double_at(bW, i);
      if (eager / 2 > E + std::abs(r64)) ++counts[3];
      t.amp.push_back(0);
      t.depth.push_back(1);
      t.mag.push_back(std::max(E, eager));
      t.walk.push_back(std::max(W, eager));
      ++counts[0];
    } else if (status == 1) {
      t.amp.push_back(std::max(double_at(bE, i), calibrated_amp(t.value.back())));
      t.depth.push_back(0);
      t.mag.push_back(0);
      t.walk.push_back(0);
      ++counts[1];
    } else {
      t.amp.push_back(0);
      t.depth.push_back(2);
      t.mag.push_back(INFINITY);
      t.walk.push_back(INFINITY);
      ++counts[2];
    }
  }
  return t;
}

}  // namespace kcv::reference_arrays_before
