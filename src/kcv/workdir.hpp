// A scratch directory that lives as long as its owner: a verification's, a session's, a corpus
// run's. Internal.
#pragma once

#include <string>

namespace kcv {

/// A scratch directory removed when it goes out of scope (unless the user named one, or keep()).
/// NOTES: named kcv-<pid>-[<label>-]XXXXXX under the temporary directory: a kcv killed by SIGKILL
/// cannot remove its own, and the next Workdir made by any kcv removes those whose owner pid is gone
/// (sandbox::reap_stale_dirs).
class Workdir {
 public:
  /// given: a directory the user named (created if missing, never removed); empty: a fresh one.
  explicit Workdir(const std::string& given, const std::string& label = "");
  ~Workdir();
  Workdir(const Workdir&) = delete;
  Workdir& operator=(const Workdir&) = delete;
  const std::string& path() const { return path_; }
  /// Leaves the directory in place (a build log an error names is in it).
  void keep() { owned_ = false; }

 private:
  std::string path_;
  bool owned_ = false;
};

}  // namespace kcv
