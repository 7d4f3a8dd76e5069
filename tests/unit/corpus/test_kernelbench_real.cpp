// The real `kcv verify --kernelbench` and `kcv corpus run` over torch candidates (cpu, Debian's
// python3-torch): setup errors are one line and exit 2; hostile candidates (exit, SIGSEGV, a hang)
// and a solution that does not import become records, and the run still completes.
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"
#include "kcv/provenance.hpp"
#include "kcv/stats.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

bool one_line(const std::string& s) {
  return !s.empty() && s.find('\n') == s.size() - 1 && s.rfind("kcv: ", 0) == 0;
}

TEST(KernelBenchCli, SetupErrorsExitTwoWithOneLine) {
  TempDir tmp;
  write_file(tmp / "no_get_inputs.py", "import torch\nclass Model(torch.nn.Module):\n    pass\n");
  const std::vector<std::vector<std::string>> cases = {
      {"verify", "--kernelbench", tmp / "missing.py", kRowsum + "/solution_ok.py"},
      {"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_fails_to_import.py"},
      {"verify", "--kernelbench", tmp / "no_get_inputs.py", kRowsum + "/solution_ok.py"},
      {"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ok.py", "--op", "add"},
      {"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ok.py", "--baseline", "other"},
      {"verify", "--op", "add", "--candidate", kRowsum + "/solution_ok.py", "--baseline", "kernelbench"},
  };
  for (const auto& args : cases) {
    const CliResult r = run_kcv(args, "", tmp.path());
    EXPECT_EQ(r.rc, 2) << args[2] << ": " << r.err;
    EXPECT_TRUE(one_line(r.err)) << "stderr: " << r.err;
  }
  const CliResult r = run_kcv(cases[1], "", tmp.path());
  EXPECT_NE(r.err.find("this solution does not build"), std::string::npos) << r.err;
}

TEST(KernelBenchCli, CasesWhoseInputsTheReferenceRejectsAreNotJudged) {
  // Model raises on inputs the values gate makes (scaled by 1e4), not at the nominal ones.
  TempDir tmp;
  const std::string problem = tmp / "problem.py", solution = tmp / "solution.py";
  write_file(problem, problem_file("class Model(nn.Module):\n    def forward(self, x):\n"
                                   "        if x.abs().max() > 1e3:\n            raise ValueError('input out of domain')\n"
                                   "        return x * 2.0\n",
                                   "n = 8", "[torch.randn(n)]"));
  // Offered as its own candidate, it refuses what its reference rejects: that is no failure.
  CliResult r = run_kcv({"verify", "--kernelbench", problem, problem, "--gates", "values,numerics", "--json",
                         tmp / "self.json"}, "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed without a strict comparison"), std::string::npos) << r.out;
  const std::string self = read_text(tmp / "self.json");
  EXPECT_NE(self.find("refused inputs the reference rejects too"), std::string::npos) << self;
  EXPECT_NE(self.find("ValueError: input out of domain"), std::string::npos) << self;
  // A solution that computes anyway is not judged on those inputs; on the others it is.
  write_file(solution, "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                       "    def forward(self, x):\n        return x * 2.0\n");
  r = run_kcv({"verify", "--kernelbench", problem, solution, "--gates", "values,numerics", "--json", tmp / "sol.json"},
              "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(read_text(tmp / "sol.json").find("not judged: the reference rejects these inputs"), std::string::npos);
  // A wrong solution still fails on the inputs the reference accepts.
  write_file(solution, "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                       "    def forward(self, x):\n        return x * 2.5\n");
  r = run_kcv({"verify", "--kernelbench", problem, solution, "--gates", "values,numerics"}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
}

TEST(KernelBenchCli, AReferenceThatFailsAtItsOwnSizesIsASetupErrorNotAnInternalOne) {
  TempDir tmp;
  const std::string problem = tmp / "problem.py";
  write_file(problem, problem_file("class Model(nn.Module):\n    def forward(self, x):\n"
                                   "        raise ValueError('never runs')\n",
                                   "n = 8", "[torch.randn(n)]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", problem, problem, "--gates", "numerics"}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("never runs"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST(KernelBenchCli, AProblemOverTheElementCapIsJudgedAtClippedSizesAndSaysSo) {
  // Session 8: 22 of KernelBench's 250 problems move more than the cap per call. Refused, their
  // own Models could not pass; judged at the largest clipped sizes under the cap, they can.
  TempDir tmp;
  const std::string p = kRowsum + "/problem.py";
  setenv("KCV_MAX_ELEMENTS", "263", 1);  // rowsum moves 4x33 in and 4x33 out
  CliResult r = run_kcv({"verify", "--kernelbench", p, kRowsum + "/solution_ok.py", "--baseline", "kernelbench",
                         "--json", tmp / "r.json"}, "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const std::string why = "judged at batch_size=4, dim=32, not the problem's own batch_size=4, dim=33: it moves 264 "
                          "elements per call";
  EXPECT_NE(r.out.find("kernelbench sizes: " + why), std::string::npos) << r.out;
  const auto report = nlohmann::json::parse(read_text(tmp / "r.json"));
  EXPECT_NE(report["kernelbench"]["reduced_sizes"].get<std::string>().find(why), std::string::npos) << report.dump();
  EXPECT_EQ(report["kernelbench"]["baseline"]["verdict"], "pass");
  // A solution that sums only the first 32 columns is right at the clipped sizes alone: the
  // shapes gate still sweeps past them (dim = 33) and fails it.
  write_file(tmp / "first_32.py", "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                                  "    def forward(self, x):\n"
                                  "        return torch.relu(x) * 2.0 + x[:, :32].sum(dim=1, keepdim=True)\n");
  r = run_kcv({"verify", "--kernelbench", p, tmp / "first_32.py", "--gates", "numerics,shapes", "--json",
               tmp / "first_32.json"}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const auto first_32 = nlohmann::json::parse(read_text(tmp / "first_32.json"));
  EXPECT_EQ(first_32["gates"][0]["verdict"], "PASS");
  EXPECT_EQ(first_32["gates"][1]["verdict"], "FAIL");
  // Sizes that are no module-level symbols cannot be clipped: refused up front, one line, exit 2.
  write_file(tmp / "literal.py", problem_file("class Model(nn.Module):\n    def forward(self, x):\n"
                                              "        return x * 2.0\n", "", "[torch.randn(4, 33)]"));
  r = run_kcv({"verify", "--kernelbench", tmp / "literal.py", tmp / "literal.py"}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("moves 264 elements per call"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no smaller sizes of its module-level symbols fit"), std::string::npos) << r.err;
  setenv("KCV_MAX_ELEMENTS", "-5", 1);
  r = run_kcv({"verify", "--kernelbench", p, kRowsum + "/solution_ok.py"}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("KCV_MAX_ELEMENTS='-5' is not a positive integer"), std::string::npos) << r.err;
  setenv("KCV_MAX_ELEMENTS", "264", 1);  // at the cap: the problem's own sizes
  r = run_kcv({"verify", "--kernelbench", p, kRowsum + "/solution_ok.py", "--gates", "numerics", "--json", tmp / "own.json"},
              "", tmp.path());
  unsetenv("KCV_MAX_ELEMENTS");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_FALSE(nlohmann::json::parse(read_text(tmp / "own.json"))["kernelbench"].contains("reduced_sizes"));
}

/// An interpreter, tmp/bin/python3, that runs /usr/bin/python3 without site-packages (so without
/// torch) for a script whose name contains `script`, and as it is for any other.
std::string python_without_torch_for(const TempDir& tmp, const std::string& script) {
  const std::string python = tmp / "bin/python3";
  fs::create_directories(tmp / "bin");
  write_file(python, fmt::format("#!/bin/sh\ncase \"$*\" in\n  *{0}*) exec {1} -S \"$@\" ;;\nesac\n"
                                 "exec {1} \"$@\"\n", script, torch_python()));
  // Runnable by the worker's uid too (65534 when kcv is root, docs/security.md).
  fs::permissions(python, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  return python;
}

TEST(KernelBenchCli, ABareInterpreterNameIsOneInterpreterForTheReferenceAndTheWorkers) {
  // Session 8 on the H200: `--python python3` ran the reference server in the shell's python3, a
  // venv with torch, and the workers in /usr/bin/python3 without it: a python finds its venv from
  // its own name looked up on its own PATH, and a worker's PATH is kcv's own. Every gate CRASHed:
  // a FAIL for the problem's own Model. Here the venv holds the system's torch, and the Model
  // tells the two apart: it doubles outside the venv.
  TempDir tmp;
  // Where torch's interpreter is itself a venv's (the H200's host), that venv; else one made here
  // over Debian's python3, which holds torch.
  std::string venv_bin = fs::path(torch_python()).parent_path();
  if (!fs::exists(fs::path(venv_bin).parent_path() / "pyvenv.cfg")) {
    const std::string venv = tmp / "venv";
    fs::create_directories(venv + "/bin");
    fs::create_symlink(torch_python(), venv + "/bin/python3");
    write_file(venv + "/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = true\n");
    venv_bin = venv + "/bin";
  }
  write_file(tmp / "problem.py", problem_file("import sys\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                                              "        return x * (1.0 if sys.prefix != sys.base_prefix else 2.0)\n",
                                              "", "[torch.randn(2, 3)]"));
  const std::string old_path = std::getenv("PATH");
  setenv("PATH", (venv_bin + ":" + old_path).c_str(), 1);
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates",
                               "numerics", "--python", "python3"}, "", tmp.path());
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST(KernelBenchCli, AVenvUnderTmpIsTheWorkersInterpreterToo) {
  // The worker's private /tmp kept the interpreter's bin/ but not the venv around it: a venv made
  // under /tmp (apart from the problem's directory) ran the workers in the base interpreter,
  // without the venv's packages. The Model tells the two apart: it doubles outside a venv.
  TempDir env_dir, tmp;
  const std::string venv = env_dir / "venv";
  const int made = std::system(fmt::format("{} -m venv --system-site-packages --without-pip {} >/dev/null 2>&1",
                                           torch_python(), venv).c_str());
  if (made != 0) GTEST_SKIP() << torch_python() << " -m venv failed (python3-venv not installed?)";
  std::system(fmt::format("chmod -R a+rX {} {}", env_dir.path(), tmp.path()).c_str());  // uid 65534 as root
  write_file(tmp / "problem.py", problem_file("import sys\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                                              "        return x * (1.0 if sys.prefix != sys.base_prefix else 2.0)\n",
                                              "", "[torch.randn(2, 3)]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates",
                               "numerics", "--python", venv + "/bin/python3"}, "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST(KernelBenchCli, AnInterpreterThatIsNotThereIsASetupError) {
  TempDir tmp;
  const std::string p = kRowsum + "/problem.py";
  for (const std::string& python : {std::string("kcv-no-such-python"), tmp / "missing/python3"}) {
    const CliResult r = run_kcv({"verify", "--kernelbench", p, p, "--python", python}, "", tmp.path());
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("python interpreter '" + python + "'"), std::string::npos) << r.err;
  }
}

TEST(KernelBenchCli, AWorkerWhoseInterpreterCannotImportTorchIsASetupErrorNotACrash) {
  // The candidate is not to blame for the machine: no gate may CRASH or FAIL for it.
  TempDir tmp;
  const std::string python = python_without_torch_for(tmp, "kcv_torch_worker.py");
  const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/problem.py", "--gates",
                               "numerics", "--python", python}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("cannot import torch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(torch_python()), std::string::npos) << r.err;  // the interpreter that ran
}

TEST(KernelBenchCli, TheReferenceAndTheWorkerRunOnKcvThreadsThreads) {
  // Model scales by the reference server's torch thread count and ModelNew by the worker's: they
  // agree exactly when both run on KCV_THREADS threads.
  TempDir tmp;
  const std::string scaled = "import torch\nclass {}(torch.nn.Module):\n    def forward(self, x):\n"
                             "        return x * {}\n";
  write_file(tmp / "problem.py", problem_file(fmt::format(fmt::runtime(scaled), "Model", "float(torch.get_num_threads())"),
                                              "", "[torch.randn(2, 3)]"));
  write_file(tmp / "worker_threads.py", fmt::format(fmt::runtime(scaled), "ModelNew", "float(torch.get_num_threads())"));
  write_file(tmp / "three.py", fmt::format(fmt::runtime(scaled), "ModelNew", "3.0"));
  auto verdict = [&](const char* threads, const std::string& solution) {
    setenv("KCV_THREADS", threads, 1);
    const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", solution, "--gates", "numerics"}, "",
                                tmp.path());
    unsetenv("KCV_THREADS");
    return r.rc;
  };
  EXPECT_EQ(verdict("3", tmp / "three.py"), 0);          // the reference ran on 3 threads
  EXPECT_EQ(verdict("2", tmp / "three.py"), 1);          // ... and on 2
  EXPECT_EQ(verdict("2", tmp / "worker_threads.py"), 0);  // the worker too
}

TEST(KernelBenchCli, AModelKeepingItsInitialStateAsAPlainTensorRunsInFloat64) {
  // KernelBench's LSTM and GRU problems draw h0 in __init__ and keep it as a plain attribute,
  // which Module.double() leaves in float32.
  TempDir tmp;
  write_file(tmp / "problem.py",
             problem_file("class Model(nn.Module):\n"
                          "    def __init__(self, input_size, hidden_size):\n        super().__init__()\n"
                          "        self.h0 = torch.randn((1, batch_size, hidden_size))\n"
                          "        self.gru = nn.GRU(input_size, hidden_size, batch_first=True)\n\n"
                          "    def forward(self, x):\n        self.h0 = self.h0.to(x.device)\n"
                          "        return self.gru(x, self.h0)[0]\n",
                          "batch_size = 3\nseq_len = 5\ninput_size = 4\nhidden_size = 6",
                          "[torch.randn(batch_size, seq_len, input_size)]", "[input_size, hidden_size]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates", "numerics"},
                              "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST(KernelBenchCli, AModelWhoseForwardIsAClosureOverItsSubmodulesRunsInFloat64) {
  // KernelBench's MiniGPTBlock keeps its MLP as a lambda over self.mlp: a deep copy of the fp32
  // Model shares the lambda, whose closure still holds the fp32 submodules (the reference failed
  // on an H200 with "mat1 and mat2 must have the same dtype, but got Double and Float").
  TempDir tmp;
  write_file(tmp / "problem.py",
             problem_file("class Model(nn.Module):\n"
                          "    def __init__(self):\n        super().__init__()\n"
                          "        self.mlp = nn.ModuleDict(dict(fc=nn.Linear(dim, dim)))\n"
                          "        m = self.mlp\n"
                          "        self.mlpf = lambda x: m.fc(x)\n\n"
                          "    def forward(self, x):\n        return x + self.mlpf(x)\n",
                          "batch_size = 3\ndim = 8", "[torch.randn(batch_size, dim)]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates", "numerics"},
                              "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST(KernelBenchCli, BoolMasksTravelAsBytes) {
  // A bool input (KernelBench's masked cumsum) is carried as uint8 and viewed as bool on both
  // sides: Model passes; a solution that ignores the mask fails numerics.
  TempDir tmp;
  const std::string model = "class {}(nn.Module):\n"
                            "    def forward(self, x, mask):\n        return torch.cumsum({}, dim=1)\n";
  write_file(tmp / "problem.py", problem_file(fmt::format(fmt::runtime(model), "Model", "x * mask"), "batch_size = 4\nn = 37",
                                              "[torch.randn(batch_size, n), torch.randn(batch_size, n) > 0]"));
  write_file(tmp / "ignores_mask.py", "import torch\nimport torch.nn as nn\n\n\n" +
                                          fmt::format(fmt::runtime(model), "ModelNew", "x"));
  CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates", "numerics,layout"},
                        "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "ignores_mask.py", "--gates", "numerics"}, "",
              tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
}

TEST(KernelBenchCli, AWorkerThatDiesSaysItsLastLogLine) {
  TempDir tmp;
  write_file(tmp / "dies.py", "import os\nimport sys\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                              "    def forward(self, x):\n        print('the last words', file=sys.stderr, flush=True)\n"
                              "        os._exit(7)\n");
  const std::string report = tmp / "r.json";
  const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", tmp / "dies.py", "--gates", "numerics",
                               "--json", report}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const std::string evidence = nlohmann::json::parse(read_text(report))["gates"][0]["evidence"];
  EXPECT_NE(evidence.find("exited with status 7 before finishing (its log ends: the last words)"), std::string::npos)
      << evidence;
}

// Issue 21 item 7: a load_inline build that fails names the compiler's own error line (not
// ninja's command) and keeps the whole output in build.log in the workdir, which stays.
TEST(KernelBenchCli, AFailedLoadInlineBuildSaysTheCompilersErrorAndKeepsItsOutput) {
  TempDir tmp;
  write_file(tmp / "broken_ext.py",
             "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
             "ext = load_inline('kcv_test_broken_ext', cpp_sources='#include <torch/extension.h>\\n"
             "torch::Tensor f(torch::Tensor x) { return kcv_no_such_function(x); }', functions=['f'])\n\n\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n");
  const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", tmp / "broken_ext.py", "--gates",
                               "numerics"}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("does not build: "), std::string::npos) << r.err;
  // gcc's own line (its quotes follow the locale): main.cpp:L:C: error: ... kcv_no_such_function ...
  EXPECT_NE(r.err.find("main.cpp:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kcv_no_such_function"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[1/"), std::string::npos) << "ninja's progress line: " << r.err;
  const std::string key = "(whole compiler output: ";
  const std::size_t at = r.err.find(key);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string log = r.err.substr(at + key.size(), r.err.find(')', at) - at - key.size());
  EXPECT_NE(read_text(log).find("kcv_no_such_function"), std::string::npos) << log;
  std::error_code ec;
  fs::remove_all(fs::path(log).parent_path(), ec);  // the kept workdir
}

// A reference server that dies says how: the signal (a SIGKILL kcv did not send: likely the
// out-of-memory killer) and the last lines of its log.
TEST(KernelBenchCli, AReferenceServerThatDiesSaysHowAndItsLastLines) {
  TempDir tmp;
  write_file(tmp / "problem.py", problem_file("class Model(nn.Module):\n"
                                              "    def forward(self, x):\n"
                                              "        import os, signal, sys\n"
                                              "        if 'kcv_torch_reference' in sys.argv[0]:\n"
                                              "            print('the server goes down now', file=sys.stderr, flush=True)\n"
                                              "            os.kill(os.getpid(), signal.SIGKILL)\n"
                                              "        return x + 1\n",
                                              "n = 8", "[torch.randn(n)]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates", "numerics"},
                              "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("reference server ended"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGKILL kcv did not send"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the server goes down now"), std::string::npos) << r.err;
}

TEST(KernelBenchCli, AModelThatKeepsStateIsJudgedOneCallFromAFreshModel) {
  // KernelBench's VanillaRNN keeps its hidden state between calls, and the reference and the
  // worker call their models different numbers of times: both sides build a fresh model for
  // every call.
  TempDir tmp;
  const std::string rnn = "class Model(nn.Module):\n"
                          "    def __init__(self):\n        super().__init__()\n"
                          "        self.hidden = torch.zeros(1, n)\n\n"
                          "    def forward(self, x):\n        self.hidden = torch.tanh(x + self.hidden.to(x.device))\n"
                          "        return self.hidden\n";
  write_file(tmp / "problem.py", problem_file(rnn, "n = 5", "[torch.randn(1, n)]"));
  // One step from the zero state, without keeping any: the same function of the inputs.
  write_file(tmp / "one_step.py", "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                                  "    def forward(self, x):\n        return torch.tanh(x)\n");
  write_file(tmp / "wrong.py", "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                               "    def forward(self, x):\n        return torch.tanh(x + 0.5)\n");
  for (const std::string candidate : {"problem.py", "one_step.py"}) {
    const std::string report = tmp / (candidate + ".json");
    const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / candidate, "--json", report,
                                 "--quiet"}, "", tmp.path());
    EXPECT_EQ(r.rc, 0) << candidate << r.out << r.err;
    EXPECT_EQ(nlohmann::json::parse(read_text(report))["kernelbench"]["fresh_model"], true) << candidate;
  }
  const CliResult w = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "wrong.py", "--gates", "numerics",
                               "--quiet"}, "", tmp.path());
  EXPECT_EQ(w.rc, 1) << w.out << w.err;

  // A Model that is a function of its inputs keeps one model.
  const std::string report = tmp / "rowsum.json";
  const CliResult p = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/problem.py", "--gates",
                               "numerics", "--json", report, "--quiet"}, "", tmp.path());
  EXPECT_EQ(p.rc, 0) << p.out << p.err;
  EXPECT_EQ(nlohmann::json::parse(read_text(report))["kernelbench"]["fresh_model"], false);
}

TEST(KernelBenchCli, ASolutionBuiltFromItsOwnModuleSizesIsBuiltAtTheCaseSizes) {
  // Model.__init__ reads the module-level n instead of taking it from get_init_inputs(): offered
  // as its own candidate, the solution module's n follows the problem's through the shape sweep.
  TempDir tmp;
  write_file(tmp / "problem.py",
             problem_file("class Model(nn.Module):\n"
                          "    def __init__(self):\n        super().__init__()\n"
                          "        self.w = nn.Parameter(torch.randn(n))\n\n"
                          "    def forward(self, x):\n        return x * self.w\n",
                          "n = 6", "[torch.randn(3, n)]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates",
                               "numerics,shapes", "--quiet"}, "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST(KernelBenchCli, AModelThatDrawsRandomNumbersIsRefusedUpFront) {
  TempDir tmp;
  write_file(tmp / "problem.py",
             problem_file("class Model(nn.Module):\n"
                          "    def forward(self, x):\n        return x + torch.rand_like(x)\n",
                          "n = 5", "[torch.randn(1, n)]"));
  const CliResult r = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py"}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("Model gives other outputs when called again on the same inputs, even as a fresh model"),
            std::string::npos) << r.err;
}

TEST(KernelBenchCli, AFailingCaseReplaysExactly) {
  TempDir tmp;
  const std::string report = tmp / "report.json";
  const CliResult v = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_fixed_dim.py",
                               "--gates", "shapes", "--json", report, "--quiet"}, "", tmp.path());
  ASSERT_EQ(v.rc, 1) << v.out << v.err;
  const nlohmann::json j = nlohmann::json::parse(read_text(report));
  EXPECT_EQ(j.at("op"), "kernelbench:rowsum");
  nlohmann::json shapes;
  for (const auto& g : j.at("gates"))
    if (g.at("id") == "shapes") shapes = g;
  ASSERT_EQ(shapes.at("verdict"), "FAIL");
  const int64_t failing = shapes.at("failing_case").get<int64_t>();
  const CliResult r = run_kcv({"replay", report, "--gate", "shapes", "--case", std::to_string(failing)}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  // The recorded evidence is "case I (label): <judgement>": the replay prints the same judgement.
  const std::string evidence = shapes.at("evidence").get<std::string>();
  const std::string judgement = evidence.substr(evidence.find("): ") + 3, 60);
  EXPECT_NE(r.out.find(judgement), std::string::npos) << "replay: " << r.out << "\nrecorded: " << evidence;
}

// Issue 21 item 8: a KernelBench report names the torch it ran on and the sha256 of the solution
// and the problem; replay refuses either once it changed.
TEST(KernelBenchCli, TheReportNamesTorchAndTheFilesHashesAndReplayRefusesAChangedProblem) {
  TempDir tmp;
  fs::copy_file(kRowsum + "/problem.py", tmp / "problem.py");
  fs::copy_file(kRowsum + "/solution_fixed_dim.py", tmp / "solution.py");
  const std::string report = tmp / "report.json";
  const CliResult v = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "solution.py", "--gates", "shapes",
                               "--json", report, "--quiet"}, "", tmp.path());
  ASSERT_EQ(v.rc, 1) << v.out << v.err;
  const nlohmann::json j = nlohmann::json::parse(read_text(report));
  const nlohmann::json& p = j.at("provenance");
  EXPECT_EQ(p.at("candidate_sha256"), sha256_file(tmp / "solution.py"));
  EXPECT_EQ(p.at("problem_sha256"), sha256_file(tmp / "problem.py"));
  EXPECT_EQ(p.at("paths_from_report"), nlohmann::json({{"problem", "problem.py"}, {"solution", "solution.py"}}));
  std::string torch;
  ASSERT_EQ(run_capture({j.at("kernelbench").at("python").get<std::string>(), "-c",
                         "import torch, sys; sys.stdout.write(torch.__version__)"},
                        torch),
            0);
  EXPECT_EQ(p.at("torch"), torch);
  const int64_t failing = j.at("gates").at(1).at("failing_case").get<int64_t>();
  { std::ofstream(tmp / "problem.py", std::ios::app) << "# edited\n"; }
  const CliResult r = run_kcv({"replay", report, "--gate", "shapes", "--case", std::to_string(failing)}, "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("problem.py' changed since the report"), std::string::npos) << r.err;
}

TEST(KernelBenchCli, ShapesTheReferenceRejectsAreSkippedWithTheReason) {
  TempDir tmp;
  write_file(tmp / "problem.py", problem_file("class Model(torch.nn.Module):\n"
                                              "    def forward(self, x):\n"
                                              "        if x.shape[1] % 2:\n"
                                              "            raise ValueError('width must be even')\n"
                                              "        return x * 2\n",
                                              "batch_size = 4\nwidth = 64", "[torch.randn(batch_size, width)]"));
  const std::string report = tmp / "report.json";
  const CliResult v = run_kcv({"verify", "--kernelbench", tmp / "problem.py", tmp / "problem.py", "--gates", "shapes",
                               "--json", report, "--quiet"}, "", tmp.path());
  ASSERT_EQ(v.rc, 0) << v.out << v.err;
  for (const auto& g : nlohmann::json::parse(read_text(report)).at("gates"))
    if (g.at("id") == "shapes") {
      EXPECT_EQ(g.at("verdict"), "PASS");
      const std::string e = g.at("evidence").get<std::string>();
      EXPECT_NE(e.find("skipped"), std::string::npos) << e;
      EXPECT_NE(e.find("width must be even"), std::string::npos) << e;
    }
}

/// The gate of a kcv.report/1 document with this id.
nlohmann::json gate_of(const nlohmann::json& report, const std::string& id) {
  for (const auto& g : report.at("gates"))
    if (g.at("id") == id) return g;
  ADD_FAILURE() << "no gate " << id;
  return {};
}

TEST(KernelBenchCli, AFirstCallAtANewShapeHasACompileGraceThatTheEvidenceNames) {
  // Issue 21 item 2: a JIT (Inductor, Triton) compiles at each new shape. The stand-in takes 6 s
  // at each; with --timeout 2 it is TIMEOUT without the grace and PASS with it.
  TempDir tmp;
  const std::string problem = kRowsum + "/problem.py", solution = kRowsum + "/solution_compiles_per_shape.py";
  CliResult r = run_kcv({"verify", "--kernelbench", problem, solution, "--gates", "numerics", "--timeout", "2",
                         "--compile-grace", "0", "--json", tmp / "none.json"}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_EQ(gate_of(nlohmann::json::parse(read_text(tmp / "none.json")), "numerics").at("verdict"), "TIMEOUT");

  r = run_kcv({"verify", "--kernelbench", problem, solution, "--gates", "numerics,layout", "--timeout", "2",
               "--compile-grace", "30", "--json", tmp / "grace.json"}, "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto report = nlohmann::json::parse(read_text(tmp / "grace.json"));
  const auto numerics = gate_of(report, "numerics"), layout = gate_of(report, "layout");
  EXPECT_EQ(numerics.at("verdict"), "PASS");
  EXPECT_EQ(numerics.value("compile_grace_calls", 0), 1) << numerics;  // one shape: nominal
  const std::string evidence = numerics.at("evidence");
  EXPECT_NE(evidence.find("1 call(s) outlasted the per-call timeout (2 s) as the first at their shape in their "
                          "worker, within the compile grace (30 s"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("case 0 (batch_size=4, dim=33 seed 0) call 0 took "), std::string::npos) << evidence;
  // Strided views are new shapes to a JIT: each gets its own grace.
  EXPECT_EQ(layout.at("verdict"), "PASS") << layout;
  EXPECT_GE(layout.value("compile_grace_calls", 0), 1) << layout;
}

TEST(KernelBenchCli, AHangThroughACompileGraceSpendsItForTheRestOfTheRun) {
  // A hang on a first call is TIMEOUT after the grace, and said so; from then on every call has
  // the per-call timeout, so a candidate that hangs costs one grace, not one per gate.
  TempDir tmp;
  const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_hangs.py",
                               "--gates", "numerics,coverage", "--timeout", "2", "--compile-grace", "5", "--json",
                               tmp / "hang.json"}, "", tmp.path());
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const auto report = nlohmann::json::parse(read_text(tmp / "hang.json"));
  const auto numerics = gate_of(report, "numerics"), coverage = gate_of(report, "coverage");
  EXPECT_EQ(numerics.at("verdict"), "TIMEOUT");
  EXPECT_NE(numerics.at("evidence").get<std::string>().find(
                "no progress for 5 s (the compile grace of a first call at its shape; the per-call timeout is 2 s)"),
            std::string::npos) << numerics;
  EXPECT_EQ(coverage.at("verdict"), "TIMEOUT");
  EXPECT_NE(coverage.at("evidence").get<std::string>().find(
                "no progress for 2 s (no compile grace: an earlier first call at its shape hung through it)"),
            std::string::npos) << coverage;
}

// The CLI's `kcv corpus run` with no KCV_CORPUS_VERIFIER: every pair a forked library call (the
// default path; test_corpus_in_process.cpp has its own tests).
TEST(KernelBenchCorpus, HostileCandidatesNeverStopTheRun) {
  TempDir tmp;
  const std::string dir = tmp / "corpus", out = tmp / "out";
  write_file(dir + "/rowsum/problem.py", read_text(kRowsum + "/problem.py"));
  for (const char* s : {"solution_ok.py", "solution_exits.py", "solution_segfault.py", "solution_hangs.py",
                        "solution_fails_to_import.py"})
    write_file(dir + "/rowsum/" + s, read_text(kRowsum + "/" + s));
  const CliResult r = run_kcv({"corpus", "run", dir, "--out", out, "--jobs", "2", "--timeout", "2", "--compile-grace",
                               "3", "--baseline", "kernelbench"}, "", tmp.path());
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& rec : results_of(read_journal(out + "/journal.jsonl"))) {
    const std::string key = rec.at("key").get<std::string>();
    EXPECT_FALSE(by_key.count(key)) << "key twice: " << key;
    by_key[key] = rec;
  }
  ASSERT_EQ(by_key.size(), 5u);
  auto gate_verdicts = [&](const std::string& key) {
    std::set<std::string> v;
    for (const auto& g : by_key.at(key).at("report").at("gates")) v.insert(g.at("verdict").get<std::string>());
    return v;
  };
  const auto& ok = by_key.at("rowsum/solution_ok.py");
  EXPECT_EQ(ok.at("status"), "verified");
  EXPECT_EQ(ok.at("report").at("verdict"), "PASS");
  EXPECT_EQ(ok.at("report").at("kernelbench").at("baseline").at("verdict"), "pass");
  EXPECT_TRUE(gate_verdicts("rowsum/solution_exits.py").count("CRASH"));
  EXPECT_TRUE(gate_verdicts("rowsum/solution_segfault.py").count("CRASH"));
  EXPECT_TRUE(gate_verdicts("rowsum/solution_hangs.py").count("TIMEOUT"));
  for (const char* k : {"rowsum/solution_exits.py", "rowsum/solution_segfault.py", "rowsum/solution_hangs.py"}) {
    EXPECT_EQ(by_key.at(k).at("report").at("verdict"), "FAIL") << k;
    EXPECT_EQ(by_key.at(k).at("report").at("kernelbench").at("baseline").at("verdict"), "fail") << k;
  }
  EXPECT_EQ(by_key.at("rowsum/solution_fails_to_import.py").at("status"), "setup_error");
  EXPECT_TRUE(fs::exists(out + "/report.html"));
  // The summary the report is drawn from reads real kcv.report/1 verdicts (upper case).
  const CorpusSummary sum = summarize_corpus(read_journal(out + "/journal.jsonl"));
  EXPECT_EQ(sum.strict_pass, 1);
  EXPECT_EQ(sum.strict_fail, 4);
}

}  // namespace
}  // namespace kcv::corpus_test
