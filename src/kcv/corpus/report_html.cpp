// `kcv report OUT`: one self-contained HTML page from a corpus journal. Inline CSS, SVG and one
// small inline script (sortable tables), no URL: the page opens from a laptop, a cluster's shared
// disk or a mail attachment. Every string from the journal is escaped; the journal holds paths
// and evidence written by candidates, which an attacker controls. Beside it, summary.json and
// summary.md carry the same counts for machines and for results files.
#include "kcv/corpus_report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/corpus.hpp"
#include "kcv/provenance.hpp"
#include "kcv/text.hpp"

namespace kcv {

namespace {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

// At most `max` bytes, cut on a UTF-8 character boundary, with an ellipsis when cut.
std::string truncate(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "\u2026";
}

std::string pct(int64_t num, int64_t den) {
  return den > 0 ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(num) / static_cast<double>(den)) : "n/a";
}

std::string pvalue(double p) {
  if (p == 0) return "&lt; 1e-308";
  if (p >= 1e-4) return fmt::format("{:.4g}", p);
  return fmt::format("{:.3e}", p);
}

std::string seconds(std::optional<double> s) { return s ? fmt::format("{:.2f}", *s) : "&ndash;"; }

std::string json_scalar(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) return {};
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump();
}

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#1d1d1f}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f6}td.l,th.l{text-align:left}td.ev{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;max-width:480px;overflow-wrap:anywhere}
.meta{color:#555}.note{color:#555;font-size:13px;max-width:900px}
.big{display:flex;gap:16px;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:260px}
.card .n{font-size:26px;font-weight:600}.pass{color:#1e7e34}.fail{color:#b02a1a}
tr.sf td.v{color:#b02a1a;font-weight:600}
svg text{font:12px system-ui,sans-serif;fill:#333}
table.sortable th{cursor:pointer;user-select:none}table.sortable th[aria-sort=ascending]::after{content:" \25B2"}
table.sortable th[aria-sort=descending]::after{content:" \25BC"}
details.kernel{margin:6px 0;border:1px solid #ddd;border-radius:4px;padding:4px 8px}details.kernel summary{cursor:pointer}
code.replay{font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}.own{color:#b02a1a;font-weight:600}.lib{color:#7d5a00}
)";

// Click a header of a table.sortable to sort its rows by that column (numbers as numbers; a cell
// that is not a number, such as "-", sorts last); click again to reverse. No external assets.
constexpr const char* kSortScript = R"(
document.querySelectorAll("table.sortable").forEach(function(t){
  var hs=t.rows[0].cells;
  Array.prototype.forEach.call(hs,function(h,col){
    h.addEventListener("click",function(){
      var asc=h.getAttribute("aria-sort")!=="ascending";
      Array.prototype.forEach.call(hs,function(o){o.removeAttribute("aria-sort");});
      h.setAttribute("aria-sort",asc?"ascending":"descending");
      var rows=Array.prototype.slice.call(t.rows,1);
      function key(r){var c=r.cells[col];var v=c?(c.getAttribute("data-v")||c.textContent).trim():"";
        var n=parseFloat(v);return isNaN(n)||!/^[-+]?[0-9.]/.test(v)?{n:null,s:v}:{n:n,s:v};}
      rows.sort(function(a,b){var x=key(a),y=key(b),d;
        if(x.n!==null&&y.n!==null)d=x.n-y.n;else if(x.n!==null)d=-1;else if(y.n!==null)d=1;
        else d=x.s<y.s?-1:x.s>y.s?1:0;return asc?d:-d;});
      var body=t.tBodies[0];rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
)";

/// s as one shell word: as is when it holds only safe characters, else in single quotes (a '
/// inside as '\''). Journal keys are file names a candidate's author chose.
std::string shell_word(const std::string& raw) {
  const std::string s = clean_text(raw);
  bool safe = !s.empty();
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' || c == '=' ||
          c == ':' || c == '+' || c == ','))
      safe = false;
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Segment {
  const char* name;
  const char* color;
  int64_t VerdictCounts::*field;
};
constexpr Segment kSegments[] = {{"fail", "#c0392b", &VerdictCounts::fail},
                                 {"crash", "#8e44ad", &VerdictCounts::crash},
                                 {"timeout", "#d68910", &VerdictCounts::timeout},
                                 {"refused", "#7f8c8d", &VerdictCounts::refused}};

// Horizontal bars: per gate, its failures stacked by kind.
std::string gate_bars(const CorpusSummary& s) {
  int64_t most = 0;
  for (const auto& g : s.gates) most = std::max(most, g.counts.failures());
  if (most == 0) return "<p>No gate failed on any kernel.</p>\n";
  const int label_w = 120, bar_w = 480, row_h = 22, top = 28;
  const int height = top + row_h * static_cast<int>(s.gates.size()) + 8;
  std::string o = fmt::format(R"(<svg width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="failures per gate">)",
                              label_w + bar_w + 60, height, label_w + bar_w + 60, height);
  o += "\n";
  int lx = label_w;
  for (const auto& seg : kSegments) {
    o += fmt::format(R"(<rect x="{}" y="6" width="12" height="12" fill="{}"/><text x="{}" y="16">{}</text>)", lx, seg.color,
                     lx + 16, seg.name);
    lx += 90;
  }
  o += "\n";
  for (size_t i = 0; i < s.gates.size(); ++i) {
    const auto& g = s.gates[i];
    const int y = top + static_cast<int>(i) * row_h;
    o += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", label_w - 8, y + 15, esc(g.id));
    double x = label_w;
    for (const auto& seg : kSegments) {
      const int64_t n = g.counts.*seg.field;
      if (n == 0) continue;
      const double w = static_cast<double>(bar_w) * static_cast<double>(n) / static_cast<double>(most);
      o += fmt::format(R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {} {}</title></rect>)", x,
                       y + 3, w, row_h - 6, seg.color, esc(g.id), n, seg.name);
      x += w;
    }
    o += fmt::format(R"(<text x="{:.1f}" y="{}">{}</text>)", x + 6, y + 15, g.counts.failures());
    o += "\n";
  }
  return o + "</svg>\n";
}

// Log-log scatter of the numerics gate's worst error against its bound, with the line y = x.
std::string numerics_scatter(const CorpusSummary& s) {
  struct Point {
    double bound, error;
    bool failed;
    const KernelRow* row;
  };
  std::vector<Point> pts;
  int64_t unplottable = 0;
  for (const auto& k : s.kernels) {
    if (!k.worst_error && !k.worst_bound) continue;
    if (!k.worst_error || !k.worst_bound || !std::isfinite(*k.worst_error) || !std::isfinite(*k.worst_bound) ||
        *k.worst_error < 0 || *k.worst_bound < 0) {
      ++unplottable;  // JSON writes a NaN or an infinity as null
      continue;
    }
    const bool failed = *k.worst_error > *k.worst_bound || (k.numerics_verdict && *k.numerics_verdict != "pass");
    pts.push_back({*k.worst_bound, *k.worst_error, failed, &k});
  }
  if (pts.empty()) {
    std::string o = "<p>No kernel's report gives the numerics gate's worst error and bound, so there is nothing to plot.";
    if (unplottable > 0) o += fmt::format(" ({} gave a value that is not a finite number.)", unplottable);
    return o + "</p>\n";
  }
  double lo_v = INFINITY, hi_v = 0;
  int64_t zeros = 0;
  for (const auto& p : pts)
    for (double v : {p.bound, p.error}) {
      if (v > 0) lo_v = std::min(lo_v, v), hi_v = std::max(hi_v, v);
      else ++zeros;
    }
  if (hi_v == 0) lo_v = hi_v = 1;  // every value is zero
  int lo = static_cast<int>(std::floor(std::log10(lo_v))), hi = static_cast<int>(std::ceil(std::log10(hi_v)));
  if (zeros > 0) --lo;  // a zero sits on the bottom (or left) edge, a decade below the rest
  if (hi <= lo) hi = lo + 1;
  const double left = 70, top = 16, side = 440;
  auto pos = [&](double v) {
    const double d = v > 0 ? std::max(std::log10(v), static_cast<double>(lo)) : static_cast<double>(lo);
    return (d - lo) / (hi - lo) * side;
  };
  std::string o = fmt::format(R"(<svg width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="numerics worst error against bound">)",
                              left + side + 20, top + side + 50, left + side + 20, top + side + 50);
  o += "\n";
  // Above the diagonal the error exceeds the bound: the numerics gate fails there.
  o += fmt::format(R"(<polygon points="{0},{1} {0},{2} {3},{1}" fill="#fbeaea"/>)", left, top, top + side, left + side);
  o += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#999"/>)", left, top, side, side);
  const int step = std::max(1, (hi - lo + 7) / 8);
  for (int d = lo; d <= hi; d += step) {
    const double t = (d - lo) / static_cast<double>(hi - lo) * side;
    o += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#eee"/>)", left + t, top, top + side);
    o += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#eee"/>)", left, top + side - t, left + side);
    o += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">1e{}</text>)", left + t, top + side + 16, d);
    o += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">1e{}</text>)", left - 6, top + side - t + 4, d);
  }
  o += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#555" stroke-dasharray="4 3"/>)", left, top + side,
                   left + side, top);
  o += fmt::format(R"(<text x="{}" y="{}" fill="#b02a1a">error &gt; bound: fails</text>)", left + 8, top + 16);
  o += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">bound</text>)", left + side / 2, top + side + 38);
  o += fmt::format(R"svg(<text x="16" y="{0}" text-anchor="middle" transform="rotate(-90 16 {0})">worst error</text>)svg",
                   top + side / 2);
  o += "\n";
  for (const auto& p : pts) {
    o += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}" fill-opacity="0.75"><title>{}: error {:.3g}, bound {:.3g}</title></circle>)",
                     left + pos(p.bound), top + side - pos(p.error), p.failed ? "#c0392b" : "#2471a3", esc(p.row->key),
                     p.error, p.bound);
    o += "\n";
  }
  o += "</svg>\n";
  o += fmt::format("<p class=\"note\">{} kernels plotted; red: the numerics gate failed.", pts.size());
  if (zeros > 0) o += " A value of exactly 0 is drawn on the lowest decade.";
  if (unplottable > 0) o += fmt::format(" {} kernels gave a worst error or bound that is not a finite number and are not plotted.", unplottable);
  return o + "</p>\n";
}

/// "<version> <commit>" of a report's provenance, "" when it names neither.
std::string kcv_build(const nlohmann::json& provenance) {
  const std::string v = json_scalar(provenance, "kcv_version"), c = json_scalar(provenance, "kcv_commit");
  return v.empty() && c.empty() ? "" : v + " " + c;
}

std::string runs_section(const CorpusSummary& s) {
  std::set<std::string> corpora, backends;
  for (const auto& r : s.runs) {
    if (auto c = json_scalar(r, "corpus"); !c.empty()) corpora.insert(c);
    if (auto b = json_scalar(r, "backend"); !b.empty()) backends.insert(b);
  }
  auto join = [](const std::set<std::string>& v) {
    std::string o;
    for (const auto& x : v) o += (o.empty() ? "" : ", ") + esc(x);
    return o.empty() ? std::string("unknown") : o;
  };
  std::string o = fmt::format("<p class=\"meta\">corpus: {} &middot; backend: {} &middot; {} results from {} runs",
                              join(corpora), join(backends), s.results, s.runs.size());
  o += fmt::format(" &middot; verified {}, setup_error {}, timeout {}, verifier_crash {}", s.verified, s.setup_error,
                   s.timeout, s.verifier_crash);
  if (s.other_status > 0) o += fmt::format(", other status {}", s.other_status);
  o += "</p>\n";
  // Issue 21 item 8: which kcv builds, hosts and GPUs wrote the reports.
  std::set<std::string> builds, hosts, gpus, torches;
  int64_t without = 0;
  for (const auto& k : s.kernels) {
    if (kcv_build(k.provenance).empty()) {
      without += k.gates.is_array() ? 1 : 0;
      continue;
    }
    builds.insert(kcv_build(k.provenance));
    if (auto h = json_scalar(k.provenance, "host"); !h.empty()) hosts.insert(h);
    if (auto g = json_scalar(k.provenance, "gpu"); !g.empty())
      gpus.insert(g + (json_scalar(k.provenance, "driver").empty() ? "" : ", driver " + json_scalar(k.provenance, "driver")));
    if (auto t = json_scalar(k.provenance, "torch"); !t.empty()) torches.insert(t);
  }
  auto listed = [&](const std::set<std::string>& v) { return v.empty() ? std::string("none recorded") : join(v); };
  if (!builds.empty())
    o += fmt::format("<p class=\"meta\" id=\"provenance\">kcv: {} &middot; hosts: {} &middot; GPU: {} &middot; torch: {}{}</p>\n",
                     join(builds), listed(hosts), listed(gpus), listed(torches),
                     without > 0 ? fmt::format(" &middot; {} reports without provenance", without) : "");
  else if (without > 0)
    o += fmt::format("<p class=\"meta\" id=\"provenance\">No report records its provenance (kcv, host, GPU): "
                     "written by a kcv before it did ({} reports).</p>\n", without);
  if (s.duplicates > 0)
    o += fmt::format("<p class=\"note\">{} later records repeat a key already in the journal; only the first of each "
                     "key is counted.</p>\n", s.duplicates);
  if (s.reduced_sizes > 0)
    o += fmt::format("<p class=\"note\">{} verified pair{} moved more elements per call than kcv judges on the "
                     "host (KCV_MAX_ELEMENTS): judged, every gate and the baseline, at clipped sizes; the kernels table "
                     "marks them.</p>\n",
                     s.reduced_sizes, s.reduced_sizes == 1 ? "" : "s");
  if (s.bound_calibrated > 0)
    o += fmt::format("<p class=\"note\">{} verified pair{} had some elements judged by the calibrated floor, not the "
                     "derived bound (an op without a rule, or fed by one): the kernels table marks them and names the "
                     "ops.</p>\n",
                     s.bound_calibrated, s.bound_calibrated == 1 ? "" : "s");
  if (s.bound_free > 0)
    o += fmt::format("<p class=\"note\">{} verified pair{} had some elements free in class under the derived bound "
                     "(any value accepted there: a legitimate fp32 order overflows or leaves a function's domain); "
                     "the kernels table marks them and says how many.</p>\n",
                     s.bound_free, s.bound_free == 1 ? "" : "s");
  if (s.retries > 0)
    o += fmt::format("<p class=\"note\">{} time{} a pair ran out of memory or time beside other pairs and was set to run "
                     "again alone; the kernels table marks the results of those reruns.</p>\n",
                     s.retries, s.retries == 1 ? "" : "s");
  if (s.other_records > 0) o += fmt::format("<p class=\"note\">{} records of an unknown kind were ignored.</p>\n", s.other_records);
  if (s.runs.empty()) return o;
  constexpr size_t kMaxRuns = 64;
  o += "<details><summary>runs</summary><table><tr><th class=\"l\">started</th><th class=\"l\">corpus</th>"
       "<th class=\"l\">backend</th><th class=\"l\">baseline</th><th class=\"l\">shard</th><th>jobs</th></tr>\n";
  for (size_t i = 0; i < s.runs.size() && i < kMaxRuns; ++i) {
    const auto& r = s.runs[i];
    o += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
                     "<td class=\"l\">{}</td><td>{}</td></tr>\n",
                     esc(json_scalar(r, "started")), esc(json_scalar(r, "corpus")), esc(json_scalar(r, "backend")),
                     esc(json_scalar(r, "baseline")), esc(json_scalar(r, "shard")), esc(json_scalar(r, "jobs")));
  }
  o += "</table>";
  if (s.runs.size() > kMaxRuns) o += fmt::format("<p class=\"note\">and {} more runs.</p>", s.runs.size() - kMaxRuns);
  return o + "</details>\n";
}

std::string headline_section(const CorpusSummary& s) {
  std::string o = "<h2>Headline</h2>\n<div class=\"big\">\n";
  o += fmt::format("<div class=\"card\"><div class=\"n\" id=\"share-any\">{}</div>of baseline-accepted kernels fail at "
                   "least one gate<br>({} of {})</div>\n",
                   pct(s.accepted_fail_any, s.accepted), s.accepted_fail_any, s.accepted);
  o += fmt::format("<div class=\"card\"><div class=\"n\" id=\"share-ti\">{}</div>fail at least one tolerance-independent "
                   "gate (4&ndash;12)<br>({} of {})</div>\n",
                   pct(s.accepted_fail_tolerance_independent, s.accepted), s.accepted_fail_tolerance_independent, s.accepted);
  // Issue 21 item 4: a wrong answer where the problem itself calls the kernel, or a breach only a
  // library caller meets (strided views, its non-default stream, two callers at once).
  const SplitCounts& a = s.accepted_split;
  o += fmt::format("<div class=\"card\"><div class=\"n\" id=\"share-own\">{}</div>fail in the problem's own calling "
                   "convention<br>(default stream, contiguous inputs; {} of {})</div>\n",
                   pct(a.own, s.accepted), a.own, s.accepted);
  o += fmt::format("<div class=\"card\"><div class=\"n\" id=\"share-library\">{}</div>fail only as a library op<br>"
                   "(strided views, the caller's non-default stream; {} of {})</div>\n",
                   pct(a.library, s.accepted), a.library, s.accepted);
  o += fmt::format("<div class=\"card\"><div class=\"n\" id=\"share-crash\">{}</div>crash or hang in every gate, "
                   "counted once<br>({} of {})</div>\n",
                   pct(a.crash, s.accepted), a.crash, s.accepted);
  o += fmt::format("<div class=\"card\">strict: <span class=\"pass\">{} pass</span>, <span class=\"fail\">{} fail</span><br>"
                   "baseline: <span class=\"pass\">{} pass</span>, <span class=\"fail\">{} fail</span>",
                   s.strict_pass, s.strict_fail, s.baseline_pass, s.baseline_fail);
  if (s.baseline_error > 0) o += fmt::format(" ({} of them errors)", s.baseline_error);
  o += fmt::format(", {} without a verdict</div>\n</div>\n", s.baseline_missing);
  if (!s.baseline_in_use)
    o += "<p class=\"note\">This corpus ran without <code>--baseline kernelbench</code>: no kernel has a baseline "
         "verdict, so the shares and McNemar's test below are empty.</p>\n";
  else if (s.baseline_missing > 0)
    o += fmt::format("<p class=\"note\">{} results have no baseline verdict; they are left out of these shares and of "
                     "McNemar's test.</p>\n", s.baseline_missing);
  o += fmt::format("<p class=\"note\" id=\"split-all\">Over every verified kernel that fails: {} in the problem's own "
                   "calling convention, {} only as a library op, {} crash or hang in every gate{}. A kernel fails in "
                   "its own convention when some gate fails on a case called as the problem's own <code>get_inputs()</code> "
                   "caller does: contiguous inputs, the default stream, one caller (docs/kernelbench.md, \"The headline "
                   "split\").</p>\n",
                   s.split.own, s.split.library, s.split.crash,
                   s.split.unknown > 0
                       ? fmt::format("; {} fail in reports written before the split, which do not say where", s.split.unknown)
                       : "");
  o += "<p class=\"note\">A result that was not verified (setup_error: it did not build; timeout; verifier_crash) has no "
       "report. It counts as a strict fail and, as KernelBench counts a kernel that does not build or run, as a baseline "
       "fail.</p>\n";
  return o;
}

std::string mcnemar_section(const CorpusSummary& s) {
  const int64_t bp = s.both_pass + s.baseline_pass_strict_fail, bf = s.baseline_fail_strict_pass + s.both_fail;
  const int64_t sp = s.both_pass + s.baseline_fail_strict_pass, sf = s.baseline_pass_strict_fail + s.both_fail;
  std::string o = "<h2>Baseline against strict</h2>\n";
  o += fmt::format("<table id=\"table2x2\"><tr><th></th><th>strict pass</th><th>strict fail</th><th>total</th></tr>\n"
                   "<tr><th class=\"l\">baseline pass</th><td>{}</td><td>{} (b)</td><td>{}</td></tr>\n"
                   "<tr><th class=\"l\">baseline fail</th><td>{} (c)</td><td>{}</td><td>{}</td></tr>\n"
                   "<tr><th class=\"l\">total</th><td>{}</td><td>{}</td><td>{}</td></tr></table>\n",
                   s.both_pass, s.baseline_pass_strict_fail, bp, s.baseline_fail_strict_pass, s.both_fail, bf, sp, sf,
                   bp + bf);
  o += fmt::format("<p id=\"mcnemar\">McNemar's exact test: b = {}, c = {}, n = b + c = {}, two-sided p = {}.</p>\n",
                   s.mcnemar.b, s.mcnemar.c, s.mcnemar.n, pvalue(s.mcnemar.p));
  o += "<p class=\"note\">b counts kernels the baseline accepts and the strict check rejects; c the reverse. "
       "p = min(1, 2&middot;&Sigma;<sub>i&le;min(b,c)</sub> C(n,i) / 2<sup>n</sup>): the chance of a split at least "
       "this lopsided if both checks disagreed either way equally often.</p>\n";
  return o;
}

std::string gates_section(const CorpusSummary& s) {
  std::string o = fmt::format("<h2>Gates</h2>\n<p class=\"note\">Over the {} results that carry a report. Failures: fail, "
                              "crash, timeout and refused; a skip is neither.</p>\n", s.reports);
  o += "<table id=\"gates\" class=\"sortable\"><thead><tr><th>#</th><th class=\"l\">gate</th><th class=\"l\">"
       "tolerance-independent</th><th>pass</th><th>fail</th><th>crash</th><th>timeout</th><th>refused</th><th>skipped</th>"
       "<th>failures</th><th title=\"failed in the problem's own calling convention\">own</th>"
       "<th title=\"failed only as a library op\">library only</th><th title=\"kernels that fail this gate and no "
       "other\">only this gate</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < s.gates.size(); ++i) {
    const auto& g = s.gates[i];
    const auto& c = g.counts;
    o += fmt::format("<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     i + 1, esc(g.id), g.tolerance_independent ? "yes" : "no", c.pass, c.fail, c.crash, c.timeout,
                     c.refused, c.skipped, c.failures(), g.own_convention, g.library_only, g.only_this_gate);
  }
  o += "</tbody></table>\n<p class=\"note\">own / library only: of a gate's failures, those with a failing case in the "
       "problem's own calling convention, and those whose every failing case was a library op's call (a strided or "
       "offset view, inputs written on the caller's non-default stream, two callers at once). Only this gate: kernels "
       "that fail this gate and no other; a kernel that crashes or hangs in every gate counts in none.</p>\n";
  return o + gate_bars(s);
}

std::string split_cell(const std::string& split) {
  if (split == kSplitOwn) return "<span class=\"own\">own convention</span>";
  if (split == kSplitLibrary) return "<span class=\"lib\">library op only</span>";
  if (split == kSplitCrash) return "crash in every gate";
  if (split == kSplitUnknown) return "not said";
  return "&ndash;";
}

std::string kernels_section(const CorpusSummary& s) {
  std::string o = "<h2>Kernels</h2>\n<p class=\"note\">Click a column's header to sort by it; a key opens the "
                  "kernel's drill-down below.</p>\n<table id=\"kernels\" class=\"sortable\"><thead><tr>"
                  "<th class=\"l\">key</th><th class=\"l\">status</th><th class=\"l\">strict</th><th class=\"l\">"
                  "fails where</th><th class=\"l\">baseline</th><th>failing gates</th><th class=\"l\">first failing "
                  "gate</th><th class=\"l\">evidence</th><th>compile s</th><th>gates s</th><th>wall s</th><th>CPU s</th>"
                  "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const KernelRow& k = s.kernels[i];
    // A pair run again after running out of memory or time beside others says so, how, and why.
    std::string status =
        k.retried.empty()
            ? esc(k.status)
            : fmt::format("{} <span title=\"{}\">(retried {})</span>", esc(k.status), esc(truncate(k.retried, 300)),
                          k.retried_beside_at_most == 0 ? std::string("alone")
                                                        : fmt::format("beside at most {}", k.retried_beside_at_most));
    // Judged at clipped sizes: the verdicts are about those, and the row says so.
    if (!k.reduced_sizes.empty())
      status += fmt::format(" <span title=\"{}\">(clipped sizes)</span>", esc(truncate(k.reduced_sizes, 300)));
    if (!k.bound_calibrated.empty())
      status += fmt::format(" <span title=\"{}\">(calibrated in part)</span>", esc(truncate(k.bound_calibrated, 300)));
    if (!k.bound_free.empty())
      status += fmt::format(" <span title=\"{}\">(free in part)</span>", esc(truncate(k.bound_free, 300)));
    o += fmt::format("<tr class=\"{}\"><td class=\"l\"><a href=\"#k{}\">{}</a></td><td class=\"l\">{}</td>"
                     "<td class=\"l v\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>"
                     "<td class=\"l\">{}</td><td class=\"ev\">{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td>"
                     "<td>{}</td></tr>\n",
                     k.strict_pass ? "sp" : "sf", i, esc(k.key), status, k.strict_pass ? "pass" : "fail",
                     split_cell(k.split), esc(k.baseline), k.failing_gates, esc(k.first_failing_gate),
                     esc(truncate(k.evidence, 200)), seconds(k.compile_seconds), k.gate_seconds, k.wall_seconds,
                     seconds(k.cpu_seconds));
  }
  return o + "</tbody></table>\n";
}

/// Issue 21 item 8: per kernel, every gate's verdict, evidence, failing cases and the command that
/// replays its first failing case (case 0 for a gate that passed), and the report's provenance.
std::string drilldown_section(const CorpusSummary& s, const std::string& out_dir) {
  constexpr std::size_t kMaxCases = 40, kMaxEvidence = 4000;
  std::string o = "<h2>Drill-down</h2>\n<p class=\"note\">Each kernel's gates with their evidence, and the command "
                  "that reruns one case exactly (same seed, same inputs) from this corpus's journal.</p>\n";
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const KernelRow& k = s.kernels[i];
    o += fmt::format("<details class=\"kernel\" id=\"k{}\"><summary><code>{}</code> &middot; {} &middot; strict {}{}"
                     "</summary>\n",
                     i, esc(k.key), esc(k.status), k.strict_pass ? "pass" : "fail",
                     k.split.empty() ? "" : " &middot; " + split_cell(k.split));
    if (!k.gates.is_array() || k.gates.empty()) {
      o += fmt::format("<p class=\"ev\">No report: {}</p></details>\n", esc(truncate(k.evidence, kMaxEvidence)));
      continue;
    }
    if (k.provenance.is_object()) {
      o += "<table class=\"prov\">";
      for (const auto& [key, value] : k.provenance.items()) {
        if (value.is_null()) continue;
        o += fmt::format("<tr><th class=\"l\">{}</th><td class=\"l ev\">{}</td></tr>", esc(clean_text(key)),
                         esc(truncate(clean_text(value.is_string() ? value.get<std::string>() : value.dump()), 600)));
      }
      o += "</table>\n";
    } else {
      o += "<p class=\"note\">The report has no provenance (written by a kcv before it recorded one).</p>\n";
    }
    o += "<table class=\"sortable\"><thead><tr><th class=\"l\">gate</th><th class=\"l\">verdict</th><th class=\"l\">"
         "fails where</th><th>cases</th><th>s</th><th class=\"l\">evidence</th><th class=\"l\">failing cases</th>"
         "<th class=\"l\">replay</th></tr></thead><tbody>\n";
    for (const auto& g : k.gates) {
      const std::string id = json_scalar(g, "id"), verdict = json_scalar(g, "verdict");
      const std::string convention = json_scalar(g, "convention");
      std::string cases_html;
      int64_t first_case = 0;
      bool have_first = false;
      if (auto f = g.is_object() ? g.find("failing_cases") : g.end(); g.is_object() && f != g.end() && f->is_array()) {
        std::size_t n = 0;
        for (const auto& c : *f) {
          if (!have_first && c.is_object() && c.contains("case") && c["case"].is_number_integer())
            first_case = c["case"].get<int64_t>(), have_first = true;
          if (n++ >= kMaxCases) continue;
          cases_html += fmt::format("{}{} ({}{})", cases_html.empty() ? "" : "<br>", esc(json_scalar(c, "case")),
                                    esc(truncate(json_scalar(c, "label"), 200)),
                                    json_scalar(c, "convention").empty()
                                        ? ""
                                        : ", " + esc(json_scalar(c, "convention")));
        }
        if (n > kMaxCases) cases_html += fmt::format("<br>and {} more", n - kMaxCases);
      }
      std::string lower = verdict;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const bool skipped = lower == "skipped";
      const std::string replay =
          skipped || id.empty() ? "&ndash;"
                                : fmt::format("<code class=\"replay\">{}</code>",
                                              esc(fmt::format("kcv replay {} --key {} --gate {} --case {}",
                                                              shell_word(out_dir), shell_word(k.key),
                                                              shell_word(id), first_case)));
      o += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td>"
                       "<td class=\"ev\">{}</td><td class=\"ev\">{}</td><td class=\"l\">{}</td></tr>\n",
                       esc(id), esc(verdict),
                       convention == "own" ? "<span class=\"own\">own convention</span>"
                       : convention == "library" ? "<span class=\"lib\">library op only</span>" : "&ndash;",
                       esc(json_scalar(g, "cases")), esc(json_scalar(g, "seconds")),
                       esc(truncate(json_scalar(g, "evidence"), kMaxEvidence)), cases_html, replay);
    }
    o += "</tbody></table></details>\n";
  }
  return o;
}

}  // namespace

std::string corpus_report_html(const std::vector<nlohmann::json>& journal_records, const std::string& out_dir) {
  const CorpusSummary s = summarize_corpus(journal_records);
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<title>kcv corpus report</title>\n<style>";
  o += kStyle;
  o += "</style>\n</head>\n<body>\n<h1>kcv corpus report</h1>\n";
  o += runs_section(s);
  o += headline_section(s);
  o += mcnemar_section(s);
  o += gates_section(s);
  o += "<h2>Numerics: worst error against its bound</h2>\n" + numerics_scatter(s);
  o += kernels_section(s);
  o += drilldown_section(s, out_dir);
  o += fmt::format("<p class=\"note\">Written by <code>kcv report</code> (kcv {} {}) from the corpus journal; reports are "
                   "kcv.report/1.</p>\n<script>{}</script>\n</body>\n</html>\n",
                   kcv_version(), kcv_commit(), kSortScript);
  return o;
}

nlohmann::json corpus_summary_json(const CorpusSummary& s) {
  auto split = [](const SplitCounts& c) {
    return nlohmann::json{{"own_convention", c.own}, {"library_only", c.library}, {"crash", c.crash}, {"unknown", c.unknown}};
  };
  nlohmann::json gates = nlohmann::json::array();
  for (const auto& g : s.gates)
    gates.push_back({{"id", g.id}, {"tolerance_independent", g.tolerance_independent}, {"pass", g.counts.pass},
                     {"fail", g.counts.fail}, {"crash", g.counts.crash}, {"timeout", g.counts.timeout},
                     {"refused", g.counts.refused}, {"skipped", g.counts.skipped}, {"failures", g.counts.failures()},
                     {"own_convention", g.own_convention}, {"library_only", g.library_only},
                     {"only_this_gate", g.only_this_gate}});
  std::set<std::string> builds;
  for (const auto& k : s.kernels)
    if (!kcv_build(k.provenance).empty()) builds.insert(kcv_build(k.provenance));
  nlohmann::json j = {
      {"schema", "kcv.corpus-summary/1"},
      {"results", s.results}, {"verified", s.verified}, {"setup_error", s.setup_error}, {"timeout", s.timeout},
      {"verifier_crash", s.verifier_crash}, {"strict_pass", s.strict_pass}, {"strict_fail", s.strict_fail},
      {"baseline_pass", s.baseline_pass}, {"baseline_fail", s.baseline_fail}, {"baseline_missing", s.baseline_missing},
      {"accepted", s.accepted}, {"accepted_fail_any", s.accepted_fail_any},
      {"accepted_fail_tolerance_independent", s.accepted_fail_tolerance_independent},
      {"accepted_split", split(s.accepted_split)}, {"split", split(s.split)},
      {"mcnemar", {{"b", s.mcnemar.b}, {"c", s.mcnemar.c}, {"p", s.mcnemar.p}}},
      {"reduced_sizes", s.reduced_sizes}, {"bound_calibrated", s.bound_calibrated},
      {"bound_free", s.bound_free},
      {"gates", gates}, {"kcv_builds", builds}, {"written_by", fmt::format("{} {}", kcv_version(), kcv_commit())}};
  return j;
}

std::string corpus_summary_markdown(const CorpusSummary& s) {
  auto share = [&](int64_t n) {
    return s.accepted > 0 ? fmt::format("{} of {} ({:.1f}%)", n, s.accepted, 100.0 * n / s.accepted) : std::string("n/a");
  };
  std::string o = fmt::format("{} results: {} with a report ({} strict pass, {} strict fail), {} setup errors, {} "
                              "timeouts, {} verifier crashes.\n\n",
                              s.results, s.reports, s.strict_pass, s.reports - s.strict_pass, s.setup_error, s.timeout,
                              s.verifier_crash);
  o += "| of the kernels KernelBench's check accepts | kernels |\n|---|---|\n";
  o += fmt::format("| fail at least one gate | {} |\n", share(s.accepted_fail_any));
  o += fmt::format("| fail a tolerance-independent gate (4-12) | {} |\n", share(s.accepted_fail_tolerance_independent));
  o += fmt::format("| fail in the problem's own calling convention | {} |\n", share(s.accepted_split.own));
  o += fmt::format("| fail only as a library op (strided views, the caller's non-default stream) | {} |\n",
                   share(s.accepted_split.library));
  o += fmt::format("| crash or hang in every gate (counted once) | {} |\n", share(s.accepted_split.crash));
  if (s.accepted_split.unknown > 0)
    o += fmt::format("| fail, reports written before the split (not said) | {} |\n", share(s.accepted_split.unknown));
  o += fmt::format("\nOver every verified kernel that fails: own calling convention {}, library op only {}, crash in "
                   "every gate {}{}.\n\n",
                   s.split.own, s.split.library, s.split.crash,
                   s.split.unknown > 0 ? fmt::format(", not said {}", s.split.unknown) : "");
  o += "| gate | failures | own convention | library op only | only this gate |\n|---|---|---|---|---|\n";
  for (const auto& g : s.gates)
    o += fmt::format("| {} | {} | {} | {} | {} |\n", g.id, g.counts.failures(), g.own_convention, g.library_only,
                     g.only_this_gate);
  return clean_text(o, true);
}

namespace {

/// Writes text to dir/name through a temporary file and a rename. Throws SetupError.
void write_atomically(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target = dir / name;
  const fs::path tmp = dir / fmt::format(".{}.{}.tmp", name, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw SetupError(fmt::format("cannot write {}", tmp.string()));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    throw SetupError(fmt::format("cannot write {}: {}", target.string(), why));
  }
}

}  // namespace

void write_corpus_report(const std::string& out_dir) {
  namespace fs = std::filesystem;
  const fs::path journal = fs::path(out_dir) / "journal.jsonl";
  std::error_code ec;
  if (!fs::is_regular_file(journal, ec))
    throw SetupError(fmt::format("no corpus journal at {} (run `kcv corpus run DIR --out {}` first)", journal.string(), out_dir));
  const std::vector<nlohmann::json> records = read_journal(journal.string());
  write_atomically(out_dir, "report.html", corpus_report_html(records, out_dir));
  const CorpusSummary summary = summarize_corpus(records);
  write_atomically(out_dir, "summary.json", corpus_summary_json(summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  write_atomically(out_dir, "summary.md", corpus_summary_markdown(summary));
}

}  // namespace kcv
