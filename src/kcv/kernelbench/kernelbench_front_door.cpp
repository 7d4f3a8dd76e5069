// KernelBench's front door (front_door.hpp, docs/kernelbench.md): a PROBLEM.py and SOLUTION.py
// pair. The problem's Model is the contract (its reference server, the derived bound), the
// solution's ModelNew the candidate, run in the torch worker; the door adds KernelBench's own
// check (--baseline kernelbench), timing against the reference, and the build cache.
#include <chrono>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/front_door.hpp"
#include "kcv/kernelbench/build_cache.hpp"
#include "kcv/provenance.hpp"

namespace fs = std::filesystem;

namespace kcv {
namespace {

/// What a KernelBench candidate's builds depend on besides their own arguments, which the worker
/// keys (the build cache's context, docs/kernelbench.md "Build cache"): computed here, never by it.
nlohmann::json build_context(const KernelBenchParts& kb, const std::string& backend, const Settings& settings) {
  const Candidate& c = kb.candidate;
  const fs::path python(c.python());
  // NOTES: the torch worker's PATH (isolation/spawn.cpp): where load_inline finds c++ and ninja.
  const std::vector<std::string> path = {python.parent_path().string(), "/usr/local/cuda/bin", "/usr/local/bin",
                                         "/usr/bin", "/bin"};
  nlohmann::json tools;
  for (const char* t : {"c++", "nvcc", "ninja"}) tools[t] = tool_identity(t, path);
  // NOTES: CUDA_HOME is the environment load_inline builds in (passed through to the workers), not
  // a setting of kcv's (include/kcv/settings.hpp).
  if (const char* cuda_home = std::getenv("CUDA_HOME"))
    tools["CUDA_HOME"] = fmt::format("{} {}", cuda_home, tool_identity("nvcc", {std::string(cuda_home) + "/bin"}));
  nlohmann::json ctx = {
      {"solution_sha256", c.sha256()},
      {"problem_sha256", sha256_file(c.problem_copy().empty() ? c.problem() : c.problem_copy())},
      {"recipe", build_recipe_hash(settings)},
      {"runtime", kb.contract->runtime()},
      {"python", tool_identity(python.filename().string(), {python.parent_path().string()})},
      {"tools", tools},
      {"backend", backend}};
  // A header or module beside the solution, as kcv copied it, is part of what its build reads.
  if (c.source_copy().whole_directory) ctx["solution_dir"] = tree_sha256(fs::path(c.source_copy().file).parent_path());
  return ctx;
}

class KernelBenchFrontDoor final : public FrontDoor {
 public:
  KernelBenchFrontDoor(const VerifyOptions& o, KernelBenchContract* prepared) : o_(o), prepared_(prepared) {}

  void describe(Report& report) const override {
    report.provenance["candidate_path"] = fs::absolute(o_.kernelbench.solution).lexically_normal().string();
    if (fs::is_regular_file(o_.kernelbench.solution))
      report.provenance["candidate_sha256"] = sha256_file(o_.kernelbench.solution);
    if (fs::is_regular_file(o_.kernelbench.problem))
      report.provenance["problem_sha256"] = sha256_file(o_.kernelbench.problem);
  }

  void prepare(const std::string& workdir, RunnerOptions& ro, const CaptureLimits&, Report& report) override {
    const KernelBenchOptions& k = o_.kernelbench;
    kb_ = kernelbench_parts(k.problem, k.solution, k.python, o_.backend, workdir, ro, prepared_, k.reference_cache);
    report.op = kb_.contract->name;
    report.candidate = kb_.candidate.path();
    if (!o_.kernelbench.build_cache.empty()) load_builds(workdir, ro);
  }

  const Contract& contract() const override { return *kb_.contract; }
  const Candidate& candidate() const override { return kb_.candidate; }

  void loaded(Runner& runner, double load_seconds, Report& report) override {
    KernelBenchReport& k = report.kernelbench.emplace();
    k.problem = kb_.candidate.problem();
    k.solution = kb_.candidate.path();
    k.python = kb_.candidate.python();
    k.compile_seconds = load_seconds;
    k.fresh_model = kb_.contract->fresh_model();
    k.reduced_sizes = kb_.contract->reduced_sizes();
    for (const TensorSpec& in : kb_.contract->inputs)
      if (in.structure != Structure::none)
        k.input_structure += (k.input_structure.empty() ? "" : ", ") + in.name + " " + structure_name(in.structure);
    if (o_.kernelbench.baseline) k.baseline = kernelbench_baseline(*kb_.contract, runner);
    for (const auto& [key, value] : kb_.contract->runtime().items()) report.provenance[key] = value;
  }

  void gates_done(const Runner& runner, Report& report) override {
    KernelBenchReport& k = section(report);
    k.standby_workers = {{"started", runner.standby_started()}, {"used", runner.standby_used()}};
    if (!runner.standby_unused().empty()) k.standby_workers["not_used"] = runner.standby_unused();
    if (prepared_) {
      k.pool = {{"offered", runner.pool_offered()}, {"taken", runner.pool_taken()}, {"used", runner.pool_used()}};
      if (runner.pool_main_age_s() >= 0) k.pool["main_started_s_before"] = runner.pool_main_age_s();
      if (!runner.pool_unused().empty()) k.pool["not_used"] = runner.pool_unused();
    }
    k.bound = kb_.contract->bound_summary();
    k.reference_cache = kb_.contract->disk_cache_summary();
  }

  nlohmann::json time(const RunnerOptions& ro, const TimingOptions& t) override {
    return kernelbench_timing(*kb_.contract, kb_.candidate, ro, t);
  }

  /// What the workers built, stored once none of them can write the extensions directories.
  void workers_ended(const std::string& workdir, Report& report) override {
    if (!builds_) return;
    nlohmann::json& b = section(report).build_cache;
    for (const auto& [variant, key] : build_keys_) {
      nlohmann::json v = {{"key", key}, {"entry", build_state_[variant]}};
      if (build_state_[variant] != "hit") {
        std::string why;
        const fs::path ext = fs::absolute(workdir) / (variant == "asan" ? "torch-extensions-asan" : "torch-extensions");
        v["stored_files"] = builds_->store(key, variant, ext.string(), &why);
        if (!why.empty()) v["not_stored"] = why;
      }
      b["variants"][variant] = v;
    }
    const nlohmann::json summary = builds_->summary();  // held: items() refers to it
    for (const auto& [k, value] : summary.items()) b[k] = value;
  }

 private:
  /// The report's section, made by loaded() (and here should a step come without it).
  static KernelBenchReport& section(Report& report) {
    return report.kernelbench ? *report.kernelbench : report.kernelbench.emplace();
  }

  /// The build cache: this solution's earlier builds, checked and copied into the workdir, go to
  /// every worker in its plan.
  void load_builds(const std::string& workdir, RunnerOptions& ro) {
    builds_ = std::make_unique<BuildCache>(o_.kernelbench.build_cache);
    const nlohmann::json context = build_context(kb_, o_.backend, o_.settings);
    std::vector<std::string> variants = {"plain"};
    // The sanitizer gate's instrumented builds (cpu: the torch worker builds its extensions with
    // -fsanitize, in a directory of their own) are a variant of their own.
    if (backend_named(o_.backend).sanitized_run("", true, true).instrumented_build) variants.push_back("asan");
    for (const std::string& v : variants) {
      build_keys_[v] = BuildCache::key(context, v);
      std::string why;
      if (auto plan = builds_->load(build_keys_[v], (fs::path(workdir) / "build-cache" / v).string(), &why))
        ro.kernelbench["build_cache"][v] = *plan;
      build_state_[v] = why.empty() ? "hit" : why == "missing" ? why : "rejected: " + why;
    }
  }

  const VerifyOptions& o_;
  KernelBenchContract* prepared_;
  KernelBenchParts kb_;
  std::unique_ptr<BuildCache> builds_;
  std::map<std::string, std::string> build_keys_, build_state_;  // variant -> entry key, "hit"/"missing"/"rejected: ..."
};

}  // namespace

KernelBenchSetup kernelbench_setup(const std::string& problem, const std::string& python, const std::string& backend,
                                   const std::string& workdir, const Settings& settings,
                                   const std::string& reference_cache) {
  KernelBenchSetup setup;
  setup.reference_cache = reference_cache;
  setup.settings = settings;
  setup.problem = fs::absolute(problem).string();
  setup.python = resolve_python(python, settings);
  setup.backend = backend;
  setup.workdir = workdir;
  return setup;
}

KernelBenchParts kernelbench_parts(const std::string& problem, const std::string& solution, const std::string& python,
                                   const std::string& backend, const std::string& workdir, RunnerOptions& ro,
                                   KernelBenchContract* prepared, const std::string& reference_cache) {
  const KernelBenchSetup setup = kernelbench_setup(problem, python, backend, workdir, ro.settings, reference_cache);
  KernelBenchParts parts{nullptr, prepared, Candidate::kernelbench(problem, solution, setup.python, workdir)};
  if (!prepared) {
    parts.owned = KernelBenchContract::create(setup);
    parts.contract = parts.owned.get();
  }
  ro.kernelbench = parts.contract->worker_plan();
  // NOTES: the first worker imports the solution, and load_inline compiles there: minutes, not
  // the per-call timeout. A torch.compile'd Model compiles again at each new shape.
  ro.load_timeout_s = 1800;
  ro.compile_grace_s = kDefaultCompileGrace;
  return parts;
}

std::unique_ptr<FrontDoor> kernelbench_front_door(const VerifyOptions& o, KernelBenchContract* prepared) {
  if (o.kernelbench.problem.empty() || o.kernelbench.solution.empty())
    throw SetupError("--kernelbench needs two files: PROBLEM.py SOLUTION.py");
  if (!o.op.empty() || !o.candidate.empty())
    throw SetupError("--kernelbench replaces --op and --candidate; give one or the other");
  if (!o.kernelbench.build_cache.empty())
    if (const std::string why = build_cache_refusal(); !why.empty())
      throw SetupError(fmt::format("--build-cache '{}': {}", o.kernelbench.build_cache, why));
  if (prepared && !o.kernelbench.build_cache.empty())
    throw SetupError("a KernelBench session takes no build cache directory (kcv verify and kcv corpus run do)");
  if (prepared && !o.kernelbench.reference_cache.empty())
    throw SetupError("a KernelBench session keeps its reference answers itself (no reference cache directory)");
  return std::make_unique<KernelBenchFrontDoor>(o, prepared);
}

}  // namespace kcv
