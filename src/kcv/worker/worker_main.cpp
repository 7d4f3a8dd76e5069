// kcv-worker: runs one plan of candidate calls in an isolated process (docs/architecture.md).
// Holds no reference code: nothing in this process knows the expected outputs.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/abi.h"
#include "kcv/backends/backend.hpp"
#include "kcv/protocol.hpp"

namespace {

using nlohmann::json;
namespace proto = kcv::protocol;

void emit(const std::string& line) {
  std::string s = line + "\n";
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    ssize_t n = write(proto::kResultFd, p, left);
    if (n <= 0) _exit(3);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

/// After a `done`: waits until kcv has looked at what the call left behind (protocol::kGo).
void await_go() {
  char b = 0;
  for (;;) {
    const ssize_t n = read(proto::kResultFd, &b, 1);
    if (n == 1) return;
    if (n < 0 && errno == EINTR) continue;
    _exit(3);  // kcv is gone
  }
}

[[noreturn]] void fatal(const std::string& why) {
  emit("fatal " + proto::hex_encode(why));
  _exit(2);
}

int64_t element_size(int32_t dtype) {
  switch (dtype) {
    case KCV_F64: case KCV_I64: return 8;
    case KCV_F32: case KCV_I32: return 4;
    case KCV_F16: case KCV_BF16: return 2;
    case KCV_U8: return 1;
    default: return 0;
  }
}

// ---- fault attribution: which buffer a SIGSEGV/SIGBUS address belongs to (cpu) ----
struct Region {
  uintptr_t lo, hi, data;   // whole mapping, and the first data byte
  int call, arg, is_input;
  int guard_page;           // the mapping's last page is inaccessible (after an input, a fenced output)
};
constexpr int kMaxRegions = 8192;
Region g_regions[kMaxRegions];
std::atomic<int> g_nregions{0};

void remember(const kcv::DeviceBuffer& b, int call, int arg, bool is_input) {
  const int n = g_nregions.load();
  if (n >= kMaxRegions || b.reserved == 0) return;
  g_regions[n] = {reinterpret_cast<uintptr_t>(b.base), reinterpret_cast<uintptr_t>(b.base) + b.reserved,
                  reinterpret_cast<uintptr_t>(b.data), call, arg, is_input ? 1 : 0, b.guard_page ? 1 : 0};
  g_nregions.store(n + 1);
}

/// Appends the decimal of v to buf at i (async-signal-safe).
int put_int(char* buf, int i, long long v) {
  char tmp[24];
  int n = 0;
  bool neg = v < 0;
  unsigned long long u = neg ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  do { tmp[n++] = static_cast<char>('0' + u % 10); u /= 10; } while (u);
  if (neg) buf[i++] = '-';
  while (n) buf[i++] = tmp[--n];
  return i;
}

void on_fault(int sig, siginfo_t* info, void*) {
  // "fault <in|out> <call> <arg> <byte offset from the data start>" or "fault unknown", then die
  // of the same signal so the exit status stays honest.
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  char buf[160];
  int i = 0;
  for (const char* p = "fault "; *p; ++p) buf[i++] = *p;
  const int n = g_nregions.load();
  int found = -1;
  for (int r = n - 1; r >= 0; --r)
    if (addr >= g_regions[r].lo && addr < g_regions[r].hi) { found = r; break; }
  if (found < 0) {
    for (const char* p = "unknown"; *p; ++p) buf[i++] = *p;
  } else {
    const Region& g = g_regions[found];
    for (const char* p = g.is_input ? "in " : "out "; *p; ++p) buf[i++] = *p;
    i = put_int(buf, i, g.call); buf[i++] = ' ';
    i = put_int(buf, i, g.arg); buf[i++] = ' ';
    i = put_int(buf, i, static_cast<long long>(addr) - static_cast<long long>(g.data));
  }
  buf[i++] = '\n';
  ssize_t ignored = write(kcv::protocol::kResultFd, buf, static_cast<std::size_t>(i));
  (void)ignored;
  (void)sig;  // SA_RESETHAND: the handler is gone, and returning re-executes the access and dies of it
}

void install_fault_handler() {
  static char altstack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
}

// ---- what a call must leave as it found it (issue 25 class 4) ----
constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS};

/// From here on no one in this process may install a handler for SIGSEGV or SIGBUS (EPERM): a
/// candidate's own would swallow its over-reads into the PROT_NONE page after an input. A seccomp
/// filter of the worker's own, stacked on the sandbox's (no_new_privs is set there; set here too
/// for --no-sandbox). Querying a disposition stays allowed. False when it could not be installed.
bool lock_fault_signals() {
#if defined(__x86_64__)
  constexpr uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t arch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),  // another ABI: the sandbox's filter kills it
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigaction, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),  // the signal (low word)
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGSEGV, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIGBUS, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])),  // act, low word
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1]) + 4),  // act, high word
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
#endif
}

/// The dispositions of the fault signals as the worker set them, to compare after each call.
struct Dispositions {
  struct sigaction sa[2];
};
Dispositions g_dispositions;

void remember_dispositions() {
  for (int k = 0; k < 2; ++k) sigaction(kFaultSignals[k], nullptr, &g_dispositions.sa[k]);
}

/// What a call changed that it must not have: a fault signal's handler, or the PROT_NONE page
/// after one of its inputs made accessible (a candidate hiding its over-reads). Empty: nothing.
std::string call_tampering(int call, int probe_w, int probe_r) {
  std::string what;
  // NOTES: cpu only (probe_w open): there the worker set the handlers itself; on cuda the driver
  // and compute-sanitizer's injection own theirs.
  for (int k = 0; k < 2 && probe_w >= 0; ++k) {
    struct sigaction now{};
    sigaction(kFaultSignals[k], nullptr, &now);
    const auto& was = g_dispositions.sa[k];
    if (now.sa_sigaction != was.sa_sigaction || now.sa_flags != was.sa_flags)
      what += std::string(what.empty() ? "" : "; ") + "the candidate replaced the handler of " +
              (kFaultSignals[k] == SIGSEGV ? "SIGSEGV" : "SIGBUS") + " (it would swallow an out-of-bounds access)";
  }
  if (probe_w >= 0) {
    const long page = sysconf(_SC_PAGESIZE);
    const int n = g_nregions.load();
    for (int r = 0; r < n; ++r) {
      const Region& g = g_regions[r];
      if (g.call != call || !g.guard_page) continue;
      // NOTES: write() from an inaccessible page fails with EFAULT and raises no signal.
      const void* page_after = reinterpret_cast<const void*>(g.hi - static_cast<uintptr_t>(page));
      if (write(probe_w, page_after, 1) == 1) {
        char b;
        ssize_t ignored = read(probe_r, &b, 1);
        (void)ignored;
        what += std::string(what.empty() ? "" : "; ") + "the candidate made the PROT_NONE page after " +
                (g.is_input ? "input " : "output ") + std::to_string(g.arg) + " accessible (it would hide an " +
                (g.is_input ? "over-read)" : "over-write)");
        break;
      }
    }
  }
  return what;
}

/// A plan's placement offsets and tails are below this (cpu's within a page, cuda's within 64 KiB).
constexpr int64_t kMaxPlacedBytes = int64_t(1) << 20;

struct Arg {
  int64_t span, src, snap, offset;
  int64_t recheck = -1;     // outputs: where their second snapshot goes (end of the case), or none
  int64_t at = -1;          // where the buffer's first byte goes (BufferPlacement::offset), or kcv's fixed placement
  int64_t tail = 0;         // cuda: the allocation's bytes past the trailing guard band
  kcv_tensor t{};
  bool generated = false;   // large tier: values from protocol::large_tier_value(gen_seed, i)
  uint64_t gen_seed = 0;
  int fill = -1;            // large tier: the span set to this byte
  bool sampled = false;     // large tier: only the guards and these elements come back
  std::vector<int64_t> sample;
};

struct Call {
  int case_id = 0;
  int reuse = -1;
  bool concurrent_with_next = false;
  bool writer_kernel = false;
  bool background_load = false;
  bool null_stream = false;     // the candidate gets the null stream handle (cuda)
  bool exact = false;           // every buffer allocated at exactly its span
  bool fence = false;           // cpu: every output ends against a PROT_NONE page
  int64_t calls_before = 0;     // unjudged calls made right before this one (a long run)
  int64_t recheck_delay_us = 0; // before its outputs are snapshotted again at the end of its case
  bool finished = false;
  std::vector<Arg> inputs, outputs;
  std::vector<double> scalars;
  std::vector<kcv::DeviceBuffer> in_buf, out_buf;
  std::vector<kcv_tensor> in_t, out_t;
  char error[1024];
  kcv_call call{};
  int rc = 0;
  double seconds = 0;
};

Arg parse_arg(const json& j) {
  Arg a;
  a.t.dtype = j.at("dtype").get<int32_t>();
  const auto shape = j.at("shape").get<std::vector<int64_t>>();
  const auto stride = j.at("stride").get<std::vector<int64_t>>();
  if (shape.size() > 8 || stride.size() != shape.size() || element_size(a.t.dtype) == 0) fatal("bad tensor in plan");
  a.t.ndim = static_cast<int32_t>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) { a.t.shape[d] = shape[d]; a.t.stride[d] = stride[d]; }
  a.span = j.at("span").get<int64_t>();
  a.src = j.at("src").get<int64_t>();
  a.snap = j.at("snap").get<int64_t>();
  a.offset = j.at("offset").get<int64_t>();
  if (j.contains("gen")) { a.generated = true; a.gen_seed = j["gen"].get<uint64_t>(); }
  if (j.contains("fill")) a.fill = j["fill"].get<int>();
  if (j.contains("sample")) { a.sampled = true; a.sample = j["sample"].get<std::vector<int64_t>>(); }
  a.recheck = j.value("recheck", int64_t(-1));
  a.at = j.value("at", int64_t(-1));
  a.tail = j.value("tail", int64_t(0));
  if (a.at < -1 || a.at > kMaxPlacedBytes || a.tail < 0 || a.tail > kMaxPlacedBytes) fatal("bad placement in plan");
  return a;
}

/// What the candidate's dynamic symbol table says, read from the file without loading it.
struct Exports {
  bool readable = false;  // an ELF64 file whose tables could be read
  bool has_run = false;
  std::optional<int32_t> abi;
};

Exports read_exports(const std::string& path) {
  Exports out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st{};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) { close(fd); return out; }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return out;
  const auto* base = static_cast<const unsigned char*>(map);
  auto inside = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shentsize == sizeof(Elf64_Shdr) && inside(eh->e_shoff, uint64_t(eh->e_shnum) * sizeof(Elf64_Shdr))) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym)) continue;
      const Elf64_Shdr& strs = sh[sh[i].sh_link];
      if (!inside(sh[i].sh_offset, sh[i].sh_size) || !inside(strs.sh_offset, strs.sh_size)) continue;
      out.readable = true;
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      for (uint64_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
        const Elf64_Sym& s = syms[k];
        if (s.st_shndx == SHN_UNDEF || s.st_name >= strs.sh_size) continue;
        const char* name = reinterpret_cast<const char*>(base + strs.sh_offset + s.st_name);
        const std::size_t room = strs.sh_size - s.st_name;
        if (strnlen(name, room) == room) continue;
        if (std::strcmp(name, "kcv_run") == 0) out.has_run = true;
        if (std::strcmp(name, "kcv_abi_version") == 0 && s.st_shndx < eh->e_shnum) {
          const Elf64_Shdr& sec = sh[s.st_shndx];
          int32_t v = 0;
          if (sec.sh_type != SHT_NOBITS && s.st_value >= sec.sh_addr && inside(sec.sh_offset + (s.st_value - sec.sh_addr), 4))
            std::memcpy(&v, base + sec.sh_offset + (s.st_value - sec.sh_addr), 4);
          out.abi = v;
        }
      }
    }
  }
  munmap(map, size);
  return out;
}

}  // namespace

int main() {
  // ---- the plan and the staging area ----
  struct stat st{};
  if (fstat(proto::kDataFd, &st) != 0) fatal("no data fd");
  const std::size_t total = static_cast<std::size_t>(st.st_size);
  auto* shm = static_cast<char*>(mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, proto::kDataFd, 0));
  if (shm == MAP_FAILED) fatal("cannot map the data fd");
  uint64_t plan_at = 0, plan_len = 0;
  std::memcpy(&plan_at, shm, sizeof plan_at);
  std::memcpy(&plan_len, shm + 8, sizeof plan_len);
  if (plan_at + plan_len > total) fatal("plan exceeds data area");
  json plan = json::parse(std::string(shm + plan_at, plan_len), nullptr, false);
  if (plan.is_discarded()) fatal("plan is not JSON");

  const std::string backend_name = plan.at("backend").get<std::string>();
  const uint64_t key = plan.at("canary_key").get<uint64_t>();
  std::vector<Call> calls(plan.at("calls").size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const json& c = plan["calls"][i];
    calls[i].case_id = c.at("case").get<int>();
    calls[i].reuse = c.at("reuse").get<int>();
    calls[i].concurrent_with_next = c.at("concurrent_with_next").get<bool>();
    calls[i].writer_kernel = c.value("writer_kernel", false);
    calls[i].background_load = c.value("background_load", false);
    calls[i].null_stream = c.value("null_stream", false);
    calls[i].exact = c.value("exact", false);
    calls[i].fence = c.value("fence", false);
    calls[i].calls_before = c.value("calls_before", int64_t{0});
    calls[i].recheck_delay_us = std::min<int64_t>(c.value("recheck_delay_us", int64_t{0}), 1000000);
    if (calls[i].calls_before < 0) fatal("bad calls_before in plan");
    calls[i].scalars = c.at("scalars").get<std::vector<double>>();
    for (const auto& t : c.at("inputs")) calls[i].inputs.push_back(parse_arg(t));
    for (const auto& t : c.at("outputs")) calls[i].outputs.push_back(parse_arg(t));
  }

  std::unique_ptr<kcv::WorkerBackend> backend;
  try {
    backend = kcv::make_worker_backend(backend_name);
  } catch (const std::exception& e) {
    fatal(e.what());
  }
  if (!backend) fatal("backend '" + backend_name + "' is not built into this worker");

  const bool on_host = backend->runs_on_host();
  if (on_host) install_fault_handler();
  remember_dispositions();
  const bool lock_signals = plan.value("lock_fault_signals", false);
  if (lock_signals && !lock_fault_signals()) fatal("cannot lock the fault signals' handlers (seccomp)");
  int probe[2] = {-1, -1};
  if (on_host && pipe2(probe, O_CLOEXEC | O_NONBLOCK) != 0) probe[0] = probe[1] = -1;

  // ---- the candidate ----
  const std::string path = plan.at("candidate").get<std::string>();
  if (path.empty()) {  // a backend probe: the device works, nothing to load
    emit("ready");
    emit("bye");
    _exit(0);
  }
  // NOTES: checked from the file before dlopen runs any of the candidate's code (its
  // constructors): after `loading`, a fatal record could be the candidate's own, and kcv does not
  // take it for a setup error (runner.cpp).
  if (const Exports ex = read_exports(path); ex.readable) {
    if (!ex.has_run) fatal("candidate does not export kcv_run");
    if (ex.abi && *ex.abi != KCV_ABI_VERSION)
      fatal("candidate was built for ABI version " + std::to_string(*ex.abi) + ", kcv speaks " + std::to_string(KCV_ABI_VERSION));
  }
  emit("loading");
  void* so = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so) fatal(std::string("cannot load candidate: ") + dlerror());
  auto run = reinterpret_cast<kcv::kcv_run_fn>(dlsym(so, "kcv_run"));
  if (!run) fatal("candidate does not export kcv_run");
  if (auto* v = static_cast<const int32_t*>(dlsym(so, "kcv_abi_version")); v && *v != KCV_ABI_VERSION)
    fatal("candidate was built for ABI version " + std::to_string(*v) + ", kcv speaks " + std::to_string(KCV_ABI_VERSION));
  emit("ready");

  // ---- the calls ----
  int live_case = -1;
  std::vector<kcv::DeviceBuffer> live;  // buffers of the current case, released when it ends
  // NOTES: at the end of a case (its buffers still live), after the plan's delay, the outputs of
  // its calls that asked for it are snapshotted again: an output that changes after its call
  // returned (a thread or a stream the candidate left writing, a write that waits to see the
  // buffer left alone) differs from the first snapshot, and the parent compares the two.
  auto recheck_case = [&](int case_id) {
    int64_t delay = 0;
    bool any = false;
    for (const Call& c : calls)
      if (c.case_id == case_id && c.finished)
        for (const Arg& a : c.outputs)
          if (a.recheck >= 0) { any = true; delay = std::max(delay, c.recheck_delay_us); }
    if (!any) return;
    if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const Call& c = calls[i];
      if (c.case_id != case_id || !c.finished) continue;
      bool did = false;
      for (std::size_t a = 0; a < c.outputs.size(); ++a)
        if (c.outputs[a].recheck >= 0) { backend->snapshot(c.out_buf[a], shm + c.outputs[a].recheck); did = true; }
      if (did) emit("recheck " + std::to_string(i));
    }
  };
  auto prepare = [&](std::size_t i) {
    Call& c = calls[i];
    if (c.case_id != live_case) {
      if (live_case >= 0) recheck_case(live_case);
      for (auto& b : live) backend->release(b);
      live.clear();
      g_nregions.store(0);
      live_case = c.case_id;
    }
    auto bind = [&](std::vector<Arg>& args, std::vector<kcv::DeviceBuffer>& bufs, std::vector<kcv_tensor>& ts,
                    bool is_input, const std::vector<kcv::DeviceBuffer>* reuse) {
      bufs.clear(); ts.clear();
      for (std::size_t a = 0; a < args.size(); ++a) {
        const kcv::BufferPlacement where{c.exact, args[a].at, c.fence && !is_input, args[a].tail};
        kcv::DeviceBuffer b = reuse ? (*reuse)[a] : backend->allocate(args[a].span, is_input, where);
        if (!reuse) live.push_back(b);
        remember(b, static_cast<int>(i), static_cast<int>(a), is_input);
        if (args[a].generated) backend->generate(b, args[a].gen_seed, key);
        else if (args[a].fill >= 0) backend->fill(b, static_cast<unsigned char>(args[a].fill), key);
        else if (is_input && c.writer_kernel) backend->upload_through_stream(b, shm + args[a].src, key);
        else backend->upload(b, shm + args[a].src, key);
        bufs.push_back(b);
        kcv_tensor t = args[a].t;
        t.data = static_cast<char*>(b.data) + args[a].offset * element_size(t.dtype);
        ts.push_back(t);
      }
    };
    const Call* r = c.reuse >= 0 ? &calls[static_cast<std::size_t>(c.reuse)] : nullptr;
    backend->use_null_stream(c.null_stream);  // before the uploads: a writer kernel goes there too
    bind(c.inputs, c.in_buf, c.in_t, true, r ? &r->in_buf : nullptr);
    bind(c.outputs, c.out_buf, c.out_t, false, r ? &r->out_buf : nullptr);
    std::memset(c.error, 0, sizeof c.error);
    c.call = kcv_call{};
    c.call.abi_version = KCV_ABI_VERSION;
    c.call.n_inputs = static_cast<int32_t>(c.in_t.size());
    c.call.n_outputs = static_cast<int32_t>(c.out_t.size());
    c.call.n_scalars = static_cast<int32_t>(c.scalars.size());
    c.call.inputs = c.in_t.data();
    c.call.outputs = c.out_t.data();
    c.call.scalars = c.scalars.data();
    c.call.stream = backend->stream();
    c.call.error = c.error;
    c.call.error_len = static_cast<int32_t>(sizeof c.error - 1);
  };
  // The values of a call's buffers once more, as prepare uploaded them (after a long run's
  // unjudged calls: the judged call starts from its own inputs and poisoned outputs).
  auto upload_again = [&](Call& c) {
    auto again = [&](const std::vector<Arg>& args, std::vector<kcv::DeviceBuffer>& bufs) {
      for (std::size_t a = 0; a < args.size(); ++a) {
        if (args[a].generated) backend->generate(bufs[a], args[a].gen_seed, key);
        else if (args[a].fill >= 0) backend->fill(bufs[a], static_cast<unsigned char>(args[a].fill), key);
        else backend->upload(bufs[a], shm + args[a].src, key);
      }
    };
    again(c.inputs, c.in_buf);
    again(c.outputs, c.out_buf);
  };
  auto invoke = [&](Call& c) {
    if (c.calls_before > 0) {
      // NOTES: a long run, as a production caller makes it: call after call on one stream,
      // nothing synchronized in between; only the call after them comes back.
      for (int64_t k = 0; k < c.calls_before; ++k) (void)run(&c.call);
      backend->synchronize(false);
      if (std::string e = backend->device_error(); !e.empty()) {
        emit("fault device " + proto::hex_encode(e));
        _exit(1);
      }
      upload_again(c);
      std::memset(c.error, 0, sizeof c.error);
    }
    if (c.background_load) backend->start_background_load();
    const auto t0 = std::chrono::steady_clock::now();
    c.rc = run(&c.call);
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto finish = [&](std::size_t i) {
    Call& c = calls[i];
    if (std::string e = backend->device_error(); !e.empty()) {
      emit("fault device " + proto::hex_encode(e));
      _exit(1);
    }
    auto snap = [&](const Arg& arg, const kcv::DeviceBuffer& b) {
      if (!arg.sampled) return backend->snapshot(b, shm + arg.snap);
      const int64_t es = element_size(arg.t.dtype);
      std::vector<int64_t> offsets;
      for (int64_t i : arg.sample) offsets.push_back((arg.offset + i) * es);  // contiguous: logical = storage
      backend->snapshot_sampled(b, offsets, es, shm + arg.snap);
    };
    for (std::size_t a = 0; a < c.inputs.size(); ++a) snap(c.inputs[a], c.in_buf[a]);
    for (std::size_t a = 0; a < c.outputs.size(); ++a) snap(c.outputs[a], c.out_buf[a]);
    c.error[sizeof c.error - 1] = 0;
    if (const std::string t = call_tampering(static_cast<int>(i), probe[1], probe[0]); !t.empty())
      emit("tamper " + std::to_string(i) + " " + proto::hex_encode(t));
    c.finished = true;
    emit("done " + std::to_string(i) + " " + std::to_string(c.rc) + " " + std::to_string(c.seconds) + " " +
         proto::hex_encode(std::string(c.error, strnlen(c.error, sizeof c.error))));
    await_go();
  };

  try {
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].concurrent_with_next && i + 1 < calls.size()) {
      // Two calls at once on two host threads (cpu concurrency gate), released together.
      prepare(i);
      prepare(i + 1);
      emit("start " + std::to_string(i));
      emit("start " + std::to_string(i + 1));
      std::atomic<int> ready{0};
      auto body = [&](Call& c) {
        ready.fetch_add(1);
        while (ready.load() < 2) {}
        invoke(c);
      };
      std::thread other(body, std::ref(calls[i + 1]));
      body(calls[i]);
      other.join();
      backend->synchronize(false);
      finish(i);
      finish(i + 1);
      ++i;
      continue;
    }
    prepare(i);
    emit("start " + std::to_string(i));
    invoke(calls[i]);
    // NOTES: the concurrency gate's call is judged after syncing only the caller's stream, so
    // work that escaped to another stream shows as incomplete; elsewhere the whole device.
    backend->synchronize(calls[i].writer_kernel);
    finish(i);
  }
  } catch (const std::exception& e) {
    // A device call failed under us (usually a sticky error the candidate caused).
    emit("fault device " + proto::hex_encode(e.what()));
    _exit(1);
  }
  try {
    if (live_case >= 0) recheck_case(live_case);
  } catch (const std::exception& e) {
    emit("fault device " + proto::hex_encode(e.what()));
    _exit(1);
  }
  for (auto& b : live) backend->release(b);
  emit("bye");
  _exit(0);
}
