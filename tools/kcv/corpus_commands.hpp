// `kcv corpus run` and `kcv corpus merge`: thin CLI over kcv/corpus.hpp.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kcv/corpus.hpp"

namespace kcv::cli {

/// Registers `corpus run`, `corpus merge` and `report` on app and holds their parsed options.
class CorpusCommands {
 public:
  explicit CorpusCommands(CLI::App& app);
  /// Whether `corpus` was the subcommand given.
  bool selected() const { return corpus_->parsed() || report_->parsed(); }
  /// Runs the selected corpus subcommand; returns the exit code (0: the run completed, whatever
  /// its pairs' verdicts). Throws SetupError, which main maps to exit 2.
  int dispatch();

 private:
  CLI::App* corpus_ = nullptr;
  CLI::App* run_ = nullptr;
  CLI::App* merge_ = nullptr;
  CLI::App* report_ = nullptr;    // `kcv report OUT`: the HTML page of a corpus journal
  std::string report_dir_;
  CorpusOptions opts_;
  std::string shard_;
  std::string torch_pch_ = "auto";
  uint64_t seed_ = 0;
  std::vector<std::string> merge_dirs_;
  std::string merge_out_;
};

}  // namespace kcv::cli
