// Gate base behaviour shared by every gate.
#include "kcv/gate.hpp"

#include <memory>

#include "kcv/gates/common.hpp"
#include "kcv/runner.hpp"

namespace kcv {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "PASS";
    case Verdict::fail: return "FAIL";
    case Verdict::crash: return "CRASH";
    case Verdict::timeout: return "TIMEOUT";
    case Verdict::refused: return "REFUSED";
    case Verdict::skipped: return "SKIPPED";
  }
  return "?";
}

bool library_convention(const Case& c) {
  for (const CallSpec& call : c.calls) {
    if (call.concurrent_with_next || (call.writer_kernel && !call.null_stream)) return true;
    for (const HostTensor& t : call.inputs)
      if (!t.is_contiguous()) return true;  // strided, or offset inside its storage
  }
  return false;
}

std::vector<CasePlan> plans_of(std::vector<Case> cases) {
  auto made = std::make_shared<std::vector<Case>>(std::move(cases));
  std::vector<CasePlan> out;
  for (std::size_t i = 0; i < made->size(); ++i)
    out.push_back({(*made)[i].label, [made, i] { return std::move((*made)[i]); }, staged_bytes((*made)[i])});
  return out;
}

std::vector<Case> make_all(const std::vector<CasePlan>& plans) {
  std::vector<Case> out;
  out.reserve(plans.size());
  for (const auto& p : plans) out.push_back(p.make());
  return out;
}

CaseJudgement Gate::judge_abnormal(const GateContext& ctx, const Case& c, const CaseRun& run) const {
  std::string evidence = run.detail;
  if (std::string where = gates::describe_fault(ctx.contract, c, run); !where.empty()) evidence += " — " + where;
  if (run.status == RunStatus::side_effect) return {Verdict::fail, evidence};
  return {run.status == RunStatus::timeout ? Verdict::timeout : Verdict::crash, evidence};
}

}  // namespace kcv
