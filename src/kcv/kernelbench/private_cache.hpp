// What kcv's on-disk caches share (the reference cache, the build cache; docs/kernelbench.md): a
// directory that is kcv's alone, used only where kcv is root, so that no candidate's worker (uid
// 65534 then) can read or write it.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kcv/settings.hpp"

namespace kcv {

/// Why kcv cannot keep a cache here ("" when it can): not root, so a worker keeps kcv's uid and
/// could reach the cache; `risk` says what it would do there.
std::string private_cache_refusal(const std::string& risk);

/// Makes dir (mode 0700) and checks that it is a directory of kcv's uid closed to others (an
/// open one is closed); returns its absolute path. Throws SetupError naming `what` ("reference
/// cache") when it cannot, or when another uid owns it.
std::string open_private_cache_dir(const std::string& dir, const std::string& what);

/// The SHA-256 of the named files of the torch adapters (kcv_adapters_dir/torch/), each by name
/// and content: what an entry's answers or builds depend on of kcv's own code.
std::string torch_adapters_hash(const Settings& settings, std::initializer_list<const char*> files);

/// Whether st is kcv's uid's and closed to others (no group or other permission bits).
bool kcv_private(const struct stat& st);

/// How much a cache may hold on disk, and the room it makes for one more entry (issue 24; the
/// reference cache reached 29 GB of a 64 GiB disk after 26 leaderboard pairs on the H200).
/// NOTES: the limit is the smaller of the cap (the whole directory) and the file system's reserve
/// (free space the cache never takes: max(1 GiB, 5% of the file system), for the builds and
/// scratch that share the disk). Room is made by removing the least recently used entries (oldest
/// mtime: a read touches its entry). Verifiers running side by side each check before they write,
/// so the directory can pass the cap by at most what they write at once.
struct CacheSpace {
  int64_t held = 0;        // bytes of the cache's files now
  int64_t free = 0;        // bytes the file system has free for kcv
  int64_t capacity = 0;    // bytes of the whole file system
};

/// The reserve above: max(1 GiB, capacity / 20).
int64_t cache_reserve_bytes(int64_t capacity);
/// The cap when none is set: half of what the cache could grow to, (free + held) / 2; the same for
/// every verifier of a run, however far the cache has grown, while nothing else fills the disk.
int64_t default_cache_cap_bytes(const CacheSpace& space);
/// Bytes to remove so that an entry of `incoming` bytes fits under cap with the reserve kept;
/// -1 when no removal can make it fit (the entry alone is over the cap, or the reserve would be
/// crossed even with the cache empty).
int64_t cache_bytes_to_free(const CacheSpace& space, int64_t incoming, int64_t cap);

/// One file of a cache directory (dir/<2 hex>/<name><suffix>).
struct CacheFile {
  std::string path;
  int64_t bytes = 0;        // allocated on disk
  int64_t mtime_ns = 0;
};
/// Every regular file one level below dir whose name ends in suffix, oldest mtime first.
std::vector<CacheFile> cache_files(const std::string& dir, const std::string& suffix);
/// The space of dir's file system and what its files ending in suffix hold.
CacheSpace cache_space(const std::string& dir, const std::string& suffix);

}  // namespace kcv
