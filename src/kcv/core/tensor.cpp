/// Host tensors: logical row-major indexing over strided, offset byte storage.
#include "kcv/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kcv {

namespace {

void check_shape(const Shape& shape) {
  if (shape.size() > 8) throw std::invalid_argument("kcv: tensors have at most 8 dims, got " +
                                                    std::to_string(shape.size()));
  for (int64_t d : shape)
    if (d < 0) throw std::invalid_argument("kcv: negative dimension in shape " + shape_string(shape));
}

}  // namespace

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> stride(shape.size());
  int64_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    stride[d] = s;
    s *= std::max<int64_t>(shape[d], 1);  // size-0/1 dims keep a meaningful stride
  }
  return stride;
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) s += ',';
    s += std::to_string(shape[d]);
  }
  return s + "]";
}

HostTensor HostTensor::zeros(DType dtype, Shape shape) {
  check_shape(shape);
  HostTensor t;
  t.dtype = dtype;
  t.stride = contiguous_strides(shape);
  t.shape = std::move(shape);
  t.storage.assign(t.span_bytes(), std::byte{0});
  return t;
}

HostTensor HostTensor::from_values(DType dtype, Shape shape, const std::vector<double>& values) {
  HostTensor t = zeros(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("kcv: from_values: " + std::to_string(values.size()) +
                                " values for shape " + shape_string(t.shape));
  const std::size_t es = dtype_size(dtype);
  for (std::size_t i = 0; i < values.size(); ++i) store_element(dtype, t.storage.data() + i * es, values[i]);
  return t;
}

bool HostTensor::is_contiguous() const {
  if (offset != 0) return false;
  // contiguous_strides(shape), dimension by dimension from the last, without allocating it:
  // storage_index asks this at every get() and set().
  int64_t want = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 1 && stride[d] != want) return false;  // a size-1 dim's stride is never used
    want *= std::max<int64_t>(shape[d], 1);
  }
  return true;
}

int64_t HostTensor::span_elements() const {
  int64_t last = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * stride.at(d);
  }
  return last + 1;
}

int64_t HostTensor::storage_index(int64_t i) const {
  if (i < 0 || i >= numel())
    throw std::out_of_range("kcv: index " + std::to_string(i) + " outside shape " + shape_string(shape));
  // NOTES: a contiguous tensor's index is i itself, found without the division per dimension below,
  // which was most of the time of loops that get() or set() every element of a large input (kcv's
  // input making, session 30).
  if (is_contiguous()) return i;
  int64_t s = offset;
  for (std::size_t d = shape.size(); d-- > 0;) {
    s += (i % shape[d]) * stride[d];
    i /= shape[d];
  }
  return s;
}

double HostTensor::get(int64_t i) const {
  return load_element(dtype, storage.data() + storage_index(i) * dtype_size(dtype));
}

void HostTensor::set(int64_t i, double v) {
  store_element(dtype, storage.data() + storage_index(i) * dtype_size(dtype), v);
}

std::vector<double> HostTensor::values() const {
  const int64_t n = numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  const std::size_t es = dtype_size(dtype);
  // NOTES: the float dtypes of a contiguous tensor widen in a loop of their own, without a call to
  // load_element per element: compare() and population_test() each read a 16.8M-element output
  // so, at every case (load_element was 4.5% of kcv's samples on a 4096 x 4096 rowsum, session 31).
  // Exact conversions: the same doubles as load_element gives.
  const std::byte* data = storage.data();
  if (is_contiguous() && dtype == DType::f32) {
    for (int64_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, data + i * sizeof(float), sizeof(float));
      out[i] = v;
    }
  } else if (is_contiguous() && dtype == DType::f64) {
    std::memcpy(out.data(), data, static_cast<std::size_t>(n) * sizeof(double));
  } else if (is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) out[i] = load_element(dtype, data + i * es);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = get(i);
  }
  return out;
}

HostTensor HostTensor::relayout(std::vector<int64_t> new_stride, int64_t new_offset,
                                std::byte gap_byte) const {
  if (new_stride.size() != shape.size())
    throw std::invalid_argument("kcv: relayout: " + std::to_string(new_stride.size()) +
                                " strides for shape " + shape_string(shape));
  if (new_offset < 0) throw std::invalid_argument("kcv: relayout: negative offset");
  for (int64_t s : new_stride)
    if (s < 0) throw std::invalid_argument("kcv: relayout: negative stride");
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.stride = std::move(new_stride);
  t.offset = new_offset;
  t.storage.assign(t.span_bytes(), gap_byte);

  // NOTES: a layout that maps two logical elements to one address cannot hold distinct values;
  // refuse it rather than return a tensor whose values silently differ.
  const int64_t n = numel();
  std::vector<bool> used(static_cast<std::size_t>(t.span_elements()), false);
  const std::size_t es = dtype_size(dtype);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t dst = t.storage_index(i);
    if (used[dst])
      throw std::invalid_argument("kcv: relayout: strides alias elements of shape " + shape_string(shape));
    used[dst] = true;
    std::memcpy(t.storage.data() + dst * es, storage.data() + storage_index(i) * es, es);
  }
  return t;
}

bool HostTensor::same_bits(const HostTensor& other) const { return first_bit_difference(other) < 0; }

int64_t HostTensor::first_bit_difference(const HostTensor& other) const {
  // Tensors of another dtype or shape differ "from the start".
  if (dtype != other.dtype || shape != other.shape) return 0;
  const int64_t n = numel();
  const std::size_t es = dtype_size(dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(storage.data() + storage_index(i) * es,
                    other.storage.data() + other.storage_index(i) * es, es) != 0)
      return i;
  }
  return -1;
}

}  // namespace kcv
