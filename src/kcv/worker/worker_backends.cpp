// The backends kcv-worker knows, device side (backends/backend.hpp): one line each.
#include "kcv/backends/backend.hpp"

namespace kcv {

std::unique_ptr<WorkerBackend> make_cpu_worker_backend();
#ifdef KCV_WITH_CUDA
std::unique_ptr<WorkerBackend> make_cuda_worker_backend();
#endif

std::unique_ptr<WorkerBackend> make_worker_backend(const std::string& name) {
  if (name == "cpu") return make_cpu_worker_backend();
#ifdef KCV_WITH_CUDA
  if (name == "cuda") return make_cuda_worker_backend();
#endif
  return nullptr;
}

}  // namespace kcv
