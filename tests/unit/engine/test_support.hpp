// Helpers for engine tests: throwaway candidates written from source text, and running the CLI.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kcv/candidate.hpp"
#include "kcv/runner.hpp"

namespace kcv::test {

/// A temporary directory removed at scope end.
class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "kcv-test-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() { std::error_code ec; std::filesystem::remove_all(path_, ec); }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }
 private:
  std::string path_;
};

/// The build directory's kcv binary.
inline std::string kcv_binary() {
  return std::filesystem::path(default_worker_path(Settings{})).parent_path() / "kcv";
}

/// Runs kcv with args; returns the exit status, output in out.
inline int run_kcv(const std::vector<std::string>& args, std::string& out) {
  std::vector<std::string> argv = {kcv_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_capture(argv, out);
}

/// A correct softmax over any strides (C source) with an extra statement spliced in.
inline std::string softmax_source(const std::string& before_return = "", const std::string& prelude = "") {
  return R"(#include <kcv/abi.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
)" + prelude + R"(
int kcv_run(const kcv_call* c) {
  const kcv_tensor *x = &c->inputs[0], *y = &c->outputs[0];
  long M = x->shape[0], N = x->shape[1];
  const float* xp = (const float*)x->data; float* yp = (float*)y->data;
  for (long i = 0; i < M; ++i) {
    float m = -INFINITY, s = 0;
    for (long j = 0; j < N; ++j) { float v = xp[i*x->stride[0]+j*x->stride[1]]; m = (v > m || v != v) ? v : m; }
    for (long j = 0; j < N; ++j) s += expf(xp[i*x->stride[0]+j*x->stride[1]] - m);
    for (long j = 0; j < N; ++j) yp[i*N+j] = expf(xp[i*x->stride[0]+j*x->stride[1]] - m) / s;
  }
  )" + before_return + R"(
  return 0;
}
)";
}

}  // namespace kcv::test
