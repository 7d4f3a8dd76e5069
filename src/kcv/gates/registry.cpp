// The 12 gates in DESIGN §5 order. Adding a gate: one file and one line here.
#include "kcv/gates/registry.hpp"

namespace kcv {

const std::vector<std::unique_ptr<Gate>>& all_gates() {
  static const std::vector<std::unique_ptr<Gate>> gates = [] {
    std::vector<std::unique_ptr<Gate>> g;
    g.push_back(gates::make_numerics_gate());
    g.push_back(gates::make_shapes_gate());
    g.push_back(gates::make_values_gate());
    g.push_back(gates::make_nonfinite_gate());
    g.push_back(gates::make_bounds_gate());
    g.push_back(gates::make_inputs_intact_gate());
    g.push_back(gates::make_coverage_gate());
    g.push_back(gates::make_determinism_gate());
    g.push_back(gates::make_layout_gate());
    g.push_back(gates::make_stateless_gate());
    g.push_back(gates::make_concurrency_gate());
    g.push_back(gates::make_sanitizer_gate());
    return g;
  }();
  return gates;
}

const Gate* find_gate(std::string_view id) {
  for (const auto& g : all_gates())
    if (g->id() == id) return g.get();
  return nullptr;
}

}  // namespace kcv
