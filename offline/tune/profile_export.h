// Tuned intervals to profiles: our JSON (policy::Profile), NVIDIA's example CSV (policy/), and
// Meta NCCLX-style CSV keyed on bytes per rank. Only tune/ depends on policy/ here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "policy/policy.h"
#include "offline/tune/smoothing.h"

namespace dynamiccl::tune {

// One rule per non-default interval, pinned to the tuned communicator shape (nRanks, nNodes). With
// `measuredAs` (the backend's provenance, fingerprint, NCCL version, date) each rule carries evidence
// with its interval's samples and gain.
policy::Profile toProfile(const std::vector<TunedInterval>& intervals, const std::string& name, int nRanks, int nNodes,
                          const std::optional<policy::Evidence>& measuredAs = std::nullopt);

// NCCLX-style CSV: collective,min_bytes_per_rank,max_bytes_per_rank,algorithm,protocol,channels,
// chunk_bytes,nNodes,nRanks,confidence (-1 wildcards; channels/chunk -1 keep NCCL's). Byte rules
// need a single rank count to convert; rules with a rank range are refused.
Expected<std::string> profileToNcclxCsv(const policy::Profile& profile);
// Reads it back into bytes-per-rank rules.
Expected<policy::Profile> parseNcclxCsv(std::string_view text);

}  // namespace dynamiccl::tune
