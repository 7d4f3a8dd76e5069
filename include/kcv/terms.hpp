/// The non-finite structure of an expansion, and the output classes it allows (DESIGN §4 (c),
/// docs/nonfinite-classes.md). A reference output that is a sum of products, r = Σ_j Π_f φ_jf, may
/// be evaluated in any order that re-associates its sums, pulls common factors out of them and
/// groups its products; every such order is a grouping of the atomic terms Π_f φ_jf. `Terms`
/// records which kinds of atomic terms an expansion holds: a sum's kinds are the union of its
/// parts', a product's come from every pair of terms. classes() is the rule that turns them into
/// the set of classes (finite / NaN / +Inf / −Inf) some legitimate order gives.
///
/// Header-only and free of other kcv headers, so that references outside kcv (glr) use it too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kcv {

/// Class-mask bits: bit c is set when class c is allowed (1 << kcv::ValueClass).
inline constexpr uint8_t kClassFinite = 1, kClassNaN = 2, kClassPosInf = 4, kClassNegInf = 8;
inline constexpr uint8_t kClassAny = kClassFinite | kClassNaN | kClassPosInf | kClassNegInf;
inline constexpr uint8_t kClassNonFinite = kClassNaN | kClassPosInf | kClassNegInf;

struct Terms {
  /// Kinds of atomic terms (bits of `kinds`).
  enum : uint8_t {
    pos = 1,         // finite, > 0
    neg = 2,         // finite, < 0
    zero = 4,        // finite, a zero factor
    pos_inf = 8,     // an infinite factor, the other factors finite and non-zero; > 0
    neg_inf = 16,    // the same, < 0
    zero_inf = 32,   // an infinite factor and a zero factor: NaN wherever that product is formed
    nan = 64,        // a NaN factor: NaN in every order
    nan_maybe = 128, // a factor that is NaN in some legitimate orders (set by the reference)
  };
  static constexpr uint8_t finite_kinds = pos | neg | zero, signed_inf = pos_inf | neg_inf;

  uint8_t kinds = 0;  // 0: no terms (the empty sum)
  /// The smallest product of a subset of the finite factors of a finite non-zero term (lo), resp.
  /// of an infinite term (lo_inf): the product of the factors below 1 in magnitude, minimised over
  /// the terms. A kernel that forms that partial product first may flush it to zero; an infinite
  /// term whose lo_inf is below the smallest normal of the precision it is formed in may meet 0.
  double lo = 1, lo_inf = 1;

  /// One factor with value x.
  static Terms factor(double x) {
    Terms t;
    if (std::isnan(x)) t.kinds = nan;
    else if (std::isinf(x)) t.kinds = x > 0 ? pos_inf : neg_inf;
    else if (x == 0) t.kinds = zero;
    else {
      t.kinds = x > 0 ? pos : neg;
      t.lo = std::min(1.0, std::fabs(x));
    }
    return t;
  }
  /// The factor exp(z) of a single argument z: 0 for −Inf, +Inf for +Inf, NaN for NaN.
  static Terms exp_factor(double z) {
    if (std::isnan(z)) return factor(z);
    return factor(std::exp(z));
  }

  bool empty() const { return kinds == 0; }

  Terms& operator+=(const Terms& b) {
    kinds |= b.kinds;
    lo = std::min(lo, b.lo);
    lo_inf = std::min(lo_inf, b.lo_inf);
    return *this;
  }
  friend Terms operator+(Terms a, const Terms& b) { return a += b; }

  /// Every sign flipped.
  friend Terms operator-(Terms a) {
    const uint8_t k = a.kinds;
    a.kinds = static_cast<uint8_t>((k & ~(pos | neg | pos_inf | neg_inf)) | ((k & pos) ? neg : 0) |
                                   ((k & neg) ? pos : 0) | ((k & pos_inf) ? neg_inf : 0) |
                                   ((k & neg_inf) ? pos_inf : 0));
    return a;
  }

  /// The expansion of a·b: every pair of a term of a and a term of b.
  friend Terms operator*(const Terms& a, const Terms& b) {
    Terms r;
    const uint8_t A = a.kinds, B = b.kinds;
    if (!A || !B) return r;
    const uint8_t k = A | B;
    uint8_t out = k & (nan | nan_maybe);
    const bool ap = A & pos, an = A & neg, az = A & zero, bp = B & pos, bn = B & neg, bz = B & zero;
    const bool aip = A & pos_inf, ain = A & neg_inf, bip = B & pos_inf, bin = B & neg_inf;
    const bool afin = ap || an, bfin = bp || bn, ainf = aip || ain, binf = bip || bin;
    // finite × finite
    if ((ap && bp) || (an && bn)) out |= pos;
    if ((ap && bn) || (an && bp)) out |= neg;
    if ((az && (bfin || bz)) || (bz && (afin || az))) out |= zero;
    // infinite × non-zero finite, infinite × infinite: the sign of the product
    if ((aip && (bp || bip)) || (ain && (bn || bin)) || (bip && ap) || (bin && an)) out |= pos_inf;
    if ((aip && (bn || bin)) || (ain && (bp || bip)) || (bip && an) || (bin && ap)) out |= neg_inf;
    // infinite × zero, and 0·Inf terms times anything that is a number
    if ((ainf && bz) || (binf && az) || ((A & zero_inf) && (B & ~nan)) || ((B & zero_inf) && (A & ~nan)))
      out |= zero_inf;
    r.kinds = out;
    if (afin && bfin) r.lo = a.lo * b.lo;
    double li = 1;
    if (ainf && bfin) li = std::min(li, a.lo_inf * b.lo);
    if (afin && binf) li = std::min(li, a.lo * b.lo_inf);
    if (ainf && binf) li = std::min(li, a.lo_inf * b.lo_inf);
    r.lo_inf = li;
    return r;
  }

  /// The same terms, each with a factor that is NaN in some legitimate orders when `on`.
  Terms maybe_nan(bool on = true) const {
    Terms t = *this;
    if (on && t.kinds) t.kinds |= nan_maybe;
    return t;
  }

  /// The classes some legitimate order of the sum gives (kClass* mask), with partial products
  /// below `tiny` (the smallest normal of the precision a kernel forms them in) possibly zero.
  ///   a NaN term                         → NaN only
  ///   infinite terms                     → the signs present; NaN too where both signs are present,
  ///                                        a 0·Inf term (or one that may vanish), or a maybe-NaN factor
  ///   finite terms only                  → finite (the error model's overflow rules apply), and NaN
  ///                                        with a maybe-NaN factor
  uint8_t classes(double tiny) const {
    if (kinds & nan) return kClassNaN;
    const bool maybe = kinds & nan_maybe;
    // NOTES: 2·tiny: the partial product is itself rounded; a value just above the threshold
    // may land below it (then flush) in the kernel's precision.
    const bool zi = (kinds & zero_inf) || ((kinds & signed_inf) && lo_inf < 2 * tiny);
    if ((kinds & signed_inf) || zi) {
      uint8_t m = 0;
      if (kinds & pos_inf) m |= kClassPosInf;
      if (kinds & neg_inf) m |= kClassNegInf;
      if (((kinds & pos_inf) && (kinds & neg_inf)) || zi || maybe) m |= kClassNaN;
      return m;
    }
    return static_cast<uint8_t>(kClassFinite | (maybe ? kClassNaN : 0));
  }
};

}  // namespace kcv
