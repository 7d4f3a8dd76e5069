// Building candidates: kcv compiles sources itself so that it knows exactly what it loads.
#include "kcv/candidate.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kcv/build_config.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;

namespace kcv {

int64_t positive_integer_env(const char* name, int64_t unset, int64_t max) {
  const char* e = std::getenv(name);
  if (!e || !*e) return unset;
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  if (*end != '\0' || v <= 0 || v > max) throw SetupError(fmt::format("{}='{}' is not a positive integer", name, e));
  return v;
}

std::string kcv_include_dir() {
  if (const char* e = std::getenv("KCV_INCLUDE_DIR"); e && *e) return e;
  // An installed kcv finds ../include beside its bin/; a build tree uses the source tree.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "include";
    if (fs::exists(installed / "kcv" / "abi.h")) return installed.string();
  }
  return KCV_BUILD_INCLUDE_DIR;
}

std::string kcv_adapters_dir() {
  if (const char* e = std::getenv("KCV_ADAPTERS_DIR"); e && *e) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "kcv" / "adapters";
    if (fs::exists(installed / "torch" / "kcv_torch_worker.py")) return installed.string();
  }
  return KCV_BUILD_ADAPTERS_DIR;
}

std::string resolve_python(const std::string& given) {
  std::string name = given;
  if (name.empty())
    if (const char* e = std::getenv("KCV_PYTHON"); e && *e) name = e;
  if (name.empty()) name = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  // NOTES: one interpreter for the reference server and every worker, named by an absolute path.
  // A python finds its venv by looking its own name up on its own PATH, and a worker runs with a
  // PATH of kcv's making: a bare `python3` was the shell's venv for the reference and
  // /usr/bin/python3 for the workers (session 8, H200: every gate CRASHed for want of torch).
  // Symlinks stay: a venv's python is a link, and its venv is where the link lies.
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    const fs::path p = fs::absolute(name);
    if (!runnable(p)) throw SetupError(fmt::format("python interpreter '{}' is not an executable file", name));
    return p.string();
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path p = fs::absolute(fs::path(dir.empty() ? "." : dir) / name);
    if (runnable(p)) return p.string();
  }
  throw SetupError(fmt::format("python interpreter '{}' not found on PATH (--python or KCV_PYTHON names one with torch)",
                               name));
}

int run_capture(const std::vector<std::string>& argv, std::string& output) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) output.append(buf, static_cast<std::size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {

/// The first line of compiler output that says "error", else the first line; as one clean line
/// (the candidate's source text can be in it).
std::string first_error(const std::string& out) {
  std::istringstream in(out);
  std::string line, first;
  while (std::getline(in, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return clean_text(line);
  }
  return first.empty() ? "no compiler output" : clean_text(first);
}

/// Runs a candidate build, its whole output kept in `log`; BuildError (`what` and the compiler's
/// first error, and where the rest is) when it fails.
void build(const std::vector<std::string>& cmd, const std::string& log, const std::string& what) {
  std::string out;
  const int rc = run_capture(cmd, out);
  {
    std::ofstream f(log, std::ios::binary | std::ios::trunc);
    f << "$";
    for (const auto& a : cmd) f << " " << a;
    f << "\n" << out;
  }
  if (rc != 0)
    throw BuildError(fmt::format("{}: {} (whole compiler output: {})", what, first_error(out), log), log);
}

std::vector<std::string> compile_command(const std::string& kind, const std::string& src, const std::string& out,
                                         bool sanitize) {
  std::vector<std::string> cmd;
  const std::string opt = sanitize ? "-O1" : "-O2";
  if (kind == "c") cmd = {"cc", "-std=gnu17", opt, "-shared", "-fPIC"};
  else if (kind == "cpp") cmd = {"c++", "-std=c++20", opt, "-shared", "-fPIC"};
  else {
    const char* arch = std::getenv("KCV_CUDA_ARCH");
    const std::string a = arch && *arch ? arch : "90a";
    cmd = {"nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
           "-gencode", fmt::format("arch=compute_{0},code=sm_{0}", a), "-lineinfo"};
  }
  if (sanitize) {
    cmd.insert(cmd.end(), {"-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"});
  }
  cmd.insert(cmd.end(), {"-I", kcv_include_dir(), "-o", out, src});
  if (kind != "cu") cmd.push_back("-lm");  // the candidate names its own libm: the worker need not have it
  return cmd;
}

}  // namespace

Candidate Candidate::prepare(const std::string& path, const std::string& backend, const std::string& workdir) {
  if (!fs::is_regular_file(path)) throw SetupError(fmt::format("candidate '{}' does not exist or is not a file", path));
  Candidate c;
  c.path_ = fs::absolute(path).string();
  c.backend_ = backend;
  c.workdir_ = workdir;
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".c") c.kind_ = "c";
  else if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") c.kind_ = "cpp";
  else if (ext == ".cu") c.kind_ = "cu";
  else if (ext == ".so") c.kind_ = "so";
  else throw SetupError(fmt::format("candidate '{}': expected a .c, .cpp, .cu or .so file", path));
  if (c.kind_ == "cu" && backend != "cuda")
    throw SetupError(fmt::format("candidate '{}' is CUDA source; use --backend cuda", path));

  if (c.kind_ == "so") {
    c.library_ = c.path_;
    return c;
  }
  c.library_ = (fs::path(workdir) / "candidate.so").string();
  build(compile_command(c.kind_, c.path_, c.library_, false), (fs::path(workdir) / "build.log").string(),
        fmt::format("candidate '{}' does not compile", path));
  return c;
}

Candidate Candidate::kernelbench(const std::string& problem, const std::string& solution, const std::string& python) {
  for (const auto& [what, p] : {std::pair{"problem", problem}, std::pair{"solution", solution}})
    if (!fs::is_regular_file(p)) throw SetupError(fmt::format("kernelbench {} '{}' does not exist or is not a file", what, p));
  Candidate c;
  c.kind_ = "kernelbench";
  c.path_ = fs::absolute(solution).string();
  c.library_ = c.path_;
  c.problem_ = fs::absolute(problem).string();
  c.python_ = python;
  return c;
}

std::string Candidate::sanitized_library() const {
  if (kind_ == "kernelbench") return library_;  // the torch worker builds its extensions sanitized
  if (kind_ == "so" || kind_ == "cu") return {};
  std::lock_guard<std::mutex> lock(*mu_);
  if (sanitized_.empty()) {
    const std::string lib = (fs::path(workdir_) / "candidate-asan.so").string();
    build(compile_command(kind_, path_, lib, true), (fs::path(workdir_) / "build-asan.log").string(),
          fmt::format("candidate '{}' does not build with sanitizers", path_));
    sanitized_ = lib;
  }
  return sanitized_;
}

}  // namespace kcv
