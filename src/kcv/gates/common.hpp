// What gates share: drawing calls, poisoning outputs, shape sweeps, judging outputs against the
// fp64 reference. Each gate file stays a small class on top of these.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/gate.hpp"

namespace kcv::gates {

/// Output poison used unless a gate says otherwise: 0xFF bytes, a NaN in every float dtype.
inline constexpr std::byte kPoisonNaN{0xFF};
/// The coverage gate's second poison: 0x3F bytes (f32 0.747…, finite).
inline constexpr std::byte kPoisonFinite{0x3F};

/// A per-case random stream: (gate seed, case index) fixes every input of the case.
Rng case_rng(uint64_t gate_seed, int64_t case_index);

/// One call at shape b with inputs of the given value kind and outputs filled with poison.
CallSpec make_call(const Contract& contract, const Bindings& b, Rng& rng,
                   const std::string& kind = "normal", std::byte poison = kPoisonNaN);

/// Appends a plain copy of call k to c (the same values, contiguous, fresh addresses, no writer
/// kernel, not concurrent) and names it call k's plain twin; returns its index.
std::size_t add_plain_twin(Case& c, std::size_t k);

/// A case of one call.
Case single_call_case(std::string label, const Contract& contract, const Bindings& b, Rng& rng,
                      const std::string& kind = "normal");

/// A plan for single_call_case(label, contract, b, case_rng(seed, index), kind), made when asked.
/// The contract must outlive the plan.
CasePlan single_call_plan(std::string label, const Contract& contract, Bindings b, uint64_t seed, int64_t index,
                          std::string kind = "normal", bool varied_prefill = false);

/// How the outputs of a case start (issue 25 class 3).
enum class Prefill { poison, zeros, random_bytes, one_byte, stale };

/// The prefill of case `index`, drawn from the seed: half the cases the NaN poison, an eighth each
/// zeros, random bytes, one random byte repeated, stale data.
Prefill prefill_for(uint64_t seed, int64_t index);

/// The outputs of c set to prefill_for(seed, index): stale data are the values of the case's own
/// inputs (finite ones, from a seeded place on, repeated as needed) in the output's dtype. For
/// gates that do not judge by the poison.
void vary_prefill(Case& c, uint64_t seed, int64_t index);

/// How a case calls the candidate (issue 26). kcv's own setting is a non-blocking stream of its
/// own and buffers inside guard bands; a production caller passes the null stream handle (the
/// legacy default stream) and buffers from plain allocations of their own size. cuda only.
enum class Calling { kcv, null_stream, exact_buffers, null_stream_exact_buffers };

/// The calling of case i of n, from the seed: with four cases or more every way appears (a seeded
/// rotation), with fewer only production's ways. Calling::kcv off cuda.
Calling calling_for(const GateContext& ctx, uint64_t seed, int64_t i, int64_t n);

/// Every call of c (large-tier calls aside: they stay guarded, on kcv's stream) made that way,
/// plain twins included; the label says how.
void call_as(Case& c, Calling how);

/// Each case i of n set to calling_for(ctx, seed, i, n): the gates that judge values (all but
/// bounds, whose guards need kcv's buffers, and sanitizer, whose buffers are always exact).
void vary_calling(const GateContext& ctx, uint64_t seed, std::vector<Case>& cases);
std::vector<CasePlan> vary_calling(const GateContext& ctx, uint64_t seed, std::vector<CasePlan> plans);

/// Every storage byte of t set to byte.
void fill_bytes(HostTensor& t, std::byte byte);

/// Boundary sizes of DESIGN §5 gate 2 (1, 2, primes, 2^k±1, not divisible by 4..128) within
/// [min, min(max, sweep_max)] of the symbol.
std::vector<int64_t> boundary_sizes(const SymbolSpec& s);

/// The nominal shape with every symbol set to v (clipped to its range); invalid shapes skipped.
std::optional<Bindings> uniform_shape(const Contract& contract, int64_t v);

/// The structural shape (Contract::structural_shape, usually nominal) followed by uniform_shape(v)
/// for each v (those the contract accepts).
std::vector<Bindings> nominal_and_uniform(const Contract& contract, std::initializer_list<int64_t> sizes);

/// One single-call case per shape, labelled with the shape, inputs drawn from (seed, case index).
std::vector<CasePlan> one_call_per_shape_plans(const Contract& contract, const std::vector<Bindings>& shapes,
                                               uint64_t seed, bool varied_prefill = false);
/// The same cases, made at once.
std::vector<Case> one_call_per_shape(const Contract& contract, const std::vector<Bindings>& shapes, uint64_t seed);

/// What a size-independent gate says when it ran at contract.structural_shape() (or at `ran`)
/// rather than the nominal shape; empty when they are the same.
std::string structural_note(const Contract& contract);
std::string structural_note(const Contract& contract, const Bindings& ran);

/// REFUSED with the candidate's return code and message.
CaseJudgement refusal(const CallResult& r);

struct JudgeOptions {
  bool classes_only = false;   // nonfinite: only the class of every element is judged
  bool two_orders = false;     // accept either class where two summation orders disagree (for a
                               // reference that does not classify its terms)
  bool refusal_ok = false;     // layout: a clean refusal passes
  /// numerics, shapes, values: on a case with random inputs (Case::random_inputs), each output
  /// that passes the worst-case bound must pass the population test too (docs/population-test.md).
  bool population = false;
};

/// Judges one finished call: a refusal (rc != 0) is REFUSED (or PASS with refusal_ok), outputs are
/// compared with the fp64 reference under the error model. With plain (the result of the call's
/// plain twin, which ran and returned 0), an element no further from the model than the twin's
/// worst passes too (docs/tolerance-independence.md).
CaseJudgement judge_call(const Contract& contract, const Bindings& shape, const CallSpec& spec,
                         const CallResult& result, const JudgeOptions& opts = {},
                         const CallResult* plain = nullptr);

/// FAIL when a guard band of one of the call's buffers changed (describe_guard), else PASS.
CaseJudgement guards_intact(const Contract& contract, const CallSpec& spec, const CallResult& r);

/// Every call's guard bands intact (guards_intact), then judges every call of a case with judge_call, each beside its plain twin's result when it names
/// one; the first failure wins, with its call index.
CaseJudgement judge_all_calls(const Contract& contract, const Case& c, const CaseRun& run,
                              const JudgeOptions& opts = {});

/// Evidence for a changed guard band of one buffer.
std::string describe_guard(const std::string& what, const std::string& name, const GuardReport& g, int64_t span);

/// "read/write N bytes past the end of input 'x' (call k)" for a fault the worker attributed to a
/// buffer; empty when it did not.
std::string describe_fault(const Contract& contract, const Case& c, const CaseRun& run);

}  // namespace kcv::gates
