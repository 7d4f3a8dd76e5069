// The sm100 backward's operand pipeline (include/glr/cuda/sm100/pipeline.hpp) on the CPU: the
// schedule the kernel follows (pipe_schedule: prologue fills, then per item wait full → read →
// release → refill with the item `stages` ahead), simulated against a model of the mbarriers:
// count 1, a phase completes once per fill (asynchronously: the TMA bytes land later) or once per
// release (asynchronously for tcgen05.commit, at once for a plain arrive), and try_wait.parity(p)
// passes exactly when the barrier's completed-phase count has the other parity than p.
//
// For every wait the simulation requires: the completions it needs are issued before it (so it
// cannot block forever), no completion beyond them is (a later one would flip the parity back and
// the wait would miss its phase), and the barrier is at most one phase short of it (so no earlier
// phase can pass for it). For every slot: an item is filled into it only after the previous item
// in it was read and its release was seen complete; an item is read only from its own slot after
// its fill was seen complete; nothing is in flight at the end (every fill and every release seen
// complete: the producer's tail). For the overlap the pipeline exists
// for: when item i is read, items i+1 .. i+stages−1 have been issued. Checked for stages 2..4,
// 1..9 chunks, 1..8 K tiles, both gate forms; and each broken variant of the schedule must be
// caught, so none of this passes vacuously. This is the kernel's schedule as written down in the
// header, not the kernel's execution: that needs a Blackwell GPU (docs/blackwell.md).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "glr/cuda/sm100/pipeline.hpp"

namespace {

namespace t = glr::cuda::sm100;
using t::PipeOp;

struct Barrier {
  int64_t issued = 0;  // phase completions issued (some may still be in flight)
  int64_t known = 0;   // completions known to have happened (synchronous, or seen by a wait)
};

/// Empty when the schedule keeps every rule; else the first broken rule and where.
std::string simulate(const t::PipeSchedule& S, int stages, int64_t items, bool check_overlap = true) {
  if (S.truncated) return "schedule truncated";
  std::vector<Barrier> full(static_cast<size_t>(stages)), empty(static_cast<size_t>(stages));
  std::vector<int64_t> content(size_t(stages), -1);  // item last filled into the slot
  std::vector<int64_t> fill_use(size_t(items), -1);  // the slot's fill count when the item was filled
  std::vector<int> filled(size_t(items), 0), read(size_t(items), 0), released(size_t(items), 0);
  std::vector<int> seen_full(size_t(items), 0);
  auto at = [](int i, const std::string& why) { return "event " + std::to_string(i) + ": " + why; };
  // A wait that needs `need` completions, with parity `p`.
  auto wait = [&](Barrier& b, int64_t need, uint32_t p, int i, const char* what) -> std::string {
    if (b.issued < need) return at(i, std::string(what) + ": waits for a completion nobody issued (blocks forever)");
    if (b.issued > need) return at(i, std::string(what) + ": a later phase is already issued (the wait can miss its phase)");
    if (uint32_t(need & 1) == p) return at(i, std::string(what) + ": the parity does not pass at its phase (blocks forever, or passes at the one before)");
    if (b.known < need - 1) return at(i, std::string(what) + ": an earlier phase has the passing parity (passes too early)");
    b.known = need;
    return {};
  };
  for (int i = 0; i < S.n; ++i) {
    const t::PipeEvent& e = S.e[i];
    if (e.item < 0 || e.item >= items) return at(i, "item out of range");
    if (e.slot < 0 || e.slot >= stages) return at(i, "slot out of range");
    const size_t s = size_t(e.slot), it = size_t(e.item);
    switch (e.op) {
      case PipeOp::wait_empty: {
        // The producer is about to fill `item` into `slot`: every earlier use must be released.
        const int64_t uses = full[s].issued;  // fills of this slot so far
        if (std::string w = wait(empty[s], uses, e.parity, i, "wait empty"); !w.empty()) return w;
        break;
      }
      case PipeOp::fill: {
        if (filled[it]) return at(i, "item filled twice");
        if (content[s] >= 0) {
          const size_t prev = size_t(content[s]);
          if (!read[prev]) return at(i, "slot refilled before its item was read");
          if (!released[prev]) return at(i, "slot refilled before its item was released");
          if (empty[s].known < full[s].issued) return at(i, "slot refilled before its release completed");
        }
        if (e.item > 0 && !filled[it - 1]) return at(i, "items filled out of order");
        filled[it] = 1;
        content[s] = e.item;
        fill_use[it] = full[s].issued;
        full[s].issued += 1;  // expect_tx + TMA: completes when the bytes have landed
        break;
      }
      case PipeOp::wait_full: {
        if (!filled[it]) return at(i, "wait for an item never filled (blocks forever)");
        if (content[s] != e.item) return at(i, "wait full on a slot that holds another item");
        if (std::string w = wait(full[s], fill_use[it] + 1, e.parity, i, "wait full"); !w.empty()) return w;
        seen_full[it] = 1;
        break;
      }
      case PipeOp::read: {
        if (!seen_full[it]) return at(i, "slot read before its bytes were waited for");
        if (content[s] != e.item) return at(i, "slot read while it holds another item");
        if (released[it]) return at(i, "slot read after its release");
        if (e.item > 0 && !read[it - 1]) return at(i, "items read out of order");
        read[it] = 1;
        if (check_overlap)
          for (int64_t j = e.item + 1; j < e.item + stages && j < items; ++j)
            if (!filled[size_t(j)]) return at(i, "item " + std::to_string(j) + " not in flight while this one is read (no overlap)");
        break;
      }
      case PipeOp::drain: {
        if (!released[it]) return at(i, "drain before the item's release");
        if (content[s] != e.item) return at(i, "drain of a slot that holds another item");
        if (std::string w = wait(empty[s], full[s].issued, e.parity, i, "drain"); !w.empty()) return w;
        break;
      }
      case PipeOp::release_commit:
      case PipeOp::release_arrive: {
        if (!read[it]) return at(i, "slot released before its item was read");
        if (released[it]) return at(i, "slot released twice");
        if (content[s] != e.item) return at(i, "release of a slot that holds another item");
        if (empty[s].issued != empty[s].known) return at(i, "release while the slot's previous release is in flight");
        released[it] = 1;
        empty[s].issued += 1;
        if (e.op == PipeOp::release_arrive) empty[s].known = empty[s].issued;  // completes at once
        break;
      }
    }
  }
  for (int64_t j = 0; j < items; ++j)
    if (!filled[size_t(j)] || !read[size_t(j)] || !released[size_t(j)])
      return "item " + std::to_string(j) + " not filled, read and released";
  for (int s = 0; s < stages; ++s)
    if (full[size_t(s)].known != full[size_t(s)].issued) return "a TMA load still in flight at the end";
  for (int s = 0; s < stages; ++s)
    if (empty[size_t(s)].known != empty[size_t(s)].issued) return "a release (commit) still in flight at the end";
  return {};
}

int64_t items_of(int chunks, int k_tiles) { return int64_t(chunks) * (1 + k_tiles); }

TEST(Pipeline, StepGivesSlotAndParities) {
  for (int stages = 2; stages <= 4; ++stages)
    for (int64_t i = 0; i < 40; ++i) {
      const t::PipeStep p = t::pipe_step(i, stages);
      EXPECT_EQ(p.slot, int(i % stages));
      EXPECT_EQ(p.use, i / stages);
      EXPECT_EQ(p.full_parity, uint32_t((i / stages) % 2));
      EXPECT_EQ(p.empty_parity, 1u - uint32_t((i / stages) % 2));
    }
  EXPECT_EQ(t::pipe_tx_bytes(64), 8u * 8 * 64 * 2);  // 8 boxes of 8 columns × 64 rows × 2 bytes
  EXPECT_EQ(t::pipe_items_per_chunk(32), 2);
  EXPECT_EQ(t::pipe_items_per_chunk(33), 3);
  EXPECT_EQ(t::pipe_items_per_chunk(256), 9);
}

TEST(Pipeline, TensorMapShapeRules) {
  // What TMA can describe as [rows, H, D] 16-bit with 8-column boxes; anything else runs the sm90
  // FFMA kernels (the launcher also needs 16-byte-aligned bases).
  EXPECT_TRUE(t::tma_shape_ok(64, 64, 4, 4096));
  EXPECT_TRUE(t::tma_shape_ok(8, 256, 1, 1));
  EXPECT_TRUE(t::tma_shape_ok(128, 40, 3, INT32_MAX));
  EXPECT_FALSE(t::tma_shape_ok(13, 64, 4, 4096));  // a row of K not a multiple of 16 bytes
  EXPECT_FALSE(t::tma_shape_ok(64, 7, 4, 4096));   // nor of V
  EXPECT_FALSE(t::tma_shape_ok(64, 64, 4, int64_t(INT32_MAX) + 1));  // the row coordinate is an s32
  EXPECT_FALSE(t::tma_shape_ok(64, 64, 4, 0));
  EXPECT_FALSE(t::tma_shape_ok(64, 64, int64_t(1) << 34, 16));  // the head stride reaches 2^40 bytes
}

TEST(Pipeline, EveryDescribableShapeGivesAValidTensorMap) {
  // tma_shape_ok ⇒ the encoder's arguments keep the driver's documented rules, for every chunk.
  int checked = 0;
  for (int chunk : {16, 32, 64})
    for (int64_t D = 8; D <= 256; D += 8)
      for (int64_t H : {1, 3, 64, 1 << 20})
        for (int64_t rows : {int64_t(1), int64_t(4093), int64_t(INT32_MAX)}) {
          if (!t::tma_shape_ok(D, D, H, rows)) continue;
          const t::TmaSpec sp = t::tma_spec(D, H, rows, chunk, 2);
          ASSERT_TRUE(t::tma_spec_valid(sp, 2)) << "D " << D << " H " << H << " rows " << rows << " chunk " << chunk;
          EXPECT_EQ(uint64_t(sp.box[0]) * sp.box[1] * sp.box[2] * 2 * t::kBoxesPerItem, t::pipe_tx_bytes(chunk));
          ++checked;
        }
  EXPECT_GT(checked, 3 * 32 * 3 * 2);
  // The validity rules are not vacuous: each broken argument is refused.
  const t::TmaSpec good = t::tma_spec(64, 4, 4096, 64, 2);
  ASSERT_TRUE(t::tma_spec_valid(good, 2));
  t::TmaSpec b = t::tma_spec(12, 4, 4096, 64, 2);  // rows of 24 bytes
  EXPECT_FALSE(t::tma_spec_valid(b, 2));
  b = good;
  b.box[2] = 512;  // a box past 256
  EXPECT_FALSE(t::tma_spec_valid(b, 2));
  b = good;
  b.box[0] = 4;  // 8 bytes innermost
  EXPECT_FALSE(t::tma_spec_valid(b, 2));
  b = good;
  b.strides[1] = b.strides[0];  // dims overlapping
  EXPECT_FALSE(t::tma_spec_valid(b, 2));
  b = t::tma_spec(64, int64_t(1) << 34, 16, 64, 2);  // a stride of 2^41 bytes
  EXPECT_FALSE(t::tma_spec_valid(b, 2));
  b = t::tma_spec(64, 4, int64_t(1) << 33, 64, 2);  // rows past 2^32
  EXPECT_FALSE(t::tma_spec_valid(b, 2));
}

TEST(Pipeline, ScheduleKeepsEveryRule) {
  int checked = 0;
  for (int stages = t::kPipeStagesMin; stages <= t::kPipeStagesMax; ++stages)
    for (int chunks = 1; chunks <= 9; ++chunks)
      for (int k_tiles = 1; k_tiles <= 8; ++k_tiles)
        for (bool scalar : {false, true}) {
          SCOPED_TRACE("stages " + std::to_string(stages) + " chunks " + std::to_string(chunks) + " k_tiles " +
                       std::to_string(k_tiles) + (scalar ? " scalar" : " vector"));
          const t::PipeSchedule S = t::pipe_schedule(stages, chunks, k_tiles, scalar);
          ASSERT_FALSE(S.truncated);
          EXPECT_EQ(simulate(S, stages, items_of(chunks, k_tiles)), "");
          ++checked;
        }
  EXPECT_EQ(checked, 3 * 9 * 8 * 2);
}

TEST(Pipeline, ReleasesFollowTheMmas) {
  // DV items (every 1 + k_tiles-th) are read by MMAs on both gates: tcgen05.commit; the vector
  // gate's K tiles feed FFMA only: a plain arrive.
  const int k_tiles = 3;
  for (bool scalar : {false, true}) {
    const t::PipeSchedule S = t::pipe_schedule(2, 2, k_tiles, scalar);
    for (int i = 0; i < S.n; ++i) {
      const t::PipeEvent& e = S.e[i];
      if (e.op != PipeOp::release_commit && e.op != PipeOp::release_arrive) continue;
      const bool dv = e.item % (1 + k_tiles) == 0;
      EXPECT_EQ(e.op == PipeOp::release_commit, dv || scalar) << "item " << e.item;
    }
  }
}

TEST(Pipeline, TheRunDepthFitsTheSharedMemoryPlan) {
  for (int i = 0; i < t::kNumConfigs; ++i)
    for (int pipe = t::kPipeStagesMin; pipe <= t::kPipeStagesMax; ++pipe) {
      t::Config c = t::config_at(i);
      c.pipe = pipe;
      const t::Plan p = t::make_plan(c);
      const t::SmemLayout L = t::smem_layout(c);
      SCOPED_TRACE("config " + std::to_string(i) + " pipe " + std::to_string(pipe));
      EXPECT_TRUE(p.config_supported && p.smem_fits && p.budget_ok);
      EXPECT_LE(L.bytes, 227 * 1024);
      EXPECT_EQ(L.full - L.ring, pipe * t::kSlotBytes);
      EXPECT_EQ(L.empty - L.full, pipe * 8);
      EXPECT_EQ(L.full % 8, 0);
      EXPECT_LE(p.alloc_columns * (p.ctas_per_sm + p.dependent_ctas), 512);
    }
  t::Config c = t::config_at(0);
  c.pipe = 1;
  EXPECT_FALSE(t::make_plan(c).config_supported);  // one slot: no overlap (below)
  c.pipe = 5;
  EXPECT_FALSE(t::make_plan(c).config_supported);
}

/// A schedule with one thing broken, and what the simulation must say.
struct Broken {
  std::string what;
  t::PipeSchedule S;
  int stages;
  int64_t items;
  std::string expect;
};

TEST(Pipeline, SimulationCatchesEachBrokenSchedule) {
  const int stages = 2, chunks = 3, k_tiles = 2;
  const int64_t items = items_of(chunks, k_tiles);
  const t::PipeSchedule good = t::pipe_schedule(stages, chunks, k_tiles, true);
  ASSERT_EQ(simulate(good, stages, items), "");
  std::vector<Broken> cases;
  {  // the producer refills without waiting for the MMA that reads the slot
    t::PipeSchedule S{};
    for (int i = 0; i < good.n; ++i)
      if (!(good.e[i].op == PipeOp::wait_empty && good.e[i].item >= stages)) S.add(good.e[i]);
    cases.push_back({"refill without the empty wait", S, stages, items, "slot refilled before its release completed"});
  }
  {  // the empty barrier's first wait with parity 0: a fresh barrier never passes it
    t::PipeSchedule S = good;
    for (int i = 0; i < S.n; ++i)
      if (S.e[i].op == PipeOp::wait_empty) S.e[i].parity ^= 1u;
    cases.push_back({"empty parity not started at 1", S, stages, items, "does not pass at its phase"});
  }
  {  // consumers wait on the wrong parity: passes on the previous use's phase
    t::PipeSchedule S = good;
    for (int i = 0; i < S.n; ++i)
      if (S.e[i].op == PipeOp::wait_full && S.e[i].item >= stages) S.e[i].parity ^= 1u;
    cases.push_back({"full parity off by one use", S, stages, items, "does not pass at its phase"});
  }
  {  // the slot released before the threads read it
    t::PipeSchedule S = good;
    for (int i = 0; i + 1 < S.n; ++i)
      if (S.e[i].op == PipeOp::read && S.e[i].item == 3) {
        std::swap(S.e[i], S.e[i + 1]);
        break;
      }
    cases.push_back({"release before read", S, stages, items, "released before its item was read"});
  }
  {  // the producer runs one item further ahead than the ring has slots
    t::PipeSchedule S{};
    auto fill = [&](int64_t j) {
      const t::PipeStep st = t::pipe_step(j, stages);
      S.add({PipeOp::wait_empty, j, st.slot, st.empty_parity});
      S.add({PipeOp::fill, j, st.slot, 0});
    };
    for (int64_t j = 0; j <= stages; ++j) fill(j);
    for (int64_t i = 0; i < items; ++i) {
      const t::PipeStep st = t::pipe_step(i, stages);
      S.add({PipeOp::wait_full, i, st.slot, st.full_parity});
      S.add({PipeOp::read, i, st.slot, 0});
      S.add({PipeOp::release_commit, i, st.slot, 0});
      if (i + stages + 1 < items) fill(i + stages + 1);
    }
    cases.push_back({"lookahead past the ring", S, stages, items, "blocks forever"});
  }
  {  // a wait for the full barrier skipped: the threads read bytes that may not have landed
    t::PipeSchedule S{};
    for (int i = 0; i < good.n; ++i)
      if (!(good.e[i].op == PipeOp::wait_full && good.e[i].item == 4)) S.add(good.e[i]);
    cases.push_back({"read without the full wait", S, stages, items, "read before its bytes were waited for"});
  }
  {  // the last item never consumed: its TMA is in flight when the CTA exits
    t::PipeSchedule S{};
    for (int i = 0; i < good.n; ++i)
      if (good.e[i].item != items - 1 || good.e[i].op == PipeOp::wait_empty || good.e[i].op == PipeOp::fill)
        S.add(good.e[i]);
    cases.push_back({"an item loaded and never consumed", S, stages, items, "not filled, read and released"});
  }
  {  // no producer tail: the last commits' arrivals may land after the CTA ended
    t::PipeSchedule S{};
    for (int i = 0; i < good.n; ++i)
      if (good.e[i].op != PipeOp::drain) S.add(good.e[i]);
    cases.push_back({"no tail", S, stages, items, "a release (commit) still in flight at the end"});
  }
  {  // one slot: safe, but the next item's load cannot overlap this item's MMA
    cases.push_back({"a ring of one slot", t::pipe_schedule(1, chunks, k_tiles, true), 1, items, ""});
  }
  for (const Broken& b : cases) {
    SCOPED_TRACE(b.what);
    const std::string got = simulate(b.S, b.stages, b.items);
    if (b.stages == 1) {
      EXPECT_EQ(got, "");  // one slot keeps every safety rule (serially) ...
      // ... and loses the overlap: item i+1 is never in flight while item i is read.
      int overlapped = 0;
      for (int i = 0; i < b.S.n; ++i)
        if (b.S.e[i].op == PipeOp::read)
          for (int j = 0; j < i; ++j) overlapped += b.S.e[j].op == PipeOp::fill && b.S.e[j].item == b.S.e[i].item + 1;
      EXPECT_EQ(overlapped, 0);
      continue;
    }
    EXPECT_NE(got, "");
    EXPECT_NE(got.find(b.expect), std::string::npos) << "simulation said: '" << got << "'";
  }
}

}  // namespace
