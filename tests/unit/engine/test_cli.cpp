// The CLI's contract with its users: exit codes 0/1/2, one-line reasons, reports that parse,
// replay that reproduces a recorded case.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "kcv/report.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

const std::string kSrc = KCV_SOURCE_DIR;

TEST(Cli, UsageAndSetupErrorsExitTwoWithAReason) {
  test::TempDir dir;
  const std::string ok = kSrc + "/controls/cpu/softmax/softmax_ok.c";
  struct Bad {
    std::vector<std::string> args;
    std::string reason;
  };
  const std::vector<Bad> bad = {
      {{"verify", "--op", "nosuchop", "--candidate", ok}, "unknown op"},
      {{"verify", "--op", "softmax", "--candidate", dir.path() + "/missing.c"}, "does not exist"},
      {{"verify", "--op", "softmax", "--candidate", dir.file("broken.c", "int kcv_run( {")}, "does not compile"},
      {{"verify", "--op", "softmax", "--candidate", dir.file("nosym.c", "int f(void){return 0;}")}, "kcv_run"},
      {{"verify", "--op", "softmax", "--candidate",
        dir.file("abi.c", "#include <kcv/abi.h>\nKCV_EXPORT const int32_t kcv_abi_version = 99;\n"
                          "int kcv_run(const kcv_call* c) { return 0; }\n")},
       "ABI version"},
      {{"verify", "--op", "softmax", "--candidate", ok, "--gates", "numerics,nosuchgate"}, "unknown gate"},
      {{"verify", "--op", "softmax", "--candidate", ok, "--backend", "tpu"}, "unknown backend"},
      {{"verify", "--op", "softmax", "--candidate", ok, "--keep-workdir", dir.path()}, "not an empty directory"},
      {{"verify", "--op", "softmax", "--candidate", dir.file("x.txt", "hello")}, ".so"},
      {{"verify", "--op", "softmax"}, "candidate"},
      {{"contracts", "show", "nosuchop"}, "unknown op"},
      {{"replay", dir.file("r.json", "{}"), "--gate", "numerics", "--case", "0"}, "report"},
  };
  for (const auto& b : bad) {
    std::string out;
    EXPECT_EQ(test::run_kcv(b.args, out), 2) << b.args.back() << "\n" << out;
    EXPECT_NE(out.find(b.reason), std::string::npos) << "expected '" << b.reason << "' in: " << out;
    // A failed build keeps its workdir for the build log it names: not left behind by the test.
    const std::string key = "(whole compiler output: ";
    if (const std::size_t at = out.find(key); at != std::string::npos) {
      std::error_code ec;
      std::filesystem::remove_all(
          std::filesystem::path(out.substr(at + key.size(), out.find(')', at) - at - key.size())).parent_path(), ec);
    }
  }
}

TEST(Cli, KeepWorkdirKeepsTheWorkerLogs) {
  test::TempDir dir;
  const std::string keep = dir.path() + "/work";
  std::string out;
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", kSrc + "/controls/cpu/softmax/softmax_ok.c",
                           "--gates", "numerics", "--keep-workdir", keep, "--quiet"}, out), 0) << out;
  EXPECT_TRUE(std::filesystem::exists(keep + "/worker-0.log")) << out;
}

// scripts/verify_controls.py --share-builds relies on this: a kept workdir holds the library kcv
// built (candidate.so), and that library, copied out, verifies as a candidate of its own.
TEST(Cli, KeepWorkdirKeepsTheBuiltLibraryWhichVerifiesAsACandidate) {
  test::TempDir dir;
  const std::string keep = dir.path() + "/work", lib_dir = dir.path() + "/lib";
  std::string out;
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", kSrc + "/controls/cpu/softmax/softmax_ok.c",
                           "--gates", "numerics", "--keep-workdir", keep, "--quiet"}, out), 0) << out;
  ASSERT_TRUE(std::filesystem::is_regular_file(keep + "/candidate.so")) << out;
  std::filesystem::create_directories(lib_dir);
  std::filesystem::copy_file(keep + "/candidate.so", lib_dir + "/softmax_ok.so");
  out.clear();
  EXPECT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", lib_dir + "/softmax_ok.so", "--gates",
                           "numerics", "--quiet"}, out), 0) << out;
}

TEST(Cli, ContractsListAndShow) {
  std::string out;
  ASSERT_EQ(test::run_kcv({"contracts"}, out), 0);
  for (const char* op : {"add", "softmax", "matmul", "layernorm"}) EXPECT_NE(out.find(op), std::string::npos) << op;
  out.clear();
  ASSERT_EQ(test::run_kcv({"contracts", "show", "layernorm"}, out), 0);
  for (const char* s : {"x", "w", "b", "eps", "f32", "nominal", "c = "}) EXPECT_NE(out.find(s), std::string::npos) << s;
}

TEST(Cli, FailingCandidateExitsOneAndReplayReproducesTheCase) {
  test::TempDir dir;
  const std::string json = dir.path() + "/r.json", junit = dir.path() + "/r.xml";
  std::string out;
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", kSrc + "/controls/cpu/softmax/softmax_drops_tail.c",
                           "--gates", "shapes,numerics", "--seed", "42", "--json", json, "--junit", junit},
                          out),
            1)
      << out;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  const Report r = report_from_json(j);
  EXPECT_EQ(j["schema"], "kcv.report/1");
  EXPECT_EQ(r.seed, 42u);
  ASSERT_EQ(r.gates.size(), 12u);
  const char* order[] = {"numerics", "shapes",      "values", "nonfinite", "bounds",     "inputs_intact",
                         "coverage", "determinism", "layout", "stateless", "concurrency", "sanitizer"};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(r.gates[static_cast<std::size_t>(i)].id, order[i]);
  EXPECT_EQ(r.gates[0].verdict, Verdict::pass);
  EXPECT_GT(r.gates[0].cases, 0);
  ASSERT_EQ(r.gates[1].verdict, Verdict::fail);
  ASSERT_GE(r.gates[1].failing_case, 0);
  // Every failing case listed (issue 21 item 5): in the JSON as a list, in the evidence compactly.
  ASSERT_GE(j["gates"][1]["failing_cases"].size(), 2u) << j["gates"][1].dump();
  EXPECT_EQ(j["gates"][1]["failing_cases"][0]["case"], r.gates[1].failing_case);
  EXPECT_EQ(r.gates[1].failing.size(), j["gates"][1]["failing_cases"].size());
  EXPECT_NE(r.gates[1].evidence.find("cases failed: "), std::string::npos) << r.gates[1].evidence;
  EXPECT_TRUE(j["gates"][0]["failing_cases"].empty());
  EXPECT_EQ(r.gates[2].verdict, Verdict::skipped);
  EXPECT_EQ(r.gates[2].evidence, "not selected (--gates)");

  std::string xml;
  std::ifstream xin(junit);
  xml.assign(std::istreambuf_iterator<char>(xin), {});
  EXPECT_NE(xml.find("<testcase classname=\"kcv.softmax\" name=\"shapes\""), std::string::npos);
  EXPECT_NE(xml.find("<failure"), std::string::npos);

  // Replay the failing case: same verdict, same evidence.
  out.clear();
  EXPECT_EQ(test::run_kcv({"replay", json, "--gate", "shapes", "--case", std::to_string(r.gates[1].failing_case)}, out), 1);
  const std::string evidence = r.gates[1].evidence;
  const std::string core = evidence.substr(evidence.find("): ") + 3, 60);
  EXPECT_NE(out.find(core), std::string::npos) << "replay:\n" << out << "\nrecorded:\n" << evidence;
  // A passing case replays as PASS.
  out.clear();
  EXPECT_EQ(test::run_kcv({"replay", json, "--gate", "numerics", "--case", "0"}, out), 0) << out;
}

// Issue 21 item 6: a setup error (exit 2) still leaves a record of itself in the reports asked
// for, and replay refuses that record with a reason.
TEST(Cli, SetupErrorStillWritesJsonAndJunit) {
  test::TempDir dir;
  const std::string json = dir.path() + "/r.json", junit = dir.path() + "/r.xml";
  std::string out;
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", dir.file("broken.c", "int kcv_run( {"),
                           "--seed", "5", "--json", json, "--junit", junit},
                          out),
            2)
      << out;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "kcv.report/1");
  EXPECT_EQ(j["verdict"], "ERROR");
  EXPECT_EQ(j["seed"], "5");
  EXPECT_EQ(j["op"], "softmax");
  EXPECT_NE(j["error"].get<std::string>().find("does not compile"), std::string::npos) << j.dump();
  EXPECT_TRUE(j["gates"].empty());
  std::string xml;
  std::ifstream xin(junit);
  xml.assign(std::istreambuf_iterator<char>(xin), {});
  EXPECT_NE(xml.find("name=\"setup\" time=\"0\"><error type=\"ERROR\" message=\"candidate"), std::string::npos) << xml;
  // Issue 21 item 7: the compiler's own line, and its whole output kept in build.log in the
  // workdir, which stays.
  const std::string error = j["error"];
  EXPECT_NE(error.find("broken.c:1:"), std::string::npos) << error;
  const std::string key = "(whole compiler output: ";
  const std::size_t at = error.find(key);
  ASSERT_NE(at, std::string::npos) << error;
  const std::string log = error.substr(at + key.size(), error.find(')', at) - at - key.size());
  std::string text;
  std::ifstream lin(log);
  text.assign(std::istreambuf_iterator<char>(lin), {});
  EXPECT_NE(text.find("error"), std::string::npos) << log;
  EXPECT_NE(text.find("broken.c"), std::string::npos) << text;
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(log).parent_path(), ec);
  out.clear();
  EXPECT_EQ(test::run_kcv({"replay", json, "--gate", "numerics", "--case", "0"}, out), 2);
  EXPECT_NE(out.find("records a setup error"), std::string::npos) << out;
}

// `--json -` writes the report to standard output (the table then goes to stderr); a path that is
// a symlink or not a regular file is written in place, never replaced by a rename.
TEST(Cli, JsonToStdoutAndIntoPathsThatAreNotRegularFiles) {
  test::TempDir dir;
  const std::string cand = kSrc + "/controls/cpu/softmax/softmax_ok.c";
  const std::string verify = test::kcv_binary() + " verify --op softmax --candidate " + cand + " --gates numerics --seed 3";
  std::string out;
  ASSERT_EQ(run_capture({"sh", "-c", verify + " --json - 2>/dev/null"}, out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);  // nothing but the report on stdout
  EXPECT_EQ(j["verdict"], "PASS");
  out.clear();
  ASSERT_EQ(run_capture({"sh", "-c", verify + " --json /dev/stdout 2>/dev/null"}, out), 0) << out;
  // The report followed the table on stdout, written through the device, which is still there.
  EXPECT_NE(out.find("\"schema\": \"kcv.report/1\""), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::is_symlink("/dev/stdout"));
  // A symlink to a regular file: the file gets the report, the link stays a link.
  const std::string target = dir.file("target.json", "old"), link = dir.path() + "/link.json";
  std::filesystem::create_symlink(target, link);
  out.clear();
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", cand, "--gates", "numerics", "--json", link}, out), 0)
      << out;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  std::ifstream in(target);
  EXPECT_EQ(nlohmann::json::parse(in)["schema"], "kcv.report/1");
  out.clear();
  EXPECT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", cand, "--json", "-", "--junit", "-"}, out), 2);
  EXPECT_NE(out.find("cannot both"), std::string::npos) << out;
}

TEST(Cli, SameSeedSameReport) {
  test::TempDir dir;
  std::string a, b;
  const std::string cand = kSrc + "/controls/cpu/softmax/softmax_drops_tail.c";
  test::run_kcv({"verify", "--op", "softmax", "--candidate", cand, "--gates", "shapes", "--seed", "7", "--json", dir.path() + "/a.json"}, a);
  test::run_kcv({"verify", "--op", "softmax", "--candidate", cand, "--gates", "shapes", "--seed", "7", "--json", dir.path() + "/b.json"}, b);
  std::ifstream ia(dir.path() + "/a.json"), ib(dir.path() + "/b.json");
  auto ja = nlohmann::json::parse(ia), jb = nlohmann::json::parse(ib);
  EXPECT_EQ(ja["gates"][1]["evidence"], jb["gates"][1]["evidence"]);
  EXPECT_EQ(ja["gates"][1]["seed"], jb["gates"][1]["seed"]);
}

}  // namespace
}  // namespace kcv
