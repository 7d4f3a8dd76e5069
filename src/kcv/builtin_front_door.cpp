// The built-in contracts' front door (front_door.hpp): an op kcv knows (`kcv contracts`) and a
// candidate of the ABI (include/kcv/abi.h), built here from its source or loaded as a .so.
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "kcv/front_door.hpp"
#include "kcv/provenance.hpp"

namespace fs = std::filesystem;

namespace kcv {
namespace {

class BuiltinFrontDoor final : public FrontDoor {
 public:
  BuiltinFrontDoor(const VerifyOptions& o, const Contract& contract) : o_(o), contract_(contract) {}

  void describe(Report& report) const override {
    report.op = o_.op;
    report.candidate = o_.candidate;
    report.provenance["candidate_path"] = fs::absolute(o_.candidate).lexically_normal().string();
    if (fs::is_regular_file(o_.candidate)) report.provenance["candidate_sha256"] = sha256_file(o_.candidate);
  }

  void prepare(const std::string& workdir, RunnerOptions&, const CaptureLimits& compile, Report&) override {
    candidate_.emplace(Candidate::prepare(o_.candidate, o_.backend, workdir, compile, o_.settings));
  }

  const Contract& contract() const override { return contract_; }
  const Candidate& candidate() const override { return *candidate_; }
  nlohmann::json time(const RunnerOptions&, const TimingOptions&) override {
    throw SetupError("timing needs a KernelBench pair");  // refused by front_door_for before
  }

 private:
  const VerifyOptions& o_;
  const Contract& contract_;
  std::optional<Candidate> candidate_;
};

}  // namespace

std::unique_ptr<FrontDoor> builtin_front_door(const VerifyOptions& o) {
  if (o.kernelbench.baseline) throw SetupError("--baseline kernelbench needs --kernelbench");
  if (!o.kernelbench.reference_cache.empty()) throw SetupError("--reference-cache needs --kernelbench");
  if (!o.kernelbench.build_cache.empty()) throw SetupError("--build-cache needs a KernelBench pair");
  if (o.timing)
    throw SetupError("timing needs a KernelBench pair (kcv time PROBLEM.py SOLUTION.py): an ABI candidate has no "
                     "reference Model to time against");
  if (o.op.empty() || o.candidate.empty())
    throw SetupError("verify needs --op OP and --candidate FILE, or --kernelbench PROBLEM.py SOLUTION.py");
  const Contract* c = find_contract(o.op);
  if (!c) throw SetupError(fmt::format("unknown op '{}' (`kcv contracts` lists the ops)", o.op));
  return std::make_unique<BuiltinFrontDoor>(o, *c);
}

}  // namespace kcv
