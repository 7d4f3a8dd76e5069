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
#include "kcv/core/sha256.hpp"
#include "kcv/git_commit.hpp"

namespace fs = std::filesystem;

namespace kcv {

const char* kcv_version() { return KCV_VERSION; }
const char* kcv_commit() { return KCV_GIT_COMMIT; }

namespace {

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
  Sha256 h;  // kcv/core/sha256.hpp: the one implementation
  h.update(data.data(), data.size());
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SetupError(fmt::format("cannot read '{}' to hash it", path));
  Sha256 h;
  std::array<char, 1 << 16> buf{};
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<std::size_t>(in.gcount()));
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
