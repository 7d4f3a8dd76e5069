// The corpus report page: its numbers, its escaping, that it is self-contained, and how
// write_corpus_report reads a journal (a cut last line is ignored, a corrupt line is refused).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kcv/candidate.hpp"
#include "kcv/corpus_report.hpp"
#include "report_fixture.hpp"

namespace kcv::testing {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& html, const std::string& needle) { return html.find(needle) != std::string::npos; }

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kcv-report-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string jsonl(const std::vector<nlohmann::json>& records) {
  std::string out;
  for (const auto& r : records) out += r.dump() + "\n";
  return out;
}

TEST(CorpusReportHtml, ShowsTheNumbers) {
  const std::string html = corpus_report_html(synthetic_journal());
  EXPECT_TRUE(html.rfind("<!DOCTYPE html>", 0) == 0);
  EXPECT_TRUE(has(html, "</html>"));
  // Headline shares: 2 of 3 accepted fail a gate, 1 of 3 a tolerance-independent one.
  EXPECT_TRUE(has(html, "<div class=\"n\" id=\"share-any\">66.7%</div>")) << html;
  EXPECT_TRUE(has(html, "(2 of 3)"));
  EXPECT_TRUE(has(html, "<div class=\"n\" id=\"share-ti\">33.3%</div>"));
  EXPECT_TRUE(has(html, "(1 of 3)"));
  EXPECT_TRUE(has(html, "1 results have no baseline verdict"));
  // The 2x2 table and McNemar.
  EXPECT_TRUE(has(html, "<th class=\"l\">baseline pass</th><td>1</td><td>2 (b)</td><td>3</td>"));
  EXPECT_TRUE(has(html, "<th class=\"l\">baseline fail</th><td>1 (c)</td><td>3</td><td>4</td>"));
  EXPECT_TRUE(has(html, "b = 2, c = 1, n = b + c = 3, two-sided p = 1."));
  // Per-gate rows and the bar chart.
  EXPECT_TRUE(has(html, "<td class=\"l\">sanitizer</td><td class=\"l\">yes</td><td>5</td><td>0</td><td>1</td>"));
  EXPECT_TRUE(has(html, "<td class=\"l\">layout</td><td class=\"l\">yes</td><td>5</td><td>0</td><td>0</td><td>0</td><td>1</td>"));
  EXPECT_TRUE(has(html, "aria-label=\"failures per gate\""));
  EXPECT_TRUE(has(html, "<title>sanitizer: 1 crash</title>"));
  // The scatter: three kernels have a worst error and bound; b lies above the line.
  EXPECT_TRUE(has(html, "aria-label=\"numerics worst error against bound\""));
  EXPECT_TRUE(has(html, "3 kernels plotted"));
  EXPECT_TRUE(has(html, "<title>b/solution_num.py: error 0.03, bound 0.0001</title>"));
  // Per-kernel rows: evidence, compile, gate and wall seconds.
  EXPECT_TRUE(has(html, "<td class=\"l\">concurrency (fail)</td><td class=\"ev\">stream race at index 3</td>"
                        "<td>1.50</td><td>3.00</td><td>3.00</td>"));
  EXPECT_TRUE(has(html, "nvcc: error: expected &#39;;&#39;"));
  EXPECT_TRUE(has(html, "corpus: corpus/level1"));
}

TEST(CorpusReportHtml, SaysSoWhenNoKernelHasAWorst) {
  const std::vector<nlohmann::json> journal = {run_record("kernelbench"),
                                               result("a.py", "verified", make_report({}, "pass"))};
  const std::string html = corpus_report_html(journal);
  EXPECT_TRUE(has(html, "nothing to plot"));
  EXPECT_FALSE(has(html, "<circle"));
  EXPECT_TRUE(has(html, "No gate failed on any kernel."));
}

TEST(CorpusReportHtml, EscapesHostileStrings) {
  const std::string hostile = "<script>alert('x')</script>";
  nlohmann::json run = run_record("kernelbench");
  run["corpus"] = "\"><script>alert(1)</script>";
  run["started"] = "<img src=x onerror=alert(1)>";
  const std::vector<nlohmann::json> journal = {
      run,
      result("lvl/" + hostile + "/solution.py", "verified",
             make_report({{"numerics", "fail"}}, "pass", Worst{1, 0.5}, {{"numerics", hostile + " & <b>"}})),
      result("<b>bold</b>.py", "setup_error", nullptr, "<iframe srcdoc='x'>"),
  };
  const std::string html = corpus_report_html(journal);
  EXPECT_FALSE(has(html, "<script"));
  EXPECT_FALSE(has(html, "<img"));
  EXPECT_FALSE(has(html, "<iframe"));
  EXPECT_FALSE(has(html, "<b>bold"));
  EXPECT_TRUE(has(html, "lvl/&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;/solution.py"));
  EXPECT_TRUE(has(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;"));
  EXPECT_TRUE(has(html, "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
}

TEST(CorpusReportHtml, APairRunAgainAloneSaysSoAndWhy) {
  nlohmann::json retried = result("a.py", "verified", make_report({{"numerics", "pass"}}, "pass", std::nullopt));
  retried["retried_alone"] = "ran out of memory beside 13 other pairs (gate values CRASH: <OOM>)";
  const nlohmann::json retry = {{"kind", "retry"}, {"key", "a.py"}, {"reason", "ran out of memory beside 13 other pairs"}};
  const std::string html = corpus_report_html(
      {retry, retried, result("b.py", "verified", make_report({{"numerics", "pass"}}, "pass", std::nullopt))});
  EXPECT_TRUE(has(html, "1 time a pair ran out of memory or time beside other pairs")) << html;
  EXPECT_FALSE(has(html, "unknown kind")) << html;
  EXPECT_TRUE(has(html, "verified <span title=\"ran out of memory beside 13 other pairs (gate values CRASH: "
                        "&lt;OOM&gt;)\">(retried alone)</span>")) << html;
  EXPECT_EQ(html.find("(retried alone)"), html.rfind("(retried alone)"));   // b.py was not
}

TEST(CorpusReportHtml, APairJudgedAtClippedSizesSaysSoAndWhy) {
  nlohmann::json clipped = result("a.py", "verified", make_report({{"numerics", "pass"}}, "pass", std::nullopt));
  clipped["report"]["kernelbench"]["reduced_sizes"] = "judged at n=4096, not the problem's own n=65536: it moves <many>";
  const std::string html = corpus_report_html(
      {clipped, result("b.py", "verified", make_report({{"numerics", "pass"}}, "pass", std::nullopt))});
  EXPECT_TRUE(has(html, "1 verified pair moved more elements per call than kcv judges")) << html;
  EXPECT_TRUE(has(html, "verified <span title=\"judged at n=4096, not the problem&#39;s own n=65536: it moves &lt;many&gt;\">"
                        "(clipped sizes)</span>")) << html;
  EXPECT_EQ(html.find("(clipped sizes)"), html.rfind("(clipped sizes)"));   // b.py was not
  EXPECT_FALSE(has(corpus_report_html({result("b.py", "verified", make_report({}, "pass"))}), "clipped sizes"));
}

TEST(CorpusReportHtml, IsSelfContained) {
  const std::string html = corpus_report_html(synthetic_journal());
  for (const char* ref : {"http://", "https://", "<script", "<link", "@import", "url(", " src=", " href="})
    EXPECT_FALSE(has(html, ref)) << ref;
}

TEST(CorpusReportHtml, TruncatesLongEvidence) {
  const std::string long_evidence(1000, 'x');
  const std::vector<nlohmann::json> journal = {
      result("a.py", "verified", make_report({{"values", "fail"}}, "pass", std::nullopt, {{"values", long_evidence}}))};
  const std::string html = corpus_report_html(journal);
  EXPECT_TRUE(has(html, std::string(200, 'x') + "\u2026"));
  EXPECT_FALSE(has(html, std::string(201, 'x')));
}

TEST(CorpusReportFile, WritesReportAndIgnoresACutLastLine) {
  TempDir dir;
  const std::string cut = R"({"kind":"result","key":"zz/cut_short.py","status":"verif)";
  write_file(dir.path / "journal.jsonl", jsonl(synthetic_journal()) + cut);
  write_corpus_report(dir.path.string());
  const std::string html = read_file(dir.path / "report.html");
  EXPECT_EQ(html, corpus_report_html(synthetic_journal()));
  EXPECT_FALSE(has(html, "cut_short"));
  for (const auto& entry : fs::directory_iterator(dir.path))  // no temporary left behind
    EXPECT_TRUE(entry.path().filename() == "journal.jsonl" || entry.path().filename() == "report.html")
        << entry.path();
}

TEST(CorpusReportFile, CorruptCompleteLineIsASetupError) {
  TempDir dir;
  const auto records = synthetic_journal();
  write_file(dir.path / "journal.jsonl", records[0].dump() + "\n{\"kind\":\"result\",\"key\":\n" + records[1].dump() + "\n");
  try {
    write_corpus_report(dir.path.string());
    FAIL() << "no SetupError";
  } catch (const SetupError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(has(what, "line 2")) << what;
    EXPECT_TRUE(has(what, "not JSON")) << what;
    EXPECT_FALSE(has(what, "\n")) << what;
  }
  EXPECT_FALSE(fs::exists(dir.path / "report.html"));

  write_file(dir.path / "journal.jsonl", "[1,2,3]\n");
  EXPECT_THROW(write_corpus_report(dir.path.string()), SetupError);
}

TEST(CorpusReportFile, MissingJournalIsASetupError) {
  TempDir dir;
  try {
    write_corpus_report(dir.path.string());
    FAIL() << "no SetupError";
  } catch (const SetupError& e) {
    EXPECT_TRUE(has(e.what(), "journal.jsonl")) << e.what();
  }
  EXPECT_THROW(write_corpus_report((dir.path / "absent").string()), SetupError);
}

TEST(CorpusReportFile, ReplacesAnOlderReport) {
  TempDir dir;
  write_file(dir.path / "report.html", "old");
  write_file(dir.path / "journal.jsonl", jsonl({run_record("")}));
  write_corpus_report(dir.path.string());
  const std::string html = read_file(dir.path / "report.html");
  EXPECT_TRUE(has(html, "0 results from 1 runs"));
  EXPECT_TRUE(has(html, "ran without <code>--baseline kernelbench</code>"));
}

}  // namespace
}  // namespace kcv::testing
