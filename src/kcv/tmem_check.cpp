// The static TMEM check of sm_100 candidates (tmem_check.hpp; what it proves: docs/blackwell.md).
#include "kcv/tmem_check.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;

namespace kcv::tmem {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "fail";
    case Outcome::open: return "not determined";
  }
  return "?";
}

int resident_ctas(int threads, int regs, long smem_bytes, const SmLimits& sm) {
  // NOTES: cuda_occupancy.h (CUDA 13), cudaOccMaxBlocksPerSM*Limit for compute capability 10:
  // warps per CTA rounded up; registers per warp rounded up to 256 and placed per sub-partition
  // (65536 / 4 each); shared memory per CTA = static + dynamic + 1 KiB reserved, rounded up to 128
  // bytes, against the largest carveout. The carveout the driver picks can only lower the count.
  const int warps = (std::max(threads, 1) + 31) / 32;
  if (threads > 1024 || smem_bytes > sm.smem_per_cta_max || regs > 255) return 0;
  int by_threads = sm.threads_per_sm / (warps * 32);
  int by_regs = sm.ctas_per_sm;
  if (regs > 0) {
    const int per_warp = (regs * 32 + sm.reg_granularity - 1) / sm.reg_granularity * sm.reg_granularity;
    const int warps_per_sm = sm.regs_per_sm / sm.sub_partitions / per_warp * sm.sub_partitions;
    by_regs = warps_per_sm / warps;
  }
  const long per_cta = (smem_bytes + sm.smem_reserved_per_cta + sm.smem_granularity - 1) / sm.smem_granularity *
                       sm.smem_granularity;
  const int by_smem = static_cast<int>(sm.smem_per_sm / per_cta);
  return std::min({by_threads, by_regs, by_smem, sm.ctas_per_sm});
}

namespace {

struct Instr {
  int line = 0;             // 1-based line in the PTX
  std::string guard;        // predicate register, empty when unguarded
  bool guard_negated = false;
  std::string op;           // e.g. "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32"
  std::vector<std::string> args;
  std::vector<std::string> defs;  // registers it writes (first operand, or the {..} / a|b list)
};

/// Operands split at top-level commas ({a, b} and [a+4] stay whole).
std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim_blanks(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim_blanks(cur).empty()) out.push_back(trim_blanks(cur));
  return out;
}

std::vector<std::string> registers_in(const std::string& s) {
  static const std::regex reg("%[A-Za-z_][A-Za-z0-9_$]*");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), reg); it != std::sregex_iterator(); ++it) out.push_back(it->str());
  return out;
}

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

/// Ops whose first operand is not a destination.
bool writes_first_operand(const std::string& op) {
  if (op.find(".red") != std::string::npos && (starts_with(op, "bar") || starts_with(op, "barrier"))) return true;
  for (std::string_view p : {"st.", "st", "red.", "bra", "ret", "exit", "trap", "bar", "barrier", "fence", "membar",
                             "tcgen05.", "call", "prefetch", "cp.async", "mbarrier.init", "mbarrier.arrive.",
                             "griddepcontrol", "wgmma.fence", "wgmma.commit", "wgmma.wait", "stmatrix",
                             "setmaxnreg"})
    if (starts_with(op, p)) return op.rfind("tcgen05.ld", 0) == 0 || op.rfind("mbarrier.arrive.", 0) == 0;
  return true;
}

struct Entry {
  std::string name;
  int threads = 0;
  bool required_threads = false;  // .reqntid (exact) rather than .maxntid (a bound)
  bool dynamic_smem = false;
  bool calls_tmem_function = false;
  std::vector<Instr> code;
  std::unordered_map<std::string, int> labels;  // label -> index of the next instruction
};

int line_at(const std::string& text, std::size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

/// The body between the '{' at `open` and its matching '}'; npos-safe.
std::size_t matching_brace(const std::string& text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return i;
  }
  return text.size();
}

void parse_body(const std::string& ptx, std::size_t begin, std::size_t end, Entry& e) {
  std::istringstream in(ptx.substr(begin, end - begin));
  int line = line_at(ptx, begin) - 1;
  static const std::regex label("^([A-Za-z_$][A-Za-z0-9_$]*)\\s*:(.*)$");
  for (std::string raw; std::getline(in, raw);) {
    ++line;
    if (auto c = raw.find("//"); c != std::string::npos) raw.resize(c);
    std::stringstream pieces(raw);
    for (std::string piece; std::getline(pieces, piece, ';');) {
      piece = trim_blanks(piece);
      auto count = [&](char c) { return std::count(piece.begin(), piece.end(), c); };
      while (!piece.empty() && piece.front() == '{' && count('{') > count('}')) piece = trim_blanks(piece.substr(1));
      while (!piece.empty() && piece.back() == '}' && count('}') > count('{')) piece = trim_blanks(piece.substr(0, piece.size() - 1));
      std::smatch m;
      if (std::regex_match(piece, m, label)) {
        e.labels[m[1].str()] = static_cast<int>(e.code.size());
        piece = trim_blanks(m[2].str());
      }
      if (piece.empty() || piece.front() == '.') continue;
      Instr ins;
      ins.line = line;
      if (piece.front() == '@') {
        const auto sp = piece.find_first_of(" \t");
        ins.guard = piece.substr(1, sp - 1);
        if (!ins.guard.empty() && ins.guard.front() == '!') {
          ins.guard_negated = true;
          ins.guard.erase(0, 1);
        }
        piece = trim_blanks(sp == std::string::npos ? "" : piece.substr(sp));
      }
      const auto sp = piece.find_first_of(" \t");
      ins.op = piece.substr(0, sp);
      if (sp != std::string::npos) ins.args = split_args(piece.substr(sp));
      if (!ins.args.empty() && writes_first_operand(ins.op)) ins.defs = registers_in(ins.args[0]);
      if (starts_with(ins.op, "call")) {
        // call (ret), func, (args): the return registers are written.
        if (!ins.args.empty() && ins.args[0].front() == '(') ins.defs = registers_in(ins.args[0]);
      }
      e.code.push_back(std::move(ins));
    }
  }
}

std::vector<Entry> parse_entries(const std::string& ptx) {
  // Module-scope extern shared arrays: dynamic shared memory when an entry names one.
  std::vector<std::string> externs;
  static const std::regex ext("\\.extern\\s+\\.shared[^;]*?([A-Za-z_$][A-Za-z0-9_$]*)\\s*\\[\\s*\\]\\s*;");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), ext); it != std::sregex_iterator(); ++it)
    externs.push_back((*it)[1].str());
  // Functions (not entries) that hold TMEM allocation instructions.
  std::vector<std::string> tmem_funcs;
  static const std::regex func("\\.func\\s+(\\([^)]*\\)\\s*)?([A-Za-z_$][A-Za-z0-9_$]*)\\s*\\(");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), func); it != std::sregex_iterator(); ++it) {
    const std::size_t open = ptx.find('{', static_cast<std::size_t>(it->position(0)));
    const std::size_t semi = ptx.find(';', static_cast<std::size_t>(it->position(0)));
    if (open == std::string::npos || (semi != std::string::npos && semi < open)) continue;  // a declaration
    const std::string body = ptx.substr(open, matching_brace(ptx, open) - open);
    if (body.find("tcgen05.alloc") != std::string::npos || body.find("tcgen05.dealloc") != std::string::npos ||
        body.find("tcgen05.relinquish_alloc_permit") != std::string::npos)
      tmem_funcs.push_back((*it)[2].str());
  }
  std::vector<Entry> out;
  static const std::regex entry("\\.entry\\s+([A-Za-z_$][A-Za-z0-9_$]*)\\s*\\(");
  static const std::regex ntid("\\.(reqntid|maxntid)\\s+(\\d+)(\\s*,\\s*(\\d+))?(\\s*,\\s*(\\d+))?");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator(); ++it) {
    Entry e;
    e.name = (*it)[1].str();
    const std::size_t params_end = ptx.find(')', static_cast<std::size_t>(it->position(0) + it->length(0)));
    const std::size_t open = ptx.find('{', params_end);
    if (params_end == std::string::npos || open == std::string::npos) continue;
    const std::string directives = ptx.substr(params_end, open - params_end);
    std::smatch m;
    if (std::regex_search(directives, m, ntid)) {
      e.required_threads = m[1] == "reqntid";
      e.threads = std::stoi(m[2]) * (m[4].matched ? std::stoi(m[4]) : 1) * (m[6].matched ? std::stoi(m[6]) : 1);
    }
    const std::size_t close = matching_brace(ptx, open);
    const std::string body = ptx.substr(open, close - open);
    for (const auto& x : externs)
      if (std::regex_search(body, std::regex("[^A-Za-z0-9_$]" + x + "[^A-Za-z0-9_$]"))) e.dynamic_smem = true;
    parse_body(ptx, open + 1, close, e);
    for (const auto& ins : e.code)
      if (starts_with(ins.op, "call"))
        for (const auto& f : tmem_funcs)
          for (const auto& a : ins.args)
            if (a == f) e.calls_tmem_function = true;
    out.push_back(std::move(e));
  }
  return out;
}

/// ptxas -v: registers and static shared memory per entry.
std::map<std::string, std::pair<int, long>> parse_ptxas(const std::string& report) {
  std::map<std::string, std::pair<int, long>> out;
  static const std::regex compiling("Compiling entry function '([^']+)'");
  static const std::regex used("Used (\\d+) registers");
  static const std::regex smem("(\\d+) bytes smem");
  std::istringstream in(report);
  std::string current;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, compiling)) {
      current = m[1].str();
      out[current] = {0, 0};
    } else if (!current.empty() && std::regex_search(line, m, used)) {
      out[current].first = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) out[current].second = std::stol(m[1]);
    }
  }
  return out;
}

int cta_group_of(const std::string& op) { return op.find("cta_group::2") != std::string::npos ? 2 : 1; }

// ---- the path check: every path of one thread through the entry, with correlated branches ----

/// A branch condition known along a path: predicates defined by one setp with integer operands are
/// named by the comparison itself, so `setp.gt.u32 %p1, %r1, 31` and a later `setp.gt.u32 %p2,
/// %r1, 31` (or `setp.le.u32 ..., %r1, 31` negated) are the same fact while %r1 is not rewritten.
struct Condition {
  std::string key;                 // empty: not known (the branch forks without a fact)
  bool polarity = true;            // the predicate equals the key's truth (false: its negation)
  std::vector<std::string> reads;  // registers the fact depends on
};

struct PathState {
  int pc = 0;
  int held_allocs = 0;      // allocations not yet deallocated
  int held_columns = 0;     // their columns (known ones)
  bool held_unknown = false;
  int alloc_line = 0;       // the last allocation on this path
  bool allocated = false, relinquished = false, cluster_waited = false;
  std::vector<std::pair<std::string, bool>> facts;  // sorted

  std::string key() const {
    std::string k = fmt::format("{}|{}|{}|{}|{}|{}{}{}|", pc, held_allocs, held_columns, held_unknown, alloc_line,
                                allocated, relinquished, cluster_waited);
    for (const auto& [f, v] : facts) k += f + (v ? "=1;" : "=0;");
    return k;
  }
  const bool* fact(const std::string& k) const {
    for (const auto& f : facts)
      if (f.first == k) return &f.second;
    return nullptr;
  }
  void set_fact(const std::string& k, bool v) {
    facts.emplace_back(k, v);
    std::sort(facts.begin(), facts.end());
  }
};

struct PathFindings {
  std::vector<std::string> problems;  // each rule's first counterexample
  std::set<std::string> seen_rules;
  int peak_columns = 0;
  bool peak_unknown = false;
  bool gave_up = false;
  std::string gave_up_why;
  void add(const std::string& rule, const std::string& text) {
    if (seen_rules.insert(rule).second) problems.push_back(text);
  }
};

class PathCheck {
 public:
  PathCheck(const Entry& e, const std::map<int, int>& alloc_columns) : e_(e), columns_(alloc_columns) {
    for (const auto& ins : e.code)
      for (const auto& d : ins.defs) ++defs_[d];
    for (std::size_t i = 0; i < e.code.size(); ++i)
      for (const auto& d : e.code[i].defs) def_at_[d] = static_cast<int>(i);
    // NOTES: a fact is kept along a path only for a condition that guards TMEM structure: a guarded
    // TMEM instruction, ret or exit, or a forward branch over one. Dropping a fact never hides a
    // path (the branch then forks both ways); keeping every fact multiplies the states by two per
    // unrelated branch (glr's kernel: more than 400000).
    auto tmem_relevant = [](const Instr& i) {
      return starts_with(i.op, "tcgen05.alloc") || starts_with(i.op, "tcgen05.dealloc") ||
             starts_with(i.op, "tcgen05.relinquish") || starts_with(i.op, "barrier.cluster") || i.op == "ret" ||
             i.op == "exit";
    };
    for (std::size_t i = 0; i < e.code.size(); ++i) {
      const Instr& ins = e.code[i];
      if (ins.guard.empty() || conditions_.count(ins.guard)) continue;
      bool relevant = tmem_relevant(ins);
      if (!relevant && starts_with(ins.op, "bra") && !ins.args.empty())
        if (auto t = e.labels.find(ins.args.back()); t != e.labels.end())
          for (int j = static_cast<int>(i) + 1; j < t->second && !relevant; ++j)
            relevant = tmem_relevant(e.code[static_cast<std::size_t>(j)]);
      if (relevant) conditions_[ins.guard] = condition_of(ins.guard);
    }
  }

  PathFindings run() {
    PathFindings f;
    std::vector<PathState> stack(1);
    std::unordered_set<std::string> visited;
    constexpr std::size_t kMaxStates = 400000;
    while (!stack.empty()) {
      PathState s = std::move(stack.back());
      stack.pop_back();
      if (!visited.insert(s.key()).second) continue;
      if (visited.size() > kMaxStates) {
        f.gave_up = true;
        f.gave_up_why = fmt::format("more than {} path states", kMaxStates);
        return f;
      }
      step(s, stack, f);
      if (f.gave_up) return f;
    }
    return f;
  }

 private:
  Condition condition_of(const std::string& pred) const {
    Condition c;
    auto d = defs_.find(pred);
    if (d == defs_.end() || d->second != 1) return c;
    const Instr& def = e_.code[static_cast<std::size_t>(def_at_.at(pred))];
    static const std::regex setp("setp\\.(eq|ne|lt|ge|le|gt|lo|hs|ls|hi)\\.([subf])(\\d+)");
    std::smatch m;
    if (std::regex_match(def.op, m, setp) && m[2] != "f" && def.args.size() == 3 &&
        def.args[0].find('|') == std::string::npos) {
      const std::string cmp = m[1].str();
      const bool neg = cmp == "ne" || cmp == "ge" || cmp == "gt" || cmp == "hs" || cmp == "hi";
      static const std::map<std::string, std::string> base = {{"eq", "eq"}, {"ne", "eq"}, {"lt", "lt"}, {"ge", "lt"},
                                                       {"le", "le"}, {"gt", "le"}, {"lo", "lt"}, {"hs", "lt"},
                                                       {"ls", "le"}, {"hi", "le"}};
      const bool is_unsigned = m[2] == "u" || m[2] == "b" || cmp == "lo" || cmp == "hs" || cmp == "ls" || cmp == "hi";
      c.key = fmt::format("{}.{}{} {} {}", base.at(cmp), is_unsigned ? "u" : "s", m[3].str(), def.args[1], def.args[2]);
      c.polarity = !neg;
      c.reads = registers_in(def.args[1] + " " + def.args[2]);
      c.reads.push_back(pred);
      return c;
    }
    c.key = "pred " + pred;
    c.reads = {pred};
    return c;
  }

  /// The successors of a guarded instruction: {state where the guard holds, where it does not};
  /// a known fact leaves one of them empty.
  std::pair<std::optional<PathState>, std::optional<PathState>> fork(const PathState& s, const Instr& ins) const {
    if (ins.guard.empty()) return {s, std::nullopt};
    const auto known_condition = conditions_.find(ins.guard);
    if (known_condition == conditions_.end() || known_condition->second.key.empty()) return {s, s};
    const Condition& c = known_condition->second;
    // guard holds <=> predicate == !negated <=> key truth == (polarity == !negated)
    const bool key_when_guard_holds = c.polarity != ins.guard_negated;
    if (const bool* known = s.fact(c.key)) {
      if (*known == key_when_guard_holds) return {s, std::nullopt};
      return {std::nullopt, s};
    }
    PathState yes = s, no = s;
    yes.set_fact(c.key, key_when_guard_holds);
    no.set_fact(c.key, !key_when_guard_holds);
    return {yes, no};
  }

  void forget_written(PathState& s, const Instr& ins) const {
    if (ins.defs.empty() || s.facts.empty()) return;
    std::erase_if(s.facts, [&](const auto& f) {
      for (const auto& d : ins.defs) {
        // the key names its registers as text; a written register ends the fact
        const std::string& k = f.first;
        for (std::size_t p = k.find(d); p != std::string::npos; p = k.find(d, p + 1)) {
          const std::size_t after = p + d.size();
          if (after >= k.size() || !(std::isalnum(static_cast<unsigned char>(k[after])) || k[after] == '_')) return true;
        }
      }
      return false;
    });
  }

  void at_exit(const PathState& s, const Instr* ins, PathFindings& f) const {
    const int line = ins ? ins->line : (e_.code.empty() ? 0 : e_.code.back().line);
    if (s.held_allocs > 0)
      f.add("dealloc", fmt::format("a path from tcgen05.alloc (PTX line {}) reaches the exit (line {}) without tcgen05.dealloc",
                                   s.alloc_line, line));
    if (s.allocated && !s.relinquished)
      f.add("relinquish", fmt::format("a path from tcgen05.alloc (PTX line {}) reaches the exit (line {}) without "
                                      "tcgen05.relinquish_alloc_permit",
                                      s.alloc_line, line));
  }

  void execute(PathState& s, const Instr& ins, PathFindings& f) const {
    if (starts_with(ins.op, "tcgen05.alloc")) {
      if (s.relinquished)
        f.add("alloc-after-relinquish",
              fmt::format("tcgen05.alloc (PTX line {}) after tcgen05.relinquish_alloc_permit on a path", ins.line));
      const auto cols = columns_.find(ins.line);
      if (cols == columns_.end() || cols->second < 0) s.held_unknown = true;
      else s.held_columns += cols->second;
      ++s.held_allocs;
      s.allocated = true;
      s.alloc_line = ins.line;
      s.cluster_waited = false;
      if (s.held_unknown) f.peak_unknown = true;
      f.peak_columns = std::max(f.peak_columns, s.held_columns);
      if (s.held_allocs > 8 || s.held_columns > 512) {
        f.add("columns", fmt::format("one CTA holds {} allocations ({} columns) at tcgen05.alloc (PTX line {})",
                                     s.held_allocs, s.held_columns, ins.line));
        f.gave_up = true;
        f.gave_up_why = "allocations grow without bound along a loop";
      }
    } else if (starts_with(ins.op, "tcgen05.dealloc")) {
      if (cta_group_of(ins.op) == 2 && s.allocated && !s.cluster_waited)
        f.add("cluster", fmt::format("cta_group::2 tcgen05.dealloc (PTX line {}) with no barrier.cluster.wait since "
                                     "tcgen05.alloc (line {}) on a path: one CTA can free the pair's columns before "
                                     "its peer has allocated",
                                     ins.line, s.alloc_line));
      if (s.held_allocs > 0 && --s.held_allocs == 0) {
        s.held_columns = 0;
        s.held_unknown = false;
      } else if (const auto cols = columns_.find(ins.line); cols != columns_.end() && cols->second > 0) {
        s.held_columns = std::max(0, s.held_columns - cols->second);
      }
    } else if (starts_with(ins.op, "tcgen05.relinquish_alloc_permit")) {
      s.relinquished = true;
    } else if (starts_with(ins.op, "barrier.cluster.wait")) {
      s.cluster_waited = true;
    }
  }

  void step(const PathState& s, std::vector<PathState>& stack, PathFindings& f) const {
    if (s.pc >= static_cast<int>(e_.code.size())) {
      at_exit(s, nullptr, f);
      return;
    }
    const Instr& ins = e_.code[static_cast<std::size_t>(s.pc)];
    auto [taken, skipped] = fork(s, ins);
    if (skipped) {  // the guard is false: the instruction does nothing
      skipped->pc++;
      forget_written(*skipped, ins);
      stack.push_back(std::move(*skipped));
    }
    if (!taken) return;
    PathState t = std::move(*taken);
    if (starts_with(ins.op, "bra")) {
      const auto target = e_.labels.find(ins.args.empty() ? "" : ins.args.back());
      if (target == e_.labels.end()) {
        f.gave_up = true;
        f.gave_up_why = fmt::format("branch to an unknown label at PTX line {}", ins.line);
        return;
      }
      t.pc = target->second;
      stack.push_back(std::move(t));
      return;
    }
    if (starts_with(ins.op, "brx")) {
      f.gave_up = true;
      f.gave_up_why = fmt::format("indirect branch (brx.idx) at PTX line {}", ins.line);
      return;
    }
    if (ins.op == "ret" || ins.op == "exit") {
      at_exit(t, &ins, f);
      return;
    }
    if (ins.op == "trap") return;  // the grid ends with an error; its columns go with the context
    execute(t, ins, f);
    forget_written(t, ins);
    t.pc++;
    stack.push_back(std::move(t));
  }

  const Entry& e_;
  const std::map<int, int>& columns_;
  std::unordered_map<std::string, int> defs_;    // register -> number of instructions writing it
  std::unordered_map<std::string, int> def_at_;  // register -> its (last) writing instruction
  std::unordered_map<std::string, Condition> conditions_;  // guards whose facts paths keep
};

/// The column operand of an alloc/dealloc: an immediate, or a register set once from an immediate.
int columns_of(const Entry& e, const Instr& ins, const std::unordered_map<std::string, int>& defs) {
  if (ins.args.empty()) return -1;
  const std::string& a = ins.args.back();
  auto number = [](const std::string& s) -> int {
    static const std::regex num("(0[xX][0-9a-fA-F]+|\\d+)U?");
    std::smatch m;
    if (!std::regex_match(s, m, num)) return -1;
    return static_cast<int>(std::stol(m[1].str(), nullptr, 0));
  };
  if (a.front() != '%') return number(a);
  if (auto d = defs.find(a); d == defs.end() || d->second != 1) return -1;
  for (const auto& i : e.code)
    if (!i.defs.empty() && i.defs[0] == a && i.guard.empty() && starts_with(i.op, "mov.") && i.args.size() == 2)
      return number(i.args[1]);
  return -1;
}

std::string short_name(const std::string& n) { return n.size() <= 60 ? n : n.substr(0, 57) + "..."; }

KernelTmem check_entry(const Entry& e, const std::map<std::string, std::pair<int, long>>& res, const SmLimits& sm) {
  KernelTmem k;
  k.name = e.name;
  std::unordered_map<std::string, int> defs;
  for (const auto& ins : e.code)
    for (const auto& d : ins.defs) ++defs[d];
  std::map<int, int> columns;  // PTX line of an alloc/dealloc -> its columns (-1: not determined)
  std::vector<std::string> bad;
  for (const auto& ins : e.code)
    if (starts_with(ins.op, "tcgen05.alloc") || starts_with(ins.op, "tcgen05.dealloc")) {
      const int c = columns_of(e, ins, defs);
      columns[ins.line] = c;
      if (starts_with(ins.op, "tcgen05.alloc")) {
        k.uses_tmem = true;
        k.cta_group = std::max(k.cta_group, cta_group_of(ins.op));
        if (c >= 0 && (c < 32 || c > sm.tmem_columns || (c & (c - 1)) != 0))
          bad.push_back(fmt::format("tcgen05.alloc of {} columns (PTX line {}): not a power of two in [32, 512]", c, ins.line));
      }
    }
  if (auto r = res.find(e.name); r != res.end()) {
    k.regs = r->second.first;
    k.static_smem = r->second.second;
  }
  k.threads = e.threads;
  k.dynamic_smem = e.dynamic_smem;
  if (!k.uses_tmem) return k;

  std::vector<std::string> notes;
  PathFindings paths = PathCheck(e, columns).run();
  for (auto& p : paths.problems) bad.push_back(std::move(p));
  if (paths.gave_up && paths.problems.empty())
    notes.push_back(fmt::format("paths not proven ({})", paths.gave_up_why));
  if (e.calls_tmem_function) notes.push_back("calls a function that holds TMEM instructions: its paths are not followed");
  // Columns one CTA holds at once: the path peak when every path was followed, else the sum of
  // its allocation sites (each counted once: not determined when an alloc sits in a loop).
  int site_sum = 0;
  for (const auto& ins : e.code)
    if (starts_with(ins.op, "tcgen05.alloc")) {
      const int c = columns.at(ins.line);
      site_sum = site_sum < 0 || c < 0 ? -1 : site_sum + c;
    }
  k.columns = !paths.gave_up ? (paths.peak_unknown ? -1 : paths.peak_columns) : site_sum;

  // Residency: the declared block size (.reqntid exact; .maxntid taken as the block size), else
  // anything from one warp to 1024 threads; dynamic shared memory 0 unless the entry names extern
  // shared memory, then anything up to the per-CTA maximum.
  const int regs = std::max(k.regs, 0);
  const long smem0 = std::max(k.static_smem, 0L);
  const int t_lo = e.threads > 0 ? e.threads : 32, t_hi = e.threads > 0 ? e.threads : 1024;
  k.ctas_max = resident_ctas(t_lo, regs, smem0, sm);
  k.ctas_min = resident_ctas(t_hi, regs, e.dynamic_smem ? sm.smem_per_cta_max : smem0, sm);
  if (k.ctas_min == 0) k.ctas_min = resident_ctas(t_hi, regs, smem0, sm) > 0 ? 1 : 0;
  const std::string block = e.threads > 0 ? fmt::format("{} threads ({})", e.threads, e.required_threads ? "reqntid" : "maxntid")
                                          : std::string("no launch bound: 32..1024 threads");
  const std::string numbers = fmt::format(
      "{} regs/thread{}, {} B static smem{}, block {}; sm_100: 2048 threads, 64K regs, 228 KiB smem (+1 KiB/CTA), "
      "32 CTAs per SM",
      regs, k.regs < 0 ? " (not reported)" : "", smem0, e.dynamic_smem ? " + dynamic (launch-chosen)" : "", block);
  std::string budget;
  Outcome budget_outcome = Outcome::pass;
  const std::string ctas = k.ctas_min == k.ctas_max ? fmt::format("{}", k.ctas_max)
                                                    : fmt::format("{}..{}", k.ctas_min, k.ctas_max);
  if (k.columns >= 0) {
    if (k.columns * k.ctas_max <= sm.tmem_columns) {
      budget = fmt::format("{} columns x {} CTAs/SM = {} <= {}", k.columns, ctas, k.columns * k.ctas_max, sm.tmem_columns);
    } else if (k.columns * k.ctas_min > sm.tmem_columns) {
      budget_outcome = Outcome::fail;
      budget = fmt::format("{} columns x {} CTAs/SM = {} > {}: an allocation blocks while co-resident CTAs hold the "
                           "columns",
                           k.columns, k.ctas_min, k.columns * k.ctas_min, sm.tmem_columns);
    } else {
      budget_outcome = Outcome::open;
      long need = 0;  // the dynamic shared memory that brings the residency within budget
      if (e.dynamic_smem)
        for (need = 0; need <= sm.smem_per_cta_max - smem0; need += sm.smem_granularity)
          if (k.columns * resident_ctas(t_hi, regs, smem0 + need, sm) <= sm.tmem_columns) break;
      budget = fmt::format("{} columns x {} CTAs/SM: within 512 only if {}", k.columns, ctas,
                           e.dynamic_smem ? fmt::format("the launch passes >= {} B of dynamic shared memory", need)
                                          : std::string("the launch uses enough threads per CTA"));
    }
  } else if (sm.tmem_columns * k.ctas_max <= sm.tmem_columns) {
    // An allocation is at most 512 columns (the PTX ISA's bound): one resident CTA always fits.
    budget = fmt::format("columns not determined (a register not set from a constant), but at most {} CTA/SM: any "
                         "allocation fits",
                         k.ctas_max);
  } else {
    budget_outcome = Outcome::open;
    int safe = 512;
    while (safe >= 32 && safe * k.ctas_max > sm.tmem_columns) safe /= 2;
    budget = fmt::format("columns not determined (a register not set from a constant, e.g. a kernel parameter); up to "
                         "{} CTAs/SM: within 512 if it allocates <= {} columns{}",
                         k.ctas_max, safe, e.dynamic_smem ? " or the launch's dynamic shared memory lowers the residency" : "");
  }
  std::string head = fmt::format("{}: cta_group::{}, {}", short_name(e.name), k.cta_group, budget);
  if (!bad.empty()) {
    k.outcome = Outcome::fail;
    std::string all;
    for (const auto& b : bad) all += (all.empty() ? "" : "; ") + b;
    k.evidence = fmt::format("{}; {} ({})", head, all, numbers);
  } else {
    k.outcome = budget_outcome == Outcome::pass && notes.empty() ? Outcome::pass
                : budget_outcome == Outcome::fail                 ? Outcome::fail
                                                                  : Outcome::open;
    std::string n;
    for (const auto& x : notes) n += "; " + x;
    k.evidence = fmt::format("{}{}{} ({})", head, paths.problems.empty() && !paths.gave_up
                                                      ? (k.cta_group == 2 ? "; every path deallocates and relinquishes, "
                                                                                "with a cluster wait between alloc and dealloc"
                                                                              : "; every path deallocates and relinquishes")
                                                      : "",
                             n, numbers);
  }
  return k;
}

}  // namespace

Report check_ptx(const std::string& ptx, const std::string& ptxas_report, const SmLimits& sm) {
  Report r;
  const auto res = parse_ptxas(ptxas_report);
  for (const Entry& e : parse_entries(ptx)) {
    KernelTmem k = check_entry(e, res, sm);
    if (!k.uses_tmem) continue;
    if (k.outcome == Outcome::fail || (k.outcome == Outcome::open && r.outcome == Outcome::pass)) r.outcome = k.outcome;
    r.kernels.push_back(std::move(k));
  }
  if (r.kernels.empty()) {
    r.evidence = "TMEM: no tcgen05.alloc in the candidate's sm_100a PTX";
    return r;
  }
  // The failing kernels first, then the undetermined, then the rest.
  std::vector<const KernelTmem*> order;
  for (Outcome o : {Outcome::fail, Outcome::open, Outcome::pass})
    for (const auto& k : r.kernels)
      if (k.outcome == o) order.push_back(&k);
  r.evidence = fmt::format("TMEM {} ({} kernel(s) allocate):", outcome_name(r.outcome), r.kernels.size());
  for (std::size_t i = 0; i < order.size() && i < 3; ++i) r.evidence += (i ? " | " : " ") + order[i]->evidence;
  if (order.size() > 3) r.evidence += fmt::format(" | {} more", order.size() - 3);
  return r;
}

Report check_source(const std::string& cu, const std::string& workdir, const std::vector<std::string>& include_dirs) {
  fs::create_directories(workdir);
  const std::string ptx = (fs::path(workdir) / "tmem.ptx").string();
  const std::string cubin = (fs::path(workdir) / "tmem.cubin").string();
  std::vector<std::string> cmd = {"nvcc", "-O3", "-std=c++17", "-ptx", "-arch=sm_100a"};
  for (const auto& i : include_dirs) cmd.insert(cmd.end(), {"-I", i});
  cmd.insert(cmd.end(), {"-o", ptx, cu});
  std::string out;
  if (run_capture(cmd, out) != 0)
    throw SetupError(fmt::format("TMEM check: '{}' does not compile for sm_100a: {}", cu, out.substr(0, 300)));
  std::string report;
  // ptxas is beside nvcc in the toolkit; -v reports registers and static shared memory per entry.
  if (run_capture({"ptxas", "-arch=sm_100a", "-v", ptx, "-o", cubin}, report) != 0)
    throw SetupError(fmt::format("TMEM check: ptxas rejects the sm_100a PTX of '{}': {}", cu, report.substr(0, 300)));
  std::ofstream(fs::path(workdir) / "tmem.ptxas.txt") << report;
  std::ifstream in(ptx);
  std::stringstream text;
  text << in.rdbuf();
  return check_ptx(text.str(), report);
}

bool applies(const std::string& source_text, const std::string& cuda_arch) {
  return starts_with(cuda_arch, "10") || starts_with(cuda_arch, "11") ||
         source_text.find("tcgen05") != std::string::npos;
}

}  // namespace kcv::tmem
