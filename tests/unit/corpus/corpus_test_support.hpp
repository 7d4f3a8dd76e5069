// Helpers for corpus tests: throwaway corpora of stub pairs, the stub verifier, running the CLI.
#pragma once

#include <sys/stat.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/corpus.hpp"

namespace kcv::corpus_test {

namespace fs = std::filesystem;

/// A temporary directory removed at scope end.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kcv-corpus-test-XXXXXX").string();
    path_ = mkdtemp(t.data());
    // NOTES: a worker runs as uid 65534 when kcv is root (docs/security.md): the interpreters and
    // files the tests put here must be reachable by it, as a user's would have to be.
    chmod(path_.c_str(), 0755);
  }
  ~TempDir() { std::error_code ec; fs::remove_all(path_, ec); }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }
  const std::string& path() const { return path_; }
 private:
  std::string path_;
};

/// The interpreter that has torch: $KCV_PYTHON where it names one (the H200's host keeps torch in a
/// venv, /opt/torch/.venv), else Debian's /usr/bin/python3 with python3-torch.
inline std::string torch_python() {
  const char* e = std::getenv("KCV_PYTHON");
  return e && *e == '/' ? std::string(e) : std::string("/usr/bin/python3");
}

inline void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A KernelBench problem file: the Model class (its source, after `import torch` and
/// `import torch.nn as nn`), the module-level sizes, and what get_inputs() and get_init_inputs() return.
inline std::string problem_file(const std::string& model, const std::string& sizes, const std::string& inputs,
                                const std::string& init_inputs = "[]") {
  return "import torch\nimport torch.nn as nn\n\n\n" + model + "\n\n" + sizes + "\n\n\ndef get_inputs():\n    return " +
         inputs + "\n\n\ndef get_init_inputs():\n    return " + init_inputs + "\n";
}

/// Adds a pair to a corpus: dir/rel_dir/problem.py and dir/rel_dir/<solution> whose first line
/// tells the stub verifier what to do ("pass", "fail 0.2", "segv", ...).
inline void add_pair(const std::string& dir, const std::string& rel_dir, const std::string& solution,
                     const std::string& mode) {
  write_file(dir + "/" + rel_dir + "/problem.py", "class Model: pass\n");
  write_file(dir + "/" + rel_dir + "/" + solution, "# fake: " + mode + "\nclass ModelNew: pass\n");
}

/// The stub verifier, copied to dir with its exec bit set (it does not depend on the checkout's mode).
inline std::string stub_verifier(const std::string& dir) {
  const std::string to = dir + "/fake_verifier.sh";
  fs::copy_file(std::string(KCV_SOURCE_DIR) + "/tests/unit/corpus/fake_verifier.sh", to,
                fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  return to;
}

/// The build directory's kcv (beside this test binary).
inline std::string kcv_binary() { return (fs::read_symlink("/proc/self/exe").parent_path() / "kcv").string(); }

/// Starts kcv with args in a process group of its own, KCV_CORPUS_VERIFIER=verifier, stdout and
/// stderr to the given files.
inline pid_t start_kcv(const std::vector<std::string>& args, const std::string& verifier, const std::string& out_file,
                       const std::string& err_file) {
  std::vector<std::string> argv = {kcv_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    setenv("KCV_CORPUS_VERIFIER", verifier.c_str(), 1);
    const int o = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(o, 1);
    dup2(e, 2);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

struct CliResult {
  int rc = -1;
  std::string out, err;
};

/// Runs kcv with args to completion.
inline CliResult run_kcv(const std::vector<std::string>& args, const std::string& verifier, const std::string& scratch) {
  const std::string o = scratch + "/cli.stdout", e = scratch + "/cli.stderr";
  const pid_t pid = start_kcv(args, verifier, o, e);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(o), read_text(e)};
}

/// The result records of a journal, in journal order.
inline std::vector<nlohmann::json> results_of(const std::vector<nlohmann::json>& records) {
  std::vector<nlohmann::json> out;
  for (const auto& r : records)
    if (r["kind"] == "result") out.push_back(r);
  return out;
}

/// How many result records each key has.
inline std::map<std::string, int> results_per_key(const std::vector<nlohmann::json>& records) {
  std::map<std::string, int> count;
  for (const auto& r : results_of(records)) ++count[r["key"].get<std::string>()];
  return count;
}

inline std::vector<std::string> keys_of(const std::vector<CorpusPair>& pairs) {
  std::vector<std::string> k;
  for (const auto& p : pairs) k.push_back(p.key);
  return k;
}

/// Options for an in-process run over dir with the stub verifier.
inline CorpusOptions stub_options(const std::string& dir, const std::string& out, const std::string& verifier,
                                  int jobs = 2) {
  CorpusOptions o;
  o.dir = dir;
  o.out = out;
  o.jobs = jobs;
  o.verifier = verifier;
  return o;
}

}  // namespace kcv::corpus_test
