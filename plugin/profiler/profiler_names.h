// Decoding the names NCCL puts in Coll descriptors (v2+) and the numbers of v1, without allocating:
// these run on NCCL's threads inside startEvent.
#pragma once

#include <cstdint>
#include <optional>

#include "features/features.h"

namespace dynamiccl::plugin {

std::optional<Collective> collectiveFromNcclName(const char* func);  // "AllReduce"; nullopt for p2p etc.
uint64_t typeSizeFromNcclName(const char* datatype);               // "ncclFloat32" -> 4; 0 unknown
Algo algoFromNcclName(const char* algo);                           // "NVLS_TREE"; Default if unknown
Proto protoFromNcclName(const char* proto);                        // "LL128"; Default if unknown

std::optional<Collective> collectiveFromNcclFunc(unsigned func);  // v1: ncclFunc_t
uint64_t typeSizeFromNcclType(unsigned datatype);                  // v1: ncclDataType_t
Algo algoFromIndex(unsigned algo);
Proto protoFromIndex(unsigned proto);

// v7 kernel variants: a small id per distinct name pointer NCCL passes (its names are static strings),
// the text copied once on first sight. Lock-free, no allocation; 255 when the table is full, 0 for null.
uint8_t internKernelVariant(const char* name);
// The name of a symmetric kernel variant as NCCL spelled it (at most 31 characters); "" for 0 or unknown.
const char* kernelVariantName(uint8_t id);

}  // namespace dynamiccl::plugin
