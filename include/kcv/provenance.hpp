/// Provenance (issue 21 item 8): what a report needs to be reproduced and trusted later — the kcv
/// build, the machine, the GPU stack, and the sha256 of the files it judged.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kcv {

/// kcv's version (CMake KCV_VERSION) and the commit it was built from ("<hash>", "<hash>-dirty"
/// when tracked files differed from it, "unknown" outside a git checkout).
const char* kcv_version();
const char* kcv_commit();

/// The SHA-256 (FIPS 180-4) of data, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);
/// The SHA-256 of a file's bytes. Throws SetupError when it cannot be read.
std::string sha256_file(const std::string& path);

/// The machine's side of a report's "provenance": kcv_version, kcv_commit, host (gethostname),
/// backend, and the backend's own (Backend::provenance; cuda: gpu, the driver's model names from
/// /proc/driver/nvidia/gpus, with CUDA_VISIBLE_DEVICES when set; driver, /proc/driver/nvidia/version;
/// cuda, the toolkit kcv was built with). A value that cannot be found is null, never a guess.
nlohmann::json machine_provenance(const std::string& backend);

/// The driver version in the first line of /proc/driver/nvidia/version: the first blank-separated
/// word after "NVRM version:" made of digits and dots with at least one dot ("550.54.15" from
/// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ...", "580.95.05" from the open
/// module's "... Open Kernel Module for x86_64  580.95.05  Release Build ..."); null when the line
/// has none.
nlohmann::json nvidia_driver_version(std::string_view line);

}  // namespace kcv
