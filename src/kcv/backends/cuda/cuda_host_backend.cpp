// The cuda backend's host side: how its workers run (host_backend.hpp). Plain C++: kcv describes
// a cuda worker without the CUDA toolkit; only kcv-worker's side (cuda_worker_backend.cu) needs it.
#include "kcv/backends/host_backend.hpp"

namespace kcv {

namespace {

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }

  SanitizedRun sanitized_run(const std::string& tool, bool /*has_source*/, bool torch_worker) const override {
    SanitizedRun r;
    r.wrapper = {"compute-sanitizer", "--tool", tool.empty() ? "memcheck" : tool, "--error-exitcode", "86"};
    r.uses_ports = true;
    r.exit_is_signal = true;
    r.timeout_factor = 30;
    // NOTES: memcheck, racecheck and synccheck check a torch solution's own kernels; torch's,
    // cuDNN's and cuBLAS's run uninstrumented (kLibraryKernels). Not initcheck: it learns what
    // is initialized from the writes it sees, so memory an excluded kernel wrote reads as
    // uninitialized (the rowsum reference control on an H200: 26 false reports).
    if (torch_worker && tool != "initcheck")
      r.wrapper_tail = {"--kernel-name-exclude", std::string("regex=") + kLibraryKernels};
    // NOTES: under memcheck, torch's caching allocator is off (PYTORCH_NO_CUDA_MEMORY_CACHING): each
    // tensor the solution allocates is a cudaMalloc of its own size, so a write past the end of an
    // output is a memcheck report instead of a write into the allocator's next block.
    if (torch_worker && (tool.empty() || tool == "memcheck")) r.env.push_back("PYTORCH_NO_CUDA_MEMORY_CACHING=1");
    return r;
  }

  // NOTES: compute-sanitizer's front end and its target meet on TCP ports [--port, --port +
  // --max-connections) of the loopback (default 49152 and 10); sanitizer_port_range hands out
  // ranges 10 wide.
  std::vector<std::string> port_flags(int port) const override {
    return {"--port", std::to_string(port), "--max-connections", "10"};
  }

  bool caps_address_space() const override { return false; }
  bool locks_fault_signals() const override { return false; }
  bool runtime_makes_files() const override { return true; }
  // NOTES: 512 bytes: what torch's caching allocator gives every block (kMinBlockSize), above
  // cudaMalloc's documented 256, so no vectorised or TMA kernel loses an alignment it may assume;
  // the offset varies over 64 KiB past the guard band, and the allocation's end over 64 KiB past
  // the trailing one, so neither the distance from the allocation's base (4 KiB before) nor the
  // bytes after the output tell verification. No fences: device memory has no PROT_NONE page.
  PlacementRule placement_rule() const override {
    return {true, 512, int64_t(64) << 10, /*fences=*/false, /*tails=*/true};
  }
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace kcv
