// How long kcv takes to turn one case's inputs into each value kind of the values gate, and to put
// a triangular structure back (Contract::apply_value_kind, keep_structure): the host work of a
// KernelBench case after get_inputs() (issue 24, kcv's own CPU share). Two f32 N x N inputs of the
// built-in matmul contract, marked upper triangular as a level1/14 problem's are. Prints seconds
// and a hash of the inputs per kind: a change that claims the same inputs must print the same hashes.
// Not a build target (bench/ holds none); from the repo root, after building kcv:
//   g++ -std=c++20 -O2 -Iinclude bench/kernelbench/value_kinds_time.cpp -o /tmp/value_kinds_time \
//     -Wl,--start-group build/libkcv_registry.a build/libkcv_core.a build/libglr_contracts.a \
//     build/libkcv_base.a -Wl,--end-group -lfmt -lpthread
//   /tmp/value_kinds_time [N=2048]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kcv/contract.hpp"

using namespace kcv;

namespace {
uint64_t fnv1a(const HostTensor& t) {
  uint64_t h = 1469598103934665603ull;
  for (std::byte b : t.storage) h = (h ^ static_cast<uint64_t>(b)) * 1099511628211ull;
  return h;
}
}  // namespace

int main(int argc, char** argv) {
  auto* c = const_cast<Contract*>(find_contract("matmul"));
  if (!c) return std::fprintf(stderr, "no matmul contract in this kcv\n"), 2;
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 2048;
  Bindings b = c->nominal();
  for (auto& [symbol, v] : b) v = n;
  for (auto& spec : c->inputs) spec.structure = Structure::upper;  // as a triangular problem's inputs
  Rng draw(7);
  const std::vector<HostTensor> base = c->make_inputs(b, draw, value_kind::normal);
  double total = 0;
  for (const char* kind : {value_kind::scaled_up, value_kind::scaled_down, value_kind::all_equal, value_kind::zeros,
                           value_kind::cancellation, value_kind::wide_range, value_kind::subnormal, value_kind::negated}) {
    std::vector<HostTensor> in = base;
    Rng rng(42);
    const auto t0 = std::chrono::steady_clock::now();
    c->apply_value_kind(in, kind, rng);
    c->keep_structure(in);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total += s;
    uint64_t h = 0;
    for (const HostTensor& t : in) h = h * 31 + fnv1a(t);
    std::printf("%-20s %7.3f s  hash %016llx\n", kind, s, static_cast<unsigned long long>(h));
  }
  std::printf("total %.3f s for 8 kinds of 2 x %lld x %lld f32\n", total, static_cast<long long>(n),
              static_cast<long long>(n));
}
