// Contract base: dims resolution, defaults, input drawing and the generic value kinds; registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "kcv/contract.hpp"

namespace kcv {
namespace {

/// A contract exercising every domain and a few dtypes; its reference is never called.
class ProbeContract final : public Contract {
 public:
  ProbeContract() {
    name = "probe";
    inputs = {{"real", DType::f32, {"M", "N"}, Domain::real},
              {"neg", DType::f32, {"N+1"}, Domain::nonpositive},
              {"pos", DType::f32, {"N-1"}, Domain::positive},
              {"half", DType::f16, {"M", "N"}, Domain::real},
              {"brain", DType::bf16, {"N"}, Domain::real},
              {"offsets", DType::i32, {"3"}, Domain::structural}};
    outputs = {{"y", DType::f32, {"M", "N"}, Domain::real}};
    scalars = {{"scale", "1/sqrt(N)", [](const Bindings& b) { return 1.0 / std::sqrt(double(b.at("N"))); }}};
    symbols = {{"M", 1, 100, 16, 50, {}}, {"N", 2, 10000, 4096, 4096, {}}};
  }
  std::vector<RefTensor> reference(const std::vector<HostTensor>&, const std::vector<double>&, const Bindings&,
                                   SumOrder) const override {
    return {};
  }
};

const char* const kKinds[] = {value_kind::normal,    value_kind::scaled_up,    value_kind::scaled_down,
                              value_kind::all_equal, value_kind::zeros,        value_kind::cancellation,
                              value_kind::wide_range, value_kind::subnormal,   value_kind::negated};

std::vector<HostTensor> draw(const Contract& c, const std::string& kind, uint64_t seed) {
  Rng rng(seed);
  return c.make_inputs(c.nominal(), rng, kind);
}

TEST(Contract, ResolveDims) {
  const Bindings b{{"M", 8}, {"N", 5}};
  EXPECT_EQ(Contract::resolve({"M", "N+1", "N-1", "7", " N ", "M + 2"}, b), (Shape{8, 6, 4, 7, 5, 10}));
  EXPECT_EQ(Contract::resolve({}, b), Shape{});
  EXPECT_THROW(Contract::resolve({"K"}, b), std::invalid_argument);
  EXPECT_THROW(Contract::resolve({"N-6"}, b), std::invalid_argument);
  EXPECT_THROW(Contract::resolve({"N+x"}, b), std::invalid_argument);
  EXPECT_THROW(Contract::resolve({"-3"}, b), std::invalid_argument);
  EXPECT_EQ(bindings_string(b), "M=8, N=5");
}

TEST(Contract, NominalScalarsOutputs) {
  const ProbeContract c;
  const Bindings nom = c.nominal();
  EXPECT_EQ(nom, (Bindings{{"M", 16}, {"N", 4096}}));
  EXPECT_EQ(c.input_shape(1, nom), Shape{4097});
  EXPECT_EQ(c.input_shape(2, nom), Shape{4095});
  EXPECT_EQ(c.scalar_values(nom), std::vector<double>{1.0 / 64});
  const auto outs = c.make_outputs({{"M", 3}, {"N", 7}});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].shape, (Shape{3, 7}));
  EXPECT_EQ(outs[0].dtype, DType::f32);
  EXPECT_TRUE(outs[0].is_contiguous());
  for (double v : outs[0].values()) EXPECT_EQ(v, 0.0);
}

TEST(Contract, DrawRespectsDomains) {
  Rng rng(1);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LE(Contract::draw(Domain::nonpositive, rng), 0.0);
    EXPECT_GT(Contract::draw(Domain::positive, rng), 0.0);
  }
}

TEST(Contract, NormalDrawsAreStandardAndReplayable) {
  const ProbeContract c;
  const auto a = draw(c, value_kind::normal, 42), b = draw(c, value_kind::normal, 42), d = draw(c, value_kind::normal, 43);
  ASSERT_EQ(a.size(), c.inputs.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].same_bits(b[i])) << i;
    EXPECT_EQ(a[i].shape, c.input_shape(i, c.nominal()));
    EXPECT_EQ(a[i].dtype, c.inputs[i].dtype);
  }
  EXPECT_FALSE(a[0].same_bits(d[0]));
  const auto x = a[0].values();
  double mean = 0, sq = 0;
  for (double v : x) mean += v, sq += v * v;
  mean /= x.size();
  sq /= x.size();
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(sq, 1.0, 0.03);
  // Rounded to the input dtype (the reference sees what the device sees).
  for (double v : a[3].values()) ASSERT_EQ(v, round_to(DType::f16, v));
  for (double v : a[5].values()) EXPECT_EQ(v, 0.0);  // structural: left to the contract
}

TEST(Contract, EveryKindStaysInDomainAndFinite) {
  const ProbeContract c;
  for (const char* kind : kKinds) {
    const auto in = draw(c, kind, 7);
    for (std::size_t i = 0; i < in.size(); ++i) {
      for (double v : in[i].values()) {
        ASSERT_TRUE(std::isfinite(v)) << kind << " input " << i;
        ASSERT_EQ(v, round_to(in[i].dtype, v)) << kind;
        if (c.inputs[i].domain == Domain::nonpositive) {
          ASSERT_LE(v, 0.0) << kind;
        }
        if (c.inputs[i].domain == Domain::positive) {
          ASSERT_GT(v, 0.0) << kind;
        }
        if (c.inputs[i].domain == Domain::structural) {
          ASSERT_EQ(v, 0.0) << kind;
        }
      }
    }
  }
}

TEST(Contract, KindsTransformTheNormalDraw) {
  const ProbeContract c;
  const auto base = draw(c, value_kind::normal, 9);
  const auto x0 = base[0].values();
  auto values_of = [&](const char* kind, std::size_t i) { return draw(c, kind, 9)[i].values(); };

  const auto up = values_of(value_kind::scaled_up, 0), down = values_of(value_kind::scaled_down, 0);
  const auto neg = values_of(value_kind::negated, 0);
  for (std::size_t j = 0; j < x0.size(); ++j) {
    ASSERT_EQ(up[j], round_to(DType::f32, x0[j] * 1e4));
    ASSERT_EQ(down[j], round_to(DType::f32, x0[j] * 1e-4));
    ASSERT_EQ(neg[j], -x0[j]);
  }
  // Negated in a nonpositive domain is projected back to <= 0 (checked above); positive too.
  const auto eq = values_of(value_kind::all_equal, 0);
  EXPECT_TRUE(std::all_of(eq.begin(), eq.end(), [&](double v) { return v == eq[0]; }));
  EXPECT_NE(eq[0], 0.0);
  for (double v : values_of(value_kind::zeros, 0)) ASSERT_EQ(v, 0.0);
  for (double v : values_of(value_kind::zeros, 2)) ASSERT_GT(v, 0.0);  // positive domain

  const auto alt = values_of(value_kind::cancellation, 0);
  double sum = 0, mag = 0;
  for (std::size_t j = 0; j < alt.size(); ++j) {
    ASSERT_EQ(alt[j] > 0, j % 2 == 0) << j;
    ASSERT_NEAR(std::abs(alt[j]), 1.0, 0.05);
    sum += alt[j];
    mag += std::abs(alt[j]);
  }
  EXPECT_LT(std::abs(sum), 1e-2 * mag);  // heavy cancellation

  const auto wide = values_of(value_kind::wide_range, 0);
  double lo = INFINITY, hi = 0;
  for (double v : wide)
    if (v != 0) lo = std::min(lo, std::abs(v)), hi = std::max(hi, std::abs(v));
  EXPECT_GT(hi / lo, 1e10);

  const auto sub32 = values_of(value_kind::subnormal, 0), sub16 = values_of(value_kind::subnormal, 3);
  const auto sub_bf = values_of(value_kind::subnormal, 4);
  int nonzero = 0;
  for (double v : sub32) {
    ASSERT_LT(std::abs(v), 0x1p-126);
    nonzero += v != 0;
  }
  for (double v : sub_bf) ASSERT_LT(std::abs(v), 0x1p-126);
  for (double v : sub16) {
    ASSERT_LT(std::abs(v), 0x1p-14);
    nonzero += v != 0;
  }
  EXPECT_GT(nonzero, static_cast<int>(sub32.size()));  // overwhelmingly nonzero subnormals
}

/// Three structured inputs, a batch of 2 square matrices each, and one that stops being square.
class StructuredContract final : public Contract {
 public:
  StructuredContract() {
    name = "structured";
    inputs = {{"up", DType::f32, {"2", "N", "N"}, Domain::real, Structure::upper},
              {"low", DType::f32, {"N", "N"}, Domain::real, Structure::lower},
              {"sym", DType::f32, {"2", "N", "N"}, Domain::real, Structure::symmetric},
              {"wide", DType::f32, {"N", "N+1"}, Domain::real, Structure::upper}};
    outputs = {{"y", DType::f32, {"N"}, Domain::real}};
    symbols = {{"N", 1, 64, 5, 5, {}}};
  }
  std::vector<RefTensor> reference(const std::vector<HostTensor>&, const std::vector<double>&, const Bindings&,
                                   SumOrder) const override {
    return {};
  }
};

/// Whether input i of in keeps its structure in every 5 x 5 matrix of it.
bool kept(const std::vector<HostTensor>& in, std::size_t i, Structure s) {
  const HostTensor& t = in[i];
  for (int64_t m = 0; m < t.numel() / 25; ++m)
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 5; ++c) {
        const double v = t.get(m * 25 + r * 5 + c);
        if (s == Structure::upper && r > c && v != 0.0) return false;
        if (s == Structure::lower && r < c && v != 0.0) return false;
        const double mirror = t.get(m * 25 + c * 5 + r);
        if (s == Structure::symmetric && v != mirror && !(std::isnan(v) && std::isnan(mirror))) return false;
      }
  return true;
}

TEST(Contract, EveryKindKeepsEachInputsStructure) {
  // KernelBench's level1/13-15 promise triangular or symmetric inputs; a kernel that reads only the
  // promised triangle is legitimate (docs/kernelbench.md, "Inputs keep their structure").
  const StructuredContract c;
  for (const char* kind : kKinds) {
    const auto in = draw(c, kind, 11);
    EXPECT_TRUE(kept(in, 0, Structure::upper)) << kind;
    EXPECT_TRUE(kept(in, 1, Structure::lower)) << kind;
    EXPECT_TRUE(kept(in, 2, Structure::symmetric)) << kind;
  }
  // The free triangle is drawn, not zeroed: a normal draw has no zero there.
  const auto in = draw(c, value_kind::normal, 12);
  EXPECT_NE(in[0].get(1), 0.0);   // [0][0][1], above the diagonal
  EXPECT_NE(in[1].get(5), 0.0);   // [1][0], below
  // Not square at this shape: left as drawn.
  bool any_below = false;
  for (int64_t i = 0; i < in[3].numel(); ++i) any_below = any_below || (i / 6 > i % 6 && in[3].get(i) != 0.0);
  EXPECT_TRUE(any_below);
}

TEST(Contract, FreeIndexMirrorsAcrossTheDiagonalIntoWhatTheStructureKeeps) {
  const StructuredContract c;
  const Shape batch{2, 5, 5}, square{5, 5};
  EXPECT_EQ(c.free_index(0, batch, 25 + 3 * 5 + 1), 25 + 1 * 5 + 3);  // up: [1][3][1] -> [1][1][3]
  EXPECT_EQ(c.free_index(0, batch, 25 + 1 * 5 + 3), 25 + 1 * 5 + 3);  // already above
  EXPECT_EQ(c.free_index(0, batch, 2 * 5 + 2), 2 * 5 + 2);            // the diagonal is free
  EXPECT_EQ(c.free_index(1, square, 1 * 5 + 3), 3 * 5 + 1);           // low: above -> below
  EXPECT_EQ(c.free_index(2, batch, 4 * 5 + 0), 0 * 5 + 4);            // sym keeps the upper triangle
  EXPECT_EQ(c.free_index(3, Shape{5, 6}, 6 * 4 + 1), 6 * 4 + 1);      // not square: as it is
  // An element set at its free index survives keep_structure (mirrored where symmetric).
  Rng rng(3);
  auto in = c.make_inputs(c.nominal(), rng, value_kind::normal);
  const int64_t at = c.free_index(2, in[2].shape, 25 + 4 * 5 + 1);
  in[2].set(at, std::numeric_limits<double>::quiet_NaN());
  c.keep_structure(in);
  EXPECT_TRUE(std::isnan(in[2].get(25 + 1 * 5 + 4)));
  EXPECT_TRUE(std::isnan(in[2].get(25 + 4 * 5 + 1)));
  // The nonfinite gate's positions are all free ones.
  for (std::size_t i = 0; i < 3; ++i)
    for (int64_t p : c.nonfinite_positions(i, c.nominal(), 99))
      EXPECT_EQ(c.free_index(i, c.input_shape(i, c.nominal()), p), p) << "input " << i << " position " << p;
}

TEST(Contract, UnknownKindThrows) {
  const ProbeContract c;
  Rng rng(1);
  EXPECT_THROW(c.make_inputs(c.nominal(), rng, "scaled 1e5"), std::invalid_argument);
  auto in = draw(c, value_kind::normal, 1);
  EXPECT_THROW(c.apply_value_kind(in, "", rng), std::invalid_argument);
}

TEST(Registry, BuiltinsAreListedAndDocumented) {
  std::vector<std::string> names;
  for (const auto& c : builtin_contracts()) {
    names.push_back(c->name);
    EXPECT_FALSE(c->summary.empty()) << c->name;
    EXPECT_FALSE(c->c_reasoning.empty()) << c->name;
    EXPECT_GE(c->c, 1.0) << c->name;
    EXPECT_LE(c->c, 4.0) << c->name;
    EXPECT_EQ(c->accumulate, DType::f32) << c->name;
    EXPECT_EQ(find_contract(c->name), c.get());
    for (const auto& s : c->symbols) {
      EXPECT_LE(s.min, s.nominal) << c->name << " " << s.name;
      EXPECT_LE(s.nominal, s.sweep_max) << c->name << " " << s.name;
      EXPECT_LE(s.sweep_max, s.max) << c->name << " " << s.name;
    }
    const Bindings nom = c->nominal();
    EXPECT_TRUE(c->valid(nom));
    Rng rng(3);
    const auto in = c->make_inputs(nom, rng, value_kind::normal);
    const auto ref = c->reference(in, c->scalar_values(nom), nom, SumOrder::forward);
    ASSERT_EQ(ref.size(), c->outputs.size());
    for (std::size_t o = 0; o < ref.size(); ++o)
      EXPECT_EQ(static_cast<int64_t>(ref[o].value.size()), numel(c->output_shape(o, nom)));
  }
  for (const char* want : {"add", "softmax", "matmul", "layernorm"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_EQ(find_contract("no such op"), nullptr);

  const Contract& ln = *find_contract("layernorm");
  EXPECT_EQ(ln.scalar_values(ln.nominal()), std::vector<double>{1e-5});
  EXPECT_EQ(ln.nominal(), (Bindings{{"M", 64}, {"N", 512}}));
  EXPECT_EQ(find_contract("softmax")->nominal(), (Bindings{{"M", 128}, {"N", 512}}));
  EXPECT_EQ(find_contract("matmul")->nominal(), (Bindings{{"K", 128}, {"M", 128}, {"N", 128}}));
  EXPECT_EQ(find_contract("add")->nominal(), (Bindings{{"N", 65536}}));
}

TEST(Registry, ReferencesRejectWrongInputs) {
  const Contract& mm = *find_contract("matmul");
  const Bindings b{{"M", 2}, {"N", 3}, {"K", 4}};
  std::vector<HostTensor> in = {HostTensor::zeros(DType::f32, {2, 4}), HostTensor::zeros(DType::f32, {4, 2})};
  EXPECT_THROW(mm.reference(in, {}, b, SumOrder::forward), std::invalid_argument);
  in.pop_back();
  EXPECT_THROW(mm.reference(in, {}, b, SumOrder::forward), std::invalid_argument);
}

}  // namespace
}  // namespace kcv
