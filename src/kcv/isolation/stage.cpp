// Staging: a batch laid out in one data file (a memfd shared with the worker): every tensor's
// bytes going in, its snapshot slots coming back, and the plan after them (docs/protocol.md).
#include "isolation.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "kcv/gates/common.hpp"
#include "kcv/protocol.hpp"

using nlohmann::json;
namespace proto = kcv::protocol;

namespace kcv::isolation {

namespace {

int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

/// Outputs of a call at most this large are snapshotted again at the end of their case.
constexpr int64_t kRecheckBytes = int64_t(64) << 20;

/// Whether a call's outputs are snapshotted again at the end of its case: not when a later call
/// of the case uses the same buffers (they change then, as they should), nor for the large tier
/// (sampled), nor past kRecheckBytes.
bool rechecked(const Case& c, std::size_t k) {
  const CallSpec& call = c.calls[k];
  if (call.large) return false;
  int64_t bytes = 0;
  for (const auto& t : call.outputs) bytes += static_cast<int64_t>(t.span_bytes());
  if (bytes > kRecheckBytes) return false;
  // The buffers a call uses are those of the first call of its reuse chain.
  auto owner = [&](std::size_t i) {
    for (int hops = 0; c.calls[i].reuse_buffers_of >= 0 && hops < 1000; ++hops)
      i = static_cast<std::size_t>(c.calls[i].reuse_buffers_of);
    return i;
  };
  for (std::size_t later = k + 1; later < c.calls.size(); ++later)
    if (owner(later) == owner(k)) return false;
  return true;
}

/// How long a case waits before the second snapshot of its outputs, in microseconds.
int64_t recheck_delay_us(uint64_t canary_key, const std::string& label) {
  // NOTES: a share of the cases (a quarter, drawn from the run's key and the case's label) wait
  // 2-20 ms before the second snapshot of their outputs, so a late write need not be immediate.
  uint64_t h = canary_key ^ 0x9e3779b97f4a7c15ull;
  for (char ch : label) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  h ^= h >> 29;
  return h % 4 == 0 ? 2000 + static_cast<int64_t>((h >> 8) % 18000) : 0;
}

/// A hash of the run's key, the case's label and a few small numbers: kcv's seeded draws of how a
/// case is set up in the worker (replay regenerates the label and the key, so the draw).
uint64_t case_hash(uint64_t canary_key, const std::string& label, uint64_t salt) {
  uint64_t h = canary_key ^ 0x9e3779b97f4a7c15ull ^ (salt * 0xff51afd7ed558ccdull);
  for (char ch : label) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  h ^= h >> 31;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h;
}

/// Where call k's buffers go (issue 25 class 3): kcv's fixed placement told a candidate it runs
/// under kcv (cpu: outputs starting on a page boundary, inputs ending flush against their PROT_NONE
/// page; cuda: every buffer 4 KiB past its cudaMalloc'd base, 4 KiB before its end). Each buffer's
/// offset is drawn from the run's key and the case's label, a multiple of the backend's alignment
/// (PlacementRule: 64 bytes on cpu, torch's CPU allocator's; 512 on cuda, torch's caching
/// allocator's), so no legitimate kernel loses an alignment it may assume. cpu: in a quarter of the
/// cases every output instead ends against a PROT_NONE page (within 63 bytes), so a write past its
/// end faults, even one whose bytes the candidate restores before returning. cuda: the allocation
/// also ends a drawn distance past the trailing guard band.
struct Placement {
  bool vary = false;
  bool fence = false;                       // outputs end against a PROT_NONE page
  std::vector<int64_t> inputs, outputs;     // offsets of the first byte (PlacementRule)
  std::vector<int64_t> input_tails, output_tails;  // bytes past the trailing guard band (rule.tails)
};

Placement placement(const CallSpec& call, const std::string& label, std::size_t k, uint64_t canary_key,
                    const PlacementRule& rule) {
  Placement p;
  if (!rule.varies || call.fixed_placement || call.large || call.exact_buffers) return p;
  p.vary = true;
  p.fence = rule.fences && case_hash(canary_key, label, 0x66656e6365ull) % 4 == 0;  // every call of the case
  const auto slots = static_cast<uint64_t>(rule.range / rule.align);
  auto offset = [&](uint64_t salt) { return static_cast<int64_t>(case_hash(canary_key, label, salt) % slots) * rule.align; };
  for (std::size_t a = 0; a < call.inputs.size(); ++a) p.inputs.push_back(offset(1000 + 64 * k + a));
  for (std::size_t a = 0; a < call.outputs.size(); ++a) p.outputs.push_back(offset(500000 + 64 * k + a));
  if (rule.tails) {
    for (std::size_t a = 0; a < call.inputs.size(); ++a) p.input_tails.push_back(offset(0x7461696cull + 64 * k + a));
    for (std::size_t a = 0; a < call.outputs.size(); ++a)
      p.output_tails.push_back(offset(0x7461696c0000ull + 64 * k + a));
  }
  return p;
}

/// What the evidence of a failing case says about its placement.
std::string placement_text(const Case& c, uint64_t canary_key, const PlacementRule& rule) {
  std::string out;
  for (std::size_t k = 0; k < c.calls.size(); ++k) {
    const Placement p = placement(c.calls[k], c.label, k, canary_key, rule);
    if (!p.vary) continue;
    auto list = [](const std::vector<int64_t>& v) {
      std::string s;
      for (int64_t x : v) {
        if (!s.empty()) s += ',';
        s += std::to_string(x);
      }
      return s.empty() ? std::string("-") : s;
    };
    // cpu's offsets are within a page; cuda's count from the end of the leading guard band.
    if (rule.tails)
      out += fmt::format("{}call {}: inputs at offsets {}, outputs at offsets {} past their {}-byte leading guard band",
                         out.empty() ? "" : "; ", k, list(p.inputs), list(p.outputs), proto::kGuardBytes);
    else
      out += fmt::format("{}call {}: inputs at page offsets {}, outputs {}", out.empty() ? "" : "; ", k,
                         list(p.inputs), p.fence ? "ending against a PROT_NONE page" : "at page offsets " + list(p.outputs));
    if (c.calls.size() > 3 && k >= 2) {
      out += fmt::format("; ... ({} calls)", c.calls.size());
      break;
    }
  }
  return out;
}

/// The plan's entries for one call's inputs or outputs, their places in the data file taken from
/// *at on (and recorded in `where`).
json stage_tensors(const CallSpec& call, const std::vector<HostTensor>& ts, bool is_input, bool recheck,
                   int64_t* at, std::vector<Staged>& where, const Placement& placed) {
  json arr = json::array();
  for (std::size_t k = 0; k < ts.size(); ++k) {
    const HostTensor& t = ts[k];
    Staged s;
    const int64_t span = static_cast<int64_t>(t.span_bytes());
    json jt = {{"dtype", static_cast<int32_t>(t.dtype)}, {"shape", t.shape}, {"stride", t.stride},
               {"offset", t.offset}, {"span", span}};
    if (call.large) {
      // Nothing staged: inputs are generated on the device, outputs poisoned there, and
      // only both guards (+ the sampled output elements) come back.
      s.src = 0;
      const auto n_samples = is_input ? 0 : static_cast<int64_t>(call.samples.size());
      s.snap = *at; *at = align64(*at + 2 * proto::kGuardBytes + n_samples * static_cast<int64_t>(dtype_size(t.dtype)));
      if (is_input) jt["gen"] = call.large_seed + k;
      else jt["fill"] = std::to_integer<int>(gates::kPoisonNaN);
      jt["sample"] = is_input ? std::vector<int64_t>{} : call.samples;
    } else {
      s.src = *at; *at = align64(*at + span);
      s.snap = *at; *at = align64(*at + proto::snapshot_bytes(span));
      if (!is_input && recheck) {
        s.recheck = *at; *at = align64(*at + proto::snapshot_bytes(span));
        jt["recheck"] = s.recheck;
      }
    }
    jt["src"] = s.src;
    jt["snap"] = s.snap;
    if (placed.vary && !(placed.fence && !is_input)) jt["at"] = (is_input ? placed.inputs : placed.outputs)[k];
    if (placed.vary && !placed.input_tails.empty())
      jt["tail"] = (is_input ? placed.input_tails : placed.output_tails)[k];
    where.push_back(s);
    arr.push_back(std::move(jt));
  }
  return arr;
}

/// The plan's entry for call k of case ci (`first_call`: the global index of the case's call 0).
json plan_call(const Case& c, std::size_t ci, std::size_t k, int first_call, bool recheck, int64_t delay_us,
               const Placement& placed) {
  const CallSpec& call = c.calls[k];
  json jc;
  if (placed.fence) jc["fence"] = true;
  jc["case"] = static_cast<int>(ci);
  if (recheck && delay_us > 0) jc["recheck_delay_us"] = delay_us;
  jc["reuse"] = call.reuse_buffers_of >= 0 ? first_call + call.reuse_buffers_of : -1;
  jc["concurrent_with_next"] = call.concurrent_with_next;
  jc["writer_kernel"] = call.writer_kernel;
  jc["background_load"] = call.background_load;
  if (call.null_stream) jc["null_stream"] = true;
  if (call.exact_buffers) jc["exact"] = true;
  if (call.calls_before > 0) jc["calls_before"] = call.calls_before;
  jc["scalars"] = call.scalars;
  jc["bindings"] = c.shape;
  return jc;
}

/// What a JIT specializes on (Dynamo's guards: sizes, strides, dtypes, alignment, constants).
std::string shape_signature(const json& jc) {
  json sig = {{"bindings", jc["bindings"]}, {"scalars", jc["scalars"]}, {"inputs", json::array()}};
  for (const json& t : jc["inputs"]) sig["inputs"].push_back({t["dtype"], t["shape"], t["stride"], t["offset"]});
  return sig.dump();
}

}  // namespace

WorkerMode worker_mode(const Backend& backend, const Candidate& candidate, const WorkerOptions& wopts,
                       double timeout_s) {
  WorkerMode m;
  m.torch = candidate.runs_in_torch_worker();
  m.sanitized = wopts.sanitized;
  if (m.sanitized) m.sanitizer = backend.sanitized_run(wopts.sanitizer_tool, candidate.has_source(), m.torch);
  // NOTES: a torch worker costs seconds to start (import torch, the CUDA context, the solution's
  // extension); it is kept between batches of the same options. Sanitized workers never are:
  // their tools report at exit.
  m.session_capable = m.torch && !m.sanitized && !candidate.library().empty();
  m.timeout = timeout_s * m.sanitizer.timeout_factor;
  m.leftovers = m.torch ? Leftovers::any : !m.sanitizer.wrapper.empty() ? Leftovers::baseline : Leftovers::none;
  return m;
}

Layout lay_out(const std::vector<const Case*>& batch, uint64_t canary_key, bool recheck_outputs,
               const PlacementRule& rule) {
  Layout l;
  int64_t at = proto::kHeaderBytes;
  for (std::size_t ci = 0; ci < batch.size(); ++ci) {
    const Case& c = *batch[ci];
    const int first = l.calls_total();
    l.first_call_of_case.push_back(first);
    l.in_at.emplace_back();
    l.out_at.emplace_back();
    const int64_t delay_us = recheck_delay_us(canary_key, c.label);
    l.placement.push_back(rule.varies ? placement_text(c, canary_key, rule) : std::string());
    for (std::size_t k = 0; k < c.calls.size(); ++k) {
      const bool recheck = recheck_outputs && rechecked(c, k);
      // A call that reuses an earlier call's buffers keeps their placement (the worker ignores it).
      const Placement placed = placement(c.calls[k], c.label, k, canary_key, rule);
      json jc = plan_call(c, ci, k, first, recheck, delay_us, placed);
      l.in_at.back().emplace_back();
      l.out_at.back().emplace_back();
      jc["inputs"] = stage_tensors(c.calls[k], c.calls[k].inputs, true, recheck, &at, l.in_at.back().back(), placed);
      jc["outputs"] = stage_tensors(c.calls[k], c.calls[k].outputs, false, recheck, &at, l.out_at.back().back(), placed);
      l.signature.push_back(shape_signature(jc));
      l.calls.push_back(std::move(jc));
    }
  }
  l.end = at;
  return l;
}

std::string plan_text(const Context& ctx, json calls) {
  const WorkerMode& m = ctx.mode;
  json plan = {{"backend", std::string(ctx.backend.name())}, {"candidate", ctx.library}, {"canary_key", ctx.opt.canary_key},
               {"calls", std::move(calls)}};
  if (m.session_capable) plan["session"] = true;
  // A plain kcv-worker keeps its fault handlers where the backend locks them (cpu): the candidate
  // may not replace them (its own SIGSEGV handler would swallow an over-read into the PROT_NONE
  // page). Not under ASan or valgrind, which own those signals.
  if (!m.torch && !m.sanitized && ctx.backend.locks_fault_signals()) plan["lock_fault_signals"] = true;
  if (m.torch) {
    // NOTES: a torch worker imports the private copies Candidate::kernelbench made (with their
    // directories, read-only, readable by uid 65534); python_search_path() puts the copies' own
    // directories and then the originals' on its sys.path, so a module beside the solution or the
    // problem is found as it was before the copies (H200, 2026-12: "No module named 'cuda_rowsum'").
    plan["kernelbench"] = ctx.opt.kernelbench;
    plan["kernelbench"]["sanitize"] = m.sanitized;
    if (!ctx.candidate.problem_copy().empty()) plan["kernelbench"]["problem"] = ctx.candidate.problem_copy();
    plan["kernelbench"]["search_path"] = ctx.candidate.python_search_path();
  }
  return plan.dump();
}

DataFile& DataFile::operator=(DataFile&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = std::exchange(o.fd_, -1);
    map_ = std::exchange(o.map_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DataFile::reset() {
  if (fd_ < 0) return;
  munmap(map_, static_cast<std::size_t>(bytes_));
  close(fd_);
  fd_ = -1;
  map_ = nullptr;
  bytes_ = 0;
}

DataFile data_file(Session* waiting, int64_t total, int* files_made) {
  // Zeroed first, a session's last data file is what a fresh memfd is: nothing of an earlier
  // batch can be read as this one's.
  if (waiting && waiting->data.fd() >= 0 && waiting->data.bytes() >= total) {
    DataFile reused = std::move(waiting->data);
    std::memset(reused.map(), 0, static_cast<std::size_t>(total));
    return reused;
  }
  const int fd = memfd_create("data", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, total) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("cannot create the data memfd");
  }
  void* map = mmap(nullptr, static_cast<std::size_t>(total), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    close(fd);
    throw std::runtime_error("cannot map the data memfd");
  }
  ++*files_made;
  return DataFile(fd, static_cast<unsigned char*>(map), total);
}

void write_staging(const DataFile& data, const Layout& layout, const std::vector<const Case*>& batch,
                   const std::string& plan) {
  unsigned char* shm = data.map();
  const uint64_t header[2] = {static_cast<uint64_t>(layout.end), plan.size()};
  std::memcpy(shm, header, sizeof header);
  std::memcpy(shm + layout.end, plan.data(), plan.size());
  for (std::size_t ci = 0; ci < batch.size(); ++ci)
    for (std::size_t k = 0; k < batch[ci]->calls.size(); ++k) {
      const auto& call = batch[ci]->calls[k];
      if (call.large) continue;
      for (std::size_t a = 0; a < call.inputs.size(); ++a)
        std::memcpy(shm + layout.in_at[ci][k][a].src, call.inputs[a].storage.data(), call.inputs[a].span_bytes());
      for (std::size_t a = 0; a < call.outputs.size(); ++a)
        std::memcpy(shm + layout.out_at[ci][k][a].src, call.outputs[a].storage.data(), call.outputs[a].span_bytes());
    }
}

}  // namespace kcv::isolation
