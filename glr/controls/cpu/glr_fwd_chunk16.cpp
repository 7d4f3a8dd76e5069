// Positive control (issue 21 item 1): the chunked fp32 glr forward of include/glr/cpu_chunked.hpp in
// chunks of 16 steps instead of 64. Any chunk size is a legitimate evaluation order: with an infinity
// injected mid-chunk its masked intra-chunk sum adds several infinite terms of mixed sign (NaN or
// ±Inf, either legitimate), so it must pass nonfinite like chunk 64.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) { return glr::cpu::candidate_fwd(call, /*varlen=*/false, /*chunk=*/16); }
