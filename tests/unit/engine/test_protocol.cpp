// docs/protocol.md, kcv's side: the golden records in tests/protocol/ parse as the golden fields
// say, and a fixed batch stages as the golden plan. The torch worker's side of the same files:
// tests/python/test_protocol_golden.py (ctest protocol.python_golden).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kcv/isolation/isolation.hpp"

namespace kcv::test {
namespace {

using nlohmann::json;

std::string golden_path(const std::string& name) { return std::string(KCV_SOURCE_DIR) + "/tests/protocol/" + name; }

TEST(Protocol, GoldenRecordsParseAsTheySay) {
  std::ifstream in(golden_path("records.jsonl"));
  ASSERT_TRUE(in) << golden_path("records.jsonl");
  int n = 0;
  for (std::string text; std::getline(in, text);) {
    if (text.empty()) continue;
    const json g = json::parse(text);
    const isolation::Record r = isolation::parse_record(g.at("line").get<std::string>());
    SCOPED_TRACE(g.at("line").get<std::string>());
    EXPECT_EQ(r.kind, g.at("kind").get<std::string>());
    EXPECT_EQ(r.call, g.value("call", -1));
    EXPECT_EQ(r.rc, g.value("rc", 0));
    EXPECT_DOUBLE_EQ(r.seconds, g.value("seconds", 0.0));
    EXPECT_EQ(r.text, g.value("text", std::string()));
    EXPECT_EQ(r.where, g.value("where", std::string()));
    EXPECT_EQ(r.arg, g.value("arg", 0));
    EXPECT_EQ(r.offset, g.value("offset", int64_t{0}));
    ++n;
  }
  EXPECT_GE(n, 15);  // not vacuous: every record kind is there
}

/// The batch tests/protocol/plan.json was staged from: one case of two add-shaped calls, the
/// second on the first's buffers with exact buffers on the null stream, a strided input.
std::vector<Case> golden_batch() {
  Case c;
  c.label = "golden case";  // its outputs wait 7716 us before their second snapshot (the run key 77)
  c.shape = {{"N", 5}};
  CallSpec first;
  first.inputs = {HostTensor::zeros(DType::f32, {5}), HostTensor::zeros(DType::f32, {5}).relayout({2}, 1, std::byte{0})};
  first.outputs = {HostTensor::zeros(DType::f32, {5})};
  first.concurrent_with_next = true;
  CallSpec second = first;
  second.concurrent_with_next = false;
  second.reuse_buffers_of = 0;
  second.exact_buffers = true;
  second.null_stream = true;
  second.scalars = {0.5};
  c.calls = {first, second};
  return {c};
}

TEST(Protocol, AFixedBatchStagesAsTheGoldenPlan) {
  const std::vector<Case> cases = golden_batch();
  const std::vector<const Case*> batch = {&cases[0]};
  RunnerOptions o;
  o.canary_key = 77;
  const Candidate none;
  WorkerOptions w;
  isolation::Context ctx{o, none, backend_named("cpu"), w, isolation::worker_mode(backend_named("cpu"), none, w, 1), {}};
  ctx.library = "/golden/candidate.so";
  isolation::Layout layout = isolation::lay_out(batch, o.canary_key, /*recheck_outputs=*/true);
  const json plan = json::parse(isolation::plan_text(ctx, std::move(layout.calls)));
  std::ifstream in(golden_path("plan.json"));
  ASSERT_TRUE(in) << golden_path("plan.json");
  const json golden = json::parse(in);
  EXPECT_EQ(plan, golden.at("plan")) << plan.dump(1);
  EXPECT_EQ(layout.end, golden.at("plan_offset").get<int64_t>());
}

}  // namespace
}  // namespace kcv::test
