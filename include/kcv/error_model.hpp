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
  int64_t as_plain = 0;      // elements outside the model, accepted as no worse than the plain twin
  double as_plain_worst = 0; // max |err| / bound over those (finite ones)
  bool ok() const { return bad == 0; }
  /// "out 'y': 3 of 65536 elements outside the model; first at [i] got .. expected .. bound ..".
  std::string describe(const std::string& output_name, const Shape& shape) const;
};

/// The allowed absolute error of one element.
double allowed_error(const RefTensor& ref, std::size_t i, DType out, DType accumulate, double c);

/// What the candidate returned for the same inputs in the plain setting (CallSpec::plain_twin,
/// docs/tolerance-independence.md), and its worst error/bound against the same reference (>= 1).
struct PlainTwin {
  const HostTensor* out = nullptr;
  double worst_ratio = 1;
};

/// Judges got against the reference: element classes must match (the reference rounded to the
/// output dtype: beyond its range it is expected as ±Inf), finite elements must sit within the
/// bound. Where the reference classifies its terms (RefTensor::classes), those classes are
/// accepted and alt is not used; otherwise, where alt (the reference in another summation order)
/// disagrees on an element's class, either class is accepted. With classes_only, finite values are not checked against the bound.
/// With plain, an element the reference rejects is accepted (counted in as_plain) when its class
/// is the twin's there, or, finite, when its error is within plain->worst_ratio · bound.
/// With domain (the reference on the problem's domain: docs/nonfinite-classes.md, "Structural
/// zeros"), where its value is finite the classes it allows are accepted too, and a finite result
/// that neither order allows is judged against it; NaN there adds nothing.
Comparison compare(const HostTensor& got, const RefTensor& ref, const RefTensor* alt, DType accumulate,
                   double c, bool classes_only = false, std::size_t max_listed = 5,
                   const PlainTwin* plain = nullptr, const RefTensor* domain = nullptr);

/// The population test (docs/population-test.md). On random inputs the rounding errors of a
/// legitimate order are random too, with a spread sigma_i per element that grows like sqrt(n), not
/// like the worst-case bound's n: the RMS of z_i = |got_i - r_i| / sigma_i over an output must stay
/// <= kPopulationLambda. Reduced precision (TF32, bf16 operands) lands far above it at every depth.
inline constexpr double kPopulationLambda = 4;
/// Fewer elements than this in an output: the test does not run (the worst-case bound judges alone).
inline constexpr int64_t kPopulationMinElements = 64;

/// RefTensor::walk of a sum of n terms with exact sum r and sum of squares q, its terms i.i.d.
/// (any order fixed by position then sees them in random order): sqrt of the expected sum of the
/// squared partial sums of the sequential order, (n + 1)(2r² + q)/6, plus q for the terms' own
/// roundings.
double random_walk_scale(double n, double r, double q);

struct Population {
  int64_t elements = 0;        // elements judged: a reduction (depth >= 1), finite, sigma > 0
  double rms = 0;              // sqrt(mean z_i²)
  int64_t worst_index = -1;    // the largest z_i ...
  double worst_z = 0, worst_got = 0, worst_expected = 0, worst_sigma = 0;  // ... and its data
  bool ran() const { return elements >= kPopulationMinElements; }
  bool ok() const { return !ran() || rms <= kPopulationLambda; }
  /// "out 'C': population test on random inputs: RMS err/σ 68 over 16384 elements > λ = 4 ...".
  std::string describe(const std::string& output_name, const Shape& shape) const;
};

/// sigma_i of the population test: sqrt(u_acc²·(walk² + (c·amp)²) + (u_out·r)²) plus the
/// worst-case model's underflow terms; 0 where the element is not a reduction (depth < 1).
double population_scale(const RefTensor& ref, std::size_t i, DType out, DType accumulate, double c);

/// The population test of got against ref (finite elements of both only).
Population population_test(const HostTensor& got, const RefTensor& ref, DType accumulate, double c);

/// Linear index → "[i,j,k]" for evidence.
std::string index_string(int64_t i, const Shape& shape);

}  // namespace kcv
