// glr CUDA family — the library's one translation unit: the public API of glr/cuda.hpp over the
// same inline definitions that the kcv candidates (glr/controls/cuda/) compile.
#include "glr/cuda/api_impl.cuh"

namespace glr::cuda {

std::string unsupported(const Shape& shape) { return impl::unsupported(shape); }
size_t forward_workspace_bytes(const Shape& shape, bool saving) { return impl::forward_workspace_bytes(shape, saving); }
size_t backward_workspace_bytes(const Shape& shape, bool from_saved) {
  return impl::backward_workspace_bytes(shape, from_saved);
}
size_t saved_states_bytes(const Shape& shape) { return impl::saved_states_bytes(shape); }
std::string forward_kernels(const Shape& shape) { return impl::forward_kernels(shape); }
std::string backward_kernels(const Shape& shape) { return impl::backward_kernels(shape); }
Status forward(const FwdParams& params, cudaStream_t stream) { return impl::forward(params, stream); }
Status backward(const BwdParams& params, cudaStream_t stream) { return impl::backward(params, stream); }

}  // namespace glr::cuda
