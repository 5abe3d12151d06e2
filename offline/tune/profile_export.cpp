#include "offline/tune/profile_export.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>


namespace dynamiccl::tune {

namespace {
double rounded(double x) { return std::round(x * 10000) / 10000; }
}  // namespace

policy::Profile toProfile(const std::vector<TunedInterval>& intervals, const std::string& name, int nRanks, int nNodes,
                          const std::optional<policy::Evidence>& measuredAs) {
  policy::Profile p;
  p.name = name;
  for (const TunedInterval& t : intervals) {
    if (t.config.keepsAlgoProto()) continue;  // no rule = NCCL's choice
    policy::Rule r;
    r.collective = t.coll;
    r.sizeKey = policy::SizeKey::Bytes;
    r.minBytes = t.minBytes;
    r.maxBytes = t.maxBytes;
    r.minNodes = r.maxNodes = nNodes;
    r.minRanks = r.maxRanks = nRanks;
    r.decision = t.config;
    r.confidence = std::round(t.confidence * 1000) / 1000;
    if (measuredAs) {
      r.evidence = *measuredAs;
      r.evidence->samples = t.samples;
      r.evidence->defaultSamples = t.defaultSamples;
      r.evidence->gain = rounded(t.gain);
      r.evidence->gainLow = std::min(rounded(t.gainLow), r.evidence->gain);
      r.evidence->gainHigh = std::max(rounded(t.gainHigh), r.evidence->gain);
      if (policy::refutedByItsEvidence(*r.evidence)) continue;  // the plugin would never apply it
    }
    p.rules.push_back(r);
  }
  return p;
}

Expected<std::string> profileToNcclxCsv(const policy::Profile& profile) {
  std::ostringstream s;
  s << "collective,min_bytes_per_rank,max_bytes_per_rank,algorithm,protocol,channels,chunk_bytes,nNodes,nRanks,confidence\n";
  for (size_t i = 0; i < profile.rules.size(); ++i) {
    const policy::Rule& r = profile.rules[i];
    if (!r.collective) return makeError("rule " + std::to_string(i) + ": NCCLX rules name one collective");
    if (r.decision.keepsAlgoProto() || r.decision.leavesProtoToNccl())
      return makeError("rule " + std::to_string(i) + ": NCCLX rules need algo and proto");
    uint64_t lo = r.minBytes, hi = r.maxBytes;
    const bool anyRanks = r.minRanks <= 1 && r.maxRanks == INT_MAX;
    if (r.sizeKey == policy::SizeKey::Bytes) {
      if (r.minRanks != r.maxRanks) return makeError("rule " + std::to_string(i) + ": bytes need one rank count to become bytes per rank");
      lo = bytesPerRank(lo, r.minRanks);
      hi = hi == UINT64_MAX ? hi : bytesPerRank(hi, r.minRanks);
    }
    const int nodes = r.minNodes == r.maxNodes ? r.minNodes : -1;
    s << collectiveName(*r.collective) << "," << lo << "," << hi << "," << algoName(r.decision.algo) << ","
      << protoName(r.decision.proto) << "," << (r.decision.nChannels > 0 ? r.decision.nChannels : -1) << ","
      << (r.decision.chunkBytes > 0 ? static_cast<int64_t>(r.decision.chunkBytes) : -1) << "," << nodes << ","
      << (anyRanks || r.minRanks != r.maxRanks ? -1 : r.minRanks) << "," << r.confidence << "\n";
  }
  return s.str();
}

Expected<policy::Profile> parseNcclxCsv(std::string_view text) {
  policy::Profile p;
  p.name = "ncclx";
  std::istringstream in{std::string(text)};
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#' || line.rfind("collective,", 0) == 0) continue;
    const std::vector<std::string> f = splitCsvRecord(line);
    const std::string where = "line " + std::to_string(lineNo);
    if (f.size() != 10) return makeError(where + ": expected 10 fields, got " + std::to_string(f.size()));
    policy::Rule r;
    r.origin = where;
    r.collective = parseCollective(f[0]);
    const auto a = parseAlgo(f[3]);
    const auto pr = parseProto(f[4]);
    if (!r.collective || !a || !pr) return makeError(where + ": unknown collective, algorithm or protocol");
    try {
      r.sizeKey = policy::SizeKey::BytesPerRank;
      r.minBytes = std::stoull(f[1]);
      r.maxBytes = std::stoull(f[2]);
      const long ch = std::stol(f[5]);
      const long long chunk = std::stoll(f[6]);
      const int nodes = std::stoi(f[7]), ranks = std::stoi(f[8]);
      r.decision = policy::Decision{*a, *pr, ch > 0 ? static_cast<int>(ch) : 0, chunk > 0 ? static_cast<uint64_t>(chunk) : 0};
      if (nodes != -1) r.minNodes = r.maxNodes = nodes;
      if (ranks != -1) r.minRanks = r.maxRanks = ranks;
      r.confidence = std::stod(f[9]);
    } catch (const std::exception&) {
      return makeError(where + ": a number is malformed");
    }
    if (r.minBytes > r.maxBytes) return makeError(where + ": min_bytes_per_rank > max_bytes_per_rank");
    if (Status st = policy::validateDecision(r.decision); !st) return makeError(where + ": " + st.error());
    p.rules.push_back(r);
  }
  return p;
}

}  // namespace dynamiccl::tune
