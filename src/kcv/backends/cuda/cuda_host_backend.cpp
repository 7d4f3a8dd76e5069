// The cuda backend's host side: how its workers run (host_backend.hpp). Plain C++: kcv describes
// a cuda worker without the CUDA toolkit; only kcv-worker's side (cuda_worker_backend.cu) needs it.
#include "kcv/backends/host_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kcv/build_config.hpp"
#include "kcv/provenance.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;

namespace kcv {

namespace {

/// NVIDIA's kernel module version, from /proc/driver/nvidia/version (nvidia_driver_version: the
/// proprietary and the open module word the line differently).
nlohmann::json driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (in) std::getline(in, line);
  return nvidia_driver_version(line);
}

/// The GPUs' model names, in the driver's (PCI) order, "; "-joined.
nlohmann::json gpu_models() {
  std::error_code ec;
  std::vector<std::string> models;
  for (const auto& d : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream in(d.path() / "information");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Model:", 0) == 0) models.push_back(d.path().filename().string() + " " + trim_blanks(line.substr(6)));
  }
  if (models.empty()) return nullptr;
  std::sort(models.begin(), models.end());
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : "; ") + m;
  // NOTES: the environment kcv runs in, recorded (a pass-through, not a setting: settings.hpp).
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) out += fmt::format(" (CUDA_VISIBLE_DEVICES={})", v);
  return out;
}

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }

  std::string unavailable() const override {
#ifdef KCV_WITH_CUDA
    return {};
#else
    return "backend 'cuda' is not built into this kcv (configure with CUDA available)";
#endif
  }
  bool probes_device() const override { return true; }

  // NOTES: Settings::cuda_arch (KCV_CUDA_ARCH) picks the target (default sm_90a, the H200's);
  // -lineinfo gives the sanitizer's reports their source lines.
  std::optional<CompileRecipe> compile_recipe(const std::string& kind, const Settings& settings) const override {
    if (kind != "cu") return host_compile_recipe(kind);
    const std::string a = settings.cuda_target();
    CompileRecipe r;
    r.command = {"nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
                 "-gencode", fmt::format("arch=compute_{0},code=sm_{0}", a), "-lineinfo"};
    r.optimize = "-O3";
    r.quote_include = "-I";  // nvcc has no -iquote (H200, 2026-12: every cuda candidate failed with it)
    r.link_libm = false;
    return r;
  }

  // NOTES: the toolkit is the one kcv was built with (KCV_BUILD_CUDA_VERSION); a value that
  // cannot be found is null, never a guess.
  nlohmann::json provenance() const override {
    const std::string cuda = KCV_BUILD_CUDA_VERSION;
    return {{"gpu", gpu_models()}, {"driver", driver_version()},
            {"cuda", cuda.empty() ? nlohmann::json(nullptr) : nlohmann::json(cuda)}};
  }
  std::string_view torch_device() const override { return "cuda"; }
  bool has_streams() const override { return true; }
  bool tensors_on_host() const override { return false; }
  bool large_tier() const override { return true; }
  std::vector<std::string> sanitizer_tools(bool, bool) const override {
    return {"memcheck", "racecheck", "initcheck", "synccheck"};
  }
  std::string sanitizer_scope(bool torch_worker) const override {
    if (!torch_worker) return {};
    return "memcheck, racecheck and synccheck checked the solution's own kernels, not those of torch, cuDNN and "
           "cuBLAS; initcheck checked all";
  }

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
