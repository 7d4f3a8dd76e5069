/// The error model: per-element bounds from the fp64 reference's magnitude and depth, and the
/// class comparison (finite / NaN / +Inf / -Inf) that comes before any value comparison.
#include "kcv/error_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace kcv {

namespace {

using ClassMask = unsigned;
constexpr ClassMask bit(ValueClass c) { return 1u << static_cast<unsigned>(c); }
constexpr ClassMask kNonFinite = bit(ValueClass::nan) | bit(ValueClass::pos_inf) | bit(ValueClass::neg_inf);
static_assert(bit(ValueClass::finite) == kClassFinite && bit(ValueClass::nan) == kClassNaN &&
              bit(ValueClass::pos_inf) == kClassPosInf && bit(ValueClass::neg_inf) == kClassNegInf);

/// Half the smallest subnormal: the absolute error of one rounding that underflows (IEEE
/// gradual underflow; the standard model fl(x op y) = (x op y)(1 + d) + e, |e| <= this).
double underflow_unit(DType t) {
  switch (t) {
    case DType::f32: return 0x1p-150;
    case DType::f16: return 0x1p-25;
    case DType::bf16: return 0x1p-134;
    default: return 0.0;  // f64: 2^-1075 is below double's range; integers do not round
  }
}

double at(const std::vector<double>& v, std::size_t i) { return i < v.size() ? v[i] : 0.0; }

/// allowed_error with its per-dtype constants looked up once per tensor, not per element.
struct BoundModel {
  double c, u_acc, eta_acc, u_out, eta_out;
  BoundModel(DType out, DType accumulate, double c_)
      : c(c_), u_acc(unit_roundoff(accumulate)), eta_acc(underflow_unit(accumulate)), u_out(unit_roundoff(out)),
        eta_out(underflow_unit(out)) {}
  double operator()(const RefTensor& ref, std::size_t i) const {
    const double depth = at(ref.depth, i), mag = at(ref.mag, i), amp = at(ref.amp, i);
    return c * (u_acc * (depth * mag + amp) + depth * eta_acc) + u_out * std::abs(ref.value[i]) + eta_out;
  }
};

/// population_scale with its per-dtype constants looked up once per tensor.
// NOTES: docs/population-test.md. Without a walk from the reference, each of the c·n roundings the
// worst-case bound counts contributes at most u·m and their contributions sum to at most c·n·u·m,
// so the variance is at most c·n·u²·m² (Higham–Mary's sqrt(n) for any data). amp is taken whole
// (its worst case c·u·amp), in quadrature, as is the output's own rounding u_out·|r|.
struct PopulationModel {
  double c, u_acc, eta_acc, u_out, eta_out;
  PopulationModel(DType out, DType accumulate, double c_)
      : c(c_), u_acc(unit_roundoff(accumulate)), eta_acc(underflow_unit(accumulate)), u_out(unit_roundoff(out)),
        eta_out(underflow_unit(out)) {}
  double operator()(const RefTensor& ref, std::size_t i) const {
    const double depth = at(ref.depth, i);
    if (!(depth >= 1)) return 0.0;
    const double walk = ref.walk.empty() ? std::sqrt(c * depth) * at(ref.mag, i) : ref.walk[i];
    const double amp = c * at(ref.amp, i), out = u_out * ref.value[i];
    return std::sqrt(u_acc * u_acc * (walk * walk + amp * amp) + out * out) + c * depth * eta_acc + eta_out;
  }
};

/// What one reference (one summation order) accepts for element i.
struct Expectation {
  ClassMask classes = 0;
  bool finite_ok() const { return classes & bit(ValueClass::finite); }
};

Expectation expect(const RefTensor& ref, std::size_t i, DType out, DType acc, const BoundModel& allowed) {
  const double r = ref.value[i];
  if (std::isnan(r)) return {bit(ValueClass::nan)};
  // The reference is judged as stored in the output dtype: beyond its range it is ±Inf.
  Expectation e{bit(classify(round_to(out, r)))};
  if (std::isfinite(r) && is_floating(out)) {
    const double bound = allowed(ref, i);
    // NOTES: within the allowed error of the largest finite value, a legitimate implementation
    // may land on either side of the overflow threshold: accept the finite neighbour or ±Inf.
    if (std::abs(r) - bound <= max_finite(out)) e.classes |= bit(ValueClass::finite);
    // Either sign: where the bound exceeds |r| + max (cancelling sums into a narrow output dtype),
    // a legitimate value may overflow on the side opposite to r.
    if (r + bound >= max_finite(out)) e.classes |= bit(ValueClass::pos_inf);
    if (r - bound <= -max_finite(out)) e.classes |= bit(ValueClass::neg_inf);
    // NOTES: where the terms of a sum (depth >= 2) reach the accumulate dtype's range, a partial
    // sum may overflow in some orders (3e38 + 3e38 - 3e38 in fp32): any non-finite class is then
    // legitimate. A single operation (depth 1) has no partial results: its overflow is exact.
    if (is_floating(acc) && at(ref.depth, i) >= 2 && at(ref.mag, i) >= max_finite(acc)) e.classes |= kNonFinite;
  }
  return e;
}

std::string classes_string(ClassMask m) {
  std::string s;
  for (ValueClass c : {ValueClass::finite, ValueClass::nan, ValueClass::pos_inf, ValueClass::neg_inf}) {
    if (!(m & bit(c))) continue;
    if (!s.empty()) s += " or ";
    s += class_name(c);
  }
  return s;
}

}  // namespace

ValueClass classify(double v) {
  if (std::isnan(v)) return ValueClass::nan;
  if (std::isinf(v)) return v > 0 ? ValueClass::pos_inf : ValueClass::neg_inf;
  return ValueClass::finite;
}

const char* class_name(ValueClass c) {
  switch (c) {
    case ValueClass::finite: return "finite";
    case ValueClass::nan: return "NaN";
    case ValueClass::pos_inf: return "+Inf";
    case ValueClass::neg_inf: return "-Inf";
  }
  return "?";
}

// NOTES: beyond DESIGN's c·u_acc·(n·m + amp) + u_out·|r|, two absolute terms for underflow:
// c·n·eta_acc (each of the n accumulate-precision operations may underflow, e.g. a product of
// two subnormal-scale values) and eta_out (rounding a tiny r onto the output's subnormal grid),
// eta = half the smallest subnormal. Both are below 1e-40 for fp32: they only matter where the
// exact result lives near underflow, where a relative bound would reject every IEEE kernel.
double allowed_error(const RefTensor& ref, std::size_t i, DType out, DType accumulate, double c) {
  if (i >= ref.value.size()) throw std::out_of_range("kcv: allowed_error: index past the reference");
  return BoundModel(out, accumulate, c)(ref, i);
}

Comparison compare(const HostTensor& got, const RefTensor& ref, const RefTensor* alt, DType accumulate,
                   double c, bool classes_only, std::size_t max_listed, const PlainTwin* plain,
                   const RefTensor* domain) {
  const int64_t n = got.numel();
  auto check_size = [&](const RefTensor& r, const char* which) {
    if (static_cast<int64_t>(r.value.size()) != n)
      throw std::invalid_argument(fmt::format("kcv: compare: {} reference has {} values for {} elements",
                                              which, r.value.size(), n));
  };
  check_size(ref, "the");
  if (!ref.classes.empty() && static_cast<int64_t>(ref.classes.size()) != n)
    throw std::invalid_argument(fmt::format("kcv: compare: the reference classifies {} elements of {}",
                                            ref.classes.size(), n));
  if (alt) check_size(*alt, "the alternative");
  if (domain) check_size(*domain, "the domain's");
  if (plain && (!plain->out || plain->out->numel() != n))
    throw std::invalid_argument("kcv: compare: the plain twin's output has another number of elements");

  const DType out = got.dtype;
  const std::vector<double> g = got.values();
  const std::vector<double> twin = plain ? plain->out->values() : std::vector<double>{};
  Comparison cmp;
  cmp.checked = n;
  auto record = [&](int64_t i, double expected, double bound, std::string what) {
    ++cmp.bad;
    if (cmp.first.size() < max_listed) cmp.first.push_back({i, g[i], expected, bound, std::move(what)});
  };

  const BoundModel allowed(out, accumulate, c);
  const bool floating_out = is_floating(out);
  const double out_max = floating_out ? max_finite(out) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const RefTensor* src = &ref;
    // NOTES: the common case first. A finite reference within the output dtype's range rounds to
    // a finite output value, so a finite result is of an accepted class whatever the bound and
    // whatever the other order says, and it is judged against this reference: only its value is
    // judged (what the general path below concludes for it, without working out every class).
    const bool classified = !ref.classes.empty();
    const bool common = floating_out && std::isfinite(g[i]) && std::abs(ref.value[k]) <= out_max &&
                        (!classified || (ref.classes[k] & kClassFinite));
    if (!common) {
      Expectation e_ref = expect(ref, k, out, accumulate, allowed);
      if (classified) {
        // The classes of the expansion (docs/nonfinite-classes.md); where finite is among them,
        // the overflow rules of expect() decide which infinities may stand beside it.
        const ClassMask terms = ref.classes[k];
        e_ref.classes = (terms & kNonFinite) | ((terms & kClassFinite) ? e_ref.classes : 0u);
      }
      ClassMask accepted = e_ref.classes;
      Expectation e_alt;
      if (alt && !classified) {
        // Either order's class is legitimate where the orders disagree (Inf - Inf vs Inf).
        e_alt = expect(*alt, k, out, accumulate, allowed);
        accepted |= e_alt.classes;
      }
      // Reached only through products with promised zeros (a finite value on the domain): a
      // kernel that skips those products is legitimate too.
      const bool on_domain = domain && std::isfinite(domain->value[k]);
      Expectation e_dom;
      if (on_domain) {
        e_dom = expect(*domain, k, out, accumulate, allowed);
        accepted |= e_dom.classes;
      }
      const ValueClass cls = classify(g[i]);
      if (!(accepted & bit(cls))) {
        if (plain && classify(twin[k]) == cls) {  // the candidate does the same in the plain setting
          ++cmp.as_plain;
          continue;
        }
        record(i, ref.value[k], 0.0,
               fmt::format("class {}, expected {}", class_name(cls), classes_string(accepted)));
        continue;
      }
      if (cls != ValueClass::finite) continue;
      // Finite and a finite value is accepted: judge the value against the order that allows it.
      if (!e_ref.finite_ok()) {
        if (alt && !classified && (e_alt.finite_ok() || !on_domain)) src = alt;
        else if (on_domain) src = domain;
      }
    }
    if (classes_only) continue;

    const double expected = src->value[k];
    const double bound = allowed(*src, k);
    const double err = std::abs(g[i] - expected);
    double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
    if (std::isnan(bound)) ratio = INFINITY;
    if (plain && !(err <= bound) && ratio <= plain->worst_ratio) {  // no worse than the plain setting
      ++cmp.as_plain;
      cmp.as_plain_worst = std::max(cmp.as_plain_worst, ratio);
      continue;
    }
    if (ratio > cmp.worst_ratio || cmp.worst_index < 0) {
      cmp.worst_ratio = ratio;
      cmp.worst_index = i;
      cmp.worst_error = err;
      cmp.worst_bound = bound;
    }
    if (!(err <= bound))
      record(i, expected, bound, std::isnan(bound) ? "bound undefined (NaN) in the reference" : "error > bound");
  }
  return cmp;
}

double random_walk_scale(double n, double r, double q) { return std::sqrt((n + 1) * (2 * r * r + q) / 6 + q); }

double population_scale(const RefTensor& ref, std::size_t i, DType out, DType accumulate, double c) {
  if (i >= ref.value.size()) throw std::out_of_range("kcv: population_scale: index past the reference");
  return PopulationModel(out, accumulate, c)(ref, i);
}

Population population_test(const HostTensor& got, const RefTensor& ref, DType accumulate, double c) {
  const int64_t n = got.numel();
  if (static_cast<int64_t>(ref.value.size()) != n)
    throw std::invalid_argument(fmt::format("kcv: population_test: the reference has {} values for {} elements",
                                            ref.value.size(), n));
  if (!ref.walk.empty() && static_cast<int64_t>(ref.walk.size()) != n)
    throw std::invalid_argument("kcv: population_test: walk and value differ in size");
  Population p;
  if (!is_floating(got.dtype)) return p;
  const std::vector<double> g = got.values();
  const PopulationModel sigma(got.dtype, accumulate, c);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const double r = ref.value[k];
    if (!std::isfinite(g[k]) || !std::isfinite(r)) continue;
    const double s = sigma(ref, k);
    if (!(s > 0) || !std::isfinite(s)) continue;
    const double z = std::abs(g[k] - r) / s;
    sum += z * z;
    ++p.elements;
    if (p.worst_index < 0 || z > p.worst_z) {
      p.worst_index = i;
      p.worst_z = z;
      p.worst_got = g[k];
      p.worst_expected = r;
      p.worst_sigma = s;
    }
  }
  if (p.elements > 0) p.rms = std::sqrt(sum / static_cast<double>(p.elements));
  return p;
}

std::string Population::describe(const std::string& output_name, const Shape& shape) const {
  std::string s = fmt::format("out '{}': population test on random inputs: RMS err/σ {:.3g} over {} elements {} λ = {:g} "
                              "(σ: the spread of a legitimate order's rounding errors, docs/population-test.md)",
                              output_name, rms, elements, ok() ? "<=" : ">", kPopulationLambda);
  if (worst_index >= 0)
    s += fmt::format("; largest err/σ {:.3g} at {} got {:.9g} expected {:.9g} σ {:.3g}", worst_z,
                     index_string(worst_index, shape), worst_got, worst_expected, worst_sigma);
  return s;
}

std::string Comparison::describe(const std::string& output_name, const Shape& shape) const {
  // NOTES: capped (~400 chars): the count, the first mismatches with coordinates, the worst.
  constexpr std::size_t kListBudget = 320;
  std::string s = fmt::format("out '{}': ", output_name);
  if (ok()) {
    s += fmt::format("all {} elements within the model", checked);
  } else {
    s += fmt::format("{} of {} elements outside the model", bad, checked);
    for (const Mismatch& m : first) {
      std::string piece = fmt::format("; {} got {:.9g} expected {:.9g}", index_string(m.index, shape), m.got,
                                      m.expected);
      if (m.what == "error > bound")
        piece += fmt::format(" bound {:.3g}", m.bound);
      else
        piece += fmt::format(" ({})", m.what);
      if (s.size() + piece.size() > kListBudget) {
        s += "; ...";
        break;
      }
      s += piece;
    }
  }
  if (worst_index >= 0)
    s += fmt::format("; worst err/bound {:.3g} at {}", worst_ratio, index_string(worst_index, shape));
  return s;
}

std::string index_string(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const int64_t extent = shape[d] > 0 ? shape[d] : 1;
    idx[d] = i % extent;
    i /= extent;
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (d) s += ',';
    s += std::to_string(idx[d]);
  }
  if (idx.empty()) s += std::to_string(i);  // 0-d: show the flat index
  return s + "]";
}

}  // namespace kcv
