// The backends kcv knows, host side (host_backend.hpp): one line each.
#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"

namespace kcv {

const Backend& cpu_backend();
const Backend& cuda_backend();

namespace {
const std::vector<const Backend*>& registry() {
  static const std::vector<const Backend*> backends = {
      &cpu_backend(),
      &cuda_backend(),
  };
  return backends;
}
}  // namespace

const Backend& backend_named(std::string_view name) {
  for (const Backend* b : registry())
    if (b->name() == name) return *b;
  std::string known;
  for (const std::string& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw SetupError(fmt::format("unknown backend '{}' ({})", name, known));
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* b : registry()) names.emplace_back(b->name());
  return names;
}

}  // namespace kcv
