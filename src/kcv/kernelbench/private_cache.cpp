// The directory checks kcv's on-disk caches share (private_cache.hpp).
#include "kcv/kernelbench/private_cache.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/provenance.hpp"

namespace fs = std::filesystem;

namespace kcv {

std::string private_cache_refusal(const std::string& risk) {
  if (geteuid() != 0) return "kcv is not root: a candidate's worker then keeps kcv's uid and could " + risk + " (docs/security.md)";
  return "";
}

std::string open_private_cache_dir(const std::string& dir, const std::string& what) {
  const std::string abs = fs::absolute(dir).string();
  std::error_code ec;
  fs::create_directories(abs, ec);
  if (ec) throw SetupError(fmt::format("{} '{}': cannot create it: {}", what, dir, ec.message()));
  // NOTES: kcv's uid and no access for anyone else, or not at all: a directory a worker's uid
  // (65534, "nobody") could reach would hand it what the cache holds. An NFS export that squashes
  // root makes kcv's files nobody's: refused here, by owner.
  struct stat st {};
  if (lstat(abs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw SetupError(fmt::format("{} '{}' is not a directory", what, dir));
  if (st.st_uid != geteuid())
    throw SetupError(fmt::format("{} '{}' belongs to uid {}, not kcv's ({}): it must be kcv's alone", what, dir,
                                 st.st_uid, geteuid()));
  if ((st.st_mode & 077) != 0 && chmod(abs.c_str(), 0700) != 0)
    throw SetupError(fmt::format("{} '{}': cannot close it to others: {}", what, dir, std::strerror(errno)));
  return abs;
}

std::string torch_adapters_hash(const Settings& settings, std::initializer_list<const char*> files) {
  std::string all;
  for (const char* f : files) {
    const std::string path = (fs::path(kcv_adapters_dir(settings)) / "torch" / f).string();
    all += fmt::format("{} {}\n", f, sha256_file(path));
  }
  return sha256_hex(all);
}

bool kcv_private(const struct stat& st) { return st.st_uid == geteuid() && (st.st_mode & 077) == 0; }

}  // namespace kcv
