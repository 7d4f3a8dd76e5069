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
  // One script: the page's own sorter, after everything from the journal.
  EXPECT_EQ(html.find("<script"), html.rfind("<script"));
  EXPECT_FALSE(has(html, "<script>alert"));
  EXPECT_GT(html.find("<script>"), html.rfind("solution.py"));
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

TEST(CorpusReportHtml, APairRunAgainBesideFewerSaysHowManyAndWhy) {
  nlohmann::json retried = result("a.py", "verified", make_report({{"numerics", "pass"}}, "pass", std::nullopt));
  retried["retried"] = "ran out of memory beside 13 other pairs (gate values CRASH)";
  retried["retried_beside_at_most"] = 6;
  const std::string html = corpus_report_html({retried});
  EXPECT_TRUE(has(html, "verified <span title=\"ran out of memory beside 13 other pairs (gate values CRASH)\">"
                        "(retried beside at most 6)</span>")) << html;
  EXPECT_FALSE(has(html, "(retried alone)")) << html;
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
  for (const char* ref : {"http://", "https://", "<link", "@import", "url(", " src=", "fetch(", "XMLHttpRequest"})
    EXPECT_FALSE(has(html, ref)) << ref;
  // Links only within the page (the drill-down), and one inline script (sorting).
  for (std::size_t at = html.find(" href=\""); at != std::string::npos; at = html.find(" href=\"", at + 1))
    EXPECT_EQ(html[at + 7], '#') << html.substr(at, 40);
  EXPECT_EQ(html.find("<script>"), html.rfind("<script>"));
}

TEST(CorpusReportHtml, TruncatesLongEvidence) {
  // The kernels table shows 200 bytes of the first failing gate's evidence; the drill-down 4000.
  const std::string long_evidence(5000, 'x');
  const std::vector<nlohmann::json> journal = {
      result("a.py", "verified", make_report({{"values", "fail"}}, "pass", std::nullopt, {{"values", long_evidence}}))};
  const std::string html = corpus_report_html(journal);
  EXPECT_TRUE(has(html, "<td class=\"ev\">" + std::string(200, 'x') + "\u2026</td>"));
  EXPECT_TRUE(has(html, std::string(4000, 'x') + "\u2026"));
  EXPECT_FALSE(has(html, std::string(4001, 'x')));
}

// Issue 21 item 4: the headline splits the accepted kernels that fail into their own calling
// convention, library op only, and crash in every gate (once), beside the existing shares; the
// gates table counts own / library / only this gate.
TEST(CorpusReportHtml, TheHeadlineSplitsOwnConventionFromLibraryOnly) {
  const std::vector<nlohmann::json> journal = {
      run_record("kernelbench"),
      result("own.py", "verified",
             make_report({{"values", "fail"}, {"concurrency", "fail"}}, "pass", std::nullopt, {},
                         {{"values", "own"}, {"concurrency", "library"}})),
      result("lib1.py", "verified", make_report({{"concurrency", "fail"}}, "pass", std::nullopt, {}, {{"concurrency", "library"}})),
      result("lib2.py", "verified",
             make_report({{"layout", "fail"}, {"concurrency", "fail"}}, "pass", std::nullopt, {},
                         {{"layout", "library"}, {"concurrency", "library"}})),
      result("crash.py", "verified", [] {
        std::map<std::string, std::string> all;
        for (const char* id : corpus_gate_ids()) all[id] = "crash";
        return make_report(all, "pass", std::nullopt, {}, {{"numerics", "own"}});
      }()),
      result("ok.py", "verified", make_report({}, "pass")),
  };
  const std::string html = corpus_report_html(journal);
  EXPECT_TRUE(has(html, "<div class=\"n\" id=\"share-any\">80.0%</div>")) << html;
  EXPECT_TRUE(has(html, "<div class=\"n\" id=\"share-own\">20.0%</div>")) << html;
  EXPECT_TRUE(has(html, "<div class=\"n\" id=\"share-library\">40.0%</div>")) << html;
  EXPECT_TRUE(has(html, "<div class=\"n\" id=\"share-crash\">20.0%</div>")) << html;
  // concurrency: 3 failures (1 library in own.py's, 2 library-only kernels), 1 kernel fails it alone.
  EXPECT_TRUE(has(html, "<tr><td>11</td><td class=\"l\">concurrency</td><td class=\"l\">yes</td><td>1</td><td>3</td>"
                        "<td>1</td><td>0</td><td>0</td><td>0</td><td><b>4</b></td><td>0</td><td>3</td><td>1</td></tr>"))
      << html;
  EXPECT_TRUE(has(html, "<td class=\"l\"><span class=\"lib\">library op only</span></td>")) << html;
}

// Issue 21 item 8: each kernel's drill-down lists every gate with its evidence and the command
// that replays it from the journal, quoted for a shell; the tables sort; provenance is shown.
TEST(CorpusReportHtml, EachKernelHasADrillDownWithReplayLines) {
  nlohmann::json rep = make_report({{"shapes", "fail"}}, "pass", std::nullopt, {{"shapes", "tail <wrong>"}},
                                   {{"shapes", "own"}});
  rep["gates"][1]["failing_case"] = 7;
  rep["gates"][1]["failing_cases"] = {{{"case", 7}, {"label", "N=13"}, {"verdict", "FAIL"}, {"convention", "own"}},
                                      {{"case", 9}, {"label", "N=127"}, {"verdict", "FAIL"}, {"convention", "own"}}};
  rep["gates"][3]["verdict"] = "SKIPPED";
  rep["provenance"] = {{"kcv_commit", "abc123"}, {"host", "h200-<1>"}, {"candidate_sha256", "00ff"}, {"gpu", nullptr}};
  const std::string key = "lvl/it's here/solution.py";
  const std::string html = corpus_report_html({result(key, "verified", rep)}, "/runs/lb 1");
  EXPECT_TRUE(has(html, "<a href=\"#k0\">lvl/it&#39;s here/solution.py</a>")) << html;
  EXPECT_TRUE(has(html, "<details class=\"kernel\" id=\"k0\">")) << html;
  // The failing gate replays its first failing case; a passing one case 0; a skipped one none.
  EXPECT_TRUE(has(html, "kcv replay &#39;/runs/lb 1&#39; --key &#39;lvl/it&#39;\\&#39;&#39;s here/solution.py&#39; "
                        "--gate shapes --case 7")) << html;
  EXPECT_TRUE(has(html, "--gate numerics --case 0")) << html;
  EXPECT_FALSE(has(html, "--gate nonfinite")) << html;
  EXPECT_TRUE(has(html, "tail &lt;wrong&gt;"));
  EXPECT_TRUE(has(html, "7 (N=13, own)<br>9 (N=127, own)")) << html;
  EXPECT_TRUE(has(html, "<th class=\"l\">host</th><td class=\"l ev\">h200-&lt;1&gt;</td>")) << html;
  EXPECT_FALSE(has(html, "<th class=\"l\">gpu</th>"));  // null: not found, not shown
  EXPECT_TRUE(has(html, "<table id=\"kernels\" class=\"sortable\">"));
  EXPECT_TRUE(has(html, "querySelectorAll(\"table.sortable\")"));
}

TEST(CorpusReportFile, WritesReportAndIgnoresACutLastLine) {
  TempDir dir;
  const std::string cut = R"({"kind":"result","key":"zz/cut_short.py","status":"verif)";
  write_file(dir.path / "journal.jsonl", jsonl(synthetic_journal()) + cut);
  write_corpus_report(dir.path.string());
  const std::string html = read_file(dir.path / "report.html");
  EXPECT_EQ(html, corpus_report_html(synthetic_journal(), dir.path.string()));
  EXPECT_FALSE(has(html, "cut_short"));
  // Beside it, the counts for machines and for results files (issue 21 item 4).
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir.path / "summary.json"));
  EXPECT_EQ(summary["schema"], "kcv.corpus-summary/1");
  EXPECT_EQ(summary["results"], 8);
  EXPECT_EQ(summary["accepted_fail_any"], 2);
  EXPECT_EQ(summary["accepted_split"]["unknown"], 2);  // the fixture's reports predate the split
  EXPECT_TRUE(has(read_file(dir.path / "summary.md"), "| fail at least one gate | 2 of 3 (66.7%) |"));
  for (const auto& entry : fs::directory_iterator(dir.path))  // no temporary left behind
    EXPECT_TRUE(entry.path().filename() == "journal.jsonl" || entry.path().filename() == "report.html" ||
                entry.path().filename() == "summary.json" || entry.path().filename() == "summary.md")
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
