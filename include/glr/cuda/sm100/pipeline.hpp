/// glr CUDA family, sm100 — the TMA → tcgen05.mma operand pipeline of sm100_glr_bwd_chunks.
///
/// A CTA consumes a sequence of *items*, in the order of its loops: per (sequence, head) and per
/// chunk in reverse, first the DV item (dO and v of the chunk, this V tile), then one item per K
/// tile (q and k). Item i lives in ring slot i mod P (P = Config::pipe slots of kSlotBytes,
/// tmem_plan.hpp) and uses it for the (i div P)-th time. Two mbarriers per slot:
///
///   full[s]  count 1. Thread 0 (the producer) arrives with expect_tx(pipe_tx_bytes(chunk)) and
///            issues the item's 2 × kBK/8 TMA boxes, which complete_tx on it. Every thread waits
///            for it (parity (i div P) & 1) before reading the slot.
///   empty[s] count 1. Released once per use after the __syncthreads that follows the threads'
///            reads of the slot: by tcgen05.commit of the MMAs that read it (DV; the scalar gate's
///            A tiles) or by a plain arrive of thread 0 (the vector gate's q/k tiles feed FFMA
///            only). The producer waits for it (parity ((i div P) & 1) ^ 1: the first use of a
///            fresh barrier passes at once) before refilling the slot.
///
/// Program order (the kernel; pipe_schedule below writes it down for the test): thread 0 fills
/// items 0..P-1 before the first chunk; at item i every thread waits full, reads the slot into its
/// fp32 tiles, passes a barrier, and thread 0 issues the item's MMAs, releases the slot and
/// refills it with item i + P (waiting on empty first: for an MMA item, the MMA's completion);
/// after the last item thread 0 waits for the last release of every slot (the tail). So
/// while item i is in the tensor core and the FFMA steps, items i+1..i+P-1 are loaded or landing.
/// No wait of one thread depends on another thread, and none on another CTA: the producer waits
/// only on releases it issued itself. glr/tests/tmem/pipeline_test.cpp simulates the mbarriers
/// over this schedule (P = 2..4, 1..9 chunks, 1..8 K tiles) and shows each broken variant caught.
/// C++17, no CUDA headers.
#pragma once

#include <cstdint>

#include "glr/cuda/sm100/tmem_plan.hpp"

namespace glr::cuda::sm100 {

/// Columns of one TMA box: 8 16-bit elements, one core matrix row (16 bytes).
inline constexpr int kBoxCols = 8;
/// TMA boxes per item: kBK / kBoxCols per operand, two operands.
inline constexpr int kBoxesPerItem = 2 * (kBK / kBoxCols);

/// The slot and mbarrier parities of item `item` in a ring of `stages` slots.
struct PipeStep {
  int slot = 0;
  int64_t use = 0;             // how many items used this slot before
  uint32_t full_parity = 0;    // consumers: try_wait.parity on full[slot]
  uint32_t empty_parity = 0;   // producer: try_wait.parity on empty[slot] before the refill
};

GLR_TMEM_HD constexpr PipeStep pipe_step(int64_t item, int stages) {
  PipeStep p{};
  p.slot = int(item % stages);
  p.use = item / stages;
  p.full_parity = uint32_t(p.use & 1);
  p.empty_parity = uint32_t(p.use & 1) ^ 1u;
  return p;
}

/// Bytes one item's TMA boxes write (the full box, out-of-bounds elements zero-filled and counted):
/// kBoxesPerItem boxes of kBoxCols × chunk 16-bit elements.
GLR_TMEM_HD constexpr uint32_t pipe_tx_bytes(int chunk) { return uint32_t(kBoxesPerItem * kBoxCols * chunk * 2); }

/// Items of one chunk: DV, then one per K tile.
GLR_TMEM_HD constexpr int64_t pipe_items_per_chunk(int64_t K) { return 1 + (K + kBK - 1) / kBK; }

/// Whether TMA can describe the operands as [rows, H, D] tensors of 16-bit elements with the
/// boxes above (cuTensorMapEncodeTiled's rules: every stride but the element's a multiple of 16
/// bytes and < 2^40, every dimension ≤ 2^32; the kernel's row coordinate is a signed 32-bit int).
/// The bases' 16-byte alignment is checked by the launcher; a call that fails either runs the
/// sm90 FFMA kernels (same workspace).
GLR_TMEM_HD constexpr bool tma_shape_ok(int64_t K, int64_t V, int64_t H, int64_t rows) {
  auto dim_ok = [](int64_t d, int64_t H_, int64_t rows_) {
    return d >= 1 && d % kBoxCols == 0 && H_ * d * 2 < (int64_t(1) << 40) && rows_ >= 1 && rows_ <= INT32_MAX;
  };
  return H >= 1 && dim_ok(K, H, rows) && dim_ok(V, H, rows);
}

/// The arguments of cuTensorMapEncodeTiled for one operand (tma_encode passes exactly these):
/// a [rows, H, D] tensor of `elem`-byte elements, D contiguous; box {kBoxCols, 1, chunk}.
struct TmaSpec {
  uint64_t dims[3] = {0, 0, 0};     // innermost first: D, H, rows
  uint64_t strides[2] = {0, 0};     // bytes, of dims 1 and 2
  uint32_t box[3] = {0, 0, 0};
  uint32_t elem_strides[3] = {1, 1, 1};
};

GLR_TMEM_HD constexpr TmaSpec tma_spec(int64_t D, int64_t H, int64_t rows, int chunk, int elem) {
  TmaSpec t{};
  t.dims[0] = uint64_t(D);
  t.dims[1] = uint64_t(H);
  t.dims[2] = uint64_t(rows);
  t.strides[0] = uint64_t(D) * uint64_t(elem);
  t.strides[1] = uint64_t(H) * uint64_t(D) * uint64_t(elem);
  t.box[0] = uint32_t(kBoxCols);
  t.box[1] = 1u;
  t.box[2] = uint32_t(chunk);
  return t;
}

/// cuTensorMapEncodeTiled's documented rules for a rank-3, non-interleaved, unswizzled map (the
/// driver's header, CUDA 13): every dim in [1, 2^32]; every stride a multiple of 16 and < 2^40,
/// each at least the previous dim's extent; every box entry in [1, 256], box[0]·elem a multiple
/// of 16; element strides in [1, 8]. Plus the box's bytes as the kernel's expect_tx counts them.
GLR_TMEM_HD constexpr bool tma_spec_valid(const TmaSpec& t, int elem) {
  for (int i = 0; i < 3; ++i)
    if (t.dims[i] < 1 || t.dims[i] > (uint64_t(1) << 32) || t.box[i] < 1 || t.box[i] > 256 || t.elem_strides[i] < 1 ||
        t.elem_strides[i] > 8)
      return false;
  for (int i = 0; i < 2; ++i)
    if (t.strides[i] % 16 != 0 || t.strides[i] >= (uint64_t(1) << 40)) return false;
  if (t.strides[0] < t.dims[0] * uint64_t(elem) || t.strides[1] < t.strides[0] * t.dims[1]) return false;
  return (uint64_t(t.box[0]) * uint64_t(elem)) % 16 == 0;
}

// ---- the schedule as events, in the kernel's program order (the test simulates the barriers) ----

enum class PipeOp : uint8_t {
  wait_empty,      // thread 0: try_wait.parity(empty[slot], parity)
  fill,            // thread 0: arrive.expect_tx(full[slot]) + the item's TMA boxes (complete later)
  wait_full,       // every thread: try_wait.parity(full[slot], parity)
  read,            // every thread: the slot into fp32 tiles; barrier; thread 0: MMAs on the slot
  release_commit,  // thread 0: tcgen05.commit → empty[slot] (completes when the MMAs have read it)
  release_arrive,  // thread 0: mbarrier.arrive(empty[slot]) (no MMA reads the slot)
  drain,           // thread 0, after the last item: try_wait.parity(empty[slot], parity) for the
                   // last release of each slot, so no commit's arrive is in flight at exit
};

struct PipeEvent {
  PipeOp op = PipeOp::read;
  int64_t item = 0;
  int slot = 0;
  uint32_t parity = 0;
};

inline constexpr int kMaxPipeEvents = 1024;

struct PipeSchedule {
  PipeEvent e[kMaxPipeEvents]{};
  int n = 0;
  bool truncated = false;
  GLR_TMEM_HD constexpr void add(PipeEvent x) {
    if (n < kMaxPipeEvents) e[n++] = x;
    else truncated = true;
  }
};

/// Whether item `item` is read by MMAs (released by tcgen05.commit): the DV item always; a K
/// tile's item on the scalar gate only.
GLR_TMEM_HD constexpr bool pipe_item_mma(int64_t item, int k_tiles, bool scalar_gate) {
  return item % (1 + k_tiles) == 0 || scalar_gate;
}

/// The pipeline events of one CTA over `chunks` chunks of `k_tiles` K tiles, as
/// sm100_glr_bwd_chunks issues them (prologue fills, then per item: wait full, read, release,
/// refill with item + stages).
GLR_TMEM_HD constexpr PipeSchedule pipe_schedule(int stages, int chunks, int k_tiles, bool scalar_gate) {
  PipeSchedule S{};
  const int64_t items = int64_t(chunks) * (1 + k_tiles);
  auto fill = [&](int64_t j) {
    const PipeStep st = pipe_step(j, stages);
    S.add({PipeOp::wait_empty, j, st.slot, st.empty_parity});
    S.add({PipeOp::fill, j, st.slot, 0});
  };
  for (int64_t j = 0; j < stages && j < items; ++j) fill(j);
  for (int64_t i = 0; i < items; ++i) {
    const PipeStep st = pipe_step(i, stages);
    S.add({PipeOp::wait_full, i, st.slot, st.full_parity});
    S.add({PipeOp::read, i, st.slot, 0});
    S.add({pipe_item_mma(i, k_tiles, scalar_gate) ? PipeOp::release_commit : PipeOp::release_arrive, i, st.slot, 0});
    if (i + stages < items) fill(i + stages);
  }
  // The producer's tail: wait for the release of the last item of every slot (the empty wait a
  // fill of item j + stages would do), so every arrival on the ring has landed before the CTA ends.
  for (int64_t j = items - stages < 0 ? 0 : items - stages; j < items; ++j) {
    const PipeStep st = pipe_step(j + stages, stages);
    S.add({PipeOp::drain, j, st.slot, st.empty_parity});
  }
  return S;
}

}  // namespace glr::cuda::sm100
