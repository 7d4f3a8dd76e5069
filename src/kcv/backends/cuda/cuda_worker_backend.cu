// cuda backend (worker side). Every buffer is one cudaMalloc: [canary 4 KiB][span][canary 4 KiB]
// in kcv's fixed placement (the bounds gate's), or, placed (issue 25 class 3), its first byte a
// seeded offset past the leading guard band and the allocation's end a seeded distance past the
// trailing one (backend.hpp, cuda_guarded_lead). Canaries fill the allocation outside the span,
// written from the host on every upload; the 4 KiB on each side are read back with the span in
// every snapshot. For calls made as production makes them (CallSpec::exact_buffers), a cudaMalloc
// of exactly the span, nothing around it. The candidate gets a stream created with cudaStreamNonBlocking
// (work it puts on the legacy default stream or on a stream of its own is not ordered after our
// writer kernel, gate 11), or the null handle (CallSpec::null_stream): then the writer kernel and
// the stream-only synchronize use the legacy default stream.
#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kcv/backends/backend.hpp"
#include "kcv/protocol.hpp"

namespace kcv {
namespace {

#define KCV_CUDA_CHECK(expr)                                                                         \
  do {                                                                                               \
    cudaError_t kcv_err_ = (expr);                                                                   \
    if (kcv_err_ != cudaSuccess)                                                                     \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #expr ": " + \
                               cudaGetErrorName(kcv_err_) + ": " + cudaGetErrorString(kcv_err_));   \
  } while (0)

/// Spins for about `ns` nanoseconds of device time (globaltimer), then returns.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

__global__ void generate_kernel(float* out, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = protocol::large_tier_value(seed, i);
}

// NOTES: the writer waits long enough (20 ms) that a candidate kernel racing it on another stream
// certainly starts before the data lands, and reads the poison instead.
constexpr unsigned long long kWriterDelayNs = 20ull * 1000 * 1000;
constexpr unsigned long long kLoadNs = 30ull * 1000 * 1000;

class CudaWorkerBackend final : public WorkerBackend {
 public:
  CudaWorkerBackend() {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
      throw std::runtime_error(std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none found"));
    KCV_CUDA_CHECK(cudaSetDevice(0));
    KCV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    KCV_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    KCV_CUDA_CHECK(cudaStreamCreateWithFlags(&load_, cudaStreamNonBlocking));
    KCV_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, 0));
  }

  DeviceBuffer allocate(int64_t span, bool is_input, const BufferPlacement& where) override {
    DeviceBuffer b;
    b.span = span;
    b.is_input = is_input;
    if (where.exact) {
      // NOTES: what a plain caller's cudaMalloc gives: cuMemGetAddressRange reports this very
      // pointer and size, and memcheck's bounds are the span's.
      void* p = nullptr;
      if (span > 0) KCV_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(span)));
      b.exact = true;
      b.base = b.data = p;
      b.reserved = static_cast<std::size_t>(span);
      return b;
    }
    // NOTES: kcv's fixed placement put every buffer 4 KiB past its base and 4 KiB before its end;
    // a candidate asking the driver for its output's allocation (cuMemGetAddressRange) could tell.
    b.reserved = static_cast<std::size_t>(cuda_guarded_reserved(span, where));
    void* p = nullptr;
    KCV_CUDA_CHECK(cudaMalloc(&p, b.reserved));
    const int64_t lead = cuda_guarded_lead(reinterpret_cast<uintptr_t>(p), where);
    b.base = p;
    b.data = static_cast<char*>(p) + lead;
    b.tail = static_cast<int64_t>(b.reserved) - lead - span;
    return b;
  }

  void release(DeviceBuffer& b) override {
    if (b.base) cudaFree(b.base);
    b = DeviceBuffer{};
  }

  void upload(DeviceBuffer& b, const void* src, uint64_t key) override {
    if (b.exact) {
      if (b.span > 0) copy_in(b.data, src, static_cast<std::size_t>(b.span));
      return;
    }
    std::vector<unsigned char> host = guarded_image(b, src, key);
    copy_in(b.base, host.data(), host.size());
  }

  void generate(DeviceBuffer& b, uint64_t seed, uint64_t key) override {
    refresh_guards(b, key);
    generate_kernel<<<sms_ * 8, 256, 0, copy_>>>(static_cast<float*>(b.data), b.span / 4, seed);
    KCV_CUDA_CHECK(cudaGetLastError());
    KCV_CUDA_CHECK(cudaStreamSynchronize(copy_));
  }

  void fill(DeviceBuffer& b, unsigned char byte, uint64_t key) override {
    refresh_guards(b, key);
    KCV_CUDA_CHECK(cudaMemsetAsync(b.data, byte, static_cast<std::size_t>(b.span), copy_));
    KCV_CUDA_CHECK(cudaStreamSynchronize(copy_));
  }

  void snapshot_sampled(const DeviceBuffer& b, const std::vector<int64_t>& offsets, int64_t elem_size,
                        void* dst) override {
    const int64_t g = protocol::kGuardBytes;
    auto* out = static_cast<unsigned char*>(dst);
    const auto* data = static_cast<const unsigned char*>(b.data);
    if (!b.exact) {
      KCV_CUDA_CHECK(cudaMemcpyAsync(out, data - g, static_cast<std::size_t>(g), cudaMemcpyDeviceToHost, copy_));
      KCV_CUDA_CHECK(cudaMemcpyAsync(out + g, data + b.span, static_cast<std::size_t>(g), cudaMemcpyDeviceToHost, copy_));
    }
    for (std::size_t k = 0; k < offsets.size(); ++k)
      KCV_CUDA_CHECK(cudaMemcpyAsync(out + 2 * g + static_cast<int64_t>(k) * elem_size, data + offsets[k],
                                     static_cast<std::size_t>(elem_size), cudaMemcpyDeviceToHost, copy_));
    KCV_CUDA_CHECK(cudaStreamSynchronize(copy_));
  }

  void upload_through_stream(DeviceBuffer& b, const void* src, uint64_t key) override {
    // The buffer first holds poison (0xFF bytes: NaN); the real span waits in a scratch buffer and
    // reaches the buffer by a copy on the caller's stream behind a spinning kernel.
    std::vector<unsigned char> poison(static_cast<std::size_t>(b.span), 0xFF);
    upload(b, poison.data(), key);
    void* scratch = nullptr;
    KCV_CUDA_CHECK(cudaMalloc(&scratch, static_cast<std::size_t>(b.span) + 1));
    scratch_.push_back(scratch);
    copy_in(scratch, src, static_cast<std::size_t>(b.span));
    spin_kernel<<<1, 1, 0, current()>>>(kWriterDelayNs);
    KCV_CUDA_CHECK(cudaGetLastError());
    KCV_CUDA_CHECK(cudaMemcpyAsync(b.data, scratch, static_cast<std::size_t>(b.span), cudaMemcpyDeviceToDevice, current()));
  }

  void start_background_load() override {
    spin_kernel<<<sms_, 128, 0, load_>>>(kLoadNs);
    KCV_CUDA_CHECK(cudaGetLastError());
  }

  void snapshot(const DeviceBuffer& b, void* dst) override {
    // NOTES: on our own non-blocking stream, so the copy waits for nothing the candidate left
    // running elsewhere: unfinished work shows as unfinished.
    void* to = b.exact ? static_cast<unsigned char*>(dst) + protocol::kGuardBytes : dst;
    const void* from = b.exact ? b.base : static_cast<const char*>(b.data) - protocol::kGuardBytes;
    const auto n = static_cast<std::size_t>(b.exact ? b.span : protocol::snapshot_bytes(b.span));
    if (n > 0) KCV_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToHost, copy_));
    KCV_CUDA_CHECK(cudaStreamSynchronize(copy_));
  }

  void* stream() override { return null_stream_ ? nullptr : stream_; }

  void use_null_stream(bool on) override { null_stream_ = on; }

  void synchronize(bool stream_only) override {
    // NOTES: the null handle's stream is the legacy default stream (cudaStreamLegacy): a
    // candidate's work on a non-blocking stream of its own is not ordered before this wait.
    cudaError_t e = cudaStreamSynchronize(current());
    if (e == cudaSuccess && !stream_only) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      error_ = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
      return;
    }
    // A launch error the candidate did not collect is not sticky: clear it, the outputs tell.
    (void)cudaGetLastError();
    for (void* s : scratch_) cudaFree(s);
    scratch_.clear();
  }

  std::string device_error() override { return error_; }

 private:
  /// The whole allocation as it is uploaded: the span, canary bytes everywhere else (each byte's
  /// canary counted from the first data byte, as the guard reports are).
  std::vector<unsigned char> guarded_image(const DeviceBuffer& b, const void* src, uint64_t key) const {
    const int64_t lead = static_cast<const char*>(b.data) - static_cast<const char*>(b.base);
    const auto reserved = static_cast<int64_t>(b.reserved);
    std::vector<unsigned char> host(b.reserved);
    for (int64_t i = 0; i < lead; ++i) host[static_cast<std::size_t>(i)] = protocol::canary_byte(key, i - lead);
    std::memcpy(host.data() + lead, src, static_cast<std::size_t>(b.span));
    for (int64_t i = lead + b.span; i < reserved; ++i)
      host[static_cast<std::size_t>(i)] = protocol::canary_byte(key, i - lead);
    return host;
  }

  /// The stream the candidate's calls go to: ours, or the legacy default stream.
  cudaStream_t current() const { return null_stream_ ? cudaStreamLegacy : stream_; }

  void refresh_guards(DeviceBuffer& b, uint64_t key) {
    if (b.exact) return;
    const int64_t g = protocol::kGuardBytes;
    std::vector<unsigned char> pre(static_cast<std::size_t>(g)), post(static_cast<std::size_t>(g));
    for (int64_t i = 0; i < g; ++i) {
      pre[static_cast<std::size_t>(i)] = protocol::canary_byte(key, i - g);
      post[static_cast<std::size_t>(i)] = protocol::canary_byte(key, b.span + i);
    }
    copy_in(static_cast<char*>(b.data) - g, pre.data(), pre.size());
    copy_in(static_cast<char*>(b.data) + b.span, post.data(), post.size());
  }

  void copy_in(void* dst, const void* src, std::size_t n) {
    KCV_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, copy_));
    KCV_CUDA_CHECK(cudaStreamSynchronize(copy_));
  }

  cudaStream_t stream_ = nullptr, copy_ = nullptr, load_ = nullptr;
  int sms_ = 1;
  bool null_stream_ = false;
  std::vector<void*> scratch_;
  std::string error_;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_cuda_worker_backend() { return std::make_unique<CudaWorkerBackend>(); }

}  // namespace kcv
