/// Contracts glr_fwd / glr_bwd (vector and scalar gate, fixed-length and varlen), f32 and the
/// bf16/f16 input variants (_bf16, _f16: q, k, v, do and o, dq, dk, dv in that dtype; g, states
/// and dg f32), all with fp32 accumulation. The reference is glr/reference/reference.hpp (fp64 recurrence,
/// reading the inputs as stored, i.e. already rounded); the classes of NaN/Inf outputs come from
/// the terms of its expansion (docs/nonfinite-classes.md), not from a second order.
#include "glr/contracts/glr_contracts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "glr/reference/reference.hpp"
#include "kcv/contracts/builtin.hpp"

namespace kcv {

namespace {

// NOTES: c = 3. The reference gives each term of an output its path length: the decay chain
// (t − s + 1), the longest in-chunk sum (min(glr::kMaxChunk = 256, L)), the contraction over K or V,
// and 2 for the scale and the product; plus the exp-argument term u·ζ of cumulative log-gates,
// charged once (glr/reference/reference.hpp, docs/glr.md: ζ = Σ_{r=s+1..t} M_r + 8·(M_s + M_t), M_r the
// largest |Σ g| from any chunk start ≤ 256 steps back; the reference puts ζ/c into amp). A plain
// sequential fp32 recurrence rounds at most three times per step of a term's chain (exp(g) within
// an ulp, the product, the addition): ≤ 3(t − s + 1)u, so c = 3 is its worst case; a chunked
// evaluation (chunks ≤ 256) rounds each term at most once per addend of its in-chunk sums, in any
// order, and three times per chunk boundary, which the same weights cover. Measured (glr/tests/unit/
// error_model_test.cpp, every value kind the gates use, all eight contracts): the sequential
// recurrence and chunks 16–256 reach ≤ 0.19 of this bound, while TF32-like products (operands
// truncated to 10 mantissa bits) exceed it ≥ 11x (≥ 37x on the short varlen sequences).
constexpr double kC = glr::kBoundC;
constexpr const char* kReasoning =
    "per-term path length (decay chain t-s+1, in-chunk sum <= 256, contraction K or V, +2) plus the "
    "exp-argument error of cumulative log-gates summed in fp32 from any chunk start <= 256 steps back, charged "
    "once; a sequential fp32 recurrence rounds <= 3 times per chain step, so c=3 is its worst case; legitimate "
    "fp32 orders (sequential, chunks 16-256) measured <= 0.19 of the bound, TF32 >= 11x";
// NOTES: the bf16/f16 variants keep c and u = 2^-24 (the contract says fp32 accumulation); the
// model's u_out·|r| term (kcv::allowed_error, u_out of the output's dtype) absorbs the one rounding
// of a 16-bit output at its store: |fl(x) − r| ≤ u_out·|x| + |x − r| with x the fp32 result.
// Tensor-core operands: a kernel may round every operand of every matrix product once to the input
// dtype (q⊙exp(b), k⊙exp(b_last − b), A, the state S/H and the state gradient G used as operands,
// do·vᵀ), accumulating in fp32 and carrying its state in fp32. A term of an output passes ρ such
// roundings on its way (glr/reference/reference.hpp: ρ = 3 for o, dv; 2 for dq, dk; 1 for hT, dh0; dg by the
// chunked identity), each a factor (1 + δ), |δ| ≤ u_in; an operand that is itself a sum errs by
// u_in·|value| ≤ u_in·Σ|its terms|. So the output errs by at most
//   γ_ρ·Σ|term| ≤ κ·u_in·Σ_term ρ·|term| = κ·u_in·op,   κ = 17/16 ≥ 1/(1 − 4·u_in) for ρ ≤ 4,
// u_in = 2^-8 (bf16) or 2^-11 (f16), op from the reference. ρ counts the nesting of products, not
// steps: op does not grow with T, unlike a 16-bit state (one rounding per step, compounding) or a
// 16-bit running sum (one per add), which this term does not cover. The term joins amp in units of
// c·u (the model's generic |got − r| ≤ c·u·(n·m + amp) + u_out·|r|). Where an operand that is a
// sum may reach the input dtype's range (ovf ≥ 65504·(1 − 2^-8) in f16: inputs scaled 1e4), such
// a kernel overflows it: any class is accepted there (mag at FLT_MAX, amp Inf).
// Measured in glr/tests/unit/reduced_precision_test.cpp.
constexpr double kKappa = glr::kOperandRoundingKappa;  // glr/reference/reference.hpp
constexpr const char* kReasoningReduced =
    "fp32 accumulation as the f32 contract (u = 2^-24, c = 3) plus tensor-core operand rounding: every operand of "
    "every matrix product (q*exp(b), k*exp(b_last-b), A, state S/H, state gradient G, do*v^T) rounded once to the "
    "input dtype; a term passes rho such roundings (o, dv 3; dq, dk 2; hT, dh0 1; dg: 3 per q*dq, k*dk term, 4 on "
    "G*S), so the error is <= gamma_rho*sum|term| <= kappa*u_in*sum rho|term|, kappa = 17/16 >= 1/(1-4u_in), "
    "u_in = 2^-8 bf16 / 2^-11 f16: depends on the products' magnitudes, not on T; it joins amp as "
    "kappa*(u_in/u)*op/c, with kappa*eta_in*opu for operands that underflow (eta_in = 2^-25 f16). u_out*|r| covers "
    "the 16-bit output store. A 16-bit state or running sum (one rounding per step or add) is not covered; f16 "
    "operands that can overflow (inputs scaled near 65504) free the class";

const char* suffix(DType io) {
  switch (io) {
    case DType::f32: return "";
    case DType::bf16: return "_bf16";
    case DType::f16: return "_f16";
    default: throw std::invalid_argument("kcv: glr contracts take f32, bf16 or f16 inputs");
  }
}

double log_sigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }

class GlrContract final : public Contract {
 public:
  GlrContract(bool backward, bool varlen, glr::GateForm gate, DType io)
      : backward_(backward), varlen_(varlen), gate_(gate), io_(io) {
    const bool scalar = gate == glr::GateForm::scalar;
    name = std::string(backward ? "glr_bwd" : "glr_fwd") + (varlen ? "_varlen" : "") + (scalar ? "_scalar" : "") +
           suffix(io);
    const std::string X(dtype_name(io));
    summary = std::string(backward ? "glr backward" : "glr forward") +
              (scalar ? ", scalar gate g[B,T,H]" : ", vector gate g[B,T,H,K]") +
              (varlen ? ", varlen (cu_seqlens[N+1], states [N,H,K,V])" : "") +
              ": S_t = Diag(exp g_t) S_{t-1} + k_t^T v_t, o_t = scale q_t S_t " +
              (io == DType::f32 ? std::string("(f32)")
                                : "(q, k, v" + std::string(backward ? ", do" : "") + " and " +
                                      (backward ? "dq, dk, dv " : "o ") + X +
                                      "; g, states" + (backward ? ", dg" : "") + " f32; fp32 accumulation)");
    const std::string Bd = varlen ? "1" : "B", Sd = varlen ? "N" : "B";
    const std::vector<std::string> qk = {Bd, "T", "H", "K"}, vv = {Bd, "T", "H", "V"};
    const std::vector<std::string> gg = scalar ? std::vector<std::string>{Bd, "T", "H"} : qk;
    const std::vector<std::string> st = {Sd, "H", "K", "V"};
    inputs = {{"q", io, qk, Domain::real},
              {"k", io, qk, Domain::real},
              {"v", io, vv, Domain::real},
              {"g", DType::f32, gg, Domain::nonpositive},
              {"h0", DType::f32, st, Domain::real}};
    if (backward) {
      inputs.push_back({"do", io, vv, Domain::real});
      inputs.push_back({"dhT", DType::f32, st, Domain::real});
      outputs = {{"dq", io, qk, Domain::real},
                 {"dk", io, qk, Domain::real},
                 {"dv", io, vv, Domain::real},
                 {"dg", DType::f32, gg, Domain::real},
                 {"dh0", DType::f32, st, Domain::real}};
    } else {
      outputs = {{"o", io, vv, Domain::real}, {"hT", DType::f32, st, Domain::real}};
    }
    if (varlen) inputs.push_back({"cu_seqlens", DType::i64, {"N+1"}, Domain::structural});
    scalars = {{"scale", "K^-1/2", [](const Bindings& b) { return 1.0 / std::sqrt(double(b.at("K"))); }}};
    if (!varlen) symbols.push_back({"B", 1, 64, 2, 4, {}});
    symbols.push_back({"T", 1, 65536, 256, 1024, {}});
    symbols.push_back({"H", 1, 64, 2, 4, {}});
    symbols.push_back({"K", 1, 256, 32, 128, {}});
    symbols.push_back({"V", 1, 256, 32, 128, {}});
    if (varlen) symbols.push_back({"N", 1, 64, 4, 8, {}});
    accumulate = DType::f32;
    c = kC;
    c_reasoning = io == DType::f32 ? kReasoning : kReasoningReduced;
  }

  std::vector<int64_t> nonfinite_positions(std::size_t input, const Bindings& shape, uint64_t seed) const override {
    // NOTES: along T, the first and last step and both sides of the 64-step chunk boundaries (at
    // the first and at the last batch/head/feature), where chunked kernels change code paths; and
    // inside chunks of any size (docs/nonfinite-classes.md): step 37 (prime) and a step drawn from
    // the seed that is neither the first nor the last of a 16-step block, so that no chunk size
    // that is a multiple of 16 (16, 48, 64, 128, 256) has a boundary there.
    const TensorSpec& spec = inputs.at(input);
    if (spec.dims.size() < 2 || spec.dims[1] != "T") return Contract::nonfinite_positions(input, shape, seed);
    const Shape s = input_shape(input, shape);
    const std::vector<int64_t> stride = contiguous_strides(s);
    const int64_t T = s[1];
    std::vector<int64_t> at;
    for (int64_t t : {int64_t{0}, int64_t{37}, int64_t{63}, int64_t{64}, int64_t{127}, int64_t{128}, T / 2, T - 1,
                      mid_block_index(T, seed + input)}) {
      if (t < 0 || t >= T) continue;
      at.push_back(t * stride[1]);                     // b = 0, h = 0, k = 0
      int64_t last = t * stride[1];                    // b, h, k at their last values
      for (std::size_t d = 0; d < s.size(); ++d)
        if (d != 1) last += (s[d] - 1) * stride[d];
      at.push_back(last);
    }
    std::sort(at.begin(), at.end());
    at.erase(std::unique(at.begin(), at.end()), at.end());
    return at;
  }

  std::vector<std::string> extra_value_kinds() const override {
    return {glr_kind::gates_zero, glr_kind::gates_m20, glr_kind::decay_near_1, glr_kind::large_qk};
  }

  std::vector<HostTensor> make_inputs(const Bindings& shape, Rng& rng, const std::string& kind) const override {
    std::vector<HostTensor> in;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const TensorSpec& spec = inputs[i];
      HostTensor t = HostTensor::zeros(spec.dtype, input_shape(i, shape));
      const int64_t n = t.numel();
      if (spec.name == "g") {
        // NOTES: g = log sigmoid(2 + 1.5·N(0,1)): decays around 0.88 (memory ~8 steps), g in about
        // (−5, 0) — realistic gates; a plain N(0,1) projected to ≤ 0 forgets far faster.
        for (int64_t j = 0; j < n; ++j) t.set(j, log_sigmoid(2.0 + 1.5 * draw(Domain::real, rng)));
      } else if (spec.domain == Domain::structural) {
        const std::vector<int64_t> cu = draw_cu_seqlens(shape.at("N"), shape.at("T"), rng);
        for (int64_t j = 0; j < n; ++j) t.set(j, double(cu[j]));
      } else {
        for (int64_t j = 0; j < n; ++j) t.set(j, draw(Domain::real, rng));
      }
      in.push_back(std::move(t));
    }
    HostTensor& g = in[3];
    auto fill_g = [&](auto f) {
      for (int64_t j = 0; j < g.numel(); ++j) g.set(j, f());
    };
    if (kind == glr_kind::gates_zero) {
      fill_g([] { return 0.0; });
    } else if (kind == glr_kind::gates_m20) {
      fill_g([] { return -20.0; });
    } else if (kind == glr_kind::decay_near_1) {
      fill_g([&] { return -1e-3 * (1.0 + 0.1 * std::clamp(draw(Domain::real, rng), -3.0, 3.0)); });
    } else if (kind == glr_kind::large_qk) {
      // NOTES: q·k of N(0,1) rows has spread √K; scaling both by (100/√K)^½ puts it at ~1e2.
      const double s = std::sqrt(100.0 / std::sqrt(double(shape.at("K"))));
      for (int idx : {0, 1})
        for (int64_t j = 0; j < in[idx].numel(); ++j) in[idx].set(j, in[idx].get(j) * s);
    } else {
      apply_value_kind(in, kind, rng);
    }
    return in;
  }

  std::vector<RefTensor> reference(const std::vector<HostTensor>& in, const std::vector<double>& sc,
                                   const Bindings& shape, SumOrder) const override {
    check_reference_inputs(*this, in, shape);
    glr::Problem p;
    p.B = varlen_ ? 1 : shape.at("B");
    p.T = shape.at("T");
    p.H = shape.at("H");
    p.K = shape.at("K");
    p.V = shape.at("V");
    p.gate = gate_;
    std::vector<int64_t> cu;
    if (varlen_) {
      for (double x : in.back().values()) cu.push_back(static_cast<int64_t>(x));
      p.cu_seqlens = cu.data();
      p.N = shape.at("N");
    }
    std::vector<std::vector<double>> x;
    for (std::size_t i = 0; i < (varlen_ ? in.size() - 1 : in.size()); ++i) x.push_back(in[i].values());
    const double scale = sc.at(0);
    // NOTES: one order only. The reference classifies the terms of every output
    // (glr/reference/reference.hpp `classes`, docs/nonfinite-classes.md): where NaN or ±Inf is order-dependent
    // it says so for every chunk size and operand dtype at once, so no second order is evaluated.
    std::vector<RefTensor> out;
    if (!backward_) {
      const glr::FwdInputs fi{x[0].data(), x[1].data(), x[2].data(), x[3].data(), x[4].data(), scale, operands()};
      const glr::FwdResult r = glr::reference_fwd(p, fi, glr::Order::sequential);
      for (const glr::Estimate* e : {&r.o, &r.hT}) out.push_back(to_ref(*e));
    } else {
      const glr::BwdInputs bi{x[0].data(), x[1].data(), x[2].data(), x[3].data(),
                              x[4].data(), x[5].data(), x[6].data(), scale, operands()};
      const glr::BwdResult r = glr::reference_bwd(p, bi, glr::Order::sequential);
      for (const glr::Estimate* e : {&r.dq, &r.dk, &r.dv, &r.dg, &r.dh0}) out.push_back(to_ref(*e));
      claim_no_walk_saving(out[3]);  // dg
    }
    return out;
  }

 private:
  // NOTES: the population test (docs/population-test.md) takes sqrt(c·n)·m as an element's spread
  // where the reference gives no walk: that holds where depth·mag counts roundings each within
  // u·mag. dg's budget also holds the chunked identity's terms q⊙dq and k⊙dk (and G⊙S_e), larger
  // than dg's own magnitude and cancelling (a chunk-64 fp32 kernel errs by 1e9 on a dg of 1e-19 at
  // inputs scaled 1e4, inside the bound): dg claims no sqrt(n) saving, its walk is the worst case.
  void claim_no_walk_saving(RefTensor& r) const {
    r.walk.resize(r.value.size());
    for (std::size_t i = 0; i < r.walk.size(); ++i) r.walk[i] = c * r.depth[i] * r.mag[i];
  }

  /// Error data and classes of the recurrence; the underflow slack joins amp, and in the
  /// bf16/f16 contracts the operand-rounding budget κ·u_in·op (in units of c·u, see kKappa).
  RefTensor to_ref(const glr::Estimate& e) const {
    RefTensor r;
    r.value = e.value;
    r.classes = e.classes;
    r.mag = e.mag;
    r.depth = e.depth;
    r.amp = e.amp;
    const double u = unit_roundoff(accumulate);
    const double eta_per_u = 0x1p-149 / u;
    for (std::size_t i = 0; i < r.amp.size(); ++i) r.amp[i] += e.under[i] * eta_per_u;
    if (io_ == DType::f32) return r;
    const double op_per_cu = kKappa * unit_roundoff(io_) / (c * u);
    // η_in = u_in · (smallest normal): half the input dtype's smallest subnormal.
    const double eta_in = unit_roundoff(io_) * (io_ == DType::f16 ? 0x1p-14 : 0x1p-126);
    const double opu_per_cu = kKappa * eta_in / (c * u);
    const double range = max_finite(io_) * (1 - 0x1p-8);
    for (std::size_t i = 0; i < r.amp.size(); ++i) {
      r.amp[i] += e.op[i] * op_per_cu + e.opu[i] * opu_per_cu;
      if (e.ovf[i] >= range) {  // an operand may overflow the input dtype: any class, any value
        r.mag[i] = std::max(r.mag[i], double(max_finite(DType::f32)));
        r.depth[i] = std::max(r.depth[i], 2.0);
        r.amp[i] = std::numeric_limits<double>::infinity();
        // An infinite operand of either sign beside the element's own infinities: any of them.
        if (r.classes[i] & kClassNonFinite) r.classes[i] |= kClassNonFinite;
      }
    }
    return r;
  }

  /// What a tensor-core kernel rounds its MMA operands to: the reference flushes partial products
  /// beside an infinity below that dtype's smallest normal (glr/reference/reference.hpp `classes`).
  glr::OperandDtype operands() const {
    return io_ == DType::bf16 ? glr::OperandDtype::bf16 : io_ == DType::f16 ? glr::OperandDtype::f16
                                                                            : glr::OperandDtype::f32;
  }

  bool backward_, varlen_;
  glr::GateForm gate_;
  DType io_;
};

}  // namespace

std::vector<int64_t> draw_cu_seqlens(int64_t N, int64_t T, Rng& rng) {
  if (N < 1 || T < 0) throw std::invalid_argument("kcv: draw_cu_seqlens: N >= 1 and T >= 0 required");
  std::vector<int64_t> c(N + 1, 0);
  for (int64_t i = 1; i < N; ++i) c[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(T + 1));
  c[N] = T;
  std::sort(c.begin(), c.end());
  // NOTES: one case in two gets an empty sequence, one in two a length-1 sequence (independently),
  // at a random position; both shift the following boundaries, which stay non-decreasing.
  const uint64_t r = rng();
  if (N >= 2 && (r & 1)) {
    const int64_t j = static_cast<int64_t>((r >> 8) % static_cast<uint64_t>(N));  // sequence j empty
    if (j + 1 < N) c[j + 1] = c[j];
    else c[j] = T;
    for (int64_t i = j + 2; i < N; ++i) c[i] = std::max(c[i], c[i - 1]);
  }
  if (N >= 2 && T >= 1 && (r & 2)) {
    const int64_t j = static_cast<int64_t>((r >> 32) % static_cast<uint64_t>(N - 1));  // sequence j of length 1
    if (c[j] + 1 <= T) {
      c[j + 1] = c[j] + 1;
      for (int64_t i = j + 2; i < N; ++i) c[i] = std::max(c[i], c[i - 1]);
    }
  }
  c[0] = 0;
  c[N] = T;
  return c;
}

std::unique_ptr<Contract> make_glr_contract(const std::string& name) {
  // glr_{fwd,bwd}[_varlen][_scalar][_bf16|_f16], parsed left to right.
  std::string_view rest = name;
  auto take = [&](std::string_view part) {
    if (!rest.starts_with(part)) return false;
    rest.remove_prefix(part.size());
    return true;
  };
  bool backward = false;
  if (take("glr_bwd")) backward = true;
  else if (!take("glr_fwd")) throw std::invalid_argument("kcv: '" + name + "' is not a glr contract name");
  const bool varlen = take("_varlen");
  const bool scalar = take("_scalar");
  DType io = DType::f32;
  if (take("_bf16")) io = DType::bf16;
  else if (take("_f16")) io = DType::f16;
  if (!rest.empty())
    throw std::invalid_argument("kcv: '" + name + "' is not a glr contract name (glr_{fwd,bwd}[_varlen][_scalar]"
                                "[_bf16|_f16])");
  return std::make_unique<GlrContract>(backward, varlen, scalar ? glr::GateForm::scalar : glr::GateForm::vector, io);
}

std::unique_ptr<Contract> make_glr_fwd_contract() { return make_glr_contract("glr_fwd"); }
std::unique_ptr<Contract> make_glr_bwd_contract() { return make_glr_contract("glr_bwd"); }
std::unique_ptr<Contract> make_glr_fwd_scalar_contract() { return make_glr_contract("glr_fwd_scalar"); }
std::unique_ptr<Contract> make_glr_bwd_scalar_contract() { return make_glr_contract("glr_bwd_scalar"); }
std::unique_ptr<Contract> make_glr_fwd_varlen_contract() { return make_glr_contract("glr_fwd_varlen"); }
std::unique_ptr<Contract> make_glr_bwd_varlen_contract() { return make_glr_contract("glr_bwd_varlen"); }
std::unique_ptr<Contract> make_glr_fwd_varlen_scalar_contract() { return make_glr_contract("glr_fwd_varlen_scalar"); }
std::unique_ptr<Contract> make_glr_bwd_varlen_scalar_contract() { return make_glr_contract("glr_bwd_varlen_scalar"); }

std::vector<std::unique_ptr<Contract>> glr_contracts() {
  std::vector<std::unique_ptr<Contract>> v;
  for (const char* dtype : {"", "_bf16", "_f16"})
    for (const char* form : {"glr_fwd", "glr_bwd", "glr_fwd_scalar", "glr_bwd_scalar", "glr_fwd_varlen",
                             "glr_bwd_varlen", "glr_fwd_varlen_scalar", "glr_bwd_varlen_scalar"})
      v.push_back(make_glr_contract(std::string(form) + dtype));
  return v;
}

}  // namespace kcv
