// Gate base behaviour shared by every gate.
#include "kcv/gate.hpp"

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

CaseJudgement Gate::judge_abnormal(const GateContext&, const Case&, const CaseRun& run) const {
  return {run.status == RunStatus::timeout ? Verdict::timeout : Verdict::crash, run.detail};
}

}  // namespace kcv
