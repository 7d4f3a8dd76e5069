/// glr CUDA family, sm100 — the constexpr tensor-memory (TMEM) plan of sm100_glr_bwd.
///
/// Per supported config (chunk C, K bucket, V tile, stages): the column offset of every
/// accumulator the backward keeps in TMEM, the aliasing of buffers with disjoint lifetimes, the
/// allocation (a power of two in [32, 512]) and the co-residency bound
///     allocated columns × (CTAs resident on one SM + CTAs of an overlapped dependent launch) ≤ 512
/// with the resident CTAs bounded from threads, shared memory and registers (each can only lower
/// residency; the plan takes the largest count any of them allows). Also the kernel's TMEM
/// lifecycle as a sequence of events (alloc, relinquish, MMA, commit, ld, barriers, dealloc) that
/// glr/tests/tmem checks: one alloc, relinquish after it, every access inside the allocation and
/// between the publishing barrier and the final barrier, dealloc after the final barrier.
///
/// NOTES: tcgen05.alloc *blocks* while the columns are not free. A CTA that holds columns and then
/// waits for another CTA (a dependent grid in griddepcontrol.wait, a cluster peer) can deadlock
/// against a CTA blocked in alloc. The kernel never waits on another CTA, allocates after
/// griddepcontrol.wait, and the plan still counts one more full wave of an overlapped dependent
/// launch of the same kernel (programmatic dependent launch) in the bound: so even an allocation
/// issued before every holder is done always finds its columns. C++17, no CUDA headers: host code,
/// device code (nvcc) and g++ tests include the same file.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GLR_TMEM_HD __host__ __device__
#else
#define GLR_TMEM_HD
#endif

namespace glr::cuda::sm100 {

// ---- the SM (sm_100: B200/GB200 class) ----
inline constexpr int kTmemColumns = 512;             // 512 columns × 128 lanes × 32 bit per SM
inline constexpr int kTmemLanes = 128;
inline constexpr int kMaxThreadsPerSm = 2048;
inline constexpr int kMaxCtasPerSm = 32;
inline constexpr int kSmemPerSm = 233472;            // 228 KiB shared memory per SM
inline constexpr int kSmemPerCtaMax = 232448;        // 227 KiB opt-in per CTA
inline constexpr int kSmemReservedPerCta = 1024;     // the runtime's 1 KiB per resident CTA
inline constexpr int kRegsPerSm = 65536;
inline constexpr int kRegAllocUnit = 256;            // registers are allocated per warp in 256s

// ---- the kernel's fixed geometry (sm100_glr_bwd_chunks) ----
inline constexpr int kThreads = 256;  // 8 warps
inline constexpr int kCM = 64;        // largest chunk: shared tiles are sized for it
inline constexpr int kBK = 32;        // K tile (the MMA's reduction for A = Q Kᵀ: 2 × K16)
inline constexpr int kMmaM = 128;     // tcgen05.mma M: row i of a chunk ↔ TMEM lane i (layout D)
inline constexpr int kMmaK = 16;      // K of one kind::f16 MMA
/// The operand ring (pipeline.hpp): slots of 16-bit MMA operands that TMA fills ahead of the MMA.
/// Each slot holds one load ("item"): dO and v of a chunk (DV) or q and k of a K tile (A), as the
/// A operand [kMmaM rows, 32] (rows ≥ the chunk stay zero) and the B operand [kCM rows, 32].
inline constexpr int kPipeStages = 2;     // slots the kernel runs with (2..4 are planned and checked)
inline constexpr int kPipeStagesMin = 2;  // one slot would serialize the load and the MMA
inline constexpr int kPipeStagesMax = 4;
inline constexpr int kOperandABytes = kMmaM * kBK * 2;            // 8192
inline constexpr int kOperandBBytes = kCM * kBK * 2;              // 4096
inline constexpr int kSlotBytes = kOperandABytes + kOperandBBytes;  // 12288
/// Registers per thread the kernel is known to use at least (glr/tests/sm100 reads the cubin's count
/// and fails if it is lower, which would make the register term below an under-estimate).
inline constexpr int kRegsPerThreadFloor = 48;

/// One supported configuration. `alias` and `pdl_overlap` are the plan's two safety choices; they
/// are fields so that the negative compile test can turn them off and see the bound fail.
struct Config {
  int chunk = 64;   // C: 16, 32 or 64 (the MMA's N for DV and A)
  int k_max = 64;   // K bucket: the kernel's shared G tile is sized for K ≤ k_max
  int v_tile = 32;  // V columns per CTA (the MMA's reduction for DV = dO Vᵀ: 2 × K16)
  int stages = 1;   // accumulator slots: chunk c uses slot c % stages
  bool alias = true;        // A aliases DV (DV is read out to shared memory before A's first MMA)
  bool pdl_overlap = true;  // count a dependent launch's resident CTAs in the bound
  int pipe = kPipeStages;   // operand ring slots in shared memory (TMA loads in flight ahead of the MMA)
};

GLR_TMEM_HD constexpr bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
GLR_TMEM_HD constexpr int next_pow2(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}
GLR_TMEM_HD constexpr int min_i(int a, int b) { return a < b ? a : b; }

/// Shared memory of one CTA of sm100_glr_bwd_chunks (bytes), fp32 tiles as in sm90 plus the ring
/// of 16-bit MMA operand slots that TMA fills (the no-swizzle K-major canonical layout of
/// umma_desc.hpp), the ring's mbarriers, the MMA's mbarrier and the slot tcgen05.alloc writes the
/// TMEM address to. The launcher passes exactly this.
struct SmemLayout {
  // fp32 tiles (element offsets in floats)
  int G = 0;                   // [k_max, v_tile]     state gradient, this V tile
  int A = 0;                   // [kCM, kCM]          A_ij, j ≤ i
  int DV = 0;                  // [kCM, kCM]          dO_i · v_j over this V tile, j ≤ i
  int vs = 0, ds = 0;          // [kCM, v_tile]       v, dO
  int qs = 0, ks = 0;          // [kCM, kBK]          q, k of the K tile
  int Hc = 0;                  // [kBK, v_tile]       state entering the chunk, this tile
  int bs = 0;                  // [kCM, kBK]          cumulative gates
  int floats = 0;
  // the operand ring (byte offsets; the ring 1024-aligned, each slot kSlotBytes)
  int ring = 0;                // [pipe] × {A operand [kMmaM, 32], B operand [kCM, 32]} 16-bit
  int full = 0;                // [pipe] mbarriers: TMA bytes landed in the slot
  int empty = 0;               // [pipe] mbarriers: the slot's readers (threads, MMAs) are done
  int mma = 0;                 // mbarrier: the MMAs of DV / of A completed (tcgen05.commit)
  int tmem_slot = 0;           // 4 bytes
  int bytes = 0;
};

GLR_TMEM_HD constexpr SmemLayout smem_layout(const Config& c) {
  SmemLayout s{};
  int f = 0;
  s.G = f;  f += c.k_max * c.v_tile;
  s.A = f;  f += kCM * kCM;
  s.DV = f; f += kCM * kCM;
  s.vs = f; f += kCM * c.v_tile;
  s.ds = f; f += kCM * c.v_tile;
  s.qs = f; f += kCM * kBK;
  s.ks = f; f += kCM * kBK;
  s.Hc = f; f += kBK * c.v_tile;
  s.bs = f; f += kCM * kBK;
  s.floats = f;
  int b = (f * 4 + 1023) / 1024 * 1024;
  const int pipe = c.pipe < 1 ? 1 : c.pipe;
  s.ring = b;  b += pipe * kSlotBytes;
  s.full = b;  b += pipe * 8;
  s.empty = b; b += pipe * 8;
  s.mma = b;   b += 8;
  s.tmem_slot = b; b += 8;
  s.bytes = b;
  return s;
}

/// Column range [offset, offset + columns) of one accumulator in the allocation.
struct Region {
  int offset = 0;
  int columns = 0;
};

/// The plan of one config.
struct Plan {
  Config cfg{};
  // accumulators, per stage slot s (s < stages): DV[s] and A[s], fp32, row i ↔ lane i
  Region dv[2]{};
  Region a[2]{};
  int used_columns = 0;   // the highest column any accumulator touches
  int alloc_columns = 0;  // what tcgen05.alloc asks for: a power of two in [32, 512]
  int smem_bytes = 0;
  int ctas_by_threads = 0, ctas_by_smem = 0, ctas_by_regs = 0, ctas_per_sm = 0;
  int dependent_ctas = 0;  // CTAs of an overlapped dependent launch counted as co-resident
  int columns_per_sm = 0;  // alloc_columns × (ctas_per_sm + dependent_ctas)
  // checks (each a static_assert in check_plan)
  bool config_supported = false, n_valid = false, alloc_valid = false, regions_inside = false,
       aliasing_disjoint = false, smem_fits = false, budget_ok = false;
};

GLR_TMEM_HD constexpr bool overlap(Region x, Region y) {
  return x.offset < y.offset + y.columns && y.offset < x.offset + x.columns;
}

GLR_TMEM_HD constexpr Plan make_plan(const Config& c) {
  Plan p{};
  p.cfg = c;
  p.config_supported = (c.chunk == 16 || c.chunk == 32 || c.chunk == 64) &&
                       (c.k_max == 32 || c.k_max == 64 || c.k_max == 128 || c.k_max == 256) &&
                       c.v_tile == 32 && c.v_tile == kBK && (c.stages == 1 || c.stages == 2) &&
                       c.pipe >= kPipeStagesMin && c.pipe <= kPipeStagesMax;
  // tcgen05.mma kind::f16, M = 128: N a multiple of 16 in [16, 256]; the reductions are 2 × K16.
  p.n_valid = c.chunk % 16 == 0 && c.chunk >= 16 && c.chunk <= 256 && c.v_tile % kMmaK == 0;
  const int stages = c.stages < 1 ? 1 : (c.stages > 2 ? 2 : c.stages);
  int col = 0;
  for (int s = 0; s < stages; ++s) {
    p.dv[s] = Region{col, c.chunk};
    col += c.chunk;
    // NOTES: DV's lifetime ends when its tcgen05.ld has waited (wait::ld) and the CTA passed the
    // barrier after it; A's starts with its first MMA (enable_input_d = 0), issued after that
    // barrier. Disjoint, so A reuses DV's columns.
    if (c.alias) {
      p.a[s] = Region{p.dv[s].offset, c.chunk};
    } else {
      p.a[s] = Region{col, c.chunk};
      col += c.chunk;
    }
  }
  p.used_columns = col;
  p.alloc_columns = next_pow2(col < 32 ? 32 : col);
  p.alloc_valid = is_pow2(p.alloc_columns) && p.alloc_columns >= 32 && p.alloc_columns <= kTmemColumns;
  p.regions_inside = true;
  for (int s = 0; s < stages; ++s)
    p.regions_inside = p.regions_inside && p.dv[s].offset >= 0 && p.a[s].offset >= 0 &&
                       p.dv[s].offset + p.dv[s].columns <= p.alloc_columns &&
                       p.a[s].offset + p.a[s].columns <= p.alloc_columns;
  // Regions of different slots never overlap (a slot's buffers live while the other's are in use);
  // DV[s] and A[s] may overlap only when they are the declared alias.
  p.aliasing_disjoint = true;
  for (int s = 0; s < stages; ++s)
    for (int t = 0; t < stages; ++t) {
      if (s == t) continue;
      p.aliasing_disjoint = p.aliasing_disjoint && !overlap(p.dv[s], p.dv[t]) && !overlap(p.dv[s], p.a[t]) &&
                            !overlap(p.a[s], p.a[t]);
    }
  for (int s = 0; s < stages; ++s)
    if (!c.alias) p.aliasing_disjoint = p.aliasing_disjoint && !overlap(p.dv[s], p.a[s]);
  const SmemLayout sl = smem_layout(c);
  p.smem_bytes = sl.bytes;
  p.smem_fits = sl.bytes <= kSmemPerCtaMax;
  p.ctas_by_threads = kMaxThreadsPerSm / kThreads;
  p.ctas_by_smem = kSmemPerSm / (sl.bytes + kSmemReservedPerCta);
  const int regs_per_warp = (kRegsPerThreadFloor * 32 + kRegAllocUnit - 1) / kRegAllocUnit * kRegAllocUnit;
  p.ctas_by_regs = kRegsPerSm / (regs_per_warp * (kThreads / 32));
  p.ctas_per_sm = min_i(min_i(kMaxCtasPerSm, p.ctas_by_threads), min_i(p.ctas_by_smem, p.ctas_by_regs));
  p.dependent_ctas = c.pdl_overlap ? p.ctas_per_sm : 0;
  p.columns_per_sm = p.alloc_columns * (p.ctas_per_sm + p.dependent_ctas);
  p.budget_ok = p.ctas_per_sm >= 1 && p.columns_per_sm <= kTmemColumns;
  return p;
}

/// The compile-time proof for one config; the kernel instantiates it for every config it runs.
template <int Chunk, int KMax, int VTile, int Stages, bool Alias = true, bool PdlOverlap = true,
          int Pipe = kPipeStages>
struct CheckedPlan {
  static constexpr Config cfg{Chunk, KMax, VTile, Stages, Alias, PdlOverlap, Pipe};
  static constexpr Plan plan = make_plan(cfg);
  static_assert(plan.config_supported, "glr sm100 TMEM plan: unsupported config (chunk, K bucket, V tile, stages, operand ring slots)");
  static_assert(plan.n_valid, "glr sm100 TMEM plan: MMA N must be a multiple of 16 in [16, 256]");
  static_assert(plan.alloc_valid, "glr sm100 TMEM plan: allocation must be a power of two in [32, 512] columns");
  static_assert(plan.regions_inside, "glr sm100 TMEM plan: an accumulator lies outside the allocation");
  static_assert(plan.aliasing_disjoint, "glr sm100 TMEM plan: buffers with overlapping lifetimes share columns");
  static_assert(plan.smem_fits, "glr sm100 TMEM plan: shared memory exceeds 227 KiB per CTA");
  static_assert(plan.budget_ok,
                "glr sm100 TMEM plan: over budget: columns x co-resident CTAs (with an overlapped dependent "
                "launch) exceed the SM's 512 TMEM columns");
  static constexpr bool ok = true;
};

/// Every supported config, for the tests and the docs table.
inline constexpr int kChunks[] = {16, 32, 64};
inline constexpr int kKBuckets[] = {32, 64, 128, 256};
inline constexpr int kStages[] = {1, 2};
inline constexpr int kVTile = 32;
inline constexpr int kNumConfigs = 3 * 4 * 2;

GLR_TMEM_HD constexpr Config config_at(int i) {
  return Config{kChunks[i / 8], kKBuckets[(i / 2) % 4], kVTile, kStages[i % 2], true, true};
}

/// K bucket of a runtime K (1..256).
GLR_TMEM_HD constexpr int k_bucket(int64_t K) { return K <= 32 ? 32 : K <= 64 ? 64 : K <= 128 ? 128 : 256; }

// ---- the lifecycle model: what one CTA of sm100_glr_bwd_chunks does with TMEM, in order ----

enum class Ev : uint8_t {
  alloc,          // warp 0: tcgen05.alloc (columns), address written to shared memory
  relinquish,     // warp 0: tcgen05.relinquish_alloc_permit
  publish,        // fence::before_thread_sync; __syncthreads; fence::after_thread_sync; read address
  mma,            // thread 0: tcgen05.mma into a region (first = overwrite, enable_input_d = 0)
  commit,         // thread 0: tcgen05.commit → mbarrier
  wait_mma,       // all threads: mbarrier wait on the commit
  ld,             // warps 0-1: tcgen05.ld of a region, then tcgen05.wait::ld
  barrier,        // fence::before_thread_sync; __syncthreads; fence::after_thread_sync
  final_barrier,  // fence::before_thread_sync; __syncthreads (every TMEM user is done)
  dealloc,        // warp 0: tcgen05.dealloc (columns)
};

struct Event {
  Ev ev;
  int warp = 0;      // which warp issues it (-1: all)
  int offset = 0;    // columns touched: [offset, offset + columns)
  int columns = 0;
  bool overwrite = false;  // mma: enable_input_d = 0
};

inline constexpr int kMaxEvents = 256;

struct Lifecycle {
  Event e[kMaxEvents]{};
  int n = 0;
  GLR_TMEM_HD constexpr void add(Event x) {
    if (n < kMaxEvents) e[n++] = x;
  }
};

/// The events of one CTA over two chunks (enough to cover slot reuse with stages = 2) for the
/// scalar gate (DV and A on tcgen05) with `k_tiles` K tiles; the vector gate is the same without
/// the A events. Mirrors include/glr/cuda/sm100/glr_bwd.cuh.
GLR_TMEM_HD constexpr Lifecycle lifecycle(const Plan& p, bool scalar_gate, int k_tiles, int chunks = 2) {
  Lifecycle L{};
  L.add({Ev::alloc, 0, 0, p.alloc_columns, false});
  L.add({Ev::relinquish, 0, 0, 0, false});
  L.add({Ev::publish, -1, 0, 0, false});
  const int stages = p.cfg.stages < 1 ? 1 : p.cfg.stages;
  for (int c = 0; c < chunks; ++c) {
    const int s = c % stages;
    const Region dv = p.dv[s], a = p.a[s];
    for (int kk = 0; kk < p.cfg.v_tile / kMmaK; ++kk) L.add({Ev::mma, 0, dv.offset, dv.columns, kk == 0});
    L.add({Ev::commit, 0, 0, 0, false});  // → the operand slot's empty barrier
    L.add({Ev::commit, 0, 0, 0, false});  // → the MMA barrier
    L.add({Ev::wait_mma, -1, 0, 0, false});
    L.add({Ev::ld, 0, dv.offset, dv.columns, false});
    L.add({Ev::ld, 1, dv.offset, dv.columns, false});
    L.add({Ev::barrier, -1, 0, 0, false});
    if (scalar_gate) {
      // Each K tile's MMAs commit to their operand slot's empty barrier (the ring, pipeline.hpp);
      // the last tile's also to the MMA barrier, which every thread waits for before the load.
      for (int t = 0; t < k_tiles; ++t) {
        for (int kk = 0; kk < kBK / kMmaK; ++kk) L.add({Ev::mma, 0, a.offset, a.columns, t == 0 && kk == 0});
        L.add({Ev::commit, 0, 0, 0, false});
      }
      L.add({Ev::commit, 0, 0, 0, false});
      L.add({Ev::wait_mma, -1, 0, 0, false});
      L.add({Ev::ld, 0, a.offset, a.columns, false});
      L.add({Ev::ld, 1, a.offset, a.columns, false});
      L.add({Ev::barrier, -1, 0, 0, false});
    }
  }
  L.add({Ev::final_barrier, -1, 0, 0, false});
  L.add({Ev::dealloc, 0, 0, p.alloc_columns, false});
  return L;
}

}  // namespace glr::cuda::sm100
