// The cpu backend's host side: how its workers run (host_backend.hpp).
#include "kcv/backends/host_backend.hpp"

#include "kcv/candidate.hpp"

namespace kcv {

namespace {

/// Where the compiler keeps one of its runtime libraries ("" when it cannot say).
std::string compiler_library(const char* name) {
  std::string out;
  if (run_capture({"cc", std::string("-print-file-name=") + name}, out) != 0) return std::string();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

/// What to preload into the worker for a candidate built with -fsanitize: the ASan runtime, and
/// libstdc++ beside it. ASan binds its __cxa_throw interceptor when it loads; in a worker that
/// is not C++ (python3) libstdc++ is not there yet, and the first C++ exception anything throws
/// (torch throws and catches its own, e.g. at import on a CUDA build without a visible GPU) ends
/// in "CHECK failed ... real___cxa_throw" and exit 86: a correct candidate reported as a crash
/// (control rowsum.catches_torch_error).
std::string asan_preload() {
  static const std::string preload = [] {
    std::string asan = compiler_library("libasan.so"), cxx = compiler_library("libstdc++.so.6");
    // An unknown name comes back as itself (no slash): leave it out rather than preload nothing.
    return cxx.find('/') == std::string::npos ? asan : asan + ":" + cxx;
  }();
  return preload;
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  // NOTES: a source candidate is rebuilt with -fsanitize=address,undefined and runs with the
  // runtime preloaded (the worker itself is not instrumented); a prebuilt .so can only be watched
  // from outside: valgrind's memcheck, much slower, hence the longer timeout. Tool "valgrind"
  // (the sanitizer gate, issue 25): the exact plain build of a source candidate under valgrind.
  SanitizedRun sanitized_run(const std::string& tool, bool has_source, bool torch_worker) const override {
    SanitizedRun r;
    if (!has_source || tool == "valgrind") {
      r.wrapper = {"valgrind", "--tool=memcheck", "--error-exitcode=86", "--quiet", "--trace-children=no"};
      r.timeout_factor = 30;
      return r;
    }
    r.instrumented_build = true;
    r.timeout_factor = 4;
    r.env.push_back("LD_PRELOAD=" + asan_preload());
    r.env.push_back(std::string("ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:exitcode=86:allocator_may_return_null=1:"
                                "detect_odr_violation=0:verify_asan_link_order=0") +
                    (torch_worker ? ":alloc_dealloc_mismatch=0:detect_container_overflow=0" : ""));
    r.env.push_back("UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87");
    return r;
  }

  bool probes_device() const override { return false; }
  std::optional<CompileRecipe> compile_recipe(const std::string& kind, const Settings&) const override {
    return host_compile_recipe(kind);
  }
  std::string_view torch_device() const override { return "cpu"; }
  bool has_streams() const override { return false; }
  bool tensors_on_host() const override { return true; }
  bool large_tier() const override { return false; }

  // NOTES: (issue 25 class 3) the ASan rebuild ("") defines __SANITIZE_ADDRESS__: a candidate can
  // be clean only there. The plain build, the one every other gate and production load, runs
  // under valgrind memcheck too (a prebuilt .so already runs under it, as tool "").
  std::vector<std::string> sanitizer_tools(bool has_source, bool torch_worker) const override {
    if (has_source && !torch_worker) return {"", "valgrind"};
    return {""};
  }

  bool caps_address_space() const override { return true; }
  bool locks_fault_signals() const override { return true; }
  bool runtime_makes_files() const override { return false; }
  // NOTES: 64 bytes, torch's CPU allocator's alignment (malloc guarantees only 16), below a page.
  PlacementRule placement_rule() const override { return {true, 64, 4096, /*fences=*/true, /*tails=*/false}; }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace kcv
