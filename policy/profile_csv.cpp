// NVIDIA's example tuner CSV (plugins/tuner/example, nccl_tuner.conf), read and written.
#include <charconv>
#include <sstream>
#include <tuple>

#include "policy/profile.h"

namespace dynamiccl::policy {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// NVIDIA's files may pad fields with spaces.
std::vector<std::string> splitFields(std::string_view line) {
  std::vector<std::string> out = splitCsvRecord(line);
  for (std::string& field : out) field = std::string(trim(field));
  return out;
}

bool parseI64(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parseU64(std::string_view s, uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// -1 is the CSV wildcard for nNodes / nRanks / numPipeOps / regBuff.
Expected<std::pair<int, int>> wildcardOrValue(std::string_view s, const char* what, int lo, int hi) {
  int64_t v = 0;
  if (!parseI64(s, v)) return makeError(std::string(what) + " \"" + std::string(s) + "\" is not an integer");
  if (v == -1) return std::pair<int, int>{-1, -1};
  if (v < lo || v > hi) return makeError(std::string(what) + " must be -1 or in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return std::pair<int, int>{static_cast<int>(v), static_cast<int>(v)};
}

}  // namespace

Expected<Profile> parseNvidiaCsv(std::string_view text) {
  if (text.size() > kMaxProfileBytes)
    return makeError("CSV text is " + std::to_string(text.size()) + " bytes, over the " +
                     std::to_string(kMaxProfileBytes) + " byte limit");
  Profile profile;
  profile.userRules = true;
  std::istringstream in{std::string(text)};
  std::string raw;
  int lineNo = 0;
  while (std::getline(in, raw)) {
    ++lineNo;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = "line " + std::to_string(lineNo);
    const auto f = splitFields(line);
    if (f.size() < 8 || f.size() > 10)
      return makeError(where + ": expected 8 to 10 comma-separated fields, got " + std::to_string(f.size()));
    Rule rule;
    rule.origin = where;
    auto coll = parseCollective(f[0]);
    if (!coll) return makeError(where + ": unknown collective \"" + std::string(f[0]) + "\"");
    rule.collective = *coll;
    if (!parseU64(f[1], rule.minBytes) || !parseU64(f[2], rule.maxBytes))
      return makeError(where + ": min_bytes and max_bytes must be non-negative integers");
    if (rule.minBytes > rule.maxBytes) return makeError(where + ": min_bytes > max_bytes");
    auto algo = parseAlgo(f[3]);
    if (!algo || *algo == Algo::Default) return makeError(where + ": unknown algorithm \"" + std::string(f[3]) + "\"");
    auto proto = parseProto(f[4]);
    if (!proto || *proto == Proto::Default) return makeError(where + ": unknown protocol \"" + std::string(f[4]) + "\"");
    rule.decision.algo = *algo;
    rule.decision.proto = *proto;
    int64_t channels = 0;
    if (!parseI64(f[5], channels) || channels < -1 || channels == 0 || channels > kMaxChannels)
      return makeError(where + ": channels must be -1 (keep NCCL's) or 1.." + std::to_string(kMaxChannels));
    rule.decision.nChannels = channels == -1 ? 0 : static_cast<int>(channels);
    auto nodes = wildcardOrValue(f[6], "nNodes", 1, INT_MAX);
    if (!nodes) return makeError(where + ": " + nodes.error());
    if (nodes->first != -1) std::tie(rule.minNodes, rule.maxNodes) = *nodes;
    auto ranks = wildcardOrValue(f[7], "nRanks", 1, INT_MAX);
    if (!ranks) return makeError(where + ": " + ranks.error());
    if (ranks->first != -1) std::tie(rule.minRanks, rule.maxRanks) = *ranks;
    if (f.size() > 8) {
      auto pipe = wildcardOrValue(f[8], "numPipeOps", 1, kMaxPipeOps);
      if (!pipe) return makeError(where + ": " + pipe.error());
      rule.numPipeOps = pipe->first;
    }
    if (f.size() > 9) {
      auto reg = wildcardOrValue(f[9], "regBuff", 0, 1);
      if (!reg) return makeError(where + ": " + reg.error());
      rule.regBuff = reg->first;
    }
    profile.rules.push_back(std::move(rule));
  }
  return profile;
}

bool nvidiaCsvCanSay(const Rule& r) {
  // Neither bytes-per-rank keys, node/rank ranges, "keep algo/proto" nor NCCL's protocol.
  if (r.decision.keepsAlgoProto() || r.decision.leavesProtoToNccl() || r.sizeKey != SizeKey::Bytes) return false;
  return (r.minNodes == r.maxNodes || (r.minNodes == 1 && r.maxNodes == INT_MAX)) &&
         (r.minRanks == r.maxRanks || (r.minRanks == 1 && r.maxRanks == INT_MAX));
}

std::string profileToNvidiaCsv(const Profile& profile) {
  std::ostringstream out;
  out << "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n";
  if (!profile.name.empty()) out << "# from DynamICCL profile " << profile.name << "\n";
  for (const Rule& r : profile.rules) {
    if (!nvidiaCsvCanSay(r)) continue;
    const int nodes = r.maxNodes == INT_MAX ? -1 : r.minNodes;
    const int ranks = r.maxRanks == INT_MAX ? -1 : r.minRanks;
    for (int c = 0; c < kNumCollectives; ++c) {
      if (r.collective && static_cast<int>(*r.collective) != c) continue;
      out << collectiveName(Collective(c)) << ',' << r.minBytes << ',' << r.maxBytes << ',' << algoName(r.decision.algo)
          << ',' << protoName(r.decision.proto) << ',' << (r.decision.nChannels ? r.decision.nChannels : -1) << ','
          << nodes << ',' << ranks << ',' << r.numPipeOps << ',' << r.regBuff << '\n';
    }
  }
  return out.str();
}

}  // namespace dynamiccl::policy
