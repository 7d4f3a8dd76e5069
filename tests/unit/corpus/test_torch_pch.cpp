// A precompiled torch/extension.h for the solutions' load_inline builds (docs/kernelbench.md, "A
// precompiled header for the .cpp half"): the corpus run builds it once, in a trusted helper, and
// hands its manifest to the pairs started after it is ready; a worker uses it only through a copy
// whose hash matches that manifest, and g++ itself must accept it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "corpus_test_support.hpp"
#include "kcv/corpus/journal.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

/// An adapters directory (for CorpusOptions::settings.adapters_dir) whose torch/kcv_torch_pch.py is
/// a stand-in helper of this python body.
std::string fake_pch_helper(const std::string& dir, const std::string& python_body) {
  write_file(dir + "/torch/kcv_torch_pch.py", python_body);
  return dir;
}

/// "<solution> <KCV_TORCH_PCH>" per pair, as the stub verifier saw it.
std::map<std::string, std::string> pch_seen(const std::string& log) {
  std::map<std::string, std::string> seen;
  std::istringstream in(read_text(log));
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    seen[fs::path(line.substr(0, space)).parent_path().filename().string()] =
        space == std::string::npos ? "" : line.substr(space + 1);
  }
  return seen;
}

/// A corpus run of "pass 0.5" pairs with names, one at a time, torch_pch on and a stand-in helper
/// of this python body: the summary, and the manifest each pair saw (pch_seen).
struct PchRun {
  CorpusRunSummary summary;
  std::map<std::string, std::string> seen;
  std::string log;
};
PchRun run_with_helper(const TempDir& t, const std::string& helper_body, std::initializer_list<const char*> names) {
  const std::string adapters = fake_pch_helper(t / "adapters", helper_body);
  const std::string d = t / "corpus", log = t / "pch.log";
  for (const char* name : names) add_pair(d, name, "solution.py", "pass 0.5");
  CorpusOptions o = stub_options(d, t / "out", stub_verifier(t.path()), 1);
  o.settings.adapters_dir = adapters;
  o.torch_pch = true;
  setenv("FAKE_PCH_LOG", log.c_str(), 1);
  PchRun r;
  r.summary = run_corpus(o);
  unsetenv("FAKE_PCH_LOG");
  r.seen = pch_seen(log);
  r.log = read_text(log);
  return r;
}

const char* kManifest = R"({"entries":[{"key":"k","header":"/h","gch":"/h.gch","sha256":")"
                        "0000000000000000000000000000000000000000000000000000000000000000" R"("}]})";

TEST(CorpusRun, PairsStartedOnceTheTorchPchIsReadyGetItsManifest) {
  TempDir t;
  const PchRun r = run_with_helper(t, fmt::format("import sys\nprint('{}')\n", kManifest), {"a", "b", "c"});
  EXPECT_EQ(r.summary.verified_pass, 3);
  // The helper takes milliseconds and each pair half a second: the first pair may have started
  // before it was ready, the later ones did not.
  ASSERT_EQ(r.seen.size(), 3u) << r.log;
  EXPECT_EQ(nlohmann::json::parse(r.seen.at("b")), nlohmann::json::parse(kManifest));
  EXPECT_EQ(nlohmann::json::parse(r.seen.at("c")), nlohmann::json::parse(kManifest));
  EXPECT_TRUE(r.summary.torch_pch.rfind("ready after ", 0) == 0) << r.summary.torch_pch;
  EXPECT_NE(r.summary.torch_pch.find("for 1 flag set,"), std::string::npos) << r.summary.torch_pch;
}

TEST(CorpusRun, AManifestEveryPairWouldRefuseIsNoHeader) {
  // Checked as each verifier checks KCV_TORCH_PCH: handed on, it would make every pair a setup error.
  TempDir t;
  const PchRun r = run_with_helper(t, R"(print('{"entries":[{"key":"k","header":"/h","gch":"/h.gch"}]}'))", {"a", "b"});
  EXPECT_EQ(r.summary.verified_pass, 2);
  ASSERT_EQ(r.seen.size(), 2u) << r.log;
  for (const auto& [pair, manifest] : r.seen) EXPECT_EQ(manifest, "") << pair;
  EXPECT_EQ(r.summary.torch_pch, "not built: the helper printed not a precompiled-header manifest "
                                 "(adapters/torch/kcv_torch_pch.py): an entry has no sha256 string");
}

TEST(CorpusRun, TheTorchPchIsGoneWhenTheRunEnds) {
  // The headers are about 0.7 GB each on torch 2.11: only the run's own pairs may use them.
  TempDir t;
  const std::string adapters =
      fake_pch_helper(t / "adapters", "import os, sys\nos.makedirs(os.path.join(sys.argv[1], 'x'))\n"
                                      "open(os.path.join(sys.argv[1], 'x', 'extension.h.gch'), 'w').write('gch')\n"
                                      "print('{\"entries\": []}')\n");
  const std::string d = t / "corpus";
  add_pair(d, "a", "solution.py", "pass 0.5");
  CorpusOptions o = stub_options(d, t / "out", stub_verifier(t.path()), 1);
  o.settings.adapters_dir = adapters;
  o.torch_pch = true;
  const CorpusRunSummary s = run_corpus(o);
  EXPECT_EQ(s.verified_pass, 1);
  EXPECT_EQ(s.torch_pch, "not built: the helper exited 0") << "an empty manifest is no header";
  EXPECT_FALSE(fs::exists(t / "out/torch-pch"));
  EXPECT_TRUE(fs::exists(t / "out/journal.jsonl"));
}

TEST(CorpusRun, AFailedTorchPchLeavesThePairsAsTheyWereAndSaysWhy) {
  TempDir t;
  const PchRun r = run_with_helper(t, "import sys\nprint('g++: not found', file=sys.stderr)\nsys.exit(1)\n", {"a", "b"});
  EXPECT_EQ(r.summary.verified_pass, 2);
  ASSERT_EQ(r.seen.size(), 2u) << r.log;
  for (const auto& [pair, manifest] : r.seen) EXPECT_EQ(manifest, "") << pair;
  EXPECT_EQ(r.summary.torch_pch, "not built: g++: not found");
}

TEST(CorpusRun, TheTorchPchIsOnlyBuiltWhenAsked) {
  TempDir t;
  const std::string adapters = fake_pch_helper(t / "adapters", "import sys\nsys.exit(1)\n");
  const std::string d = t / "corpus";
  add_pair(d, "a", "solution.py", "pass");
  CorpusOptions off = stub_options(d, t / "out1", stub_verifier(t.path()), 1);
  off.settings.adapters_dir = adapters;
  EXPECT_EQ(run_corpus(off).torch_pch, "");
  CorpusOptions self = stub_options(d, t / "out2", stub_verifier(t.path()), 1);
  self.settings.adapters_dir = adapters;
  self.torch_pch = true;
  self.self_check = true;   // problems as their own candidates build nothing
  EXPECT_EQ(run_corpus(self).torch_pch, "");
}

TEST(KernelBenchCli, ATorchPchManifestThatIsNotOneIsASetupError) {
  TempDir tmp;
  const std::string p = kRowsum + "/problem.py";
  for (const std::string& bad : {std::string("not json"), std::string(R"({"entries": 3})"),
                                 std::string(R"({"entries":[{"key":"k","header":"/h","gch":"/g","sha256":"abc"}]})")}) {
    setenv("KCV_TORCH_PCH", bad.c_str(), 1);
    const CliResult r = run_kcv({"verify", "--kernelbench", p, p, "--gates", "numerics"}, "", tmp.path());
    unsetenv("KCV_TORCH_PCH");
    EXPECT_EQ(r.rc, 2) << bad << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("KCV_TORCH_PCH is not a precompiled-header manifest"), std::string::npos) << r.err;
  }
}

/// Runs a shell command; its stdout.
std::string shell(const std::string& command, int* rc = nullptr) {
  std::string out;
  FILE* f = popen(command.c_str(), "r");
  char buf[4096];
  for (std::size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const int status = f ? pclose(f) : -1;
  if (rc) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(KernelBenchReal, ALoadInlineBuildUsesTheCheckedPchAndNeverATamperedOne) {
  // The real helper (python3-torch, g++), then the rowsum control built by load_inline: torch's own
  // main.cpp command, replayed with -H, must show g++ taking the precompiled header (a line "! ...gch").
  TempDir t;
  int rc = 0;
  const std::string manifest = shell(fmt::format("{} {}/adapters/torch/kcv_torch_pch.py {} --backend cpu "
                                                 "--variant '[]' 2>/dev/null",
                                                 torch_python(), KCV_SOURCE_DIR, t / "pch"), &rc);
  ASSERT_EQ(rc, 0) << manifest;
  const nlohmann::json m = nlohmann::json::parse(manifest);
  ASSERT_EQ(m["entries"].size(), 1u) << manifest;
  auto verify = [&](const std::string& manifest_text, const std::string& workdir) {
    setenv("KCV_TORCH_PCH", manifest_text.c_str(), 1);
    const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ext_ok.py",
                                 "--gates", "numerics", "--keep-workdir", workdir}, "", t.path());
    unsetenv("KCV_TORCH_PCH");
    return r;
  };
  auto ninja_of = [](const std::string& workdir) {
    for (const auto& e : fs::recursive_directory_iterator(workdir + "/torch-extensions"))
      if (e.path().filename() == "build.ninja") return e.path().string();
    return std::string();
  };

  const CliResult good = verify(manifest, t / "w1");
  EXPECT_EQ(good.rc, 0) << good.out << good.err;
  const std::string ninja = ninja_of(t / "w1");
  ASSERT_FALSE(ninja.empty());
  const std::string build = read_text(ninja);
  std::smatch include;
  ASSERT_TRUE(std::regex_search(build, include, std::regex(R"(-include (\S+/torch-pch/\S+/torch/extension\.h))")))
      << build;
  EXPECT_EQ(include[1].str().rfind(t / "w1", 0), 0u) << "the verification's own copy: " << include[1];
  const std::string dir = fs::path(ninja).parent_path().string();
  const std::string used = shell(fmt::format(
      "cd {} && sh -c \"$(sed -n 's/^cxx = //p' build.ninja) $(sed -n 's/^cflags = //p' build.ninja) -H -Winvalid-pch "
      "-fsyntax-only main.cpp $(sed -n 's/^post_cflags = //p' build.ninja)\" 2>&1 | head -1", dir));
  EXPECT_EQ(used.rfind("! ", 0), 0u) << used;
  EXPECT_NE(used.find(".gch"), std::string::npos) << used;

  // The shared gch rewritten after the manifest was made: never copied, never used.
  nlohmann::json tampered = m;
  {
    std::fstream gch(m["entries"][0]["gch"].get<std::string>(), std::ios::in | std::ios::out | std::ios::binary);
    gch.seekg(4096);
    const char was = static_cast<char>(gch.get());
    gch.seekp(4096);
    gch.put(static_cast<char>(~was));
  }
  const CliResult bad = verify(tampered.dump(), t / "w2");
  EXPECT_EQ(bad.rc, 0) << bad.out << bad.err;
  const std::string plain = read_text(ninja_of(t / "w2"));
  EXPECT_EQ(plain.find("-include"), std::string::npos) << plain;
  EXPECT_FALSE(fs::exists(t / "w2/torch-pch/" + m["entries"][0]["sha256"].get<std::string>().substr(0, 16) +
                          "/torch/extension.h.gch"));
}

}  // namespace
}  // namespace kcv::corpus_test
