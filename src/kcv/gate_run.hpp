// One gate's run, as the engine does it: its cases made, run in workers and judged a chunk at a
// time (engine.cpp). Internal; exposed for tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kcv/engine.hpp"
#include "kcv/gate.hpp"
#include "kcv/runner.hpp"

namespace kcv {

struct GateRun {
  GateReport report;
  std::vector<std::string> labels;          // of the cases that ran, in order
  std::vector<CaseJudgement> judgements;    // one per case that ran
};

/// Runs gate's cases (only case only_case, when given) and judges them. Cases are made a chunk
/// at a time: when the next case would take the chunk's staging past chunk_bytes, the chunk runs,
/// is judged and is freed before that case is made. A gate that judges_across() is one chunk.
GateRun run_gate(const Gate& gate, const GateContext& ctx, Runner& runner, uint64_t seed,
                 std::optional<int64_t> only_case, int64_t chunk_bytes = kBatchBytes);

}  // namespace kcv
