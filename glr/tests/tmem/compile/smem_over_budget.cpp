// Compiled by ctest (tmem.smem_over_budget_rejected), never built: a config whose shared memory
// exceeds the 227 KiB a CTA may opt into must not compile. K ≤ 256 with an operand ring of 12
// slots: 110592 bytes of fp32 tiles + 12 × 12288 of ring = 258048 > 232448. (12 slots are also
// outside the planned 2..4, and that assert fires too; the test matches the shared-memory one.)
// With -DGLR_TMEM_IN_BUDGET the same file instantiates the deepest planned ring at the largest K
// bucket (159824 bytes) and must compile (tmem.smem_in_budget_compiles).
#include "glr/cuda/sm100/tmem_plan.hpp"

#if defined(GLR_TMEM_IN_BUDGET)
static_assert(glr::cuda::sm100::CheckedPlan<64, 256, 32, 2, true, true, glr::cuda::sm100::kPipeStagesMax>::ok);
#else
static_assert(glr::cuda::sm100::CheckedPlan<64, 256, 32, 2, true, true, 12>::ok);
#endif

int main() { return 0; }
