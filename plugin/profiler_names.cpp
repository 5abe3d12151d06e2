#include "plugin/profiler_names.h"

#include <cstring>

namespace dynamiccl::plugin {
namespace {

bool equals(const char* a, const char* b) { return std::strcmp(a, b) == 0; }

// NCCL's spellings (2.28.9 src/collectives.cc), in our enum order.
constexpr const char* kCollNames[kNumCollectives] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                     "AllReduce"};
constexpr const char* kAlgoNames[kNumAlgos] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                               "NVLS", "NVLS_TREE", "PAT"};
constexpr const char* kProtoNames[kNumProtos] = {"LL", "LL128", "SIMPLE"};

struct TypeName {
  const char* name;
  uint64_t size;
};
// ncclDatatypeToString has no name for ncclUint8 ("Unknown"): the only valid type it misses is 1 byte.
constexpr TypeName kTypes[] = {
    {"ncclFloat32", 4},  {"ncclBfloat16", 2}, {"ncclFloat16", 2},  {"ncclInt32", 4},       {"ncclUint32", 4},
    {"ncclInt64", 8},    {"ncclUint64", 8},   {"ncclFloat64", 8},  {"ncclInt8", 1},        {"ncclUint8", 1},
    {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}, {"Unknown", 1},
};
// ncclDataType_t order: Int8 Uint8 Int32 Uint32 Int64 Uint64 Float16 Float32 Float64 Bfloat16 F8e4m3 F8e5m2.
constexpr uint64_t kTypeSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

}  // namespace

std::optional<Collective> collectiveFromNcclName(const char* func) {
  if (!func) return std::nullopt;
  for (int i = 0; i < kNumCollectives; ++i)
    if (equals(func, kCollNames[i])) return static_cast<Collective>(i);
  return std::nullopt;
}

uint64_t typeSizeFromNcclName(const char* datatype) {
  if (!datatype) return 0;
  for (const TypeName& t : kTypes)
    if (equals(datatype, t.name)) return t.size;
  return 0;
}

Algo algoFromNcclName(const char* algo) {
  if (!algo) return Algo::Default;
  for (int i = 0; i < kNumAlgos; ++i)
    if (equals(algo, kAlgoNames[i])) return static_cast<Algo>(i);
  return Algo::Default;
}

Proto protoFromNcclName(const char* proto) {
  if (!proto) return Proto::Default;
  for (int i = 0; i < kNumProtos; ++i)
    if (equals(proto, kProtoNames[i])) return static_cast<Proto>(i);
  return Proto::Default;
}

std::optional<Collective> collectiveFromNcclFunc(unsigned func) {
  if (func < static_cast<unsigned>(kNumCollectives)) return static_cast<Collective>(func);
  return std::nullopt;
}

uint64_t typeSizeFromNcclType(unsigned datatype) {
  return datatype < sizeof kTypeSizes / sizeof kTypeSizes[0] ? kTypeSizes[datatype] : 0;
}

Algo algoFromIndex(unsigned algo) {
  return algo < static_cast<unsigned>(kNumAlgos) ? static_cast<Algo>(algo) : Algo::Default;
}
Proto protoFromIndex(unsigned proto) {
  return proto < static_cast<unsigned>(kNumProtos) ? static_cast<Proto>(proto) : Proto::Default;
}

}  // namespace dynamiccl::plugin
