// The corpus journal: reading back after a cut write, appending safely, merging shard journals.
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "corpus_test_support.hpp"
#include "kcv/candidate.hpp"

using namespace kcv;
using namespace kcv::corpus_test;
using nlohmann::json;

namespace {

const char* kRun = R"({"kind":"run","started":"2026-01-01T00:00:00Z","backend":"cpu","baseline":"","shard":"0/1","jobs":1})";

std::string result_line(const std::string& key, const std::string& status = "verified", double wall = 1.5) {
  return json({{"kind", "result"}, {"key", key}, {"problem", "/c/" + key}, {"solution", "/c/" + key},
               {"status", status}, {"exit_code", 0}, {"wall_seconds", wall}, {"report", nullptr}})
      .dump();
}

}  // namespace

TEST(CorpusJournal, ACutLastLineIsDropped) {
  TempDir t;
  const std::string p = t / "journal.jsonl";
  write_file(p, std::string(kRun) + "\n" + result_line("a") + "\n" + result_line("b").substr(0, 30));
  const auto records = read_journal(p);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["kind"], "run");
  EXPECT_EQ(records[1]["key"], "a");
  // The whole last line cut, even when what is left of it happens to parse.
  write_file(p, std::string(kRun) + "\n" + "{\"kind\":\"run\"}");
  EXPECT_EQ(read_journal(p).size(), 1u);
}

TEST(CorpusJournal, ACompleteLineThatIsNotJsonThrowsNamingItsLine) {
  TempDir t;
  const std::string p = t / "journal.jsonl";
  write_file(p, std::string(kRun) + "\n" + result_line("a") + "\n" + "garbage\n" + result_line("b") + "\n");
  try {
    read_journal(p);
    FAIL() << "no throw";
  } catch (const SetupError& e) {
    EXPECT_NE(std::string(e.what()).find("journal.jsonl:3:"), std::string::npos) << e.what();
  }
  write_file(p, std::string(kRun) + "\n[1,2]\n");
  EXPECT_THROW(read_journal(p), SetupError);   // JSON, but not a record
  write_file(p, std::string(kRun) + "\n{\"kind\":\"result\"}\n");
  EXPECT_THROW(read_journal(p), SetupError);   // a result without a key
}

TEST(CorpusJournal, AMissingJournalIsEmpty) {
  TempDir t;
  EXPECT_TRUE(read_journal(t / "nope.jsonl").empty());
}

TEST(CorpusJournal, OpeningTruncatesACutLineBeforeAppending) {
  TempDir t;
  const std::string p = t / "journal.jsonl";
  const std::string kept = std::string(kRun) + "\n" + result_line("a") + "\n";
  write_file(p, kept + result_line("b").substr(0, 40));
  {
    Journal j(p);
    ASSERT_EQ(j.existing().size(), 2u);
    EXPECT_EQ(read_text(p), kept);   // truncated on open, before anything is appended
    j.append(nlohmann::ordered_json::parse(result_line("c")));
  }
  EXPECT_EQ(read_text(p), kept + result_line("c") + "\n");
  const auto records = read_journal(p);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2]["key"], "c");
}

TEST(CorpusJournal, TwoWritersAreRefused) {
  TempDir t;
  const std::string p = t / "journal.jsonl";
  Journal first(p);
  EXPECT_THROW(Journal second(p), SetupError);
}

// ---- merge ----

TEST(CorpusMerge, DisjointShardsMergeToTheSameResultsAsAnUnshardedRun) {
  TempDir t;
  const std::string d = t / "corpus", v = stub_verifier(t.path());
  const char* modes[] = {"pass", "fail", "setup", "segv", "pass", "pass", "fail"};
  for (int i = 0; i < 7; ++i) add_pair(d, fmt::format("p{}", i), "solution.py", modes[i]);
  std::vector<std::string> shards;
  for (int i = 0; i < 3; ++i) {
    CorpusOptions o = stub_options(d, t / ("shard" + std::to_string(i)), v);
    o.shard = {i, 3};
    run_corpus(o);
    shards.push_back(o.out);
  }
  run_corpus(stub_options(d, t / "whole", v));
  EXPECT_EQ(merge_corpora(shards, t / "merged"), 7);

  // Same keys, same outcomes (wall times differ from run to run).
  auto outcome = [](const std::string& out) {
    std::map<std::string, std::string> m;
    for (const auto& r : results_of(read_journal(out + "/journal.jsonl"))) {
      EXPECT_EQ(m.count(r["key"].get<std::string>()), 0u) << r["key"];
      m[r["key"].get<std::string>()] = r["status"].get<std::string>() + " " +
                                       (r["report"].is_null() ? "-" : r["report"]["verdict"].get<std::string>());
    }
    return m;
  };
  const auto merged = outcome(t / "merged"), whole = outcome(t / "whole");
  EXPECT_EQ(merged.size(), 7u);
  EXPECT_EQ(merged, whole);

  const auto records = read_journal(t / "merged/journal.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0]["kind"], "run");
  EXPECT_EQ(records[0]["merged"], json(shards));
  EXPECT_EQ(records[0]["backend"], "cpu");        // all shards agree
  EXPECT_EQ(records[0]["runs"].size(), 3u);       // the shards' own run records, kept
  // Result lines are carried byte for byte.
  const std::string shard0 = read_text(shards[0] + "/journal.jsonl");
  const std::string first_result = shard0.substr(shard0.find('\n') + 1, shard0.find('\n', shard0.find('\n') + 1) - shard0.find('\n'));
  EXPECT_NE(read_text(t / "merged/journal.jsonl").find(first_result), std::string::npos);
}

TEST(CorpusMerge, AnIdenticalDuplicateCountsOnceAndADifferentOneIsRefused) {
  TempDir t;
  write_file(t / "a/journal.jsonl", std::string(kRun) + "\n" + result_line("k1") + "\n" + result_line("k2") + "\n");
  write_file(t / "b/journal.jsonl", std::string(kRun) + "\n" + result_line("k2") + "\n" + result_line("k3") + "\n" +
                                        result_line("k4").substr(0, 25));   // a cut last line: dropped
  EXPECT_EQ(merge_corpora({t / "a", t / "b"}, t / "ok"), 3);
  EXPECT_EQ(results_per_key(read_journal(t / "ok/journal.jsonl")),
            (std::map<std::string, int>{{"k1", 1}, {"k2", 1}, {"k3", 1}}));

  write_file(t / "c/journal.jsonl", std::string(kRun) + "\n" + result_line("k2", "timeout") + "\n");
  try {
    merge_corpora({t / "a", t / "c"}, t / "bad");
    FAIL() << "no throw";
  } catch (const SetupError& e) {
    EXPECT_NE(std::string(e.what()).find("'k2'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(t / "bad/journal.jsonl"));
  EXPECT_THROW(merge_corpora({t / "a", t / "missing"}, t / "bad2"), SetupError);
}

TEST(CorpusMerge, AnExistingOutputJournalIsNeverOverwritten) {
  TempDir t;
  write_file(t / "a/journal.jsonl", std::string(kRun) + "\n" + result_line("k1") + "\n");
  write_file(t / "out/journal.jsonl", "precious\n");
  EXPECT_THROW(merge_corpora({t / "a"}, t / "out"), SetupError);
  EXPECT_EQ(read_text(t / "out/journal.jsonl"), "precious\n");
  // Merging into an input's own directory is the same case.
  EXPECT_THROW(merge_corpora({t / "a"}, t / "a"), SetupError);
  EXPECT_EQ(read_text(t / "a/journal.jsonl"), std::string(kRun) + "\n" + result_line("k1") + "\n");

  // The CLI: exit 2 with one line, and the file untouched.
  const CliResult r = run_kcv({"corpus", "merge", t / "a", "--out", t / "out"}, "/bin/false", t.path());
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(t / "out/journal.jsonl"), "precious\n");
  const CliResult ok = run_kcv({"corpus", "merge", t / "a", "--out", t / "new"}, "/bin/false", t.path());
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("1 results from 1 journals"), std::string::npos) << ok.out;
}
