// settings_from_environment: every KCV_* variable kcv documents (README, docs/*.md), onto its
// kcv::Settings field, with the meaning and the error messages the library gave them when it
// read them itself.
#include "environment.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/sandbox.hpp"

namespace kcv::cli {
namespace {

/// The variable's value; "" when it is unset.
std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

/// The positive integer in `name` (at most `max`), or `unset` when it is unset or empty; any other
/// value is a SetupError "NAME='value' is not a positive integer".
int64_t positive_integer(const char* name, int64_t unset, int64_t max = INT64_MAX) {
  const std::string v = variable(name);
  if (v.empty()) return unset;
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (*end != '\0' || n <= 0 || n > max) throw SetupError(fmt::format("{}='{}' is not a positive integer", name, v));
  return n;
}

/// A path or text setting: the variable's value, or `unset` when it is unset or empty.
std::string text(const char* name, const std::string& unset) {
  const std::string v = variable(name);
  return v.empty() ? unset : v;
}

}  // namespace

Settings settings_from_environment() {
  const Settings defaults;
  Settings s;
  s.worker = text("KCV_WORKER", defaults.worker);
  s.include_dir = text("KCV_INCLUDE_DIR", defaults.include_dir);
  s.adapters_dir = text("KCV_ADAPTERS_DIR", defaults.adapters_dir);
  s.python = text("KCV_PYTHON", defaults.python);
  s.cuda_arch = text("KCV_CUDA_ARCH", defaults.cuda_arch);
  s.torch_pch = text("KCV_TORCH_PCH", defaults.torch_pch);
  s.corpus_verifier = text("KCV_CORPUS_VERIFIER", defaults.corpus_verifier);
  s.threads = static_cast<int>(positive_integer("KCV_THREADS", defaults.threads, 4096));
  s.max_elements = positive_integer("KCV_MAX_ELEMENTS", defaults.max_elements);
  s.reference_cache_bytes =
      positive_integer("KCV_REFERENCE_CACHE_BYTES", defaults.reference_cache_bytes, int64_t(1) << 50);
  s.reference_cache_entry_bytes =
      positive_integer("KCV_REFERENCE_CACHE_ENTRY_BYTES", defaults.reference_cache_entry_bytes);
  s.reference_cache_dir_bytes =
      positive_integer("KCV_REFERENCE_CACHE_DIR_BYTES", defaults.reference_cache_dir_bytes);
  if (const std::string off = variable("KCV_SANDBOX_OFF"); !off.empty()) s.sandbox_off = sandbox::parse_off(off);
  // NOTES: "0" turns these off and nothing else does: the meaning the variables always had.
  s.standby = variable("KCV_STANDBY") != "0";
  s.pool = variable("KCV_POOL") != "0";
  s.sanitizer_port_ranges = variable("KCV_SANITIZER_PORT_RANGES") != "0";
  if (const std::string when = variable("KCV_POOL_START"); !when.empty())
    s.pool_start = when == "after" ? PoolStart::after : PoolStart::during;
  return s;
}

}  // namespace kcv::cli
