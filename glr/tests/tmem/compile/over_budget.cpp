// Compiled by ctest (tmem.over_budget_rejected), never built: a config whose TMEM plan is over
// budget must not compile. Chunk 64, two stages, A not aliased onto DV: 256 columns per CTA, two
// CTAs per SM by shared memory, plus two of an overlapped dependent launch: 1024 > 512 columns.
// With -DGLR_TMEM_IN_BUDGET the same file instantiates a supported config and must compile
// (tmem.in_budget_compiles), so the failure above is the budget's and nothing else's.
#include "glr/cuda/sm100/tmem_plan.hpp"

#if defined(GLR_TMEM_IN_BUDGET)
static_assert(glr::cuda::sm100::CheckedPlan<64, 32, 32, 2, true, true>::ok);
#else
static_assert(glr::cuda::sm100::CheckedPlan<64, 32, 32, 2, false, true>::ok);
#endif

int main() { return 0; }
