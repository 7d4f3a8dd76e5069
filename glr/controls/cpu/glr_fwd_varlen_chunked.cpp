// Positive control: the chunked fp32 glr fwd (chunk 64: inter-chunk state pass + intra-chunk
// matrices, masking by select, exp arguments <= 0) for contract glr_fwd_varlen and its _scalar twin
// (the gate form follows g's rank), and their _bf16/_f16 variants (the dtype follows q's: 16-bit
// inputs widened exactly, fp32 inside, 16-bit outputs rounded once to nearest even). The
// algorithm lives in include/glr/cpu_chunked.hpp.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) { return glr::cpu::candidate_fwd(call, /*varlen=*/true); }
