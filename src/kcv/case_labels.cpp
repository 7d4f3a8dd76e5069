// Which cases of a gate failed, said compactly for the evidence (issue 21 item 5): a pattern bug
// shows as a pattern ("N ∈ {1, 3, 7, 13}; passes N ∈ {2, 4, 8}"), not as its first case only.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kcv/gate_run.hpp"

namespace kcv {
namespace {

/// The label without a trailing " [...]" note (how the case called: "[null stream]").
std::string core_of(const std::string& label) {
  if (label.empty() || label.back() != ']') return label;
  const std::size_t open = label.rfind(" [");
  return open == std::string::npos ? label : label.substr(0, open);
}

/// "K=7, M=1, N=128" as a map; nullopt when the label is not a list of bindings.
std::optional<std::map<std::string, int64_t>> parse_bindings(const std::string& s) {
  std::map<std::string, int64_t> out;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t eq = s.find('=', at);
    if (eq == std::string::npos || eq == at) return std::nullopt;
    const std::string key = s.substr(at, eq - at);
    if (!std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
      return std::nullopt;
    std::size_t end = s.find(", ", eq);
    if (end == std::string::npos) end = s.size();
    const std::string num = s.substr(eq + 1, end - eq - 1);
    if (num.empty() || num.find_first_not_of("-0123456789") != std::string::npos) return std::nullopt;
    try {
      out[key] = std::stoll(num);
    } catch (...) {
      return std::nullopt;
    }
    at = end == s.size() ? end : end + 2;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

/// "{1, 3, 7}" of at most `most` values, "…" beyond.
template <class T>
std::string set_string(const std::vector<T>& v, std::size_t most) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size() && i < most; ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
  if (v.size() > most) s += ", …";
  return s + "}";
}

/// Bindings labels: each case moves some symbols off their most common value (the sweep's base);
/// failures are grouped by the one symbol they move, with the sizes of that symbol that passed.
std::optional<std::string> summarize_bindings(const std::vector<std::string>& failing,
                                              const std::vector<std::string>& passing) {
  std::vector<std::map<std::string, int64_t>> f, p;
  for (const auto& l : failing) {
    auto b = parse_bindings(core_of(l));
    if (!b) return std::nullopt;
    f.push_back(std::move(*b));
  }
  for (const auto& l : passing) {
    auto b = parse_bindings(core_of(l));
    if (!b) return std::nullopt;
    p.push_back(std::move(*b));
  }
  std::set<std::string> keys;
  for (const auto& [k, v] : f.front()) keys.insert(k);
  auto same_keys = [&](const std::map<std::string, int64_t>& b) {
    return b.size() == keys.size() && std::all_of(b.begin(), b.end(), [&](const auto& kv) { return keys.count(kv.first); });
  };
  if (!std::all_of(f.begin(), f.end(), same_keys) || !std::all_of(p.begin(), p.end(), same_keys)) return std::nullopt;
  // The base of a symbol: its most common value, when one repeats; a symbol whose values are all
  // distinct (a one-symbol sweep) has none, and every case moves it.
  std::map<std::string, std::optional<int64_t>> base;
  for (const std::string& k : keys) {
    std::map<int64_t, int> count;
    for (const auto& b : f) ++count[b.at(k)];
    for (const auto& b : p) ++count[b.at(k)];
    const auto top = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (top->second >= 2) base[k] = top->first;
    else base[k] = std::nullopt;
  }
  struct Sweep { std::vector<int64_t> failed, passed; };
  std::map<std::string, Sweep> by_key;
  std::vector<std::string> others;  // nominal, or several symbols moved at once
  auto place = [&](const std::map<std::string, int64_t>& b, bool failed) {
    std::vector<std::string> moved;
    for (const auto& [k, v] : b)
      if (!base.at(k) || v != *base.at(k)) moved.push_back(k);
    if (moved.size() == 1) {
      Sweep& s = by_key[moved[0]];
      (failed ? s.failed : s.passed).push_back(b.at(moved[0]));
      return;
    }
    if (!failed) return;
    if (moved.empty()) {
      others.push_back("the base shape");
      return;
    }
    // Every moved symbol at one value (the uniform shapes): "K=M=N=7".
    const int64_t v0 = b.at(moved[0]);
    if (std::all_of(moved.begin(), moved.end(), [&](const std::string& k) { return b.at(k) == v0; })) {
      std::string s;
      for (const auto& k : moved) s += k + "=";
      others.push_back(s + std::to_string(v0));
    } else {
      std::string s;
      for (const auto& k : moved) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, b.at(k));
      others.push_back(s);
    }
  };
  for (const auto& b : f) place(b, true);
  for (const auto& b : p) place(b, false);
  std::vector<std::string> parts;
  for (auto& [k, s] : by_key) {
    if (s.failed.empty()) continue;
    std::sort(s.failed.begin(), s.failed.end());
    s.failed.erase(std::unique(s.failed.begin(), s.failed.end()), s.failed.end());
    std::sort(s.passed.begin(), s.passed.end());
    s.passed.erase(std::unique(s.passed.begin(), s.passed.end()), s.passed.end());
    std::string part = fmt::format("{} ∈ {}", k, set_string(s.failed, 12));
    part += s.passed.empty() ? fmt::format(" (every {} swept)", k) : fmt::format(", passes {}", set_string(s.passed, 6));
    parts.push_back(std::move(part));
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  for (auto& o : others) parts.push_back(std::move(o));
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

/// Other labels: those of the form "<what> at <where>" grouped by what ("NaN in 'x' at {[0,0],
/// [3,7]}"), the rest listed.
std::string summarize_generic(const std::vector<std::string>& failing) {
  std::vector<std::string> heads;
  std::map<std::string, std::vector<std::string>> at;
  for (const auto& l : failing) {
    const std::size_t k = l.rfind(" at ");
    const std::string head = k == std::string::npos ? l : l.substr(0, k);
    if (!at.count(head)) heads.push_back(head);
    if (k != std::string::npos) at[head].push_back(l.substr(k + 4));
    else at[head];
  }
  std::string out;
  for (const auto& h : heads) {
    const auto& where = at[h];
    std::string part = h;
    if (where.size() == 1) part += " at " + where[0];
    else if (!where.empty()) part += " at " + set_string(where, 6);
    out += (out.empty() ? "" : "; ") + part;
  }
  return out;
}

}  // namespace

std::string summarize_cases(const std::vector<std::string>& failing, const std::vector<std::string>& passing,
                            std::size_t budget) {
  if (failing.empty()) return {};
  std::string s;
  if (auto b = summarize_bindings(failing, passing)) s = *b;
  else s = summarize_generic(failing);
  if (s.size() > budget) {
    // Cut at a separator within the budget; say how much was left out.
    std::size_t cut = s.rfind("; ", budget);
    if (cut == std::string::npos || cut == 0) cut = s.rfind(", ", budget);
    if (cut == std::string::npos || cut == 0) cut = budget;
    // Never inside a UTF-8 sequence ("∈", "…").
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "; …";
  }
  return s;
}

}  // namespace kcv
