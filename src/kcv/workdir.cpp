// Scratch directories (workdir.hpp).
#include "kcv/workdir.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/sandbox.hpp"

namespace fs = std::filesystem;

namespace kcv {

Workdir::Workdir(const std::string& given, const std::string& label) {
  sandbox::reap_stale_dirs(fs::temp_directory_path().string(), "kcv-");
  if (!given.empty()) {
    path_ = given;
    fs::create_directories(path_);
    return;
  }
  const std::string name = label.empty() ? fmt::format("kcv-{}-XXXXXX", getpid())
                                         : fmt::format("kcv-{}-{}-XXXXXX", getpid(), label);
  std::string tmpl = (fs::temp_directory_path() / name).string();
  if (!mkdtemp(tmpl.data()))
    throw SetupError(fmt::format("cannot create a temporary directory {}: {}", tmpl, std::strerror(errno)));
  path_ = tmpl;
  owned_ = true;
}

Workdir::~Workdir() {
  if (!owned_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace kcv
