// Name tables for collectives, algorithms and protocols (case-insensitive parsing).
#include "features/vocabulary.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace dynamiccl {
namespace {

// Lower-case and drop '_' / '-' so "NVLS_TREE", "nvlstree" and "NvlsTree" compare equal.
std::string canonical(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    if (ch == '_' || ch == '-' || ch == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return out;
}

constexpr std::array<std::string_view, kNumCollectives> kCollNames = {
    "broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
constexpr std::array<std::string_view, kNumAlgos> kAlgoNames = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, kNumAlgos> kAlgoNccl = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
constexpr std::array<std::string_view, kNumProtos> kProtoNames = {"ll", "ll128", "simple"};
constexpr std::array<std::string_view, kNumProtos> kProtoNccl = {"LL", "LL128", "SIMPLE"};

template <size_t N>
std::optional<int> find(const std::array<std::string_view, N>& names, std::string_view s) {
  const std::string key = canonical(s);
  for (size_t i = 0; i < N; ++i)
    if (canonical(names[i]) == key) return static_cast<int>(i);
  return std::nullopt;
}

}  // namespace

std::string_view collectiveName(Collective c) { return kCollNames[static_cast<int>(c)]; }
std::string_view algoName(Algo a) { return a == Algo::Default ? "default" : kAlgoNames[static_cast<int>(a)]; }
std::string_view protoName(Proto p) { return p == Proto::Default ? "default" : kProtoNames[static_cast<int>(p)]; }
std::string_view algoNcclName(Algo a) { return a == Algo::Default ? "DEFAULT" : kAlgoNccl[static_cast<int>(a)]; }
std::string_view protoNcclName(Proto p) { return p == Proto::Default ? "DEFAULT" : kProtoNccl[static_cast<int>(p)]; }

std::optional<Collective> parseCollective(std::string_view s) {
  if (auto i = find(kCollNames, s)) return static_cast<Collective>(*i);
  return std::nullopt;
}

std::optional<Algo> parseAlgo(std::string_view s) {
  if (canonical(s) == "default") return Algo::Default;
  if (auto i = find(kAlgoNames, s)) return static_cast<Algo>(*i);
  return std::nullopt;
}

std::optional<Proto> parseProto(std::string_view s) {
  if (canonical(s) == "default") return Proto::Default;
  if (auto i = find(kProtoNames, s)) return static_cast<Proto>(*i);
  return std::nullopt;
}

}  // namespace dynamiccl
