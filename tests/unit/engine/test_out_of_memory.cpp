// Gates whose failing cases ran out of device or host memory say so (GateReport::out_of_memory): the
// phrases are recognized, run_gate sets the flag only on a case that did not pass, and the flag
// survives the JSON report (absent when false) and shows in JUnit.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kcv/engine.hpp"
#include "kcv/report.hpp"
#include "kcv/runner.hpp"
#include "test_support.hpp"

namespace kcv {
namespace {

TEST(OutOfMemory, RecognizesTorchRuntimeSanitizerAndLibraryPhrases) {
  // What the workers printed on an H200 shared by 14 verifications.
  EXPECT_TRUE(mentions_out_of_memory(
      "Traceback (most recent call last):\n  File \"solution.py\", line 40, in forward\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
      "139.72 GiB of which 1.06 GiB is free.\n"));
  EXPECT_TRUE(mentions_out_of_memory(
      "========= Program hit cudaErrorMemoryAllocation (error 2) due to \"out of memory\" on CUDA API call to "
      "cudaMalloc.\n"));
  EXPECT_TRUE(mentions_out_of_memory("refused (rc 1): OutOfMemoryError: CUDA out of memory. Tried to allocate"));
  EXPECT_TRUE(mentions_out_of_memory("RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be"));
  EXPECT_TRUE(mentions_out_of_memory("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                                            "`cublasCreate(handle)`"));
  EXPECT_TRUE(mentions_out_of_memory("cuDNN error: CUDNN_STATUS_ALLOC_FAILED"));
  EXPECT_TRUE(mentions_out_of_memory(std::string("worker killed by ") + kUnsentSigkill + " before finishing"));
}

TEST(OutOfMemory, RecognizesADeviceTooFullForAnotherContext) {
  // What two reference controls' setup errors said on an H100 shared by 14 verifications (session 40):
  // the cuda worker's context and torch's, each refused where others got cudaErrorMemoryAllocation.
  EXPECT_TRUE(mentions_out_of_memory("kcv: ../src/kcv/backends/cuda/cuda_worker_backend.cu:58: cudaSetDevice(0): "
                                     "cudaErrorDevicesUnavailable: CUDA-capable device(s) is/are busy or unavailable"));
  EXPECT_TRUE(mentions_out_of_memory("kcv: problem 'level3/15_DenseNet121.py': Model does not run at its own sizes: "
                                     "AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"));
  EXPECT_TRUE(mentions_out_of_memory("cuCtxCreate: CUDA_ERROR_DEVICES_UNAVAILABLE"));
  // No device at all is not a full one.
  EXPECT_FALSE(mentions_out_of_memory("cudaErrorNoDevice: no CUDA-capable device is detected"));
  EXPECT_FALSE(mentions_out_of_memory("RuntimeError: Found no NVIDIA driver on your system."));
}

TEST(OutOfMemory, IgnoresOtherErrors) {
  EXPECT_FALSE(mentions_out_of_memory(""));
  EXPECT_FALSE(mentions_out_of_memory("IndexError: index 512 is out of range"));
  EXPECT_FALSE(mentions_out_of_memory("std::out_of_range: vector::_M_range_check"));
  EXPECT_FALSE(mentions_out_of_memory(
      "========= Invalid __global__ read of size 4 bytes\n=========     at k(float*)+0x70\n"));
  EXPECT_FALSE(mentions_out_of_memory("RuntimeError: CUDA error: an illegal memory access was encountered"));
  EXPECT_FALSE(mentions_out_of_memory("cuda out of memory"));  // case-sensitive
  EXPECT_FALSE(mentions_out_of_memory("worker killed by SIGABRT (Aborted)"));
}

TEST(OutOfMemory, FindsThePhraseAtTheEndOfAMultiMegabyteLog) {
  std::string log;
  while (log.size() < (std::size_t{8} << 20)) log += "CUDA kernel launched: grid (1024, 1, 1) block (256, 1, 1)\n";
  EXPECT_FALSE(mentions_out_of_memory(log));
  log += "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n";
  EXPECT_TRUE(mentions_out_of_memory(log));
}

/// Runs the numerics gate of softmax over a candidate (a correct softmax with `before_return`
/// spliced in before its return) and returns the report.
Report verify_numerics(const std::string& before_return, double timeout_s = 10) {
  test::TempDir dir;
  VerifyOptions o;
  o.op = "softmax";
  o.candidate = dir.file("cand.c", test::softmax_source(before_return));
  o.gates = {"numerics"};
  o.seed = 11;
  o.timeout_s = timeout_s;
  return verify(o);
}

bool any_out_of_memory(const Report& r) {
  for (const auto& g : r.gates)
    if (g.out_of_memory) return true;
  return false;
}

TEST(OutOfMemory, AGateIsFlaggedWhenACaseThatDidNotPassRanOutOfDeviceMemory) {
  // A crash whose worker log says out of memory.
  Report r = verify_numerics(R"(fputs("RuntimeError: CUDA error: out of memory\n", stderr); abort();)");
  ASSERT_EQ(r.gates[0].id, "numerics");
  EXPECT_EQ(r.gates[0].verdict, Verdict::crash) << r.gates[0].evidence;
  EXPECT_TRUE(r.gates[0].out_of_memory) << r.gates[0].evidence;
  // A clean refusal whose message (the evidence, not the log) says so.
  r = verify_numerics(R"(snprintf(c->error, c->error_len, "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"); return 1;)");
  EXPECT_EQ(r.gates[0].verdict, Verdict::refused) << r.gates[0].evidence;
  EXPECT_TRUE(r.gates[0].out_of_memory) << r.gates[0].evidence;
  // A non-zero return after printing it.
  r = verify_numerics(R"(fputs("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n", stderr); return 3;)");
  EXPECT_NE(r.gates[0].verdict, Verdict::pass) << r.gates[0].evidence;
  EXPECT_TRUE(r.gates[0].out_of_memory) << r.gates[0].evidence;
}

TEST(OutOfMemory, ASigkillIsTheHostRunningOutOfMemoryOnlyWhenTheHostCountedAnOomKill) {
  // What the kernel's out-of-memory killer does to a worker (session 7, dmesg on the H200) is a
  // SIGKILL kcv did not send while the host's oom_kill count grew; unknown counts stay cautious.
  EXPECT_TRUE(oom_kill_possible(3, 4));
  EXPECT_TRUE(oom_kill_possible(-1, 4));
  EXPECT_TRUE(oom_kill_possible(3, -1));
  EXPECT_FALSE(oom_kill_possible(3, 3));
  EXPECT_NE(std::string(kUnsentSigkill).find("out-of-memory"), std::string::npos);
}

TEST(OutOfMemory, ASigkillFromInsideTheSandboxIsNotTheHostRunningOutOfMemory) {
  // The candidate's own SIGKILL (issue 25): a crash named as such, never flagged as memory.
  Report r = verify_numerics("kill(getpid(), SIGKILL);");
  EXPECT_EQ(r.gates[0].verdict, Verdict::crash) << r.gates[0].evidence;
  EXPECT_NE(r.gates[0].evidence.find("from inside its sandbox"), std::string::npos) << r.gates[0].evidence;
  EXPECT_EQ(r.gates[0].evidence.find(kUnsentSigkill), std::string::npos) << r.gates[0].evidence;
  EXPECT_FALSE(r.gates[0].out_of_memory) << r.gates[0].evidence;
  // kcv's own SIGKILL at a timeout is a TIMEOUT, not the host's memory.
  r = verify_numerics("for (;;) {}", 1);
  EXPECT_EQ(r.gates[0].verdict, Verdict::timeout) << r.gates[0].evidence;
  EXPECT_EQ(r.gates[0].evidence.find("did not send"), std::string::npos) << r.gates[0].evidence;
  EXPECT_FALSE(r.gates[0].out_of_memory) << r.gates[0].evidence;
  // Another signal is named as before.
  r = verify_numerics("kill(getpid(), SIGTERM);");
  EXPECT_EQ(r.gates[0].verdict, Verdict::crash) << r.gates[0].evidence;
  EXPECT_NE(r.gates[0].evidence.find("SIGTERM"), std::string::npos) << r.gates[0].evidence;
  EXPECT_FALSE(r.gates[0].out_of_memory) << r.gates[0].evidence;
}

TEST(OutOfMemory, ASigkillUnderComputeSanitizerIsItsExitStatusNineAfterItsOwnErrorLine) {
  // compute-sanitizer 2026 on the H200 (session 7): a torch program that reached the GPU, then
  // killed by SIGKILL, and the same program calling os._exit(9).
  const std::string killed =
      "========= COMPUTE-SANITIZER\ncuda up\n========= Error: process didn't terminate successfully\n"
      "========= Target application returned an error\n"
      "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
  const std::string exited =
      "========= COMPUTE-SANITIZER\n========= Target application returned an error\n"
      "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
  const int exit9 = 9 << 8, exit3 = 3 << 8, sigkill = SIGKILL, sigsegv = SIGSEGV;  // wait statuses
  ASSERT_TRUE(WIFEXITED(exit9) && WEXITSTATUS(exit9) == 9 && WIFSIGNALED(sigkill) && WTERMSIG(sigkill) == SIGKILL);
  EXPECT_TRUE(killed_by_sigkill(exit9, true, killed));
  EXPECT_FALSE(killed_by_sigkill(exit9, true, exited));
  EXPECT_FALSE(killed_by_sigkill(exit9, false, killed));   // not under the tool: a plain exit(9)
  EXPECT_FALSE(killed_by_sigkill(exit3, true, killed));
  EXPECT_TRUE(killed_by_sigkill(sigkill, false, ""));
  EXPECT_FALSE(killed_by_sigkill(sigsegv, false, ""));
}

TEST(OutOfMemory, NoGateIsFlaggedWithoutOutOfMemoryOrWhenTheCasesPass) {
  // A crash that says nothing about memory.
  Report r = verify_numerics("abort();");
  EXPECT_EQ(r.gates[0].verdict, Verdict::crash) << r.gates[0].evidence;
  EXPECT_FALSE(any_out_of_memory(r));
  // A correct candidate.
  r = verify_numerics("");
  EXPECT_EQ(r.gates[0].verdict, Verdict::pass) << r.gates[0].evidence;
  EXPECT_FALSE(any_out_of_memory(r));
  // A correct candidate that prints the phrase: its cases pass, so nothing is flagged.
  r = verify_numerics(R"(fputs("torch.OutOfMemoryError: CUDA out of memory (retried, fine)\n", stderr);)");
  EXPECT_EQ(r.gates[0].verdict, Verdict::pass) << r.gates[0].evidence;
  EXPECT_FALSE(any_out_of_memory(r));
}

TEST(OutOfMemory, SurvivesTheJsonReportAndIsAbsentWhenFalse) {
  Report r;
  r.op = "softmax";
  r.candidate = "cand.c";
  r.seed = 5;
  GateReport oom;
  oom.id = "numerics";
  oom.verdict = Verdict::crash;
  oom.evidence = "case 0 (seed 0): worker exited with status 1 before finishing";
  oom.failing_case = 0;
  oom.out_of_memory = true;
  GateReport clean;
  clean.id = "shapes";
  clean.verdict = Verdict::fail;
  clean.failing_case = 2;
  r.gates = {oom, clean};

  const nlohmann::json j = report_to_json(r);
  EXPECT_EQ(j["gates"][0].value("out_of_memory", false), true);
  EXPECT_FALSE(j["gates"][1].contains("out_of_memory")) << j["gates"][1].dump();
  // Through text, as a report file is read back.
  const Report back = report_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.gates.size(), 2u);
  EXPECT_TRUE(back.gates[0].out_of_memory);
  EXPECT_FALSE(back.gates[1].out_of_memory);
  EXPECT_EQ(back.gates[0].verdict, Verdict::crash);

  const std::string junit = report_to_junit(r);
  EXPECT_EQ(junit.find("[out of memory]"), junit.rfind("[out of memory]")) << junit;
  EXPECT_NE(junit.find("[out of memory]"), std::string::npos) << junit;
}

}  // namespace
}  // namespace kcv
