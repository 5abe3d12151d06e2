// Records bound to the job: a seal (HMAC-SHA256 under the job's key) over the record's place
// (communicator, boundary) and bytes, so that a record planted in the store, forged, or left by
// another job with other inputs or another key is told from this job's own.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "features/features.h"

namespace dynamiccl::coord {

std::string hex(const Digest& d);

// "DYNAMICCL-SEALED-1\n<hmac hex>\n<bytes>": the HMAC covers the communicator, the boundary and the bytes.
std::string sealRecord(std::string_view key, uint64_t commId, uint64_t boundary, std::string_view bytes);
// The bytes of a record sealed under `key` at this place; nullopt for anything else (unsealed,
// another key, another place, altered).
std::optional<std::string> openSealed(std::string_view key, uint64_t commId, uint64_t boundary, std::string_view record);
// The bytes a sealed record carries, unverified (the record itself when it is not sealed): for
// messages about a record that did not open, and for offline readers of a job's own records.
std::string_view sealedPayload(std::string_view record);

// The job's secret (DYNAMICCL_COORD_TOKEN_FILE), mixed into every seal key so that someone who can
// read and write the store but not this file cannot seal a record: a regular file (a FIFO or device
// is refused without blocking) that neither group nor others may access, of 16..4096 bytes once
// trailing whitespace is dropped. An error is one line naming the file and what to do.
Expected<std::string> readJobToken(const std::string& path);

}  // namespace dynamiccl::coord
