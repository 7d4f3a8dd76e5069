// The cpu backend's host side: how its workers run (host_backend.hpp).
#include "kcv/backends/host_backend.hpp"

#include "kcv/candidate.hpp"

namespace kcv {

namespace {

/// The sanitizer runtime to preload into the worker for a candidate built with -fsanitize.
std::string asan_runtime() {
  static const std::string path = [] {
    std::string out;
    if (run_capture({"cc", "-print-file-name=libasan.so"}, out) != 0) return std::string();
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }();
  return path;
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
    r.env.push_back("LD_PRELOAD=" + asan_runtime());
    r.env.push_back(std::string("ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:exitcode=86:allocator_may_return_null=1:"
                                "detect_odr_violation=0:verify_asan_link_order=0") +
                    (torch_worker ? ":alloc_dealloc_mismatch=0:detect_container_overflow=0" : ""));
    r.env.push_back("UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87");
    return r;
  }

  bool caps_address_space() const override { return true; }
  bool locks_fault_signals() const override { return true; }
  bool runtime_makes_files() const override { return false; }
  bool places_buffers() const override { return true; }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace kcv
