// Gate 12 `sanitizer`. cpu: the candidate rebuilt with -fsanitize=address,undefined, and the
// exact plain build under valgrind memcheck (a prebuilt .so: valgrind only), on the nominal and
// one boundary shape, on exact malloc'd buffers; zero reports. cuda:
// compute-sanitizer memcheck, racecheck, initcheck and synccheck, on exact-size buffers. Before
// them, for a .cu candidate with tcgen05 code or built for sm_100: the static TMEM check
// (tmem_check.hpp), its own evidence line.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"
#include "kcv/tmem_check.hpp"

namespace kcv::gates {
namespace {

/// The first sanitizer report in a worker log, with a few lines of context; empty if none.
std::string first_report(const std::string& log) {
  // NOTES: ASan/UBSan, valgrind memcheck and compute-sanitizer (memcheck, racecheck, initcheck,
  // synccheck) each word their reports differently; a summary with a non-zero count also counts.
  // compute-sanitizer's "Error: process didn't terminate successfully" only says the program
  // exited non-zero: not a report (three KernelBench LSTM reference controls exited non-zero
  // under racecheck after their last call, with 0 hazards; the exit is the gate's CRASH).
  static const std::regex report(
      "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Invalid (read|write|free)|uninitialised value|"
      "========= (Invalid|Error(?!: process didn't terminate successfully)|Uninitialized|Race|Barrier|Program hit|"
      "Cuda API error)|"
      "(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY: [1-9]");
  std::smatch m;
  if (!std::regex_search(log, m, report)) return {};
  const std::size_t at = static_cast<std::size_t>(m.position(0));
  const std::size_t line_start = log.rfind('\n', at);
  std::istringstream in(log.substr(line_start == std::string::npos ? 0 : line_start + 1));
  std::string line, out;
  for (int i = 0; i < 4 && std::getline(in, line); ++i) out += (i ? " | " : "") + line;
  if (out.size() > 400) out = out.substr(0, 400) + "...";
  return out;
}

class SanitizerGate final : public Gate {
 public:
  std::string_view id() const override { return "sanitizer"; }
  std::string_view summary() const override { return "sanitizers report nothing (ASan/UBSan, compute-sanitizer)"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override {
    std::string note;
    if (ctx.contract.sanitizer_elements > 0)
      note = structural_note(ctx.contract, ctx.contract.shape_within(ctx.contract.sanitizer_elements));
    if (std::string scope = ctx.backend.sanitizer_scope(ctx.candidate.runs_in_torch_worker()); !scope.empty())
      note += std::string(note.empty() ? "" : "; ") + scope;
    return note;
  }

  CaseJudgement static_check(const GateContext& ctx) const override {
    if (ctx.candidate.kind() != "cu") return {};  // the TMEM check reads CUDA source
    // NOTES: the private copy the build compiled, with the original directory after it, as the
    // build has them (candidate.cpp's compile_command): the same bytes as the judged build.
    std::ifstream in(ctx.candidate.source(), std::ios::binary);
    std::stringstream source;
    source << in.rdbuf();
    const Settings& settings = ctx.candidate.settings();  // as its build had them
    if (!tmem::applies(source.str(), settings.cuda_target()))
      return {Verdict::pass, "TMEM check: no tcgen05 in the candidate and not built for sm_100"};
    try {
      const std::string dir = (std::filesystem::path(ctx.candidate.workdir()) / "tmem").string();
      std::vector<std::string> includes = {kcv_include_dir(settings)};
      if (!ctx.candidate.source_copy().origin_dir.empty()) includes.push_back(ctx.candidate.source_copy().origin_dir);
      const tmem::Report r = tmem::check_source(ctx.candidate.source(), dir, includes);
      return {r.outcome == tmem::Outcome::fail ? Verdict::fail : Verdict::pass, r.evidence};
    } catch (const SetupError& e) {
      // NOTES: a candidate whose tcgen05 code does not build for sm_100a (it is built for another
      // target) holds no TMEM code that can run: said, not failed.
      return {Verdict::pass, std::string("TMEM check not made: ") + e.what()};
    }
  }

  /// One sanitized worker per tool of the backend's (Backend::sanitizer_tools: cpu, the
  /// instrumented build "" and, for a kcv-worker candidate with source, valgrind; cuda, the four
  /// compute-sanitizer tools).
  std::vector<WorkerOptions> worker_options(const GateContext& ctx) const override {
    std::vector<WorkerOptions> out;
    for (const auto& tool : ctx.backend.sanitizer_tools(ctx.candidate.has_source(), ctx.candidate.runs_in_torch_worker())) {
      WorkerOptions w;
      w.sanitized = true;
      w.sanitizer_tool = tool;
      out.push_back(std::move(w));
    }
    return out;
  }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    std::vector<Bindings> shapes = nominal_and_uniform(ctx.contract, {13});
    if (ctx.contract.sanitizer_elements > 0) {
      // NOTES: the instrumented run costs 10-1000x the plain one: a contract whose nominal sizes
      // are a benchmark's (KernelBench) runs its nominal case within a smaller element budget
      // than the other size-independent gates; the boundary shape stays.
      shapes[0] = ctx.contract.shape_within(ctx.contract.sanitizer_elements);
    }
    const bool streams = ctx.backend.has_streams(), kcv_worker = !ctx.candidate.runs_in_torch_worker();
    std::vector<Case> out;
    for (const WorkerOptions& w : worker_options(ctx))
      for (const auto& b : shapes) {
        const std::string& tool = w.sanitizer_tool;
        Rng rng = case_rng(seed, static_cast<int64_t>(out.size()));
        Case c = single_call_case(tool.empty() ? bindings_string(b) : tool + " " + bindings_string(b), ctx.contract, b, rng);
        c.worker = w;
        // NOTES: with streams (cuda): exact buffers always (issue 26). Inside kcv's guard bands a
        // read one element past a buffer is in bounds for compute-sanitizer; in a cudaMalloc of
        // the buffer's own size memcheck reports it. Every other case hands over the null stream.
        if (streams)
          call_as(c, (out.size() + seed) % 2 ? Calling::null_stream_exact_buffers : Calling::exact_buffers);
        // Without (cpu, kcv-worker): exact buffers too, each a malloc of its own size, so that
        // ASan's and valgrind's allocators bound it: a write past an output that the candidate
        // restores before returning leaves kcv's canaries intact, but not their redzones (issue 25
        // class 4).
        else if (kcv_worker) call_as(c, Calling::exact_buffers);
        out.push_back(std::move(c));
      }
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    if (std::string report = first_report(run.log); !report.empty()) return {Verdict::fail, report};
    const CallResult& r = run.calls[0];
    if (r.rc != 0) return refusal(r);
    return {};
  }

  CaseJudgement judge_abnormal(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    if (std::string report = first_report(run.log); !report.empty()) return {Verdict::fail, report};
    return Gate::judge_abnormal(ctx, c, run);
  }
};

}  // namespace

std::unique_ptr<Gate> make_sanitizer_gate() { return std::make_unique<SanitizerGate>(); }

}  // namespace kcv::gates
