// What kcv's on-disk caches share (the reference cache, the build cache; docs/kernelbench.md): a
// directory that is kcv's alone, used only where kcv is root, so that no candidate's worker (uid
// 65534 then) can read or write it.
#pragma once

#include <sys/stat.h>

#include <initializer_list>
#include <string>

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

}  // namespace kcv
