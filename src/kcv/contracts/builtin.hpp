/// What the built-in contracts share (reference input checks). Their factories are declared and
/// listed in the registry (registry.cpp): adding an op is one file with its factory plus its lines
/// there.
#pragma once

#include <memory>
#include <vector>

#include "kcv/contract.hpp"

namespace kcv {

/// For references (reference_inputs.cpp, in kcv_base; glr's contracts use it too): throws
/// std::invalid_argument unless inputs match the contract's input specs at these bindings
/// (count, dtype, shape).
void check_reference_inputs(const Contract& contract, const std::vector<HostTensor>& inputs,
                            const Bindings& shape);

/// Whether every element of every floating input is finite: then every term of an expansion is,
/// and a reference that classifies its terms gives kClassFinite everywhere without expanding.
bool all_finite(const std::vector<HostTensor>& inputs);

}  // namespace kcv
