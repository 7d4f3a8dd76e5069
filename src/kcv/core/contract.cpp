/// Contract base: shape resolution, scalar values, default input drawing and the generic value
/// kinds of the values gate.
#include "kcv/contract.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace kcv {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

/// Parses a whole string as a (signed) integer; false if it is not one.
bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

/// Uniform in (0, 1), from the top 53 bits of one draw.
// NOTES: hand-rolled (like normal() below) instead of std::*_distribution, whose algorithms
// differ between standard libraries: a seed must replay the same inputs wherever kcv was built
// (mt19937_64 is fully specified; only libm's log/cos could differ, in the last bit).
double uniform01(Rng& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53; }

double uniform(Rng& rng, double lo, double hi) { return lo + (hi - lo) * uniform01(rng); }

/// N(0,1) by Box-Muller (one value per call: simple and stateless).
double normal(Rng& rng) {
  const double u1 = uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

/// 2^(emin - 4): a scale at which N(0,1) draws land in the dtype's subnormal range
/// (f32/bf16 2^-130 ~ 7e-40, f16 2^-18, f64 2^-1026).
double subnormal_scale(DType t) {
  switch (t) {
    case DType::f64: return 0x1p-1026;
    case DType::f32: return 0x1p-130;
    case DType::bf16: return 0x1p-130;
    case DType::f16: return 0x1p-18;
    default: return 1.0;
  }
}

/// Smallest positive value of a dtype (the smallest subnormal of a floating dtype, 1 for integers):
/// what a positive-domain value that rounded to zero becomes.
double min_positive(DType t) {
  switch (t) {
    case DType::f64: return 0x1p-1074;
    case DType::f32: return 0x1p-149;
    case DType::bf16: return 0x1p-133;
    case DType::f16: return 0x1p-24;
    default: return 1.0;
  }
}

double project(Domain d, double v) {
  switch (d) {
    case Domain::nonpositive: return v > 0 ? -v : v;  // keeps +0 (a valid log-gate of 0)
    case Domain::positive: return std::abs(v);
    default: return v;
  }
}

/// The value a device sees for v in an input of this spec: finite (clamped to the dtype's
/// range), inside the domain, rounded to the dtype.
double finish(const TensorSpec& spec, double v) {
  const double big = max_finite(spec.dtype);
  v = std::clamp(project(spec.domain, v), -big, big);
  v = round_to(spec.dtype, v);
  if (spec.domain == Domain::positive && !(v > 0)) v = min_positive(spec.dtype);
  return v;
}

}  // namespace

const char* structure_name(Structure s) {
  switch (s) {
    case Structure::none: return "none";
    case Structure::upper: return "upper triangular";
    case Structure::lower: return "lower triangular";
    case Structure::symmetric: return "symmetric";
  }
  return "?";
}

namespace {

/// The square side of a structured input's last two dimensions at this shape, or 0 where the
/// structure does not apply (no structure, fewer than two dimensions, not square).
int64_t structured_side(Structure s, const Shape& shape) {
  if (s == Structure::none || shape.size() < 2) return 0;
  const int64_t n = shape[shape.size() - 1];
  return n == shape[shape.size() - 2] && n >= 2 ? n : 0;
}

/// Element access by logical index for the loops below, which touch every element of an input:
/// a row-major tensor's element j is at j, found once per tensor (HostTensor::get and set find it
/// per call, half of these loops' time on a 4096 x 4096 input).
class Elements {
 public:
  explicit Elements(HostTensor& t) : t_(t), size_(dtype_size(t.dtype)), row_major_(t.is_contiguous()) {}
  double get(int64_t j) const { return load_element(t_.dtype, at(j)); }
  void set(int64_t j, double v) { store_element(t_.dtype, at(j), v); }

 private:
  std::byte* at(int64_t j) const {
    return t_.storage.data() + static_cast<std::size_t>(row_major_ ? j : t_.storage_index(j)) * size_;
  }
  HostTensor& t_;
  std::size_t size_;
  bool row_major_;
};

}  // namespace

void Contract::keep_structure(std::vector<HostTensor>& in) const {
  for (std::size_t i = 0; i < in.size() && i < inputs.size(); ++i) {
    const Structure s = inputs[i].structure;
    HostTensor& t = in[i];
    const int64_t n = structured_side(s, t.shape);
    if (n == 0) continue;
    Elements e(t);
    const int64_t matrices = t.numel() / (n * n);
    for (int64_t m = 0; m < matrices; ++m) {
      const int64_t base = m * n * n;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n; ++c) {
          if (s == Structure::upper && r > c) e.set(base + r * n + c, 0.0);
          else if (s == Structure::lower && r < c) e.set(base + r * n + c, 0.0);
          else if (s == Structure::symmetric && r > c) e.set(base + r * n + c, e.get(base + c * n + r));
        }
    }
  }
}

int64_t Contract::free_index(std::size_t input, const Shape& shape, int64_t flat) const {
  const Structure s = input < inputs.size() ? inputs[input].structure : Structure::none;
  const int64_t n = structured_side(s, shape);
  if (n == 0) return flat;
  const int64_t base = flat / (n * n) * (n * n), r = flat % (n * n) / n, c = flat % n;
  const bool free = s == Structure::lower ? r >= c : r <= c;  // upper and symmetric keep the upper triangle
  return free ? flat : base + c * n + r;
}

bool value_kind::is_random(const std::string& kind) {
  // NOTES: the others set values by rule (all equal, zeros, alternating ±1), reach the edges of the
  // range (subnormals) or mix magnitudes by 10^±6 (wide range): their rounding errors are
  // correlated or exactly zero, outside the probabilistic model.
  return kind == normal || kind == scaled_up || kind == scaled_down || kind == negated;
}

std::string bindings_string(const Bindings& b) {
  std::string s;
  for (const auto& [name, value] : b) {
    if (!s.empty()) s += ", ";
    s += name + "=" + std::to_string(value);
  }
  return s;
}

Bindings Contract::nominal() const {
  Bindings b;
  for (const auto& s : symbols) b[s.name] = s.nominal;
  return b;
}

std::vector<double> Contract::scalar_values(const Bindings& b) const {
  std::vector<double> v;
  v.reserve(scalars.size());
  for (const auto& s : scalars) {
    if (!s.value) throw std::logic_error("kcv: contract " + name + ": scalar '" + s.name + "' has no value");
    v.push_back(s.value(b));
  }
  return v;
}

std::vector<HostTensor> Contract::make_outputs(const Bindings& b) const {
  std::vector<HostTensor> out;
  out.reserve(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    out.push_back(HostTensor::zeros(outputs[i].dtype, output_shape(i, b)));
  return out;
}

Shape Contract::resolve(const std::vector<std::string>& dims, const Bindings& b) {
  Shape shape;
  shape.reserve(dims.size());
  for (const auto& raw : dims) {
    const std::string_view dim = trim(raw);
    int64_t v = 0;
    if (parse_int(dim, v)) {
      if (v < 0) throw std::invalid_argument("kcv: dimension '" + raw + "' is negative");
      shape.push_back(v);
      continue;
    }
    // "SYM", "SYM+k", "SYM-k": the symbol is everything before the last sign.
    std::string_view sym = dim;
    int64_t delta = 0;
    const auto sign = dim.find_last_of("+-");
    if (sign != std::string_view::npos && sign > 0) {
      sym = trim(dim.substr(0, sign));
      if (!parse_int(trim(dim.substr(sign + 1)), delta))
        throw std::invalid_argument("kcv: bad dimension '" + raw + "'");
      if (dim[sign] == '-') delta = -delta;
    }
    const auto it = b.find(std::string(sym));
    if (it == b.end())
      throw std::invalid_argument("kcv: dimension '" + raw + "' names an unbound symbol (bindings: " +
                                  bindings_string(b) + ")");
    const int64_t value = it->second + delta;
    if (value < 0) throw std::invalid_argument("kcv: dimension '" + raw + "' is negative");
    shape.push_back(value);
  }
  return shape;
}

double Contract::draw(Domain d, Rng& rng) {
  const double x = normal(rng);
  switch (d) {
    case Domain::nonpositive: return -std::abs(x);
    // NOTES: +2^-10 keeps positive draws away from 0 (and from underflow once scaled by 1e-4).
    case Domain::positive: return std::abs(x) + 0x1p-10;
    default: return x;
  }
}

std::vector<HostTensor> Contract::make_inputs(const Bindings& shape, Rng& rng,
                                              const std::string& kind) const {
  std::vector<HostTensor> in;
  in.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& spec = inputs[i];
    HostTensor t = HostTensor::zeros(spec.dtype, input_shape(i, shape));
    // Structural inputs (offsets, lengths) stay zero here: a contract with any overrides
    // make_inputs and fills them.
    if (spec.domain != Domain::structural) {
      const int64_t n = t.numel();
      for (int64_t j = 0; j < n; ++j) t.set(j, finish(spec, draw(spec.domain, rng)));
    }
    in.push_back(std::move(t));
  }
  apply_value_kind(in, kind, rng);
  keep_structure(in);
  return in;
}

void Contract::apply_value_kind(std::vector<HostTensor>& in, const std::string& kind, Rng& rng) const {
  namespace vk = value_kind;
  static const std::string kKinds[] = {vk::normal, vk::scaled_up, vk::scaled_down, vk::all_equal, vk::zeros,
                                       vk::cancellation, vk::wide_range, vk::subnormal, vk::negated};
  if (std::find(std::begin(kKinds), std::end(kKinds), kind) == std::end(kKinds))
    throw std::invalid_argument("kcv: contract " + name + ": unknown value kind '" + kind + "'");
  if (kind == vk::normal) return;
  if (in.size() != inputs.size())
    throw std::invalid_argument("kcv: apply_value_kind: " + std::to_string(in.size()) + " tensors for " +
                                std::to_string(inputs.size()) + " input specs");

  // The kind, once (a string compared per element was a third of this loop's time).
  enum class Kind { scaled_up, scaled_down, all_equal, zeros, cancellation, wide_range, subnormal, negated };
  const Kind k = kind == vk::scaled_up      ? Kind::scaled_up
                 : kind == vk::scaled_down  ? Kind::scaled_down
                 : kind == vk::all_equal    ? Kind::all_equal
                 : kind == vk::zeros        ? Kind::zeros
                 : kind == vk::cancellation ? Kind::cancellation
                 : kind == vk::wide_range   ? Kind::wide_range
                 : kind == vk::subnormal    ? Kind::subnormal
                                            : Kind::negated;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const TensorSpec& spec = inputs[i];
    HostTensor& t = in[i];
    if (spec.domain == Domain::structural) continue;
    // Scaling kinds only mean something for floating inputs; integer data is left as drawn.
    const bool floating = is_floating(t.dtype);
    const int64_t n = t.numel();
    const double shared = draw(spec.domain, rng);  // all equal: one value per tensor
    Elements e(t);
    for (int64_t j = 0; j < n; ++j) {
      const double x = e.get(j);
      double v = x;
      switch (k) {
        case Kind::scaled_up:
          if (floating) v = x * 1e4;
          break;
        case Kind::scaled_down:
          if (floating) v = x * 1e-4;
          break;
        case Kind::all_equal: v = shared; break;
        case Kind::zeros: v = 0; break;
        case Kind::cancellation: {
          // ±(1 + noise), alternating by logical index: sums cancel to ~sqrt(n)·2^-8 of their
          // magnitude n.
          const double noise = 0x1p-8 * normal(rng);
          v = (j % 2 == 0 ? 1.0 : -1.0) * (1.0 + noise);
          break;
        }
        case Kind::wide_range:
          if (floating) v = x * std::pow(10.0, uniform(rng, -6.0, 6.0));
          break;
        case Kind::subnormal:
          if (floating) v = x * subnormal_scale(t.dtype);
          break;
        case Kind::negated: v = -x; break;
      }
      e.set(j, finish(spec, v));
    }
  }
}

int64_t mid_block_index(int64_t n, uint64_t seed) {
  if (n < 3) return -1;
  Rng rng(seed ^ 0x6e6f6e66696e6974ULL);  // "nonfinit": not the stream of any case's inputs
  for (;;) {
    const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    if (n <= 16 ? (i > 0 && i < n - 1) : (i % 16 != 0 && i % 16 != 15)) return i;
  }
}

std::vector<int64_t> Contract::nonfinite_positions(std::size_t input, const Bindings& shape, uint64_t seed) const {
  const Shape sh = input_shape(input, shape);
  const int64_t n = kcv::numel(sh);
  std::vector<int64_t> at = {0, 31, 32, 63, 64, n / 2, n - 1, mid_block_index(n, seed + input)};
  std::erase_if(at, [&](int64_t i) { return i < 0 || i >= n; });
  for (int64_t& i : at) i = free_index(input, sh, i);
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

}  // namespace kcv
