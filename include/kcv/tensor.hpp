/// Host tensors: a dtype, a logical shape, element strides and a byte storage that spans every
/// addressed element (plus any gaps a non-contiguous layout leaves).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kcv/dtype.hpp"

namespace kcv {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
/// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
std::string shape_string(const Shape& shape);

struct HostTensor {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> stride;    // elements; non-negative
  int64_t offset = 0;             // element offset of element 0 inside storage
  std::vector<std::byte> storage; // span_bytes() bytes

  /// A contiguous tensor with zeroed storage.
  static HostTensor zeros(DType dtype, Shape shape);
  /// A contiguous tensor holding values (row-major), each rounded to dtype.
  static HostTensor from_values(DType dtype, Shape shape, const std::vector<double>& values);

  int64_t numel() const { return kcv::numel(shape); }
  bool is_contiguous() const;
  /// Number of elements storage must hold: offset + largest addressed element + 1 (0 if empty).
  int64_t span_elements() const;
  std::size_t span_bytes() const { return static_cast<std::size_t>(span_elements()) * dtype_size(dtype); }
  /// Storage index (elements) of the logical row-major index i.
  int64_t storage_index(int64_t i) const;

  double get(int64_t i) const;           // logical row-major index
  void set(int64_t i, double v);         // rounds to dtype
  std::vector<double> values() const;    // all elements, logical row-major order

  /// The same logical values in another layout; gaps in the new storage hold gap_byte.
  HostTensor relayout(std::vector<int64_t> new_stride, int64_t new_offset, std::byte gap_byte) const;
  /// Bitwise comparison of the logical elements (not of gaps).
  bool same_bits(const HostTensor& other) const;
  /// First logical index whose bits differ, or -1.
  int64_t first_bit_difference(const HostTensor& other) const;
};

}  // namespace kcv
