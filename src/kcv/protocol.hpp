// The parent <-> worker protocol, specified in docs/protocol.md (the golden records and plan in
// tests/protocol/ are checked on both sides). Shared by kcv's isolation core (src/kcv/isolation/)
// and kcv-worker; contains no reference code. In short:
//
// fd 3 (both ways): a memfd. Bytes [0, 8) hold the plan's offset, [8, 16) its length; the plan
//   (JSON) sits after the staging area (from kHeaderBytes on): input bytes and output poison the
//   worker uploads before a call, and snapshot slots the worker fills after it (offsets in the
//   plan are absolute).
// fd 4 (worker -> parent): text records, one per line: loading | ready | fatal <hex> |
//   build_log <hex path> | start <call> | done <call> <rc> <seconds> <hex message> | recheck <call> |
//   tamper <call> <hex> | fault in|out <call> <arg> <offset> | fault unknown | fault device <hex> |
//   bye | idle. After each `done` the worker waits for one byte from kcv (kGo).
// fd 5 (parent -> worker, only when the plan says "session": true): a unix socket. After its last
//   call such a worker says `idle` (not `bye`) and waits there for the next batch: one byte
//   carrying the next memfd (SCM_RIGHTS), after which it maps that plan and says `ready` again.
//   End of file ends it. The torch worker keeps sessions (its start costs seconds); kcv-worker
//   never gets the flag.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#if defined(__CUDACC__)
#define KCV_HOST_DEVICE __host__ __device__
#else
#define KCV_HOST_DEVICE
#endif

namespace kcv::protocol {

inline constexpr int kDataFd = 3;
/// The records (a unix stream socket): the worker writes its text records; after each `done` it
/// waits for one byte from kcv (kGo), which kcv sends once it has looked for what the call left
/// behind (docs/security.md): nothing the candidate started can run on unseen in between.
inline constexpr int kResultFd = 4;
inline constexpr char kGo = 'g';
inline constexpr int kSessionFd = 5;
/// Canary bytes on each side of every buffer (DESIGN §5: at least 4 KiB).
inline constexpr int64_t kGuardBytes = 4096;
/// Header at the start of the memfd: plan offset and plan length (two uint64).
inline constexpr int64_t kHeaderBytes = 64;

/// The canary byte at position pos relative to a buffer's first data byte (negative: before it).
/// Keyed per run, so a candidate cannot restore a guard by writing a constant.
inline uint8_t canary_byte(uint64_t key, int64_t pos) {
  uint64_t x = key ^ (static_cast<uint64_t>(pos) * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return static_cast<uint8_t>(x);
}

/// Snapshot layout of every buffer: [guard][span][guard]. (A cpu input's trailing guard is an
/// inaccessible page: nothing can change it, and the worker reports it as the canary it stands for.)
inline int64_t snapshot_bytes(int64_t span) { return kGuardBytes + span + kGuardBytes; }

/// Large-tier inputs are generated where they live (no staging of 2^31+ elements): element i of
/// an input with generator seed s is this value, bit-identical on host and device. Uniform in
/// [-2, 2) on a 2^-22 grid, exact in f32.
KCV_HOST_DEVICE inline float large_tier_value(uint64_t seed, int64_t i) {
  uint64_t x = seed ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
  return static_cast<float>(static_cast<int32_t>((x >> 40) & 0xFFFFFF)) * (1.0f / 4194304.0f) - 2.0f;
}

inline std::string hex_encode(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2 + 1);
  for (unsigned char c : s) { out += d[c >> 4]; out += d[c & 15]; }
  return out.empty() ? std::string("-") : out;
}

inline std::string hex_decode(std::string_view s) {
  if (s == "-") return {};
  auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (std::size_t i = 0; i + 1 < s.size(); i += 2) out += static_cast<char>(v(s[i]) * 16 + v(s[i + 1]));
  return out;
}

}  // namespace kcv::protocol
