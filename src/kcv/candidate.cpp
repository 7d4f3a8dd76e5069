// Building candidates: kcv compiles sources itself so that it knows exactly what it loads.
#include "kcv/candidate.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kcv/backends/host_backend.hpp"
#include "kcv/build_config.hpp"
#include "kcv/core/sha256.hpp"
#include "kcv/runner.hpp"
#include "kcv/subprocess.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;

namespace kcv {

std::string kcv_include_dir(const Settings& settings) {
  if (!settings.include_dir.empty()) return settings.include_dir;
  // An installed kcv finds ../include beside its bin/; a build tree uses the source tree.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "include";
    if (fs::exists(installed / "kcv" / "abi.h")) return installed.string();
  }
  return KCV_BUILD_INCLUDE_DIR;
}

std::string kcv_adapters_dir(const Settings& settings) {
  if (!settings.adapters_dir.empty()) return settings.adapters_dir;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "kcv" / "adapters";
    if (fs::exists(installed / "torch" / "kcv_torch_worker.py")) return installed.string();
  }
  return KCV_BUILD_ADAPTERS_DIR;
}

std::string resolve_python(const std::string& given, const Settings& settings) {
  std::string name = given.empty() ? settings.python : given;
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
  // NOTES: kcv's own PATH, as a shell would look the name up: an environment the library passes
  // through, not a setting of its own (include/kcv/settings.hpp).
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
  return run_capture(argv, output, CaptureLimits{});
}

CaptureLimits default_compile_limits() {
  CaptureLimits l;
  l.seconds = 300;
  const int64_t pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  l.address_space = int64_t(8) << 30;
  if (pages > 0 && page > 0) l.address_space = std::min(l.address_space, pages * page / 2);
  return l;
}

int run_capture(const std::vector<std::string>& argv, std::string& output, const CaptureLimits& limits) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  SubprocessSpec spec;
  spec.argv = argv;
  spec.out = spec.err = Redirect::to_fd(pipefd[1]);
  spec.address_space = limits.address_space;
  spec.cpu_seconds = limits.seconds;
  pid_t pid = -1;
  try {
    pid = spawn_subprocess(spec);
  } catch (const SetupError&) {
    close(pipefd[0]);
    close(pipefd[1]);
    return -1;
  }
  close(pipefd[1]);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.seconds > 0 ? limits.seconds : 1e9);
  int result = 0;
  char buf[4096];
  for (;;) {
    if (stop_requested()) { result = -3; break; }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) { result = -2; break; }
    pollfd p{pipefd[0], POLLIN, 0};
    const int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
    if (pr <= 0) continue;
    const ssize_t n = read(pipefd[0], buf, sizeof buf);
    if (n <= 0) break;
    if (output.size() < limits.max_output) output.append(buf, static_cast<std::size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  if (result != 0) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return result;
  }
  // Output closed: wait for the exit, still within the limit.
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until || stop_requested()) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return stop_requested() ? -3 : -2;
    }
    usleep(2000);
  }
  kill(-pid, SIGKILL);  // whatever it left in its group
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

/// Runs a candidate build within limits, its whole output kept in `log`; BuildError (`what` and
/// the compiler's first error, and where the rest is) when it fails or runs past the limits (a
/// preprocessor or constexpr bomb).
void build(const std::vector<std::string>& cmd, const CaptureLimits& limits, const std::string& log,
           const std::string& what) {
  std::string out;
  const int rc = run_capture(cmd, out, limits);
  if (rc == -3) throw Interrupted(stop_requested());
  {
    std::ofstream f(log, std::ios::binary | std::ios::trunc);
    f << "$";
    for (const auto& a : cmd) f << " " << a;
    f << "\n" << out;
  }
  if (rc == -2)
    throw BuildError(fmt::format("{}: the compiler ran past the {:g} s limit and was killed (a preprocessor or "
                                 "constexpr bomb?; its output so far: {})", what, limits.seconds, log), log);
  if (rc != 0)
    throw BuildError(fmt::format("{}: {} (whole compiler output: {})", what, first_error(out), log), log);
}

/// The build of a source candidate on `backend` (its CompileRecipe for the kind), sanitized or not.
std::vector<std::string> compile_command(const std::string& backend, const std::string& kind, const std::string& src,
                                         const std::string& out, bool sanitize, const std::string& origin_dir,
                                         const Settings& settings) {
  const std::optional<CompileRecipe> recipe = backend_named(backend).compile_recipe(kind, settings);
  if (!recipe) throw SetupError(fmt::format("backend '{}' does not build {} sources", backend, kind));
  std::vector<std::string> cmd = recipe->command;
  if (sanitize) {
    std::replace(cmd.begin(), cmd.end(), recipe->optimize, std::string("-O1"));
    cmd.insert(cmd.end(), {"-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"});
  }
  cmd.insert(cmd.end(), {"-I", kcv_include_dir(settings)});
  // NOTES: #include "x.h" finds the private copy's own files first (the including file's
  // directory); the original directory comes after, for what the copy leaves out (above its cap,
  // outside the directory: "../common/x.h"), on the recipe's flag for it.
  if (!origin_dir.empty()) cmd.insert(cmd.end(), {recipe->quote_include, origin_dir});
  cmd.insert(cmd.end(), {"-o", out, src});
  if (recipe->link_libm) cmd.push_back("-lm");
  return cmd;
}

/// Copies the regular file `from` to `to`, read-only, at most `budget` bytes (less what it takes);
/// false when it is not a regular file (opened without blocking: a FIFO swapped in is refused),
/// cannot be read, or does not fit.
bool copy_regular_file(const fs::path& from, const fs::path& to, int64_t& budget) {
  const int in = open(from.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (in < 0) return false;
  struct stat st {};
  if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > budget) {
    close(in);
    return false;
  }
  const int out = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  bool ok = out >= 0;
  char buf[1 << 16];
  for (ssize_t n; ok && (n = read(in, buf, sizeof buf)) != 0;) {
    if (n < 0 || n > budget) { ok = false; break; }  // unreadable, or it grew past what is left
    budget -= n;
    for (ssize_t w = 0; ok && w < n;) {
      const ssize_t k = write(out, buf + w, static_cast<std::size_t>(n - w));
      ok = k > 0;
      w += k;
    }
  }
  close(in);
  if (out >= 0) close(out);
  return ok;
}

}  // namespace

PrivateCopy private_copy(const std::string& file, const std::string& into, const std::string& workdir) {
  const fs::path src = fs::absolute(file), origin = src.parent_path(), dest = into;
  std::error_code ec;
  const auto dir_perms = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec;  // uid 65534 reads it, writes nothing
  fs::create_directories(dest, ec);
  fs::permissions(dest, dir_perms, fs::perm_options::replace, ec);
  PrivateCopy r;
  r.origin_dir = origin.string();
  r.file = (dest / src.filename()).string();  // its own name: the compiler's messages say it
  try {
    r.sha256 = sha256_file(src.string(), r.file);
  } catch (const std::runtime_error& e) {
    throw SetupError(fmt::format("'{}' cannot be copied into the workdir: {}", file, e.what()));
  }
  fs::permissions(r.file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace, ec);

  // The rest of its directory: what is there, first (nothing copied unless all of it fits).
  std::vector<fs::path> files;  // relative to origin
  int64_t bytes = 0;
  int entries = 0;
  bool fits = true;
  const fs::path skip = fs::weakly_canonical(workdir, ec);
  fs::recursive_directory_iterator it(origin, fs::directory_options::skip_permission_denied, ec), end;
  for (; fits && !ec && it != end; it.increment(ec)) {
    if (++entries > 4 * kPrivateCopyMaxFiles) { fits = false; break; }  // a walk that would not end soon
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    std::error_code e2;
    const bool is_dir = it->is_directory(e2);  // a link to a directory: not walked (the iterator's default)
    if (name.empty() || name[0] == '.' || name == "__pycache__" || (is_dir && fs::equivalent(p, skip, e2))) {
      if (is_dir) it.disable_recursion_pending();
      continue;
    }
    if (is_dir) {
      if (it.depth() + 1 >= kPrivateCopyMaxDepth) it.disable_recursion_pending();
      continue;
    }
    const fs::path rel = p.lexically_relative(origin);
    if (rel == src.filename() || !it->is_regular_file(e2)) continue;  // the candidate is copied; no devices, FIFOs
    const auto size = it->file_size(e2);
    if (e2) continue;
    files.push_back(rel);
    bytes += static_cast<int64_t>(size);
    if (static_cast<int>(files.size()) > kPrivateCopyMaxFiles || bytes > kPrivateCopyMaxBytes) fits = false;
  }
  r.whole_directory = fits && !ec;
  if (!r.whole_directory) {
    r.files = 1;
    return r;
  }
  int64_t budget = kPrivateCopyMaxBytes;
  for (const fs::path& rel : files) {
    const fs::path to = dest / rel;
    fs::create_directories(to.parent_path(), ec);
    for (fs::path d = to.parent_path(); d.string().size() > dest.string().size(); d = d.parent_path())
      fs::permissions(d, dir_perms, fs::perm_options::replace, ec);
    if (copy_regular_file(origin / rel, to, budget)) {
      ++r.files;
      r.bytes = kPrivateCopyMaxBytes - budget;
    }
  }
  ++r.files;  // the candidate itself
  return r;
}

std::string PrivateCopy::describe() const {
  if (whole_directory) return fmt::format("its directory: {} files", files);
  return fmt::format("the file alone: its directory {} is above the cap ({} files, {} MiB, {} levels); its other files are "
                     "read there at each build and import",
                     origin_dir, kPrivateCopyMaxFiles, kPrivateCopyMaxBytes >> 20, kPrivateCopyMaxDepth);
}

Candidate Candidate::prepare(const std::string& path, const std::string& backend, const std::string& workdir,
                             const CaptureLimits& limits, const Settings& settings) {
  if (!fs::is_regular_file(path)) throw SetupError(fmt::format("candidate '{}' does not exist or is not a file", path));
  Candidate c;
  c.path_ = fs::absolute(path).string();
  c.backend_ = backend;
  c.workdir_ = workdir;
  c.limits_ = limits;
  c.settings_ = settings;
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".c") c.kind_ = "c";
  else if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") c.kind_ = "cpp";
  else if (ext == ".cu") c.kind_ = "cu";
  else if (ext == ".so") c.kind_ = "so";
  else throw SetupError(fmt::format("candidate '{}': expected a .c, .cpp, .cu or .so file", path));
  if (c.kind_ != "so" && !backend_named(backend).compile_recipe(c.kind_, settings)) {
    std::string which;
    for (const std::string& name : backend_names())
      if (backend_named(name).compile_recipe(c.kind_, settings)) which += (which.empty() ? "" : " or ") + name;
    throw SetupError(fmt::format("candidate '{}' is {} source, which backend '{}' does not build; use --backend {}", path,
                                 c.kind_ == "cu" ? "CUDA" : c.kind_, backend, which.empty() ? "?" : which));
  }

  // NOTES: every build (plain and sanitized) and every worker use one private, read-only copy,
  // made once here, whose SHA-256 the report carries: the file at the user's path can change
  // between the plain build and the sanitizer gate's rebuild (a generation loop rewriting it, a
  // symlink swapped), and then the gates would judge two different candidates. The copy holds the
  // candidate's directory (within a cap), so that #include "x.h" finds the same headers at every
  // build, and a prebuilt .so its $ORIGIN neighbours (docs/security.md).
  c.copy_ = private_copy(c.path_, (fs::path(workdir) / "candidate-src").string(), workdir);
  if (c.kind_ == "so") {
    c.library_ = c.copy_.file;
    return c;
  }
  c.library_ = (fs::path(workdir) / "candidate.so").string();
  build(compile_command(backend, c.kind_, c.copy_.file, c.library_, false, c.copy_.origin_dir, settings), limits,
        (fs::path(workdir) / "build.log").string(), fmt::format("candidate '{}' does not compile", path));
  return c;
}

Candidate Candidate::kernelbench(const std::string& problem, const std::string& solution, const std::string& python,
                                 const std::string& workdir) {
  for (const auto& [what, p] : {std::pair{"problem", problem}, std::pair{"solution", solution}})
    if (!fs::is_regular_file(p)) throw SetupError(fmt::format("kernelbench {} '{}' does not exist or is not a file", what, p));
  Candidate c;
  c.kind_ = "kernelbench";
  c.path_ = fs::absolute(solution).string();
  c.library_ = c.path_;
  c.problem_ = fs::absolute(problem).string();
  c.problem_copy_ = c.problem_;
  c.python_ = python;
  c.workdir_ = workdir;
  if (workdir.empty()) return c;
  // NOTES: the torch worker imports these copies (uid 65534 reads them where the user's own
  // directories may be closed to it), with their directories: a solution that imports a module
  // beside it (sys.path.insert(0, dirname(__file__)); import cuda_rowsum) finds it in the copy.
  // The problem's directory is copied too, unless it is the solution's (then its copy is there).
  c.copy_ = private_copy(c.path_, (fs::path(workdir) / "candidate-src").string(), workdir);
  c.library_ = c.copy_.file;
  std::error_code ec;
  const fs::path beside = fs::path(c.copy_.file).parent_path() / fs::path(c.problem_).filename();
  if (fs::equivalent(fs::path(c.problem_).parent_path(), fs::path(c.path_).parent_path(), ec) && fs::exists(beside, ec)) {
    c.problem_copy_ = beside.string();
    c.problem_origin_dir_ = c.copy_.origin_dir;
  } else {
    const PrivateCopy p = private_copy(c.problem_, (fs::path(workdir) / "problem-src").string(), workdir);
    c.problem_copy_ = p.file;
    c.problem_origin_dir_ = p.origin_dir;
  }
  return c;
}

Candidate Candidate::kernelbench_expected(const std::string& problem, const std::string& solution,
                                          const std::string& python, const std::string& workdir) {
  Candidate c;
  c.kind_ = "kernelbench";
  c.path_ = fs::absolute(solution).string();
  c.problem_ = fs::absolute(problem).string();
  c.problem_copy_ = c.problem_;
  c.python_ = python;
  c.workdir_ = workdir;
  // Where kernelbench() puts the private copy (private_copy: into/<the file's own name>).
  c.library_ = (fs::path(workdir) / "candidate-src" / fs::path(c.path_).filename()).string();
  return c;
}

std::vector<std::string> Candidate::python_search_path() const {
  std::vector<std::string> dirs;
  for (const std::string& f : {library_, problem_copy_}) dirs.push_back(fs::path(f).parent_path().string());
  for (const std::string& d : {copy_.origin_dir, problem_origin_dir_}) dirs.push_back(d);
  std::vector<std::string> unique;
  for (const auto& d : dirs)
    if (!d.empty() && std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
  return unique;
}

std::string Candidate::sanitized_library() const {
  if (kind_ == "kernelbench") return library_;  // the torch worker builds its extensions sanitized
  if (kind_ == "so" || kind_ == "cu") return {};
  std::lock_guard<std::mutex> lock(*mu_);
  if (sanitized_.empty()) {
    const std::string lib = (fs::path(workdir_) / "candidate-asan.so").string();
    build(compile_command(backend_, kind_, copy_.file, lib, true, copy_.origin_dir, settings_), limits_,
          (fs::path(workdir_) / "build-asan.log").string(),
          fmt::format("candidate '{}' does not build with sanitizers", path_));
    sanitized_ = lib;
  }
  return sanitized_;
}

}  // namespace kcv
