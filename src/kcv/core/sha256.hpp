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
  uint32_t h_[8];
  unsigned char buf_[64];
  std::size_t used_ = 0;
  uint64_t bytes_ = 0;
};

namespace sha256_detail {
/// The compression function over n whole 64-byte blocks, portable (FIPS 180-4 §6.2.2) and with the
/// x86 SHA extensions (the reference cache hashes hundreds of MB per case: issue 22's H200 profile).
/// Sha256 uses the second where the CPU has them; both are exposed so the tests compare them.
void blocks_portable(uint32_t h[8], const unsigned char* p, std::size_t n);
bool hardware_available();
void blocks_hardware(uint32_t h[8], const unsigned char* p, std::size_t n);  // only if hardware_available()
}  // namespace sha256_detail

/// The digest of a file's bytes, which are written to copy_to as they are read (a copy whose
/// digest is the one returned). Throws std::runtime_error when either file fails. (Without a copy:
/// provenance.hpp's sha256_file.)
std::string sha256_file(const std::string& path, const std::string& copy_to);

}  // namespace kcv
