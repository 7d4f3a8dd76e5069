/// glr CUDA family, sm100 backward (sm100_glr_bwd): the sm90 backward's algorithm and numerics
/// contract (include/glr/cuda/sm90/glr_bwd.cuh) with the intra-chunk matrices on tcgen05.mma,
/// accumulating in tensor memory at the offsets of the constexpr TMEM plan (tmem_plan.hpp), and
/// the 16-bit operands loaded by TMA into a ring of shared-memory slots (pipeline.hpp).
///
/// What runs on the tensor core, and why only that: the fp32 contract forbids rounding a product's
/// operands (TF32 fails it ≥ 30x, docs/glr.md), so tcgen05 (kind::f16, fp32 accumulate) takes only
/// matrices whose operands are the 16-bit inputs themselves, where every product is exact:
///   DV_ij = Σ_{y in V tile} dO_iy v_jy         bf16/f16, both gate forms
///   A_ij  = Σ_x q_ix k_jx  (× exp(b_i − b_j))   bf16/f16, scalar gate (the decay factors out)
/// The vector gate's A carries exp(b_ix − b_jx) inside the sum, so it stays FFMA, as do dq/dk/dv,
/// the state gradient and the dg seeds (operands formed in fp32). f32 and f64 run the sm90 path.
///
/// Kernels on the caller's stream, per (sequence, head): sm90_glr_bwd_states (unchanged), then
/// sm100_glr_bwd_chunks (below), then sm90_glr_bwd_reduce (unchanged); same workspace as sm90.
///
/// Operand loads (pipeline.hpp): q, k, v, dO reach shared memory only by TMA (tensor maps encoded
/// on the host through the driver entry point, no -lcuda), one *item* (dO, v of a chunk; q, k of a
/// K tile) per ring slot, kPipeStages slots, full/empty mbarriers per slot. Thread 0 is the
/// producer (expect_tx + 8 boxes), every thread waits full and unpacks the slot into the fp32
/// tiles the FFMA steps use (the same values the sm90 kernel loads: each input widened once,
/// entries outside the chunk / tile 0), the MMAs read the slot in place, and their tcgen05.commit
/// (or thread 0's arrive, when no MMA reads it) releases it; thread 0 then refills it with the
/// item kPipeStages ahead, so the next chunk's loads overlap this chunk's MMA and FFMA work.
///
/// TMEM lifecycle of one CTA (the plan's `lifecycle()` models it; glr/tests/tmem checks it):
/// griddepcontrol.wait → warp 0 alloc(the plan's columns: a template argument) → relinquish → barrier publishes the address →
/// per chunk: DV MMAs (slot c % stages) → commit → mbarrier wait → warps 0-1 tcgen05.ld → barrier
/// (DV's columns are dead: A aliases them) → scalar gate: A MMAs per K tile (each commit frees its
/// operand slot), the last commit to the MMA barrier, wait → ld → barrier … → final barrier → warp
/// 0 dealloc. No CTA waits on another CTA while holding columns (or ever).
///
/// NOTES: rows of a chunk map to TMEM lanes 0..63 (M = 128, data path layout D, rows ≥ the chunk
/// are zero operands); warp w reads lanes 32w..32w+31, so warps 0 and 1 read the matrices.
/// Compiled for sm_100a/sm_103a (and the sm_100f/sm_103f families) only (GLR_SM100_DEVICE);
/// elsewhere the kernel body is a trap and the dispatcher (runs_here) never launches it.
/// Nothing here has executed: no Blackwell GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "glr/cuda.hpp"
#include "glr/cuda/sm100/pipeline.hpp"
#include "glr/cuda/sm100/tcgen05.cuh"
#include "glr/cuda/sm100/tma.cuh"
#include "glr/cuda/sm100/tmem_plan.hpp"
#include "glr/cuda/sm90/glr_bwd.cuh"

namespace glr::cuda::sm100 {

namespace bwd_detail {

using sm90::bwd_detail::Args;
using sm90::bwd_detail::imin;

static_assert(kThreads == sm90::bwd_detail::kThreads && kCM == sm90::bwd_detail::kCM &&
                  kBK == sm90::bwd_detail::kBK && kVTile == sm90::bwd_detail::kBV,
              "the sm100 chunks kernel shares the sm90 kernels' tiles");

/// Every supported config's plan at every planned operand ring depth (kPipeStagesMin..Max), each
/// proven by its static_asserts (CheckedPlan: shared memory ≤ 227 KiB, the co-residency bound).
template <int Pipe, int... I>
constexpr bool all_plans_checked(std::integer_sequence<int, I...>) {
  return (CheckedPlan<config_at(I).chunk, config_at(I).k_max, config_at(I).v_tile, config_at(I).stages, true, true,
                      Pipe>::ok &&
          ...);
}
static_assert(kPipeStagesMin == 2 && kPipeStagesMax == 4, "check every planned ring depth below");
static_assert(all_plans_checked<2>(std::make_integer_sequence<int, kNumConfigs>{}) &&
              all_plans_checked<3>(std::make_integer_sequence<int, kNumConfigs>{}) &&
              all_plans_checked<4>(std::make_integer_sequence<int, kNumConfigs>{}));
static_assert(kPipeStages >= kPipeStagesMin && kPipeStages <= kPipeStagesMax, "the kernel runs a planned ring depth");

/// The stages the dispatcher runs (the kernel rotates slots for any planned count; one slot is
/// enough while the MMA of chunk c+1 is not issued ahead of chunk c's epilogue).
inline constexpr int kRunStages = 1;

/// The allocations the dispatcher's configs ask for (chunk 16, 32 → 32 columns; 64 → 64, at
/// kRunStages = 1): the kernel is instantiated once per value, so that the column count of its
/// tcgen05.alloc and tcgen05.dealloc is a compile-time constant that a reader of the binary (kcv's
/// TMEM check) sees, not a kernel parameter.
inline constexpr int kRunAllocColumns[] = {32, 64};

constexpr bool run_alloc_instantiated(int columns) {
  for (int c : kRunAllocColumns)
    if (c == columns) return true;
  return false;
}

/// Every config the dispatcher can run (every chunk and K bucket at kRunStages) allocates one of
/// kRunAllocColumns.
constexpr bool every_run_alloc_instantiated() {
  for (int chunk : kChunks)
    for (int k : kKBuckets)
      if (!run_alloc_instantiated(make_plan(Config{chunk, k, kVTile, kRunStages, true, true}).alloc_columns))
        return false;
  return true;
}
static_assert(every_run_alloc_instantiated(), "glr sm100: a run config allocates columns kRunAllocColumns lacks");

/// What the kernel takes from the plan at run time (filled on the host from make_plan of a checked
/// config); the allocation is the kernel's template argument.
struct TmemArgs {
  int stages;
  int dv_off[2];
  int a_off[2];
  int chunk;
  SmemLayout sl;
};

inline TmemArgs tmem_args(const Plan& p) {
  TmemArgs t{};
  t.stages = p.cfg.stages;
  for (int s = 0; s < 2; ++s) {
    t.dv_off[s] = p.dv[s].offset;
    t.a_off[s] = p.a[s].offset;
  }
  t.chunk = p.cfg.chunk;
  t.sl = smem_layout(p.cfg);
  return t;
}

/// The TMA tensor maps of the four 16-bit MMA operands: [rows = B·T, H, D] with D = K (q, k) or V
/// (v, dO), boxes of kBoxCols columns × 1 head × chunk rows (tma_encode), no swizzle, out-of-bounds
/// elements zero. Passed as a __grid_constant__ parameter (TMA reads the maps from there).
struct TmaMaps {
  CUtensorMap q, k, v, dO;
};

// ---- kernel 2 on sm100: chunks in reverse, DV (and the scalar gate's A) on tcgen05 ----
/// AllocColumns: the plan's alloc_columns for the launch's config (one of kRunAllocColumns).
template <class E, bool VEC, int AllocColumns>
__global__ void __launch_bounds__(kThreads)
    sm100_glr_bwd_chunks(Args<float> a, TmemArgs tm, const __grid_constant__ TmaMaps maps) {
  static_assert(is_pow2(AllocColumns) && AllocColumns >= 32 && AllocColumns <= kTmemColumns,
                "tcgen05.alloc takes a power of two in [32, 512] columns");
  static_assert(kVTile == kBK, "one ring slot holds a DV item (V tile) or an A item (K tile)");
  static_assert(kCM * (kBK / kBoxCols) == kThreads, "unpack: one 16-byte group of each operand per thread");
#if defined(GLR_SM100_DEVICE)
  using Acc = float;
  using sm90::exp_of;
  using sm90::load_as;
  using sm90::store_from;
  extern __shared__ __align__(1024) unsigned char glr_bwd100_smem[];
  unsigned char* const sm = glr_bwd100_smem;
  const SmemLayout& L = tm.sl;
  Acc* G = reinterpret_cast<Acc*>(sm) + L.G;    // [K, kVTile]
  Acc* A = reinterpret_cast<Acc*>(sm) + L.A;    // [kCM, kCM]
  Acc* DV = reinterpret_cast<Acc*>(sm) + L.DV;  // [kCM, kCM]
  Acc* vs = reinterpret_cast<Acc*>(sm) + L.vs;  // [kCM, kVTile]
  Acc* ds = reinterpret_cast<Acc*>(sm) + L.ds;  // [kCM, kVTile]
  Acc* qs = reinterpret_cast<Acc*>(sm) + L.qs;  // [kCM, kBK]
  Acc* ks = reinterpret_cast<Acc*>(sm) + L.ks;  // [kCM, kBK]
  Acc* Hc = reinterpret_cast<Acc*>(sm) + L.Hc;  // [kBK, kVTile]
  Acc* bs = reinterpret_cast<Acc*>(sm) + L.bs;  // [kCM, kBK] (vector) or [kCM] (scalar)
  unsigned char* const ring = sm + L.ring;      // [kPipeStages] × {A operand [kMmaM, 32], B [kCM, 32]} 16-bit
  const uint32_t ring_u = smem_u32(ring), full0 = smem_u32(sm + L.full), empty0 = smem_u32(sm + L.empty);
  const uint32_t mbar = smem_u32(sm + L.mma);
  uint32_t* tslot = reinterpret_cast<uint32_t*>(sm + L.tmem_slot);
  E* dv = static_cast<E*>(a.dv);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t vt = blockIdx.x, y0 = vt * kVTile;
  const int bv = int(imin(kVTile, a.V - y0));
  const int64_t k_tiles = (a.K + kBK - 1) / kBK;
  constexpr int kRA = kCM * kCM / kThreads;
  constexpr int kRV = kCM * kVTile / kThreads;
  constexpr bool kBF16 = sizeof(E) == 2 && !std::is_same<E, __half>::value;
  const uint32_t idesc = idesc_f16(kBF16, kMmaM, tm.chunk);
  auto full_bar = [&](int s) { return full0 + 8u * uint32_t(s); };
  auto empty_bar = [&](int s) { return empty0 + 8u * uint32_t(s); };
  auto slot_a = [&](int s) { return ring_u + uint32_t(s * kSlotBytes); };                   // A operand
  auto slot_b = [&](int s) { return ring_u + uint32_t(s * kSlotBytes + kOperandABytes); };  // B operand

  // The previous grid's writes (the states) are visible after this; nothing of ours is held yet.
  griddep_wait();
  if (warp == 0) {
    tmem_alloc(smem_u32(tslot), uint32_t(AllocColumns));
    tmem_relinquish();
  }
  if (threadIdx.x == 0) {
    for (int s = 0; s < kPipeStages; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), 1);
    }
    mbar_init(mbar, 1);
  }
  // The ring starts zero: TMA writes rows < the chunk only, so the A operand's rows ≥ the chunk
  // (M = 128) are zero for good. The fence orders these generic writes before the async proxy's
  // (TMA writes beside them, the tensor core's reads).
  for (int e = threadIdx.x; e < kPipeStages * kSlotBytes / 16; e += kThreads) reinterpret_cast<uint4*>(ring)[e] = uint4{};
  fence_proxy_async();
  fence_before_sync();
  __syncthreads();
  fence_after_sync();
  const uint32_t tmem = *tslot;
  uint32_t phase = 0;  // of the MMA barrier
  int64_t serial = 0;  // chunks done by this CTA: TMEM slot = serial % stages
  int64_t item = 0;    // items consumed by this CTA (every thread); ring slot = item % kPipeStages

  // ---- the producer (thread 0 only): a cursor over the CTA's items in the consumers' order ----
  struct Cursor {
    int64_t nh, c, row0;
    int t;  // 0: the DV item of chunk c; t ≥ 1: the A item of K tile t − 1
    bool valid;
  };
  auto seek = [&](Cursor& q) {  // from q.nh on, the first (sequence, head) with a chunk
    for (; q.nh < a.N * a.H; q.nh += gridDim.y) {
      int64_t bos, eos;
      sm90::bwd_detail::first_slot(a, q.nh / a.H, &bos, &eos);
      const int64_t nc = (eos - bos + a.C - 1) / a.C;
      if (nc > 0) {
        q.c = nc - 1;
        q.row0 = bos + q.c * a.C;
        q.t = 0;
        q.valid = true;
        return;
      }
    }
    q.valid = false;
  };
  Cursor cur{int64_t(blockIdx.y), 0, 0, 0, false};
  int64_t filled = 0;  // items the producer has issued
  // Waits until the slot's previous readers released it, then loads the cursor's item into it.
  auto fill_next = [&]() {
    if (!cur.valid) return;
    const PipeStep st = pipe_step(filled, kPipeStages);
    mbar_wait(empty_bar(st.slot), st.empty_parity);
    const CUtensorMap* ma = cur.t == 0 ? &maps.dO : &maps.q;  // A operand [chunk rows, 32]
    const CUtensorMap* mb = cur.t == 0 ? &maps.v : &maps.k;   // B operand
    const int32_t col0 = int32_t(cur.t == 0 ? y0 : int64_t(cur.t - 1) * kBK);
    tma_load_item(slot_a(st.slot), full_bar(st.slot), ma, mb, tm.chunk, col0, int32_t(cur.nh % a.H),
                  int32_t(cur.row0));  // tma.cuh; run on the H200 by glr/tests/sm100/tma_check.cu
    ++filled;
    if (++cur.t > k_tiles) {
      cur.t = 0;
      if (--cur.c >= 0) {
        cur.row0 -= a.C;
      } else {
        cur.nh += gridDim.y;
        seek(cur);
      }
    }
  };
  if (threadIdx.x == 0) {
    seek(cur);
    for (int j = 0; j < kPipeStages; ++j) fill_next();
  }
  // ---- the consumers (every thread) ----
  // Waits for item `item`'s bytes; returns its slot.
  auto acquire = [&]() {
    const PipeStep st = pipe_step(item, kPipeStages);
    mbar_wait(full_bar(st.slot), st.full_parity);
    return st.slot;
  };
  // Thread 0, after the barrier that follows every thread's reads of the slot (and after issuing
  // the MMAs that read it): release the slot, refill it with the item kPipeStages ahead.
  auto release = [&](int slot, bool by_mma) {
    if (by_mma) mma_commit(empty_bar(slot));
    else mbar_arrive(empty_bar(slot));
    fill_next();
  };
  // Thread t: row t / 4, 8 columns from (t % 4)·8 of both operands of the slot into fp32 tiles X
  // (the A operand) and Y (the B operand), [kCM, 32]; entries outside rows × cols are 0.
  auto unpack = [&](int slot, Acc* X, Acc* Y, int rows, int cols) {
    const int i = int(threadIdx.x) / (kBK / kBoxCols), y = (int(threadIdx.x) % (kBK / kBoxCols)) * kBoxCols;
    const uint4 xa = *reinterpret_cast<const uint4*>(ring + slot * kSlotBytes + tile_offset(i, y, kMmaM));
    const uint4 xb = *reinterpret_cast<const uint4*>(ring + slot * kSlotBytes + kOperandABytes + tile_offset(i, y, kCM));
    const E* ea = reinterpret_cast<const E*>(&xa);
    const E* eb = reinterpret_cast<const E*>(&xb);
#pragma unroll
    for (int u = 0; u < kBoxCols; ++u) {
      const bool in = i < rows && y + u < cols;
      X[i * kBK + y + u] = in ? load_as<Acc>(&ea[u]) : Acc(0);
      Y[i * kBK + y + u] = in ? load_as<Acc>(&eb[u]) : Acc(0);
    }
  };

  // Warps 0-1: rows 32·warp + lane of the accumulator at `col` into M[i·kCM + j], j < chunk.
  auto read_rows = [&](uint32_t col, auto&& put) {
    if (warp < 2) {
      const int i = warp * 32 + lane;
      for (int j0 = 0; j0 < tm.chunk; j0 += 16) {
        float r[16];
        tmem_ld16(tmem_addr(tmem, warp * 32, int(col) + j0), r);
#pragma unroll
        for (int u = 0; u < 16; ++u) put(i, j0 + u, r[u]);
      }
    }
  };

  for (int64_t nh = blockIdx.y; nh < a.N * a.H; nh += gridDim.y) {
    const int64_t n = nh / a.H, h = nh % a.H;
    int64_t bos, eos;
    const int64_t slot0 = sm90::bwd_detail::first_slot(a, n, &bos, &eos);
    const int64_t Ls = eos - bos, nc = (Ls + a.C - 1) / a.C;
    for (int64_t e = threadIdx.x; e < a.K * kVTile; e += kThreads) {
      const int64_t x = e / kVTile, y = e % kVTile;
      G[e] = (a.dhT && y < bv) ? a.dhT[((n * a.H + h) * a.K + x) * a.V + y0 + y] : Acc(0);
    }
    __syncthreads();
    for (int64_t c = nc - 1; c >= 0; --c, ++serial) {
      const int slot = int(serial % tm.stages);
      // (selects, not a dynamic index into the parameter arrays: that would copy them to the stack)
      const uint32_t dv_col = uint32_t(slot == 0 ? tm.dv_off[0] : tm.dv_off[1]);
      const uint32_t a_col = uint32_t(slot == 0 ? tm.a_off[0] : tm.a_off[1]);
      const int64_t c0 = bos + c * a.C;
      const int n_ = int(imin(a.C, eos - c0));
      const Acc* Hin = a.states + ((slot0 + c) * a.H + h) * a.K * a.V;
      const Acc* Hend = a.states + ((slot0 + c + 1) * a.H + h) * a.K * a.V;
      // The DV item: dO (A operand), v (B operand) of this chunk and V tile.
      {
        const int ps = acquire();
        unpack(ps, ds, vs, n_, bv);
        if (!VEC) sm90::bwd_detail::chunk_cumsum<Acc, VEC>(a, c0, n_, h, 0, 1, bs);
        __syncthreads();
        // DV = dO · vᵀ over this V tile: M = 128 (rows i), N = chunk (rows j), K = 2 × 16 (y)
        if (threadIdx.x == 0) {
          fence_after_sync();
          for (int kk = 0; kk < kVTile / kMmaK; ++kk)
            mma_f16(tmem + dv_col, smem_desc(tile_k16(slot_a(ps), kk, kMmaM), tile_lbo(kMmaM), tile_sbo()),
                    smem_desc(tile_k16(slot_b(ps), kk, kCM), tile_lbo(kCM), tile_sbo()), idesc, kk > 0);
          mma_commit(mbar);
          release(ps, true);
        }
        ++item;
      }
      mbar_wait(mbar, phase);
      phase ^= 1u;
      fence_after_sync();
      for (int e = threadIdx.x; e < kCM * kCM; e += kThreads) DV[e] = Acc(0);
      __syncthreads();
      read_rows(dv_col, [&](int i, int j, float x) { DV[i * kCM + j] = (j <= i && i < n_) ? x : Acc(0); });
      Acc accA[VEC ? kRA : 1], accV[kRV];
#pragma unroll
      for (int r = 0; r < (VEC ? kRA : 1); ++r) accA[r] = Acc(0);
#pragma unroll
      for (int r = 0; r < kRV; ++r) accV[r] = Acc(0);
      // DV's columns are dead from here (A may overwrite them: the plan's alias).
      fence_before_sync();
      __syncthreads();
      fence_after_sync();
      for (int64_t x0 = 0; x0 < a.K; x0 += kBK) {
        const int kx = int(imin(kBK, a.K - x0));
        // The A item of this K tile: q (A operand), k (B operand).
        const int ps = acquire();
        unpack(ps, qs, ks, n_, kx);
        for (int e = threadIdx.x; e < kBK * kVTile; e += kThreads) {
          const int x = e / kVTile, y = e % kVTile;
          Hc[e] = (x < kx && y < bv) ? Hin[(x0 + x) * a.V + y0 + y] : Acc(0);
        }
        if (VEC) sm90::bwd_detail::chunk_cumsum<Acc, VEC>(a, c0, n_, h, x0, kx, bs);
        __syncthreads();
        // (a) scalar gate: A += q_tile · k_tileᵀ on the tensor core (the decay comes last); it
        // runs while this tile's FFMA steps below do. Its commit frees the slot; the last tile's
        // also signals the MMA barrier, waited for before A is read.
        if (threadIdx.x == 0) {
          if (!VEC) {
            fence_after_sync();
            for (int kk = 0; kk < kBK / kMmaK; ++kk)
              mma_f16(tmem + a_col, smem_desc(tile_k16(slot_a(ps), kk, kMmaM), tile_lbo(kMmaM), tile_sbo()),
                      smem_desc(tile_k16(slot_b(ps), kk, kCM), tile_lbo(kCM), tile_sbo()), idesc, x0 > 0 || kk > 0);
            if (x0 + kBK >= a.K) mma_commit(mbar);
          }
          release(ps, !VEC);
        }
        ++item;
        auto bat = [&](int i, int x) -> Acc { return VEC ? bs[i * kBK + x] : bs[i]; };
        // (a) vector gate: A_ij += Σ_{x in tile} q_ix k_jx exp(b_ix − b_jx), FFMA as sm90
        if (VEC) {
#pragma unroll
          for (int r = 0; r < (VEC ? kRA : 1); ++r) {
            const int e = threadIdx.x + r * kThreads, i = e / kCM, j = e % kCM;
            if (j > i || i >= n_) continue;
            Acc s = accA[r];
            for (int x = 0; x < kx; ++x) s += qs[i * kBK + x] * (ks[j * kBK + x] * exp_of(bat(i, x) - bat(j, x)));
            accA[r] = s;
          }
        }
        // (b) the tile's partial dq, dk at (i, x)
        for (int e = threadIdx.x; e < kCM * kBK; e += kThreads) {
          const int i = e / kBK, x = e % kBK;
          if (i >= n_ || x >= kx) continue;
          const Acc bi = bat(i, x), bl = bat(n_ - 1, x);
          Acc dqi = Acc(0), dki = Acc(0);
          for (int j = 0; j <= i; ++j) dqi += (DV[i * kCM + j] * exp_of(bi - bat(j, x))) * ks[j * kBK + x];
          for (int j = i; j < n_; ++j) dki += (DV[j * kCM + i] * exp_of(bat(j, x) - bi)) * qs[j * kBK + x];
          Acc t = Acc(0), u = Acc(0);
          for (int y = 0; y < bv; ++y) {
            t += ds[i * kVTile + y] * Hc[x * kVTile + y];
            u += G[(x0 + x) * kVTile + y] * vs[i * kVTile + y];
          }
          const int64_t at = ((vt * a.BT + c0 + i) * a.H + h) * a.K + x0 + x;
          a.dqp[at] = a.scale * (dqi + exp_of(bi) * t);
          a.dkp[at] = a.scale * dki + exp_of(bl - bi) * u;
        }
        // (c) dv_jy += Σ_{x in tile} k_jx exp(b_last − b_jx) G_xy
#pragma unroll
        for (int r = 0; r < kRV; ++r) {
          const int e = threadIdx.x + r * kThreads, j = e / kVTile, y = e % kVTile;
          if (j >= n_ || y >= bv) continue;
          Acc s = accV[r];
          for (int x = 0; x < kx; ++x)
            s += (ks[j * kBK + x] * exp_of(bat(n_ - 1, x) - bat(j, x))) * G[(x0 + x) * kVTile + y];
          accV[r] = s;
        }
        // (d) the tile's dg seed Σ_{y in tile} G_xy S_end,xy
        if (int(threadIdx.x) < kx) {
          const int x = threadIdx.x;
          Acc s = Acc(0);
          for (int y = 0; y < bv; ++y) s += G[(x0 + x) * kVTile + y] * Hend[(x0 + x) * a.V + y0 + y];
          a.seeds[((vt * a.slots + slot0 + c) * a.H + h) * a.K + x0 + x] = s;
        }
        __syncthreads();
        // (e) G_xy ← exp(b_last,x) G_xy + scale Σ_i q_ix exp(b_ix) do_iy   (rows of this tile)
        for (int e = threadIdx.x; e < kBK * kVTile; e += kThreads) {
          const int x = e / kVTile, y = e % kVTile;
          if (x >= kx || y >= bv) continue;
          Acc s = exp_of(bat(n_ - 1, x)) * G[(x0 + x) * kVTile + y];
          for (int i = 0; i < n_; ++i) s += (a.scale * (qs[i * kBK + x] * exp_of(bat(i, x)))) * ds[i * kVTile + y];
          G[(x0 + x) * kVTile + y] = s;
        }
        __syncthreads();
      }
      // A complete: into shared memory (scalar gate: from TMEM, times exp(b_i − b_j) now).
      if (VEC) {
#pragma unroll
        for (int r = 0; r < (VEC ? kRA : 1); ++r) {
          const int e = threadIdx.x + r * kThreads, i = e / kCM, j = e % kCM;
          A[e] = (j <= i && i < n_) ? accA[r] : Acc(0);
        }
      } else {
        mbar_wait(mbar, phase);  // every K tile's MMAs into A have completed
        phase ^= 1u;
        fence_after_sync();
        for (int e = threadIdx.x; e < kCM * kCM; e += kThreads) A[e] = Acc(0);
        __syncthreads();
        read_rows(a_col, [&](int i, int j, float x) {
          A[i * kCM + j] = (j <= i && i < n_) ? x * exp_of(bs[i] - bs[j]) : Acc(0);
        });
        fence_before_sync();
      }
      __syncthreads();
      // dv_jy = scale Σ_{i≥j} A_ij do_iy + (the G part accumulated above)
#pragma unroll
      for (int r = 0; r < kRV; ++r) {
        const int e = threadIdx.x + r * kThreads, j = e / kVTile, y = e % kVTile;
        if (j >= n_ || y >= bv) continue;
        Acc s = Acc(0);
        for (int i = j; i < n_; ++i) s += A[i * kCM + j] * ds[i * kVTile + y];
        store_from(dv + ((c0 + j) * a.H + h) * a.V + y0 + y, a.scale * s + accV[r]);
      }
      __syncthreads();
    }
    if (a.dh0)
      for (int64_t e = threadIdx.x; e < a.K * kVTile; e += kThreads) {
        const int64_t x = e / kVTile, y = e % kVTile;
        if (y < bv) a.dh0[((n * a.H + h) * a.K + x) * a.V + y0 + y] = G[e];
      }
    __syncthreads();
  }
  // Every item the producer loaded was consumed (the cursor walks the consumers' loops), so no
  // TMA is in flight here. The producer's tail: wait for the last release of every slot, so no
  // tcgen05.commit's arrival on the ring is in flight when the CTA ends either.
  if (threadIdx.x == 0)
    for (int64_t j = item - kPipeStages < 0 ? 0 : item - kPipeStages; j < item; ++j) {
      const PipeStep st = pipe_step(j + kPipeStages, kPipeStages);
      mbar_wait(empty_bar(st.slot), st.empty_parity);
    }
  // Final barrier: every tcgen05 access of every warp is ordered before the dealloc.
  fence_before_sync();
  __syncthreads();
  if (warp == 0) {
    fence_after_sync();
    tmem_dealloc(tmem, uint32_t(AllocColumns));
  }
#elif defined(__CUDA_ARCH__)
  // A device pass without tcgen05 (sm_90a, or plain sm_100 without the arch-specific features):
  // the dispatcher never launches this there; if it ever is, fail loudly rather than return with
  // dv, dq, dk unwritten.
  __trap();
#endif  // GLR_SM100_DEVICE
}

/// Kernel 2 of one allocation size on `stream`.
template <class E, bool VEC, int AllocColumns>
inline void enqueue_chunks(dim3 grid, size_t smem, cudaStream_t stream, const Args<float>& a, const TmemArgs& tm,
                           const TmaMaps& maps) {
  cudaFuncSetAttribute(sm100_glr_bwd_chunks<E, VEC, AllocColumns>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       int(smem));
  sm100_glr_bwd_chunks<E, VEC, AllocColumns><<<grid, kThreads, smem, stream>>>(a, tm, maps);
}

template <class E, bool VEC>
inline Status launch(const BwdParams& p, cudaStream_t stream) {
  namespace b9 = sm90::bwd_detail;
  const Shape& s = p.shape;
  const b9::Plan pl = b9::plan(s);
  Args<float> a{};
  a.q = p.q;
  a.k = p.k;
  a.v = p.v;
  a.g = static_cast<const float*>(p.g);
  a.h0 = static_cast<const float*>(p.h0);
  a.dO = p.dO;
  a.dhT = static_cast<const float*>(p.dhT);
  a.dq = p.dq;
  a.dk = p.dk;
  a.dv = p.dv;
  a.dg = static_cast<float*>(p.dg);
  a.dh0 = static_cast<float*>(p.dh0);
  a.cu = s.cu_seqlens;
  unsigned char* ws = static_cast<unsigned char*>(p.workspace);
  a.states = reinterpret_cast<float*>(ws + pl.states);
  a.seeds = reinterpret_cast<float*>(ws + pl.seeds);
  const size_t part = b9::align256(size_t(pl.nvt * pl.BT * s.H * s.K) * sizeof(float));
  a.dqp = reinterpret_cast<float*>(ws + pl.partial);
  a.dkp = reinterpret_cast<float*>(ws + pl.partial + part);
  a.T = s.T;
  a.H = s.H;
  a.K = s.K;
  a.V = s.V;
  a.N = s.sequences();
  a.BT = pl.BT;
  a.slots = pl.slots;
  a.nvt = pl.nvt;
  a.nct = pl.nct;
  a.C = s.chunk;
  a.scale = float(p.scale);

  const Plan tp = make_plan(Config{s.chunk, k_bucket(s.K), kVTile, kRunStages, true, true});
  if (!tp.config_supported || !tp.budget_ok)  // unreachable after impl::unsupported; kept honest
    return {"glr::cuda::backward (sm100): no checked TMEM plan for chunk " + std::to_string(s.chunk)};
  const TmemArgs tm = tmem_args(tp);

  // TMA needs K, V multiples of 8 and 16-byte-aligned bases (tma_shape_ok, tma_encode); a call
  // that has neither runs the sm90 FFMA kernels, which use the same workspace.
  TmaMaps maps{};
  const int64_t rows = s.B * s.T;
  if (!tma_shape_ok(s.K, s.V, s.H, rows) || !tma_encode<E>(&maps.q, p.q, s.K, s.H, rows, s.chunk) ||
      !tma_encode<E>(&maps.k, p.k, s.K, s.H, rows, s.chunk) || !tma_encode<E>(&maps.v, p.v, s.V, s.H, rows, s.chunk) ||
      !tma_encode<E>(&maps.dO, p.dO, s.V, s.H, rows, s.chunk))
    return b9::launch<E, float, VEC>(p, stream);

  const unsigned gy = unsigned(imin(a.N * a.H, 65535));
  const size_t bw = VEC ? kCM * kBK : kCM;
  const size_t smem1 = (size_t(s.K) * kVTile + kCM * kVTile + kCM * kBK + bw) * sizeof(float);
  const size_t smem2 = size_t(tp.smem_bytes);
  cudaFuncSetAttribute(b9::sm90_glr_bwd_states<E, float, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       int(smem1));
  const dim3 grid(unsigned(pl.nvt), gy);
  if (!run_alloc_instantiated(tp.alloc_columns))  // unreachable: every_run_alloc_instantiated
    return {"glr::cuda::backward (sm100): no kernel instantiated for " + std::to_string(tp.alloc_columns) +
            " TMEM columns"};
  b9::sm90_glr_bwd_states<E, float, VEC><<<grid, kThreads, smem1, stream>>>(a);
  if (tp.alloc_columns == 32) enqueue_chunks<E, VEC, 32>(grid, smem2, stream, a, tm, maps);
  else enqueue_chunks<E, VEC, 64>(grid, smem2, stream, a, tm, maps);
  if (pl.nct > 0) b9::sm90_glr_bwd_reduce<E, float, VEC><<<dim3(unsigned(pl.nct), gy), kThreads, 0, stream>>>(a);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return {std::string("glr::cuda::backward (sm100): ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err)};
  return {};
}

}  // namespace bwd_detail

/// Whether sm100_glr_bwd takes this call: a 16-bit dtype (see the header comment) on a device of
/// compute capability 10.x (sm_100/sm_103). Anything else, or a failed query, runs the sm90 path.
/// (Inside launch_bwd, a call TMA cannot describe — K or V not a multiple of 8, a base not 16-byte
/// aligned, more than 2^31 − 1 rows — runs the sm90 FFMA kernels, on the same workspace.)
inline bool runs_here(const Shape& s) {
  if (s.dtype != DType::bf16 && s.dtype != DType::f16) return false;
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major == 10;
}

/// Enqueues sm100_glr_bwd on `stream` (checks of glr::cuda::impl::backward already passed).
inline Status launch_bwd(const BwdParams& p, cudaStream_t stream) {
#if GLR_BUILDS_BACKWARD
  return built::for_type(p.shape.dtype, "glr::cuda::backward (sm100)", [&](auto t) -> Status {
    using E = typename decltype(t)::E;
    if constexpr (sizeof(E) == 2) {
      return p.shape.gate == Gate::vector ? bwd_detail::launch<E, true>(p, stream) : bwd_detail::launch<E, false>(p, stream);
    } else {
      return {"glr::cuda::backward (sm100): bf16 and f16 only"};
    }
  });
#else
  (void)p, (void)stream;
  return built::no_backward("glr::cuda::backward (sm100)");
#endif
}

}  // namespace glr::cuda::sm100
