// KernelBench problems as contracts: a trusted Python reference server (adapters/torch/
// kcv_torch_reference.py) describes the problem, draws its inputs and runs Model in float64 and
// float32, and the derived bound beside it; this file turns that into kcv's contract interface and
// the error model (docs/kernelbench.md, "The error bound, derived").
#include "kcv/kernelbench.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/core/sha256.hpp"
#include "kcv/engine.hpp"
#include "kcv/error_model.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/kernelbench/reference_arrays.hpp"
#include "kcv/kernelbench/reference_cache.hpp"
#include "kcv/part_clock.hpp"
#include "kcv/provenance.hpp"
#include "kcv/runner.hpp"
#include "kcv/backends/host_backend.hpp"
#include "kcv/subprocess.hpp"
#include "kcv/terms.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kcv {

struct KernelBenchContract::Described {
  bool ok = false;
  std::string error;
  std::vector<Shape> in_shapes, out_shapes;
};

/// The reference server process and its pipe protocol: one JSON line, then raw blobs.
struct KernelBenchContract::Server {
  pid_t pid = -1;
  FILE* to = nullptr;
  FILE* from = nullptr;
  std::string log;
  std::mutex mu;
  // Caches (under cache_mu): descriptions by shape, and reference answers (both orders) by case:
  // the last one, or up to reference_cache_bytes of them, most recently used first (a session).
  std::mutex cache_mu;
  std::map<std::string, Described> described;
  using Answer = std::shared_ptr<const std::vector<std::string>>;
  std::list<std::pair<std::string, Answer>> references;
  std::size_t reference_bytes = 0, reference_cache_bytes = 0;
  int64_t reference_hits = 0, reference_misses = 0;
  static std::size_t bytes_of(const std::vector<std::string>& blobs) {
    std::size_t n = 0;
    for (const auto& b : blobs) n += b.size();
    return n;
  }
  Answer find_reference(const std::string& key) {
    for (auto it = references.begin(); it != references.end(); ++it)
      if (it->first == key) {
        references.splice(references.begin(), references, it);
        ++reference_hits;
        return it->second;
      }
    ++reference_misses;
    return nullptr;
  }
  void keep_reference(const std::string& key, Answer answer) {
    reference_bytes += bytes_of(*answer);
    references.emplace_front(key, std::move(answer));
    // The newest answer always stays (both orders read it); older ones go past the budget.
    while (references.size() > 1 && reference_bytes > reference_cache_bytes) {
      reference_bytes -= bytes_of(*references.back().second);
      references.pop_back();
    }
  }
  json runtime = json::object();   // the server's hello: torch, torch_cuda, gpu (provenance)
  std::string bound_mode = "calibrated";  // the server's hello: "derived" or "calibrated"
  // What the reference answers said about the bound (under cache_mu): per output, elements judged
  // by the derived bound, by the calibrated floor, free in class; where fp32 eager itself erred
  // beyond the derived bound (a rule that undercounts: the bound is then eager's, twice); the
  // ops without a rule.
  struct Tally {
    int64_t answers = 0;
    std::vector<int64_t> derived, calibrated, free, eager_over;
    std::set<std::string> unruled;
  } tally;

  ~Server() {
    if (to) { std::fputs("{\"op\":\"quit\"}\n", to); std::fclose(to); }
    if (from) std::fclose(from);
    if (pid > 0) {
      for (int i = 0; i < 200; ++i) {  // up to 2 s to exit by itself
        if (waitpid(pid, nullptr, WNOHANG) == pid) return;
        usleep(10000);
      }
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }

  void start(const KernelBenchSetup& s) {
    const std::string script = (fs::path(kcv_adapters_dir(s.settings)) / "torch" / "kcv_torch_reference.py").string();
    if (!fs::exists(script)) throw SetupError(fmt::format("torch adapter not found at {} (set KCV_ADAPTERS_DIR)", script));
    log = (fs::path(s.workdir) / "reference-server.log").string();
    const std::string threads = std::to_string(default_threads(s.settings));
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw SetupError("pipe failed");
    // NOTES: answers are tens to hundreds of MB (33 bytes an output element); a 1 MiB pipe moves them
    // in 16x fewer reads and wake-ups than the default 64 KiB. Where the system refuses (pipe-max-size,
    // a user's pipe quota) the default stays: only slower.
    for (int fd : {in[1], out[0]}) (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
    const std::string device(backend_named(s.backend).torch_device()), seed = std::to_string(s.init_seed);
    SubprocessSpec spec;
    spec.argv = {s.python, "-u", script, s.problem, device, seed};
    std::vector<std::string> env = own_environment();
    set_env(env, "PYTHONDONTWRITEBYTECODE", "1");
    set_env(env, "OMP_NUM_THREADS", threads);  // the candidate's share (default_threads)
    // NOTES: large tensors come and go every case: keep their memory in the heap instead of
    // mapping (and zeroing) fresh pages each time.
    set_env(env, "MALLOC_MMAP_THRESHOLD_", "4294967296");
    set_env(env, "MALLOC_TRIM_THRESHOLD_", "17179869184");
    spec.env = std::move(env);
    spec.in = Redirect::to_fd(in[0]);
    spec.out = Redirect::to_fd(out[1]);
    spec.err = Redirect::to_file(log);
    spec.own_process_group = false;  // killed by pid; it dies with kcv (PR_SET_PDEATHSIG, docs/security.md)
    spec.exec_failure_prefix = fmt::format("cannot run {}: ", s.python);
    try {
      pid = spawn_subprocess(spec);
    } catch (...) {
      for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
      throw;
    }
    close(in[0]);
    close(out[1]);
    to = fdopen(in[1], "w");
    from = fdopen(out[0], "r");
    signal(SIGPIPE, SIG_IGN);  // a dead server is an error reply below, not a dead kcv
    json hello = receive(nullptr);
    if (!hello.value("ok", false))
      throw SetupError(clean_text(hello.value("error", std::string("reference server failed"))));
    // NOTES: only the keys kcv knows, as strings (a server of an older kcv sends none of them).
    for (const char* key : {"torch", "torch_cuda", "gpu"})
      if (hello.contains(key) && hello[key].is_string()) runtime[key] = hello[key];
    if (hello.contains("bound") && hello["bound"] == "derived") bound_mode = "derived";
  }

  /// The last n non-empty lines of the server's log, " | "-joined, each cut at 300 bytes, as clean
  /// text (a problem's traceback is in there).
  std::string last_log_lines(std::size_t n) const {
    FILE* f = std::fopen(log.c_str(), "r");
    if (!f) return "no log";
    std::vector<std::string> last;
    std::string line;
    char buf[1024];
    while (std::fgets(buf, sizeof buf, f)) {
      line += buf;
      if (line.back() != '\n' && !std::feof(f)) continue;  // a line longer than the buffer
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (!line.empty()) {
        last.push_back(std::string(utf8_prefix(line, 300)));
        if (last.size() > n) last.erase(last.begin());
      }
      line.clear();
    }
    std::fclose(f);
    if (last.empty()) return "no output";
    std::string out;
    for (const auto& l : last) out += (out.empty() ? "" : " | ") + l;
    return clean_text(out);
  }

  /// How the server ended (issue 21 item 7): its exit status or signal — a SIGKILL kcv did not
  /// send is the out-of-memory killer's, most likely — and the last lines of its log. Reaps it.
  std::string death() {
    std::string how = "still running";
    if (pid > 0) {
      int status = 0;
      pid_t got = 0;
      for (int i = 0; i < 200 && (got = waitpid(pid, &status, WNOHANG)) == 0; ++i) usleep(10000);  // 2 s
      if (got == pid) {
        pid = -1;
        if (WIFSIGNALED(status)) {
          const int sig = WTERMSIG(status);
          const char* name = sigabbrev_np(sig);
          how = sig == SIGKILL ? std::string("killed by ") + kUnsentSigkill
                               : fmt::format("killed by signal {} (SIG{})", sig, name ? name : "?");
        } else if (WIFEXITED(status)) {
          how = fmt::format("exited with status {}", WEXITSTATUS(status));
        }
      }
    }
    return fmt::format("{}; its log {} ends: {}", how, log, last_log_lines(5));
  }

  json receive(std::vector<std::string>* blobs) {
    std::string line;
    int ch;
    while ((ch = std::fgetc(from)) != EOF && ch != '\n') line += static_cast<char>(ch);
    if (ch == EOF)
      throw SetupError(fmt::format("the torch reference server ended: {}", death()));
    json msg = json::parse(line, nullptr, false);
    if (msg.is_discarded()) throw SetupError("the torch reference server sent a malformed reply");
    for (const auto& n : msg.value("blobs", json::array())) {
      std::string b(n.get<std::size_t>(), '\0');
      if (!b.empty() && std::fread(b.data(), 1, b.size(), from) != b.size())
        throw SetupError(fmt::format("the torch reference server ended mid-reply: {}", death()));
      if (blobs) blobs->push_back(std::move(b));
    }
    return msg;
  }

  json request(json msg, const std::vector<std::string>& blobs_out, std::vector<std::string>* blobs_in) {
    std::lock_guard<std::mutex> lock(mu);
    msg["blobs"] = json::array();
    for (const auto& b : blobs_out) msg["blobs"].push_back(b.size());
    const std::string line = msg.dump() + "\n";
    bool ok = std::fwrite(line.data(), 1, line.size(), to) == line.size();
    for (const auto& b : blobs_out) ok = ok && std::fwrite(b.data(), 1, b.size(), to) == b.size();
    ok = ok && std::fflush(to) == 0;
    if (!ok) throw SetupError(fmt::format("the torch reference server is gone: {}", death()));
    return receive(blobs_in);
  }
};

namespace {

std::string key_of(const Bindings& b) { return bindings_string(b); }

/// Logical elements of t, contiguous, as raw bytes of its dtype.
std::string contiguous_bytes(const HostTensor& t) {
  auto bytes = [](const HostTensor& c) {
    return std::string(reinterpret_cast<const char*>(c.storage.data()), c.span_bytes());
  };
  if (t.is_contiguous() && t.offset == 0) return bytes(t);
  return bytes(t.relayout(contiguous_strides(t.shape), 0, std::byte{0}));
}

/// Identifies t's logical values: dtype, layout and a hash of its storage (gaps included).
std::string fingerprint(const HostTensor& t) {
  const std::string_view raw(reinterpret_cast<const char*>(t.storage.data()), t.storage.size());
  std::string f = fmt::format("{}:{}", static_cast<int>(t.dtype), t.offset);
  for (std::size_t d = 0; d < t.shape.size(); ++d) f += fmt::format(",{}/{}", t.shape[d], t.stride[d]);
  return f + fmt::format(":{}:{}", raw.size(), std::hash<std::string_view>{}(raw));
}

}  // namespace

KernelBenchContract::~KernelBenchContract() = default;


json torch_pch_entries(const std::string& manifest) {
  const json m = json::parse(manifest, nullptr, false);
  auto bad = [](const std::string& why) {
    return SetupError("not a precompiled-header manifest (adapters/torch/kcv_torch_pch.py): " + why);
  };
  if (m.is_discarded() || !m.is_object()) throw bad("not a JSON object");
  if (!m.contains("entries") || !m["entries"].is_array()) throw bad("no \"entries\" array");
  json entries = json::array();
  for (const json& e : m["entries"]) {
    if (!e.is_object()) throw bad("an entry is not an object");
    json kept;
    for (const char* field : {"key", "header", "gch", "sha256"}) {
      if (!e.contains(field) || !e[field].is_string() || e[field].get<std::string>().empty())
        throw bad(fmt::format("an entry has no {} string", field));
      kept[field] = e[field];
    }
    const std::string sha = kept["sha256"].get<std::string>();
    if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw bad(fmt::format("sha256 '{}' is not 64 lowercase hex digits", sha));
    entries.push_back(std::move(kept));
  }
  return entries;
}

json checked_pch_copies(const json& entries, const std::string& workdir) {
  // NOTES: kcv makes the copies, outside the sandbox and before any worker starts: a worker of uid
  // 65534 in its private /tmp may be unable to reach or read the manifest's files (a 0700
  // directory, a /tmp of kcv's), and a copy it cannot write is one no candidate rewrites for the
  // later workers of the verification.
  json kept = json::array();
  for (const json& e : entries) {
    const std::string sha = e["sha256"].get<std::string>();
    const fs::path where = fs::path(workdir) / "torch-pch" / sha.substr(0, 16) / "torch";
    const fs::path gch = where / "extension.h.gch", part = where / "extension.h.gch.part";
    std::error_code ec;
    fs::create_directories(where, ec);
    bool same = false;
    try {
      same = !ec && sha256_file(e["gch"].get<std::string>(), part.string()) == sha;
    } catch (const std::runtime_error&) {
      same = false;
    }
    if (!same) {  // not the header the manifest was made with: the build goes without one
      fs::remove(part, ec);
      continue;
    }
    fs::rename(part, gch, ec);
    std::ofstream(where / "extension.h") << "#include <torch/extension.h>\n";  // the stub's text is kcv's
    const auto readable = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;
    fs::permissions(gch, readable, fs::perm_options::replace, ec);
    fs::permissions(where / "extension.h", readable, fs::perm_options::replace, ec);
    if (!ec) kept.push_back(e);
  }
  return kept;
}

json torch_pch_entries(const Settings& settings) {
  if (settings.torch_pch.empty()) return json::array();
  try {
    return torch_pch_entries(settings.torch_pch);
  } catch (const SetupError& e) {
    throw SetupError(std::string("KCV_TORCH_PCH is ") + e.what());
  }
}

const nlohmann::json& KernelBenchContract::runtime() const { return server_->runtime; }

std::unique_ptr<KernelBenchContract> KernelBenchContract::create(const KernelBenchSetup& setup) {
  std::unique_ptr<KernelBenchContract> k(new KernelBenchContract());
  k->setup_ = setup;
  // Before the server starts: a bad manifest costs nothing.
  k->pch_ = checked_pch_copies(torch_pch_entries(setup.settings), setup.workdir);
  k->server_ = std::make_unique<Server>();
  k->server_->start(setup);
  json r = k->server_->request({{"op", "describe"}, {"bindings", json::object()}}, {}, nullptr);
  if (!r.value("ok", false) && r.value("not_a_function", false))
    throw SetupError(fmt::format("problem '{}': {}", setup.problem, r.value("error", std::string("?"))));
  if (!r.value("ok", false))
    throw SetupError(fmt::format("problem '{}': Model does not run at its own sizes: {}", setup.problem,
                                 r.value("error", std::string("?"))));
  const json& d = r["description"];
  // A corpus names every problem problem.py: then its directory is the name.
  const fs::path pp(setup.problem);
  k->name = "kernelbench:" + (pp.stem() == "problem" && pp.has_parent_path() ? pp.parent_path().filename() : pp.stem()).string();
  k->summary = "KernelBench problem " + setup.problem + ": ModelNew must match Model (float64 reference)";
  auto literal_dims = [](const json& shape) {
    std::vector<std::string> dims;
    for (const auto& v : shape) dims.push_back(std::to_string(v.get<int64_t>()));
    return dims;
  };
  int n = 0;
  for (const auto& in : d["inputs"]) {
    TensorSpec spec{fmt::format("in{}", n++), static_cast<DType>(in["dtype"].get<int>()), literal_dims(in["shape"]),
                    Domain::real};
    if (in["integer"].get<bool>()) spec.domain = Domain::structural;  // class indices, lengths: kept as drawn
    else if (in["nonneg"].get<bool>()) spec.domain = Domain::positive;
    const std::string structure = in.value("structure", std::string("none"));
    if (structure == "upper") spec.structure = Structure::upper;
    else if (structure == "lower") spec.structure = Structure::lower;
    else if (structure == "symmetric") spec.structure = Structure::symmetric;
    k->inputs.push_back(std::move(spec));
  }
  n = 0;
  for (const auto& out : d["outputs"])
    k->outputs.push_back({fmt::format("out{}", n++), static_cast<DType>(out["dtype"].get<int>()),
                          literal_dims(out["shape"]), Domain::real});
  int64_t elements = 0;
  for (const auto& io : {d["inputs"], d["outputs"]})
    for (const auto& t : io) elements += numel(t["shape"].get<Shape>());
  // A symbol judged around size v: the shapes gate sweeps 1..v+1.
  auto centre_on = [](SymbolSpec& sym, int64_t v) {
    sym.min = 1;
    sym.nominal = v;
    sym.max = v + 1;
    sym.sweep_max = v + 1;
    // NOTES: 1, small primes, 127, and both neighbours of the problem's own size: tails at the
    // scale the kernel was written for, without a dense sweep of sizes like 16384.
    sym.sweep = {1, 3, 13, 127, v - 1, v + 1};
  };
  const json sizes = d["sizes"];
  for (const auto& s : d["symbols"]) {
    SymbolSpec sym;
    sym.name = s.get<std::string>();
    centre_on(sym, sizes[sym.name].get<int64_t>());
    k->symbols.push_back(std::move(sym));
  }
  // NOTES: the case being judged holds its inputs and outputs on the host several times over
  // (staging, snapshots, the float64 reference and its bound). Past the cap, the problem is
  // judged at the largest clipped sizes under it, and says so; with no such sizes (no module-level
  // symbol, or none the Model accepts smaller) it is refused up front, instead of running the
  // machine out of memory halfway through.
  if (const int64_t cap = setup.settings.max_elements; elements > cap) {
    const std::string why = fmt::format("moves {} elements per call (inputs and outputs at its own sizes), over kcv's "
                                        "cap of {} for host-side judging (set KCV_MAX_ELEMENTS to raise it)",
                                        elements, cap);
    const Bindings own = k->nominal(), within = k->shape_within(cap);
    if (within == own)
      throw SetupError(fmt::format("problem '{}' {}, and no smaller sizes of its module-level symbols fit", setup.problem,
                                   why));
    for (SymbolSpec& sym : k->symbols) centre_on(sym, within.at(sym.name));
    k->reduced_sizes_ = fmt::format("judged at {}, not the problem's own {}: it {}", bindings_string(within),
                                    bindings_string(own), why);
  }
  k->args_ = d["args"];
  k->fresh_model_ = d.value("fresh_model", false);
  k->accumulate = DType::f32;
  k->c = 1;
  const std::string calibrated = fmt::format(
      "allowed_i = {}*max(max_j |r32_j - r_j|, u*max_j |r_j|) + 2u*|r_i| with r32 the problem's Model in fp32 eager "
      "on the same inputs and weights", kKernelBenchK);
  k->c_reasoning =
      k->server_->bound_mode == "derived"
          ? "derived: allowed_i = u*E_i + u*|r_i|, E the error an fp32 evaluation of the Model's ops in any "
            "legitimate order can make, propagated op by op through the float64 Model (a rule per aten op); "
            "elements an op without a rule made or fed are judged by the calibrated floor, " + calibrated +
                ", taken where larger (docs/kernelbench.md; KCV_TORCH_BOUND=calibrated for the calibrated bound alone)"
          : "calibrated (KCV_TORCH_BOUND=calibrated), not derived: " + calibrated + " (docs/kernelbench.md)";
  k->classes_in_two_orders = true;
  k->reference_may_reject = true;
  k->sanitizer_elements = kSanitizerElements;
  k->sweep_elements = kSweepElements;
  if (!setup.reference_cache.empty()) {
    // NOTES: everything besides the case that an answer depends on: the problem's bytes and
    // init seed (its weights), the code that computes the answer (kcv's version, the adapters'
    // hash), where it runs (backend, torch, CUDA, GPU) and the bound's mode. A problem that
    // imports modules beside it is keyed by problem.py alone (docs/kernelbench.md).
    const json context = {{"problem_sha256", sha256_file(setup.problem)}, {"init_seed", setup.init_seed},
                          {"kcv_version", kcv_version()}, {"adapters", reference_adapters_hash(setup.settings)},
                          {"backend", setup.backend}, {"runtime", k->server_->runtime},
                          {"bound", k->server_->bound_mode}};
    k->disk_ = std::make_unique<ReferenceDiskCache>(setup.reference_cache, context,
                                                    setup.settings.reference_cache_entry_bytes,
                                                    setup.settings.reference_cache_dir_bytes);
  }
  return k;
}

const KernelBenchContract::Described& KernelBenchContract::describe(const Bindings& b) const {
  std::lock_guard<std::mutex> lock(server_->cache_mu);
  auto& cache = server_->described;
  const std::string key = key_of(b);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Described d;
  json r = server_->request({{"op", "describe"}, {"bindings", b}}, {}, nullptr);
  d.ok = r.value("ok", false);
  if (!d.ok) {
    d.error = r.value("error", std::string("?"));
    // NOTES: out of memory is the machine's state at that moment (other processes on the GPU), not
    // a size the Model rejects: cached as a rejection it silently took the size out of the shapes
    // gate's sweep, or, asked for a shape, became "internal error: ... rejects" (session 49, an H100
    // beside 5 other pairs: level2/68 and level3/2 at their own sizes). A setup error, not cached:
    // a corpus run reruns the pair beside fewer (mentions_out_of_memory).
    if (mentions_out_of_memory(d.error))
      throw SetupError(fmt::format("{}: the reference ran out of memory at {} (the machine's memory at the "
                                   "time, not a size the Model rejects): {}",
                                   name, bindings_string(b), d.error));
  } else {
    for (const auto& in : r["description"]["inputs"]) d.in_shapes.push_back(in["shape"].get<Shape>());
    for (const auto& out : r["description"]["outputs"]) d.out_shapes.push_back(out["shape"].get<Shape>());
    if (d.in_shapes.size() != inputs.size() || d.out_shapes.size() != outputs.size()) {
      d.ok = false;
      d.error = "the number of inputs or outputs changes with the sizes";
    }
  }
  return cache.emplace(key, std::move(d)).first->second;
}

bool KernelBenchContract::valid(const Bindings& b) const { return describe(b).ok; }

int64_t KernelBenchContract::elements_at(const Bindings& b) const {
  const Described& d = describe(b);
  int64_t n = 0;
  for (const auto* shapes : {&d.in_shapes, &d.out_shapes})
    for (const Shape& s : *shapes) n += numel(s);
  return n;
}

Bindings KernelBenchContract::structural_shape() const { return shape_within(kStructuralElements); }

Bindings KernelBenchContract::shape_within(int64_t max_elements) const {
  const Bindings nominal_b = nominal();
  if (symbols.empty() || elements_at(nominal_b) <= max_elements) return nominal_b;
  for (int64_t cap = int64_t{1} << 14; cap >= 1; cap /= 2) {
    Bindings b = nominal_b;
    for (auto& [name, v] : b) v = std::min(v, cap);
    if (b != nominal_b && valid(b) && elements_at(b) <= max_elements) return b;
  }
  // NOTES: sizes tied to each other or to a constant defeat the uniform clip: KernelBench's
  // ShuffleNetUnit needs channels divisible by 3 (no power of two is), and a LayerNorm whose
  // normalized shape is a module-level tuple fixes the width it normalizes. Then one symbol at a
  // time is halved, the largest the Model accepts halved, until the call fits. Each step lowers
  // the sum of the sizes, so this ends.
  Bindings b = nominal_b;
  while (elements_at(b) > max_elements) {
    std::vector<std::string> largest_first;
    for (const SymbolSpec& sym : symbols) largest_first.push_back(sym.name);
    std::stable_sort(largest_first.begin(), largest_first.end(),
                     [&](const std::string& x, const std::string& y) { return b.at(x) > b.at(y); });
    bool halved = false;
    for (const std::string& name : largest_first) {
      if (b.at(name) < 2) continue;
      Bindings t = b;
      t[name] = b.at(name) / 2;
      if (valid(t)) {
        b = std::move(t);
        halved = true;
        break;
      }
    }
    if (!halved) return nominal_b;
  }
  return b;
}

std::string KernelBenchContract::rejection(const Bindings& b) const { return describe(b).error; }

Shape KernelBenchContract::input_shape(std::size_t i, const Bindings& b) const {
  const Described& d = describe(b);
  if (!d.ok) throw std::invalid_argument(fmt::format("kcv: {} rejects {}: {}", name, bindings_string(b), d.error));
  return d.in_shapes.at(i);
}

Shape KernelBenchContract::output_shape(std::size_t i, const Bindings& b) const {
  const Described& d = describe(b);
  if (!d.ok) throw std::invalid_argument(fmt::format("kcv: {} rejects {}: {}", name, bindings_string(b), d.error));
  return d.out_shapes.at(i);
}

std::vector<HostTensor> KernelBenchContract::problem_inputs(const Bindings& b, uint64_t seed) const {
  std::vector<std::string> blobs;
  // NOTES: torch.manual_seed takes < 2^63; the low 62 bits keep every case distinct enough.
  json r = server_->request({{"op", "inputs"}, {"bindings", b}, {"seed", seed & ((uint64_t{1} << 62) - 1)}}, {}, &blobs);
  if (!r.value("ok", false))
    throw SetupError(fmt::format("{}: get_inputs() failed at {}: {}", name, bindings_string(b),
                                 r.value("error", std::string("?"))));
  if (blobs.size() != inputs.size()) throw std::runtime_error("kcv: get_inputs() returned another number of tensors");
  std::vector<HostTensor> out;
  for (std::size_t i = 0; i < blobs.size(); ++i) {
    HostTensor t = HostTensor::zeros(inputs[i].dtype, input_shape(i, b));
    if (blobs[i].size() != t.span_bytes()) throw std::runtime_error("kcv: get_inputs() tensor of unexpected size");
    std::memcpy(t.storage.data(), blobs[i].data(), blobs[i].size());
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<HostTensor> KernelBenchContract::make_inputs(const Bindings& shape, Rng& rng, const std::string& kind) const {
  std::vector<HostTensor> in = problem_inputs(shape, rng());
  apply_value_kind(in, kind, rng);
  keep_structure(in);  // all equal, alternating signs: back to the triangle get_inputs() promises
  return in;
}

std::vector<RefTensor> KernelBenchContract::reference(const std::vector<HostTensor>& in, const std::vector<double>&,
                                                      const Bindings& shape, SumOrder order) const {
  const ReferenceClock clock;   // the reference's share of the judgement (part_clock.hpp)
  // One round trip answers both orders (float64 and float32 eager): the last answer is kept (a
  // session keeps more: keep_references).
  std::string key = key_of(shape);
  for (const auto& t : in) key += '|' + fingerprint(t);
  Server::Answer answer;
  {
    std::lock_guard<std::mutex> lock(server_->cache_mu);
    answer = server_->find_reference(key);
  }
  const bool fresh = !answer;
  json reply;
  if (!answer) answer = std::make_shared<const std::vector<std::string>>(cached_model("reference", "the reference", in, shape, &reply));
  const std::vector<std::string>& blobs = *answer;
  // Per output: r64, r32 (float64 blobs), and with the derived bound E, W (float64, units of u) and
  // S (uint8: 0 derived, 1 calibrated, 2 free in class); adapters/torch/kcv_torch_bound.py.
  const std::size_t per = blobs.size() == 5 * outputs.size() ? 5 : 2;
  if (blobs.size() != per * outputs.size()) throw std::runtime_error("kcv: the reference returned another number of outputs");
  if (fresh) {
    // NOTES: kept before its arrays are derived, so that the answer it replaces (the last one,
    // past a session's budget) is freed first: the old answer (33 bytes an element), this one and
    // its arrays (41) were all held at once, the peak of kcv's heap, and every byte of that peak
    // is a page the kernel zeroes once (page faults were a fifth of kcv's CPU on a 4096 x 4096
    // rowsum; bench/results/kernelbench-host-time.md, session 31).
    std::lock_guard<std::mutex> lock(server_->cache_mu);
    server_->keep_reference(key, answer);
  }
  // The largest finite input magnitude: needed only for an all-zero output, so found on demand.
  const std::function<double()> largest_input = [&in] {
    double x_max = 0;
    for (const auto& t : in)
      if (is_floating(t.dtype))
        for (double x : t.values())
          if (std::isfinite(x)) x_max = std::max(x_max, std::abs(x));
    return x_max;
  };
  std::vector<RefTensor> refs;
  std::vector<BoundCounts> counts(outputs.size());
  // Read in place: a large problem's blobs are the biggest thing the host holds.
  for (std::size_t o = 0; o < outputs.size(); ++o)
    refs.push_back(derive_reference_output(&blobs[per * o], per == 5, order, largest_input, counts[o]));
  if (fresh && per == 5) {
    std::lock_guard<std::mutex> lock(server_->cache_mu);
    Server::Tally& tally = server_->tally;
    ++tally.answers;
    for (auto* v : {&tally.derived, &tally.calibrated, &tally.free, &tally.eager_over}) v->resize(outputs.size(), 0);
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      tally.derived[o] += counts[o].derived;
      tally.calibrated[o] += counts[o].calibrated;
      tally.free[o] += counts[o].free;
      tally.eager_over[o] += counts[o].eager_over;
    }
    const json& bound = reply.contains("bound") ? reply["bound"] : json::object();
    if (bound.contains("unruled") && bound["unruled"].is_array())
      for (const auto& op : bound["unruled"])
        if (op.is_string() && tally.unruled.size() < 64) tally.unruled.insert(clean_text(op.get<std::string>()));
  }
  return refs;
}

KernelBenchBound KernelBenchContract::bound_summary() const {
  std::lock_guard<std::mutex> lock(server_->cache_mu);
  const Server::Tally& t = server_->tally;
  KernelBenchBound out;
  out.mode = server_->bound_mode;
  if (server_->bound_mode != "derived") {
    out.detail = "calibrated on fp32 eager's error for every element (KCV_TORCH_BOUND=calibrated)";
    return out;
  }
  out.references = t.answers;
  for (std::size_t o = 0; o < t.derived.size() && o < outputs.size(); ++o) {
    KernelBenchBoundOutput b;
    b.output = outputs[o].name;
    b.judged_by = t.calibrated[o] == 0 && t.free[o] == 0 ? "derived"
                  : t.derived[o] == 0 && t.free[o] == 0  ? "calibrated"
                                                         : "mixed";
    b.elements = t.derived[o] + t.calibrated[o] + t.free[o];
    b.derived = t.derived[o];
    b.calibrated = t.calibrated[o];
    b.free = t.free[o];
    b.eager_over = t.eager_over[o];
    out.outputs.push_back(b);
  }
  out.unruled.assign(t.unruled.begin(), t.unruled.end());
  return out;
}

std::vector<std::string> KernelBenchContract::run_model(const char* op, const char* what,
                                                       const std::vector<HostTensor>& in, const Bindings& shape,
                                                       json* reply) const {
  std::vector<std::string> blobs_out, got;
  for (const auto& t : in) blobs_out.push_back(contiguous_bytes(t));
  json r = server_->request({{"op", op}, {"bindings", shape}}, blobs_out, &got);
  if (reply) *reply = r;
  // NOTES: the problem's own code failed. Out of memory is the machine's: a setup error of this
  // verification. Anything else is the Model rejecting these inputs: the gates do not judge the
  // case (judge_call).
  if (!r.value("ok", false)) {
    const std::string error = r.value("error", std::string("?"));
    const std::string text = fmt::format("{}: {} failed at {}: {}", name, what, bindings_string(shape), error);
    if (mentions_out_of_memory(error)) throw SetupError(text);
    throw ReferenceRejects(text);
  }
  return got;
}

std::vector<std::string> KernelBenchContract::cached_model(const char* op, const char* what,
                                                          const std::vector<HostTensor>& in, const Bindings& shape,
                                                          json* reply) const {
  if (!disk_) return run_model(op, what, in, shape, reply);
  // NOTES: an answer holds 33 bytes per output element (r64, r32, E, W: float64; S: one byte), 8
  // for eager: a 2^26-element output is 2.2 GB a case. Past the entry cap, neither hashed nor
  // kept: its disk and hashing would cost more than the Model (KCV_REFERENCE_CACHE_ENTRY_BYTES).
  int64_t answer_bytes = 0;
  for (std::size_t o = 0; o < outputs.size(); ++o)
    answer_bytes += numel(output_shape(o, shape)) * (std::string_view(op) == "eager" ? 8 : 33);
  if (answer_bytes > disk_->entry_cap()) {
    disk_->count_too_large();
    return run_model(op, what, in, shape, reply);
  }
  std::vector<std::string> contiguous;
  for (const auto& t : in) contiguous.push_back(contiguous_bytes(t));
  const std::string key = disk_->key(op, shape, contiguous, in);
  contiguous.clear();
  if (auto e = disk_->load(key)) {
    if (reply) *reply = {{"ok", true}, {"bound", e->extra.value("bound", json::object())}};
    return std::move(e->blobs);
  }
  json r;
  std::vector<std::string> blobs = run_model(op, what, in, shape, &r);
  // Only what reference() reads of the reply: the derived bound's ops without a rule.
  json extra = json::object();
  if (r.contains("bound") && r["bound"].is_object() && r["bound"].contains("unruled"))
    extra["bound"] = {{"unruled", r["bound"]["unruled"]}};
  disk_->store(key, blobs, extra);
  if (reply) *reply = std::move(r);
  return blobs;
}

json KernelBenchContract::disk_cache_summary() const { return disk_ ? disk_->summary() : json(nullptr); }

std::vector<std::string> KernelBenchContract::eager(const std::vector<HostTensor>& in, const Bindings& shape) const {
  std::vector<std::string> blobs = cached_model("eager", "the float32 Model", in, shape);
  if (blobs.size() != outputs.size()) throw std::runtime_error("kcv: the reference returned another number of outputs");
  return blobs;
}

void KernelBenchContract::keep_references(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(server_->cache_mu);
  server_->reference_cache_bytes = bytes;
}

KernelBenchContract::ReferenceCacheStats KernelBenchContract::reference_cache() const {
  std::lock_guard<std::mutex> lock(server_->cache_mu);
  return {server_->reference_hits, server_->reference_misses, server_->reference_bytes};
}

json KernelBenchContract::worker_plan() const {
  json plan = {{"problem", setup_.problem}, {"init_seed", setup_.init_seed}, {"args", args_}, {"fresh_model", fresh_model_}};
  if (!pch_.empty()) plan["pch"] = pch_;
  return plan;
}

KernelBenchBaseline kernelbench_baseline(const KernelBenchContract& k, Runner& runner) {
  // NOTES: as KernelBench applies it: the fixed (nominal) shape, 5 trials, float32 Model as the
  // reference, torch.allclose(atol=rtol=1e-2): NaN is never close, equal infinities are.
  KernelBenchBaseline out;
  const int kTrials = out.trials;
  const double kAtol = out.atol, kRtol = out.rtol;
  const Bindings nominal = k.nominal();
  auto trial = [&](int t) {
    CallSpec call;
    call.inputs = k.problem_inputs(nominal, static_cast<uint64_t>(t));
    call.outputs = k.make_outputs(nominal);
    for (auto& o : call.outputs) gates::fill_bytes(o, gates::kPoisonNaN);
    return call;
  };
  auto case_of = [&](int t) {
    Case c;
    c.label = "kernelbench baseline";
    c.shape = nominal;
    c.calls.push_back(trial(t));
    return c;
  };
  double max_diff = 0;
  int t = 0;  // the next trial to judge
  // Runs c and judges its calls as trials t, t+1, ...; false once the baseline has failed.
  auto passes = [&](const Case& c) {
    const std::vector<CaseRun> runs = runner.run({c});
    if (runs.empty() || runs[0].status != RunStatus::ok) {
      out.verdict = "fail";
      out.detail = runs.empty() ? "did not run" : fmt::format("trial {}: the candidate crashed or hung: {}", t, runs[0].detail);
      return false;
    }
    for (std::size_t call = 0; call < c.calls.size(); ++call, ++t) {
      const CallResult& r = runs[0].calls[call];
      if (r.rc != 0) {
        out.verdict = "fail";
        out.detail = fmt::format("trial {}: raised: {}", t, r.message);
        return false;
      }
      const auto ref = k.eager(c.calls[call].inputs, nominal);
      for (std::size_t o = 0; o < ref.size(); ++o) {
        const std::vector<double> got = r.outputs[o].values();
        if (got.size() != ref[o].size() / sizeof(double))
          throw std::runtime_error("kcv: the float32 Model's output has another size");
        for (std::size_t i = 0; i < got.size(); ++i) {
          const double g = got[i], e = double_at(ref[o], i);
          const bool close = (std::isinf(g) || std::isinf(e)) ? g == e
                             : std::isnan(g) || std::isnan(e) ? false
                             : std::abs(g - e) <= kAtol + kRtol * std::abs(e);
          if (std::isfinite(g) && std::isfinite(e)) max_diff = std::max(max_diff, std::abs(g - e));
          if (!close) {
            out.verdict = "fail";
            out.max_abs_diff = max_diff;
            out.detail = fmt::format("trial {}: output {} element {}: got {:.9g}, Model gives {:.9g}", t, o, i, g, e);
            return false;
          }
        }
      }
    }
    return true;
  };
  // NOTES: the trials are the calls of one case, as KernelBench runs them in one process with
  // earlier inputs still alive (every trial at its own addresses). A large problem's trials
  // would then all be on the host at once: past kBatchBytes of staging, each trial is a case of
  // its own, freed before the next is made.
  Case first = case_of(0);
  if (kTrials * staged_bytes(first) <= kBatchBytes)
    for (int more = 1; more < kTrials; ++more) first.calls.push_back(trial(more));
  if (!passes(first)) return out;
  first = Case{};
  while (t < kTrials)  // the trials that did not fit beside the first
    if (!passes(case_of(t))) return out;
  out.verdict = "pass";
  out.max_abs_diff = max_diff;
  return out;
}

}  // namespace kcv
