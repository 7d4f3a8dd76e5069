// The directory checks kcv's on-disk caches share (private_cache.hpp).
#include "kcv/kernelbench/private_cache.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
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

int64_t cache_reserve_bytes(int64_t capacity) { return std::max<int64_t>(int64_t{1} << 30, capacity / 20); }

int64_t default_cache_cap_bytes(const CacheSpace& space) { return (space.free + space.held) / 2; }

int64_t cache_bytes_to_free(const CacheSpace& space, int64_t incoming, int64_t cap) {
  const int64_t reserve = cache_reserve_bytes(space.capacity);
  // Removing b bytes of entries makes held - b and free + b; the entry then needs
  // held - b + incoming <= cap and free + b - incoming >= reserve.
  if (incoming > cap || space.free + space.held - incoming < reserve) return -1;
  const int64_t over_cap = space.held + incoming - cap;
  const int64_t under_reserve = reserve - (space.free - incoming);
  return std::max<int64_t>({0, over_cap, under_reserve});
}

std::vector<CacheFile> cache_files(const std::string& dir, const std::string& suffix) {
  std::vector<CacheFile> files;
  std::error_code ec;
  for (fs::directory_iterator sub(dir, ec), end; !ec && sub != end; sub.increment(ec)) {
    std::error_code ec2;
    if (!sub->is_directory(ec2) || sub->is_symlink(ec2)) continue;
    for (fs::directory_iterator f(sub->path(), ec2), fend; !ec2 && f != fend; f.increment(ec2)) {
      const std::string name = f->path().filename().string();
      if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
      struct stat st {};
      if (lstat(f->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // gone, or not an entry
      files.push_back({f->path().string(), static_cast<int64_t>(st.st_blocks) * 512,
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
    }
  }
  std::sort(files.begin(), files.end(), [](const CacheFile& a, const CacheFile& b) { return a.mtime_ns < b.mtime_ns; });
  return files;
}

CacheSpace cache_space(const std::string& dir, const std::string& suffix) {
  CacheSpace s;
  for (const CacheFile& f : cache_files(dir, suffix)) s.held += f.bytes;
  struct statvfs v {};
  if (statvfs(dir.c_str(), &v) == 0) {
    s.free = static_cast<int64_t>(v.f_bavail) * static_cast<int64_t>(v.f_frsize);
    s.capacity = static_cast<int64_t>(v.f_blocks) * static_cast<int64_t>(v.f_frsize);
  }
  return s;
}

}  // namespace kcv
