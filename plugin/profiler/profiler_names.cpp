#include "plugin/profiler/profiler_names.h"

#include <atomic>
#include <utility>

namespace dynamiccl::plugin {
namespace {

// s == name, unrolled against the literal's bytes (immediates, no call, no table walk). Stops at the
// first difference, so it never reads past the end of s (a shorter s differs at its NUL).
template <size_t N>
[[gnu::always_inline]] inline bool is(const char* s, const char (&name)[N]) {
#pragma GCC unroll 16
  for (size_t i = 0; i < N; ++i)
    if (s[i] != name[i]) return false;
  return true;
}

// ncclDataType_t order: Int8 Uint8 Int32 Uint32 Int64 Uint64 Float16 Float32 Float64 Bfloat16 F8e4m3 F8e5m2.
constexpr uint64_t kTypeSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

// s == NCCL's name of C, from the vocabulary's constexpr table, as one && chain against immediates.
// Stops at the first difference (a shorter s differs at its NUL), so it never reads past the end of s.
template <Collective C, size_t... I>
[[gnu::always_inline]] inline bool isCollective(const char* s, std::index_sequence<I...>) {
  constexpr std::string_view name = collectiveNcclName(C);
  return ((s[I] == name[I]) && ...) && s[sizeof...(I)] == '\0';
}
template <Collective C>
[[gnu::always_inline]] inline bool isCollective(const char* s) {
  return isCollective<C>(s, std::make_index_sequence<collectiveNcclName(C).size()>{});
}

}  // namespace

// Checked most frequent first; the first bytes reject most of the others.
std::optional<Collective> collectiveFromNcclName(const char* func) {
  if (!func) return std::nullopt;
  if (isCollective<Collective::AllReduce>(func)) return Collective::AllReduce;
  if (isCollective<Collective::AllGather>(func)) return Collective::AllGather;
  if (isCollective<Collective::ReduceScatter>(func)) return Collective::ReduceScatter;
  if (isCollective<Collective::Broadcast>(func)) return Collective::Broadcast;
  if (isCollective<Collective::Reduce>(func)) return Collective::Reduce;
  return std::nullopt;
}

// NCCL's spellings (2.28.9 src/collectives.cc).
uint64_t typeSizeFromNcclName(const char* datatype) {
  if (!datatype) return 0;
  if (is(datatype, "ncclFloat32")) return 4;
  if (is(datatype, "ncclBfloat16")) return 2;
  if (is(datatype, "ncclFloat16")) return 2;
  if (is(datatype, "ncclInt32")) return 4;
  if (is(datatype, "ncclUint32")) return 4;
  if (is(datatype, "ncclInt64")) return 8;
  if (is(datatype, "ncclUint64")) return 8;
  if (is(datatype, "ncclFloat64")) return 8;
  if (is(datatype, "ncclInt8")) return 1;
  if (is(datatype, "ncclUint8")) return 1;
  if (is(datatype, "ncclFloat8e4m3")) return 1;
  if (is(datatype, "ncclFloat8e5m2")) return 1;
  // ncclDatatypeToString has no name for ncclUint8 ("Unknown"): the only valid type it misses is 1 byte.
  if (is(datatype, "Unknown")) return 1;
  return 0;
}

Algo algoFromNcclName(const char* algo) {
  if (!algo) return Algo::Default;
  if (is(algo, "RING")) return Algo::Ring;
  if (is(algo, "TREE")) return Algo::Tree;
  if (is(algo, "NVLS")) return Algo::Nvls;
  if (is(algo, "NVLS_TREE")) return Algo::NvlsTree;
  if (is(algo, "PAT")) return Algo::Pat;
  if (is(algo, "COLLNET_DIRECT")) return Algo::CollNetDirect;
  if (is(algo, "COLLNET_CHAIN")) return Algo::CollNetChain;
  return Algo::Default;
}

Proto protoFromNcclName(const char* proto) {
  if (!proto) return Proto::Default;
  if (is(proto, "SIMPLE")) return Proto::Simple;
  if (is(proto, "LL128")) return Proto::LL128;
  if (is(proto, "LL")) return Proto::LL;
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

namespace {
constexpr unsigned kVariants = 64;
constexpr size_t kVariantChars = 32;
struct VariantSlot {
  std::atomic<const char*> key{nullptr};
  std::atomic<bool> ready{false};
  char name[kVariantChars] = {};
};
constinit VariantSlot gVariants[kVariants];
}  // namespace

uint8_t internKernelVariant(const char* name) {
  if (!name) return 0;
  for (unsigned i = 0; i < kVariants; ++i) {
    VariantSlot& s = gVariants[i];
    const char* k = s.key.load(std::memory_order_acquire);
    if (k == name) return static_cast<uint8_t>(i + 1);
    if (k == nullptr && s.key.compare_exchange_strong(k, name, std::memory_order_acq_rel)) {
      size_t n = 0;
      for (; n + 1 < kVariantChars && name[n]; ++n) s.name[n] = name[n];
      s.name[n] = '\0';
      s.ready.store(true, std::memory_order_release);
      return static_cast<uint8_t>(i + 1);
    }
    if (k == name) return static_cast<uint8_t>(i + 1);  // claimed by a racing start for the same name
  }
  return 255;
}

const char* kernelVariantName(uint8_t id) {
  if (id == 255) return "(other)";
  if (id == 0 || id > kVariants) return "";
  const VariantSlot& s = gVariants[id - 1];
  return s.ready.load(std::memory_order_acquire) ? s.name : "";
}

}  // namespace dynamiccl::plugin
