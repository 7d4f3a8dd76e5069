/// The error model: a bound per element derived from the fp64 reference's magnitude and depth,
/// never a hand-tuned tolerance; and the class comparison (finite / NaN / +Inf / -Inf).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

enum class ValueClass { finite, nan, pos_inf, neg_inf };
ValueClass classify(double v);
const char* class_name(ValueClass c);

struct Mismatch {
  int64_t index = 0;         // logical row-major index
  double got = 0, expected = 0, bound = 0;
  std::string what;          // "error > bound", "class NaN, expected finite", ...
};

struct Comparison {
  int64_t checked = 0;       // elements judged
  int64_t bad = 0;           // elements outside the model
  std::vector<Mismatch> first;   // the first few (capped)
  double worst_ratio = 0;    // max |err| / bound over finite elements
  int64_t worst_index = -1;
  double worst_error = 0, worst_bound = 0;   // at worst_index
  bool ok() const { return bad == 0; }
  /// "out 'y': 3 of 65536 elements outside the model; first at [i] got .. expected .. bound ..".
  std::string describe(const std::string& output_name, const Shape& shape) const;
};

/// The allowed absolute error of one element.
double allowed_error(const RefTensor& ref, std::size_t i, DType out, DType accumulate, double c);

/// Judges got against the reference: element classes must match (the reference rounded to the
/// output dtype: beyond its range it is expected as ±Inf), finite elements must sit within the
/// bound. Where alt (the reference in another summation order) disagrees on an element's class,
/// either class is accepted. With classes_only, finite values are not checked against the bound.
Comparison compare(const HostTensor& got, const RefTensor& ref, const RefTensor* alt, DType accumulate,
                   double c, bool classes_only = false, std::size_t max_listed = 5);

/// Linear index → "[i,j,k]" for evidence.
std::string index_string(int64_t i, const Shape& shape);

}  // namespace kcv
