// The build cache (issue 24 item 1, docs/kernelbench.md "Build cache"): a solution's extension
// builds, stored by kcv under a key it computes and checked before a later verification of the same
// solution imports them. What the worker lists is never trusted: symlinks, paths outside its
// extensions directory and tampered entries are refused; the cache is kcv's alone (root, 0700).
#include <gtest/gtest.h>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"
#include "kcv/kernelbench/build_cache.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";
const std::string kCallKey = std::string(64, 'a');
const std::string kOtherCallKey = std::string(64, 'b');

/// An extensions directory as a worker leaves it: two builds and the builds.jsonl naming them.
std::string fake_extensions(const TempDir& tmp, const std::string& rel = "ext") {
  const std::string ext = tmp / rel;
  write_file(ext + "/first/first.so", std::string(3000, '\x11') + "first");
  write_file(ext + "/second/second.so", std::string(5000, '\x22') + "second");
  write_file(ext + "/builds.jsonl",
             nlohmann::json{{"name", "first"}, {"call_key", kCallKey}, {"so", ext + "/first/first.so"}}.dump() + "\n" +
                 nlohmann::json{{"name", "second"}, {"call_key", kOtherCallKey}, {"so", ext + "/second/second.so"}}.dump() +
                 "\n");
  return ext;
}

void append_line(const std::string& ext, const nlohmann::json& line) {
  std::ofstream(ext + "/builds.jsonl", std::ios::app) << line.dump() << "\n";
}

std::string entry_of(const std::string& cache, const std::string& key) {
  return cache + "/" + key.substr(0, 2) + "/" + key;
}

const std::string kKey = BuildCache::key({{"solution_sha256", "x"}}, "plain");

TEST(BuildCache, StoresWhatTheWorkerBuiltAndLoadsItBack) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string ext = fake_extensions(tmp);
  BuildCache cache(tmp / "cache");
  std::string why;
  EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 2) << why;
  struct stat st {};
  ASSERT_EQ(lstat(entry_of(cache.dir(), kKey).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(lstat((entry_of(cache.dir(), kKey) + "/0.so").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const auto plan = cache.load(kKey, tmp / "work/build-cache/plain", &why);
  ASSERT_TRUE(plan.has_value()) << why;
  ASSERT_EQ((*plan)["files"].size(), 2u) << plan->dump();
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& f : (*plan)["files"]) by_name[f["name"].get<std::string>()] = f;
  EXPECT_EQ(by_name["first"]["call_key"], kCallKey);
  EXPECT_EQ(by_name["second"]["call_key"], kOtherCallKey);
  EXPECT_EQ(read_text(by_name["first"]["file"]), read_text(ext + "/first/first.so"));
  EXPECT_EQ(read_text(by_name["second"]["file"]), read_text(ext + "/second/second.so"));
  EXPECT_EQ(fs::path(by_name["first"]["file"].get<std::string>()).filename(), "first.so");
  ASSERT_EQ(stat(by_name["first"]["file"].get<std::string>().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "the worker (uid 65534) reads the copy";
  // Another key (another solution, variant or compiler) finds nothing.
  EXPECT_FALSE(cache.load(BuildCache::key({{"solution_sha256", "y"}}, "plain"), tmp / "w2", &why).has_value());
  EXPECT_EQ(why, "missing");
  EXPECT_NE(BuildCache::key({{"solution_sha256", "x"}}, "asan"), kKey);
  const auto s = cache.summary();
  EXPECT_EQ(s["hits"], 1);
  EXPECT_EQ(s["stored"], 1);
  EXPECT_EQ(s["rejected"], 0);
}

TEST(BuildCache, AChangedByteIsRejectedCountedAndWrittenAgain) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string ext = fake_extensions(tmp);
  BuildCache cache(tmp / "cache");
  ASSERT_EQ(cache.store(kKey, "plain", ext), 2);
  const std::string so = entry_of(cache.dir(), kKey) + "/1.so";
  {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  std::string why;
  EXPECT_FALSE(cache.load(kKey, tmp / "work/build-cache/plain", &why).has_value());
  EXPECT_EQ(why, "1.so does not match its SHA-256");
  EXPECT_FALSE(fs::exists(tmp / "work/build-cache/plain")) << "nothing of a rejected entry is handed over";
  EXPECT_EQ(cache.summary()["rejected"], 1);
  // The verification then builds, and its builds replace the rejected entry.
  EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 2) << why;
  EXPECT_TRUE(cache.load(kKey, tmp / "work2", &why).has_value()) << why;
  EXPECT_EQ(cache.summary()["stored"], 2);
}

TEST(BuildCache, AnEntryOthersCouldReachOrAnotherUidOwnsIsRejected) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string ext = fake_extensions(tmp);
  BuildCache cache(tmp / "cache");
  ASSERT_EQ(cache.store(kKey, "plain", ext), 2);
  const std::string entry = entry_of(cache.dir(), kKey);
  std::string why;
  chmod(entry.c_str(), 0755);
  EXPECT_FALSE(cache.load(kKey, tmp / "w1", &why).has_value());
  EXPECT_EQ(why, "not a directory of kcv's uid closed to others");
  chmod(entry.c_str(), 0700);
  ASSERT_EQ(chown((entry + "/0.so").c_str(), 65534, 65534), 0);
  EXPECT_FALSE(cache.load(kKey, tmp / "w2", &why).has_value());
  EXPECT_EQ(why, "0.so is not a file of kcv's uid closed to others");
  ASSERT_EQ(chown((entry + "/0.so").c_str(), 0, 0), 0);
  // A header that names another key (an entry moved under this one's name).
  const std::string other = BuildCache::key({{"solution_sha256", "other"}}, "plain");
  ASSERT_EQ(cache.store(other, "plain", ext), 2);
  fs::remove_all(entry);
  fs::rename(entry_of(cache.dir(), other), entry);
  EXPECT_FALSE(cache.load(kKey, tmp / "w3", &why).has_value());
  EXPECT_EQ(why, "header is not this key's");
  EXPECT_EQ(cache.summary()["rejected"], 3);
}

TEST(BuildCache, ASymlinkTheWorkerPlantedIsNeverFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  BuildCache cache(tmp / "cache");
  std::string why;
  // The .so itself a link to /etc/passwd.
  std::string ext = fake_extensions(tmp, "ext1");
  fs::create_symlink("/etc/passwd", ext + "/first/passwd.so");
  append_line(ext, {{"name", "third"}, {"call_key", kCallKey}, {"so", ext + "/first/passwd.so"}});
  EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 0);
  EXPECT_NE(why.find("is not a regular file reached without a symlink"), std::string::npos) << why;
  // A directory on the way a link to /etc.
  ext = fake_extensions(tmp, "ext2");
  fs::create_directory_symlink("/etc", ext + "/etc");
  append_line(ext, {{"name", "third"}, {"call_key", kCallKey}, {"so", ext + "/etc/passwd"}});
  EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 0);
  EXPECT_NE(why.find("is not a regular file reached without a symlink"), std::string::npos) << why;
  // builds.jsonl itself a link.
  ext = fake_extensions(tmp, "ext3");
  fs::remove(ext + "/builds.jsonl");
  fs::create_symlink(tmp / "ext1/builds.jsonl", ext + "/builds.jsonl");
  EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 0);
  EXPECT_FALSE(fs::exists(entry_of(cache.dir(), kKey))) << "nothing stored";
  EXPECT_EQ(cache.summary()["refused"], 2);
  EXPECT_EQ(cache.summary()["stored"], 0);
}

TEST(BuildCache, APathOutsideTheExtensionsDirectoryIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  BuildCache cache(tmp / "cache");
  write_file(tmp / "beside.so", "not the worker's to name");
  for (const std::string& so : {std::string("/etc/passwd"), tmp / "ext/../beside.so", std::string("beside.so"),
                                tmp / "ext"}) {
    const std::string ext = fake_extensions(tmp);
    append_line(ext, {{"name", "third"}, {"call_key", kCallKey}, {"so", so}});
    std::string why;
    EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 0) << so;
    EXPECT_NE(why.find("is not inside"), std::string::npos) << so << ": " << why;
  }
  // A line that is not a build (a name torch would not take, a call key that is not one).
  for (const nlohmann::json& bad : {nlohmann::json{{"name", "../x"}, {"call_key", kCallKey}, {"so", tmp / "ext/x.so"}},
                                    nlohmann::json{{"name", "x"}, {"call_key", "short"}, {"so", tmp / "ext/x.so"}}}) {
    const std::string ext = fake_extensions(tmp);
    append_line(ext, bad);
    std::string why;
    EXPECT_EQ(cache.store(kKey, "plain", ext, &why), 0);
    EXPECT_EQ(why, "builds.jsonl has a line that is not a build");
  }
  EXPECT_FALSE(fs::exists(entry_of(cache.dir(), kKey)));
}

TEST(BuildCache, TwoWritersOfOneEntryLeaveOneWholeEntry) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string ext = fake_extensions(tmp);
  BuildCache a(tmp / "cache"), b(tmp / "cache");
  std::string why;
  EXPECT_EQ(a.store(kKey, "plain", ext, &why), 2) << why;
  EXPECT_EQ(b.store(kKey, "plain", ext, &why), 0) << "the second rename loses, and that is no failure";
  EXPECT_EQ(b.summary()["write_failed"], 0);
  EXPECT_TRUE(b.load(kKey, tmp / "w", &why).has_value()) << why;
  int temporaries = 0;
  for (const auto& e : fs::directory_iterator(tmp / ("cache/" + kKey.substr(0, 2))))
    temporaries += e.path().filename().string()[0] == '.';
  EXPECT_EQ(temporaries, 0);
}

TEST(BuildCache, ADirectoryAnotherUidOwnsIsRefusedAndAnOpenOneClosed) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  TempDir tmp;
  fs::create_directories(tmp / "theirs");
  ASSERT_EQ(chown((tmp / "theirs").c_str(), 65534, 65534), 0);
  try {
    BuildCache c(tmp / "theirs");
    ADD_FAILURE() << "another uid's directory was taken";
  } catch (const SetupError& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to uid 65534"), std::string::npos) << e.what();
  }
  fs::create_directories(tmp / "open");
  chmod((tmp / "open").c_str(), 0755);
  BuildCache c(tmp / "open");
  struct stat st {};
  ASSERT_EQ(stat((tmp / "open").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

/// Runs kcv as uid 65534 (not root); exit status and stderr.
CliResult run_kcv_as_nobody(const std::vector<std::string>& args, const TempDir& tmp) {
  std::vector<std::string> argv = {kcv_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const std::string err = tmp / "nobody.stderr";
  const pid_t pid = fork();
  if (pid == 0) {
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(e, 2);
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(126);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, "", read_text(err)};
}

TEST(BuildCache, NotRootIsRefused) {
  if (geteuid() != 0) {
    // kcv is not root here: refused with its reason, and the CLI says so (exit 2).
    EXPECT_EQ(build_cache_refusal().rfind("kcv is not root", 0), 0u) << build_cache_refusal();
    EXPECT_THROW(BuildCache(fs::temp_directory_path() / "kcv-build-cache-never"), SetupError);
    return;
  }
  EXPECT_EQ(build_cache_refusal(), "");
  TempDir tmp;
  const CliResult r = run_kcv_as_nobody({"verify", "--kernelbench", kRowsum + "/problem.py",
                                         kRowsum + "/solution_ext_ok.py", "--build-cache", tmp / "cache"}, tmp);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("--build-cache '" + tmp / "cache" + "': kcv is not root"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "cache"));
  // Only for a KernelBench pair.
  const CliResult abi = run_kcv({"verify", "--op", "add", "--candidate",
                                 std::string(KCV_SOURCE_DIR) + "/controls/cpu/add/add_ok.c", "--build-cache", tmp / "c"},
                                "", tmp.path());
  EXPECT_EQ(abi.rc, 2);
  EXPECT_NE(abi.err.find("--build-cache needs a KernelBench pair"), std::string::npos) << abi.err;
}

TEST(BuildCache, EveryPairOfARunGetsTheBuildCacheOrTheSummarySaysWhyNot) {
  TempDir tmp;
  const std::string d = tmp / "corpus", out = tmp / "out", log = tmp / "args.log";
  add_pair(d, "a", "solution.py", "pass");
  add_pair(d, "b", "solution.py", "pass");
  CorpusOptions o = stub_options(d, out, stub_verifier(tmp.path()), 1);
  setenv("FAKE_ARGS_LOG", log.c_str(), 1);
  const CorpusRunSummary s = run_corpus(o);
  o.out = tmp / "out-off";
  o.build_cache = "off";
  const CorpusRunSummary off = run_corpus(o);
  unsetenv("FAKE_ARGS_LOG");
  std::istringstream lines(read_text(log));
  int with = 0, n = 0;
  for (std::string line; std::getline(lines, line); ++n)
    with += line.find(" --build-cache " + out + "/build-cache") != std::string::npos;
  EXPECT_EQ(n, 4);
  EXPECT_EQ(with, geteuid() == 0 ? 2 : 0);
  EXPECT_EQ(off.build_cache, "off (--build-cache off)");
  if (geteuid() == 0) {
    EXPECT_EQ(s.build_cache.rfind(out + "/build-cache: 0 entries used", 0), 0u) << s.build_cache;
  } else {
    EXPECT_EQ(s.build_cache.rfind("off: kcv is not root", 0), 0u) << s.build_cache;
  }
  const auto records = read_journal(out + "/journal.jsonl");
  EXPECT_EQ(records[0]["build_cache"], geteuid() == 0 ? nlohmann::json(out + "/build-cache") : nlohmann::json(s.build_cache));
}

/// Whether torch's interpreter is there to build with (else the real tests skip, saying so).
bool have_torch() {
  return std::system((torch_python() + " -c 'import torch, torch.utils.cpp_extension' 2>/dev/null").c_str()) == 0;
}

/// The build.ninja files under a kept workdir's extensions directories (torch writes one per build).
int ninja_files(const std::string& workdir) {
  int n = 0;
  std::error_code ec;
  for (const char* d : {"torch-extensions", "torch-extensions-asan"})
    for (fs::recursive_directory_iterator it(workdir + "/" + d, ec), end; !ec && it != end; it.increment(ec))
      n += it->path().filename() == "build.ninja";
  return n;
}

/// Every worker log of a kept workdir, concatenated.
std::string worker_logs(const std::string& workdir) {
  std::string all;
  for (const auto& e : fs::directory_iterator(workdir))
    if (e.path().filename().string().rfind("worker-", 0) == 0 && e.path().extension() == ".log") all += read_text(e.path());
  return all;
}

/// The verdict and every gate's, of a report.
std::string verdicts_of(const nlohmann::json& report) {
  std::string v = report["verdict"].get<std::string>();
  for (const auto& g : report["gates"]) v += " " + g["id"].get<std::string>() + "=" + g["verdict"].get<std::string>();
  return v;
}

TEST(BuildCacheReal, ASecondVerificationImportsTheBuildsAndATamperedEntryIsRebuilt) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  if (!have_torch()) GTEST_SKIP() << torch_python() << " has no torch";
  TempDir t;
  const std::string cache = t / "cache";
  auto verify = [&](const std::string& name) {
    const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ext_ok.py",
                                 "--gates", "numerics,sanitizer", "--python", torch_python(), "--build-cache", cache,
                                 "--keep-workdir", t / name, "--json", t / (name + ".json")},
                                "", t.path());
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    return nlohmann::json::parse(read_text(t / (name + ".json")));
  };
  // First: nothing cached; the plain build and the sanitizer's instrumented one are stored.
  const auto r1 = verify("w1");
  const auto& b1 = r1["kernelbench"]["build_cache"];
  EXPECT_EQ(b1["variants"]["plain"]["entry"], "missing") << b1.dump();
  EXPECT_EQ(b1["variants"]["plain"]["stored_files"], 1) << b1.dump();
  EXPECT_EQ(b1["variants"]["asan"]["stored_files"], 1) << b1.dump();
  EXPECT_EQ(ninja_files(t / "w1"), 2);

  // Second: both imported; torch wrote no build file, so neither ninja nor a compiler ran.
  const auto r2 = verify("w2");
  const auto& b2 = r2["kernelbench"]["build_cache"];
  EXPECT_EQ(b2["variants"]["plain"]["entry"], "hit") << b2.dump();
  EXPECT_EQ(b2["variants"]["asan"]["entry"], "hit") << b2.dump();
  EXPECT_EQ(b2["hits"], 2);
  EXPECT_EQ(ninja_files(t / "w2"), 0);
  EXPECT_NE(worker_logs(t / "w2").find("kcv: extension kcv_control_rowsum_ok loaded from the build cache"),
            std::string::npos);
  EXPECT_LT(r2["kernelbench"]["compile_seconds"].get<double>(), r1["kernelbench"]["compile_seconds"].get<double>() / 2)
      << "the first worker's load: a build, then an import";
  EXPECT_EQ(verdicts_of(r2), verdicts_of(r1));

  // One byte of the cached plain .so changed: rejected, rebuilt, stored again; the verdict the same.
  const std::string key = b1["variants"]["plain"]["key"].get<std::string>();
  {
    std::fstream so(entry_of(cache, key) + "/0.so", std::ios::in | std::ios::out | std::ios::binary);
    so.seekg(4096);
    const char was = static_cast<char>(so.get());
    so.seekp(4096);
    so.put(static_cast<char>(~was));
  }
  const auto r3 = verify("w3");
  const auto& b3 = r3["kernelbench"]["build_cache"];
  EXPECT_EQ(b3["variants"]["plain"]["entry"], "rejected: 0.so does not match its SHA-256") << b3.dump();
  EXPECT_EQ(b3["variants"]["plain"]["stored_files"], 1) << b3.dump();
  EXPECT_EQ(b3["variants"]["asan"]["entry"], "hit") << b3.dump();
  EXPECT_EQ(b3["rejected"], 1);
  EXPECT_EQ(ninja_files(t / "w3"), 1) << "the plain build again, the sanitizer's imported";
  EXPECT_EQ(verdicts_of(r3), verdicts_of(r1));
  BuildCache reread(cache);
  std::string why;
  EXPECT_TRUE(reread.load(key, t / "reread", &why).has_value()) << why;
}

TEST(BuildCacheReal, ABuildsListTheSolutionPlantedStoresNothingAndLeavesItsVerdict) {
  if (geteuid() != 0) GTEST_SKIP() << "the build cache is used only when kcv runs as root";
  if (!have_torch()) GTEST_SKIP() << torch_python() << " has no torch";
  TempDir t;
  const std::string solution = kRowsum + "/solution_plants_build_manifest.py";
  auto verify = [&](std::vector<std::string> extra, const std::string& json) {
    std::vector<std::string> args = {"verify", "--kernelbench", kRowsum + "/problem.py", solution, "--gates",
                                     "numerics,coverage", "--python", torch_python(), "--json", json};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run_kcv(args, "", t.path());
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    return nlohmann::json::parse(read_text(json));
  };
  const auto with = verify({"--build-cache", t / "cache", "--keep-workdir", t / "w"}, t / "with.json");
  const auto without = verify({}, t / "without.json");
  EXPECT_EQ(verdicts_of(with), verdicts_of(without));
  EXPECT_EQ(with["verdict"], "PASS");
  const auto& b = with["kernelbench"]["build_cache"];
  EXPECT_EQ(b["variants"]["plain"]["stored_files"], 0) << b.dump();
  EXPECT_NE(b["variants"]["plain"].value("not_stored", "").find("/etc/passwd is not inside"), std::string::npos)
      << b.dump();
  EXPECT_EQ(b["stored"], 0);
  EXPECT_GE(b["refused"], 1);
  // The planted list was there, and nothing of it reached the cache.
  EXPECT_NE(read_text(t / "w/torch-extensions/builds.jsonl").find("/etc/passwd"), std::string::npos);
  int entries = 0;
  for (fs::recursive_directory_iterator it(t / "cache"), end; it != end; ++it) entries += it->is_regular_file();
  EXPECT_EQ(entries, 0);
}

}  // namespace
}  // namespace kcv::corpus_test
