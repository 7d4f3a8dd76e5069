// SHA-256 against FIPS 180-4's published vectors, and sha256_file's copy.
#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kcv/core/sha256.hpp"

namespace kcv {
namespace {

std::string digest(const std::string& s) {
  Sha256 h;
  h.update(s.data(), s.size());
  return h.hex();
}

TEST(Sha256, PublishedVectors) {
  EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digest(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, UpdatesInPiecesAreOneMessage) {
  const std::string text(1021, 'x');  // a prime length: pieces straddle every block boundary
  Sha256 h;
  for (std::size_t at = 0; at < text.size(); at += 61) h.update(text.data() + at, std::min<std::size_t>(61, text.size() - at));
  EXPECT_EQ(h.hex(), digest(text));
}

// The x86 SHA-extension compression against the portable one, block by block from one state and
// over long runs (the published vectors above go through whichever this CPU uses).
TEST(Sha256, HardwareAndPortableCompressionAgree) {
  if (!sha256_detail::hardware_available()) GTEST_SKIP() << "this CPU has no SHA extensions: only the portable path runs";
  std::mt19937_64 rng(7);
  std::vector<unsigned char> bytes(64 * 4099);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  for (std::size_t blocks : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(17), std::size_t(4099)}) {
    uint32_t a[8], b[8];
    for (int i = 0; i < 8; ++i) a[i] = b[i] = static_cast<uint32_t>(rng());
    sha256_detail::blocks_portable(a, bytes.data(), blocks);
    sha256_detail::blocks_hardware(b, bytes.data(), blocks);
    EXPECT_TRUE(std::equal(a, a + 8, b)) << blocks << " blocks";
  }
  // A wrong compression would change every digest: one flipped input bit, both paths see it.
  uint32_t a[8] = {}, b[8] = {};
  bytes[100] ^= 1;
  sha256_detail::blocks_portable(a, bytes.data(), 2);
  sha256_detail::blocks_hardware(b, bytes.data(), 2);
  EXPECT_TRUE(std::equal(a, a + 8, b));
}

TEST(Sha256, AFileIsHashedAndCopiedInOnePass) {
  const std::string src = testing::TempDir() + "/sha256_src", dst = testing::TempDir() + "/sha256_dst";
  std::ofstream(src, std::ios::binary) << std::string(200003, 'q');
  EXPECT_EQ(sha256_file(src, dst), digest(std::string(200003, 'q')));
  std::ifstream in(dst, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), std::string(200003, 'q'));
  EXPECT_THROW(sha256_file(src + "-missing", dst), std::runtime_error);
  std::remove(src.c_str());
  std::remove(dst.c_str());
}

}  // namespace
}  // namespace kcv
