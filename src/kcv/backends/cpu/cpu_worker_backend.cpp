// cpu backend (worker side): each buffer is its own anonymous mapping.
//   outputs: [canary >= 4 KiB][span][canary >= 4 KiB]
//   inputs:  [canary >= 4 KiB][span][PROT_NONE page]   — an over-read traps at once.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "kcv/backends/backend.hpp"
#include "kcv/protocol.hpp"

namespace kcv {
namespace {

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
std::size_t round_up(std::size_t x, std::size_t m) { return (x + m - 1) / m * m; }

class CpuWorkerBackend final : public WorkerBackend {
 public:
  DeviceBuffer allocate(int64_t span, bool is_input, bool /*exact: cuda only*/) override {
    const std::size_t page = page_size(), guard = protocol::kGuardBytes;
    DeviceBuffer b;
    b.span = span;
    b.is_input = is_input;
    if (is_input) {
      // NOTES: the span ends exactly where the PROT_NONE page begins.
      const std::size_t body = round_up(guard + span, page);
      b.reserved = body + page;
      void* m = mmap(nullptr, b.reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
      if (mprotect(static_cast<char*>(m) + body, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
      b.base = m;
      b.data = static_cast<char*>(m) + body - span;
    } else {
      b.reserved = round_up(guard + span + guard, page);
      void* m = mmap(nullptr, b.reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
      b.base = m;
      b.data = static_cast<char*>(m) + guard;
    }
    return b;
  }

  void release(DeviceBuffer& b) override {
    if (b.base) munmap(b.base, b.reserved);
    b = DeviceBuffer{};
  }

  void upload(DeviceBuffer& b, const void* src, uint64_t key) override {
    refresh_guards(b, key);
    std::memcpy(b.data, src, static_cast<std::size_t>(b.span));
  }

  void generate(DeviceBuffer& b, uint64_t seed, uint64_t key) override {
    refresh_guards(b, key);
    auto* p = static_cast<float*>(b.data);
    const int64_t n = b.span / static_cast<int64_t>(sizeof(float));
    for (int64_t i = 0; i < n; ++i) {
      const float v = protocol::large_tier_value(seed, i);
      std::memcpy(p + i, &v, sizeof v);
    }
  }

  void fill(DeviceBuffer& b, unsigned char byte, uint64_t key) override {
    refresh_guards(b, key);
    std::memset(b.data, byte, static_cast<std::size_t>(b.span));
  }

  void snapshot_sampled(const DeviceBuffer& b, const std::vector<int64_t>& offsets, int64_t elem_size,
                        void* dst) override {
    const int64_t g = protocol::kGuardBytes;
    auto* out = static_cast<unsigned char*>(dst);
    const auto* data = static_cast<const unsigned char*>(b.data);
    std::memcpy(out, data - g, static_cast<std::size_t>(g));
    if (b.is_input) {
      for (int64_t i = 0; i < g; ++i) out[g + i] = protocol::canary_byte(key_, b.span + i);
    } else {
      std::memcpy(out + g, data + b.span, static_cast<std::size_t>(g));
    }
    for (std::size_t k = 0; k < offsets.size(); ++k)
      std::memcpy(out + 2 * g + static_cast<int64_t>(k) * elem_size, data + offsets[k], static_cast<std::size_t>(elem_size));
  }

  void snapshot(const DeviceBuffer& b, void* dst) override {
    const int64_t g = protocol::kGuardBytes;
    auto* out = static_cast<unsigned char*>(dst);
    if (!b.is_input) {
      std::memcpy(out, static_cast<const char*>(b.data) - g, static_cast<std::size_t>(protocol::snapshot_bytes(b.span)));
      return;
    }
    std::memcpy(out, static_cast<const char*>(b.data) - g, static_cast<std::size_t>(g + b.span));
    for (int64_t i = 0; i < g; ++i) out[g + b.span + i] = protocol::canary_byte(key_, b.span + i);
  }

  void* stream() override { return nullptr; }
  void synchronize(bool) override {}

 private:
  /// Canary bytes everywhere in the mapping outside the span (up to the PROT_NONE page of an input).
  void refresh_guards(DeviceBuffer& b, uint64_t key) {
    key_ = key;
    char* data = static_cast<char*>(b.data);
    char* lo = static_cast<char*>(b.base);
    char* hi = b.is_input ? data + b.span : lo + b.reserved;
    for (char* p = lo; p < data; ++p) *p = static_cast<char>(protocol::canary_byte(key, p - data));
    for (char* p = data + b.span; p < hi; ++p) *p = static_cast<char>(protocol::canary_byte(key, p - data));
  }

  uint64_t key_ = 0;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_cpu_worker_backend() { return std::make_unique<CpuWorkerBackend>(); }

}  // namespace kcv
