// The private copy of a candidate (issue 25 class 3, docs/security.md): every build and every
// worker use one read-only copy of the candidate's directory, and a candidate's own files (a header
// beside a .c or .cu, a module beside a KernelBench solution or problem) are found from it as they
// were from the original. On the H200 (2026-12) the first version of the copy failed every cuda
// candidate (nvcc has no -iquote) and every torch solution that imports a module beside it; these
// tests need no GPU and no torch (nvcc, where present, compiles only).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kcv/candidate.hpp"
#include "kcv/contract.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/runner.hpp"
#include "test_support.hpp"

namespace kcv::test {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// add's kcv_run in C, its arithmetic in a header beside it ("helper.h" by default).
std::string add_including(const std::string& header) {
  return "#include <kcv/abi.h>\n#include \"" + header + R"("
KCV_EXPORT int kcv_run(const kcv_call* c) {
  const int64_t n = c->inputs[0].shape[0];
  for (int64_t i = 0; i < n; ++i)
    ((float*)c->outputs[0].data)[i * c->outputs[0].stride[0]] =
        add_one(((const float*)c->inputs[0].data)[i * c->inputs[0].stride[0]],
                ((const float*)c->inputs[1].data)[i * c->inputs[1].stride[0]]);
  return 0;
}
)";
}
constexpr const char* kHelper = "static inline float add_one(float a, float b) { return a + b; }\n";

bool nvcc_available() {
  std::string out;
  return run_capture({"nvcc", "--version"}, out) == 0;
}

// The H200 failure: `nvcc fatal : Unknown option '-iquote'` for every cuda candidate. The cuda
// control split across files compiles (no GPU needed), from the copy, its header copied with it.
TEST(PrivateCopy, CudaCandidateIncludingAHeaderBesideItCompiles) {
  if (!nvcc_available()) GTEST_SKIP() << "nvcc is not on PATH";
  TempDir work;
  const std::string cu = std::string(KCV_SOURCE_DIR) + "/controls/cuda/add/add_ok_split.cu";
  const Candidate c = Candidate::prepare(cu, "cuda", work.path());
  EXPECT_TRUE(fs::exists(c.library()));
  EXPECT_TRUE(c.source_copy().whole_directory) << c.source_copy().describe();
  EXPECT_EQ(fs::path(c.source_copy().file), fs::path(work.path()) / "candidate-src" / "add_ok_split.cu");
  EXPECT_TRUE(fs::exists(fs::path(work.path()) / "candidate-src" / "split" / "add_args.cuh"));
  // nvcc got -I for the original directory, never -iquote.
  const std::string log = slurp(fs::path(work.path()) / "build.log");
  EXPECT_EQ(log.find("-iquote"), std::string::npos) << log;
}

// The sanitizer gate's rebuild reads the headers of the first build: the original header rewritten
// in between changes nothing (before, -iquote the original directory read the new one).
TEST(PrivateCopy, CpuSanitizedRebuildCompilesTheHeadersOfThePlainBuild) {
  TempDir src, work;
  write(fs::path(src.path()) / "cand.c", add_including("lib/helper.h"));
  write(fs::path(src.path()) / "lib" / "helper.h", kHelper);
  const Candidate c = Candidate::prepare(src.path() + "/cand.c", "cpu", work.path());
  EXPECT_TRUE(c.source_copy().whole_directory);
  EXPECT_EQ(c.source_copy().files, 2);
  write(fs::path(src.path()) / "lib" / "helper.h", "#error rewritten after the first build\n");
  write(fs::path(src.path()) / "cand.c", "#error rewritten after the first build\n");
  EXPECT_NO_THROW(c.sanitized_library());
  EXPECT_TRUE(fs::exists(c.sanitized_library()));
  // The copy is read-only.
  struct stat st {};
  ASSERT_EQ(stat((fs::path(work.path()) / "candidate-src" / "lib" / "helper.h").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  ASSERT_EQ(stat(c.source_copy().file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
}

// A directory above the cap: the file alone is copied, and the header is still found where it is
// (the original directory after the copy's own); the report says which.
TEST(PrivateCopy, ADirectoryAboveTheCapIsTheFileAloneAndItsHeadersAreStillFound) {
  TempDir src, work;
  write(fs::path(src.path()) / "cand.c", add_including("helper.h"));
  write(fs::path(src.path()) / "helper.h", kHelper);
  {
    std::ofstream big(fs::path(src.path()) / "weights.bin");  // sparse: nothing written
  }
  fs::resize_file(fs::path(src.path()) / "weights.bin", static_cast<std::uintmax_t>(kPrivateCopyMaxBytes) + 1);
  const Candidate c = Candidate::prepare(src.path() + "/cand.c", "cpu", work.path());
  EXPECT_FALSE(c.source_copy().whole_directory);
  EXPECT_EQ(c.source_copy().files, 1);
  EXPECT_FALSE(fs::exists(fs::path(work.path()) / "candidate-src" / "helper.h"));
  EXPECT_FALSE(fs::exists(fs::path(work.path()) / "candidate-src" / "weights.bin"));
  EXPECT_NE(c.source_copy().describe().find("above the cap"), std::string::npos) << c.source_copy().describe();
  EXPECT_TRUE(fs::exists(c.library()));
}

// What the copy leaves out: hidden names, __pycache__, FIFOs and devices (never opened: a FIFO
// would block), links to directories, levels below the depth cap, and kcv's own workdir when it
// lies inside the candidate's directory (the copy would copy itself).
TEST(PrivateCopy, LeavesOutHiddenFilesFifosDirectoryLinksDeepLevelsAndTheWorkdir) {
  TempDir src, elsewhere;
  const fs::path d = src.path();
  write(d / "cand.c", "int x;\n");
  write(d / "a" / "b" / "c" / "kept.h", "\n");            // depth 3: kept
  write(d / "a" / "b" / "c" / "d" / "deep.h", "\n");      // depth 4: left out
  write(d / ".git" / "HEAD", "ref\n");
  write(d / "__pycache__" / "m.cpython-311.pyc", "\n");
  write(fs::path(elsewhere.path()) / "outside.h", "\n");
  fs::create_directory_symlink(elsewhere.path(), d / "linked");
  fs::create_symlink(fs::path(elsewhere.path()) / "outside.h", d / "file_link.h");  // a link to a file: its content
  ASSERT_EQ(mkfifo((d / "pipe").c_str(), 0644), 0);
  const fs::path work = d / "kcv-work";
  fs::create_directories(work / "earlier");
  write(work / "earlier" / "x.h", "\n");
  const PrivateCopy p = private_copy((d / "cand.c").string(), (work / "candidate-src").string(), work.string());
  const fs::path into = work / "candidate-src";
  EXPECT_TRUE(p.whole_directory) << p.describe();
  EXPECT_TRUE(fs::exists(into / "cand.c"));
  EXPECT_TRUE(fs::exists(into / "a" / "b" / "c" / "kept.h"));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(into / "file_link.h")));
  EXPECT_FALSE(fs::exists(into / "a" / "b" / "c" / "d"));
  EXPECT_FALSE(fs::exists(into / ".git"));
  EXPECT_FALSE(fs::exists(into / "__pycache__"));
  EXPECT_FALSE(fs::exists(into / "linked"));
  EXPECT_FALSE(fs::exists(into / "pipe"));
  EXPECT_FALSE(fs::exists(into / "kcv-work"));
  EXPECT_EQ(p.files, 3);  // cand.c, kept.h, file_link.h
  EXPECT_EQ(p.origin_dir, d.string());
}

/// Stands in for the torch worker's interpreter: writes what it was started with (arguments, cwd,
/// uid, the plan's paths) to stderr, then does what kcv_torch_worker.py does before it needs torch
/// (its adapters directory first on sys.path, the plan's search path, the problem and solution
/// loaded by kcv_torch_load), and says what the modules beside them gave.
constexpr const char* kShim = R"(import json, mmap, os, sys
out = {"argv": sys.argv[1:], "cwd": os.getcwd(), "uid": os.getuid()}
try:
    mm = mmap.mmap(3, os.fstat(3).st_size, mmap.MAP_SHARED, mmap.PROT_READ)
    at, n = int.from_bytes(mm[0:8], "little"), int.from_bytes(mm[8:16], "little")
    plan = json.loads(bytes(mm[at:at + n]))
    kb = plan.get("kernelbench", {})
    out.update(candidate=plan["candidate"], problem=kb.get("problem"), search_path=kb.get("search_path"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[2])))
    import kcv_torch_load
    kcv_torch_load.extend_search_path(kb.get("search_path", []))
    problem = kcv_torch_load.load_module(kb["problem"], "kcv_problem")
    solution = kcv_torch_load.load_module(plan["candidate"], "kcv_solution")
    out.update(problem_value=problem.VALUE, solution_value=solution.VALUE,
               sibling_file=sys.modules["sol_sibling"].__file__)
except BaseException as e:
    out["error"] = f"{type(e).__name__}: {e}"
sys.stderr.write("SHIM " + json.dumps(out) + "\n")
sys.stderr.flush()
)";

// The H200 failure: "cannot load candidate: ModuleNotFoundError: No module named 'cuda_rowsum'". A
// KernelBench solution and problem, each importing modules beside it (through its own
// sys.path.insert of dirname(__file__), and plainly), load from kcv's copies in the worker that
// kcv starts, sandboxed, with the interpreter's arguments and cwd as the torch worker has them.
TEST(PrivateCopy, TorchWorkerImportsTheModulesBesideTheSolutionAndTheProblem) {
  // The interpreter with torch: $KCV_PYTHON where it names one (the H200's venv), else Debian's.
  const char* env_python = std::getenv("KCV_PYTHON");
  const char* real_python = env_python && *env_python == '/' ? env_python : "/usr/bin/python3";
  if (access(real_python, X_OK) != 0) GTEST_SKIP() << real_python << " is not there";
  TempDir tmp;
  chmod(tmp.path().c_str(), 0755);  // the worker is uid 65534 when kcv is root
  const fs::path t = tmp.path();
  write(t / "sol" / "solution.py",
        "import os, sys\n"
        "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        "import sol_sibling  # noqa: E402\n"
        "import sol_plain  # noqa: E402  (its directory is on sys.path without help)\n"
        "VALUE = sol_sibling.VALUE + sol_plain.VALUE\n");
  write(t / "sol" / "sol_sibling.py", "VALUE = 10\n");
  write(t / "sol" / "sol_plain.py", "VALUE = 5\n");
  write(t / "prob" / "problem.py",
        "import os, sys\n"
        "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        "import prob_sibling  # noqa: E402\n"
        "VALUE = prob_sibling.VALUE\n");
  write(t / "prob" / "prob_sibling.py", "VALUE = 7\n");
  write(t / "bin" / "shim.py", kShim);
  write(t / "bin" / "python3", std::string("#!/bin/sh\nexec ") + real_python + " " + (t / "bin" / "shim.py").string() +
                                   " \"$@\"\n");
  chmod((t / "bin" / "python3").c_str(), 0755);
  const fs::path work = t / "work";
  fs::create_directories(work);

  const Candidate cand = Candidate::kernelbench((t / "prob" / "problem.py").string(), (t / "sol" / "solution.py").string(),
                                                (t / "bin" / "python3").string(), work.string());
  EXPECT_EQ(cand.library(), (work / "candidate-src" / "solution.py").string());
  EXPECT_EQ(cand.problem_copy(), (work / "problem-src" / "problem.py").string());
  EXPECT_EQ(cand.problem(), (t / "prob" / "problem.py").string());  // the report names the originals
  EXPECT_EQ(cand.sha256().size(), 64u);

  const Contract& add = *find_contract("add");
  RunnerOptions o;
  o.worker = default_worker_path(Settings{});
  o.workdir = work.string();
  o.timeout_s = 20;
  o.load_timeout_s = 20;
  o.canary_key = 5;
  o.kernelbench = {{"problem", cand.problem()}, {"args", nlohmann::json::array()}};
  Runner runner(cand, o);
  Rng rng(1);
  const Case c = gates::single_call_case("start", add, add.nominal(), rng);
  std::string log;
  try {
    const std::vector<CaseRun> runs = runner.run({c});
    for (const auto& r : runs) log += r.log + "\n" + r.detail + "\n";
  } catch (const std::exception& e) {
    log += e.what();
  }
  log += slurp(work / "worker-0.log");
  const auto at = log.find("SHIM ");
  ASSERT_NE(at, std::string::npos) << log;
  const nlohmann::json got = nlohmann::json::parse(log.substr(at + 5, log.find('\n', at) - at - 5));
  ASSERT_FALSE(got.contains("error")) << got.dump(1);
  EXPECT_EQ(got["solution_value"], 15);
  EXPECT_EQ(got["problem_value"], 7);
  // From the copies, not the originals.
  EXPECT_EQ(got["candidate"], cand.library());
  EXPECT_EQ(got["problem"], cand.problem_copy());
  EXPECT_EQ(got["sibling_file"], (work / "candidate-src" / "sol_sibling.py").string());
  // The search path: the copies' directories, then the originals'.
  const std::vector<std::string> want = {(work / "candidate-src").string(), (work / "problem-src").string(),
                                         (t / "sol").string(), (t / "prob").string()};
  EXPECT_EQ(got["search_path"].get<std::vector<std::string>>(), want);
  // Started as the torch worker is: -u and the adapter's script, in a cwd of its own in the workdir.
  ASSERT_EQ(got["argv"].size(), 2u) << got.dump(1);
  EXPECT_EQ(got["argv"][0], "-u");
  EXPECT_EQ(got["argv"][1], (fs::path(kcv_adapters_dir(Settings{})) / "torch" / "kcv_torch_worker.py").string());
  EXPECT_EQ(fs::path(got["cwd"].get<std::string>()).parent_path(), work);
  if (geteuid() == 0) {
    EXPECT_EQ(got["uid"], 65534);
  }
  // And the worker itself extends sys.path with the plan's search path before it loads them.
  const std::string worker = slurp(fs::path(kcv_adapters_dir(Settings{})) / "torch" / "kcv_torch_worker.py");
  const auto extend = worker.find("common.extend_search_path(kb.get(\"search_path\", []))");
  ASSERT_NE(extend, std::string::npos);
  // Both paths that load them come after it: the gates' (in main) and the timing job's (called there;
  // the function is defined earlier in the file, so the text order of its body says nothing).
  EXPECT_NE(worker.find("common.load_module(kb[\"problem\"]", extend), std::string::npos);
  const auto call = worker.find("timing_job(plan, mm", worker.find("def timing_job(") + 15);
  ASSERT_NE(call, std::string::npos);
  EXPECT_LT(extend, call);
}

}  // namespace
}  // namespace kcv::test
