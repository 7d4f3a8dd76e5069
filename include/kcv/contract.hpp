/// Op contracts: what a candidate receives (inputs, outputs, scalars in ABI order, dtypes, shape
/// symbols), how inputs are drawn, and the fp64 reference with the data the error model needs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kcv/candidate.hpp"
#include "kcv/tensor.hpp"
#include "kcv/terms.hpp"

namespace kcv {

/// Values of the shape symbols, e.g. {"M": 128, "N": 512}.
using Bindings = std::map<std::string, int64_t>;
std::string bindings_string(const Bindings& b);

using Rng = std::mt19937_64;

/// One shape symbol: the sizes a kernel must accept, and the nominal point the numerics gate uses.
struct SymbolSpec {
  std::string name;
  int64_t min = 1;
  int64_t max = 1 << 20;
  int64_t nominal = 64;
  /// The shapes gate sweeps this symbol only up to here (keeps the fp64 reference affordable).
  int64_t sweep_max = 4096;
  /// When set, the shapes gate sweeps exactly these sizes (within range) instead of the boundary
  /// table: for problems whose nominal sizes are too large to sweep densely.
  std::vector<int64_t> sweep;
};

/// Where an input's values live. Adversarial value cases stay inside the domain (NaN/Inf
/// injection aside).
enum class Domain {
  real,        // any finite value
  nonpositive, // <= 0 (glr log-gates)
  positive,    // > 0
  structural,  // integers that describe structure (offsets, lengths): never perturbed
};

/// A structure of an input's last two dimensions, where they are square, that every case keeps
/// (its values drawn, scaled, set equal or injected with NaN/Inf only where the structure leaves
/// them free): a kernel may read only the triangle its problem promises. KernelBench: what the
/// problem's get_inputs() makes (docs/kernelbench.md, "Inputs keep their structure").
enum class Structure {
  none,
  upper,      // zero below the diagonal
  lower,      // zero above the diagonal
  symmetric,  // the lower triangle mirrors the upper
};

const char* structure_name(Structure s);

/// One tensor argument. dims are symbol names, integer literals, or "SYM+k" / "SYM-k".
struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::string> dims;
  Domain domain = Domain::real;
  Structure structure = Structure::none;
};

/// One scalar argument; its value is a function of the shape (e.g. scale = K^-1/2).
struct ScalarSpec {
  std::string name;
  std::string meaning;
  std::function<double(const Bindings&)> value;
};

/// What the fp64 reference returns for one output, per element in logical row-major order:
/// the value r, the magnitude m (sum of |terms| that make r), the depth n (terms summed, or the
/// length of a multiplicative chain), and amp, an extra error scale in units of m·u that
/// nonlinear steps add (e.g. |z|·|y| for y = exp(z)). The error model allows
///   |got - r| <= c·u_acc·(n·m + amp) + u_out·|r|.
/// mag, depth and amp may be left empty: an empty vector reads as 0 for every element.
/// walk, optional, sharpens the population test on random inputs (docs/population-test.md): the
/// spread, in units of u_acc, of the rounding errors of a legitimate order on this element's terms
/// taken in random order (random_walk_scale for a plain sum). Empty: sqrt(c·n)·m for every element.
///
/// classes, where the reference classifies the terms of its expansion (kcv/terms.hpp,
/// docs/nonfinite-classes.md): per element the classes (kClass* mask) some legitimate evaluation
/// order gives. Where kClassFinite is set, a finite result is judged against the bound, and the
/// error model's overflow rules decide whether ±Inf is accepted beside it. Present, it decides
/// classes in place of a second summation order; empty, the reference does not classify.
struct RefTensor {
  std::vector<double> value, mag, depth, amp, walk;
  std::vector<uint8_t> classes;
  void resize(std::size_t n) { value.assign(n, 0); mag.assign(n, 0); depth.assign(n, 0); amp.assign(n, 0); }
};

/// Summation order of the reference. Orders agree on finite data up to rounding; on non-finite
/// data they may differ in class (Inf - Inf), which tells the nonfinite gate what to judge — for
/// references that do not classify their terms (RefTensor::classes); the others ignore it.
enum class SumOrder { forward, reverse };

/// Input value distributions the gates ask for. Contracts may add their own (extra_value_kinds).
namespace value_kind {
inline constexpr const char* normal = "normal";            // N(0,1), domain-projected
inline constexpr const char* scaled_up = "scaled 1e4";
inline constexpr const char* scaled_down = "scaled 1e-4";
inline constexpr const char* all_equal = "all equal";
inline constexpr const char* zeros = "zeros";
inline constexpr const char* cancellation = "alternating sign";
inline constexpr const char* wide_range = "wide dynamic range";
inline constexpr const char* subnormal = "subnormals";
inline constexpr const char* negated = "negated";
/// Whether inputs of this kind are independent random draws (normal, scaled, negated), where
/// rounding errors are random too: the population test judges such cases (docs/population-test.md).
bool is_random(const std::string& kind);
}  // namespace value_kind

/// One output element of a large problem as the element of a small one: the small shape, per
/// input the logical indices (into the large input) of the small input's elements in row-major
/// order, and the element's logical index in the small output.
struct SubProblem {
  Bindings shape;
  std::vector<std::vector<int64_t>> input_indices;
  int64_t out_index = 0;
};

/// The shapes gate's large tier (cuda): a shape where some tensor has more than 2^31 elements, and
/// how to judge a sampled output element from a sub-problem (output 0) instead of the whole reference.
struct LargeTier {
  Bindings shape;
  std::function<SubProblem(int64_t out_index)> slice;
};

/// The reference itself fails on a case's inputs: the problem's own code raised (KernelBench: a
/// Model that rejects inputs outside its domain). Such a case cannot be judged. Not thrown for a
/// failure of the machine (out of memory): that stays a SetupError.
class ReferenceRejects : public SetupError {
 public:
  using SetupError::SetupError;
};

class Contract {
 public:
  virtual ~Contract() = default;

  std::string name;
  std::string summary;
  std::vector<TensorSpec> inputs;    // ABI order
  std::vector<TensorSpec> outputs;   // ABI order
  std::vector<ScalarSpec> scalars;   // ABI order
  std::vector<SymbolSpec> symbols;
  DType accumulate = DType::f32;     // u_acc = unit_roundoff(accumulate)
  double c = 1.0;                    // error model constant ...
  std::string c_reasoning;           // ... and why it is what it is
  bool inplace_allowed = false;      // inputs may be modified
  /// Every gate judges classes against both summation orders (either class is accepted where
  /// they disagree), not only the nonfinite gate. For references whose second "order" is a
  /// legitimate fp32 evaluation (KernelBench: Model in fp32 eager).
  bool classes_in_two_orders = false;
  /// Shapes the shapes gate runs beside its sweep (those valid()): deep reductions at a modest
  /// output size, where the population test must reach, e.g. matmul K = 16384 at 32 x 32
  /// (docs/population-test.md).
  std::vector<Bindings> extra_shapes;
  /// When positive, the sanitizer gate runs its nominal case at shape_within(this many elements
  /// per call): nominal sizes that are a benchmark's are too large to run instrumented.
  int64_t sanitizer_elements = 0;
  /// When positive, the shapes gate sweeps every symbol with the others at shape_within(this many
  /// elements per call) instead of nominal: each symbol's tails are swept, each case a fraction
  /// of the problem's own call. numerics and values keep the nominal shape.
  int64_t sweep_elements = 0;

  /// Whether reference() may throw ReferenceRejects (KernelBench). Builtin references never do.
  bool reference_may_reject = false;

  /// The fp64 reference. Inputs are read as the device sees them (already rounded to their dtype).
  virtual std::vector<RefTensor> reference(const std::vector<HostTensor>& inputs,
                                           const std::vector<double>& scalars,
                                           const Bindings& shape, SumOrder order) const = 0;

  /// Shapes the contract accepts beyond the per-symbol ranges (e.g. relations between symbols).
  virtual bool valid(const Bindings&) const { return true; }
  /// Why valid(b) is false, when the contract can say (empty otherwise).
  virtual std::string rejection(const Bindings&) const { return {}; }
  /// The large tier, for contracts whose output-0 elements each depend on a small sub-problem.
  virtual std::optional<LargeTier> large_tier() const { return std::nullopt; }
  /// Logical indices of input i where the nonfinite gate injects NaN/±Inf. Default: first, last,
  /// middle, both sides of 32- and 64-wide tiles of the flattened tensor, and one index drawn from
  /// seed that is neither the first nor the last of a 16-aligned block (mid-tile for every tile
  /// width that is a multiple of 16); contracts with a sequence axis override to hit their own
  /// chunk boundaries and the inside of chunks of any size.
  virtual std::vector<int64_t> nonfinite_positions(std::size_t input, const Bindings& shape, uint64_t seed) const;
  /// Value kinds specific to this op, beyond the generic ones (values gate).
  virtual std::vector<std::string> extra_value_kinds() const { return {}; }
  /// Draws the inputs of one case. The default draws N(0,1) per element (projected into each
  /// input's domain) and applies the generic value kinds; contracts override for their own kinds
  /// or for structural inputs.
  virtual std::vector<HostTensor> make_inputs(const Bindings& shape, Rng& rng,
                                              const std::string& kind) const;

  // ---- derived helpers (non-virtual) ----
  Bindings nominal() const;
  /// Puts every structured input back into its structure (Structure): zeros the triangle an upper
  /// or lower input leaves zero, mirrors a symmetric one's upper triangle into its lower. An input
  /// whose last two dimensions are not square at this shape is left as it is.
  void keep_structure(std::vector<HostTensor>& inputs) const;
  /// The logical index nearest `flat` in input i (shape) whose value keep_structure leaves as it
  /// is: `flat` itself, or the element mirrored across the diagonal. Where a gate sets one element
  /// (an injected NaN, a changed value), it sets this one, then calls keep_structure.
  int64_t free_index(std::size_t input, const Shape& shape, int64_t flat) const;
  /// Where the gates whose checks do not depend on size (nonfinite, bounds, inputs_intact,
  /// coverage, determinism, layout, stateless, concurrency, sanitizer) run their nominal cases.
  /// Default: nominal(). A KernelBench problem whose own call is large clips its symbols
  /// (docs/kernelbench.md); numerics and values always run at nominal, shapes sweeps around
  /// nominal or within sweep_elements.
  virtual Bindings structural_shape() const { return nominal(); }
  /// Nominal with its symbols clipped so that one call moves at most max_elements elements
  /// (inputs plus outputs), for contracts that can count them; default nominal().
  virtual Bindings shape_within(int64_t) const { return nominal(); }
  /// Shapes of input / output i at b. Default: the spec's dims resolved; contracts whose shapes are
  /// not expressions of the symbols (a KernelBench problem's conv output) override.
  virtual Shape input_shape(std::size_t i, const Bindings& b) const { return resolve(inputs.at(i).dims, b); }
  virtual Shape output_shape(std::size_t i, const Bindings& b) const { return resolve(outputs.at(i).dims, b); }
  std::vector<double> scalar_values(const Bindings& b) const;
  /// Contiguous zero outputs of the right shapes and dtypes.
  std::vector<HostTensor> make_outputs(const Bindings& b) const;
  static Shape resolve(const std::vector<std::string>& dims, const Bindings& b);
  /// Applies a generic value kind to already-drawn inputs (respecting domains).
  void apply_value_kind(std::vector<HostTensor>& inputs, const std::string& kind, Rng& rng) const;
  /// A value drawn from N(0,1) and projected into the domain.
  static double draw(Domain d, Rng& rng);
};

/// An index in [0, n) drawn from seed that is neither the first nor the last of a 16-aligned block
/// (so not on a tile or chunk boundary of any width that is a multiple of 16); -1 when n < 3.
int64_t mid_block_index(int64_t n, uint64_t seed);

/// Built-in contracts, by name.
const std::vector<std::unique_ptr<Contract>>& builtin_contracts();
const Contract* find_contract(const std::string& name);

}  // namespace kcv
