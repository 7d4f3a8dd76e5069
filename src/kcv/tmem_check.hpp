/// The static TMEM check of a Blackwell (sm_100) candidate (issue 20, item 4): from the PTX that
/// nvcc emits for sm_100a and ptxas's resource report, per kernel entry, the tensor-memory columns
/// it allocates, the CTAs one SM can hold by the CUDA occupancy rules, whether every path
/// deallocates and relinquishes, and, for cta_group::2, whether a cluster barrier separates an
/// allocation from the dealloc that could otherwise run before the peer CTA's allocation.
/// It reads the binary only: no GPU. docs/blackwell.md says what it proves and what it cannot.
#pragma once

#include <string>
#include <vector>

namespace kcv::tmem {

/// pass: proven within budget and safe; fail: a budget or a path rule provably broken; open: no
/// rule broken, but the budget is not determined from the binary (a column count or a launch
/// quantity it cannot see), said with the numbers that would decide it.
enum class Outcome { pass, fail, open };
const char* outcome_name(Outcome o);

/// The sm_100 (compute capability 10.0) limits the residency arithmetic uses.
struct SmLimits {
  int tmem_columns = 512;            // per SM (128 lanes x 512 columns x 32 bit)
  int threads_per_sm = 2048;
  int ctas_per_sm = 32;
  int regs_per_sm = 65536;           // in 4 sub-partitions of 16384
  int reg_granularity = 256;         // registers allocated per warp, rounded up to this
  int sub_partitions = 4;
  long smem_per_sm = 233472;         // 228 KiB, the largest carveout
  long smem_reserved_per_cta = 1024;
  long smem_granularity = 128;
  long smem_per_cta_max = 232448;    // 227 KiB, opt-in
};

/// One kernel entry's findings.
struct KernelTmem {
  std::string name;
  Outcome outcome = Outcome::pass;
  bool uses_tmem = false;            // holds a tcgen05.alloc
  int cta_group = 1;                 // 2 when any alloc is cta_group::2
  int columns = 0;                   // columns one CTA can hold at once (sum of its alloc sites); -1: not determined
  int regs = -1;                     // ptxas: registers per thread (-1: not reported)
  long static_smem = -1;             // ptxas: static shared memory bytes
  int threads = 0;                   // .reqntid/.maxntid threads per CTA (0: not declared)
  bool dynamic_smem = false;         // the entry uses extern (dynamic) shared memory
  int ctas_min = 0, ctas_max = 0;    // co-resident CTAs per SM over what the launch may choose
  std::string evidence;              // one line: the numbers, and the rule broken (if any)
};

struct Report {
  Outcome outcome = Outcome::pass;   // the worst over kernels (fail > open > pass)
  std::vector<KernelTmem> kernels;   // every entry that holds a tcgen05.alloc
  std::string evidence;              // one line for the gate's report
};

/// Co-resident CTAs of one kernel on one SM (cuda_occupancy.h's rules: warps, registers per
/// sub-partition at 256-register granularity, shared memory at 128-byte granularity plus 1 KiB
/// reserved per CTA, 32 CTAs); 0 when one CTA does not fit.
int resident_ctas(int threads, int regs, long smem_bytes, const SmLimits& sm = {});

/// Checks sm_100a PTX (every .entry) with ptxas -v's report for it (registers, static shared
/// memory per entry; may be empty: registers then count as 0, i.e. residency at its most).
Report check_ptx(const std::string& ptx, const std::string& ptxas_report, const SmLimits& sm = {});

/// Compiles a .cu candidate for sm_100a into workdir (nvcc -ptx, then ptxas -v; files kept there)
/// and checks it. Throws SetupError when it does not compile for sm_100a.
Report check_source(const std::string& cu, const std::string& workdir, const std::vector<std::string>& include_dirs);

/// Whether a .cu candidate gets the check: its build targets sm_100-family (arch "100a", "103a",
/// "100f", ...) or its source names tcgen05.
bool applies(const std::string& source_text, const std::string& cuda_arch);

}  // namespace kcv::tmem
