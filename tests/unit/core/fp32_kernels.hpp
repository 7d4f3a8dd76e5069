// fp32 implementations of the built-in ops, for testing the error model: several legitimate
// evaluation orders (which every contract must accept) and reduced-precision ones (which an fp32
// contract must reject). Plain host code; each takes the contract's inputs and returns the
// output tensor as a candidate would have written it.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kcv/dtype.hpp"
#include "kcv/tensor.hpp"

namespace kcv::testing {

/// How a sum of fp32 terms is evaluated.
enum class Sum {
  sequential,  // left to right
  reverse,     // right to left
  pairwise,    // recursive halving (tree)
  blocked32,   // partials over blocks of 32, then the partials in order (per-warp / tiled)
  split4,      // 4 contiguous slices, a sequential partial each, then the partials in order (split-K)
  kahan,       // compensated
  bf16_acc,    // running sum rounded to bf16 after every add   (reduced precision)
  f16_acc,     // running sum rounded to f16 after every add    (reduced precision)
};

inline const char* sum_name(Sum s) {
  switch (s) {
    case Sum::sequential: return "sequential";
    case Sum::reverse: return "reverse";
    case Sum::pairwise: return "pairwise";
    case Sum::blocked32: return "blocked32";
    case Sum::split4: return "split4";
    case Sum::kahan: return "kahan";
    case Sum::bf16_acc: return "bf16_acc";
    case Sum::f16_acc: return "f16_acc";
  }
  return "?";
}

inline const std::vector<Sum>& legit_sums() {
  static const std::vector<Sum> v = {Sum::sequential, Sum::reverse, Sum::pairwise, Sum::blocked32, Sum::split4,
                                     Sum::kahan};
  return v;
}

inline float to_bf16(float x) { return static_cast<float>(round_to(DType::bf16, x)); }
inline float to_f16(float x) { return static_cast<float>(round_to(DType::f16, x)); }

/// sum_{k in [lo, hi)} term(k) in fp32, in the given way.
inline float sum_f32(const std::function<float(int64_t)>& term, int64_t lo, int64_t hi, Sum how) {
  switch (how) {
    case Sum::sequential: {
      float s = 0;
      for (int64_t k = lo; k < hi; ++k) s += term(k);
      return s;
    }
    case Sum::reverse: {
      float s = 0;
      for (int64_t k = hi; k-- > lo;) s += term(k);
      return s;
    }
    case Sum::pairwise: {
      if (hi - lo <= 2) return hi - lo == 0 ? 0.f : hi - lo == 1 ? term(lo) : term(lo) + term(lo + 1);
      const int64_t mid = lo + (hi - lo) / 2;
      return sum_f32(term, lo, mid, how) + sum_f32(term, mid, hi, how);
    }
    case Sum::blocked32: {
      float s = 0;
      for (int64_t b = lo; b < hi; b += 32) s += sum_f32(term, b, std::min(hi, b + 32), Sum::sequential);
      return s;
    }
    case Sum::split4: {
      const int64_t per = (hi - lo + 3) / 4;
      float s = 0;
      for (int64_t b = lo; b < hi; b += std::max<int64_t>(per, 1))
        s += sum_f32(term, b, std::min(hi, b + std::max<int64_t>(per, 1)), Sum::sequential);
      return s;
    }
    case Sum::kahan: {
      float s = 0, comp = 0;
      for (int64_t k = lo; k < hi; ++k) {
        const float y = term(k) - comp;
        const float t = s + y;
        comp = (t - s) - y;
        s = t;
      }
      return s;
    }
    case Sum::bf16_acc: {
      float s = 0;
      for (int64_t k = lo; k < hi; ++k) s = to_bf16(s + term(k));
      return s;
    }
    case Sum::f16_acc: {
      float s = 0;
      for (int64_t k = lo; k < hi; ++k) s = to_f16(s + term(k));
      return s;
    }
  }
  return NAN;
}

inline std::vector<float> as_floats(const HostTensor& t) {
  const std::vector<double> v = t.values();
  return std::vector<float>(v.begin(), v.end());
}

inline HostTensor from_floats(Shape shape, const std::vector<float>& v) {
  return HostTensor::from_values(DType::f32, std::move(shape), std::vector<double>(v.begin(), v.end()));
}

// ---- add ----

inline HostTensor add_f32(const std::vector<HostTensor>& in, bool bf16_result = false) {
  const auto a = as_floats(in[0]), b = as_floats(in[1]);
  std::vector<float> c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) c[i] = bf16_result ? to_bf16(a[i] + b[i]) : a[i] + b[i];
  return from_floats(in[0].shape, c);
}

// ---- matmul ----

/// What the products are formed from: fp32 inputs, or operands rounded as a reduced-precision
/// tensor core reads them (reduced precision: an fp32 contract must reject them).
enum class MatmulInputs {
  fp32,
  tf32,     // mantissa truncated to 10 bits (raw fp32 data read as TF32)
  tf32_rn,  // rounded to 10 bits, ties to even (cvt to TF32)
  bf16,     // rounded to bf16, ties to even
};

/// Truncates an fp32 mantissa to 10 bits (what a TF32 tensor core reads).
inline float tf32_truncate(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xffffe000u);
}

/// Rounds an fp32 mantissa to 10 bits, ties to even (finite x).
inline float tf32_round(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0x00000fffu + ((u >> 13) & 1u);
  return std::bit_cast<float>(u & 0xffffe000u);
}

inline HostTensor matmul_f32(const std::vector<HostTensor>& in, int64_t M, int64_t N, int64_t K, Sum how,
                             bool fma = false, MatmulInputs inputs = MatmulInputs::fp32) {
  auto A = as_floats(in[0]), B = as_floats(in[1]);
  auto operand = [inputs](float x) {
    switch (inputs) {
      case MatmulInputs::tf32: return tf32_truncate(x);
      case MatmulInputs::tf32_rn: return tf32_round(x);
      case MatmulInputs::bf16: return to_bf16(x);
      default: return x;
    }
  };
  for (float& a : A) a = operand(a);
  for (float& b : B) b = operand(b);
  std::vector<float> C(static_cast<std::size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if (fma) {
        float acc = 0;
        for (int64_t k = 0; k < K; ++k) acc = std::fma(A[i * K + k], B[k * N + j], acc);
        C[i * N + j] = acc;
      } else {
        C[i * N + j] = sum_f32([&](int64_t k) { return A[i * K + k] * B[k * N + j]; }, 0, K, how);
      }
    }
  return from_floats({M, N}, C);
}

// ---- softmax ----

enum class SoftmaxForm {
  classic,      // e = exp(x - m), y = e / s
  reciprocal,   // y = e * (1 / s)
  exp2_fma,     // e = exp2(fma(x, log2e, -fl(m * log2e)))  (flash-style)
  exp2_plain,   // e = exp2(fl(x * log2e) - fl(m * log2e))  (no FMA: backward stable only)
  online,       // one pass: running max with rescaling of the running sum
  unstabilized, // e = exp(x): no max subtraction (wrong at large inputs)
};

inline HostTensor softmax_f32(const HostTensor& xt, int64_t M, int64_t N, Sum how, SoftmaxForm form) {
  const auto x = as_floats(xt);
  std::vector<float> y(x.size()), e(static_cast<std::size_t>(N));
  const float log2e = 1.44269504088896340736f;
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x.data() + i * N;
    float m = -INFINITY;
    for (int64_t j = 0; j < N; ++j) m = std::fmax(m, row[j]);
    if (form == SoftmaxForm::online) {
      // Started from the first element (not from -Inf with s = 0, which turns a leading -Inf
      // into exp(-Inf + Inf) = NaN).
      float rm = row[0], s = 1;
      for (int64_t j = 1; j < N; ++j) {
        if (row[j] > rm) {
          s = s * std::exp(rm - row[j]) + 1.f;
          rm = row[j];
        } else {
          s += std::exp(row[j] - rm);
        }
      }
      for (int64_t j = 0; j < N; ++j) y[i * N + j] = std::exp(row[j] - rm) / s;
      continue;
    }
    const float ml = m * log2e;
    for (int64_t j = 0; j < N; ++j) {
      switch (form) {
        case SoftmaxForm::exp2_fma: e[j] = std::exp2(std::fma(row[j], log2e, -ml)); break;
        case SoftmaxForm::exp2_plain: {
          const volatile float xl = row[j] * log2e;  // keep the compiler from contracting
          e[j] = std::exp2(xl - ml);
          break;
        }
        case SoftmaxForm::unstabilized: e[j] = std::exp(row[j]); break;
        default: e[j] = std::exp(row[j] - m); break;
      }
    }
    const float s = sum_f32([&](int64_t j) { return e[j]; }, 0, N, how);
    const float inv = 1.f / s;
    for (int64_t j = 0; j < N; ++j) y[i * N + j] = form == SoftmaxForm::reciprocal ? e[j] * inv : e[j] / s;
  }
  return from_floats({M, N}, y);
}

// ---- layernorm ----

enum class LayernormForm {
  two_pass,  // mean, then sum (x - mean)^2
  welford,   // running mean / M2
  one_pass,  // E[x^2] - mean^2, clamped at 0
  folded,    // y = fma(x, s, b - mean * s), s = rstd * w
};

inline HostTensor layernorm_f32(const std::vector<HostTensor>& in, float eps, int64_t M, int64_t N, Sum how,
                                LayernormForm form) {
  const auto x = as_floats(in[0]), w = as_floats(in[1]), b = as_floats(in[2]);
  std::vector<float> y(x.size());
  const float n = static_cast<float>(N);
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x.data() + i * N;
    float mean, var;
    if (form == LayernormForm::welford) {
      float mu = 0, m2 = 0;
      for (int64_t j = 0; j < N; ++j) {
        const float delta = row[j] - mu;
        mu += delta / static_cast<float>(j + 1);
        m2 += delta * (row[j] - mu);
      }
      mean = mu;
      var = m2 / n;
    } else if (form == LayernormForm::one_pass) {
      mean = sum_f32([&](int64_t j) { return row[j]; }, 0, N, how) / n;
      const float sq = sum_f32([&](int64_t j) { return row[j] * row[j]; }, 0, N, how) / n;
      const float diff = sq - mean * mean;
      var = diff < 0 ? 0.f : diff;  // clamp rounding below zero; NaN stays NaN (fmaxf would hide it)
    } else {
      mean = sum_f32([&](int64_t j) { return row[j]; }, 0, N, how) / n;
      var = sum_f32([&](int64_t j) { return (row[j] - mean) * (row[j] - mean); }, 0, N, how) / n;
    }
    const float rstd = 1.f / std::sqrt(var + eps);
    for (int64_t j = 0; j < N; ++j) {
      if (form == LayernormForm::folded) {
        const float s = rstd * w[j];
        y[i * N + j] = std::fma(row[j], s, b[j] - mean * s);
      } else {
        y[i * N + j] = (row[j] - mean) * rstd * w[j] + b[j];
      }
    }
  }
  return from_floats({M, N}, y);
}

}  // namespace kcv::testing
