// The sm100 backward's TMEM plan (include/glr/cuda/sm100/tmem_plan.hpp), checked config by config:
// the budget (allocation a power of two in [32, 512], columns × co-resident CTAs including an
// overlapped dependent launch ≤ 512), the accumulator regions, and the kernel's TMEM lifecycle
// (one alloc, relinquish after it, accesses inside the allocation and between the publishing
// barrier and the final barrier, dealloc after the final barrier). Each lifecycle rule is also
// shown to catch a sequence that breaks it, so no check here passes vacuously.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "glr/cuda/sm100/tmem_plan.hpp"

namespace {

namespace t = glr::cuda::sm100;
using t::Ev;

std::string name(const t::Config& c) {
  return "chunk=" + std::to_string(c.chunk) + " K<=" + std::to_string(c.k_max) + " V tile=" + std::to_string(c.v_tile) +
         " stages=" + std::to_string(c.stages);
}

bool touches(const t::Event& e) { return e.ev == Ev::mma || e.ev == Ev::ld; }
bool overlaps(const t::Event& a, const t::Event& b) {
  return a.offset < b.offset + b.columns && b.offset < a.offset + a.columns;
}

/// Empty when the sequence keeps every rule, else the first broken rule and where.
std::string check_lifecycle(const t::Plan& p, const t::Lifecycle& L) {
  auto at = [](int i, const char* why) { return "event " + std::to_string(i) + ": " + why; };
  int alloc_at = -1, relinquish_at = -1, publish_at = -1, final_at = -1, dealloc_at = -1, alloc_warp = -1,
      alloc_cols = 0;
  for (int i = 0; i < L.n; ++i) {
    const t::Event& e = L.e[i];
    if (dealloc_at >= 0) return at(i, "TMEM event after dealloc");
    switch (e.ev) {
      case Ev::alloc:
        if (alloc_at >= 0) return at(i, "a second alloc in one CTA");
        if (relinquish_at >= 0) return at(i, "alloc after relinquish_alloc_permit");
        if (e.columns != p.alloc_columns) return at(i, "alloc of other than the plan's columns");
        alloc_at = i, alloc_warp = e.warp, alloc_cols = e.columns;
        break;
      case Ev::relinquish:
        if (alloc_at < 0) return at(i, "relinquish before the alloc");
        relinquish_at = i;
        break;
      case Ev::publish:
        if (alloc_at < 0) return at(i, "address published before the alloc");
        publish_at = i;
        break;
      case Ev::mma:
      case Ev::ld:
        if (publish_at < 0) return at(i, "TMEM access before the address is published by a barrier");
        if (final_at >= 0) return at(i, "TMEM access after the final barrier");
        if (e.offset < 0 || e.columns <= 0 || e.offset + e.columns > alloc_cols)
          return at(i, "access outside the allocated columns");
        break;
      case Ev::final_barrier:
        final_at = i;
        break;
      case Ev::dealloc:
        if (final_at < 0) return at(i, "dealloc before the final barrier");
        if (e.warp != alloc_warp) return at(i, "dealloc by another warp than the alloc");
        if (e.columns != alloc_cols) return at(i, "dealloc of other columns than allocated");
        dealloc_at = i;
        break;
      default:
        break;
    }
  }
  if (alloc_at < 0) return "no alloc";
  if (relinquish_at < 0) return "no relinquish_alloc_permit";
  if (final_at < 0) return "no final barrier";
  if (dealloc_at < 0) return "no dealloc";
  for (int i = 0; i < L.n; ++i) {
    const t::Event& e = L.e[i];
    if (touches(e) && i > final_at) return at(i, "TMEM access after the final barrier");
    if (e.ev == Ev::ld) {
      // The last MMA into these columns must be committed and waited for before the load.
      int last_mma = -1;
      for (int j = 0; j < i; ++j)
        if (L.e[j].ev == Ev::mma && overlaps(L.e[j], e)) last_mma = j;
      if (last_mma < 0) return at(i, "ld of columns no MMA wrote");
      bool committed = false, waited = false;
      for (int j = last_mma + 1; j < i; ++j) {
        if (L.e[j].ev == Ev::commit) committed = true;
        if (L.e[j].ev == Ev::wait_mma && committed) waited = true;
      }
      if (!waited) return at(i, "ld before the MMA's commit was waited for");
    }
    if (e.ev == Ev::mma) {
      // An MMA writing columns an earlier ld read (an alias, or the next chunk in the same slot)
      // must come after a CTA barrier that follows that ld; an MMA's own earlier commit must be
      // waited before a new overwrite of the same columns by another buffer.
      for (int j = 0; j < i; ++j) {
        if (L.e[j].ev != Ev::ld || !overlaps(L.e[j], e)) continue;
        bool fenced = false;
        for (int m = j + 1; m < i; ++m)
          if (L.e[m].ev == Ev::barrier || L.e[m].ev == Ev::final_barrier) fenced = true;
        if (!fenced) return at(i, "MMA overwrites columns whose tcgen05.ld has no barrier after it");
      }
    }
  }
  return {};
}

TEST(TmemPlan, EverySupportedConfigFitsTheBudget) {
  std::set<std::tuple<int, int, int, int>> seen;
  for (int i = 0; i < t::kNumConfigs; ++i) {
    const t::Config c = t::config_at(i);
    seen.insert({c.chunk, c.k_max, c.v_tile, c.stages});
    const t::Plan p = t::make_plan(c);
    SCOPED_TRACE(name(c));
    EXPECT_TRUE(p.config_supported);
    EXPECT_TRUE(p.n_valid);
    EXPECT_TRUE(p.alloc_valid);
    EXPECT_TRUE(p.regions_inside);
    EXPECT_TRUE(p.aliasing_disjoint);
    EXPECT_TRUE(p.smem_fits);
    EXPECT_TRUE(p.budget_ok);
    // The same facts, from the numbers rather than the plan's flags.
    EXPECT_GE(p.alloc_columns, 32);
    EXPECT_LE(p.alloc_columns, 512);
    EXPECT_EQ(p.alloc_columns & (p.alloc_columns - 1), 0);
    EXPECT_GE(p.alloc_columns, p.used_columns);
    EXPECT_EQ(p.used_columns, c.stages * c.chunk);  // A aliases DV: one chunk's columns per slot
    EXPECT_GE(p.ctas_per_sm, 1);
    EXPECT_LE(p.ctas_per_sm, p.ctas_by_threads);
    EXPECT_LE(p.ctas_per_sm, p.ctas_by_smem);
    EXPECT_LE(p.ctas_per_sm, p.ctas_by_regs);
    EXPECT_EQ(p.dependent_ctas, p.ctas_per_sm);
    EXPECT_LE(p.alloc_columns * (p.ctas_per_sm + p.dependent_ctas), 512);
    // Residency from shared memory, recomputed: the largest n with n·(bytes + 1 KiB) ≤ 228 KiB.
    int n = 0;
    while ((n + 1) * (p.smem_bytes + 1024) <= 233472) ++n;
    EXPECT_EQ(p.ctas_by_smem, n);
    for (int s = 0; s < c.stages; ++s) {
      EXPECT_EQ(p.dv[s].columns, c.chunk);
      EXPECT_EQ(p.a[s].offset, p.dv[s].offset);  // the declared alias
      for (int r = 0; r < s; ++r) EXPECT_GE(p.dv[s].offset, p.dv[r].offset + p.dv[r].columns);
    }
  }
  EXPECT_EQ(int(seen.size()), t::kNumConfigs);
  EXPECT_EQ(t::kNumConfigs, 24);
}

TEST(TmemPlan, LifecycleOfEveryConfigKeepsTheRules) {
  for (int i = 0; i < t::kNumConfigs; ++i) {
    const t::Plan p = t::make_plan(t::config_at(i));
    for (bool scalar : {false, true})
      for (int k_tiles : {1, 8}) {
        SCOPED_TRACE(name(p.cfg) + (scalar ? " scalar" : " vector") + " k_tiles=" + std::to_string(k_tiles));
        const t::Lifecycle L = t::lifecycle(p, scalar, k_tiles, 3);
        ASSERT_LT(L.n, t::kMaxEvents) << "lifecycle truncated";
        EXPECT_EQ(check_lifecycle(p, L), "");
        EXPECT_EQ(L.e[0].ev, Ev::alloc);
        EXPECT_EQ(L.e[1].ev, Ev::relinquish);
        EXPECT_EQ(L.e[L.n - 2].ev, Ev::final_barrier);
        EXPECT_EQ(L.e[L.n - 1].ev, Ev::dealloc);
      }
  }
}

/// A lifecycle with one rule broken, and the rule's message.
struct Broken {
  const char* what;
  t::Lifecycle L;
  const char* expect;
};

t::Lifecycle base(const t::Plan& p) { return t::lifecycle(p, true, 2, 2); }

int find(const t::Lifecycle& L, Ev ev, int from = 0) {
  for (int i = from; i < L.n; ++i)
    if (L.e[i].ev == ev) return i;
  return -1;
}

void move(t::Lifecycle& L, int from, int to) {  // move event `from` to position `to`
  if (from < 0 || to < 0 || from >= L.n || to >= L.n) return;  // the case then fails: nothing broke
  const t::Event x = L.e[from];
  if (from < to)
    for (int i = from; i < to; ++i) L.e[i] = L.e[i + 1];
  else
    for (int i = from; i > to; --i) L.e[i] = L.e[i - 1];
  L.e[to] = x;
}

TEST(TmemPlan, LifecycleCheckerCatchesEachBrokenRule) {
  const t::Plan p = t::make_plan(t::Config{64, 64, 32, 2, true, true});
  ASSERT_EQ(check_lifecycle(p, base(p)), "");
  std::vector<Broken> cases;
  {
    t::Lifecycle L = base(p);
    move(L, find(L, Ev::dealloc), find(L, Ev::final_barrier));
    cases.push_back({"dealloc before the final barrier", L, "dealloc before the final barrier"});
  }
  {
    t::Lifecycle L = base(p);
    move(L, find(L, Ev::relinquish), 0);
    cases.push_back({"relinquish before alloc", L, "relinquish before the alloc"});
  }
  {
    t::Lifecycle L = base(p);
    L.e[find(L, Ev::relinquish)].ev = Ev::barrier;
    cases.push_back({"no relinquish", L, "no relinquish_alloc_permit"});
  }
  {
    t::Lifecycle L = base(p);
    L.add(L.e[L.n - 1]);
    L.e[L.n - 2] = t::Event{Ev::alloc, 0, 0, p.alloc_columns, false};  // a second alloc before dealloc
    cases.push_back({"second alloc", L, "a second alloc in one CTA"});
  }
  {
    t::Lifecycle L = base(p);
    L.e[find(L, Ev::dealloc)].warp = 3;
    cases.push_back({"dealloc by another warp", L, "dealloc by another warp than the alloc"});
  }
  {
    t::Lifecycle L = base(p);
    L.e[find(L, Ev::mma)].offset = p.alloc_columns - 8;
    cases.push_back({"MMA past the allocation", L, "access outside the allocated columns"});
  }
  {
    t::Lifecycle L = base(p);
    const int ld = find(L, Ev::ld);
    move(L, ld, find(L, Ev::commit));
    cases.push_back({"ld before commit/wait", L, "ld before the MMA's commit was waited for"});
  }
  {
    // The alias: drop the barrier between DV's ld and A's first (overwriting) MMA.
    t::Lifecycle L = base(p);
    const int b = find(L, Ev::barrier, find(L, Ev::ld));
    L.e[b].ev = Ev::commit;
    cases.push_back({"alias without a barrier", L, "MMA overwrites columns whose tcgen05.ld has no barrier"});
  }
  {
    t::Lifecycle L = base(p);
    move(L, find(L, Ev::publish), find(L, Ev::mma));
    cases.push_back({"MMA before the address is published", L, "before the address is published"});
  }
  {
    t::Lifecycle L = base(p);
    L.n -= 1;  // no dealloc
    cases.push_back({"no dealloc", L, "no dealloc"});
  }
  for (const Broken& b : cases) {
    SCOPED_TRACE(b.what);
    const std::string got = check_lifecycle(p, b.L);
    EXPECT_NE(got.find(b.expect), std::string::npos) << "checker said: '" << got << "'";
  }
}

TEST(TmemPlan, UnsafeChoicesAreRejected) {
  // Without the alias, chunk 64 at two stages needs 256 columns; with an overlapped dependent
  // launch, 2 + 2 CTAs at K ≤ 32 ask for 1024 > 512 (the negative compile test instantiates this).
  const t::Plan no_alias = t::make_plan(t::Config{64, 32, 32, 2, false, true});
  EXPECT_EQ(no_alias.alloc_columns, 256);
  EXPECT_EQ(no_alias.ctas_per_sm, 2);
  EXPECT_EQ(no_alias.columns_per_sm, 1024);
  EXPECT_FALSE(no_alias.budget_ok);
  // Not counting the dependent launch would let it through: the PDL term is what rejects it.
  EXPECT_TRUE(t::make_plan(t::Config{64, 32, 32, 2, false, false}).budget_ok);
  // Configs outside the supported set are flagged.
  EXPECT_FALSE(t::make_plan(t::Config{48, 64, 32, 1, true, true}).config_supported);
  EXPECT_FALSE(t::make_plan(t::Config{64, 64, 32, 3, true, true}).config_supported);
  EXPECT_FALSE(t::make_plan(t::Config{64, 512, 32, 1, true, true}).config_supported);
}

// The compile-time proof for every supported config (the kernel instantiates the ones it runs).
static_assert(t::CheckedPlan<16, 32, 32, 1>::ok && t::CheckedPlan<16, 32, 32, 2>::ok);
static_assert(t::CheckedPlan<32, 32, 32, 1>::ok && t::CheckedPlan<32, 32, 32, 2>::ok);
static_assert(t::CheckedPlan<64, 32, 32, 1>::ok && t::CheckedPlan<64, 32, 32, 2>::ok);
static_assert(t::CheckedPlan<64, 256, 32, 1>::ok && t::CheckedPlan<64, 256, 32, 2>::ok);

}  // namespace
