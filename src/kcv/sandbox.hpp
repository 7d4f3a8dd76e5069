// The worker sandbox (DESIGN §5.1, docs/security.md): how a kcv-worker (or torch worker) process
// is started so that it cannot take over, signal or outlive kcv, and what kcv can see of it
// afterwards (processes left behind, files written outside its working directory).
// NOTES: one spawn path for every worker; the Runner decides what runs, this file decides how it
// is confined. It reads no environment variable (issue 23): the caller passes what it wants.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kcv::sandbox {

/// One protection, to be switched off for diagnosis (env KCV_SANDBOX_OFF, docs/security.md). A
/// run with any of them off never gets a PASS (InForce::tamper_gap).
enum Protection : uint32_t {
  kPid = 1u << 0,         // "pid": the PID namespace (init as pid 1)
  kMount = 1u << 1,       // "mount": the mount namespace, and with it the next three
  kProc = 1u << 2,        // "proc": a private /proc (hidepid)
  kTmp = 1u << 3,         // "tmp": private /tmp, /var/tmp, /dev/shm
  kIpc = 1u << 4,         // "ipc": the IPC namespace
  kNet = 1u << 5,         // "net": the network namespace (loopback only)
  kUser = 1u << 6,        // "user": the user namespace (kcv not root)
  kUid = 1u << 7,         // "uid": uid/gid 65534 (kcv root)
  kNoNewPrivs = 1u << 8,  // "no_new_privs"
  kPdeathsig = 1u << 9,   // "pdeathsig"
  kSeccomp = 1u << 10,    // "seccomp"
  kRlimits = 1u << 11,    // "rlimits": all of them (core, file size, address space, tasks)
  kNproc = 1u << 12,      // "nproc": RLIMIT_NPROC alone
};
/// The names above, in that order.
const std::vector<std::string>& protection_names();
/// "net,seccomp" (spaces ignored; empty: none) as Protection bits; throws SetupError naming an
/// unknown name and the known ones.
uint32_t parse_off(const std::string& list);
/// The names of the bits in off, in protection_names() order.
std::vector<std::string> off_names(uint32_t off);

/// Whether a new network namespace with a working loopback (TCP on 127.0.0.1) can be made here;
/// checked once per process in a throwaway child. *why: the reason when not.
bool network_namespace_available(std::string* why = nullptr);

/// What one worker was confined by. Each flag is what the kernel accepted, not what was asked.
struct InForce {
  bool requested = true;      // false: the caller turned the sandbox off (--no-sandbox)
  bool pid_namespace = false; // kcv is not addressable; everything dies with the namespace's init
  bool mount_namespace = false;
  bool private_proc = false;  // /proc shows the namespace only
  bool private_tmp = false;   // /tmp, /var/tmp, /dev/shm are private and inspected by kcv
  bool ipc_namespace = false;
  bool network_namespace = false; // its own loopback only: no network, no port shared with others
  bool user_namespace = false;
  bool uid_separated = false; // kcv is root and the worker runs as an unprivileged uid
  bool read_only_root = false; // kcv not root: every mount read-only for the worker, but its workdir
  bool kcv_root = false;
  int uid = -1, gid = -1;
  bool no_new_privs = false;
  bool pdeathsig = false;
  bool seccomp = false;
  bool rlimits = false;
  int64_t address_space_bytes = 0;  // 0: not capped (cuda, sanitizers)
  std::vector<std::string> refused; // one line per protection the platform refused
  std::vector<std::string> switched_off; // protections the caller switched off (KCV_SANDBOX_OFF)

  nlohmann::json to_json() const;
  /// One line for the terminal: what was in force, then what was refused.
  std::string summary() const;
  /// Empty when a PASS may stand: the worker could neither reach kcv nor outlive the call
  /// unnoticed (docs/security.md, "When a PASS is withheld"); else why not.
  std::string tamper_gap() const;
  /// The weaker of two (a verification's workers may differ: the report states the weakest).
  void weaken_to(const InForce& other);
};

/// What a spawn needs. fds are the parent's; they become the worker's 3, 4 and 5 (ctl_fd < 0: none).
struct Request {
  std::vector<std::string> argv, env;
  std::string cwd, log;
  int data_fd = -1, result_fd = -1, ctl_fd = -1;
  bool enabled = true;
  /// Protections switched off for diagnosis (Protection bits; KCV_SANDBOX_OFF).
  uint32_t off = 0;
  /// RLIMIT_AS in bytes (0: none: CUDA and the sanitizers reserve address space far beyond use).
  int64_t address_space_bytes = 0;
  /// Directories the worker must still reach when /tmp (or /var/tmp, /dev/shm) is made private:
  /// the verification's workdir, the candidate's, the interpreter's.
  std::vector<std::string> keep_dirs;
};

/// A started worker. Namespace mode: `pid` is the namespace's init (kcv's code, root, never the
/// candidate's), which waits for the worker and reports its wait status on `status_fd`; killing
/// it kills everything in the namespace. Otherwise `pid` is the worker itself.
struct Process {
  pid_t pid = -1;
  pid_t worker = -1;      // host pid of the worker
  int status_fd = -1;
  bool has_init = false;
  InForce in_force;
  std::set<std::string> tmp_kept;       // host directories bound into the private tmp dirs
  std::set<std::string> tmp_ancestors;  // their ancestors, made by init inside them
};

/// Starts the worker. Throws SetupError when it cannot start at all (or the sandbox cannot let it
/// reach its working directory or executable).
Process spawn(const Request& r);

/// Waits up to grace_s for the worker to end by itself, then kills the whole sandbox (namespace,
/// or process group) and reaps it. Returns the worker's wait status; *outstayed: kcv killed it.
int finish(Process& p, double grace_s, bool* outstayed);

/// Processes alive beside the worker (its descendants and, in a namespace, orphans adopted by
/// init), as "pid N (comm)" lines, excluding `baseline` (host pids) and zombies.
std::vector<std::string> extra_processes(const Process& p, const std::set<pid_t>& baseline, std::set<pid_t>* all = nullptr);

/// Files the worker's namespace holds in its private /tmp, /var/tmp and /dev/shm (things written
/// outside its working directory), as paths; empty without a private tmp.
std::vector<std::string> stray_files(const Process& p);

/// The host's count of out-of-memory kills (/proc/vmstat oom_kill; -1 when unreadable).
int64_t host_oom_kills();

/// Removes temporary directories named `<prefix><pid>-*` under dir whose owner pid is gone (a
/// SIGKILLed kcv's leftovers) and that belong to this uid. Returns how many were removed.
int reap_stale_dirs(const std::string& dir, const std::string& prefix);

}  // namespace kcv::sandbox
