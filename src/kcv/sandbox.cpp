// The worker sandbox (docs/security.md). spawn() starts, in order of preference:
//   kcv ──clone(NEWPID|NEWNS|NEWIPC[|NEWUSER])──> init (pid 1: kcv's code, root, undumpable)
//        init: private mounts (/, /tmp, /var/tmp, /dev/shm, /proc) ──fork──> worker (pid 2)
//        worker: own process group, fds, rlimits, unprivileged uid, chdir, no_new_privs,
//                pdeathsig, seccomp ──exec──> kcv-worker / python / a sanitizer
// and where namespaces are refused, the worker alone (fork). What the kernel accepted comes back
// on a status pipe (fixed-size records, written before exec: the candidate never holds it), and
// in namespace mode init reports the worker's wait status there too.
// NOTES: the children run between clone/fork and exec in a copy of a possibly multithreaded kcv:
// nothing there allocates; every string and the seccomp program are made before. Nor does
// anything there take a lock of the C library: a lock another thread of kcv held when init was
// copied stays held in the copy forever. So init forks with the bare system call (the C
// library's fork takes stdio's and malloc's locks) and the uid change is the bare system call
// (the C library's signals every thread it believes exists, under a lock of its own).
#include "kcv/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <initializer_list>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "kcv/candidate.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kcv::sandbox {
namespace {

// The unprivileged identity a root kcv gives its workers (Debian's nobody/nogroup).
constexpr uid_t kWorkerUid = 65534;
constexpr gid_t kWorkerGid = 65534;
// Tasks per uid (RLIMIT_NPROC counts every process and thread of that uid on the host).
constexpr rlim_t kMaxTasks = 8192;
constexpr rlim_t kMaxFileBytes = rlim_t(1) << 30;
constexpr const char* kTmpDirs[] = {"/tmp", "/var/tmp", "/dev/shm"};

// ---- status records: child → kcv ----
enum Kind : int32_t { kInitReady = 1, kWorkerReady = 2, kAbort = 3, kExit = 4 };
enum Failed : uint32_t {
  kFailUserMap = 1u << 0, kFailPrivateRoot = 1u << 1, kFailTmp = 1u << 2, kFailProc = 1u << 3,
  kFailUid = 1u << 4, kFailNoNewPrivs = 1u << 5, kFailPdeathsig = 1u << 6, kFailSeccomp = 1u << 7,
  kFailRlimits = 1u << 8, kFailReadOnly = 1u << 9, kFailNet = 1u << 10,
};
enum Step : uint32_t { kStepLog = 1, kStepChdir = 2, kStepExec = 3, kStepFork = 4 };
struct Record {
  int32_t kind = 0;
  uint32_t bits = 0;  // kInitReady/kWorkerReady: Failed bits; kAbort: Step
  int32_t err = 0;
  int32_t status = 0; // kExit: the worker's wait status
};

// ---- the seccomp program (made in the parent, loaded by the child with one prctl) ----
struct Program {
  std::vector<sock_filter> code;
  std::string error;
};

Program build_filter(bool in_namespace) {
  Program out;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) { out.error = "seccomp_init failed"; return out; }
  auto rule = [&](uint32_t action, const char* name, std::vector<scmp_arg_cmp> args = {}) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // not on this architecture
    seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()), args.data());
  };
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  // NOTES: what a candidate needs none of and an attacker wants: debugging or reading other
  // processes, the kernel's keyrings and BPF, mounts and namespaces (nesting out of the sandbox),
  // modules, reboot, userfaultfd/io_uring (exploit primitives), handles that open any file.
  // Everything CUDA needs stays: ioctl and mmap on /dev/nvidia*, memfd, eventfd, shm, threads.
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
                           "kcmp", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
                           "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2",
                           "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount", "fsconfig", "fspick",
                           "move_mount", "open_tree", "mount_setattr", "open_by_handle_at", "kexec_load",
                           "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
                           "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm", "settimeofday",
                           "clock_settime", "adjtimex", "clock_adjtime", "vhangup", "lookup_dcookie"})
    rule(eperm, name);
  // clone3 hides its flags in memory: ENOSYS makes the C library fall back to clone, whose
  // flags the filter sees. No new namespaces from inside.
  rule(SCMP_ACT_ERRNO(ENOSYS), "clone3");
  for (uint64_t flag : std::initializer_list<uint64_t>{CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                                      CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP})
    rule(eperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)});
  // Typing into kcv's terminal.
  rule(eperm, "ioctl", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, static_cast<uint32_t>(TIOCSTI))});
  if (!in_namespace) {
    // Without a PID namespace kcv is addressable: no signal to kcv, its group, or everyone.
    const auto self = static_cast<uint32_t>(getpid()), group = static_cast<uint32_t>(-getpgrp());
    for (uint32_t target : {self, group, static_cast<uint32_t>(-1), static_cast<uint32_t>(-getpid())}) {
      for (const char* name : {"kill", "tkill", "tgkill", "pidfd_open", "rt_sigqueueinfo", "rt_tgsigqueueinfo"})
        rule(eperm, name, {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, target)});
    }
  }
  const int fd = memfd_create("filter", MFD_CLOEXEC);
  if (fd < 0 || seccomp_export_bpf(ctx, fd) != 0) {
    out.error = "cannot export the seccomp filter";
  } else {
    const off_t size = lseek(fd, 0, SEEK_END);
    out.code.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
    if (pread(fd, out.code.data(), static_cast<std::size_t>(size), 0) != size) out.error = "cannot read the filter";
  }
  if (fd >= 0) close(fd);
  seccomp_release(ctx);
  if (!out.error.empty()) out.code.clear();
  return out;
}

const Program& filter(bool in_namespace) {
  static std::mutex mu;
  static Program programs[2];
  static bool made[2] = {false, false};
  std::lock_guard<std::mutex> lock(mu);
  const int i = in_namespace ? 1 : 0;
  if (!made[i]) { programs[i] = build_filter(in_namespace); made[i] = true; }
  return programs[i];
}

// ---- what the children do (no allocation from here to exec) ----
struct ChildPlan {
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;
  const char* log = nullptr;
  int data_fd = -1, result_fd = -1, ctl_fd = -1, status_w = -1;
  bool enabled = true, drop_uid = false, user_ns = false, check_parent = false;
  // Namespaces init is in, and what is switched on (Request::off switches them off).
  bool new_pid = false, new_mount = false, new_net = false;
  bool private_proc = true, private_tmp = true, no_new_privs = true, pdeathsig = true, seccomp = true;
  bool rlimits = true, nproc = true;
  pid_t parent = -1;
  const char* uid_map = nullptr;
  const char* gid_map = nullptr;
  const char* const* tmp_dirs = nullptr;    // private tmpfs targets
  int n_tmp = 0;
  const char* const* keep = nullptr;        // dirs under them to bind back
  int n_keep = 0;
  const char* const* mkdirs = nullptr;      // their ancestors inside the tmpfs, outermost first
  int n_mkdirs = 0;
  rlim_t address_space = 0;
  gid_t device_group = 0;  // the worker's one supplementary group (0: none)
  // User-namespace mode (kcv not root: the worker keeps kcv's uid): every mount read-only in the
  // worker's namespace, then rw_dirs (the workdir) bound writable again.
  const char* const* ro_mounts = nullptr;
  const unsigned long* ro_flags = nullptr;
  int n_ro = 0;
  const char* const* rw_dirs = nullptr;
  const unsigned long* rw_flags = nullptr;
  int n_rw = 0;
  sock_fprog prog{};
};

void put(int fd, const Record& r) {
  ssize_t ignored = write(fd, &r, sizeof r);
  (void)ignored;
}

/// fork() without the C library's locks (see the NOTES at the top): for init, a copy made by clone().
pid_t bare_fork() { return static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr)); }

[[noreturn]] void abort_child(const ChildPlan& c, Step step, int err) {
  put(c.status_w, Record{kAbort, step, err, 0});
  _exit(126);
}

bool write_text(const char* path, const char* text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const auto n = static_cast<ssize_t>(std::strlen(text));
  const bool ok = write(fd, text, static_cast<std::size_t>(n)) == n;
  close(fd);
  return ok;
}

/// Brings the loopback interface of this network namespace up (a new one starts with it down)
/// and checks that TCP works on it: a listener on 127.0.0.1 accepts a connection. No allocation.
/// NOTES: compute-sanitizer's front end and its target talk over TCP on the loopback.
bool loopback_works() {
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, "lo", 3);
  bool up = ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  if (up && !(ifr.ifr_flags & IFF_UP)) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    up = ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  }
  close(s);
  if (!up) return false;
  const int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = l >= 0 && c >= 0 && bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(l, 1) == 0 &&
                  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
                  connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (l >= 0) close(l);
  if (c >= 0) close(c);
  return ok;
}

[[noreturn]] void become_worker(const ChildPlan& c) {
  uint32_t failed = 0;
  setpgid(0, 0);
  const int logfd = open(c.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (logfd < 0) abort_child(c, kStepLog, errno);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Move the fds above the targets first: any may already sit on 3, 4 or 5.
  const int data_hi = fcntl(c.data_fd, F_DUPFD_CLOEXEC, 10), result_hi = fcntl(c.result_fd, F_DUPFD_CLOEXEC, 10);
  const int ctl_hi = c.ctl_fd >= 0 ? fcntl(c.ctl_fd, F_DUPFD_CLOEXEC, 10) : -1;
  ChildPlan me = c;
  me.status_w = fcntl(c.status_w, F_DUPFD_CLOEXEC, 10);
  dup2(devnull, 0);
  dup2(logfd, 1);
  dup2(logfd, 2);
  dup2(data_hi, 3);
  dup2(result_hi, 4);
  if (ctl_hi >= 0) dup2(ctl_hi, 5);
  // Everything else closes at exec (the status pipe stays usable until then).
  syscall(SYS_close_range, ctl_hi >= 0 ? 6 : 5, ~0U, CLOSE_RANGE_CLOEXEC);

  const rlimit core{0, 0}, fsize{kMaxFileBytes, kMaxFileBytes};
  bool limits = true;
  if (!me.enabled || me.rlimits) {
    limits = setrlimit(RLIMIT_CORE, &core) == 0 && setrlimit(RLIMIT_FSIZE, &fsize) == 0;
    if (me.address_space) {
      const rlimit as{me.address_space, me.address_space};
      limits = setrlimit(RLIMIT_AS, &as) == 0 && limits;
    }
  }
  auto load_filter = [&] { return me.prog.len != 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &me.prog, 0, 0) == 0; };
  // NOTES: without no_new_privs only a privileged process may load a filter: then it is loaded
  // here, before the uid change (switched off for diagnosis only).
  const bool early_filter = me.enabled && me.seccomp && !me.no_new_privs;
  if (early_filter && !load_filter()) failed |= kFailSeccomp;
  if (me.enabled) {
    if (me.drop_uid) {
      // NOTES: RLIMIT_NPROC counts every task (threads too) of the uid on the host, the workers
      // of every concurrent kcv together (docs/security.md).
      if (me.rlimits && me.nproc) {
        const rlimit tasks{kMaxTasks, kMaxTasks};
        limits = setrlimit(RLIMIT_NPROC, &tasks) == 0 && limits;
      }
      const gid_t groups[1] = {me.device_group};
      // The bare system calls: this process has one thread (see the NOTES at the top).
      if (syscall(SYS_setgroups, me.device_group ? 1 : 0, me.device_group ? groups : nullptr) != 0 ||
          syscall(SYS_setresgid, kWorkerGid, kWorkerGid, kWorkerGid) != 0 ||
          syscall(SYS_setresuid, kWorkerUid, kWorkerUid, kWorkerUid) != 0)
        failed |= kFailUid;
    }
    if (!limits) failed |= kFailRlimits;
  }
  if (chdir(me.cwd) != 0) abort_child(me, kStepChdir, errno);
  if (me.enabled) {
    if (me.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) failed |= kFailNoNewPrivs;
    // NOTES: after the uid change, which clears it. The parent is init (namespace) or kcv.
    if (me.pdeathsig && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) failed |= kFailPdeathsig;
    if (me.check_parent && getppid() != me.parent) _exit(125);  // kcv is already gone
    if (me.seccomp && !early_filter && !load_filter()) failed |= kFailSeccomp;
  }
  put(me.status_w, Record{kWorkerReady, failed, 0, 0});
  if (me.argv[0][0] == '/') execve(me.argv[0], me.argv, me.envp);
  else execvpe(me.argv[0], me.argv, me.envp);
  abort_child(me, kStepExec, errno);
}

/// "/proc/self/fd/N" into buf (no allocation).
const char* fd_path(char* buf, int fd) {
  const char* prefix = "/proc/self/fd/";
  std::size_t i = 0;
  for (; prefix[i]; ++i) buf[i] = prefix[i];
  char digits[16];
  int n = 0;
  do { digits[n++] = static_cast<char>('0' + fd % 10); fd /= 10; } while (fd);
  while (n) buf[i++] = digits[--n];
  buf[i] = 0;
  return buf;
}

int init_main(void* arg) {
  const ChildPlan& c = *static_cast<const ChildPlan*>(arg);
  if (c.pdeathsig) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // kcv gone: init gone, and the namespace with it
  // Without a PID namespace (switched off), the worker's orphans still come back to init.
  if (!c.new_pid) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  uint32_t failed = 0;
  if (c.user_ns && !(write_text("/proc/self/setgroups", "deny") && write_text("/proc/self/uid_map", c.uid_map) &&
                     write_text("/proc/self/gid_map", c.gid_map)))
    failed |= kFailUserMap;
  // Nothing of kcv's memory (this is a copy of it) can be read through /proc or ptrace.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (c.new_net && !loopback_works()) failed |= kFailNet;
  if (!c.new_mount) {
    // switched off: nothing to mount
  } else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    failed |= kFailPrivateRoot | kFailTmp | kFailProc;
  } else {
    int keep_fd[64];
    const int n_keep = c.private_tmp ? c.n_keep : 0;
    for (int k = 0; k < n_keep && k < 64; ++k) keep_fd[k] = open(c.keep[k], O_PATH | O_DIRECTORY | O_CLOEXEC);
    bool ro_ok = true;
    for (int m = 0; m < c.n_ro; ++m)
      if (mount(nullptr, c.ro_mounts[m], nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | c.ro_flags[m], nullptr) != 0 &&
          m == 0)
        ro_ok = false;  // the root's; others (pseudo filesystems) may refuse
    if (!ro_ok) failed |= kFailReadOnly;
    if (c.private_tmp) {
      bool tmp_ok = c.n_tmp > 0;
      for (int t = 0; t < c.n_tmp; ++t)
        if (mount("tmpfs", c.tmp_dirs[t], "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=268435456") != 0) tmp_ok = false;
      for (int m = 0; m < c.n_mkdirs; ++m) mkdir(c.mkdirs[m], 0755);
      for (int k = 0; k < n_keep && k < 64; ++k) {
        char src[40];
        if (keep_fd[k] < 0 || mount(fd_path(src, keep_fd[k]), c.keep[k], nullptr, MS_BIND | MS_REC, nullptr) != 0)
          tmp_ok = false;
      }
      if (!tmp_ok) failed |= kFailTmp;
    }
    for (int d = 0; d < c.n_rw; ++d)
      if ((mount(c.rw_dirs[d], c.rw_dirs[d], nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
           mount(nullptr, c.rw_dirs[d], nullptr, MS_REMOUNT | MS_BIND | c.rw_flags[d], nullptr) != 0))
        failed |= kFailReadOnly;
    // NOTES: hidepid: init (root; its command line is kcv's) is invisible to the worker's uid.
    // A fresh /proc shows the PID namespace it is mounted from: only with one of its own.
    const unsigned long pflags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    if (c.private_proc && c.new_pid && mount("proc", "/proc", "proc", pflags, "hidepid=invisible") != 0 &&
        mount("proc", "/proc", "proc", pflags, "hidepid=2") != 0 && mount("proc", "/proc", "proc", pflags, nullptr) != 0)
      failed |= kFailProc;
  }
  put(c.status_w, Record{kInitReady, failed, 0, 0});
  const pid_t worker = bare_fork();
  if (worker == 0) become_worker(c);
  // init keeps only its status pipe.
  const int status_w = c.status_w;
  if (status_w > 0) syscall(SYS_close_range, 0, status_w - 1, 0);
  syscall(SYS_close_range, status_w + 1, ~0U, 0);
  if (worker < 0) {
    put(status_w, Record{kAbort, kStepFork, errno, 0});
    _exit(1);
  }
  for (;;) {
    int st = 0;
    const pid_t p = waitpid(-1, &st, __WALL);
    if (p == worker) {
      put(status_w, Record{kExit, 0, 0, st});
      // Whatever the worker left: everything in the namespace but init. Without a PID namespace
      // (switched off) kill(-1) would reach every process of the host: the worker's group only.
      if (c.new_pid) kill(-1, SIGKILL);
      else kill(-worker, SIGKILL);
      _exit(0);
    }
    if (p < 0 && errno != EINTR) _exit(0);
  }
}

std::string errno_text(int err) { return std::strerror(err); }

/// Reads records until the worker says it is about to exec (or fails); init's comes first.
void read_start_records(int fd, bool has_init, Process& p, uint32_t& init_failed, uint32_t& worker_failed) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool init_seen = !has_init;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) throw SetupError("sandbox: the worker did not start within 60 s");
    pollfd pf{fd, POLLIN, 0};
    const int pr = poll(&pf, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    Record r;
    const ssize_t n = read(fd, &r, sizeof r);
    if (n != static_cast<ssize_t>(sizeof r)) throw SetupError("sandbox: the worker's starter ended before it started");
    if (r.kind == kInitReady) { init_failed = r.bits; init_seen = true; continue; }
    if (r.kind == kAbort) {
      const char* what = r.bits == kStepLog ? "open its log" : r.bits == kStepChdir ? "enter its working directory"
                         : r.bits == kStepExec ? "start its program" : "fork";
      throw SetupError(fmt::format("sandbox: the worker (uid {}) could not {}: {}", p.in_force.uid_separated ? kWorkerUid : geteuid(),
                                   what, errno_text(r.err)));
    }
    if (r.kind == kWorkerReady && init_seen) { worker_failed = r.bits; return; }
  }
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t c; in >> c;) out.push_back(c);
  }
  return out;
}

/// The state letter and comm of a process ('?' when it is gone).
std::pair<char, std::string> state_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size()) return {'?', ""};
  return {text[close + 2], text.substr(open + 1, close - open - 1)};
}

}  // namespace

const std::vector<std::string>& protection_names() {
  static const std::vector<std::string> names = {"pid",          "mount",     "proc",    "tmp",     "ipc",
                                                 "net",          "user",      "uid",     "no_new_privs",
                                                 "pdeathsig",    "seccomp",   "rlimits", "nproc"};
  return names;
}

uint32_t parse_off(const std::string& list) {
  uint32_t off = 0;
  std::istringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    name.erase(std::remove_if(name.begin(), name.end(), [](unsigned char ch) { return std::isspace(ch); }), name.end());
    if (name.empty()) continue;
    const auto& names = protection_names();
    const auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      throw SetupError(fmt::format("KCV_SANDBOX_OFF: unknown protection '{}' (known: {})", name, known));
    }
    off |= 1u << (at - names.begin());
  }
  return off;
}

std::vector<std::string> off_names(uint32_t off) {
  std::vector<std::string> out;
  const auto& names = protection_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (off & (1u << i)) out.push_back(names[i]);
  return out;
}

bool network_namespace_available(std::string* why) {
  static std::mutex mu;
  static int known = -1;  // -1 not checked, 0 no, 1 yes
  static std::string reason;
  std::lock_guard<std::mutex> lock(mu);
  if (known < 0) {
    // NOTES: once per process, in a throwaway child: where a new network namespace gets no
    // working loopback (gVisor with the host's network stack has none to give), a worker in one
    // could not run compute-sanitizer, whose front end talks to its target over TCP.
    const int flags = CLONE_NEWNET | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
    const pid_t child = fork();
    if (child == 0) {
      if (unshare(flags) != 0) _exit(1);
      _exit(loopback_works() ? 0 : 2);
    }
    int st = 0;
    if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st)) {
      known = 0;
      reason = "could not be checked";
    } else {
      known = WEXITSTATUS(st) == 0 ? 1 : 0;
      reason = WEXITSTATUS(st) == 0   ? ""
               : WEXITSTATUS(st) == 1 ? "unshare(CLONE_NEWNET) refused"
                                      : "no working loopback (TCP on 127.0.0.1) in a new one";
    }
  }
  if (why) *why = reason;
  return known == 1;
}

json InForce::to_json() const {
  json j = {{"requested", requested},
            {"pid_namespace", pid_namespace},
            {"mount_namespace", mount_namespace},
            {"private_proc", private_proc},
            {"private_tmp", private_tmp},
            {"ipc_namespace", ipc_namespace},
            {"network_namespace", network_namespace},
            {"user_namespace", user_namespace},
            {"uid_separated", uid_separated},
            {"read_only_root", read_only_root},
            {"uid", uid},
            {"no_new_privs", no_new_privs},
            {"pdeathsig", pdeathsig},
            {"seccomp", seccomp},
            {"rlimits", rlimits},
            {"address_space_bytes", address_space_bytes},
            {"refused", refused},
            {"switched_off", switched_off}};
  const std::string gap = tamper_gap();
  j["pass_allowed"] = gap.empty();
  if (!gap.empty()) j["pass_withheld_because"] = gap;
  return j;
}

std::string InForce::summary() const {
  if (!requested) return "sandbox: off (--no-sandbox): a PASS is withheld";
  std::vector<std::string> on;
  if (pid_namespace) on.push_back(user_namespace ? "user+pid namespaces" : "pid namespace");
  if (mount_namespace) {
    const char* within = private_proc && private_tmp ? " (private /proc, private /tmp)"
                         : private_proc              ? " (private /proc)"
                         : private_tmp               ? " (private /tmp)"
                                                     : "";
    on.push_back(std::string("mount namespace") + within);
  }
  if (ipc_namespace) on.push_back("ipc namespace");
  if (network_namespace) on.push_back("network namespace (loopback only)");
  if (uid_separated) on.push_back(fmt::format("uid {}", uid));
  if (read_only_root) on.push_back("read-only filesystem but its workdir");
  if (no_new_privs) on.push_back("no_new_privs");
  if (pdeathsig) on.push_back("pdeathsig");
  if (seccomp) on.push_back("seccomp");
  if (rlimits) on.push_back(address_space_bytes ? fmt::format("rlimits (address space {} GiB)", address_space_bytes >> 30)
                                                : std::string("rlimits"));
  std::string s = "sandbox: ";
  for (std::size_t i = 0; i < on.size(); ++i) s += (i ? ", " : "") + on[i];
  if (on.empty()) s += "nothing in force";
  for (const auto& r : refused) s += "; refused: " + r;
  if (!switched_off.empty()) {
    s += "; SWITCHED OFF (KCV_SANDBOX_OFF, a PASS is withheld): ";
    for (std::size_t i = 0; i < switched_off.size(); ++i) s += (i ? "," : "") + switched_off[i];
  }
  return s;
}

std::string InForce::tamper_gap() const {
  if (!requested) return "the sandbox was turned off (--no-sandbox)";
  if (!switched_off.empty()) {
    std::string names;
    for (const auto& n : switched_off) names += (names.empty() ? "" : ",") + n;
    return "protections were switched off for diagnosis (KCV_SANDBOX_OFF=" + names + ")";
  }
  if (!pid_namespace) return "no PID namespace: the worker could signal kcv or leave processes behind";
  if (!private_proc) return "no private /proc: the worker could see kcv's processes";
  if (kcv_root && !uid_separated) return "the worker ran as root";
  if (!kcv_root && !read_only_root)
    return "the worker kept kcv's uid on a writable filesystem (it could replace kcv-worker for later gates)";
  if (!no_new_privs) return "no_new_privs was refused";
  if (!seccomp) return "no seccomp filter";
  return {};
}

void InForce::weaken_to(const InForce& o) {
  requested = requested && o.requested;
  pid_namespace = pid_namespace && o.pid_namespace;
  mount_namespace = mount_namespace && o.mount_namespace;
  private_proc = private_proc && o.private_proc;
  private_tmp = private_tmp && o.private_tmp;
  ipc_namespace = ipc_namespace && o.ipc_namespace;
  network_namespace = network_namespace && o.network_namespace;
  user_namespace = user_namespace && o.user_namespace;
  uid_separated = uid_separated && o.uid_separated;
  read_only_root = read_only_root && o.read_only_root;
  no_new_privs = no_new_privs && o.no_new_privs;
  pdeathsig = pdeathsig && o.pdeathsig;
  seccomp = seccomp && o.seccomp;
  rlimits = rlimits && o.rlimits;
  for (const auto& r : o.refused)
    if (std::find(refused.begin(), refused.end(), r) == refused.end()) refused.push_back(r);
  for (const auto& r : o.switched_off)
    if (std::find(switched_off.begin(), switched_off.end(), r) == switched_off.end()) switched_off.push_back(r);
}

namespace {

/// What a ChildPlan points into, made before the clone and alive until the worker has started.
struct ChildStrings {
  std::vector<std::string> argv_s, env_s;
  std::vector<char*> argv, envp;
  std::string uid_map, gid_map;
  std::vector<std::string> tmp_s, keep_s, mk_s;     // private tmp dirs, dirs bound back, their ancestors
  std::vector<std::string> ro_s, rw_s;              // user-namespace mode: read-only mounts, writable dirs
  std::vector<unsigned long> ro_fl, rw_fl;
  std::vector<const char*> tmp_p, keep_p, mk_p, ro_p, rw_p;
};

/// The private tmp dirs (kTmpDirs that are real directories, not links elsewhere), the kept
/// directories under them (outer ones only: one inside another would be bound twice), and their
/// ancestors to recreate inside the tmpfs, outermost first.
void plan_private_tmp(const Request& r, ChildStrings& s, Process& p) {
  std::vector<std::string> kept;
  for (const char* t : kTmpDirs) {
    std::error_code ec;
    if (!fs::is_directory(t, ec) || fs::is_symlink(t, ec)) continue;
    const std::string root = fs::canonical(t, ec).string();
    if (ec || root != t) continue;  // a link elsewhere (e.g. /var/tmp -> /tmp): leave it
    s.tmp_s.push_back(root);
    for (const auto& k : r.keep_dirs) {
      const std::string dir = fs::weakly_canonical(k, ec).string();
      if (ec || dir.rfind(root + "/", 0) != 0) continue;
      if (std::find(kept.begin(), kept.end(), dir) != kept.end()) continue;
      kept.push_back(dir);
      std::vector<std::string> chain;
      for (fs::path a = dir; a.string() != root && a.has_parent_path(); a = a.parent_path()) chain.push_back(a.string());
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        s.mk_s.push_back(*it);
        p.tmp_ancestors.insert(*it);
      }
    }
  }
  for (const auto& k : kept) {
    bool inside = false;
    for (const auto& o : kept) inside = inside || (o != k && k.rfind(o + "/", 0) == 0);
    if (!inside) s.keep_s.push_back(k);
  }
  p.tmp_kept.insert(s.keep_s.begin(), s.keep_s.end());
}

/// A mount point of /proc/self/mountinfo as written there (spaces and the like escaped as \ooo).
std::string unescape_mount_point(const std::string& point) {
  std::string out;
  for (std::size_t i = 0; i < point.size(); ++i) {
    if (point[i] == '\\' && i + 3 < point.size()) {
      out += static_cast<char>(std::stoi(point.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += point[i];
    }
  }
  return out;
}

/// The MS_* flags a read-only remount must keep, from a mount's options ("rw,nosuid,relatime").
unsigned long kept_mount_flags(const std::string& opts) {
  unsigned long fl = 0;
  std::istringstream o(opts);
  for (std::string opt; std::getline(o, opt, ',');) {
    if (opt == "nosuid") fl |= MS_NOSUID;
    else if (opt == "nodev") fl |= MS_NODEV;
    else if (opt == "noexec") fl |= MS_NOEXEC;
    else if (opt == "noatime") fl |= MS_NOATIME;
    else if (opt == "nodiratime") fl |= MS_NODIRATIME;
    else if (opt == "relatime") fl |= MS_RELATIME;
    else if (opt == "strictatime") fl |= MS_STRICTATIME;
  }
  return fl;
}

/// User-namespace mode (kcv not root): every mount but /proc's to make read-only (root first),
/// and the workdir kept writable with the flags of the mount it lies in.
void plan_read_only_mounts(const Request& r, ChildStrings& s) {
  std::ifstream mi("/proc/self/mountinfo");
  std::vector<std::pair<std::string, unsigned long>> mounts;
  for (std::string line; std::getline(mi, line);) {
    std::istringstream in(line);
    std::string id, parent, dev, root, point, opts;
    in >> id >> parent >> dev >> root >> point >> opts;
    const std::string unescaped = unescape_mount_point(point);
    if (unescaped == "/proc" || unescaped.rfind("/proc/", 0) == 0) continue;
    mounts.emplace_back(unescaped, kept_mount_flags(opts));
  }
  std::stable_sort(mounts.begin(), mounts.end(), [](const auto& a, const auto& b) { return a.first.size() < b.first.size(); });
  for (const auto& [point, fl] : mounts) { s.ro_s.push_back(point); s.ro_fl.push_back(fl); }
  std::error_code ec;
  if (!r.keep_dirs.empty()) {
    const std::string dir = fs::weakly_canonical(r.keep_dirs.front(), ec).string();
    unsigned long fl = 0;
    std::size_t best = 0;
    for (const auto& [point, mfl] : mounts)
      if ((dir == point || dir.rfind(point == "/" ? "/" : point + "/", 0) == 0) && point.size() >= best) { best = point.size(); fl = mfl; }
    s.rw_s.push_back(dir);
    s.rw_fl.push_back(fl);
  }
}

/// The child's plan for request r (status_w: the status pipe's write end), its strings in s.
ChildPlan child_plan(const Request& r, int status_w, ChildStrings& s, Process& p) {
  InForce& f = p.in_force;
  auto on = [&](Protection x) { return r.enabled && !(r.off & x); };
  s.argv_s = r.argv;
  s.env_s = r.env;
  for (auto& a : s.argv_s) s.argv.push_back(a.data());
  s.argv.push_back(nullptr);
  for (auto& e : s.env_s) s.envp.push_back(e.data());
  s.envp.push_back(nullptr);
  ChildPlan c;
  c.argv = s.argv.data();
  c.envp = s.envp.data();
  c.cwd = r.cwd.c_str();
  c.log = r.log.c_str();
  c.data_fd = r.data_fd;
  c.result_fd = r.result_fd;
  c.ctl_fd = r.ctl_fd;
  c.status_w = status_w;
  c.enabled = r.enabled;
  c.address_space = static_cast<rlim_t>(r.address_space_bytes);
  f.address_space_bytes = r.address_space_bytes;
  c.drop_uid = f.kcv_root && on(kUid);
  c.private_proc = on(kProc);
  c.private_tmp = on(kTmp);
  c.no_new_privs = on(kNoNewPrivs);
  c.pdeathsig = on(kPdeathsig);
  c.seccomp = on(kSeccomp);
  c.rlimits = !r.enabled || on(kRlimits);
  c.nproc = on(kNproc);
  // NOTES: where the NVIDIA device nodes are not world-accessible (0660 root:video, say), the
  // worker keeps their group, and nothing else, so that the GPU stays usable as uid 65534.
  if (struct stat dev{}; c.drop_uid && stat("/dev/nvidiactl", &dev) == 0 && (dev.st_mode & S_IRWXO) != (S_IROTH | S_IWOTH) &&
                         (dev.st_mode & (S_IRGRP | S_IWGRP)) == (S_IRGRP | S_IWGRP) && dev.st_gid != 0)
    c.device_group = dev.st_gid;
  if (c.drop_uid && chown(r.cwd.c_str(), kWorkerUid, kWorkerGid) != 0)
    throw SetupError(fmt::format("sandbox: cannot hand {} to uid {}: {}", r.cwd, kWorkerUid, std::strerror(errno)));
  s.uid_map = fmt::format("{0} {0} 1", geteuid());
  s.gid_map = fmt::format("{0} {0} 1", getegid());
  c.uid_map = s.uid_map.c_str();
  c.gid_map = s.gid_map.c_str();
  plan_private_tmp(r, s, p);
  if (r.enabled && !f.kcv_root) plan_read_only_mounts(r, s);
  for (auto& x : s.ro_s) s.ro_p.push_back(x.c_str());
  for (auto& x : s.rw_s) s.rw_p.push_back(x.c_str());
  for (auto& x : s.tmp_s) s.tmp_p.push_back(x.c_str());
  for (auto& x : s.keep_s) s.keep_p.push_back(x.c_str());
  for (auto& x : s.mk_s) s.mk_p.push_back(x.c_str());
  c.ro_mounts = s.ro_p.data();
  c.ro_flags = s.ro_fl.data();
  c.n_ro = static_cast<int>(s.ro_p.size());
  c.rw_dirs = s.rw_p.data();
  c.rw_flags = s.rw_fl.data();
  c.n_rw = static_cast<int>(s.rw_p.size());
  c.tmp_dirs = s.tmp_p.data();
  c.n_tmp = static_cast<int>(s.tmp_p.size());
  c.keep = s.keep_p.data();
  c.n_keep = static_cast<int>(s.keep_p.size());
  c.mkdirs = s.mk_p.data();
  c.n_mkdirs = static_cast<int>(s.mk_p.size());
  return c;
}

/// Starts init in the namespaces r asks for (with a user namespace of its own where kcv is not
/// root or they are refused without; without the network namespace where only it is refused).
/// Returns init's pid, or -1 with the refusals said in f.refused.
pid_t start_in_namespaces(const Request& r, ChildPlan& c, InForce& f) {
  auto on = [&](Protection x) { return r.enabled && !(r.off & x); };
  int ns = (on(kPid) ? CLONE_NEWPID : 0) | (on(kMount) ? CLONE_NEWNS : 0) | (on(kIpc) ? CLONE_NEWIPC : 0);
  // NOTES: a network namespace of its own (loopback only) per worker: no network, and no TCP
  // port shared with another worker. compute-sanitizer's front end and its target meet on a
  // port range of the loopback (49152 on): in a shared network namespace, with the same target
  // pid in every PID namespace, one front end may take another's target (docs/security.md).
  if (on(kNet)) {
    std::string why;
    if (network_namespace_available(&why)) ns |= CLONE_NEWNET;
    else f.refused.push_back("network namespace: " + why);
  }
  // Without a PID namespace kcv stays addressable: the filter also guards it.
  const Program& prog = filter(on(kPid));
  if (!prog.error.empty()) f.refused.push_back("seccomp: " + prog.error);
  c.prog = sock_fprog{static_cast<unsigned short>(prog.code.size()), const_cast<sock_filter*>(prog.code.data())};
  if (ns == 0) return -1;
  c.new_pid = (ns & CLONE_NEWPID) != 0;
  c.new_mount = (ns & CLONE_NEWNS) != 0;
  c.new_net = (ns & CLONE_NEWNET) != 0;
  constexpr std::size_t kStack = 256 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) throw SetupError("sandbox: cannot map a stack");
  pid_t pid = -1;
  int err = 0;
  // As root the namespaces alone; otherwise (or refused) with a user namespace of its own.
  auto start = [&] {
    c.user_ns = false;
    pid = clone(init_main, static_cast<char*>(stack) + kStack, ns | SIGCHLD, &c);
    err = pid < 0 ? errno : 0;
    if (pid < 0 && !f.kcv_root && on(kUser)) {
      c.user_ns = true;
      pid = clone(init_main, static_cast<char*>(stack) + kStack, ns | CLONE_NEWUSER | SIGCHLD, &c);
      if (pid < 0) { err = errno; c.user_ns = false; }
    }
  };
  start();
  if (pid < 0 && (ns & CLONE_NEWNET)) {  // the others without it rather than none at all
    f.refused.push_back(fmt::format("network namespace: clone refused it: {}", std::strerror(err)));
    ns &= ~CLONE_NEWNET;
    c.new_net = false;
    start();
  }
  munmap(stack, kStack);  // the child has its own copy
  if (pid >= 0) {
    f.user_namespace = c.user_ns;
    return pid;
  }
  std::string which;
  for (const auto& [bit, name] : {std::pair{CLONE_NEWPID, "pid"}, {CLONE_NEWNS, "mount"}, {CLONE_NEWIPC, "ipc"},
                                  {CLONE_NEWNET, "net"}})
    if (ns & bit) which += (which.empty() ? "" : ", ") + std::string(name);
  if (!f.kcv_root && on(kUser)) which += ", user";
  f.refused.push_back(fmt::format("namespaces ({}): {}", which, std::strerror(err)));
  return -1;
}

/// What the kernel accepted of what c asked, from the failure bits init and the worker reported.
void record_in_force(const Request& r, const ChildPlan& c, bool in_ns, uint32_t init_failed, uint32_t worker_failed,
                     InForce& f) {
  auto on = [&](Protection x) { return r.enabled && !(r.off & x); };
  auto took = [&](uint32_t failed, uint32_t bit) { return (failed & bit) == 0; };
  f.pid_namespace = in_ns && c.new_pid;
  f.ipc_namespace = in_ns && on(kIpc);
  f.network_namespace = in_ns && c.new_net && took(init_failed, kFailNet);
  if (in_ns && c.new_net && !f.network_namespace) f.refused.push_back("network namespace: its loopback did not come up");
  f.mount_namespace = in_ns && c.new_mount && took(init_failed, kFailPrivateRoot);
  // A fresh /proc is only mounted with a PID namespace of its own (it would show the host's).
  const bool proc_asked = in_ns && c.new_mount && c.new_pid && c.private_proc, tmp_asked = in_ns && c.new_mount && c.private_tmp;
  f.private_proc = proc_asked && took(init_failed, kFailProc);
  f.private_tmp = tmp_asked && took(init_failed, kFailTmp);
  if (proc_asked && !f.private_proc) f.refused.push_back("private /proc: mount refused");
  if (tmp_asked && !f.private_tmp) f.refused.push_back("private /tmp: mount refused");
  if (in_ns && c.user_ns && !took(init_failed, kFailUserMap)) f.refused.push_back("user namespace id maps: refused");
  f.read_only_root = in_ns && c.new_mount && c.n_ro > 0 && took(init_failed, kFailReadOnly);
  if (in_ns && c.new_mount && c.n_ro > 0 && !f.read_only_root) f.refused.push_back("read-only mounts: refused");
  f.uid_separated = c.drop_uid && took(worker_failed, kFailUid);
  if (c.drop_uid && !f.uid_separated) f.refused.push_back(fmt::format("uid {}: setresuid refused", kWorkerUid));
  if (!f.kcv_root && !c.user_ns && on(kUser))
    f.refused.push_back("uid separation: kcv is not root (the worker keeps kcv's uid)");
  f.uid = f.uid_separated ? static_cast<int>(kWorkerUid) : static_cast<int>(geteuid());
  f.gid = f.uid_separated ? static_cast<int>(kWorkerGid) : static_cast<int>(getegid());
  f.no_new_privs = c.no_new_privs && took(worker_failed, kFailNoNewPrivs);
  f.pdeathsig = c.pdeathsig && took(worker_failed, kFailPdeathsig);
  f.seccomp = c.seccomp && took(worker_failed, kFailSeccomp);
  if (c.seccomp && !f.seccomp) f.refused.push_back("seccomp: the filter was refused");
  f.rlimits = c.rlimits && took(worker_failed, kFailRlimits);
  if (c.rlimits && !f.rlimits) f.refused.push_back("rlimits: refused");
}

}  // namespace

Process spawn(const Request& r) {
  Process p;
  InForce& f = p.in_force;
  f.requested = r.enabled;
  f.kcv_root = geteuid() == 0;
  if (r.enabled) f.switched_off = off_names(r.off);
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0) throw SetupError("sandbox: pipe failed");
  ChildStrings strings;
  ChildPlan c;
  try {
    c = child_plan(r, status[1], strings, p);
  } catch (...) {
    close(status[0]);
    close(status[1]);
    throw;
  }
  pid_t pid = r.enabled ? start_in_namespaces(r, c, f) : -1;
  const bool in_ns = pid >= 0;
  if (!in_ns) {
    c.new_pid = c.new_mount = c.new_net = false;
    if (r.enabled) {
      const Program& prog = filter(false);
      c.prog = sock_fprog{static_cast<unsigned short>(prog.code.size()), const_cast<sock_filter*>(prog.code.data())};
    }
    c.check_parent = true;
    c.parent = getpid();
    pid = fork();
    if (pid < 0) { close(status[0]); close(status[1]); throw SetupError(fmt::format("fork failed: {}", std::strerror(errno))); }
    if (pid == 0) become_worker(c);
    setpgid(pid, pid);  // also from the parent: the group exists before any kill(-pid)
  }
  close(status[1]);
  p.pid = pid;
  p.has_init = in_ns;
  p.status_fd = status[0];
  uint32_t init_failed = 0, worker_failed = 0;
  try {
    read_start_records(status[0], in_ns, p, init_failed, worker_failed);
  } catch (...) {
    kill(in_ns ? pid : -pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(status[0]);
    throw;
  }
  if (in_ns) {
    const auto kids = children_of(pid);
    p.worker = kids.empty() ? -1 : kids.front();
  } else {
    p.worker = pid;
    close(status[0]);
    p.status_fd = -1;
  }
  if (r.enabled) record_in_force(r, c, in_ns, init_failed, worker_failed, f);
  return p;
}

int finish(Process& p, double grace_s, bool* outstayed) {
  int status = 0;
  bool reaped = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (std::chrono::steady_clock::now() < until) {
    if (waitpid(p.pid, &status, WNOHANG) == p.pid) { reaped = true; break; }
    usleep(2000);
  }
  // The namespace's init killed: the kernel kills everything in the namespace. Without one, the
  // worker's process group.
  kill(p.has_init ? p.pid : -p.pid, SIGKILL);
  if (!p.has_init) kill(-p.pid, SIGKILL);
  // Without a PID namespace (switched off), killing init kills nothing else: the worker's group.
  if (p.has_init && !p.in_force.pid_namespace && p.worker > 0) kill(-p.worker, SIGKILL);
  if (!reaped) waitpid(p.pid, &status, 0);
  if (p.has_init) {
    // The worker's own wait status, as init saw it; none: kcv killed init before the worker ended.
    status = SIGKILL;
    bool reported = false;
    for (;;) {
      Record rec;
      const ssize_t n = read(p.status_fd, &rec, sizeof rec);
      if (n != static_cast<ssize_t>(sizeof rec)) break;
      if (rec.kind == kExit) { status = rec.status; reported = true; }
    }
    close(p.status_fd);
    p.status_fd = -1;
    reaped = reaped && reported;
  }
  if (outstayed) *outstayed = !reaped;
  return status;
}

std::vector<std::string> extra_processes(const Process& p, const std::set<pid_t>& baseline, std::set<pid_t>* all) {
  // NOTES: one walk of the children lists can miss a process that is being reparented: a child
  // whose parent exits while the walk is between init's list (read before the move) and the
  // parent's (read after it), e.g. a setsid'd grandchild of a child that just returned. Orphans
  // move only towards init (or a subreaper in the tree), so a walk repeated until it finds
  // nothing new sees every process that was alive through it; at most 4 walks.
  std::set<pid_t> seen;
  for (int walk = 0; walk < 4; ++walk) {
    const std::size_t before = seen.size();
    std::vector<pid_t> todo = {p.has_init ? p.pid : p.worker};
    std::set<pid_t> visited;
    while (!todo.empty()) {
      const pid_t at = todo.back();
      todo.pop_back();
      for (pid_t c : children_of(at))
        if (visited.insert(c).second) {
          seen.insert(c);
          todo.push_back(c);
        }
    }
    if (walk > 0 && seen.size() == before) break;
  }
  std::vector<std::string> out;
  for (pid_t q : seen) {
    if (q == p.worker) continue;
    const auto [state, comm] = state_of(q);
    if (state == 'Z' || state == 'X' || state == '?') continue;
    if (all) all->insert(q);
    if (baseline.count(q)) continue;
    out.push_back(fmt::format("pid {} ({})", q, comm));
  }
  return out;
}

std::vector<std::string> stray_files(const Process& p) {
  std::vector<std::string> out;
  if (!p.has_init || !p.in_force.private_tmp) return out;
  // NOTES: the private tmpfs holds only what init made (the kept directories, bound from the host,
  // and their ancestors); anything else in it, at any depth, the worker wrote.
  // Through the worker (same mount namespace): init is undumpable, and without root its root link
  // is closed to kcv.
  const std::string root = fmt::format("/proc/{}/root", p.worker > 0 ? p.worker : p.pid);
  std::vector<std::string> todo(std::begin(kTmpDirs), std::end(kTmpDirs));
  while (!todo.empty() && out.size() < 16) {
    const std::string dir = todo.back();
    todo.pop_back();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root + dir, ec)) {
      const std::string name = e.path().filename().string(), path = dir + "/" + name;
      if (p.tmp_kept.count(path)) continue;
      if (p.tmp_ancestors.count(path)) { todo.push_back(path); continue; }
      // NOTES: names the CUDA driver and glibc's POSIX semaphores use in /dev/shm (private here).
      if (dir == "/dev/shm" && (name.rfind("cuda.", 0) == 0 || name.rfind("nvidia", 0) == 0 || name.rfind("sem.", 0) == 0))
        continue;
      out.push_back(path);
    }
  }
  return out;
}

int64_t host_oom_kills() {
  std::ifstream in("/proc/vmstat");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return -1;
}

int reap_stale_dirs(const std::string& dir, const std::string& prefix) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789") != dash) continue;
    const long owner = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
    if (owner <= 0 || owner == getpid()) continue;
    if (kill(static_cast<pid_t>(owner), 0) == 0 || errno != ESRCH) continue;  // its kcv still runs
    struct stat st{};
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) ++removed;
  }
  return removed;
}

}  // namespace kcv::sandbox
