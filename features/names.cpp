// Name tables for collectives, algorithms and protocols (case-insensitive parsing).
#include "features/vocabulary.h"

#include <algorithm>
#include <string>

namespace dynamiccl {
namespace {

// Lower-case and drop '_' / '-' / ' ' so "NVLS_TREE", "nvlstree" and "NvlsTree" compare equal; ASCII
// only and without allocating: profiles of 60k rules parse three names per rule at first init.
bool sameName(std::string_view a, std::string_view b) {
  auto skip = [](char ch) { return ch == '_' || ch == '-' || ch == ' '; };
  auto lower = [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; };
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a.size() && skip(a[i])) ++i;
    while (j < b.size() && skip(b[j])) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (lower(a[i++]) != lower(b[j++])) return false;
  }
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
  for (size_t i = 0; i < N; ++i)  // the name as written first: no two names are the same name
    if (names[i] == s) return static_cast<int>(i);
  for (size_t i = 0; i < N; ++i)
    if (sameName(names[i], s)) return static_cast<int>(i);
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
  if (sameName(s, "default")) return Algo::Default;
  if (auto i = find(kAlgoNames, s)) return static_cast<Algo>(*i);
  return std::nullopt;
}

std::optional<Proto> parseProto(std::string_view s) {
  if (sameName(s, "default")) return Proto::Default;
  if (auto i = find(kProtoNames, s)) return static_cast<Proto>(*i);
  return std::nullopt;
}

}  // namespace dynamiccl
