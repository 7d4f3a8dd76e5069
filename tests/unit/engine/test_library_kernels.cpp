// kLibraryKernels: the kernels of torch's libraries that compute-sanitizer's memcheck, racecheck
// and synccheck leave uninstrumented for torch candidates. It must match the libraries' kernels
// and none of the names solutions give their own.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "kcv/runner.hpp"

namespace kcv {
namespace {

bool library_kernel(const std::string& name) { return std::regex_search(name, std::regex(kLibraryKernels)); }

TEST(LibraryKernels, MatchesTheKernelsOfTorchCudnnAndCublas) {
  // Names as profilers and compute-sanitizer print them (demangled or mangled).
  for (const char* name : {
           "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
           "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_T1_",
           "void cudnn::cnn::conv2d_grouped_direct_kernel<float>",
           "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1",
           "nvjet_tst_128x64_64x8_2x1_v_bz_TNT",
           "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>",
           "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>",
           "void RNN_blockPersist_fp_LSTM<float, float, float, 128, 1, 0>",
           "void RNN_blockPersist_bp_GRU<float, float, float, 128>",
           "void elemWiseRNNcell<float, float, float, (cudnnRNNMode_t)2, (cudnnRNNBiasMode_t)2>",
       })
    EXPECT_TRUE(library_kernel(name)) << name;
}

TEST(LibraryKernels, LeavesTheSolutionsOwnKernelsInstrumented) {
  // Kernel names of KernelBench leaderboard solutions (lb100) and of this project's controls.
  for (const char* name : {
           "fused_add_relu_kernel", "matmul_kernel", "_Z13softmax_kernelPKfPfii", "lstm_cell_kernel",
           "rnn_forward_kernel", "conv2d_naive_kernel", "native_layernorm_kernel", "add_oob_write",
       })
    EXPECT_FALSE(library_kernel(name)) << name;
}

}  // namespace
}  // namespace kcv
