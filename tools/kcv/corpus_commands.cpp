// `kcv corpus run` and `kcv corpus merge` (docs/kernelbench.md "Corpus runs"): options in, progress
// on stderr, a summary on stdout. The work is in the library (src/kcv/corpus/).
#include "corpus_commands.hpp"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/corpus_report.hpp"

#include "environment.hpp"

namespace fs = std::filesystem;

namespace kcv::cli {

namespace {

std::string mmss(double s) {
  if (s < 0) return "--:--";
  const auto t = static_cast<long long>(s + 0.5);
  return fmt::format("{:02}:{:02}", t / 60, t % 60);
}

// ---- stopping on SIGINT / SIGTERM (docs/kernelbench.md "Stopping a run") ----

std::atomic<int> g_stop_requests{0};
std::atomic<int> g_first_signal{0};
bool g_progress_bar = false;  // stderr is a terminal: the message first ends the progress line

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, sig);
  const int n = g_stop_requests.fetch_add(1) + 1;
  // write(2) only: async-signal-safe.
  const char* msg = n == 1 ? "\nkcv corpus run: stopping: no new pair starts; the running ones finish and are journaled "
                             "(signal again to stop them now)\n"
                           : "\nkcv corpus run: stopping the running pairs now; they get no record and a rerun runs them\n";
  if (!g_progress_bar) ++msg;
  if (n <= 2) (void)!write(2, msg, std::strlen(msg));
}

/// Routes SIGINT and SIGTERM to on_stop_signal while it lives; the old handlers come back after.
class StopOnSignals {
 public:
  StopOnSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;  // the run polls the flag; nothing should fail with EINTR for it
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopOnSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

void print_summary(const CorpusRunSummary& s, const std::string& out) {
  std::cout << fmt::format("kcv corpus run: {} pairs ({} from the journal, {} run now)\n", s.pairs, s.from_journal, s.ran);
  std::cout << fmt::format("  verified        {:>6}  (pass {}, fail {})\n", s.verified_pass + s.verified_fail,
                           s.verified_pass, s.verified_fail);
  std::cout << fmt::format("  setup errors    {:>6}\n  timeouts        {:>6}\n  verifier crashes{:>6}\n", s.setup_errors,
                           s.timeouts, s.crashes);
  if (s.not_run > 0)
    std::cout << fmt::format("  not run         {:>6}  (the run was stopped before they ran; rerun the same command to "
                             "resume)\n", s.not_run);
  if (s.retried > 0)
    std::cout << fmt::format("  retried         {:>6}  (ran out of memory or time beside other pairs; run again beside "
                             "at most half as many, alone at last)\n", s.retried);
  if (s.clipped_sizes > 0)
    std::cout << fmt::format("  clipped sizes   {:>6}  (verified at clipped sizes: over KCV_MAX_ELEMENTS per call)\n",
                             s.clipped_sizes);
  if (s.bound_calibrated > 0)
    std::cout << fmt::format("  calibrated part {:>6}  (the derived bound left some elements to the calibrated floor: "
                             "an op without a rule; the kernels table says which)\n",
                             s.bound_calibrated);
  if (s.bound_free > 0)
    std::cout << fmt::format("  free part       {:>6}  (the derived bound left some elements free in class: any value "
                             "accepted there; the kernels table says how many)\n",
                             s.bound_free);
  if (s.ran > 0)
    std::cout << fmt::format("  CPU             {:>6.0f} s  ({:.1f} s per pair run now: each verifier and the processes it "
                             "waited for)\n", s.cpu_seconds, s.cpu_seconds / s.ran);
  if (!s.torch_pch.empty()) std::cout << "  torch PCH       " << s.torch_pch << "\n";
  std::cout << "  seed            " << s.seed << "  (every pair's; a resumed run keeps it)\n";
  if (!s.reference_cache.empty()) std::cout << "  reference cache " << s.reference_cache << "\n";
  if (!s.build_cache.empty()) std::cout << "  build cache     " << s.build_cache << "\n";
  const SplitCounts& sp = s.split;
  if (s.verified_fail > 0) {
    // Issue 21 item 4: wrong in the problem's own setting, or only as a library op is called.
    std::cout << fmt::format("  verified fails, split: own calling convention {}, library op only {}, crash in every "
                             "gate {}{}\n", sp.own, sp.library, sp.crash,
                             sp.unknown > 0 ? fmt::format(", not said (reports before the split) {}", sp.unknown) : "");
  }
  if (s.accepted > 0) {
    auto share = [&](int n) { return fmt::format("{} ({:.1f}%)", n, 100.0 * n / s.accepted); };
    const SplitCounts& a = s.accepted_split;
    std::cout << fmt::format("  of {} pairs the baseline accepts: fail any gate {}, a tolerance-independent gate {}, "
                             "in their own calling convention {}, only as a library op {}, crash in every gate {}\n",
                             s.accepted, share(s.accepted_fail_any), share(s.accepted_fail_tolerance_independent),
                             share(static_cast<int>(a.own)), share(static_cast<int>(a.library)),
                             share(static_cast<int>(a.crash)));
  }
  if (!s.gates.empty()) {
    std::cout << "  per-gate failures over the verified pairs (own: in the problem's own calling convention; "
                 "library: only as a library op; only: pairs failing this gate alone):\n";
    std::cout << fmt::format("    {:<14} {:>10} {:>6} {:>6} {:>8} {:>8} {:>8} {:>6} {:>8} {:>6}\n", "gate", "not passed",
                             "FAIL", "CRASH", "TIMEOUT", "REFUSED", "SKIPPED", "own", "library", "only");
    for (const auto& g : s.gates) {
      auto n = [&](const char* v) { const auto it = g.by_verdict.find(v); return it == g.by_verdict.end() ? 0 : it->second; };
      std::cout << fmt::format("    {:<14} {:>10} {:>6} {:>6} {:>8} {:>8} {:>8} {:>6} {:>8} {:>6}\n", g.gate,
                               g.not_passed, n("FAIL"), n("CRASH"), n("TIMEOUT"), n("REFUSED"), n("SKIPPED"),
                               g.own_convention, g.library_only, g.only_this_gate);
    }
  }
  if (s.timing.is_object()) {
    // docs/timing.md: KernelBench's fast_p, "correct" meaning all 12 gates passed.
    const auto& t = s.timing;
    auto fp = [](const nlohmann::json& f) {
      std::string line;
      for (const auto& [k, v] : f.items()) line += fmt::format(" {}={:.3f}", k, v.get<double>());
      return line;
    };
    auto sp = [](const nlohmann::json& x) {
      return x.is_null() ? std::string("-")
                         : fmt::format("geomean {:.3f}x, median {:.3f}x", x["geomean"].get<double>(), x["median"].get<double>());
    };
    std::cout << fmt::format("  timing: {} pairs, {} pass all 12 gates, {} timed ({} not timed); speedup {}\n",
                             t["pairs"].get<int64_t>(), t["correct"].get<int64_t>(), t["timed"].get<int64_t>(),
                             t["correct_not_timed"].get<int64_t>(), sp(t["speedup"]));
    std::cout << "    fast_p (share of all pairs correct and faster than p x eager):" << fp(t["fast_p"]) << "\n";
    std::cout << fmt::format("    vs torch.compile ({} timed, {} without a compiled reference): speedup {};{}\n",
                             t["vs_compiled"]["timed"].get<int64_t>(), t["vs_compiled"]["not_compiled"].get<int64_t>(),
                             sp(t["vs_compiled"]["speedup"]), fp(t["vs_compiled"]["fast_p"]));
  }
  std::cout << "journal: " << (fs::path(out) / "journal.jsonl").string() << "\n";
}

}  // namespace

CorpusCommands::CorpusCommands(CLI::App& app) {
  corpus_ = app.add_subcommand("corpus", "verify a corpus of KernelBench pairs; merge shard journals");
  corpus_->require_subcommand(1);

  run_ = corpus_->add_subcommand("run", "verify every (problem, solution) pair under DIR, journaled and resumable");
  run_->add_option("DIR", opts_.dir, "corpus directory")->required();
  run_->add_option("--out", opts_.out, "output directory (journal.jsonl); a rerun resumes it")->required();
  run_->add_option("--jobs", opts_.jobs, "pairs verified at once")->capture_default_str();
  run_->add_option("--backend", opts_.backend, "cpu or cuda")->capture_default_str();
  run_->add_option("--baseline", opts_.baseline, "also run KernelBench's own check")->check(CLI::IsMember({"kernelbench"}));
  run_->add_flag("--timing", opts_.timing,
                 "also time every pair that passes all 12 gates (verify --timing); the summary adds speedup and "
                 "fast_p (docs/timing.md; honest only with --jobs 1 on cuda)");
  run_->add_option("--shard", shard_, "I/N: take the pairs whose index in key order is I mod N");
  run_->add_flag("--self", opts_.self_check, "every *.py is a problem offered as its own candidate");
  run_->add_option("--timeout", opts_.timeout_s, "verify's wall-clock seconds per call (default: verify's)");
  run_->add_option("--compile-grace", opts_.compile_grace_s,
                   "verify's seconds for the first call at each shape in a worker (default: verify's)");
  run_->add_option("--pair-timeout", opts_.pair_timeout_s, "wall-clock seconds per pair before it is killed")
      ->capture_default_str();
  run_->add_option("--python", opts_.python, "python interpreter for the torch adapters");
  run_->add_option("--seed", seed_,
                   "run seed for every pair, so that one problem's solutions see the same cases (default: the "
                   "journal's, else drawn fresh; journaled)");
  run_->add_option("--reference-cache", opts_.reference_cache,
                   "DIR for the reference's answers, content-addressed, shared by the pairs (and by shards given the "
                   "same DIR and --seed), or off (default: OUT/reference-cache; only when kcv runs as root)");
  run_->add_option("--build-cache", opts_.build_cache,
                   "DIR for the solutions' extension builds, content-addressed, so that a rerun (a new kcv, a resumed "
                   "shard) compiles nothing it has built; or off (default: OUT/build-cache; only when kcv runs as root)");
  run_->add_option("--torch-pch", torch_pch_,
                   "precompiled torch/extension.h for the solutions' load_inline builds: auto (with --backend cuda), "
                   "on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();

  merge_ = corpus_->add_subcommand("merge", "merge the journals of several OUT directories (one per shard)");
  merge_->add_option("OUTS", merge_dirs_, "OUT directories of corpus runs")->required();
  merge_->add_option("--out", merge_out_, "output directory; its journal.jsonl must not exist yet")->required();

  report_ = app.add_subcommand("report", "write OUT/report.html from a corpus journal (OUT/journal.jsonl)");
  report_->add_option("OUT", report_dir_, "output directory of a corpus run or merge")->required();
}

int CorpusCommands::dispatch() {
  if (*report_) {
    write_corpus_report(report_dir_);
    std::cout << "kcv report: " << (fs::path(report_dir_) / "report.html").string() << " (and summary.json, summary.md)\n";
    return 0;
  }
  if (*merge_) {
    const int n = merge_corpora(merge_dirs_, merge_out_);
    std::cout << fmt::format("kcv corpus merge: {} results from {} journals -> {}\n", n, merge_dirs_.size(),
                             (fs::path(merge_out_) / "journal.jsonl").string());
    return 0;
  }
  if (!shard_.empty()) opts_.shard = parse_shard(shard_);
  if (run_->count("--seed") > 0) opts_.seed = seed_;
  opts_.torch_pch = torch_pch_ == "on" || (torch_pch_ == "auto" && opts_.backend == "cuda");
  opts_.settings = settings_from_environment();
  const bool tty = isatty(2);
  g_progress_bar = tty;
  bool drew = false;
  const StopOnSignals stop_on_signals;
  opts_.stop = &g_stop_requests;
  const CorpusRunSummary s = run_corpus(opts_, [&](const CorpusProgress& p) {
    // NOTES: the retries show while they happen (session 40: 96 of 161 pairs queued to run again, unseen
    // until the journal was read).
    const std::string counts = fmt::format("[{}/{}] ok {} fail {} err {}{}  ETA {}", p.done, p.total, p.ok, p.fail,
                                           p.err, p.retries > 0 ? fmt::format(" retry {}", p.retries) : "",
                                           mmss(p.eta_s));
    if (tty) {
      // One line that rewrites itself: cut the key from the left so that the line never wraps.
      std::string key = p.key;
      winsize ws{};
      const std::size_t cols = ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
      const std::size_t room = cols > counts.size() + 6 ? cols - counts.size() - 3 : 0;
      if (key.size() > room) key = room > 3 ? "..." + key.substr(key.size() - (room - 3)) : "";
      std::cerr << "\r\x1b[K" << counts << "  " << key << std::flush;
      drew = true;
    } else {
      const std::string what = p.verdict.empty() ? p.status : p.verdict;
      std::cerr << fmt::format("{}  {} {} ({:.1f} s)\n", counts, what, p.key, p.wall_s) << std::flush;
    }
  });
  if (drew) std::cerr << "\n";
  print_summary(s, opts_.out);
  write_corpus_report(opts_.out);
  std::cout << "report: " << (fs::path(opts_.out) / "report.html").string() << "\n";
  if (s.not_run == 0 || g_stop_requests == 0) return 0;
  const int sig = g_first_signal.load();
  const char* name = sigabbrev_np(sig);
  std::cerr << fmt::format("kcv corpus run: stopped by SIG{}: {} pair{} did not run; rerun the same command to resume\n",
                           name ? name : "?", s.not_run, s.not_run == 1 ? "" : "s");
  return 128 + sig;
}

}  // namespace kcv::cli
