// Positive control: the chunked fp32 glr fwd (chunk 64: inter-chunk state pass + intra-chunk
// matrices, masking by select, exp arguments <= 0) for contract glr_fwd and its _scalar twin
// (the gate form follows g's rank). The algorithm lives in include/glr/cpu_chunked.hpp.
#include <kcv/abi.h>
#include <glr/cpu_candidate.hpp>

KCV_DECLARE_ABI_VERSION;

extern "C" int kcv_run(const kcv_call* call) { return glr::cpu::candidate_fwd(call, /*varlen=*/false); }
