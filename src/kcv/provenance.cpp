// Provenance of a report: kcv's build, the host, the GPU stack, and SHA-256 of the judged files.
#include "kcv/provenance.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kcv/build_config.hpp"
#include "kcv/candidate.hpp"
#include "kcv/git_commit.hpp"

namespace fs = std::filesystem;

namespace kcv {

const char* kcv_version() { return KCV_VERSION; }
const char* kcv_commit() { return KCV_GIT_COMMIT; }

namespace {

// ---- SHA-256, FIPS 180-4 §6.2 ----

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

class Sha256 {
 public:
  void update(const unsigned char* p, std::size_t n) {
    length_ += n;
    while (n > 0) {
      const std::size_t take = std::min(n, block_.size() - used_);
      std::copy(p, p + take, block_.begin() + static_cast<std::ptrdiff_t>(used_));
      used_ += take, p += take, n -= take;
      if (used_ == block_.size()) compress(), used_ = 0;
    }
  }
  std::string hex() {
    const uint64_t bits = length_ * 8;
    const unsigned char one = 0x80, zero = 0;
    update(&one, 1);
    while (used_ != 56) update(&zero, 1);
    for (int i = 7; i >= 0; --i) {
      const auto byte = static_cast<unsigned char>(bits >> (8 * i));
      update(&byte, 1);
    }
    std::string out;
    for (uint32_t w : h_) out += fmt::format("{:08x}", w);
    return out;
  }

 private:
  void compress() {
    std::array<uint32_t, 64> w{};
    for (int t = 0; t < 16; ++t)
      w[t] = uint32_t{block_[4 * t]} << 24 | uint32_t{block_[4 * t + 1]} << 16 | uint32_t{block_[4 * t + 2]} << 8 |
             uint32_t{block_[4 * t + 3]};
    for (int t = 16; t < 64; ++t) {
      const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int t = 0; t < 64; ++t) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }

  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t used_ = 0;
  uint64_t length_ = 0;
};

/// The first line of a file, "" when it cannot be read.
std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

/// NVIDIA's kernel module version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ...".
nlohmann::json driver_version() {
  const std::string line = first_line("/proc/driver/nvidia/version");
  const auto at = line.find("Kernel Module");
  if (at == std::string::npos) return nullptr;
  std::istringstream rest(line.substr(at + 13));
  std::string v;
  rest >> v;
  return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
}

/// The GPUs' model names, in the driver's (PCI) order, "; "-joined.
nlohmann::json gpu_models() {
  std::error_code ec;
  std::vector<std::string> models;
  for (const auto& d : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream in(d.path() / "information");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Model:", 0) == 0) models.push_back(d.path().filename().string() + " " + trim(line.substr(6)));
  }
  if (models.empty()) return nullptr;
  std::sort(models.begin(), models.end());
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : "; ") + m;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) out += fmt::format(" (CUDA_VISIBLE_DEVICES={})", v);
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SetupError(fmt::format("cannot read '{}' to hash it", path));
  Sha256 h;
  std::array<char, 1 << 16> buf{};
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(reinterpret_cast<const unsigned char*>(buf.data()), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw SetupError(fmt::format("cannot read '{}' to hash it", path));
  return h.hex();
}

nlohmann::json machine_provenance(const std::string& backend) {
  std::array<char, 256> host{};
  nlohmann::json p = {{"kcv_version", kcv_version()}, {"kcv_commit", kcv_commit()},
                      {"host", gethostname(host.data(), host.size() - 1) == 0 ? nlohmann::json(host.data())
                                                                                : nlohmann::json(nullptr)},
                      {"backend", backend}};
  if (backend == "cuda") {
    p["gpu"] = gpu_models();
    p["driver"] = driver_version();
    const std::string cuda = KCV_BUILD_CUDA_VERSION;
    p["cuda"] = cuda.empty() ? nlohmann::json(nullptr) : nlohmann::json(cuda);
  }
  return p;
}

}  // namespace kcv
