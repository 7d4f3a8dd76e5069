// ctest wgmma.bwd_dqk_sm90a_ptx (check_ptx.cmake, DEFS -DGLR_DQK_WGMMA): the split backward's dqk kernel
// with its products on wgmma (include/glr/cuda/sm90/glr_bwd_split.cuh, dqk_on_wgmma) in every form its
// launcher instantiates at K tiles of 64: bf16 and f16, vector and scalar gate, one K tile and several
// (dqk_form's two forms). Each kernel issues 16: its V loop four m64n128k16 a tile, dq's off-diagonal
// products 1 + 2 + 3 m64n64k16 and dk's 3 + 2 + 1 (128 in all); none in the sm_100a PTX (the WMMA path
// there), and ptxas without a warning or a serialized wgmma. With -DGLR_DQK_DIAG_WGMMA (wgmma.bwd_dqkdiag_sm90a_ptx)
// each bf16 kernel issues 8 more: dq's diagonal K16 step in blocks 1-3's products and block 0's product, and
// dk's four one-step diagonal products (160 in all).
#include "glr/cuda/sm90/glr_bwd_split.cuh"

#if !defined(GLR_DQK_WGMMA) && !defined(GLR_DQK_DIAG_WGMMA)
#error "compile with -DGLR_DQK_WGMMA or -DGLR_DQK_DIAG_WGMMA"
#endif

namespace bs = glr::cuda::sm90::bwd_split;
using glr::cuda::BwdParams;
using glr::cuda::Status;
constexpr int kMulti = bs::kDqkPipe | bs::kDqkRemap | bs::kDqkVec, kOne = bs::kDqkVec;
#define GLR_DQK(E, G, F) \
  template Status bs::launch_dqk<E, G, 64, F>(const BwdParams&, const bs::Layout&, cudaStream_t, int64_t, int64_t*);
GLR_DQK(__nv_bfloat16, false, kMulti)
GLR_DQK(__nv_bfloat16, false, kOne)
GLR_DQK(__nv_bfloat16, true, kMulti)
GLR_DQK(__nv_bfloat16, true, kOne)
GLR_DQK(__half, false, kMulti)
GLR_DQK(__half, false, kOne)
GLR_DQK(__half, true, kMulti)
GLR_DQK(__half, true, kOne)
