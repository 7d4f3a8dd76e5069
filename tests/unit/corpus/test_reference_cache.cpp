// The reference cache (issue 24 item 1, docs/kernelbench.md "Reference cache"): a corpus run's
// pairs share one seed, so the solutions of one problem see the same cases and the float64 Model
// runs once per case; a later run (resumed, sharded) reads the answers from OUT/reference-cache;
// entries are checked before use; the directory is kcv's alone (0700, root; workers run as 65534).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <map>

#include <fmt/format.h>

#include "corpus_test_support.hpp"
#include "kcv/kernelbench/private_cache.hpp"
#include "kcv/kernelbench/reference_cache.hpp"
#include "kcv/provenance.hpp"

namespace kcv::corpus_test {
namespace {

const std::string kRowsum = std::string(KCV_SOURCE_DIR) + "/controls/torch/rowsum";

/// key -> (status, verdict, every gate's verdict) of a journal's results.
std::map<std::string, std::string> verdicts(const std::string& journal) {
  std::map<std::string, std::string> out;
  for (const auto& r : results_of(read_journal(journal))) {
    std::string v = r["status"].get<std::string>();
    if (r["report"].is_object()) {
      v += " " + r["report"]["verdict"].get<std::string>();
      for (const auto& g : r["report"]["gates"]) v += " " + g["id"].get<std::string>() + "=" + g["verdict"].get<std::string>();
    }
    out[r["key"].get<std::string>()] = v;
  }
  return out;
}

/// key -> the report's kernelbench.reference_cache (null when none).
std::map<std::string, nlohmann::json> cache_use(const std::string& journal) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& r : results_of(read_journal(journal)))
    out[r["key"].get<std::string>()] =
        r["report"].is_object() ? r["report"]["kernelbench"].value("reference_cache", nlohmann::json()) : nlohmann::json();
  return out;
}

std::string rowsum_corpus(const TempDir& tmp) {
  const std::string dir = tmp / "corpus";
  write_file(dir + "/rowsum/problem.py", read_text(kRowsum + "/problem.py"));
  // Two correct solutions and a wrong one: the wrong one's verdict must not depend on the cache.
  write_file(dir + "/rowsum/solution_a_ok.py", read_text(kRowsum + "/solution_ok.py"));
  write_file(dir + "/rowsum/solution_b_stale.py", read_text(kRowsum + "/solution_stale_output.py"));
  write_file(dir + "/rowsum/solution_c_ok.py", read_text(kRowsum + "/solution_ok.py"));
  return dir;
}

TEST(ReferenceCache, OneProblemsSolutionsComputeEachReferenceOnceAndALaterRunReadsThem) {
  if (geteuid() != 0) GTEST_SKIP() << "the reference cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string dir = rowsum_corpus(tmp);
  const std::vector<std::string> common = {"--jobs", "1", "--seed", "777", "--baseline", "kernelbench",
                                           "--python", "/usr/bin/python3"};
  auto corpus_run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"corpus", "run", dir, "--out", out};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run_kcv(args, "", tmp.path());
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    return r;
  };
  const std::string on = tmp / "on", off = tmp / "off", later = tmp / "later";
  const CliResult first = corpus_run(on, {});
  corpus_run(off, {"--reference-cache", "off"});
  // A later run (a resumed shard, another shard) with the same seed and the first run's cache.
  const CliResult third = corpus_run(later, {"--reference-cache", on + "/reference-cache"});

  // The run record holds the seed and the cache; every pair was verified under that seed.
  const auto records = read_journal(on + "/journal.jsonl");
  ASSERT_EQ(records[0]["kind"], "run");
  EXPECT_EQ(records[0]["seed"], "777");
  EXPECT_EQ(records[0]["reference_cache"], on + "/reference-cache");
  for (const auto& r : results_of(records)) EXPECT_EQ(r["report"]["seed"], "777") << r.dump();
  EXPECT_NE(first.out.find("reference cache " + on + "/reference-cache: "), std::string::npos) << first.out;

  // Same verdicts, gate by gate, with and without the cache; the wrong solution still fails.
  const auto v_on = verdicts(on + "/journal.jsonl");
  ASSERT_EQ(v_on.size(), 3u);
  EXPECT_EQ(v_on, verdicts(off + "/journal.jsonl"));
  EXPECT_EQ(v_on, verdicts(later + "/journal.jsonl"));
  EXPECT_EQ(v_on.at("rowsum/solution_b_stale.py").rfind("verified FAIL", 0), 0u) << v_on.at("rowsum/solution_b_stale.py");
  EXPECT_EQ(v_on.at("rowsum/solution_a_ok.py").rfind("verified PASS", 0), 0u) << v_on.at("rowsum/solution_a_ok.py");

  // The first pair computed (and wrote) the answers; the others only read them.
  const auto use = cache_use(on + "/journal.jsonl");
  ASSERT_TRUE(use.at("rowsum/solution_a_ok.py").is_object());
  EXPECT_GT(use.at("rowsum/solution_a_ok.py")["written"].get<int>(), 10);
  for (const char* k : {"rowsum/solution_b_stale.py", "rowsum/solution_c_ok.py"}) {
    EXPECT_EQ(use.at(k)["written"], 0) << k << ": " << use.at(k).dump();
    EXPECT_GT(use.at(k)["read"].get<int>(), 10) << k;
    EXPECT_EQ(use.at(k)["rejected"], 0) << k;
  }
  for (const auto& [k, u] : cache_use(later + "/journal.jsonl")) {
    EXPECT_EQ(u["written"], 0) << k << ": " << u.dump();
    EXPECT_GT(u["read"].get<int>(), 10) << k;
  }
  for (const auto& [k, u] : cache_use(off + "/journal.jsonl")) EXPECT_TRUE(u.is_null()) << k << ": " << u.dump();
  EXPECT_FALSE(fs::exists(off + "/reference-cache"));
  EXPECT_NE(third.out.find(" 0 computed and written, 0 rejected"), std::string::npos) << third.out;

  // kcv's alone: the directory 0700, every entry 0600, root's (a worker of uid 65534 reads none).
  struct stat st {};
  ASSERT_EQ(stat((on + "/reference-cache").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  int entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(on + "/reference-cache")) {
    ASSERT_EQ(stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << e.path();
    if (e.is_directory()) {
      EXPECT_EQ(st.st_mode & 0777, 0700u) << e.path();
    }
    if (e.is_regular_file()) {
      ++entries;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << e.path();
      EXPECT_EQ(e.path().extension(), ".ref") << e.path();   // no temporary file left
    }
  }
  EXPECT_EQ(entries, use.at("rowsum/solution_a_ok.py")["written"].get<int>());

  // A resumed run keeps the journal's seed and refuses another.
  const CliResult other = run_kcv({"corpus", "run", dir, "--out", on, "--seed", "778", "--baseline", "kernelbench"}, "",
                                  tmp.path());
  EXPECT_EQ(other.rc, 2) << other.out << other.err;
  EXPECT_NE(other.err.find("holds a run with seed 777, this run asks 778"), std::string::npos) << other.err;
}

TEST(ReferenceCache, AnEntryThatIsNotWhatKcvWroteIsNotUsed) {
  if (geteuid() != 0) GTEST_SKIP() << "the reference cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string cache = tmp / "cache";
  auto verify = [&](const std::string& solution, const std::string& json) {
    const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/" + solution,
                                 "--gates", "numerics", "--seed", "5", "--reference-cache", cache, "--json", json,
                                 "--python", "/usr/bin/python3"},
                                "", tmp.path());
    const auto report = nlohmann::json::parse(read_text(json));
    return std::pair{r.rc, report["kernelbench"]["reference_cache"]};
  };
  const auto [rc0, first] = verify("solution_ok.py", tmp / "0.json");
  ASSERT_EQ(rc0, 0);
  const int n = first["written"].get<int>();
  ASSERT_GE(n, 5) << first.dump();
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(cache))
    if (e.is_regular_file()) files.push_back(e.path());
  ASSERT_EQ(static_cast<int>(files.size()), n);

  // Tampered in four ways: a payload byte changed (its SHA-256 no longer matches), two entries
  // swapped (the header names another key), an entry others may read, an entry of another uid.
  // The stale solution must still FAIL: nothing of a rejected entry is used.
  {
    std::string bytes = read_text(files[0].string());
    bytes.back() ^= 0x40;
    write_file(files[0].string(), bytes);
    chmod(files[0].c_str(), 0600);
  }
  const std::string a = read_text(files[1].string()), b = read_text(files[2].string());
  write_file(files[1].string(), b);
  write_file(files[2].string(), a);
  chmod(files[1].c_str(), 0600);
  chmod(files[2].c_str(), 0600);
  chmod(files[3].c_str(), 0644);
  ASSERT_EQ(chown(files[4].c_str(), 65534, 65534), 0);
  const auto [rc1, second] = verify("solution_stale_output.py", tmp / "1.json");
  EXPECT_EQ(rc1, 1) << second.dump();
  EXPECT_EQ(second["rejected"], 5) << second.dump();
  EXPECT_EQ(second["written"], 5) << second.dump();   // computed again, and written back as kcv's
  EXPECT_EQ(second["read"].get<int>(), n - 5) << second.dump();
  EXPECT_TRUE(second.contains("rejected_why")) << second.dump();

  // Written back whole: the next verification reads every entry.
  const auto [rc2, third] = verify("solution_ok.py", tmp / "2.json");
  EXPECT_EQ(rc2, 0);
  EXPECT_EQ(third["rejected"], 0) << third.dump();
  EXPECT_EQ(third["written"], 0) << third.dump();
  EXPECT_EQ(third["read"], n) << third.dump();
}

TEST(ReferenceCache, ADirectoryOthersOwnIsRefusedAndOneOthersCouldReadIsClosed) {
  if (geteuid() != 0) GTEST_SKIP() << "the reference cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string theirs = tmp / "theirs", open_dir = tmp / "open";
  fs::create_directories(theirs);
  fs::create_directories(open_dir);
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  chmod(open_dir.c_str(), 0755);
  CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ok.py", "--gates",
                         "numerics", "--reference-cache", theirs, "--python", "/usr/bin/python3"},
                        "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("belongs to uid 65534"), std::string::npos) << r.err;
  // A corpus run checks it once, before any pair.
  write_file(tmp / "corpus/p/problem.py", "class Model: pass\n");
  write_file(tmp / "corpus/p/solution.py", "class ModelNew: pass\n");
  r = run_kcv({"corpus", "run", tmp / "corpus", "--out", tmp / "out", "--reference-cache", theirs},
              stub_verifier(tmp.path()), tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("belongs to uid 65534"), std::string::npos) << r.err;
  r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ok.py", "--gates", "numerics",
               "--reference-cache", open_dir, "--python", "/usr/bin/python3"},
              "", tmp.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  struct stat st {};
  ASSERT_EQ(stat(open_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // An answer over KCV_REFERENCE_CACHE_ENTRY_BYTES is computed and not kept (nor hashed).
  setenv("KCV_REFERENCE_CACHE_ENTRY_BYTES", "100", 1);
  r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/solution_ok.py", "--gates", "numerics",
               "--reference-cache", tmp / "small", "--python", "/usr/bin/python3", "--json", tmp / "small.json"},
              "", tmp.path());
  unsetenv("KCV_REFERENCE_CACHE_ENTRY_BYTES");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const auto small = nlohmann::json::parse(read_text(tmp / "small.json"))["kernelbench"]["reference_cache"];
  EXPECT_EQ(small["written"], 0) << small.dump();   // rowsum 4x33: 132 outputs, 4356 bytes an answer
  EXPECT_EQ(small["read"], 0) << small.dump();
  EXPECT_GE(small["too_large"].get<int>(), 5) << small.dump();
  // Only for --kernelbench.
  r = run_kcv({"verify", "--op", "add", "--candidate", std::string(KCV_SOURCE_DIR) + "/controls/cpu/add/add_ok.c",
               "--reference-cache", open_dir},
              "", tmp.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--reference-cache needs --kernelbench"), std::string::npos) << r.err;
}

TEST(ReferenceCache, EveryPairOfARunGetsTheRunsSeedAndTheCacheDirectory) {
  // The stub verifier logs its arguments: the seed is the journal's on a resumed run.
  TempDir tmp;
  const std::string d = tmp / "corpus", out = tmp / "out", log = tmp / "args.log";
  add_pair(d, "a", "solution.py", "pass");
  add_pair(d, "b", "solution.py", "pass");
  const std::string v = stub_verifier(tmp.path());
  CorpusOptions o = stub_options(d, out, v, 1);
  o.seed = 4242;
  o.shard = Shard{0, 2};
  setenv("FAKE_ARGS_LOG", log.c_str(), 1);
  const CorpusRunSummary first = run_corpus(o);
  o.seed.reset();
  write_file(d + "/c/problem.py", "class Model: pass\n");
  write_file(d + "/c/solution.py", "# fake: pass\nclass ModelNew: pass\n");
  const CorpusRunSummary second = run_corpus(o);   // resumed: a (done), c (new) -> c gets 4242 too
  unsetenv("FAKE_ARGS_LOG");
  EXPECT_EQ(first.seed, 4242u);
  EXPECT_EQ(second.seed, 4242u);
  const std::string args = read_text(log);
  std::istringstream lines(args);
  std::string line;
  int n = 0;
  for (; std::getline(lines, line); ++n) {
    EXPECT_NE(line.find(" --seed 4242"), std::string::npos) << line;
    if (geteuid() == 0) {
      EXPECT_NE(line.find(" --reference-cache " + out + "/reference-cache"), std::string::npos) << line;
    } else {
      EXPECT_EQ(line.find("--reference-cache"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(n, 2) << args;
  if (geteuid() != 0) {
    EXPECT_EQ(second.reference_cache.rfind("off: kcv is not root", 0), 0u) << second.reference_cache;
  }
}


// ---- the disk it may take (issue 24: 29 GB of a 64 GiB disk after 26 leaderboard pairs) ----

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(ReferenceCacheSpace, AnEntryFitsUnderTheCapAndAboveTheReserveOrRoomIsMadeOrItIsNotKept) {
  // 1 TiB file system (reserve 5% = 51.2 GiB), plenty free: only the cap counts.
  CacheSpace s{/*held=*/0, /*free=*/500 * kGiB, /*capacity=*/1024 * kGiB};
  EXPECT_EQ(cache_reserve_bytes(s.capacity), 1024 * kGiB / 20);
  EXPECT_EQ(cache_bytes_to_free(s, kGiB, 10 * kGiB), 0);
  s.held = 10 * kGiB;
  EXPECT_EQ(cache_bytes_to_free(s, kGiB, 10 * kGiB), kGiB);          // over the cap by the entry
  s.held = 9 * kGiB + kGiB / 2;
  EXPECT_EQ(cache_bytes_to_free(s, kGiB, 10 * kGiB), kGiB / 2);
  EXPECT_EQ(cache_bytes_to_free(s, 11 * kGiB, 10 * kGiB), -1);       // larger than the cap itself
  // A small disk (64 GiB: reserve 3.2 GiB) that others filled: the reserve counts, not the cap.
  const int64_t reserve = 64 * kGiB / 20;
  EXPECT_EQ(cache_reserve_bytes(64 * kGiB), reserve);
  s = {/*held=*/20 * kGiB, /*free=*/reserve + kGiB / 2, /*capacity=*/64 * kGiB};
  EXPECT_EQ(cache_bytes_to_free(s, kGiB, 40 * kGiB), kGiB / 2);
  // Even the whole cache removed would leave less than the reserve: not kept.
  s = {/*held=*/kGiB / 4, /*free=*/reserve, /*capacity=*/64 * kGiB};
  EXPECT_EQ(cache_bytes_to_free(s, kGiB, 40 * kGiB), -1);
  // The floor of the reserve on a small file system.
  EXPECT_EQ(cache_reserve_bytes(8 * kGiB), kGiB);
  // The default cap stays the same while the cache grows (what it takes, the disk loses).
  const CacheSpace start{0, 60 * kGiB, 64 * kGiB}, later{25 * kGiB, 35 * kGiB, 64 * kGiB};
  EXPECT_EQ(default_cache_cap_bytes(start), 30 * kGiB);
  EXPECT_EQ(default_cache_cap_bytes(later), 30 * kGiB);
}

TEST(ReferenceCacheSpace, TheLeastRecentlyUsedEntryGoesFirstAndAReadCountsAsAUse) {
  if (geteuid() != 0) GTEST_SKIP() << "the reference cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string dir = tmp / "cache";
  fs::create_directories(dir);
  const CacheSpace space = cache_space(dir, ".ref");
  if (space.free - cache_reserve_bytes(space.capacity) < 100 * (int64_t{1} << 20))
    GTEST_SKIP() << "the file system of " << dir << " is within 100 MB of its reserve";
  // Each entry: a 10000-byte blob, 12 KiB on disk; room for two under a 30000-byte cap.
  ReferenceDiskCache cache(dir, {{"test", "lru"}}, int64_t{1} << 20, 30000);
  EXPECT_EQ(cache.dir_cap(), 30000);
  const std::string blob(10000, 'x');
  auto key = [](int i) { return sha256_hex("entry " + std::to_string(i)); };
  auto pause = [] { usleep(20000); };   // distinct mtimes
  cache.store(key(1), {blob}, nlohmann::json::object());
  pause();
  cache.store(key(2), {blob}, nlohmann::json::object());
  pause();
  cache.store(key(3), {blob}, nlohmann::json::object());   // 1, the oldest, goes
  pause();
  EXPECT_FALSE(cache.load(key(1)).has_value());
  ASSERT_TRUE(cache.load(key(2)).has_value());              // 2 used now: 3 is the oldest
  pause();
  cache.store(key(4), {blob}, nlohmann::json::object());
  EXPECT_FALSE(cache.load(key(3)).has_value());
  ASSERT_TRUE(cache.load(key(2)).has_value());
  const auto e = cache.load(key(4));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->blobs.at(0), blob);
  const auto sum = cache.summary();
  EXPECT_EQ(sum["written"], 4) << sum.dump();
  EXPECT_EQ(sum["evicted"], 2) << sum.dump();
  EXPECT_EQ(sum["no_space"], 0) << sum.dump();
  EXPECT_EQ(sum["cap_bytes"], 30000) << sum.dump();
  int64_t held = 0;
  for (const CacheFile& f : cache_files(dir, ".ref")) held += f.bytes;
  EXPECT_LE(held, 30000);
  // An entry larger than the whole cap is not kept, and nothing is evicted for it.
  cache.store(key(5), {std::string(40000, 'y')}, nlohmann::json::object());
  EXPECT_EQ(cache.summary()["no_space"], 1) << cache.summary().dump();
  EXPECT_EQ(cache.summary()["evicted"], 2) << cache.summary().dump();
  EXPECT_TRUE(cache.load(key(2)).has_value());
}

TEST(ReferenceCacheSpace, UnderASmallCapAVerificationEvictsAndItsVerdictsDoNotChange) {
  if (geteuid() != 0) GTEST_SKIP() << "the reference cache is used only when kcv runs as root";
  TempDir tmp;
  const std::string cache = tmp / "cache";
  auto verify = [&](const std::string& solution, const std::string& json, const char* cap) {
    if (cap) setenv("KCV_REFERENCE_CACHE_DIR_BYTES", cap, 1);
    const CliResult r = run_kcv({"verify", "--kernelbench", kRowsum + "/problem.py", kRowsum + "/" + solution,
                                 "--gates", "numerics,values", "--seed", "5", "--reference-cache", cache, "--json",
                                 json, "--python", "/usr/bin/python3"},
                                "", tmp.path());
    unsetenv("KCV_REFERENCE_CACHE_DIR_BYTES");
    return std::pair{r.rc, nlohmann::json::parse(read_text(json))["kernelbench"]["reference_cache"]};
  };
  // rowsum's answers are about 4.4 KB (8 KiB on disk): a 40000-byte cap holds four of them.
  const auto [rc_ok, ok] = verify("solution_ok.py", tmp / "ok.json", "40000");
  EXPECT_EQ(rc_ok, 0) << ok.dump();
  EXPECT_GT(ok["written"].get<int>(), 4) << ok.dump();
  EXPECT_GT(ok["evicted"].get<int>(), 0) << ok.dump();
  EXPECT_EQ(ok["cap_bytes"], 40000) << ok.dump();
  int64_t held = 0;
  for (const CacheFile& f : cache_files(cache, ".ref")) held += f.bytes;
  EXPECT_LE(held, 40000);
  // The wrong solution still fails with what little the cache keeps, and so does it without a cap.
  const auto [rc_stale, stale] = verify("solution_stale_output.py", tmp / "stale.json", "40000");
  EXPECT_EQ(rc_stale, 1) << stale.dump();
  const auto [rc_free, free_cap] = verify("solution_ok.py", tmp / "free.json", nullptr);
  EXPECT_EQ(rc_free, 0) << free_cap.dump();
  EXPECT_GT(free_cap["cap_bytes"].get<int64_t>(), 40000) << free_cap.dump();   // half of what it could grow to
  EXPECT_EQ(free_cap["evicted"], 0) << free_cap.dump();
}

}  // namespace
}  // namespace kcv::corpus_test
