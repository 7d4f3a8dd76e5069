/// The references' shared checks on their inputs (kcv/contracts/builtin.hpp), in kcv_base: kcv's
/// contracts and glr's (glr/contracts) use them; the registry (registry.cpp) lists the contracts.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"

namespace kcv {

void check_reference_inputs(const Contract& contract, const std::vector<HostTensor>& inputs,
                            const Bindings& shape) {
  if (inputs.size() != contract.inputs.size())
    throw std::invalid_argument("kcv: " + contract.name + " reference: " + std::to_string(inputs.size()) +
                                " inputs, expected " + std::to_string(contract.inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Shape want = contract.input_shape(i, shape);
    if (inputs[i].shape != want || inputs[i].dtype != contract.inputs[i].dtype)
      throw std::invalid_argument("kcv: " + contract.name + " reference: input '" + contract.inputs[i].name +
                                  "' is " + std::string(dtype_name(inputs[i].dtype)) +
                                  shape_string(inputs[i].shape) + ", expected " +
                                  std::string(dtype_name(contract.inputs[i].dtype)) + shape_string(want));
  }
}

bool all_finite(const std::vector<HostTensor>& inputs) {
  for (const HostTensor& t : inputs) {
    if (!is_floating(t.dtype)) continue;
    for (double x : t.values())
      if (!std::isfinite(x)) return false;
  }
  return true;
}

}  // namespace kcv
