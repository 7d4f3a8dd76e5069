// The arrays kcv judges a KernelBench case by, derived from the reference server's answer
// (docs/kernelbench.md, "In kcv"): per output element the value, amp, mag, depth, walk and
// classes of a RefTensor, from the server's float64 Model (r64), its fp32 eager Model (r32) and,
// with the derived bound, E, W and the status S (adapters/torch/kcv_torch_bound.py).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "kcv/contract.hpp"

namespace kcv {

/// Element i of a blob of float64 values, read in place (a blob's bytes need not be aligned).
inline double double_at(const std::string& blob, std::size_t i) {
  double v;
  std::memcpy(&v, blob.data() + i * sizeof(double), sizeof(double));
  return v;
}

/// Elements of one output: judged by the derived bound, by the calibrated floor, free in class;
/// and derived elements where fp32 eager erred beyond the derived bound (kernelbench.bound).
struct BoundCounts {
  int64_t derived = 0, calibrated = 0, free = 0, eager_over = 0;
};

/// One output's reference from its blobs: `blobs` points at r64 and r32 (float64), followed, where
/// `with_bound`, by E, W (float64, units of u) and S (one byte an element: 0 derived, 1
/// calibrated, 2 free in class). `order` picks the value: forward r64, reverse r32.
/// `largest_input` (the largest finite input magnitude) is called only for an output that is zero
/// everywhere and needs the calibrated scale. Adds this output's elements to `counts`.
RefTensor derive_reference_output(const std::string* blobs, bool with_bound, SumOrder order,
                                  const std::function<double()>& largest_input, BoundCounts& counts);

}  // namespace kcv
