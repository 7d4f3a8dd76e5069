// The isolation core's pieces, private to src/kcv/isolation/ and runner.cpp (included by relative
// path; not under include/, not installed; tests reach it as "kcv/isolation/isolation.hpp"). Runner::run_batch strings them together for one batch of cases:
//   stage.cpp      lay the batch out in a data file (a memfd), write the plan and the input bytes
//   spawn.cpp      hand the data file to a waiting session worker, or start one in its sandbox
//   exchange.cpp   follow the worker's records: deadlines, side-effect checks after every call
//   read_back.cpp  how the worker ended, and the CaseRuns from the bytes it left in the data file
// docs/architecture.md draws them; docs/protocol.md specifies what crosses to the worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/backends/host_backend.hpp"
#include "kcv/candidate.hpp"
#include "kcv/gate.hpp"
#include "kcv/runner.hpp"
#include "kcv/sandbox.hpp"

namespace kcv::isolation {

using Clock = std::chrono::steady_clock;

// ---- stage.cpp ----

/// Where one tensor lies in the data file: its bytes going in, its snapshot slot and (outputs) the
/// slot of its second snapshot at the end of the case (-1: none).
struct Staged {
  int64_t src = 0, snap = 0;
  int64_t recheck = -1;
};

/// A batch laid out in the data file. Calls are numbered across the batch ("global" indices).
struct Layout {
  std::vector<std::vector<std::vector<Staged>>> in_at, out_at;  // [case][call][arg]
  std::vector<int> first_call_of_case;                           // global index of each case's call 0
  std::vector<std::string> signature;   // per global call: its shape signature (the compile grace)
  std::vector<std::string> placement;   // per case: where its buffers were placed (CaseRun::placement)
  nlohmann::json calls = nlohmann::json::array();                // the plan's "calls"
  int64_t end = 0;                      // the first byte after the staging: the plan goes there
  int calls_total() const { return static_cast<int>(signature.size()); }
};

/// A data file (a memfd) mapped here; unmapped and closed when it goes (fd < 0: none).
class DataFile {
 public:
  DataFile() = default;
  DataFile(int fd, unsigned char* map, int64_t bytes) : fd_(fd), map_(map), bytes_(bytes) {}
  DataFile(DataFile&& o) noexcept { *this = std::move(o); }
  DataFile& operator=(DataFile&& o) noexcept;
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;
  ~DataFile() { reset(); }
  void reset();
  int fd() const { return fd_; }
  unsigned char* map() const { return map_; }
  int64_t bytes() const { return bytes_; }

 private:
  int fd_ = -1;
  unsigned char* map_ = nullptr;
  int64_t bytes_ = 0;
};

/// Which processes beside the worker a call may leave behind:
///   none      kcv-worker alone (a plain candidate): none, even at load time;
///   baseline  a wrapper (a sanitizer) has its own: those alive when the worker says ready;
///   any       a torch candidate's calls may start processes that stay: torch.compile's Inductor
///             starts its pool of compile workers at the first compile and keeps it, as in
///             production. They are contained all the same: the worker's PID namespace holds them,
///             they die with it, they share its uid, seccomp filter and private /tmp, and what they
///             could write into a returned output the second snapshot sees.
/// Files outside the working directory fail in every case.
enum class Leftovers { none, baseline, any };

/// How one batch's worker runs, decided once from the backend, the candidate and the options.
struct WorkerMode {
  bool torch = false;              // the torch worker (a KernelBench candidate), not kcv-worker
  bool sanitized = false;
  SanitizedRun sanitizer;          // how, when sanitized (else empty)
  bool session_capable = false;    // kept between batches of the same options (torch, unsanitized)
  double timeout = 0;              // per call, seconds (the sanitizer's factor in)
  Leftovers leftovers = Leftovers::none;
};

/// What every piece of a batch reads: the runner's settings and the batch's worker.
struct Context {
  const RunnerOptions& opt;
  const Candidate& candidate;
  const Backend& backend;
  WorkerOptions wopts;
  WorkerMode mode;
  std::string library;   // what the worker loads ("" = the backend probe)
};

WorkerMode worker_mode(const Backend& backend, const Candidate& candidate, const WorkerOptions& wopts,
                       double timeout_s);
/// Every tensor's source bytes and snapshot slots, and the plan's calls.
Layout lay_out(const std::vector<const Case*>& batch, uint64_t canary_key, bool recheck_outputs,
               const PlacementRule& rule = {});
/// The plan the worker reads (docs/protocol.md), as JSON text.
std::string plan_text(const Context& ctx, nlohmann::json calls);

// ---- spawn.cpp ----

/// A worker started for a batch and, for a session, kept for the next ones.
struct Session {
  sandbox::Process proc;
  /// Processes allowed beside the worker: those alive when it said ready (Leftovers::baseline).
  std::set<pid_t> baseline;
  /// Files in the private tmp dirs when it said ready, for wrappers and runtimes that make them.
  std::set<std::string> file_baseline;
  int64_t oom_kills_at_start = -1;
  Clock::time_point started{};  // when it was spawned
  int result_fd = -1, ctl_fd = -1;
  /// compute-sanitizer outside a network namespace of its own: the lock on its port range.
  int port_lock_fd = -1;
  int port = -1;    // the port range it names (-1: none)
  int serial = -1;  // its number in the runner that started it (its cwd worker-<serial>)
  /// What it was spawned with (describe_spawn), kept to prove a pooled worker's spawn (spawn_matches).
  nlohmann::json spawn;
  WorkerOptions options;
  std::string cwd, log;
  /// Shape signatures it has been called at (compile grace: only the first call at each gets it).
  std::set<std::string> signatures;
  int64_t log_offset = 0;
  /// Its last batch's data file, still mapped here: the next batch that fits reuses it, so its
  /// pages are not faulted in and zeroed again (kcv's host time on large problems).
  DataFile data;
};

/// The data file of a batch of `total` bytes: the waiting session's (zeroed) when it is large
/// enough, else a new memfd (++*files_made).
DataFile data_file(Session* waiting, int64_t total, int* files_made);
/// The plan and every input's and output's bytes written into the data file.
void write_staging(const DataFile& data, const Layout& layout, const std::vector<const Case*>& batch,
                   const std::string& plan);
/// Hands a waiting session worker its next data file (one byte with the fd, SCM_RIGHTS); false
/// when it is gone.
bool send_data_file(const Session& s, int fd);
/// What start_worker hands the sandbox for worker `serial` (fds aside). *port >= 0: that port
/// range is named (a spawn described again); else a range is taken when the wrapper needs one,
/// held by *port_lock_fd and said in *port.
sandbox::Request spawn_request(const Context& ctx, int serial, int* port_lock_fd, int* port);
/// A spawn's description: every field of the request that shapes the worker (argv, environment,
/// cwd, log, kept directories, sandbox switches, address-space limit, the ctl socket), and its
/// first plan (set by start_standby).
nlohmann::json describe_spawn(const Context& ctx, const sandbox::Request& req);
/// Whether worker w (a standby one, started elsewhere: the session-wide pool) was spawned exactly
/// as start_standby(ctx, w.serial) would spawn it now; *why names the first difference otherwise.
bool spawn_matches(const Context& ctx, const Session& w, std::string* why);
/// Starts a worker (serial: its number in this runner) in its sandbox on the data file.
Session start_worker(const Context& ctx, int serial, const DataFile& data);
/// Starts a standby torch worker (docs/architecture.md "Standby workers") exactly as
/// start_worker(ctx, serial, ...) would start the batch's worker, on a plan that only says
/// "standby": it imports torch, reads no candidate, says `idle` and waits on fd 5. Returns at
/// once (the import runs in the worker). Never throws: nullopt, with *why, when it cannot start.
/// NOTES: called on the runner's own thread: a worker's PR_SET_PDEATHSIG fires when the *thread*
/// that started it ends, so no helper thread may start one.
std::optional<Session> start_standby(const Context& ctx, int serial, std::string* why);
/// Waits until a standby worker says `idle` (its load timeout, the overall deadline, kcv's stop);
/// true then: hand it a batch's data file (send_data_file) and follow it as a new worker. false,
/// with *why, when it did not (it is ended; the batch starts its own worker).
bool await_standby(const Context& ctx, Session& w, std::string* why);
/// Closes a worker's pipes, gives it grace_s to exit by itself, kills its whole group and
/// removes its cwd. Returns its wait status; *outstayed: it had not exited by itself within
/// grace_s (so a SIGKILL in the status may be kcv's).
int end_worker(Session& w, double grace_s, bool* outstayed = nullptr);

// ---- exchange.cpp ----

/// One record of a worker's (fd 4), parsed as kcv reads it (docs/protocol.md). Fields a record
/// lacks or that do not parse stay as below; kind is the first word, whatever it is.
struct Record {
  std::string kind;    // loading ready fatal build_log start done recheck tamper fault bye idle
  int call = -1;       // start, done, recheck, tamper, fault in|out
  int rc = 0;          // done
  double seconds = 0;  // done
  std::string text;    // decoded: fatal, build_log, tamper, fault device, done (the message)
  std::string where;   // fault: in, out, device, unknown
  int arg = 0;         // fault in|out
  int64_t offset = 0;  // fault in|out: bytes from the buffer's first data byte
};
Record parse_record(const std::string& line);

/// What the worker's records said (fd 4, docs/protocol.md); per-call vectors by global index.
struct Records {
  explicit Records(int calls);
  std::vector<bool> done, started;
  std::vector<bool> recheck_seen;   // its outputs' second snapshot is there
  std::vector<int> rc;
  std::vector<double> secs;
  std::vector<double> graced;       // wall seconds of a call that ran into its compile grace
  std::vector<std::string> msg;
  int current = -1;                 // the call the worker last started
  bool ready = false, bye = false, idle = false;
  // NOTES: `fatal` is a setup error only while no candidate code can have run: kcv-worker says
  // `loading` right before dlopen (constructors run there). Later, anyone in the process could
  // have written it: it is the worker's death, with its words as evidence, never a setup error.
  bool loading = false;
  std::string fatal, untrusted_fatal, build_log, device_error;
  Fault fault;                      // global call index until mapped to its case
  /// Something the call left behind (a process, a file outside the cwd): the call's case fails.
  std::string side_effect;
  int side_effect_call = -1;
};

/// Follows one worker through one batch.
class Exchange {
 public:
  /// reused: a session worker that has loaded the candidate already (no load timeout).
  Exchange(const Context& ctx, Session& w, const Layout& layout, bool reused, bool grace_spent);
  /// Until the worker says bye or idle, its records end, a call leaves something behind or time
  /// runs out. kcv asked to stop: the worker is ended and Interrupted thrown.
  void follow();
  /// No record left half read (a session worker is kept only then).
  bool pending_empty() const;

  Records records;
  bool timed_out = false;
  bool out_of_time = false;         // the overall limit (--max-time), not a call's
  double timeout = 0, load_timeout = 0, grace = 0;
  /// Calls in their compile grace: since when (non-empty at a timeout: it hung in its grace).
  std::map<int, Clock::time_point> in_grace;

 private:
  /// One record; false: take no more of what was read (a trusted `fatal`).
  bool take(const std::string& line);
  void on_ready();
  void on_done(const Record& rec, Clock::time_point now);
  void on_fault(const Record& rec);
  void progress();
  void move_deadline(Clock::time_point now);
  void look_for_side_effects(int call);

  const Context& ctx_;
  Session& w_;
  std::string pending_;             // bytes of a record not yet ended by its newline
  std::vector<bool> first_at_shape_;
  int next_ = 0;                    // the first call not done
  Clock::time_point progress_deadline_, deadline_;
};

// ---- read_back.cpp ----

/// How a batch's worker ended.
struct Ending {
  int status = 0;          // its wait status (a kept session worker: 0)
  bool outstayed = false;  // it did not exit by itself in its grace (end_worker)
  bool keep = false;       // a session worker kept for the next batch
  std::string log;         // its log of this batch, capped and cleaned
  std::string death;       // how it died, "" when it did not
};

/// The worker ended (or, a session worker done with its batch, kept: Ending::keep) and its log read.
Ending finish(Session& w, const Exchange& ex, const WorkerMode& mode);
/// The worker's log since its last batch (capped, clean text); a kept worker moves past it.
std::string read_log(Session& w, bool keep);
/// How the worker died ("" when it did not), in the words the gates' evidence carries. A hang in
/// a compile grace spends it for the runner (*grace_spent).
std::string worker_death(const Context& ctx, const Session& w, const Exchange& ex, const Ending& end,
                         bool* grace_spent);
/// One CaseRun per case, up to the first that did not finish (or left something behind).
std::vector<CaseRun> case_runs(const Context& ctx, const std::vector<const Case*>& batch, const Layout& layout,
                               const Exchange& ex, const DataFile& data, const Ending& end);

}  // namespace kcv::isolation
