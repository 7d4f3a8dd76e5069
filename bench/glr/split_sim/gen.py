# Host copies of the sm90 split headers for the simulation: launches through sim::launch,
# cp.async as synchronous copies, fwd_tc cut to its helpers; the wgmma out kernel's header with its
# shared memory named smem_raw (sim.hpp's), and wgmma.cuh replaced by its emulation (wgmma_sim.hpp).
#   python3 gen.py REPO OUTDIR   (writes OUTDIR/glr/cuda/sm90/{glr_fwd_tc,glr_fwd_split,glr_bwd_split,
#                                 glr_fwd_out_wgmma,wgmma,named_barrier}.cuh)
import os, re, sys
src, dst = sys.argv[1], sys.argv[2]
inc = src + '/include/glr/cuda/sm90/'
out = dst + '/glr/cuda/sm90/'
os.makedirs(out, exist_ok=True)
def launches(s):
    return re.sub(r'([A-Za-z_][\w:<>, ]*?)<<<(.*?)>>>\(', lambda m: '::sim::launch(' + m.group(1).strip() + ', ' + m.group(2) + ', ', s, flags=re.S)
tc = open(inc + 'glr_fwd_tc.cuh').read()
cut = tc.index('}  // namespace fwd_tc') + len('}  // namespace fwd_tc')
# sm90a_device: no device here, so the out kernel is WMMA's (the sm_100a path) unless -DGLR_FWD_WGMMA
tc = tc[:cut] + ('\nnamespace fwd_tc { inline int sm_count() { return ::sim::sms; } inline bool sm90a_device() { return false; } }'
                 '\n}  // namespace glr::cuda::sm90\n')
open(out + 'glr_fwd_tc.cuh', 'w').write(tc)
fs = open(inc + 'glr_fwd_split.cuh').read()
a = fs.index('__device__ __forceinline__ void cp_async16(')
b = fs.index('/// Starts loading rows x cols')
fs = fs[:a] + '''__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
  std::memset(dst, 0, 16);
  if (bytes) std::memcpy(dst, src, bytes);
}
__device__ __forceinline__ void cp_async_commit() {}
template <int kPending> __device__ __forceinline__ void cp_async_wait() {}

''' + fs[b:]
fs = launches(fs)  # (the cut above also drops ldsm_x4_trans, ldsm_x2_trans, mma16816: sim.hpp emulates them)
open(out + 'glr_fwd_split.cuh', 'w').write(fs)
bs = launches(open(inc + 'glr_bwd_split.cuh').read())
open(out + 'glr_bwd_split.cuh', 'w').write(bs)
assert '<<<' not in bs and '<<<' not in fs and bs.count('::sim::launch(') >= 3, 'a launch the generator did not rewrite'
wg = launches(open(inc + 'glr_fwd_out_wgmma.cuh').read()).replace('smem_wg', 'smem_raw')
assert '<<<' not in wg and wg.count('::sim::launch(') == 1, 'the wgmma out launch not rewritten'
open(out + 'glr_fwd_out_wgmma.cuh', 'w').write(wg)
open(out + 'wgmma.cuh', 'w').write(open(os.path.dirname(os.path.abspath(__file__)) + '/wgmma_sim.hpp').read())
# named_barrier.cuh: bar.sync / bar.arrive as the simulation's rounds (sim.hpp)
open(out + 'named_barrier.cuh', 'w').write("""#pragma once
namespace glr::cuda::sm90 {
inline void named_sync(int id, int threads) { ::sim::named_sync(id, threads); }
inline void named_arrive(int id, int threads) { ::sim::named_arrive(id, threads); }
}  // namespace glr::cuda::sm90
""")
