// The TMEM instructions the compile-only controls of kcv's TMEM check use (tests/unit/tmem_check).
// Each control is a tiny sm_100a kernel that kcv only compiles and reads; none of them is run.
#pragma once
#include <cstdint>

#define TMEM_ALLOC(group, slot, cols)                                                                          \
  asm volatile("tcgen05.alloc.cta_group::" #group ".sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(          \
                   static_cast<uint32_t>(__cvta_generic_to_shared(slot))),                                     \
               "r"(cols)                                                                                       \
               : "memory")
#define TMEM_RELINQUISH(group) asm volatile("tcgen05.relinquish_alloc_permit.cta_group::" #group ".sync.aligned;" ::: "memory")
#define TMEM_DEALLOC(group, taddr, cols) \
  asm volatile("tcgen05.dealloc.cta_group::" #group ".sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(cols) : "memory")
#define CLUSTER_SYNC() asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory")
