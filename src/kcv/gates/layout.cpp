// Gate 9 `layout`: inputs with non-contiguous strides and base offsets misaligned by one element,
// gaps filled with NaN bytes. The result must be correct, or a clean refusal; silently wrong fails.
#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/gates/registry.hpp"

namespace kcv::gates {
namespace {

enum class Variant { offset, padded, transposed };

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::offset: return "offset by one element";
    case Variant::padded: return "padded strides";
    case Variant::transposed: return "last two dims swapped in memory";
  }
  return "?";
}

/// Strides for a variant, or nullopt where it does not apply to this shape.
std::optional<std::vector<int64_t>> variant_strides(Variant v, const Shape& shape) {
  const std::size_t nd = shape.size();
  if (nd == 0) return std::nullopt;
  switch (v) {
    case Variant::offset:
      return contiguous_strides(shape);
    case Variant::padded: {
      // NOTES: 1-D: every other element; n-D: each innermost row padded by 3 elements.
      if (nd == 1) return std::vector<int64_t>{2};
      Shape padded = shape;
      padded[nd - 1] += 3;
      return contiguous_strides(padded);
    }
    case Variant::transposed: {
      if (nd < 2 || (shape[nd - 1] == 1 && shape[nd - 2] == 1)) return std::nullopt;
      Shape swapped = shape;
      std::swap(swapped[nd - 1], swapped[nd - 2]);
      std::vector<int64_t> s = contiguous_strides(swapped);
      std::swap(s[nd - 1], s[nd - 2]);
      return s;
    }
  }
  return std::nullopt;
}

class LayoutGate final : public Gate {
 public:
  std::string_view id() const override { return "layout"; }
  std::string_view summary() const override { return "strided / offset inputs: correct or clean refusal"; }
  bool tolerance_independent() const override { return true; }
  std::string note(const GateContext& ctx) const override { return structural_note(ctx.contract); }

  std::vector<Case> cases(const GateContext& ctx, uint64_t seed) const override {
    const Contract& k = ctx.contract;
    const Bindings b = k.structural_shape();
    std::vector<Case> out;
    auto add = [&](const std::string& label, const std::vector<std::pair<std::size_t, Variant>>& changes) {
      Rng rng = case_rng(seed, static_cast<int64_t>(out.size()));
      Case c = single_call_case(label, k, b, rng);
      for (const auto& [in, v] : changes) {
        HostTensor& t = c.calls[0].inputs[in];
        auto strides = variant_strides(v, t.shape);
        if (!strides) return;
        t = t.relayout(*strides, v == Variant::offset || changes.size() > 1 ? 1 : 0, kPoisonNaN);
      }
      add_plain_twin(c, 0);  // the same values contiguous: a precision failure is not a layout one
      out.push_back(std::move(c));
    };
    for (std::size_t in = 0; in < k.inputs.size(); ++in)
      for (Variant v : {Variant::offset, Variant::padded, Variant::transposed})
        add(fmt::format("'{}' {}", k.inputs[in].name, variant_name(v)), {{in, v}});
    std::vector<std::pair<std::size_t, Variant>> all;
    for (std::size_t in = 0; in < k.inputs.size(); ++in) all.push_back({in, Variant::padded});
    add("every input padded and offset", all);
    vary_calling(ctx, seed, out);
    return out;
  }

  CaseJudgement judge(const GateContext& ctx, const Case& c, const CaseRun& run) const override {
    return judge_all_calls(ctx.contract, c, run, {.refusal_ok = true});
  }
};

}  // namespace

std::unique_ptr<Gate> make_layout_gate() { return std::make_unique<LayoutGate>(); }

}  // namespace kcv::gates
