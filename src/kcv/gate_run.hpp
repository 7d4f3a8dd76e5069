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

/// The labels of a gate's failing cases said compactly, beside those that passed: labels that are
/// shapes ("K=7, M=1, N=128") as the symbol each case moved off the common shape, with the sizes
/// that failed and passed ("N ∈ {1, 3, 7}, passes {2, 4, 8}"); "<what> at <where>" labels grouped
/// by what; others listed. About `budget` characters at most, "…" where cut (case_labels.cpp).
std::string summarize_cases(const std::vector<std::string>& failing, const std::vector<std::string>& passing,
                            std::size_t budget = 240);

}  // namespace kcv
