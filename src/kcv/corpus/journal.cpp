// The corpus journal (OUT/journal.jsonl): reading it back after a kill -9, appending to it one
// fsync'd line at a time, and merging the journals of several shards.
#include "kcv/corpus/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/corpus.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kcv {
namespace corpus_detail {

std::vector<JournalLine> parse_journal(const std::string& text, const std::string& path) {
  std::vector<JournalLine> out;
  std::size_t at = 0;
  int line = 0;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;   // a cut last line (kill -9 during its write): dropped
    ++line;
    std::string s = text.substr(at, nl - at);
    at = nl + 1;
    if (s.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(s, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw SetupError(fmt::format("{}:{}: line {} is not JSON, or not a JSON object; fix or remove it by hand",
                                   path, line, line));
    if (!j.contains("kind") || !j["kind"].is_string())
      throw SetupError(fmt::format("{}:{}: a record without a \"kind\"", path, line));
    if (j["kind"] == "result" && (!j.contains("key") || !j["key"].is_string()))
      throw SetupError(fmt::format("{}:{}: a result record without a string \"key\"", path, line));
    out.push_back({std::move(j), std::move(s), line});
  }
  return out;
}

std::string read_file_text(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SetupError(fmt::format("cannot read '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

/// fsync of a directory: makes a file created in it durable too.
void sync_dir(const fs::path& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) { fsync(fd); close(fd); }
}

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t at = 0;
  while (at < data.size()) {
    const ssize_t n = write(fd, data.data() + at, data.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw SetupError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    at += static_cast<std::size_t>(n);
  }
}

}  // namespace
}  // namespace corpus_detail

using namespace corpus_detail;

std::vector<json> read_journal(const std::string& path) {
  std::vector<json> out;
  for (auto& l : parse_journal(read_file_text(path), path)) out.push_back(std::move(l.record));
  return out;
}

Journal::Journal(const std::string& path) : path_(path) {
  const bool existed = fs::exists(path);
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw SetupError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    close(fd_);
    throw SetupError(fmt::format("'{}' is in use by another kcv corpus run", path));
  }
  if (!existed) sync_dir(fs::absolute(path).parent_path());
  std::string text;
  {
    char buf[1 << 16];
    off_t off = 0;
    for (;;) {
      const ssize_t n = pread(fd_, buf, sizeof buf, off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) { close(fd_); throw SetupError(fmt::format("cannot read '{}': {}", path, std::strerror(errno))); }
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      off += n;
    }
  }
  // NOTES: a kill -9 can cut the last write short. That line is dropped, and the file is truncated
  // back to just after its last '\n' before anything is appended: otherwise the next record would
  // be glued onto the cut one and make a complete line that is not JSON.
  if (!text.empty() && text.back() != '\n') {
    const std::size_t nl = text.rfind('\n');
    const std::size_t keep = nl == std::string::npos ? 0 : nl + 1;
    if (ftruncate(fd_, static_cast<off_t>(keep)) != 0 || fsync(fd_) != 0) {
      close(fd_);
      throw SetupError(fmt::format("cannot truncate the cut last line of '{}': {}", path, std::strerror(errno)));
    }
    text.resize(keep);
  }
  try {
    for (auto& l : parse_journal(text, path)) existing_.push_back(std::move(l.record));
  } catch (...) {
    close(fd_);
    throw;
  }
}

Journal::~Journal() {
  if (fd_ >= 0) close(fd_);   // releases the flock
}

void Journal::append(const nlohmann::ordered_json& record) {
  // One write of the full line (O_APPEND), then fsync: a kill -9 leaves at most one cut line.
  const std::string line = record.dump() + "\n";
  const ssize_t n = write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size()))
    throw SetupError(fmt::format("cannot append to '{}': {}", path_, n < 0 ? std::strerror(errno) : "short write"));
  if (fsync(fd_) != 0) throw SetupError(fmt::format("cannot fsync '{}': {}", path_, std::strerror(errno)));
}

int merge_corpora(const std::vector<std::string>& dirs, const std::string& out) {
  if (dirs.empty()) throw SetupError("corpus merge: no OUT directories to merge");
  const fs::path target = fs::path(out) / "journal.jsonl";
  if (fs::exists(target)) throw SetupError(fmt::format("'{}' already exists; merge never overwrites a journal", target.string()));

  std::vector<json> runs;
  std::map<std::string, JournalLine> results;   // key -> first record seen
  std::map<std::string, std::string> where;     // key -> the journal it came from
  for (const auto& d : dirs) {
    const std::string path = (fs::path(d) / "journal.jsonl").string();
    if (!fs::is_regular_file(path)) throw SetupError(fmt::format("'{}' does not exist", path));
    for (auto& l : parse_journal(read_file_text(path), path)) {
      if (l.record["kind"] == "run") { runs.push_back(l.record); continue; }
      if (l.record["kind"] != "result") continue;
      const std::string key = l.record["key"].get<std::string>();
      const auto it = results.find(key);
      if (it == results.end()) {
        where[key] = fmt::format("{}:{}", path, l.line);
        results.emplace(key, std::move(l));
      } else if (it->second.record != l.record) {
        throw SetupError(fmt::format("key '{}' has different results in {} and {}:{}", key, where[key], path, l.line));
      }
    }
  }

  nlohmann::ordered_json run = {{"kind", "run"}, {"started", iso_now()}, {"merged", dirs}};
  // corpus, backend, baseline: stated when every merged run agrees on them.
  for (const char* field : {"corpus", "backend", "baseline", "self"}) {
    json value;
    bool same = !runs.empty();
    for (const auto& r : runs) {
      if (!r.contains(field)) { same = false; break; }
      if (value.is_null()) value = r[field];
      else if (value != r[field]) { same = false; break; }
    }
    if (same) run[field] = value;
  }
  run["runs"] = runs;   // every source run record, so that nothing of them is lost

  std::string text = run.dump() + "\n";
  for (const auto& [key, l] : results) text += l.text + "\n";

  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw SetupError(fmt::format("cannot create '{}': {}", out, ec.message()));
  // Written whole to a temporary file, then linked into place: link() fails when the journal
  // appeared meanwhile, so an existing journal is never overwritten and no reader sees half a merge.
  const std::string tmp = (fs::path(out) / fmt::format(".journal.jsonl.merge.{}", getpid())).string();
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw SetupError(fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)));
  try {
    write_all(fd, text, tmp);
    if (fsync(fd) != 0) throw SetupError(fmt::format("cannot fsync '{}': {}", tmp, std::strerror(errno)));
  } catch (...) {
    close(fd);
    unlink(tmp.c_str());
    throw;
  }
  close(fd);
  const int rc = link(tmp.c_str(), target.c_str());
  const int err = errno;
  unlink(tmp.c_str());
  if (rc != 0)
    throw SetupError(fmt::format("cannot create '{}': {}", target.string(),
                                 err == EEXIST ? "it already exists; merge never overwrites a journal" : std::strerror(err)));
  sync_dir(fs::path(out));
  return static_cast<int>(results.size());
}

}  // namespace kcv
