// The KernelBench reference's answers on disk, content-addressed (reference_cache.hpp).
#include "kcv/kernelbench/reference_cache.hpp"
#include "kcv/kernelbench/private_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/core/sha256.hpp"
#include "kcv/provenance.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kcv {

namespace {

/// Format of an entry: one JSON header line, then the blobs back to back.
constexpr int kFormat = 1;
/// An entry's header is small; a longer first line is not an entry.
constexpr std::size_t kMaxHeader = 1 << 20;
/// An entry's file name ends so; a temporary one (".part") is not an entry.
constexpr const char* kSuffix = ".ref";

std::string sha256_of_blobs(const std::vector<std::string>& blobs) {
  Sha256 h;
  for (const auto& b : blobs) h.update(b.data(), b.size());
  return h.hex();
}

}  // namespace

std::string reference_cache_refusal() {
  return private_cache_refusal("read the expected values it holds");
}

std::string reference_adapters_hash(const Settings& settings) {
  return torch_adapters_hash(settings,
                             {"kcv_torch_reference.py", "kcv_torch_bound.py", "kcv_torch_common.py", "kcv_torch_load.py"});
}

ReferenceDiskCache::ReferenceDiskCache(const std::string& dir, json context, int64_t entry_cap, int64_t dir_cap)
    : dir_(fs::absolute(dir).string()), entry_cap_(entry_cap), dir_cap_(dir_cap) {
  if (const std::string why = reference_cache_refusal(); !why.empty())
    throw SetupError(fmt::format("reference cache '{}': {}", dir, why));
  dir_ = open_private_cache_dir(dir, "reference cache");
  if (dir_cap_ <= 0) dir_cap_ = default_cache_cap_bytes(cache_space(dir_, kSuffix));
  context["format"] = kFormat;
  context_hash_ = sha256_hex(context.dump());
}

std::string ReferenceDiskCache::key(const std::string& op, const Bindings& shape,
                                    const std::vector<std::string>& contiguous_inputs,
                                    const std::vector<HostTensor>& inputs) const {
  json k = {{"context", context_hash_}, {"op", op}, {"shape", shape}, {"inputs", json::array()}};
  for (std::size_t i = 0; i < inputs.size() && i < contiguous_inputs.size(); ++i)
    k["inputs"].push_back({{"dtype", std::string(dtype_name(inputs[i].dtype))}, {"shape", inputs[i].shape},
                           {"sha256", sha256_hex(contiguous_inputs[i])}});
  return sha256_hex(k.dump());
}

std::string ReferenceDiskCache::path_of(const std::string& key) const {
  return fmt::format("{}/{}/{}.ref", dir_, key.substr(0, 2), key);
}

std::optional<ReferenceDiskCache::Entry> ReferenceDiskCache::load(const std::string& key) {
  const std::string path = path_of(key);
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // not there: computed
  auto reject = [&](const std::string& why) -> std::optional<Entry> {
    std::lock_guard<std::mutex> lock(mu_);
    ++rejected_;
    if (rejected_why_.empty()) rejected_why_ = fmt::format("{}: {}", path, why);
    return std::nullopt;
  };
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !kcv_private(st)) {
    close(fd);
    return reject("not a file of kcv's uid closed to others");
  }
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  if (got != data.size()) return reject("short read");
  const std::size_t eol = data.find('\n');
  if (eol == std::string::npos || eol > kMaxHeader) return reject("no header line");
  const json h = json::parse(data.substr(0, eol), nullptr, false);
  if (h.is_discarded() || !h.is_object() || h.value("format", 0) != kFormat || h.value("key", "") != key ||
      !h.contains("blobs") || !h["blobs"].is_array() || !h.contains("sha256") || !h["sha256"].is_string())
    return reject("header is not this key's");
  Entry e;
  std::size_t at = eol + 1;
  for (const auto& n : h["blobs"]) {
    if (!n.is_number_unsigned() || n.get<std::size_t>() > data.size() - at) return reject("blob sizes overrun the file");
    e.blobs.push_back(data.substr(at, n.get<std::size_t>()));
    at += n.get<std::size_t>();
  }
  if (at != data.size()) return reject("bytes after the last blob");
  if (sha256_of_blobs(e.blobs) != h["sha256"].get<std::string>()) return reject("payload does not match its SHA-256");
  e.extra = h.contains("extra") ? h["extra"] : json::object();
  // Used now: the last to be evicted (store). A failed touch only makes it look older.
  (void)utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  std::lock_guard<std::mutex> lock(mu_);
  ++read_;
  return e;
}

void ReferenceDiskCache::store(const std::string& key, const std::vector<std::string>& blobs, const json& extra) {
  const std::string path = path_of(key);
  json h = {{"format", kFormat}, {"key", key}, {"blobs", json::array()}, {"sha256", sha256_of_blobs(blobs)},
            {"extra", extra}, {"kcv", kcv_version()}};
  for (const auto& b : blobs) h["blobs"].push_back(b.size());
  const std::string header = h.dump() + "\n";
  int64_t incoming = static_cast<int64_t>(header.size()) + 4096;  // a block's rounding
  for (const auto& b : blobs) incoming += static_cast<int64_t>(b.size());
  if (!make_room(incoming)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++no_space_;
    return;
  }
  std::error_code ec;
  fs::create_directory(fs::path(path).parent_path(), ec);
  chmod(fs::path(path).parent_path().c_str(), 0700);
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tmp = fmt::format("{}.{}.{:016x}.part", path, getpid(), rng());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  auto put = [&](const std::string& s) {
    std::size_t done = 0;
    while (ok && done < s.size()) {
      const ssize_t n = write(fd, s.data() + done, s.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      else done += static_cast<std::size_t>(n);
    }
  };
  put(header);
  for (const auto& b : blobs) put(b);
  if (fd >= 0) ok = close(fd) == 0 && ok;
  // NOTES: rename is atomic: two verifiers computing the same case write the same bytes, and a
  // reader sees one whole entry or none. No fsync: a lost entry is computed again.
  if (ok) ok = rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) unlink(tmp.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? written_ : write_failed_);
}

bool ReferenceDiskCache::make_room(int64_t incoming) {
  const CacheSpace space = cache_space(dir_, kSuffix);
  int64_t to_free = cache_bytes_to_free(space, incoming, dir_cap_);
  if (to_free <= 0) return to_free == 0;
  int64_t evicted = 0;
  for (const CacheFile& f : cache_files(dir_, kSuffix)) {   // least recently used first
    if (to_free <= 0) break;
    // NOTES: a verifier reading this entry now keeps its open file; one that opens it after
    // finds none and computes the answer again. Two verifiers may remove the same entry: the
    // second unlink fails and frees nothing.
    if (unlink(f.path.c_str()) == 0) {
      to_free -= f.bytes;
      ++evicted;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  evicted_ += evicted;
  return to_free <= 0;
}

void ReferenceDiskCache::count_too_large() {
  std::lock_guard<std::mutex> lock(mu_);
  ++too_large_;
}

json ReferenceDiskCache::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  json s = {{"dir", dir_},         {"cap_bytes", dir_cap_},  {"read", read_},
            {"written", written_}, {"rejected", rejected_},  {"write_failed", write_failed_},
            {"too_large", too_large_}, {"evicted", evicted_}, {"no_space", no_space_}};
  if (!rejected_why_.empty()) s["rejected_why"] = rejected_why_;
  return s;
}

}  // namespace kcv
