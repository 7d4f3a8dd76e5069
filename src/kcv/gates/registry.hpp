// One factory per gate; registry.cpp lists them in DESIGN order.
#pragma once

#include <memory>

#include "kcv/gate.hpp"

namespace kcv::gates {
std::unique_ptr<Gate> make_numerics_gate();
std::unique_ptr<Gate> make_shapes_gate();
std::unique_ptr<Gate> make_values_gate();
std::unique_ptr<Gate> make_nonfinite_gate();
std::unique_ptr<Gate> make_bounds_gate();
std::unique_ptr<Gate> make_inputs_intact_gate();
std::unique_ptr<Gate> make_coverage_gate();
std::unique_ptr<Gate> make_determinism_gate();
std::unique_ptr<Gate> make_layout_gate();
std::unique_ptr<Gate> make_stateless_gate();
std::unique_ptr<Gate> make_concurrency_gate();
std::unique_ptr<Gate> make_sanitizer_gate();
}  // namespace kcv::gates
