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

const Backend* find_backend(std::string_view name) {
  for (const Backend* b : registry())
    if (b->name() == name) return b;
  return nullptr;
}

const Backend& backend_named(std::string_view name) {
  if (const Backend* b = find_backend(name)) return *b;
  std::string known;
  for (const std::string& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw SetupError(fmt::format("unknown backend '{}' ({})", name, known));
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* b : registry()) names.emplace_back(b->name());
  return names;
}

const Backend& require_backend(std::string_view name) {
  const Backend& b = backend_named(name);
  if (std::string why = b.unavailable(); !why.empty()) throw SetupError(why);
  return b;
}

std::optional<CompileRecipe> host_compile_recipe(const std::string& kind) {
  if (kind == "c") return CompileRecipe{{"cc", "-std=gnu17", "-O2", "-shared", "-fPIC"}, "-O2"};
  if (kind == "cpp") return CompileRecipe{{"c++", "-std=c++20", "-O2", "-shared", "-fPIC"}, "-O2"};
  return std::nullopt;
}

}  // namespace kcv
