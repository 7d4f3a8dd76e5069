// kcv corpus run: finds the (problem, solution) pairs of a corpus, verifies each in a forked child
// of its own that calls the library (verify_to_report_files; own process group, wall-clock limit),
// or in an explicit verifier executable, and journals every result.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/corpus.hpp"
#include "kcv/corpus/journal.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/kernelbench/build_cache.hpp"
#include "kcv/kernelbench/reference_cache.hpp"
#include "kcv/report.hpp"
#include "kcv/runner.hpp"
#include "kcv/sandbox.hpp"
#include "kcv/stats.hpp"
#include "kcv/subprocess.hpp"
#include "kcv/text.hpp"
#include "kcv/verify_report.hpp"
#include "kcv/workdir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace kcv {

// ---- pairs ----

std::vector<CorpusPair> discover_pairs(const std::string& dir, bool self_check) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw SetupError(fmt::format("corpus '{}' is not a directory", dir));
  const fs::path root = fs::absolute(dir).lexically_normal();
  std::vector<CorpusPair> pairs;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw SetupError(fmt::format("cannot read corpus '{}': {}", dir, ec.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw SetupError(fmt::format("cannot read corpus '{}': {}", dir, ec.message()));
    const fs::path& p = it->path();
    if (!it->is_regular_file(ec) || p.extension() != ".py") continue;
    const std::string name = p.filename().string();
    const std::string key = p.lexically_relative(root).generic_string();
    if (self_check) {
      pairs.push_back({key, p.string(), p.string()});
    } else if (name.rfind("solution", 0) == 0 && fs::is_regular_file(p.parent_path() / "problem.py", ec)) {
      pairs.push_back({key, (p.parent_path() / "problem.py").string(), p.string()});
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const CorpusPair& a, const CorpusPair& b) { return a.key < b.key; });
  return pairs;
}

Shard parse_shard(const std::string& text) {
  const auto bad = [&] { return SetupError(fmt::format("--shard '{}': expected I/N with 0 <= I < N", text)); };
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad();
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) throw bad();
    return std::stoi(s);
  };
  Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1))};
  if (s.count < 1 || s.index >= s.count) throw bad();
  return s;
}

std::vector<CorpusPair> select_shard(const std::vector<CorpusPair>& pairs, const Shard& shard) {
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
    throw SetupError(fmt::format("--shard {}: expected I/N with 0 <= I < N", shard.text()));
  std::vector<CorpusPair> out;
  for (std::size_t i = 0; i < pairs.size(); ++i)
    if (i % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index)) out.push_back(pairs[i]);
  return out;
}

std::vector<CorpusPair> spread_by_problem(const std::vector<CorpusPair>& pairs) {
  std::vector<std::string> problems;               // in order of first appearance
  std::map<std::string, std::vector<const CorpusPair*>> of;
  for (const auto& p : pairs) {
    auto& list = of[p.problem];
    if (list.empty()) problems.push_back(p.problem);
    list.push_back(&p);
  }
  std::vector<CorpusPair> out;
  for (std::size_t round = 0; out.size() < pairs.size(); ++round)
    for (const auto& problem : problems)
      if (round < of[problem].size()) out.push_back(*of[problem][round]);
  return out;
}

std::size_t next_pair(const std::vector<CorpusPair>& todo, const std::map<std::string, ProblemLoad>& load) {
  // NOTES: the longest first (LPT) with estimates the run measured itself: the first pair of a
  // problem is the estimate for the rest, which have the same sizes.
  auto rank = [&](const CorpusPair& p) {
    const auto it = load.find(p.problem);
    if (it == load.end()) return std::tuple{2, 0.0};
    return std::tuple{it->second.running == 0 ? 1 : 0, it->second.longest_s};
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < todo.size(); ++i)
    if (rank(todo[i]) > rank(todo[best])) best = i;
  return best;
}

std::vector<std::pair<std::string, std::string>> settings_variables(const Settings& s) {
  const auto count = [](int64_t n) { return n > 0 ? std::to_string(n) : std::string(); };
  std::string off;
  for (const std::string& name : sandbox::off_names(s.sandbox_off)) off += (off.empty() ? "" : ",") + name;
  const char* pool_start = s.pool_start == PoolStart::after    ? "after"
                           : s.pool_start == PoolStart::during ? "during"
                                                               : "";
  return {{"KCV_WORKER", s.worker},
          {"KCV_INCLUDE_DIR", s.include_dir},
          {"KCV_ADAPTERS_DIR", s.adapters_dir},
          {"KCV_PYTHON", s.python},
          {"KCV_CUDA_ARCH", s.cuda_arch},
          {"KCV_TORCH_PCH", s.torch_pch},
          {"KCV_CORPUS_VERIFIER", s.corpus_verifier},
          {"KCV_THREADS", count(s.threads)},
          {"KCV_MAX_ELEMENTS", count(s.max_elements)},
          {"KCV_REFERENCE_CACHE_BYTES", count(s.reference_cache_bytes)},
          {"KCV_REFERENCE_CACHE_ENTRY_BYTES", count(s.reference_cache_entry_bytes)},
          {"KCV_REFERENCE_CACHE_DIR_BYTES", count(s.reference_cache_dir_bytes)},
          {"KCV_SANDBOX_OFF", off},
          {"KCV_STANDBY", s.standby ? "" : "0"},
          {"KCV_POOL", s.pool ? "" : "0"},
          {"KCV_POOL_START", pool_start},
          {"KCV_SANITIZER_PORT_RANGES", s.sanitizer_port_ranges ? "" : "0"}};
}

// ---- summary ----

CorpusRunSummary summarize_results(const std::vector<json>& records, const std::vector<std::string>& keys) {
  // NOTES: the report's counting (summarize_corpus) over the wanted keys' results, so that the run's
  // summary and `kcv report` never count differently (the first result of a key counts).
  const std::set<std::string> wanted(keys.begin(), keys.end());
  std::vector<json> mine;
  for (const auto& r : records)
    if (r.value("kind", "") == "result" && r.contains("key") && r["key"].is_string() &&
        (wanted.empty() || wanted.count(r["key"].get<std::string>())))
      mine.push_back(r);
  const CorpusSummary c = summarize_corpus(mine);
  CorpusRunSummary s;
  s.timing = corpus_timing_summary(mine);
  s.pairs = wanted.empty() ? static_cast<int>(c.results) : static_cast<int>(wanted.size());
  for (const KernelRow& k : c.kernels) {
    if (!k.retried.empty()) ++s.retried;
    if (!k.reduced_sizes.empty()) ++s.clipped_sizes;
    if (!k.bound_calibrated.empty()) ++s.bound_calibrated;
    if (!k.bound_free.empty()) ++s.bound_free;
    if (k.status == "setup_error") ++s.setup_errors;
    else if (k.status == "timeout") ++s.timeouts;
    else if (k.status != "verified") ++s.crashes;
    else if (k.strict_pass) ++s.verified_pass;
    else ++s.verified_fail;
  }
  for (const GateSummary& g : c.gates) {
    if (g.counts.pass + g.counts.failures() + g.counts.skipped == 0) continue;  // in no report
    GateFailureCount f{g.id, {}, static_cast<int>(g.counts.failures()), static_cast<int>(g.own_convention),
                       static_cast<int>(g.library_only), static_cast<int>(g.only_this_gate)};
    for (const auto& [name, n] : {std::pair{"FAIL", g.counts.fail}, {"CRASH", g.counts.crash},
                                  {"TIMEOUT", g.counts.timeout}, {"REFUSED", g.counts.refused},
                                  {"SKIPPED", g.counts.skipped}})
      if (n > 0) f.by_verdict[name] = static_cast<int>(n);
    s.gates.push_back(std::move(f));
  }
  s.split = c.split;
  s.accepted = static_cast<int>(c.accepted);
  s.accepted_fail_any = static_cast<int>(c.accepted_fail_any);
  s.accepted_fail_tolerance_independent = static_cast<int>(c.accepted_fail_tolerance_independent);
  s.accepted_split = c.accepted_split;
  return s;
}

// ---- run ----

namespace {

std::string one_line(std::string s, std::size_t cap = 1000) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > cap) s = s.substr(0, cap) + " [...]";
  return s;
}

/// The last non-empty line of a file (its last 64 KiB), "" when none.
std::string last_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - (64 << 10));
  in.seekg(from);
  std::string text(static_cast<std::size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return one_line(last);
}

/// A seed from the kernel's entropy pool, as verify draws one.
uint64_t fresh_run_seed() {
  uint64_t s = 0;
  std::ifstream in("/dev/urandom", std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(&s), sizeof s))
    s = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  return s;
}

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return fmt::format("signal {} (SIG{})", sig, name ? name : "?");
}

/// pid -> parent pid of every process, from /proc.
std::map<pid_t, pid_t> parents() {
  std::map<pid_t, pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(fmt::format("/proc/{}/stat", e->d_name));
    std::string stat;
    std::getline(in, stat);
    const std::size_t close_paren = stat.rfind(')');   // comm may hold spaces and parentheses
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(close_paren + 1));
    char state;
    pid_t ppid = 0;
    if (rest >> state >> ppid) out[static_cast<pid_t>(std::atoi(e->d_name))] = ppid;
  }
  closedir(d);
  return out;
}

/// Kills a verifier and everything it started. Descendants that moved to groups or sessions of
/// their own (kcv verify puts each worker in one) are found through /proc while the tree is still
/// linked: everything found is stopped first (a stopped process neither forks nor exits, so the
/// parent links hold), found again, then killed with the groups it leads and the verifier's group.
void kill_tree(pid_t root) {
  const pid_t own_group = getpgrp();
  std::set<pid_t> found = {root};
  kill(-root, SIGSTOP);
  for (int pass = 0; pass < 3; ++pass) {
    std::map<pid_t, std::vector<pid_t>> children;
    for (const auto& [pid, ppid] : parents()) children[ppid].push_back(pid);
    std::vector<pid_t> todo(found.begin(), found.end());
    while (!todo.empty()) {
      const pid_t p = todo.back();
      todo.pop_back();
      for (pid_t c : children[p])
        if (found.insert(c).second) {
          kill(c, SIGSTOP);
          todo.push_back(c);
        }
    }
  }
  for (pid_t p : found) {
    const pid_t g = getpgid(p);
    if (g == p && g != own_group) kill(-g, SIGKILL);   // a group it leads holds only its own
    kill(p, SIGKILL);
  }
  kill(-root, SIGKILL);
}

struct Child {
  CorpusPair pair;
  /// A retry: at most this many other pairs run beside it (0: alone); -1: a first run.
  int beside_at_most = -1;
  int beside = 0;       // the most other pairs running at once while it ran
  pid_t pid = -1;
  Clock::time_point start;
  std::string json_path, err_path;
  /// The verifier's TMPDIR, removed once it is reaped: a verifier killed at --pair-timeout never
  /// removes its own workdir (its extension build, its copy of the precompiled header).
  std::string tmp_dir;
};

/// Each pair's CPU threads (Settings::threads): the caller's count when positive, else the pair's
/// share of the cores (runner.hpp, default_threads).
int pair_threads(int jobs, const Settings& settings) {
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  return settings.threads > 0 ? settings.threads : static_cast<int>(std::max(1L, cores / jobs));
}

/// The environment of an explicit verifier executable (CorpusOptions::verifier, KCV_CORPUS_VERIFIER)
/// and of the precompiled-header helper: this process's, with the run's settings as the KCV_*
/// variables (settings_variables) and KCV_THREADS pair_threads. The in-process pairs
/// (pair_child) need none of it: their settings are the run's memory (pair_verify_options).
std::vector<std::string> verifier_environment(int jobs, const Settings& settings) {
  std::vector<std::string> env = own_environment();
  // NOTES: an explicit verifier is taken to be a kcv CLI, which maps its environment onto Settings
  // again (tools/kcv/environment.cpp): this run's settings, not the environment it was started
  // in, are what it must see.
  for (const auto& [name, value] : settings_variables(settings)) set_env(env, name, value);
  set_env(env, "KCV_THREADS", std::to_string(pair_threads(jobs, settings)));
  return env;
}

/// Starts the verifier on a pair: own process group, stdin and stdout /dev/null, stderr to a file,
/// killed when this process dies (PR_SET_PDEATHSIG), so a killed run leaves no verifier behind.
/// No descriptor above 2 reaches it: the journal's fd (and its flock) stays with the run.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
            const std::string& err_path, const std::string& out_path = "") {
  SubprocessSpec spec;
  spec.argv = argv;
  spec.env = environment;
  spec.in = Redirect::dev_null();
  spec.out = out_path.empty() ? Redirect::dev_null() : Redirect::to_file(out_path);
  spec.err = Redirect::to_file(err_path);
  spec.exec_failure_prefix = fmt::format("kcv corpus: cannot execute '{}': ", argv[0]);
  return spawn_subprocess(spec);
}

/// Threads of this process (/proc/self/task), or -1 when it cannot be read.
int thread_count() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

/// Refuses to fork a pair's verification from a process with other threads (pair_child).
void require_one_thread() {
  const int n = thread_count();
  if (n != 1)
    throw SetupError(fmt::format(
        "kcv corpus: this process has {} threads; a corpus run verifies each pair in a forked child of it, which "
        "needs the process to be single-threaded when it forks (run `kcv corpus run` instead, or give "
        "CorpusOptions::verifier / KCV_CORPUS_VERIFIER a kcv executable to start per pair)",
        n < 0 ? std::string("an unknown number of") : std::to_string(n)));
}

/// The pair's verification: what `kcv verify --kernelbench P S --backend B --seed N
/// [--reference-cache D] [--build-cache D] [--baseline kernelbench] [--timing] [--timeout T]
/// [--compile-grace G] [--python PY] --quiet` made of its argv, with the run's settings (threads: each
/// pair's share of the cores unless the caller chose a count; the precompiled header once ready).
VerifyOptions pair_verify_options(const CorpusOptions& o, const CorpusPair& pair, uint64_t seed,
                                  const std::string& python, const std::string& cache_dir, int64_t cache_cap,
                                  const std::string& builds_dir, const std::string& torch_pch) {
  VerifyOptions v;
  v.kernelbench.problem = pair.problem;
  v.kernelbench.solution = pair.solution;
  v.kernelbench.python = python;
  v.kernelbench.baseline = o.baseline == "kernelbench";
  v.kernelbench.reference_cache = cache_dir;
  v.kernelbench.build_cache = builds_dir;
  v.backend = o.backend;
  v.seed = seed;
  v.timing = o.timing;
  if (o.timeout_s > 0) v.timeout_s = o.timeout_s;
  if (o.compile_grace_s >= 0) v.compile_grace_s = o.compile_grace_s;
  v.settings = o.settings;
  v.settings.threads = pair_threads(o.jobs, o.settings);
  v.settings.torch_pch = torch_pch;
  if (cache_cap > 0) v.settings.reference_cache_dir_bytes = cache_cap;
  return v;
}

/// Starts a pair's verification in a forked child of this process that calls the library
/// (verify_to_report_files, the code path of `kcv verify --json`) and exits with its exit code:
/// 0 PASS, 1 FAIL, 2 setup error with "kcv: <why>" the last line of its stderr, 128+signal when
/// stopped by SIGINT/SIGTERM. spawn_subprocess makes the child as it makes an explicit verifier
/// (own process group, killed when this process dies, stdin and stdout /dev/null, stderr to
/// err_path, no core dump, no descriptor above 2: the journal's fd and its flock stay with the
/// run), then runs it instead of an exec; with TMPDIR tmp_dir.
/// NOTES: fork without exec is safe only in a single-threaded process: a lock another thread
/// held at the fork (malloc's arenas aside, the library's mutexes, a host interpreter's) stays held
/// in the child forever. The callers are single-threaded (the CLI's `kcv corpus run`, the tests;
/// the Python module does not run corpora); a caller with threads gets a SetupError before any
/// fork, rather than an exec of /proc/self/exe, which is kcv only for the CLI, the one caller
/// that never has threads here. The child inherits the run's memory, Settings included: no KCV_*
/// variable carries them (issue 23); and it never returns into the run's code: it ends in _exit,
/// so no destructor of the parent's state (the journal, the scratch directory, the running pairs)
/// runs in it.
pid_t pair_child(const VerifyOptions& v, const std::string& json_path, const std::string& err_path,
                 const std::string& tmp_dir) {
  require_one_thread();
  // Nothing buffered here is written twice: once by this process, once by the child.
  std::cout.flush();
  std::cerr.flush();
  std::clog.flush();
  std::fflush(nullptr);
  SubprocessSpec spec;
  spec.in = Redirect::dev_null();
  spec.out = Redirect::dev_null();
  spec.err = Redirect::to_file(err_path);
  spec.run_instead_of_exec = [&]() -> int {
    // Signals as a fresh `kcv verify` has them: the run's handlers gone (as exec drops them),
    // nothing blocked, SIGINT and SIGTERM asking the verification to stop (its workers are ended,
    // its temporary files removed, exit 128+signal).
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL)
        signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    request_stop(0);
    install_stop_handlers();
    setenv("TMPDIR", tmp_dir.c_str(), 1);
    // NOTES: the heap as the CLI's main keeps it; a caller that is not the CLI has not set it.
    keep_large_allocations_in_heap();
    int code = kExitSetup;
    try {
      const VerifyReportOutcome outcome = verify_to_report_files(v, {json_path, ""});
      code = outcome.exit_code;
      if (code == kExitSetup) std::cerr << setup_error_text(outcome);
    } catch (const Interrupted& e) {
      std::cerr << stopped_text(e.signal);
      code = 128 + e.signal;
    } catch (const std::exception& e) {
      std::cerr << "kcv: internal error: " << clean_text(e.what()) << "\n";
    } catch (...) {
      std::cerr << "kcv: internal error: an exception that is no std::exception\n";
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    return code;
  };
  return spawn_subprocess(spec);
}

/// The precompiled-header helper (CorpusOptions::torch_pch, adapters/torch/kcv_torch_pch.py):
/// started before the first pair, asked without blocking whenever pairs start, killed if the run
/// ends first. Trusted: it loads no problem and no solution, and its manifest travels to each
/// verifier in its environment, never through a file a candidate could rewrite.
class TorchPchBuild {
 public:
  TorchPchBuild(const std::string& python, const std::string& adapters_dir, const std::string& backend,
                const fs::path& dir, const std::string& scratch, std::vector<std::string> env)
      : dir_(dir), out_path_(scratch + "/torch-pch.stdout"), err_path_(scratch + "/torch-pch.stderr"),
        start_(Clock::now()) {
    std::error_code ec;
    fs::remove_all(dir, ec);   // a resumed run's helper makes its own
    // NOTES: load_inline asks for ninja even when it builds nothing: a venv keeps it beside python.
    const std::string bin = fs::path(python).parent_path().string();
    bool has_path = false;
    for (auto& e : env)
      if (e.rfind("PATH=", 0) == 0) {
        e = "PATH=" + bin + ":" + e.substr(5);
        has_path = true;
      }
    if (!has_path) env.push_back("PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin");
    set_env(env, "KCV_TORCH_PCH", "");
    pid_ = spawn({python, (fs::path(adapters_dir) / "torch" / "kcv_torch_pch.py").string(), dir.string(),
                  "--backend", backend},
                 env, err_path_, out_path_);
  }
  TorchPchBuild(const TorchPchBuild&) = delete;
  TorchPchBuild& operator=(const TorchPchBuild&) = delete;
  /// Also removes the headers (about 0.7 GB each): only the run's own pairs may use them, and
  /// they have ended when the run's state goes.
  ~TorchPchBuild() {
    if (pid_ > 0) {
      kill_tree(pid_);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Whether the helper has ended (it is reaped then); never blocks.
  bool poll() {
    if (pid_ <= 0) return true;
    int status = 0;
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == 0 || (got < 0 && errno == EINTR)) return false;
    pid_ = -1;
    seconds_ = std::chrono::duration<double>(Clock::now() - start_).count();
    // NOTES: checked as each verifier checks it (torch_pch_entries): a manifest that every pair
    // would refuse is no header, not a setup error per pair.
    json entries = json::array();
    if (got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      std::ifstream in(out_path_);
      std::stringstream text;
      text << in.rdbuf();
      try {
        entries = torch_pch_entries(text.str());
      } catch (const SetupError& e) {
        error_ = std::string("the helper printed ") + e.what();
        return true;
      }
    }
    if (!entries.empty()) {
      flag_sets_ = static_cast<int>(entries.size());
      manifest_ = json{{"entries", entries}}.dump();
    } else {
      const std::string why = last_line(err_path_);
      error_ = why.empty() ? (got > 0 && WIFEXITED(status) ? fmt::format("the helper exited {}", WEXITSTATUS(status))
                                                          : std::string("the helper was killed"))
                           : why;
    }
    return true;
  }
  /// The manifest for KCV_TORCH_PCH once the helper succeeded; "" before and after a failure.
  const std::string& manifest() const { return manifest_; }
  std::string status(int pairs_with) const {
    if (pid_ > 0) return "not ready when the run ended";
    if (manifest_.empty()) return "not built: " + one_line(error_, 400);
    return fmt::format("ready after {:.0f} s for {} flag set{}, {} pair{} started with it", seconds_, flag_sets_,
                       flag_sets_ == 1 ? "" : "s", pairs_with, pairs_with == 1 ? "" : "s");
  }

 private:
  fs::path dir_;
  std::string out_path_, err_path_;
  Clock::time_point start_;
  pid_t pid_ = -1;
  double seconds_ = 0;
  int flag_sets_ = 0;
  std::string manifest_, error_;
};

/// The journal record of a finished pair.
/// lost: why the child's status is unknown ("" when it is known).
nlohmann::ordered_json result_record(const Child& c, int status, bool timed_out, const std::string& lost, double wall,
                                     double cpu, double pair_timeout) {
  nlohmann::ordered_json r = {{"kind", "result"}, {"key", c.pair.key}, {"problem", c.pair.problem},
                              {"solution", c.pair.solution}};
  std::string st, error;
  int exit_code = -1;
  nlohmann::ordered_json report = nullptr;
  const std::string err_line = last_line(c.err_path);
  const std::string tail = err_line.empty() ? "" : ": " + err_line;
  if (!lost.empty()) {
    st = "verifier_crash";
    error = lost;
  } else if (timed_out) {
    st = "timeout";
    error = fmt::format("no result within {:g} s; the verifier and its processes were killed", pair_timeout);
  } else if (WIFSIGNALED(status)) {
    st = "verifier_crash";
    // Not timed out, so not this run's SIGKILL: the kernel's out-of-memory killer's.
    error = "verifier killed by " + (WTERMSIG(status) == SIGKILL ? std::string(kUnsentSigkill) : signal_text(WTERMSIG(status))) + tail;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    st = "setup_error";
    exit_code = 2;
    error = err_line.empty() ? "verifier exited with status 2 and said nothing on stderr" : err_line;
  } else if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 1)) {
    exit_code = WEXITSTATUS(status);
    std::string why;
    std::ifstream in(c.json_path, std::ios::binary);
    if (!in) {
      why = "wrote no JSON report";
    } else {
      std::ostringstream ss;
      ss << in.rdbuf();
      report = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
      if (report.is_discarded() || !report.is_object()) {
        why = "wrote a JSON report that does not parse";
      } else {
        try {
          (void)report_from_json(json::parse(ss.str()));
        } catch (const SetupError& e) {
          why = e.what();
        }
      }
    }
    if (why.empty()) {
      st = "verified";
    } else {
      st = "verifier_crash";
      error = fmt::format("verifier exited with status {} but {}{}", exit_code, why, tail);
      report = nullptr;
    }
  } else {
    st = "verifier_crash";
    error = fmt::format("verifier exited with status {}{}", WEXITSTATUS(status), tail);
  }
  r["status"] = st;
  r["exit_code"] = exit_code;
  if (st != "verified") r["error"] = one_line(error);
  r["wall_seconds"] = wall;
  r["cpu_seconds"] = cpu;
  r["report"] = std::move(report);
  return r;
}

/// "gate ID VERDICT: evidence" of the first gate of rec's report that `pick` takes; "" when none.
template <class Pick>
std::string first_gate_reason(const nlohmann::ordered_json& rec, Pick pick) {
  if (!rec["report"].is_object() || !rec["report"].contains("gates") || !rec["report"]["gates"].is_array()) return "";
  for (const auto& g : rec["report"]["gates"])
    if (g.is_object() && pick(g))
      return fmt::format("gate {} {}: {}", g.value("id", "?"), g.value("verdict", "?"), g.value("evidence", ""));
  return "";
}

/// Why a pair's result may be the machine's, not the candidate's: it ran out of GPU or host memory
/// (a gate flagged out_of_memory, or the verifier's error says so). "" when not.
std::string out_of_memory_reason(const nlohmann::ordered_json& rec) {
  if (rec.contains("error") && rec["error"].is_string() && mentions_out_of_memory(rec["error"].get<std::string>()))
    return fmt::format("{}: {}", rec["status"].get<std::string>(), rec["error"].get<std::string>());
  return first_gate_reason(rec, [](const auto& g) { return g.value("out_of_memory", false); });
}

/// Why a pair's result may be the machine's, not the candidate's: a gate stopped at the per-call
/// timeout (TIMEOUT, not flagged stopped_at_max_time: the run's own limit, which a retry would only
/// spend again), which a saturated host or a shared GPU can cause in a call that takes seconds
/// alone. "" when not. NOTES: the flag, not the evidence's text, which can quote a candidate's log.
std::string call_timeout_reason(const nlohmann::ordered_json& rec) {
  return first_gate_reason(rec, [](const auto& g) {
    return g.value("verdict", "") == "TIMEOUT" && !g.value("stopped_at_max_time", false);
  });
}

}  // namespace

CorpusRunSummary run_corpus(const CorpusOptions& o, const CorpusProgressCallback& on_pair) {
  if (o.jobs < 1) throw SetupError("--jobs must be at least 1");
  if (!(o.pair_timeout_s > 0)) throw SetupError("--pair-timeout must be positive");
  if (o.timeout_s < 0) throw SetupError("--timeout must be positive");
  if (o.backend.empty()) throw SetupError("--backend must not be empty");
  if (!o.baseline.empty() && o.baseline != "kernelbench")
    throw SetupError(fmt::format("--baseline '{}': the only baseline is kernelbench", o.baseline));
  if (o.out.empty()) throw SetupError("--out is required");
  // A bad --python is one error now, not a setup error per pair; and every pair runs the same one.
  const std::string python = o.python.empty() ? std::string() : resolve_python(o.python, o.settings);
  // NOTES: an explicit verifier executable is started per pair with `kcv verify`'s argv and the
  // run's settings as KCV_* variables (the tests' stub, a scheduler's wrapper); without one, each
  // pair is a forked child of this process that calls the library (pair_child).
  const std::string verifier = !o.verifier.empty() ? o.verifier : o.settings.corpus_verifier;
  if (!verifier.empty() && access(verifier.c_str(), X_OK) != 0)
    throw SetupError(fmt::format("verifier '{}' is not an executable file", verifier));
  if (verifier.empty()) require_one_thread();   // said before the journal is touched

  const std::vector<CorpusPair> all = discover_pairs(o.dir, o.self_check);
  if (all.empty())
    throw SetupError(fmt::format("no pairs under '{}' ({})", o.dir,
                                 o.self_check ? "no *.py files" : "no directory with problem.py and solution*.py"));
  const std::vector<CorpusPair> mine = select_shard(all, o.shard);

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw SetupError(fmt::format("cannot create '{}': {}", o.out, ec.message()));
  Journal journal((fs::path(o.out) / "journal.jsonl").string());

  // A resumed run must judge the same way as the run it continues.
  const json asked = {{"backend", o.backend}, {"baseline", o.baseline}, {"self", o.self_check}, {"timing", o.timing}};
  for (const auto& r : journal.existing()) {
    if (r["kind"] != "run") continue;
    for (const auto& [field, value] : asked.items())
      if (r.contains(field) && r[field] != value)
        throw SetupError(fmt::format("{} holds a run with {} {}, this run asks {}; use another --out", o.out, field,
                                     r[field].dump(), value.dump()));
  }
  // NOTES: one seed for every pair of the run, so that the solutions of one problem see the same
  // cases and the reference of each is computed once (issue 24 item 1); a resumed run keeps it.
  std::optional<uint64_t> journal_seed;
  for (const auto& r : journal.existing())
    if (r["kind"] == "run" && r.contains("seed") && r["seed"].is_string() && !journal_seed) {
      const std::string t = r["seed"].get<std::string>();
      if (t.empty() || t.size() > 20 || t.find_first_not_of("0123456789") != std::string::npos)
        throw SetupError(fmt::format("{} holds a run record whose seed '{}' is not a number", o.out, t));
      journal_seed = std::stoull(t);
    }
  if (o.seed && journal_seed && *o.seed != *journal_seed)
    throw SetupError(fmt::format("{} holds a run with seed {}, this run asks {}; use another --out", o.out,
                                 *journal_seed, *o.seed));
  const uint64_t seed = o.seed ? *o.seed : journal_seed ? *journal_seed : fresh_run_seed();
  // The reference cache: the verifiers' own, outside anything a candidate's worker can reach.
  std::string cache_dir, cache_off;
  int64_t reference_cache_cap = 0;
  if (o.reference_cache == "off") {
    cache_off = "off (--reference-cache off)";
  } else if (const std::string why = reference_cache_refusal(); !why.empty()) {
    cache_off = "off: " + why;
  } else {
    cache_dir = fs::absolute(o.reference_cache.empty() ? fs::path(o.out) / "reference-cache"
                                                        : fs::path(o.reference_cache)).lexically_normal().string();
    // Made here, and checked once for every pair; its cap fixed once for the whole run (the
    // default is worked out from the disk now, so that every pair keeps the same one).
    reference_cache_cap = ReferenceDiskCache(cache_dir, json::object(), o.settings.reference_cache_entry_bytes,
                                             o.settings.reference_cache_dir_bytes).dir_cap();
  }
  // The build cache: the same policy, its own directory (shards of one run may share it).
  std::string builds_dir, builds_off;
  if (o.build_cache == "off") {
    builds_off = "off (--build-cache off)";
  } else if (o.self_check) {
    builds_off = "off (--self: a problem as its own candidate builds nothing)";
  } else if (const std::string why = build_cache_refusal(); !why.empty()) {
    builds_off = "off: " + why;
  } else {
    builds_dir = fs::absolute(o.build_cache.empty() ? fs::path(o.out) / "build-cache" : fs::path(o.build_cache))
                     .lexically_normal().string();
    (void)BuildCache(builds_dir);  // made here, and checked once for every pair
  }
  std::set<std::string> done;
  // key -> why it runs again, and how many pairs may run beside it then
  struct Retry {
    std::string reason;
    int beside_at_most = 0;
  };
  std::map<std::string, Retry> retry;
  for (const auto& r : journal.existing()) {
    if (r["kind"] == "result") done.insert(r["key"].get<std::string>());
    if (r["kind"] == "retry" && r.contains("key") && r["key"].is_string()) {
      Retry& why = retry[r["key"].get<std::string>()];
      why.reason = r.contains("reason") && r["reason"].is_string() ? r["reason"].get<std::string>() : "";
      // A retry record of a kcv before the back-off has no beside_at_most: it runs alone, as it did.
      why.beside_at_most = r.contains("beside_at_most") && r["beside_at_most"].is_number_integer()
                               ? std::max(0, r["beside_at_most"].get<int>()) : 0;
    }
  }
  // NOTES: a pair that ran out of memory or time beside N other pairs runs again after all the
  // others, with at most N/2 beside it, and again with half of that while it still runs out beside
  // any, alone at last (docs/kernelbench.md "Pairs"): its result may be the other pairs' doing, and
  // a corpus of large problems should not end in a queue of pairs that each hold the whole machine.
  // A resumed run keeps that order: its "retry" record sends it to the end.
  std::vector<CorpusPair> todo, retries;
  for (const auto& p : spread_by_problem(mine))
    if (!done.count(p.key)) (retry.count(p.key) ? retries : todo).push_back(p);
  // The retries that may share the machine with the most first; a pair that must run alone, last.
  const auto order_retries = [&] {
    std::stable_sort(retries.begin(), retries.end(), [&](const CorpusPair& a, const CorpusPair& b) {
      return retry[a.key].beside_at_most > retry[b.key].beside_at_most;
    });
  };
  order_retries();

  journal.append({{"kind", "run"}, {"started", corpus_detail::iso_now()},
                  {"corpus", fs::absolute(o.dir).lexically_normal().string()}, {"backend", o.backend},
                  {"baseline", o.baseline}, {"shard", o.shard.text()}, {"jobs", o.jobs}, {"self", o.self_check},
                  {"timing", o.timing}, {"seed", std::to_string(seed)},
                  {"reference_cache", cache_dir.empty() ? cache_off : cache_dir},
                  {"build_cache", builds_dir.empty() ? builds_off : builds_dir}});

  std::vector<json> records = journal.existing();
  std::vector<std::string> keys;
  for (const auto& p : mine) keys.push_back(p.key);
  CorpusProgress progress;
  progress.total = static_cast<int>(mine.size());
  {
    const CorpusRunSummary before = summarize_results(records, keys);
    progress.ok = before.verified_pass;
    progress.fail = before.verified_fail;
    progress.err = before.setup_errors + before.timeouts + before.crashes;
    progress.done = progress.ok + progress.fail + progress.err;
  }
  const int from_journal = progress.done;

  const Workdir scratch("", "corpus");  // the children's reports and stderr
  std::vector<std::string> environment = verifier_environment(o.jobs, o.settings);
  if (reference_cache_cap > 0) set_env(environment, "KCV_REFERENCE_CACHE_DIR_BYTES", std::to_string(reference_cache_cap));
  std::unique_ptr<TorchPchBuild> pch;
  if (o.torch_pch && !o.self_check && !(todo.empty() && retries.empty()))
    pch = std::make_unique<TorchPchBuild>(python.empty() ? resolve_python("", o.settings) : python,
                                          kcv_adapters_dir(o.settings), o.backend,
                                          fs::path(o.out) / "torch-pch", scratch.path(), environment);
  bool pch_env_set = false;
  std::string pch_manifest = o.settings.torch_pch;   // what each pair's settings.torch_pch is
  int pairs_with_pch = 0;
  std::vector<Child> running;
  // Should anything below throw, no verifier outlives the call; a second stop request kills the
  // running ones the same way.
  struct KillOnUnwind {
    std::vector<Child>& running;
    void kill_all() {
      for (const Child& c : running) {
        kill_tree(c.pid);
        while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {}
      }
      running.clear();
    }
    ~KillOnUnwind() { kill_all(); }
  } kill_on_unwind{running};
  std::map<std::string, ProblemLoad> load;
  for (const auto& r : records)
    if (r["kind"] == "result" && r.contains("problem") && r["problem"].is_string()) {
      double& longest = load[r["problem"].get<std::string>()].longest_s;
      longest = std::max(longest, r.value("wall_seconds", 0.0));
    }
  std::size_t started = 0;
  int ran = 0;
  double wall_sum = 0, cpu_sum = 0;
  int64_t cache_read = 0, cache_written = 0, cache_rejected = 0, cache_evicted = 0, cache_no_space = 0;  // pairs run now
  int64_t build_hits = 0, build_stored = 0, build_rejected = 0, build_refused = 0, build_write_failed = 0;
  auto start = [&](Child c) {
    if (pch && !pch_env_set && pch->poll() && !pch->manifest().empty()) {
      set_env(environment, "KCV_TORCH_PCH", pch->manifest());
      pch_manifest = pch->manifest();
      pch_env_set = true;
    }
    pairs_with_pch += pch_env_set ? 1 : 0;
    ++load[c.pair.problem].running;
    c.json_path = fmt::format("{}/pair-{}.json", scratch.path(), started);
    c.err_path = fmt::format("{}/pair-{}.stderr", scratch.path(), started);
    c.tmp_dir = fmt::format("{}/pair-{}.tmp", scratch.path(), started);
    ++started;
    std::error_code made;
    fs::create_directories(c.tmp_dir, made);
    if (made) throw SetupError(fmt::format("cannot create '{}': {}", c.tmp_dir, made.message()));
    if (verifier.empty()) {
      const VerifyOptions v = pair_verify_options(o, c.pair, seed, python, cache_dir, reference_cache_cap, builds_dir,
                                                  pch_manifest);
      c.start = Clock::now();
      c.pid = pair_child(v, c.json_path, c.err_path, c.tmp_dir);
      running.push_back(std::move(c));
      return;
    }
    std::vector<std::string> env = environment;
    set_env(env, "TMPDIR", c.tmp_dir);
    std::vector<std::string> argv = {verifier, "verify", "--kernelbench", c.pair.problem, c.pair.solution,
                                     "--backend", o.backend, "--json", c.json_path, "--seed", std::to_string(seed)};
    if (!cache_dir.empty()) argv.insert(argv.end(), {"--reference-cache", cache_dir});
    if (!builds_dir.empty()) argv.insert(argv.end(), {"--build-cache", builds_dir});
    if (!o.baseline.empty()) argv.insert(argv.end(), {"--baseline", o.baseline});
    if (o.timing) argv.push_back("--timing");
    if (o.timeout_s > 0) argv.insert(argv.end(), {"--timeout", fmt::format("{:g}", o.timeout_s)});
    if (o.compile_grace_s >= 0) argv.insert(argv.end(), {"--compile-grace", fmt::format("{:g}", o.compile_grace_s)});
    if (!python.empty()) argv.insert(argv.end(), {"--python", python});
    argv.push_back("--quiet");
    c.start = Clock::now();
    c.pid = spawn(argv, env, c.err_path);
    running.push_back(std::move(c));
  };
  const auto stop_asked = [&] { return o.stop ? o.stop->load() : 0; };
  Admission admission(o.jobs);
  // How many pairs may run at once now: --jobs, the admission limit, and no more than a running retry allows.
  const auto room = [&] {
    std::size_t n = static_cast<std::size_t>(std::min(o.jobs, admission.limit()));
    for (const Child& r : running)
      if (r.beside_at_most >= 0) n = std::min(n, static_cast<std::size_t>(r.beside_at_most) + 1);
    return n;
  };
  while (!running.empty() || (stop_asked() == 0 && (!todo.empty() || !retries.empty()))) {
    // NOTES: asked twice, the running pairs are stopped as a timeout stops one, and get no record:
    // they were not judged, and a rerun runs them (docs/kernelbench.md "Stopping a run").
    if (stop_asked() >= 2) {
      kill_on_unwind.kill_all();
      break;
    }
    // Retries after all the others, each once the pairs running are few enough for it.
    // They obey the admission limit as first runs do: a retry started beside a pair that holds the
    // memory it lacks runs out again within seconds (session 41: 32 retries in 40 s beside one).
    while (stop_asked() == 0 && todo.empty() && !retries.empty() && running.size() < room() &&
           running.size() <= static_cast<std::size_t>(retry[retries.front().key].beside_at_most)) {
      Child c;
      c.pair = retries.front();
      c.beside_at_most = retry[c.pair.key].beside_at_most;
      retries.erase(retries.begin());
      start(std::move(c));
    }
    while (stop_asked() == 0 && running.size() < room() && !todo.empty()) {
      for (const Child& r : running) {
        ProblemLoad& l = load[r.pair.problem];
        l.longest_s = std::max(l.longest_s, std::chrono::duration<double>(Clock::now() - r.start).count());
      }
      const std::size_t pick = next_pair(todo, load);
      Child c;
      c.pair = todo[pick];
      todo.erase(todo.begin() + static_cast<std::ptrdiff_t>(pick));
      start(std::move(c));
    }
    for (Child& c : running) c.beside = std::max(c.beside, static_cast<int>(running.size()) - 1);
    bool finished_any = false;
    for (std::size_t i = 0; i < running.size();) {
      Child& c = running[i];
      // Exited? Asked without reaping (WNOWAIT): the zombie keeps its pid, so its group id cannot
      // be reused before whatever the verifier left in the group is killed with it.
      siginfo_t info{};
      const int w = waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (w < 0 && errno == EINTR) { ++i; continue; }
      const bool exited = w == 0 && info.si_pid == c.pid;
      const double wall = std::chrono::duration<double>(Clock::now() - c.start).count();
      if (w == 0 && !exited && wall < o.pair_timeout_s) { ++i; continue; }
      const bool timed_out = w == 0 && !exited;
      if (timed_out) kill_tree(c.pid);
      else kill(-c.pid, SIGKILL);
      int status = 0;
      pid_t got;
      // NOTES: wait4's usage is the verifier's CPU plus that of every process it waited for (its
      // torch processes, the compilers under them): the pair's cost in cores, beside its wall
      // time, on a host where 14 pairs share 16 cores.
      struct rusage usage {};
      while ((got = wait4(c.pid, &status, 0, &usage)) < 0 && errno == EINTR) {}
      const double cpu = got < 0 ? 0.0
                                 : static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
      const std::string lost = got < 0 ? fmt::format("cannot wait for the verifier: {}", std::strerror(errno)) : "";
      // NOTES: a scheduler that stops a task (Slurm's scancel, requeue, preemption, time limit)
      // sends SIGTERM to every process of the task, the verifier as well as this run; kcv itself
      // only ever sends SIGKILL. A verifier killed by SIGTERM/SIGINT while this run is asked to
      // stop was not judged: no record, and a rerun runs it. Its signal may be seen before ours
      // is handled, so wait a little for ours; without one, it is the verifier's crash.
      if (got >= 0 && !timed_out && WIFSIGNALED(status) &&
          (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT)) {
        for (int k = 0; k < 100 && stop_asked() == 0; ++k) usleep(10000);
        if (stop_asked() > 0) {
          --load[c.pair.problem].running;
          std::error_code rm;
          fs::remove(c.json_path, rm);
          fs::remove(c.err_path, rm);
          fs::remove_all(c.tmp_dir, rm);
          running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
          finished_any = true;
          continue;
        }
      }
      nlohmann::ordered_json rec = result_record(c, status, timed_out, lost, wall, cpu, o.pair_timeout_s);
      if (rec["report"].is_object()) {
        // The report's files relative to OUT, the journal's directory: `kcv replay OUT --key K`
        // resolves them there first (the verifier wrote them relative to its scratch file).
        auto& prov = rec["report"]["provenance"];
        if (!prov.is_object()) prov = nlohmann::ordered_json::object();
        nlohmann::ordered_json rel = nlohmann::ordered_json::object();
        const fs::path out_dir = fs::absolute(o.out);
        for (const auto& [key, file] : {std::pair{"problem", c.pair.problem}, {"solution", c.pair.solution}}) {
          std::error_code rel_ec;
          const fs::path p = fs::relative(file, out_dir, rel_ec);
          if (!rel_ec && !p.empty()) rel[key] = p.string();
        }
        prov["paths_from_report"] = std::move(rel);
      }
      cpu_sum += cpu;
      ProblemLoad& l = load[c.pair.problem];
      --l.running;
      l.longest_s = std::max(l.longest_s, wall);
      std::error_code rm;
      fs::remove(c.json_path, rm);
      fs::remove(c.err_path, rm);
      fs::remove_all(c.tmp_dir, rm);
      const std::string oom = out_of_memory_reason(rec);
      // NOTES: a call that ran past the per-call timeout beside others is judged as a pair that ran
      // past --pair-timeout there: run again beside fewer, and a TIMEOUT alone stands (session 48:
      // the problem's own Model of level2/56_Matmul_Sigmoid_Sum, a 4 GiB weight, took 10.8 s for its
      // first call beside 7 pairs on an H100 and TIMEOUT at 10 s in values, a false FAIL).
      const std::string slow_call = oom.empty() && !timed_out ? call_timeout_reason(rec) : "";
      const bool out_of_time = timed_out || !slow_call.empty();
      // A retry runs beside fewer than this run had beside it (room), so the halving ends alone.
      if ((!oom.empty() || out_of_time) && c.beside > 0) {
        const std::string reason = one_line(
            fmt::format("ran out of {} beside {} other pair{} ({})", out_of_time ? "time" : "memory", c.beside,
                        c.beside == 1 ? "" : "s",
                        timed_out ? rec.value("error", std::string()) : !slow_call.empty() ? slow_call : oom), 600);
        const int next = c.beside / 2;
        const CorpusPair pair = c.pair;
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));  // c is gone from here on
        if (!oom.empty()) admission.ran_out_of_memory(running.size());
        journal.append({{"kind", "retry"}, {"key", pair.key}, {"problem", pair.problem},
                        {"solution", pair.solution}, {"reason", reason}, {"beside_at_most", next},
                        {"starts_at_most", admission.limit()}, {"wall_seconds", wall}, {"cpu_seconds", cpu}});
        retry[pair.key] = {reason, next};
        retries.push_back(pair);
        order_retries();
        finished_any = true;
        ++progress.retries;
        progress.key = pair.key;
        progress.status = "retry";
        progress.verdict = "";
        progress.wall_s = wall;
        if (on_pair) on_pair(progress);
        continue;
      }
      if (oom.empty()) admission.ended();
      if (c.beside_at_most >= 0) {
        const std::string& why = retry[c.pair.key].reason;
        rec["retried"] = why;
        rec["retried_beside_at_most"] = c.beside_at_most;
        if (c.beside_at_most == 0) rec["retried_alone"] = why;
      }
      journal.append(rec);
      records.push_back(json::parse(rec.dump()));
      if (rec["report"].is_object() && rec["report"].contains("kernelbench") && rec["report"]["kernelbench"].is_object()) {
        const auto& rc = rec["report"]["kernelbench"].value("reference_cache", nlohmann::ordered_json());
        if (rc.is_object()) {
          cache_read += rc.value("read", int64_t{0});
          cache_written += rc.value("written", int64_t{0});
          cache_rejected += rc.value("rejected", int64_t{0});
          cache_evicted += rc.value("evicted", int64_t{0});
          cache_no_space += rc.value("no_space", int64_t{0});
        }
        const auto& bc = rec["report"]["kernelbench"].value("build_cache", nlohmann::ordered_json());
        if (bc.is_object()) {
          build_hits += bc.value("hits", int64_t{0});
          build_stored += bc.value("stored", int64_t{0});
          build_rejected += bc.value("rejected", int64_t{0});
          build_refused += bc.value("refused", int64_t{0});
          build_write_failed += bc.value("write_failed", int64_t{0});
        }
      }

      ++ran;
      wall_sum += wall;
      const std::string st = rec["status"].get<std::string>();
      if (st == "verified") ++(rec["report"].value("verdict", "") == "PASS" ? progress.ok : progress.fail);
      else ++progress.err;
      ++progress.done;
      const int remaining = progress.total - progress.done;
      progress.eta_s = wall_sum / ran * remaining / o.jobs;
      progress.key = c.pair.key;
      progress.status = st;
      progress.verdict = st == "verified" ? rec["report"].value("verdict", "") : "";
      progress.wall_s = wall;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      finished_any = true;
      if (on_pair) on_pair(progress);
    }
    if (!finished_any && !running.empty()) usleep(10000);
  }

  // The HTML report is the CLI's to write (kcv report): the library returns the summary.
  CorpusRunSummary s = summarize_results(records, keys);
  s.from_journal = from_journal;
  s.ran = ran;
  s.not_run = s.pairs - (s.verified_pass + s.verified_fail + s.setup_errors + s.timeouts + s.crashes);
  s.cpu_seconds = cpu_sum;
  s.seed = seed;
  s.reference_cache = cache_dir.empty() ? cache_off
                                        : fmt::format("{}: {} answers read, {} computed and written, {} rejected; "
                                                      "at most {:.1f} GB on disk: {} evicted, {} not kept for space",
                                                      cache_dir, cache_read, cache_written, cache_rejected,
                                                      static_cast<double>(reference_cache_cap) / 1e9, cache_evicted,
                                                      cache_no_space);
  s.build_cache = builds_dir.empty()
                      ? builds_off
                      : fmt::format("{}: {} entries used (builds imported), {} stored, {} rejected, {} refused, {} "
                                    "write failures", builds_dir, build_hits, build_stored, build_rejected,
                                    build_refused, build_write_failed);
  if (pch) {
    pch->poll();
    s.torch_pch = pch->status(pairs_with_pch);
  }
  return s;
}

}  // namespace kcv
