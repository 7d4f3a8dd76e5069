// The worker sandbox (issue 25, docs/security.md): what a worker runs under, what it cannot do to
// kcv, and kcv's own limits (compile, --max-time, signals, leftovers of a killed run). The hostile
// candidates under controls/cpu/hostile/ go through the CLI as controls; these are the rest.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "kcv/contract.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/sandbox.hpp"
#include "kcv/workdir.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace kcv {
namespace {

const std::string kHostile = std::string(KCV_SOURCE_DIR) + "/controls/cpu/hostile/";

std::vector<Case> softmax_cases(int n) {
  std::vector<Case> out;
  for (int i = 0; i < n; ++i) {
    Rng rng(static_cast<uint64_t>(i));
    out.push_back(gates::single_call_case("case", *find_contract("softmax"), {{"M", 4}, {"N", 33}}, rng));
  }
  return out;
}

RunnerOptions options(const std::string& workdir) {
  RunnerOptions o;
  o.worker = default_worker_path(Settings{});
  o.workdir = workdir;
  o.timeout_s = 5;
  o.canary_key = 77;
  return o;
}

TEST(Sandbox, TheWorkerRunsConfinedAndTheRunnerSaysSo) {
  // The candidate reports what it sees of itself as a clean refusal's message.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", R"(#include <kcv/abi.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int kcv_run(const kcv_call* c) {
  char line[256], status[64] = "";
  int nnp = -1, seccomp = -1, procs = 0;
  FILE* f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f)) {
    sscanf(line, "NoNewPrivs: %d", &nnp);
    sscanf(line, "Seccomp: %d", &seccomp);
  }
  if (f) fclose(f);
  DIR* d = opendir("/proc");
  struct dirent* e;
  while (d && (e = readdir(d))) procs += e->d_name[0] >= '0' && e->d_name[0] <= '9';
  if (d) closedir(d);
  snprintf(c->error, c->error_len, "uid=%d nnp=%d seccomp=%d procs=%d ptrace=%d", (int)getuid(), nnp, seccomp, procs,
           (int)(open("/proc/1/mem", O_RDONLY) >= 0));
  (void)status;
  return 1;
})"), "cpu", dir.path());
  Runner runner(cand, options(dir.path()));
  auto runs = runner.run(softmax_cases(1));
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs[0].calls[0].ran) << runs[0].detail;
  const std::string seen = runs[0].calls[0].message;
  ASSERT_TRUE(runner.sandbox_in_force().has_value());
  const sandbox::InForce& f = *runner.sandbox_in_force();
  std::cout << "worker saw: " << seen << "\n" << f.summary() << "\n";
  if (geteuid() != 0) GTEST_SKIP() << "kcv is not root here: " << f.summary();
  // As root (CI's machine), everything is in force, and the worker sees it.
  EXPECT_TRUE(f.pid_namespace && f.mount_namespace && f.private_proc && f.private_tmp && f.ipc_namespace &&
              f.uid_separated && f.no_new_privs && f.pdeathsig && f.seccomp && f.rlimits) << f.summary();
  EXPECT_TRUE(f.tamper_gap().empty()) << f.tamper_gap();
  EXPECT_NE(seen.find("uid=65534 "), std::string::npos) << seen;
  EXPECT_NE(seen.find("nnp=1 seccomp=2 "), std::string::npos) << seen;
  // Only itself: kcv is in another namespace, and the namespace's init (kcv's code, root) is
  // hidden from the worker's uid (hidepid).
  EXPECT_NE(seen.find("procs=1 "), std::string::npos) << seen;
  EXPECT_NE(seen.find("ptrace=0"), std::string::npos) << seen;
}

TEST(Sandbox, AFatalRecordWrittenByTheCandidatesConstructorIsNotASetupError) {
  // Before the candidate's code runs, kcv-worker checks kcv_run and the ABI version from the file
  // (a setup error); after `loading`, a fatal record is the worker's death, whoever wrote it.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", R"(#include <kcv/abi.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void lie(void) {
  const char* rec = "fatal 6e6f20646576696365\n";  /* "no device" */
  write(4, rec, strlen(rec));
  _exit(2);
}
int kcv_run(const kcv_call* c) { (void)c; return 0; })"), "cpu", dir.path());
  Runner runner(cand, options(dir.path()));
  EXPECT_NO_THROW(runner.probe());
  auto runs = runner.run(softmax_cases(1));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RunStatus::crash);
  EXPECT_NE(runs[0].detail.find("not trusted as a setup error"), std::string::npos) << runs[0].detail;
  EXPECT_NE(runs[0].detail.find("no device"), std::string::npos) << runs[0].detail;
  // The same checks on a candidate without kcv_run stay a setup error.
  const Candidate none = Candidate::prepare(dir.file("n.c", "int f(void) { return 0; }"), "cpu", dir.path());
  Runner plain(none, options(dir.path()));
  EXPECT_THROW(plain.probe(), SetupError);
}

/// A stdio stream whose writes wait until released (or for `limit`): fflush(NULL) on it holds the
/// C library's list of streams, a lock its fork() (and every fopen) takes, that long.
struct StalledStream {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, released = false;
  std::chrono::seconds limit{10};

  static ssize_t write(void* cookie, const char*, size_t n) {
    auto* s = static_cast<StalledStream*>(cookie);
    std::unique_lock<std::mutex> lock(s->mu);
    s->entered = true;
    s->cv.notify_all();
    s->cv.wait_for(lock, s->limit, [&] { return s->released; });
    return static_cast<ssize_t>(n);
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  }
};

TEST(Sandbox, AWorkerStartsWhileAnotherThreadHoldsALockOfTheCLibrary) {
  // NOTES: the namespace's init is a copy of kcv made by clone() while kcv's other threads run
  // (verify_many's jobs, the session's pool, the reference server's reader): a lock one of them
  // held at that instant stays held in the copy. The C library's fork() takes such locks (stdio's
  // list of streams, malloc's arenas), so init must start the worker without it. Found on a loaded
  // CI machine as "the worker did not start within 60 s" in a session's verify_many.
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("c.c", R"(#include <kcv/abi.h>
int kcv_run(const kcv_call* c) { (void)c; return 0; })"), "cpu", dir.path());
  (void)sandbox::network_namespace_available();  // its once-per-process check forks here
  StalledStream s;
  FILE* f = fopencookie(&s, "w", cookie_io_functions_t{nullptr, &StalledStream::write, nullptr, nullptr});
  ASSERT_NE(f, nullptr);
  std::fputs("x", f);
  std::thread holder([] { std::fflush(nullptr); });
  {
    std::unique_lock<std::mutex> lock(s.mu);
    ASSERT_TRUE(s.cv.wait_for(lock, std::chrono::seconds(10), [&] { return s.entered; }));
  }
  const auto t0 = std::chrono::steady_clock::now();
  Runner runner(cand, options(dir.path()));
  std::vector<CaseRun> runs;
  std::string error;
  try {
    runs = runner.run(softmax_cases(1));
  } catch (const SetupError& e) {
    error = e.what();
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.release();
  holder.join();
  std::fclose(f);
  ASSERT_EQ(error, "");
  ASSERT_TRUE(runner.sandbox_in_force().has_value());
  const sandbox::InForce& in_force = *runner.sandbox_in_force();
  if (!in_force.pid_namespace) GTEST_SKIP() << "no namespaces here (init is not used): " << in_force.summary();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].calls[0].ran) << runs[0].detail;
  // kcv itself waits for the lock (its fopen), until the stall ends at 10 s; init's copy of the
  // lock would never be released (the worker's start gives up at 60 s).
  EXPECT_LT(took, 40);
}

TEST(Sandbox, ACompileBombIsASetupErrorWithinTheCompileLimit) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string out;
  const int rc = test::run_kcv({"verify", "--op", "softmax", "--candidate", kHostile + "compile_bomb.c",
                                "--compile-timeout", "4"}, out);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("ran past the 4 s limit"), std::string::npos) << out;
  EXPECT_LT(took, 60) << out;
}

TEST(Sandbox, MaxTimeEndsAVerificationWhoseCallsNeverFinish) {
  // A per-call timeout of 100 s would take 12 gates x 100 s; --max-time stops it all at 4 s.
  test::TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  std::string out;
  const int rc = test::run_kcv({"verify", "--op", "softmax", "--candidate", kHostile + "heartbeat_spin.c", "--timeout",
                                "100", "--max-time", "4", "--json", dir.path() + "/r.json"}, out);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(rc, 1) << out;
  EXPECT_LT(took, 40) << out;
  std::ifstream in(dir.path() + "/r.json");
  const std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("--max-time 4 s"), std::string::npos) << report;
  EXPECT_EQ(report.find("\"PASS\""), std::string::npos) << report;
  // Every TIMEOUT here is the run's limit, and the report says so in a field of its own.
  const auto j = nlohmann::json::parse(report);
  int timeouts = 0;
  for (const auto& g : j.at("gates"))
    if (g.at("verdict") == "TIMEOUT") {
      ++timeouts;
      EXPECT_TRUE(g.value("stopped_at_max_time", false)) << g.dump();
    }
  EXPECT_GT(timeouts, 0) << report;
}

/// Direct children of pid (host pids).
std::vector<pid_t> children(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream in(t.path() / "children");
    for (pid_t c; in >> c;) out.push_back(c);
  }
  return out;
}

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

TEST(Sandbox, SigtermEndsTheWorkersAndRemovesTheTemporaryDirectory) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const std::string kcv = test::kcv_binary(), cand = kHostile + "heartbeat_spin.c";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    execl(kcv.c_str(), kcv.c_str(), "verify", "--op", "softmax", "--candidate", cand.c_str(), "--timeout", "100",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  // Wait for a worker (its namespace's init, a child of kcv) and kcv's temporary directory.
  const std::string prefix = "kcv-" + std::to_string(pid) + "-";
  std::vector<pid_t> sandbox;
  fs::path workdir;
  for (int i = 0; i < 300 && (sandbox.empty() || workdir.empty()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sandbox.clear();
    for (pid_t c : children(pid)) {
      sandbox.push_back(c);
      for (pid_t g : children(c)) sandbox.push_back(g);
    }
    for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
      if (e.path().filename().string().rfind(prefix, 0) == 0) workdir = e.path();
  }
  ASSERT_FALSE(sandbox.empty()) << "no worker started";
  ASSERT_FALSE(workdir.empty()) << "no temporary directory " << prefix << "*";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (kill(pid, 0) == 0 && waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "kcv did not stop within 10 s of SIGTERM";
  }
  char buf[4096];
  std::string text;
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(out[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status << " " << text;
  EXPECT_NE(text.find("stopped by SIGTERM"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(workdir)) << workdir;
  for (int i = 0; i < 100; ++i) {
    bool any = false;
    for (pid_t p : sandbox) any = any || alive(p);
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t p : sandbox) EXPECT_FALSE(alive(p)) << "process " << p << " outlived kcv";
}

TEST(Sandbox, RunAsAnotherUserKcvUsesAUserNamespaceAndAReadOnlyFilesystem) {
  // kcv not root: no uid to change to, so the worker keeps kcv's uid, in a user namespace, with
  // every mount read-only but its workdir. A write outside its cwd (here: beside its workdir, in
  // the private /tmp) still fails the gate; a correct candidate still passes. Where the platform
  // refuses user namespaces, the PASS is withheld instead.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user (setpriv)";
  test::TempDir dir;
  ASSERT_EQ(chown(dir.path().c_str(), 65534, 65534), 0);
  const std::string writer = dir.file("writer.c", "#include \"" + kHostile + "hostile.h\"\n"
      "KCV_EXPORT int kcv_run(const kcv_call* c) {\n"
      "  FILE* f = fopen(\"" + dir.path() + "/beside\", \"w\"); if (f) { fputs(\"x\", f); fclose(f); }\n"
      "  hostile_softmax(c); return 0; }\n");
  auto run_as_nobody = [&](const std::string& candidate, const std::string& name, std::string& report) {
    std::string out;
    const int rc = run_capture({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", test::kcv_binary(),
                                "verify", "--op", "softmax", "--candidate", candidate, "--gates", "numerics",
                                "--keep-workdir", dir.path() + "/" + name, "--json", dir.path() + "/" + name + ".json"},
                               out);
    std::ifstream in(dir.path() + "/" + name + ".json");
    report.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cout << out;
    return rc;
  };
  std::string ok, bad;
  const int rc_ok = run_as_nobody(std::string(KCV_SOURCE_DIR) + "/controls/cpu/softmax/softmax_ok.c", "ok", ok);
  const int rc_bad = run_as_nobody(writer, "bad", bad);
  EXPECT_EQ(rc_bad, 1) << bad;
  EXPECT_EQ(bad.find("\"verdict\": \"PASS\""), std::string::npos) << bad;
  if (ok.find("\"user_namespace\": true") == std::string::npos) {
    EXPECT_EQ(rc_ok, 1) << ok;
    EXPECT_NE(ok.find("tampering could not be excluded"), std::string::npos) << ok;
    GTEST_SKIP() << "user namespaces refused here: the PASS was withheld, as it must be";
  }
  EXPECT_EQ(rc_ok, 0) << ok;
  EXPECT_NE(ok.find("\"read_only_root\": true"), std::string::npos) << ok;
  EXPECT_NE(bad.find("file written outside the working directory: " + dir.path() + "/beside"), std::string::npos) << bad;
  EXPECT_FALSE(fs::exists(dir.path() + "/beside"));
}

/// A TCP listener on the host's 127.0.0.1 (kcv's network namespace); its port.
struct HostListener {
  int fd = -1, port = 0;
  HostListener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd, 4) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
  ~HostListener() { close(fd); }
};

/// A candidate that says, as a clean refusal's message, whether it reached the host's listener on
/// port and whether TCP works on its own loopback (what compute-sanitizer needs).
std::string network_probe_source(int port) {
  return R"(#include <kcv/abi.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
static int reach(int port, int listen_too) {
  struct sockaddr_in a = {0};
  socklen_t len = sizeof a;
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  int l = -1, c = socket(AF_INET, SOCK_STREAM, 0), ok;
  if (listen_too) {
    l = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(l, (struct sockaddr*)&a, sizeof a) != 0 || listen(l, 1) != 0 || getsockname(l, (struct sockaddr*)&a, &len) != 0)
      return 0;
  }
  ok = connect(c, (struct sockaddr*)&a, sizeof a) == 0;
  close(c);
  if (l >= 0) close(l);
  return ok;
}
int kcv_run(const kcv_call* c) {
  snprintf(c->error, c->error_len, "host=%d own=%d", reach()" + std::to_string(port) + R"(, 0), reach(0, 1));
  return 1;
})";
}

TEST(Sandbox, TheWorkerHasALoopbackOfItsOwnAndNoOtherNetwork) {
  // compute-sanitizer's front end and its target talk over TCP on the loopback: that must work
  // inside; kcv's network namespace (a port another worker listens on) must not be reachable.
  HostListener host;
  ASSERT_GT(host.port, 0);
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("net.c", network_probe_source(host.port)), "cpu", dir.path());
  for (const bool net_off : {false, true}) {
    RunnerOptions o = options(dir.path());
    if (net_off) o.settings.sandbox_off = sandbox::kNet;
    Runner runner(cand, o);
    auto runs = runner.run(softmax_cases(1));
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_TRUE(runs[0].calls[0].ran) << runs[0].detail;
    const std::string seen = runs[0].calls[0].message;
    const sandbox::InForce& f = *runner.sandbox_in_force();
    std::string why;
    if (!sandbox::network_namespace_available(&why)) {
      EXPECT_FALSE(f.network_namespace);
      GTEST_SKIP() << "no network namespace here: " << why << " (" << f.summary() << ")";
    }
    EXPECT_NE(seen.find("own=1"), std::string::npos) << seen;
    if (net_off) {
      EXPECT_FALSE(f.network_namespace) << f.summary();
      EXPECT_NE(seen.find("host=1"), std::string::npos) << seen;
      EXPECT_EQ(f.switched_off, std::vector<std::string>{"net"});
      EXPECT_NE(f.tamper_gap().find("KCV_SANDBOX_OFF=net"), std::string::npos) << f.tamper_gap();
    } else {
      EXPECT_TRUE(f.network_namespace) << f.summary();
      EXPECT_NE(seen.find("host=0"), std::string::npos) << seen;
      EXPECT_TRUE(f.switched_off.empty());
    }
  }
}

TEST(Sandbox, EachProtectionSwitchesOffAloneIsReportedAndWithholdsAPass) {
  // KCV_SANDBOX_OFF (docs/security.md) is for diagnosis: the worker still runs, the protection is
  // off, the report lists it and no PASS can stand. "pid" also checks that init without a PID
  // namespace does not kill(-1) (as root that would be every process of the host).
  test::TempDir dir;
  const Candidate cand = Candidate::prepare(dir.file("ok.c", test::softmax_source()), "cpu", dir.path());
  for (const std::string& name : sandbox::protection_names()) {
    RunnerOptions o = options(dir.path());
    o.settings.sandbox_off = sandbox::parse_off(name);
    Runner runner(cand, o);
    auto runs = runner.run(softmax_cases(2));
    ASSERT_EQ(runs.size(), 2u) << name;
    EXPECT_EQ(runs[1].status, RunStatus::ok) << name << ": " << runs[1].detail;
    const sandbox::InForce& f = *runner.sandbox_in_force();
    EXPECT_EQ(f.switched_off, std::vector<std::string>{name});
    EXPECT_NE(f.tamper_gap().find("switched off for diagnosis (KCV_SANDBOX_OFF=" + name + ")"), std::string::npos)
        << f.tamper_gap();
    EXPECT_EQ(f.to_json()["pass_allowed"], false) << name;
    EXPECT_NE(f.summary().find("SWITCHED OFF"), std::string::npos) << f.summary();
    if (geteuid() != 0) continue;
    // As root every flag is in force but the one switched off (and what depends on it).
    const std::map<std::string, bool> off = {
        {"pid", !f.pid_namespace && !f.private_proc}, {"mount", !f.mount_namespace && !f.private_tmp && !f.private_proc},
        {"proc", !f.private_proc && f.private_tmp}, {"tmp", !f.private_tmp && f.private_proc},
        {"ipc", !f.ipc_namespace}, {"net", !f.network_namespace}, {"user", true}, {"uid", !f.uid_separated},
        {"no_new_privs", !f.no_new_privs && f.seccomp}, {"pdeathsig", !f.pdeathsig}, {"seccomp", !f.seccomp},
        {"rlimits", !f.rlimits}, {"nproc", f.rlimits}};
    EXPECT_TRUE(off.at(name)) << name << ": " << f.summary();
    EXPECT_TRUE(f.refused.empty()) << name << ": " << f.summary();
  }
  EXPECT_THROW(sandbox::parse_off("seccomp,nope"), SetupError);
  EXPECT_EQ(sandbox::parse_off(" net , seccomp,"), sandbox::kNet | sandbox::kSeccomp);
  EXPECT_EQ(sandbox::parse_off(""), 0u);
}

TEST(Sandbox, KcvSandboxOffReachesTheReportAndTheVerdict) {
  test::TempDir dir;
  setenv("KCV_SANDBOX_OFF", "seccomp", 1);
  std::string out;
  const int rc = test::run_kcv({"verify", "--op", "softmax", "--candidate",
                                std::string(KCV_SOURCE_DIR) + "/controls/cpu/softmax/softmax_ok.c", "--gates",
                                "numerics", "--json", dir.path() + "/r.json"}, out);
  setenv("KCV_SANDBOX_OFF", "nothing-such", 1);
  std::string bad;
  const int rc_bad = test::run_kcv({"verify", "--op", "softmax", "--candidate",
                                    std::string(KCV_SOURCE_DIR) + "/controls/cpu/softmax/softmax_ok.c", "--gates",
                                    "numerics"}, bad);
  unsetenv("KCV_SANDBOX_OFF");
  EXPECT_EQ(rc, 1) << out;
  std::ifstream in(dir.path() + "/r.json");
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["sandbox"]["switched_off"], nlohmann::json::array({"seccomp"})) << report.dump(1);
  EXPECT_EQ(report["sandbox"]["seccomp"], false);
  EXPECT_NE(report["pass_withheld"].get<std::string>().find("KCV_SANDBOX_OFF=seccomp"), std::string::npos);
  EXPECT_EQ(rc_bad, 2) << bad;
  EXPECT_NE(bad.find("unknown protection 'nothing-such'"), std::string::npos) << bad;
}

TEST(Runner, SanitizerPortRangesAreDistinctWhileHeldAndFreedWithTheirLock) {
  // compute-sanitizer outside a network namespace of its own gets a port range no other kcv on the
  // host holds (the lock is an flock, so a killed kcv frees its ranges).
  int a = -1, b = -1, c = -1;
  const int pa = sanitizer_port_range(&a), pb = sanitizer_port_range(&b);
  ASSERT_GT(pa, 49152);
  ASSERT_GT(pb, 49152);
  EXPECT_GE(std::abs(pa - pb), 10);
  const pid_t child = fork();  // another process sees both ranges held
  if (child == 0) {
    int fd = -1;
    const int p = sanitizer_port_range(&fd);
    _exit(p == pa || p == pb ? 1 : 0);
  }
  int st = 0;
  waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(a);
  EXPECT_EQ(sanitizer_port_range(&c), pa);  // the lowest free range again
  close(b);
  close(c);
}

TEST(Sandbox, TheTemporaryDirectoriesOfAKilledKcvAreRemovedByTheNext) {
  test::TempDir tmp;
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const fs::path gone = fs::path(tmp.path()) / ("kcv-" + std::to_string(dead) + "-abc123");
  const fs::path live = fs::path(tmp.path()) / ("kcv-" + std::to_string(getppid()) + "-abc123");
  const fs::path other = fs::path(tmp.path()) / "kcv-test-notapid";
  for (const auto& d : {gone, live, other}) fs::create_directories(d / "worker-0");
  EXPECT_EQ(sandbox::reap_stale_dirs(tmp.path(), "kcv-"), 1);
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

// A corpus run's scratch directory is a Workdir too (kcv-<pid>-corpus-XXXXXX): one left by a
// SIGKILLed run is removed by the next kcv's first Workdir, and its own is removed at scope end.
TEST(Sandbox, TheScratchOfAKilledCorpusRunIsRemovedByTheNextKcv) {
  test::TempDir tmp;
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir ? old_tmpdir : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const fs::path left = fs::path(tmp.path()) / ("kcv-" + std::to_string(dead) + "-corpus-abc123");
  fs::create_directories(left / "pair-0");
  std::string made;
  {
    const Workdir scratch("", "corpus");
    made = scratch.path();
    EXPECT_FALSE(fs::exists(left));
    EXPECT_EQ(fs::path(made).parent_path(), fs::path(tmp.path()));
    EXPECT_EQ(fs::path(made).filename().string().rfind("kcv-" + std::to_string(getpid()) + "-corpus-", 0), 0u) << made;
    EXPECT_TRUE(fs::is_directory(made));
  }
  EXPECT_FALSE(fs::exists(made));
  if (old_tmpdir) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
}

}  // namespace
}  // namespace kcv
