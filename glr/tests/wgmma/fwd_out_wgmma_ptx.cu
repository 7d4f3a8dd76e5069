// ctest wgmma.fwd_out_sm90a_ptx (check_ptx.cmake): the split forward's wgmma out kernel
// (include/glr/cuda/sm90/glr_fwd_out_wgmma.cuh) in every form its launcher instantiates, bf16 and f16,
// KP 32, 64, 128, 256, V tiles 128 and 64, for the PTX and ptxas checks of the building block: every
// wgmma.mma_async in the sm_90a PTX (KW/16 + 4 per V tile of 128, half that per V tile of 64: 144), none
// in the sm_100a PTX, and ptxas without a warning or a "Potential Performance Loss" (C7519 injected
// warpgroup.arrive, C7520 serialized wgmma: ptxas says those as info, not as warnings).
#include "glr/cuda/sm90/glr_fwd_split.cuh"

#if defined(GLR_FWD_WMMA_OUT)
#error "compile without -DGLR_FWD_WMMA_OUT"
#endif

namespace gs = glr::cuda::sm90::fwd_split;
using glr::cuda::FwdParams;
using glr::cuda::Status;
template Status gs::launch_out_wgmma<__nv_bfloat16, 32>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__nv_bfloat16, 64>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__nv_bfloat16, 128>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__nv_bfloat16, 256>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__half, 32>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__half, 64>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__half, 128>(const FwdParams&, cudaStream_t);
template Status gs::launch_out_wgmma<__half, 256>(const FwdParams&, cudaStream_t);
