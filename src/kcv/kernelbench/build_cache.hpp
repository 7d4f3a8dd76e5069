// The KernelBench candidates' extension builds kept on disk, content-addressed (issue 24 item 1,
// docs/kernelbench.md "Build cache"): a rerun of a corpus, or a resumed shard, imports every
// load_inline build it has made before instead of compiling it again.
//
// NOTES: the builds run in the candidate's own process, so nothing it writes is trusted beyond
// its own solution: an entry's key is computed here, from the solution's bytes and everything else
// a build depends on, never by the worker, and an entry is only handed to a later verification of
// that same solution. Like the reference cache, the directory is kcv's alone (0700, root; workers
// run as uid 65534), and an entry is checked (owner, mode, key, every file's SHA-256) before use.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/settings.hpp"

namespace kcv {

class BuildCache {
 public:
  /// The largest extension kept (bytes), and the most files and builds.jsonl bytes read.
  static constexpr int64_t kMaxFileBytes = int64_t{512} << 20;
  static constexpr int kMaxFiles = 64;
  static constexpr int64_t kMaxManifestBytes = int64_t{1} << 20;

  /// Opens (creating, mode 0700) dir. Throws SetupError when kcv is not root, or dir is not a
  /// directory of kcv's uid closed to others.
  explicit BuildCache(const std::string& dir);

  /// The entry's key: SHA-256 of the context (what a build depends on besides its own arguments:
  /// the solution's bytes, the build recipe, torch, compilers...) and the variant ("plain", "asan").
  static std::string key(const nlohmann::json& context, const std::string& variant);

  /// The checked entry copied into into_dir (made; readable by the workers), as the worker's plan
  /// takes it: {"files": [{"name", "call_key", "file"}]}. None when missing, or rejected (counted;
  /// *why says why, and nothing is left in into_dir).
  std::optional<nlohmann::json> load(const std::string& key, const std::string& into_dir, std::string* why = nullptr);

  /// Stores the builds a verification's worker listed in ext_dir/builds.jsonl as entry `key`: each
  /// a regular file inside ext_dir, reached without following a symlink. Returns the number of files
  /// stored (0: none listed, or refused: *why says why; a failed write is counted).
  int store(const std::string& key, const std::string& variant, const std::string& ext_dir, std::string* why = nullptr);

  /// {"dir", "hits", "stored", "rejected", "refused", "write_failed"[, "rejected_why"]}.
  nlohmann::json summary() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string entry_dir(const std::string& key) const;
  /// Why entry `key` is not to be used ("" when it checks; "missing"), copying its files into
  /// into_dir ("": none) and naming them in *plan as they pass.
  std::string check(const std::string& key, const std::string& into_dir, nlohmann::json* plan) const;
  std::string dir_;
  mutable std::mutex mu_;
  int64_t hits_ = 0, stored_ = 0, rejected_ = 0, refused_ = 0, write_failed_ = 0;
  std::string rejected_why_;
};

/// Why kcv cannot keep a build cache here ("" when it can): not root (a worker keeps kcv's uid and
/// could write the builds another run imports).
std::string build_cache_refusal();

/// The SHA-256 of the trusted adapter files whose code shapes a build (kcv_torch_common.py,
/// kcv_torch_worker.py, kcv_torch_load.py), in the adapters directory of settings.
std::string build_recipe_hash(const Settings& settings);

/// "path size mtime" of the file `name` resolves to on PATH-like dirs ("" when none): the compilers'
/// identity in the key, cheap (no process started) and changed by any reinstall.
std::string tool_identity(const std::string& name, const std::vector<std::string>& dirs);

/// The SHA-256 of every regular file under dir (relative path and bytes), symlinks not followed.
std::string tree_sha256(const std::string& dir);

}  // namespace kcv
