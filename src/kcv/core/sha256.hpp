// SHA-256 (FIPS 180-4) of bytes and of files: kcv checks files it hands to workers against the
// digests a trusted manifest names (the torch worker's precompiled header, docs/kernelbench.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kcv {

/// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  /// The digest as 64 lowercase hex digits. Call once.
  std::string hex();

 private:
  void block(const unsigned char* p);
  uint32_t h_[8];
  unsigned char buf_[64];
  std::size_t used_ = 0;
  uint64_t bytes_ = 0;
};

/// The digest of a file's bytes, which are written to copy_to as they are read (a copy whose
/// digest is the one returned). Throws std::runtime_error when either file fails. (Without a copy:
/// provenance.hpp's sha256_file.)
std::string sha256_file(const std::string& path, const std::string& copy_to);

}  // namespace kcv
