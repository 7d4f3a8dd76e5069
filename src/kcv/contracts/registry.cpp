/// The built-in contracts, in the order `kcv contracts` lists them: kcv's own, then glr's family
/// (glr/contracts). The only file of kcv that names glr; built as its own library, kcv_registry
/// (CMakeLists.txt), so that kcv_base does not depend on glr's contracts, which depend on it.
#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/contracts/builtin.hpp"
#include "glr/contracts/glr_contracts.hpp"

namespace kcv {

// Each op's factory, defined in its own file (contracts/<op>.cpp).
std::unique_ptr<Contract> make_add_contract();
std::unique_ptr<Contract> make_softmax_contract();
std::unique_ptr<Contract> make_matmul_contract();
std::unique_ptr<Contract> make_layernorm_contract();

const std::vector<std::unique_ptr<Contract>>& builtin_contracts() {
  // Built once, on first use (thread-safe static initialization); one line per contract, one per family.
  static const std::vector<std::unique_ptr<Contract>> list = [] {
    std::vector<std::unique_ptr<Contract>> v;
    v.push_back(make_add_contract());
    v.push_back(make_softmax_contract());
    v.push_back(make_matmul_contract());
    v.push_back(make_layernorm_contract());
    std::ranges::move(glr_contracts(), std::back_inserter(v));
    return v;
  }();
  return list;
}

const Contract* find_contract(const std::string& name) {
  for (const auto& c : builtin_contracts())
    if (c->name == name) return c.get();
  return nullptr;
}

}  // namespace kcv
