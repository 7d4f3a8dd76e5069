// cpu backend (worker side): each guarded buffer is its own anonymous mapping.
//   outputs: [canary >= 4 KiB][span][canary >= 4 KiB]   or, fenced, [canary][span][canary < 64 B][PROT_NONE page]
//   inputs:  [canary >= 4 KiB][span][canary < 1 page][PROT_NONE page]
// kcv's fixed placement (the bounds gate's) starts outputs on a page boundary and ends inputs flush
// against their PROT_NONE page, so an over-read traps at once; elsewhere the plan gives each
// buffer's first byte a page offset of its own (issue 25 class 3). An exact buffer is a malloc of
// exactly its span, whose bounds valgrind and ASan know (the sanitizer gate).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
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
  bool runs_on_host() const override { return true; }
  DeviceBuffer allocate(int64_t span, bool is_input, const BufferPlacement& where) override {
    const std::size_t page = page_size(), guard = protocol::kGuardBytes, n = static_cast<std::size_t>(span);
    DeviceBuffer b;
    b.span = span;
    b.is_input = is_input;
    if (where.exact) {
      b.exact = true;
      b.base = b.data = std::malloc(n > 0 ? n : 1);
      if (!b.data) throw std::runtime_error("malloc failed");
      return b;
    }
    // lead: bytes from the mapping's start to the first data byte, at least the guard band.
    auto lead_for = [&](int64_t at) {
      const std::size_t want = static_cast<std::size_t>(at) % page;
      return guard + (want + page - guard % page) % page;
    };
    b.guard_page = is_input || where.fence;
    std::size_t lead, body;
    if (b.guard_page) {
      // NOTES: kcv's fixed placement ends an input flush against the PROT_NONE page; a placed
      // input ends where its page offset puts it, the rest of its page canary; a fenced output
      // starts 64-byte aligned (outputs were never less aligned, and only the layout gate may
      // hand a kernel a misaligned buffer) and ends within 63 bytes of the page: flush when its
      // span is a multiple of 64 bytes.
      if (where.offset >= 0 && !where.fence) {
        lead = lead_for(where.offset);
        body = round_up(lead + n, page);
      } else {
        body = round_up(guard + n, page);
        lead = where.fence ? (body - n) / 64 * 64 : body - n;
      }
      b.reserved = body + page;
    } else {
      lead = where.offset >= 0 ? lead_for(where.offset) : guard;
      body = lead + n;
      b.reserved = round_up(body + guard, page);
    }
    void* m = mmap(nullptr, b.reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    if (b.guard_page && mprotect(static_cast<char*>(m) + body, page, PROT_NONE) != 0)
      throw std::runtime_error("mprotect failed");
    b.base = m;
    b.data = static_cast<char*>(m) + lead;
    b.tail = static_cast<int64_t>(b.guard_page ? body - lead - n : b.reserved - lead - n);
    return b;
  }

  void release(DeviceBuffer& b) override {
    if (b.exact) std::free(b.base);
    else if (b.base) munmap(b.base, b.reserved);
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
    if (!b.exact) {
      std::memcpy(out, data - g, static_cast<std::size_t>(g));
      trailing_guard(b, out + g);
    }
    for (std::size_t k = 0; k < offsets.size(); ++k)
      std::memcpy(out + 2 * g + static_cast<int64_t>(k) * elem_size, data + offsets[k], static_cast<std::size_t>(elem_size));
  }

  void snapshot(const DeviceBuffer& b, void* dst) override {
    const int64_t g = protocol::kGuardBytes;
    auto* out = static_cast<unsigned char*>(dst);
    if (b.exact) {
      std::memcpy(out + g, b.data, static_cast<std::size_t>(b.span));
      return;
    }
    std::memcpy(out, static_cast<const char*>(b.data) - g, static_cast<std::size_t>(g + b.span));
    trailing_guard(b, out + g + b.span);
  }

  void* stream() override { return nullptr; }
  void synchronize(bool) override {}

 private:
  /// The guard band after the span as it is: its real bytes up to the PROT_NONE page, the canary
  /// it stands for beyond (nothing can change an inaccessible page).
  void trailing_guard(const DeviceBuffer& b, unsigned char* out) const {
    const int64_t g = protocol::kGuardBytes, real = b.guard_page ? std::min(b.tail, g) : g;
    std::memcpy(out, static_cast<const char*>(b.data) + b.span, static_cast<std::size_t>(real));
    for (int64_t i = real; i < g; ++i) out[i] = protocol::canary_byte(key_, b.span + i);
  }

  /// Canary bytes everywhere in the mapping outside the span (up to the PROT_NONE page).
  void refresh_guards(DeviceBuffer& b, uint64_t key) {
    key_ = key;
    if (b.exact) return;
    char* data = static_cast<char*>(b.data);
    char* lo = static_cast<char*>(b.base);
    char* hi = data + b.span + b.tail;
    for (char* p = lo; p < data; ++p) *p = static_cast<char>(protocol::canary_byte(key, p - data));
    for (char* p = data + b.span; p < hi; ++p) *p = static_cast<char>(protocol::canary_byte(key, p - data));
  }

  uint64_t key_ = 0;
};

}  // namespace

std::unique_ptr<WorkerBackend> make_cpu_worker_backend() { return std::make_unique<CpuWorkerBackend>(); }

}  // namespace kcv
