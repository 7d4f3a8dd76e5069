// Issue 21 items 4 and 8 on the cpu backend, through the real CLI: each gate that fails says
// whether it failed in the problem's own calling convention or only as a library op; every
// report carries its provenance; replay resolves the report's paths from the report's directory
// and refuses a candidate whose bytes changed since.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kcv/provenance.hpp"
#include "kcv/report.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = KCV_SOURCE_DIR;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const nlohmann::json& gate(const nlohmann::json& report, const std::string& id) {
  for (const auto& g : report["gates"])
    if (g["id"] == id) return g;
  throw std::runtime_error("no gate " + id);
}

// FIPS 180-2 appendix B test vectors, and a file's hash equal to its bytes' hash.
TEST(Provenance, TheMachineSideHasTheBackendsOwnFields) {
  // The backend's part (Backend::provenance) is merged in: on cuda gpu, driver and cuda are
  // always there (null where this machine has none, never a guess); cpu adds nothing.
  const nlohmann::json cuda = machine_provenance("cuda"), cpu = machine_provenance("cpu");
  for (const char* key : {"kcv_version", "kcv_commit", "host", "backend"}) {
    EXPECT_TRUE(cuda.contains(key)) << key;
    EXPECT_TRUE(cpu.contains(key)) << key;
  }
  EXPECT_EQ(cuda.at("backend"), "cuda");
  for (const char* key : {"gpu", "driver", "cuda"}) {
    ASSERT_TRUE(cuda.contains(key)) << cuda.dump();
    EXPECT_TRUE(cuda.at(key).is_null() || cuda.at(key).is_string()) << cuda.dump();
    EXPECT_FALSE(cpu.contains(key)) << cpu.dump();
  }
  EXPECT_EQ(machine_provenance("tpu").at("backend"), "tpu");  // a report of a setup error names what was asked
}

// The driver version from /proc/driver/nvidia/version's first line, in both wordings: the open
// kernel module's has "for x86_64" after "Kernel Module" (an H100's reports said driver "for").
TEST(Provenance, TheDriverVersionIsReadFromEitherModulesLine) {
  EXPECT_EQ(nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"),
            "550.54.15");
  EXPECT_EQ(nvidia_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
                                  "(dvs-builder@U16-I3-B03-4-3)  Thu Sep 25 18:57:00 UTC 2025"),
            "580.95.05");
  EXPECT_EQ(nvidia_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06\n"), "570.124.06");
  for (const char* none : {"", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64", "GCC version:  gcc 12.2.0",
                           "NVRM version: 1. 2 .3 12: x86_64"})
    EXPECT_TRUE(nvidia_driver_version(none).is_null()) << none;
}

TEST(Provenance, Sha256MatchesTheStandardsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  test::TempDir dir;
  // 55, 56 and 64 bytes: the padding's three cases (one block, a second block, a full block).
  for (std::size_t n : {55, 56, 63, 64, 65, 200000}) {
    std::string bytes(n, '\0');
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7 + 3);
    const std::string f = dir.file("b" + std::to_string(n), bytes);
    EXPECT_EQ(sha256_file(f), sha256_hex(bytes)) << n;
  }
  EXPECT_EQ(sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_THROW(sha256_file(dir.path() + "/missing"), SetupError);
}

// Item 4: layout failing on strided views and concurrency failing with two callers at once are
// library-op failures; a tail bug in the shapes gate fails in the problem's own convention.
TEST(Provenance, AFailingGateSaysWhetherItFailedInTheProblemsOwnConvention) {
  test::TempDir dir;
  std::string out;
  const std::string strides = dir.path() + "/strides.json";
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", kSrc + "/controls/cpu/softmax/softmax_ignores_strides.c",
                           "--gates", "layout,numerics", "--seed", "3", "--json", strides},
                          out),
            1)
      << out;
  const nlohmann::json s = read_json(strides);
  ASSERT_EQ(gate(s, "layout")["verdict"], "FAIL") << s.dump();
  EXPECT_EQ(gate(s, "layout")["convention"], "library") << gate(s, "layout").dump();
  for (const auto& f : gate(s, "layout")["failing_cases"]) EXPECT_EQ(f["convention"], "library") << f.dump();
  EXPECT_FALSE(gate(s, "numerics").contains("convention"));  // passed: nothing to say
  EXPECT_FALSE(report_from_json(s).gates[8].fails_own_convention());
  EXPECT_NE(out.find("fails in the problem's own calling convention: none; only as a library op: layout\n"),
            std::string::npos) << out;

  const std::string scratch = dir.path() + "/scratch.json";
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", kSrc + "/controls/cpu/softmax/softmax_shared_scratch.c",
                           "--gates", "concurrency", "--seed", "3", "--json", scratch},
                          out),
            1)
      << out;
  EXPECT_EQ(gate(read_json(scratch), "concurrency")["convention"], "library");

  const std::string tail = dir.path() + "/tail.json";
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", kSrc + "/controls/cpu/softmax/softmax_drops_tail.c",
                           "--gates", "shapes", "--seed", "3", "--json", tail},
                          out),
            1)
      << out;
  const nlohmann::json t = read_json(tail);
  EXPECT_EQ(gate(t, "shapes")["convention"], "own") << gate(t, "shapes").dump();
  EXPECT_EQ(gate(t, "shapes")["failing_cases"][0]["convention"], "own");
  EXPECT_TRUE(report_from_json(t).gates[1].fails_own_convention());
  EXPECT_NE(out.find("fails in the problem's own calling convention: shapes; only as a library op: none\n"),
            std::string::npos) << out;
}

// The rule itself, case by case (gate.hpp, library_convention).
TEST(Provenance, LibraryConventionIsAStridedViewAWriterOnTheCallersStreamOrTwoCallers) {
  Case c;
  c.calls.emplace_back();
  c.calls[0].inputs.push_back(HostTensor::zeros(DType::f32, {3, 5}));
  EXPECT_FALSE(library_convention(c));
  c.calls[0].null_stream = true;
  c.calls[0].exact_buffers = true;
  c.calls[0].reuse_buffers_of = -1;
  c.calls[0].background_load = true;
  EXPECT_FALSE(library_convention(c));  // the default stream, production buffers: the problem's own
  c.calls[0].writer_kernel = true;
  EXPECT_FALSE(library_convention(c));  // the writer on the default stream too: still its own
  c.calls[0].null_stream = false;
  EXPECT_TRUE(library_convention(c));   // the caller's non-default stream
  c.calls[0].writer_kernel = false;
  c.calls[0].concurrent_with_next = true;
  EXPECT_TRUE(library_convention(c));   // two callers at once
  c.calls[0].concurrent_with_next = false;
  c.calls[0].inputs[0] = c.calls[0].inputs[0].relayout({1, 3}, 0, std::byte{0});
  EXPECT_TRUE(library_convention(c));   // a transposed view
  c.calls[0].inputs[0] = HostTensor::zeros(DType::f32, {3, 5}).relayout({5, 1}, 1, std::byte{0});
  EXPECT_TRUE(library_convention(c));   // an offset view
}

// Item 8: provenance in the JSON and the JUnit, also for a setup error.
TEST(Provenance, EveryReportCarriesItsProvenance) {
  test::TempDir dir;
  const std::string cand = dir.path() + "/ok.c";
  fs::copy_file(kSrc + "/controls/cpu/softmax/softmax_ok.c", cand);
  const std::string json = dir.path() + "/r.json", junit = dir.path() + "/r.xml";
  std::string out;
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", cand, "--gates", "numerics", "--seed", "9", "--json",
                           json, "--junit", junit},
                          out),
            0)
      << out;
  const nlohmann::json p = read_json(json)["provenance"];
  ASSERT_TRUE(p.is_object()) << read_json(json).dump();
  EXPECT_EQ(p["candidate_sha256"], sha256_file(cand));
  EXPECT_EQ(p["candidate_path"], fs::path(cand).lexically_normal().string());
  EXPECT_EQ(p["kcv_version"], kcv_version());
  EXPECT_EQ(p["kcv_commit"], kcv_commit());
  EXPECT_NE(std::string(kcv_commit()), "");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(p["host"], host);
  EXPECT_EQ(p["backend"], "cpu");
  EXPECT_EQ(p["paths_from_report"]["candidate"], "ok.c");
  std::ifstream xin(junit);
  const std::string xml((std::istreambuf_iterator<char>(xin)), {});
  EXPECT_NE(xml.find("<property name=\"provenance.candidate_sha256\" value=\"" + sha256_file(cand) + "\"/>"),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("<property name=\"provenance.kcv_commit\" value=\"" + std::string(kcv_commit()) + "\"/>"),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("<property name=\"provenance.host\" value=\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find("paths_from_report"), std::string::npos) << xml;  // the JSON's, not the XML's

  // A setup error's record names them too.
  const std::string broken = dir.file("broken.c", "int kcv_run( {");
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", broken, "--json", json, "--junit", junit}, out), 2);
  EXPECT_EQ(read_json(json)["provenance"]["candidate_sha256"], sha256_file(broken));
  std::ifstream xin2(junit);
  const std::string xml2((std::istreambuf_iterator<char>(xin2)), {});
  EXPECT_NE(xml2.find("provenance.candidate_sha256"), std::string::npos) << xml2;
}

// Item 8: replay finds the candidate relative to the report (from any directory), refuses it once
// its bytes changed, and with --allow-changed runs it with a loud warning.
TEST(Provenance, ReplayResolvesFromTheReportAndRefusesAChangedCandidate) {
  test::TempDir dir;
  fs::create_directories(dir.path() + "/work/reports");
  const std::string cand = dir.path() + "/work/tail.c";
  fs::copy_file(kSrc + "/controls/cpu/softmax/softmax_drops_tail.c", cand);
  std::string out;
  // Verify from work/ with a relative candidate path and the report in work/reports/.
  const std::string cmd = "cd " + dir.path() + "/work && " + test::kcv_binary() +
                          " verify --op softmax --candidate tail.c --gates shapes --seed 4 --json reports/r.json";
  ASSERT_EQ(WEXITSTATUS(std::system((cmd + " > /dev/null 2>&1").c_str())), 1);
  const std::string json = dir.path() + "/work/reports/r.json";
  const nlohmann::json j = read_json(json);
  EXPECT_EQ(j["candidate"], "tail.c");
  EXPECT_EQ(j["provenance"]["paths_from_report"]["candidate"], "../tail.c");
  const std::string failing = std::to_string(j["gates"][1]["failing_case"].get<int64_t>());

  // Moved together to another place, replayed from elsewhere: found beside the report.
  fs::rename(dir.path() + "/work", dir.path() + "/moved");
  const std::string moved = dir.path() + "/moved/reports/r.json";
  EXPECT_EQ(test::run_kcv({"replay", moved, "--gate", "shapes", "--case", failing}, out), 1) << out;
  EXPECT_NE(out.find("FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("moved/tail.c"), std::string::npos) << out;

  // One byte more: refused, exit 2, naming both hashes; --allow-changed replays with a warning.
  { std::ofstream(dir.path() + "/moved/tail.c", std::ios::app) << "\n"; }
  EXPECT_EQ(test::run_kcv({"replay", moved, "--gate", "shapes", "--case", failing}, out), 2) << out;
  EXPECT_NE(out.find("changed since the report"), std::string::npos) << out;
  EXPECT_NE(out.find(j["provenance"]["candidate_sha256"].get<std::string>()), std::string::npos) << out;
  EXPECT_EQ(test::run_kcv({"replay", moved, "--gate", "shapes", "--case", failing, "--allow-changed"}, out), 1) << out;
  EXPECT_NE(out.find("WARNING"), std::string::npos) << out;

  // Neither beside the report nor where it was: a setup error that says where it looked.
  fs::remove(dir.path() + "/moved/tail.c");
  EXPECT_EQ(test::run_kcv({"replay", moved, "--gate", "shapes", "--case", failing}, out), 2) << out;
  EXPECT_NE(out.find("not found (tried"), std::string::npos) << out;
}

// Item 8: `kcv replay OUT --key K --gate G --case I` replays a pair's case straight from the
// corpus journal (OUT or OUT/journal.jsonl), the first result of the key as the summary counts it.
TEST(Provenance, ReplaysACorpusPairFromItsJournal) {
  test::TempDir dir;
  const std::string out = dir.path() + "/out";
  fs::create_directories(out);
  fs::create_directories(dir.path() + "/corpus/x");
  const std::string cand = dir.path() + "/corpus/x/tail.c";
  fs::copy_file(kSrc + "/controls/cpu/softmax/softmax_drops_tail.c", cand);
  std::string text;
  ASSERT_EQ(test::run_kcv({"verify", "--op", "softmax", "--candidate", cand, "--gates", "shapes", "--seed", "8", "--json",
                           out + "/r.json"},
                          text),
            1)
      << text;
  nlohmann::json report = read_json(out + "/r.json");
  fs::remove(out + "/r.json");
  const std::string failing = std::to_string(report["gates"][1]["failing_case"].get<int64_t>());
  nlohmann::json passing = report;
  passing["gates"][1]["seed"] = "1";  // a later record of the same key: not the one that counts
  auto result = [](const std::string& key, const std::string& status, const nlohmann::json& r) {
    return nlohmann::json{{"kind", "result"}, {"key", key}, {"status", status}, {"report", r},
                          {"error", r.is_null() ? "solution does not build" : ""}};
  };
  {
    std::ofstream j(out + "/journal.jsonl");
    j << nlohmann::json{{"kind", "run"}, {"corpus", dir.path() + "/corpus"}}.dump() << "\n"
      << result("x/tail.c", "verified", report).dump() << "\n"
      << result("y/broken.c", "setup_error", nullptr).dump() << "\n"
      << result("x/tail.c", "verified", passing).dump() << "\n";
  }
  for (const std::string& where : {out, out + "/journal.jsonl"}) {
    EXPECT_EQ(test::run_kcv({"replay", where, "--key", "x/tail.c", "--gate", "shapes", "--case", failing}, text), 1)
        << text;
    EXPECT_NE(text.find("--key x/tail.c"), std::string::npos) << text;
    EXPECT_NE(text.find("FAIL"), std::string::npos) << text;
  }
  EXPECT_EQ(test::run_kcv({"replay", out, "--key", "z/none.c", "--gate", "shapes", "--case", "0"}, text), 2);
  EXPECT_NE(text.find("no result for key 'z/none.c'"), std::string::npos) << text;
  EXPECT_EQ(test::run_kcv({"replay", out, "--key", "y/broken.c", "--gate", "shapes", "--case", "0"}, text), 2);
  EXPECT_NE(text.find("has no report to replay (status setup_error: solution does not build)"), std::string::npos)
      << text;
  EXPECT_EQ(test::run_kcv({"replay", out, "--gate", "shapes", "--case", "0"}, text), 2);
  EXPECT_NE(text.find("name the pair with --key"), std::string::npos) << text;
  EXPECT_EQ(test::run_kcv({"replay", dir.path() + "/nothing", "--key", "x", "--gate", "shapes", "--case", "0"}, text), 2);
  EXPECT_NE(text.find("no corpus journal at"), std::string::npos) << text;
}

}  // namespace
}  // namespace kcv
