// Gate base behaviour shared by every gate.
#include "kcv/gate.hpp"

#include "kcv/gates/common.hpp"

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

CaseJudgement Gate::judge_abnormal(const GateContext& ctx, const Case& c, const CaseRun& run) const {
  std::string evidence = run.detail;
  if (std::string where = gates::describe_fault(ctx.contract, c, run); !where.empty()) evidence += " — " + where;
  return {run.status == RunStatus::timeout ? Verdict::timeout : Verdict::crash, evidence};
}

}  // namespace kcv
