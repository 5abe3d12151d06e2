// Which library loaded the plugin (NCCL or AMD's RCCL) and what that host does with a tuner: the one
// home of each host's rules (shared/RCCL_FACTS.md; docs/HOSTS.md), read by the plugin at init and by
// its tests. Header-only, no allocation.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "abi/pick_rule.h"

namespace dynamiccl::abi {

enum class Host : uint8_t { Nccl, Rccl };

struct HostRules {
  Host host = Host::Nccl;
  const char* name = "NCCL";
  // Cost-table shapes (numAlgo x numProto) the host hands getCollInfo; any other is left alone.
  // Whatever the shape, only algorithms 0-6 and protocols 0-2 (NCCL's) are read or written.
  int minAlgos = DYNAMICCL_NCCL_NUM_ALGORITHMS, maxAlgos = DYNAMICCL_NCCL_NUM_ALGORITHMS;
  int minProtos = DYNAMICCL_NCCL_NUM_PROTOCOLS, maxProtos = DYNAMICCL_NCCL_NUM_PROTOCOLS;
  // The chosen cell must be the table's only 0.0: RCCL's own protocol override runs after the tuner
  // unless the minimum is exactly 0.0, whatever its tie rule; so every other 0 moves to FLT_MIN.
  bool uniqueZero = false;
  // A tuner's nChannels is a total after the host's own multiplier (RCCL's WarpSpeed), while
  // NCCL_MIN/MAX_NCHANNELS are base counts: never derive one from the other.
  bool channelsAreTotals = false;
  // Whether the host's chunking ever calls getChunkSize (RCCL's does not; its adapters pass NULL).
  bool callsGetChunkSize = true;
  // RCCL_OVERRIDE_ALGO / RCCL_OVERRIDE_PROTO apply after the tuner.
  bool overridesAfterTuner = false;
};

inline constexpr HostRules kNcclRules{};
inline constexpr HostRules kRcclRules{
    .host = Host::Rccl,
    .name = "RCCL",
    .minAlgos = 7,
    .maxAlgos = 8,  // one development tree adds a DIRECT_A2A algorithm (index 7, never ours)
    .minProtos = 3,
    .maxProtos = 4,  // rocm-systems @fffe3fe8: generalTable[7][4], NCCL_PROTO_NAN = 3
    .uniqueZero = true,
    .channelsAreTotals = true,
    .callsGetChunkSize = false,
    .overridesAfterTuner = true,
};

constexpr const HostRules& rulesOf(Host h) { return h == Host::Rccl ? kRcclRules : kNcclRules; }
constexpr bool acceptsShape(const HostRules& r, int numAlgo, int numProto) {
  return numAlgo >= r.minAlgos && numAlgo <= r.maxAlgos && numProto >= r.minProtos && numProto <= r.maxProtos;
}

// RCCL's selection by its version code: 2.31 copied NCCL 2.31's ncclTuningCompute (negative costs
// not skipped, nChannels a cap); before it, the 2.28-era enqueue (strict minimum over entries >= 0).
constexpr PickRule pickRuleFor(Host h, int versionCode) {
  if (h == Host::Nccl) return pickRuleFor(versionCode);
  return versionCode >= 23100 ? PickRule::Nccl2_31 : PickRule::Nccl2_28;
}

// Which tuner symbols an RCCL release looks up, newest first (RCCL_FACTS.md section 1); the first
// entry 0 ends a list. Releases before 2.20.5 load no tuner; 2.20.5 looks up only v1, which this
// library does not export.
struct RcclLoader {
  int versionCode;
  int symbols[6];
};
inline constexpr RcclLoader kRcclLoaders[] = {
    {22005, {1, 0}},
    {22105, {2, 0}},
    {22606, {4, 3, 2, 0}},
    {22707, {4, 3, 2, 0}},
    {22803, {5, 0}},
    {23000, {6, 5, 4, 3, 2, 0}},
    {23102, {6, 5, 4, 3, 2, 0}},
};

// "nccl" or "rccl" (any case); nullopt for anything else.
inline std::optional<Host> parseHost(std::string_view s) {
  auto lower = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if ((a[i] | 0x20) != b[i]) return false;
    return true;
  };
  if (lower(s, "nccl")) return Host::Nccl;
  if (lower(s, "rccl")) return Host::Rccl;
  return std::nullopt;
}
constexpr const char* hostName(Host h) { return rulesOf(h).name; }

}  // namespace dynamiccl::abi
