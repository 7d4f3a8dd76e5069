// add_ok_cxx.cpp: positive control for the add contract, cpu backend, written in C++ (checks
// kcv's c++ build path and an extern "C" kcv_run; KCV_EXPORT supplies the linkage).
//
// c[i] = a[i] + b[i] in fp32. Reads a and b through their strides (any sign, any element
// alignment), writes every element of c, keeps no state.
// Expected: PASS on all 12 gates.
#include <kcv/abi.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace {

// The ABI's clean refusal: a message in call->error, a non-zero return.
[[gnu::format(printf, 2, 3)]] int refuse(const kcv_call* call, const char* fmt, ...) {
  if (call->error && call->error_len > 0) {
    std::va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(call->error, static_cast<std::size_t>(call->error_len), fmt, ap);
    va_end(ap);
  }
  return 1;
}

bool is_f32_vector(const kcv_tensor& t) { return t.dtype == KCV_F32 && t.ndim == 1 && t.shape[0] >= 0; }

}  // namespace

KCV_EXPORT int kcv_run(const kcv_call* call) {
  if (!call) return 1;
  if (call->abi_version != KCV_ABI_VERSION)
    return refuse(call, "ABI version %d, this candidate speaks %d", static_cast<int>(call->abi_version), KCV_ABI_VERSION);
  if (call->n_inputs != 2 || call->n_outputs != 1 || call->n_scalars != 0 || !call->inputs || !call->outputs)
    return refuse(call, "expected 2 inputs, 1 output, 0 scalars; got %d, %d, %d", static_cast<int>(call->n_inputs),
                  static_cast<int>(call->n_outputs), static_cast<int>(call->n_scalars));
  const kcv_tensor& a = call->inputs[0];
  const kcv_tensor& b = call->inputs[1];
  const kcv_tensor& c = call->outputs[0];
  const char* names[] = {"a", "b", "c"};
  const kcv_tensor* ts[] = {&a, &b, &c};
  for (int t = 0; t < 3; ++t)
    if (!is_f32_vector(*ts[t])) return refuse(call, "%s: expected a rank-1 f32 tensor", names[t]);
  const int64_t n = a.shape[0];
  if (b.shape[0] != n || c.shape[0] != n)
    return refuse(call, "shapes do not agree: a[%lld] b[%lld] c[%lld]", static_cast<long long>(n),
                  static_cast<long long>(b.shape[0]), static_cast<long long>(c.shape[0]));
  if (n > 0 && (!a.data || !b.data || !c.data)) return refuse(call, "null data");

  const auto* pa = static_cast<const float*>(a.data);
  const auto* pb = static_cast<const float*>(b.data);
  auto* pc = static_cast<float*>(c.data);
  for (int64_t i = 0; i < n; ++i) pc[i * c.stride[0]] = pa[i * a.stride[0]] + pb[i * b.stride[0]];
  return 0;
}
