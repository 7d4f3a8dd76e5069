// Provenance of a report: kcv's build, the host, the GPU stack, and SHA-256 of the judged files.
#include "kcv/provenance.hpp"

#include <unistd.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/build_config.hpp"
#include "kcv/candidate.hpp"
#include "kcv/core/sha256.hpp"
#include "kcv/git_commit.hpp"

namespace kcv {

const char* kcv_version() { return KCV_VERSION; }
const char* kcv_commit() { return KCV_GIT_COMMIT; }

nlohmann::json nvidia_driver_version(std::string_view line) {
  constexpr std::string_view kTag = "NVRM version:";
  const std::size_t at = line.find(kTag);
  if (at == std::string_view::npos) return nullptr;
  std::istringstream words{std::string(line.substr(at + kTag.size()))};
  for (std::string w; words >> w;) {
    const bool version = w.front() != '.' && w.back() != '.' && w.find('.') != std::string::npos &&
                         w.find_first_not_of("0123456789.") == std::string::npos;
    if (version) return w;
  }
  return nullptr;
}

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
  if (const Backend* b = find_backend(backend)) {
    const nlohmann::json device = b->provenance();  // held: items() refers to it
    for (const auto& [key, value] : device.items()) p[key] = value;
  }
  return p;
}

}  // namespace kcv
