// Positive control (issue 21 item 1): the chunked fp32 glr backward of include/glr/cpu_chunked.hpp in
// chunks of 16 steps instead of 64 (dg by the chunk-local identity over 16 steps). Any chunk size is a
// legitimate evaluation order: it must pass nonfinite like chunk 64, and every value kind — the error
// model admits chunks of up to glr::kMaxChunk = 256 steps (docs/glr.md, *The exp-argument term*).
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) { return glr::cpu::candidate_bwd(call, /*varlen=*/false, /*chunk=*/16); }
