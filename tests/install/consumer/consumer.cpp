// Uses the installed kcv as a library: the contract registry and provenance from kcv::kcv, the
// candidate ABI from <kcv/abi.h>; prints what it found (check_install.cmake matches the output).
#include <kcv/abi.h>

#include <cstdio>

#include "kcv/contract.hpp"
#include "kcv/provenance.hpp"

int main() {
  const auto* c = kcv::find_contract("softmax");
  if (!c) {
    std::puts("consumer: no softmax contract");
    return 1;
  }
  std::printf("consumer: kcv %s, ABI %d, contract %s, kcv at %s\n", kcv::kcv_version(), KCV_ABI_VERSION,
              c->name.c_str(), KCV_EXECUTABLE_PATH);
  return 0;
}
