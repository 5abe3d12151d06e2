// The learned policy's input encoding, shared by offline training and the plugin's evaluator so
// both see the same numbers. Changing it means a new kFeatureEncodingVersion.
#pragma once

#include <cstdint>
#include <span>

#include "features/topology_fingerprint.h"
#include "features/workload_context.h"

namespace dynamiccl {

enum class Collective : int8_t;
enum class Algo : int8_t;
enum class Proto : int8_t;

inline constexpr int kFeatureEncodingVersion = 1;
inline constexpr int kContextFeatures = 18;  // size, collective, topology, workload
inline constexpr int kConfigFeatures = 12;   // algo, proto, channels

// Size features: log2 of the call's bytes and of its bytes per rank (0 bytes -> 0).
double log2Bytes(uint64_t nBytes);

void encodeContext(const TopologyFingerprint& fp, Collective coll, uint64_t nBytes, const WorkloadContext& wl,
                   std::span<float, kContextFeatures> out);
// nChannels 0 = NCCL's own channel count.
void encodeConfig(Algo algo, Proto proto, int nChannels, std::span<float, kConfigFeatures> out);

}  // namespace dynamiccl
