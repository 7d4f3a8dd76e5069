// The KernelBench reference's answers kept on disk, content-addressed (issue 24 item 1,
// docs/kernelbench.md "Reference cache"): every solution of one problem in a corpus run sees the
// same cases (one run seed), so the float64 Model runs once per case, and a resumed or sharded run
// reads what an earlier one computed.
//
// NOTES: expected values must never reach a candidate (DESIGN §5.1). The cache is kcv's alone: a
// directory of mode 0700 owned by kcv's uid, used only when kcv is root, so that every worker runs
// as uid 65534 and can neither read nor write it (docs/security.md). Where kcv is not root the
// worker keeps kcv's uid and could read it: the cache refuses to open. Each entry is checked
// before use: its name is the SHA-256 of its key, its header repeats the key and holds the
// SHA-256 of its payload; an entry that does not match is not used (counted "rejected") and is
// computed and written again.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/contract.hpp"
#include "kcv/settings.hpp"
#include "kcv/tensor.hpp"

namespace kcv {

class ReferenceDiskCache {
 public:
  struct Entry {
    std::vector<std::string> blobs;
    nlohmann::json extra;   // what else the reply said that kcv reads (the derived bound's unruled ops)
  };
  /// Opens (creating, mode 0700) dir. context: everything besides the case that the answers
  /// depend on (problem hash, kcv version, adapters' hash, backend, torch, bound mode...). Throws
  /// SetupError when kcv is not root, or dir is not a directory of kcv's uid closed to others.
  /// entry_cap: the largest answer kept, bytes (Settings::reference_cache_entry_bytes). dir_cap:
  /// the most the directory holds in all, bytes (Settings::reference_cache_dir_bytes); 0: half of
  /// what it could grow to on its file system (default_cache_cap_bytes, private_cache.hpp).
  ReferenceDiskCache(const std::string& dir, nlohmann::json context, int64_t entry_cap, int64_t dir_cap = 0);

  /// The entry's key: SHA-256 of the context, the server op ("reference", "eager"), the shape and
  /// every input's dtype, shape and the SHA-256 of its logical (contiguous) bytes.
  std::string key(const std::string& op, const Bindings& shape, const std::vector<std::string>& contiguous_inputs,
                  const std::vector<HostTensor>& inputs) const;
  /// The checked entry, or none (missing, or rejected: counted, and the first reason kept).
  std::optional<Entry> load(const std::string& key);
  /// Writes an entry (a temporary file renamed into place: readers see all of it or nothing),
  /// after removing the least recently used entries where the directory's cap or the file
  /// system's reserve needs the room (counted "evicted"); an entry that cannot fit is not written
  /// (counted "no_space"). A failed write is counted, never an error of the verification.
  void store(const std::string& key, const std::vector<std::string>& blobs, const nlohmann::json& extra);

  /// The largest answer kept (bytes): the constructor's entry_cap.
  int64_t entry_cap() const { return entry_cap_; }
  /// The most the directory holds, bytes: dir_cap, or the default the constructor worked out.
  int64_t dir_cap() const { return dir_cap_; }
  /// An answer over entry_cap(), computed and not kept.
  void count_too_large();

  /// {"dir", "cap_bytes", "read", "written", "rejected", "write_failed", "too_large", "evicted",
  /// "no_space"[, "rejected_why"]}.
  nlohmann::json summary() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string path_of(const std::string& key) const;
  /// Removes least recently used entries until `incoming` more bytes fit (make_room's rule:
  /// cache_bytes_to_free); false when they cannot.
  bool make_room(int64_t incoming);
  std::string dir_;
  std::string context_hash_;
  mutable std::mutex mu_;
  int64_t entry_cap_ = 0, dir_cap_ = 0;
  int64_t read_ = 0, written_ = 0, rejected_ = 0, write_failed_ = 0, too_large_ = 0, evicted_ = 0, no_space_ = 0;
  std::string rejected_why_;
};

/// Why kcv cannot keep a reference cache here ("" when it can): not root (a worker keeps kcv's
/// uid and could read it). `kcv corpus run` asks before passing --reference-cache.
std::string reference_cache_refusal();

/// The SHA-256 of the trusted adapter files whose code makes a reference answer
/// (kcv_torch_reference.py, kcv_torch_bound.py, kcv_torch_common.py, kcv_torch_load.py), in the
/// adapters directory of settings.
std::string reference_adapters_hash(const Settings& settings);

}  // namespace kcv
