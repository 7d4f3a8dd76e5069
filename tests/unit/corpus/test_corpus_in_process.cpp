// run_corpus's default path (issue 23): each pair a forked child of the run that calls the library
// (verify_to_report_files), no verifier executable, the run's Settings in memory. Real torch pairs
// on the cpu backend (Debian's python3-torch): the report is `kcv verify`'s for the same pair and
// seed; a hang is killed at --pair-timeout with everything it started; KCV_* in the run's
// environment reach no pair.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

/// A corpus dir/rowsum with the rowsum problem and these of its solutions.
void rowsum_corpus(const std::string& dir, const std::vector<std::string>& solutions) {
  write_file(dir + "/rowsum/problem.py", read_text(kRowsum + "/problem.py"));
  for (const auto& s : solutions) write_file(dir + "/rowsum/" + s, read_text(kRowsum + "/" + s));
}

/// The run's result records by key.
std::map<std::string, nlohmann::json> results_by_key(const std::string& out) {
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& r : results_of(read_journal(out + "/journal.jsonl"))) by_key[r.at("key").get<std::string>()] = r;
  return by_key;
}

/// Sets an environment variable for a scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CorpusInProcess, APairsReportIsKcvVerifysForThePairAndSeedAndTheSettingsArriveInMemory) {
  TempDir tmp;
  const std::string dir = tmp / "corpus", out = tmp / "out";
  rowsum_corpus(dir, {"solution_ok.py"});
  // Right at the clipped sizes (dim = 32), wrong past them: the shapes gate still sweeps dim = 33.
  write_file(dir + "/rowsum/solution_first_32.py",
             "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        return torch.relu(x) * 2.0 + x[:, :32].sum(dim=1, keepdim=True)\n");
  CorpusOptions o;
  o.dir = dir;
  o.out = out;
  o.jobs = 2;
  o.seed = 5;
  o.reference_cache = "off";
  o.build_cache = "off";
  // rowsum moves 264 elements per call: 263 clips it, and the reports say so.
  o.settings.max_elements = 263;
  CorpusRunSummary s;
  {
    // NOTES: values the CLI's mapping refuses (a pair that mapped its environment would be a setup
    // error): the pairs see the run's Settings, not this process's KCV_* variables.
    const ScopedEnv bad_cap("KCV_MAX_ELEMENTS", "-5"), bad_threads("KCV_THREADS", "abc");
    s = run_corpus(o);
  }
  EXPECT_EQ(s.ran, 2);
  EXPECT_EQ(s.verified_pass, 1);
  EXPECT_EQ(s.verified_fail, 1);
  EXPECT_EQ(s.clipped_sizes, 2);
  const auto by_key = results_by_key(out);
  ASSERT_EQ(by_key.size(), 2u);
  for (const std::string solution : {"solution_ok.py", "solution_first_32.py"}) {
    const nlohmann::json& rec = by_key.at("rowsum/" + solution);
    ASSERT_EQ(rec.at("status"), "verified") << rec.dump();
    const nlohmann::json& mine = rec.at("report");
    EXPECT_EQ(mine.at("seed"), "5");
    EXPECT_NE(mine.at("kernelbench").value("reduced_sizes", std::string()).find("moves 264 elements per call"),
              std::string::npos) << mine.at("kernelbench").dump();
    // The journal's paths are relative to OUT (replay resolves them there).
    EXPECT_EQ(mine.at("provenance").at("paths_from_report"),
              nlohmann::json({{"problem", "../corpus/rowsum/problem.py"}, {"solution", "../corpus/rowsum/" + solution}}));
    // `kcv verify` on the same pair, seed and cap.
    const std::string json = tmp / (solution + ".json");
    CliResult r;
    {
      const ScopedEnv cap("KCV_MAX_ELEMENTS", "263");
      r = run_kcv({"verify", "--kernelbench", dir + "/rowsum/problem.py", dir + "/rowsum/" + solution, "--seed", "5",
                   "--json", json, "--quiet"}, "", tmp.path());
    }
    EXPECT_EQ(r.rc, rec.at("exit_code").get<int>()) << r.err;
    const nlohmann::json cli = nlohmann::json::parse(read_text(json));
    EXPECT_EQ(mine.at("verdict"), cli.at("verdict")) << solution;
    EXPECT_EQ(mine.at("kernelbench").at("reduced_sizes"), cli.at("kernelbench").at("reduced_sizes"));
    ASSERT_EQ(mine.at("gates").size(), cli.at("gates").size());
    for (std::size_t i = 0; i < cli.at("gates").size(); ++i) {
      const nlohmann::json &a = mine.at("gates")[i], &b = cli.at("gates")[i];
      EXPECT_EQ(a.at("id"), b.at("id"));
      EXPECT_EQ(a.at("verdict"), b.at("verdict")) << solution << " " << b.at("id");
      EXPECT_EQ(a.at("seed"), b.at("seed")) << b.at("id");
      EXPECT_EQ(a.at("cases"), b.at("cases")) << b.at("id");
      EXPECT_EQ(a.at("failing_case"), b.at("failing_case")) << b.at("id");
    }
  }
  // Not vacuous: the wrong solution fails shapes in both.
  bool shapes_failed = false;
  for (const auto& g : by_key.at("rowsum/solution_first_32.py").at("report").at("gates"))
    shapes_failed |= g.at("id") == "shapes" && g.at("verdict") == "FAIL";
  EXPECT_TRUE(shapes_failed);
}

/// Processes whose command line or working directory holds `marker` (zombies aside: ended, and
/// waiting for whoever inherited them to reap them).
std::vector<std::string> processes_under(const std::string& marker) {
  std::vector<std::string> found;
  DIR* d = opendir("/proc");
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string stat = read_text(fmt::format("/proc/{}/stat", e->d_name));
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    std::string cmdline = read_text(fmt::format("/proc/{}/cmdline", e->d_name));
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    std::error_code ec;
    const std::string cwd = fs::read_symlink(fmt::format("/proc/{}/cwd", e->d_name), ec).string();
    if (cmdline.find(marker) != std::string::npos || cwd.find(marker) != std::string::npos)
      found.push_back(fmt::format("{} [{}] cwd {}", e->d_name, cmdline, cwd));
  }
  closedir(d);
  return found;
}

TEST(CorpusInProcess, AHangIsKilledAtThePairTimeoutWithEverythingItStarted) {
  // The candidate's call hangs (30 s per-call timeout and compile grace); the pair is killed at
  // 8 s, in the middle of its first gate: its reference server and its sandboxed worker go with it.
  TempDir tmp, scratch;
  const std::string dir = tmp / "corpus", out = tmp / "out";
  rowsum_corpus(dir, {"solution_hangs.py"});
  CorpusOptions o;
  o.dir = dir;
  o.out = out;
  o.jobs = 1;
  o.seed = 5;
  o.timeout_s = 30;
  o.compile_grace_s = 30;
  o.pair_timeout_s = 8;
  o.reference_cache = "off";
  o.build_cache = "off";
  // A watcher process (not a thread: the run forks) keeps the most processes it saw under
  // scratch while the pair ran, so that "none left" below is not vacuous.
  const std::string seen = tmp / "seen";
  const pid_t watcher = fork();
  if (watcher == 0) {
    std::size_t most = 0;
    for (;;) {
      most = std::max(most, processes_under(scratch.path()).size());
      std::ofstream(seen + ".tmp") << most;
      std::rename((seen + ".tmp").c_str(), seen.c_str());
      usleep(200000);
    }
  }
  ASSERT_GT(watcher, 0);
  CorpusRunSummary s;
  const auto start = std::chrono::steady_clock::now();
  {
    // Every pair's TMPDIR (and so its workdir, the workers' files) under scratch: what is left there
    // is the pair's.
    const ScopedEnv under("TMPDIR", scratch.path().c_str());
    s = run_corpus(o);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  kill(watcher, SIGKILL);
  waitpid(watcher, nullptr, 0);
  EXPECT_GE(std::atoi(read_text(seen).c_str()), 2) << "the pair's processes were never seen under " << scratch.path();
  EXPECT_LT(took, 25);
  EXPECT_EQ(s.timeouts, 1);
  const nlohmann::json rec = results_by_key(out).at("rowsum/solution_hangs.py");
  EXPECT_EQ(rec.at("status"), "timeout") << rec.dump();
  EXPECT_EQ(rec.at("exit_code"), -1);
  EXPECT_GE(rec.at("wall_seconds").get<double>(), 8.0);
  EXPECT_NE(rec.at("error").get<std::string>().find("no result within 8 s; the verifier and its processes were killed"),
            std::string::npos) << rec.dump();
  EXPECT_TRUE(rec.at("report").is_null());
  // The kernel ends a killed PID namespace's processes as it tears the namespace down: a moment.
  std::vector<std::string> left = processes_under(scratch.path());
  for (int i = 0; i < 30 && !left.empty(); ++i) {
    usleep(100000);
    left = processes_under(scratch.path());
  }
  EXPECT_TRUE(left.empty()) << left.front();
}

TEST(CorpusInProcess, AProcessWithThreadsIsRefusedBeforeAnyPairOrRecord) {
  TempDir tmp;
  const std::string dir = tmp / "corpus", out = tmp / "out";
  add_pair(dir, "a", "solution.py", "pass");
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread waiting([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  });
  CorpusOptions o;
  o.dir = dir;
  o.out = out;
  // (ended however the test ends)
  struct Release {
    std::mutex& mu;
    std::condition_variable& cv;
    bool& done;
    std::thread& t;
    ~Release() {
      {
        std::lock_guard<std::mutex> lock(mu);
        done = true;
      }
      cv.notify_all();
      t.join();
    }
  } release{mu, cv, done, waiting};
  std::string what;
  try {
    run_corpus(o);
  } catch (const SetupError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("this process has 2 threads"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(out + "/journal.jsonl"));
  // With an explicit verifier executable nothing is forked: the same process runs the corpus.
  const CorpusRunSummary s = run_corpus(stub_options(dir, out, stub_verifier(tmp.path()), 1));
  EXPECT_EQ(s.verified_pass, 1);
}

}  // namespace
}  // namespace kcv::corpus_test
