/// The built-in contracts, in the order `kcv contracts` lists them.
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"
#include "glr/contracts/glr_contracts.hpp"

namespace kcv {

const std::vector<std::unique_ptr<Contract>>& builtin_contracts() {
  // Built once, on first use (thread-safe static initialization); one line per contract.
  static const std::vector<std::unique_ptr<Contract>> list = [] {
    std::vector<std::unique_ptr<Contract>> v;
    v.push_back(make_add_contract());
    v.push_back(make_softmax_contract());
    v.push_back(make_matmul_contract());
    v.push_back(make_layernorm_contract());
    v.push_back(make_glr_fwd_contract());
    v.push_back(make_glr_bwd_contract());
    v.push_back(make_glr_fwd_scalar_contract());
    v.push_back(make_glr_bwd_scalar_contract());
    v.push_back(make_glr_fwd_varlen_contract());
    v.push_back(make_glr_bwd_varlen_contract());
    v.push_back(make_glr_fwd_varlen_scalar_contract());
    v.push_back(make_glr_bwd_varlen_scalar_contract());
    v.push_back(make_glr_contract("glr_fwd_bf16"));
    v.push_back(make_glr_contract("glr_bwd_bf16"));
    v.push_back(make_glr_contract("glr_fwd_scalar_bf16"));
    v.push_back(make_glr_contract("glr_bwd_scalar_bf16"));
    v.push_back(make_glr_contract("glr_fwd_varlen_bf16"));
    v.push_back(make_glr_contract("glr_bwd_varlen_bf16"));
    v.push_back(make_glr_contract("glr_fwd_varlen_scalar_bf16"));
    v.push_back(make_glr_contract("glr_bwd_varlen_scalar_bf16"));
    v.push_back(make_glr_contract("glr_fwd_f16"));
    v.push_back(make_glr_contract("glr_bwd_f16"));
    v.push_back(make_glr_contract("glr_fwd_scalar_f16"));
    v.push_back(make_glr_contract("glr_bwd_scalar_f16"));
    v.push_back(make_glr_contract("glr_fwd_varlen_f16"));
    v.push_back(make_glr_contract("glr_bwd_varlen_f16"));
    v.push_back(make_glr_contract("glr_fwd_varlen_scalar_f16"));
    v.push_back(make_glr_contract("glr_bwd_varlen_scalar_f16"));
    return v;
  }();
  return list;
}

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

const Contract* find_contract(const std::string& name) {
  for (const auto& c : builtin_contracts())
    if (c->name == name) return c.get();
  return nullptr;
}

}  // namespace kcv
