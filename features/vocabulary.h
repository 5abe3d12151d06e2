// The vocabulary of a collective call (collective, algorithm, protocol, size bucket, communicator
// shape) shared by every other module. Others include it through features/features.h.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>

#include "features/expected.h"

namespace dynamiccl {

// Values equal NCCL's ncclFunc_t for the tunable collectives.
enum class Collective : int8_t { Broadcast = 0, Reduce = 1, AllGather = 2, ReduceScatter = 3, AllReduce = 4 };
inline constexpr int kNumCollectives = 5;

// Values equal NCCL's algorithm indices into the cost table.
enum class Algo : int8_t {
  Default = -1,  // keep NCCL's choice
  Tree = 0,
  Ring = 1,
  CollNetDirect = 2,
  CollNetChain = 3,
  Nvls = 4,
  NvlsTree = 5,
  Pat = 6,
};
inline constexpr int kNumAlgos = 7;

// Values equal NCCL's protocol indices into the cost table.
enum class Proto : int8_t { Default = -1, LL = 0, LL128 = 1, Simple = 2 };
inline constexpr int kNumProtos = 3;

// Names: lower-case canonical spellings; parsing is case-insensitive and accepts NCCL's spellings
// (e.g. "CollNetDirect", "collnet_direct", "NVLS_TREE", "nvlstree").
std::string_view collectiveName(Collective c);
std::string_view algoName(Algo a);    // "ring", ..., "default"
std::string_view protoName(Proto p);  // "ll", "ll128", "simple", "default"
std::string_view algoNcclName(Algo a);    // NCCL's upper-case name: "RING", "NVLS_TREE", ...
std::string_view protoNcclName(Proto p);  // "LL", "LL128", "SIMPLE"
// NCCL's spelling of a collective (ncclFuncToString: profiler descriptors, TUNING lines). Constexpr so
// the profiler's parser compares against immediates; each name is a literal, so .data() ends in NUL.
inline constexpr std::array<std::string_view, kNumCollectives> kCollectiveNcclNames = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
constexpr std::string_view collectiveNcclName(Collective c) { return kCollectiveNcclNames[static_cast<int>(c)]; }
std::optional<Collective> parseCollective(std::string_view s);
std::optional<Algo> parseAlgo(std::string_view s);  // "default" -> Algo::Default
std::optional<Proto> parseProto(std::string_view s);

constexpr bool isTunable(int ncclFunc) { return ncclFunc >= 0 && ncclFunc < kNumCollectives; }

// Log2 size bucket: 0 for 0 bytes, else floor(log2(n)) + 1, so bucket b holds [2^(b-1), 2^b).
struct SizeBucket {
  static constexpr int kCount = 65;
  static constexpr int of(uint64_t nBytes) { return nBytes == 0 ? 0 : 64 - std::countl_zero(nBytes); }
  static constexpr uint64_t lowest(int bucket) { return bucket == 0 ? 0 : uint64_t{1} << (bucket - 1); }
};

// What a tuner knows of its communicator at init (identical on every rank).
struct CommShape {
  uint64_t commId = 0;  // NCCL's commHash (v5+), 0 before v5
  int nRanks = 0;
  int nNodes = 0;
  int minRanksPerNode = 0;  // from nvlDomainInfo (v5+), 0 when unknown
  int maxRanksPerNode = 0;
};

// Bytes per rank as Meta's NCCLX keys its rules: the per-rank share of NCCL's nBytes.
constexpr uint64_t bytesPerRank(uint64_t nBytes, int nRanks) {
  return nRanks > 0 ? nBytes / static_cast<uint64_t>(nRanks) : nBytes;
}

}  // namespace dynamiccl
