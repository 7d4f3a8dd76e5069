// The candidates' extension builds on disk, content-addressed (build_cache.hpp).
#include "kcv/kernelbench/build_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/core/sha256.hpp"
#include "kcv/kernelbench/private_cache.hpp"
#include "kcv/provenance.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kcv {

namespace {

constexpr int kFormat = 1;

/// Closes a descriptor at scope end.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { if (fd >= 0) close(fd); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

/// All of fd's bytes, up to cap (false: a read failed or there were more).
bool read_all(int fd, int64_t cap, std::string& out) {
  out.clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    if (static_cast<int64_t>(out.size()) + n > cap) return false;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

/// Copies fd's bytes into a new file `to` (mode; "": no copy), hashing them as they pass; the digest
/// and the size, or none when a read or write failed or more than cap bytes came.
std::optional<std::pair<std::string, int64_t>> copy_hashing(int fd, const std::string& to, mode_t mode, int64_t cap) {
  Fd out(to.empty() ? -1 : open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!to.empty() && out.fd < 0) return std::nullopt;
  Sha256 h;
  int64_t size = 0;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    size += n;
    if (size > cap) return std::nullopt;
    h.update(buf.data(), static_cast<std::size_t>(n));
    for (ssize_t done = 0; out.fd >= 0 && done < n;) {
      const ssize_t w = write(out.fd, buf.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return std::nullopt;
      done += w;
    }
  }
  if (out.fd >= 0 && fchmod(out.fd, mode) != 0) return std::nullopt;
  return std::make_pair(h.hex(), size);
}

/// rel (relative, normalized) opened under the directory dirfd, no symlink followed at any step:
/// the descriptor of a regular file, or -1.
int open_beneath(int dirfd, const fs::path& rel) {
  int at = dup(dirfd);
  std::vector<std::string> parts;
  for (const auto& p : rel) parts.push_back(p.string());
  for (std::size_t i = 0; i < parts.size() && at >= 0; ++i) {
    const bool last = i + 1 == parts.size();
    const int next = openat(at, parts[i].c_str(),
                            O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY));
    close(at);
    at = next;
  }
  if (at < 0) return -1;
  struct stat st {};
  if (fstat(at, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(at);
    return -1;
  }
  return at;
}

bool is_hex64(const json& v) {
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

/// An extension's name as torch takes it (a Python identifier), at most 200 characters.
bool is_extension_name(const json& v) {
  static const std::regex ident("[A-Za-z_][A-Za-z0-9_]{0,199}");
  return v.is_string() && std::regex_match(v.get<std::string>(), ident);
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}.{:016x}", getpid(), rng());
}

}  // namespace

std::string build_cache_refusal() { return private_cache_refusal("write the builds a later run imports"); }

std::string build_recipe_hash(const Settings& settings) {
  return torch_adapters_hash(settings, {"kcv_torch_common.py", "kcv_torch_worker.py", "kcv_torch_load.py"});
}

std::string tool_identity(const std::string& name, const std::vector<std::string>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ec;
    const fs::path real = fs::canonical(fs::path(d) / name, ec);
    struct stat st {};
    if (ec || stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    return fmt::format("{} {} {}.{:09d}", real.string(), st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }
  return "";
}

std::string tree_sha256(const std::string& dir) {
  std::vector<std::string> rels;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) rels.push_back(fs::relative(it->path(), dir, ec).string());
  std::sort(rels.begin(), rels.end());
  std::string all;
  for (const auto& r : rels) all += fmt::format("{} {}\n", r, sha256_file((fs::path(dir) / r).string()));
  return sha256_hex(all);
}

BuildCache::BuildCache(const std::string& dir) {
  if (const std::string why = build_cache_refusal(); !why.empty())
    throw SetupError(fmt::format("build cache '{}': {}", dir, why));
  dir_ = open_private_cache_dir(dir, "build cache");
}

std::string BuildCache::key(const json& context, const std::string& variant) {
  return sha256_hex(json{{"format", kFormat}, {"context", context}, {"variant", variant}}.dump());
}

std::string BuildCache::entry_dir(const std::string& key) const {
  return fmt::format("{}/{}/{}", dir_, key.substr(0, 2), key);
}

std::string BuildCache::check(const std::string& key, const std::string& into_dir, json* plan) const {
  const std::string path = entry_dir(key);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return "missing";
  if (!S_ISDIR(st.st_mode) || !kcv_private(st)) return "not a directory of kcv's uid closed to others";
  Fd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Fd header_fd(dir.fd < 0 ? -1 : openat(dir.fd, "header.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  std::string text;
  if (header_fd.fd < 0 || fstat(header_fd.fd, &st) != 0 || !S_ISREG(st.st_mode) || !kcv_private(st) ||
      !read_all(header_fd.fd, kMaxManifestBytes, text))
    return "no header.json of kcv's uid closed to others";
  const json h = json::parse(text, nullptr, false);
  if (h.is_discarded() || !h.is_object() || h.value("format", 0) != kFormat || h.value("key", "") != key ||
      !h.contains("files") || !h["files"].is_array() || h["files"].size() > static_cast<std::size_t>(kMaxFiles))
    return "header is not this key's";
  std::error_code ec;
  const auto readable = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                        fs::perms::others_exec;
  if (!into_dir.empty()) {
    fs::remove_all(into_dir, ec);
    fs::create_directories(into_dir, ec);
    if (ec) return "cannot make " + into_dir + ": " + ec.message();
    fs::permissions(into_dir, readable, ec);
  }
  int i = 0;
  for (const json& f : h["files"]) {
    if (!f.is_object() || !is_extension_name(f.value("name", json())) || !is_hex64(f.value("call_key", json())) ||
        !is_hex64(f.value("sha256", json())) || !f.contains("size") || !f["size"].is_number_unsigned())
      return "a file of the header is not one";
    const std::string file = fmt::format("{}.so", i);
    Fd in(openat(dir.fd, file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (in.fd < 0 || fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode) || !kcv_private(st))
      return file + " is not a file of kcv's uid closed to others";
    // Its own directory, so that the copy carries the extension's name as torch's build does.
    std::string to;
    if (!into_dir.empty()) {
      const fs::path to_dir = fs::path(into_dir) / std::to_string(i);
      fs::create_directory(to_dir, ec);
      fs::permissions(to_dir, readable, ec);
      to = (to_dir / (f["name"].get<std::string>() + ".so")).string();
    }
    const auto got = copy_hashing(in.fd, to, 0644, kMaxFileBytes);
    if (!got || got->first != f["sha256"].get<std::string>() || got->second != f["size"].get<int64_t>())
      return file + " does not match its SHA-256";
    if (plan) (*plan)["files"].push_back({{"name", f["name"]}, {"call_key", f["call_key"]}, {"file", to}});
    ++i;
  }
  return "";
}

std::optional<json> BuildCache::load(const std::string& key, const std::string& into_dir, std::string* why) {
  json plan = {{"files", json::array()}};
  const std::string reason = check(key, into_dir, &plan);
  if (why) *why = reason;
  std::lock_guard<std::mutex> lock(mu_);
  if (reason.empty()) {
    ++hits_;
    return plan;
  }
  std::error_code ec;
  fs::remove_all(into_dir, ec);
  if (reason != "missing") {
    ++rejected_;
    if (rejected_why_.empty()) rejected_why_ = fmt::format("{}: {}", entry_dir(key), reason);
  }
  return std::nullopt;
}

int BuildCache::store(const std::string& key, const std::string& variant, const std::string& ext_dir, std::string* why) {
  auto refuse = [&](const std::string& reason) {
    if (why) *why = reason;
    std::lock_guard<std::mutex> lock(mu_);
    ++refused_;
    return 0;
  };
  // NOTES: ext_dir is the workers' (uid 65534): every name in it is theirs to plant. It is opened
  // once, and everything below it through that descriptor without following a symlink.
  Fd ext(open(ext_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (ext.fd < 0) return 0;  // nothing built
  Fd list(openat(ext.fd, "builds.jsonl", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (list.fd < 0) return 0;
  std::string text;
  if (fstat(list.fd, &st) != 0 || !S_ISREG(st.st_mode) || !read_all(list.fd, kMaxManifestBytes, text))
    return refuse("builds.jsonl is not a regular file of at most 1 MiB");
  // (name, call key) -> the .so relative to ext_dir; the last line of one build wins.
  std::map<std::pair<std::string, std::string>, fs::path> builds;
  std::istringstream lines(text);
  const fs::path base = fs::path(ext_dir).lexically_normal();
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const json b = json::parse(line, nullptr, false);
    if (b.is_discarded() || !b.is_object() || !is_extension_name(b.value("name", json())) ||
        !is_hex64(b.value("call_key", json())) || !b.contains("so") || !b["so"].is_string())
      return refuse("builds.jsonl has a line that is not a build");
    const fs::path rel = fs::path(b["so"].get<std::string>()).lexically_normal().lexically_relative(base);
    if (rel.empty() || rel.is_absolute() || *rel.begin() == ".." || *rel.begin() == ".")
      return refuse(fmt::format("{} is not inside {}", b["so"].get<std::string>(), ext_dir));
    builds[{b["name"].get<std::string>(), b["call_key"].get<std::string>()}] = rel;
  }
  if (builds.empty()) return 0;
  if (builds.size() > static_cast<std::size_t>(kMaxFiles)) return refuse(fmt::format("more than {} builds", kMaxFiles));
  const std::string final_dir = entry_dir(key);
  const std::string parent = fs::path(final_dir).parent_path().string();
  std::error_code ec;
  fs::create_directory(parent, ec);
  chmod(parent.c_str(), 0700);
  const std::string tmp = fmt::format("{}/.{}.{}.part", parent, key, random_suffix());
  auto failed = [&](const std::string& reason) {
    fs::remove_all(tmp, ec);
    if (why) *why = reason;
    std::lock_guard<std::mutex> lock(mu_);
    ++write_failed_;
    return 0;
  };
  if (mkdir(tmp.c_str(), 0700) != 0) return failed("cannot make " + tmp);
  json h = {{"format", kFormat}, {"key", key}, {"variant", variant}, {"kcv", kcv_version()}, {"files", json::array()}};
  int i = 0;
  for (const auto& [id, rel] : builds) {
    Fd so(open_beneath(ext.fd, rel));
    if (so.fd < 0 || fstat(so.fd, &st) != 0) {
      fs::remove_all(tmp, ec);
      return refuse(fmt::format("{} is not a regular file reached without a symlink", (base / rel).string()));
    }
    if (st.st_size > kMaxFileBytes) {
      fs::remove_all(tmp, ec);
      return refuse(fmt::format("{} is over {} bytes", (base / rel).string(), kMaxFileBytes));
    }
    const auto got = copy_hashing(so.fd, fmt::format("{}/{}.so", tmp, i), 0600, kMaxFileBytes);
    if (!got) return failed("cannot copy " + (base / rel).string());
    h["files"].push_back({{"name", id.first}, {"call_key", id.second}, {"size", got->second}, {"sha256", got->first}});
    ++i;
  }
  {
    const std::string header = h.dump() + "\n";
    Fd out(open((tmp + "/header.json").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (out.fd < 0 || write(out.fd, header.data(), header.size()) != static_cast<ssize_t>(header.size()))
      return failed("cannot write the header");
  }
  // NOTES: rename is atomic: a reader sees a whole entry or none. An entry there already is a
  // rejected one (moved aside and removed) or another verifier's of the same builds (it won).
  if (rename(tmp.c_str(), final_dir.c_str()) != 0) {
    if (check(key, "", nullptr).empty()) {  // a whole, good entry: another verifier's, which stands
      fs::remove_all(tmp, ec);
      return 0;
    }
    const std::string aside = fmt::format("{}/.{}.{}.old", parent, key, random_suffix());
    if (rename(final_dir.c_str(), aside.c_str()) == 0) fs::remove_all(aside, ec);
    if (rename(tmp.c_str(), final_dir.c_str()) != 0) {
      fs::remove_all(tmp, ec);
      return 0;  // another verifier's came between: theirs stands
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++stored_;
  return i;
}

json BuildCache::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  json s = {{"dir", dir_}, {"hits", hits_}, {"stored", stored_}, {"rejected", rejected_}, {"refused", refused_},
            {"write_failed", write_failed_}};
  if (!rejected_why_.empty()) s["rejected_why"] = rejected_why_;
  return s;
}

}  // namespace kcv
