// The device side of a backend, used only inside kcv-worker: guarded buffers, copies to and from
// the staging memfd, the call itself and synchronization. The parent never touches a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kcv/abi.h"
#include "kcv/protocol.hpp"

namespace kcv {

/// One guarded buffer. data points at the first byte of the span; the guard bands around it hold
/// canary bytes (protocol::canary_byte) after every upload.
struct DeviceBuffer {
  void* data = nullptr;
  int64_t span = 0;        // bytes
  bool is_input = false;
  bool exact = false;      // an allocation of exactly span bytes, no guard bands (CallSpec::exact_buffers)
  /// cpu: the mapping ends with an inaccessible page, `tail` bytes after the span (inputs always,
  /// outputs when fenced); the guard band's bytes from there on are reported as the canary.
  /// cuda: `tail` is the allocation's bytes after the span.
  bool guard_page = false;
  int64_t tail = 0;
  void* base = nullptr;    // backend bookkeeping
  std::size_t reserved = 0;
};

using kcv_run_fn = int (*)(const kcv_call*);

/// Where the plan puts a buffer (issue 25 class 3; src/kcv/isolation/stage.cpp, placement).
struct BufferPlacement {
  bool exact = false;   // its own allocation of exactly its span, no guard bands
  /// -1: kcv's fixed placement. cpu: the first data byte's offset within its page; cuda: the bytes
  /// between the leading guard band and the first data byte (cuda_guarded_lead).
  int64_t offset = -1;
  bool fence = false;   // cpu: an output ends flush against an inaccessible page (as inputs do)
  int64_t tail = 0;     // cuda: the allocation's bytes past the trailing guard band, beside the alignment's
};

/// cuda's guarded buffers (cuda_worker_backend.cu; plain arithmetic, so tests check it on a CPU):
///   fixed:  [guard 4 KiB][span][guard 4 KiB]                     the bounds gate's (and every gate's, before)
///   placed: [guard 4 KiB][canary: offset + pad][span][guard 4 KiB][canary: tail + kCudaPlacedAlign - pad]
/// pad brings the first data byte to a multiple of kCudaPlacedAlign whatever cudaMalloc's base (it
/// guarantees 256 bytes): 0 on a 512-byte aligned base.
inline constexpr int64_t kCudaPlacedAlign = 512;

/// Bytes to cudaMalloc for a guarded buffer of `span` bytes placed as `where` says.
inline int64_t cuda_guarded_reserved(int64_t span, const BufferPlacement& where) {
  const int64_t g = protocol::kGuardBytes;
  if (where.offset < 0) return g + span + g;
  return g + where.offset + kCudaPlacedAlign + span + g + where.tail;
}

/// The first data byte's distance from the allocation's base.
inline int64_t cuda_guarded_lead(uintptr_t base, const BufferPlacement& where) {
  const int64_t g = protocol::kGuardBytes;
  if (where.offset < 0) return g;
  const auto at = static_cast<uintptr_t>(base + static_cast<uintptr_t>(g + where.offset));
  const auto pad = static_cast<int64_t>((kCudaPlacedAlign - at % kCudaPlacedAlign) % kCudaPlacedAlign);
  return g + where.offset + pad;
}

class WorkerBackend {
 public:
  virtual ~WorkerBackend() = default;
  /// An allocation of its own of exactly span bytes, without guard bands (where.exact; cpu: a
  /// malloc, which valgrind and ASan bound), or a guarded one placed as `where` says.
  virtual DeviceBuffer allocate(int64_t span, bool is_input, const BufferPlacement& where) = 0;
  virtual void release(DeviceBuffer& b) = 0;
  /// Writes the span from host bytes (src) and refreshes both guard bands (none for exact buffers).
  virtual void upload(DeviceBuffer& b, const void* src, uint64_t canary_key) = 0;
  /// Copies [guard][span] (+[guard] for outputs) to host memory dst; an exact buffer only its span,
  /// to dst + kGuardBytes.
  virtual void snapshot(const DeviceBuffer& b, void* dst) = 0;
  /// Large tier: the span (contiguous f32) set to protocol::large_tier_value(seed, i); guards refreshed.
  virtual void generate(DeviceBuffer& b, uint64_t seed, uint64_t canary_key) = 0;
  /// The span set to one byte value; guards refreshed.
  virtual void fill(DeviceBuffer& b, unsigned char byte, uint64_t canary_key) = 0;
  /// Copies both guard bands ([guard][guard]) and then the elements at the given byte offsets
  /// (elem_size bytes each) to dst: what comes back of a tensor too large to copy whole.
  virtual void snapshot_sampled(const DeviceBuffer& b, const std::vector<int64_t>& byte_offsets, int64_t elem_size,
                                void* dst) = 0;
  /// Like upload, but the span reaches the buffer only through work on stream(), after a delay:
  /// cuda's concurrency gate (a writer kernel on the caller's stream right before the call). Until
  /// then the buffer holds poison. cpu: a plain upload.
  virtual void upload_through_stream(DeviceBuffer& b, const void* src, uint64_t canary_key) { upload(b, src, canary_key); }
  /// Starts a load kernel on another stream that runs while the next call runs (cuda determinism).
  virtual void start_background_load() {}
  /// The stream handed to the candidate (NULL on cpu).
  virtual void* stream() = 0;
  /// cuda: until told otherwise, stream() is the null handle (the legacy default stream), and
  /// upload_through_stream and synchronize(true) use that stream. cpu: nothing to do.
  virtual void use_null_stream(bool) {}
  /// Waits for the candidate's work: on stream() only (stream_only), or on the whole device.
  virtual void synchronize(bool stream_only) = 0;
  /// A device error that outlives the call (illegal address, trap): the worker must end. Empty if none.
  virtual std::string device_error() { return {}; }
  /// The candidate's code runs on this process's threads and memory (cpu): kcv-worker's fault
  /// handler turns its faults into records, and a pipe probe checks what a call left behind.
  virtual bool runs_on_host() const { return false; }
};

/// The worker side of the backend the plan names (one line per backend, worker/worker_backends.cpp);
/// nullptr when this kcv-worker was built without it.
std::unique_ptr<WorkerBackend> make_worker_backend(const std::string& name);

}  // namespace kcv
