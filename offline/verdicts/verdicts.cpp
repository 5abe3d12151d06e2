#include "offline/verdicts/verdicts.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace dynamiccl::verdicts {
namespace {

std::string isoDate(int64_t ts_ns) {
  const std::time_t t = static_cast<std::time_t>(ts_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string describeVerdict(const store::VerdictRow& v, std::string_view calls) {
  const auto stored = [](uint64_t b) { return std::to_string(static_cast<int64_t>(b)); };  // an odd row, as stored
  const std::string range = static_cast<int64_t>(v.min_bytes) < 0 || static_cast<int64_t>(v.max_bytes) < 0
                                ? stored(v.min_bytes) + ".." + stored(v.max_bytes)
                                : sizeRangeText(v.min_bytes, v.max_bytes);
  // The arm is a whole configuration: its channel count where it asks for one.
  const std::string channels = v.n_channels > 0 ? " ch=" + std::to_string(v.n_channels) : "";
  char buf[384];
  std::snprintf(buf, sizeof buf, "%s %s %dx%d: %s/%s%s vs NCCL's %s/%s: %s, %+.1f%% [%+.1f%%, %+.1f%%], %lld vs %lld %.*s",
                v.collective.c_str(), range.c_str(), v.n_ranks, v.n_nodes, v.algo.c_str(), v.proto.c_str(),
                channels.c_str(), v.base_algo.c_str(), v.base_proto.c_str(), v.state.c_str(),
                100 * v.gain, 100 * v.gain_low, 100 * v.gain_high, static_cast<long long>(v.n),
                static_cast<long long>(v.base_n), static_cast<int>(calls.size()), calls.data());
  return buf;
}

namespace {

// Why a promoted row makes no rule, or nothing when it does (its shape, range and names).
std::string rowProblem(const store::VerdictRow& v) {
  if (!v.problem.empty()) return v.problem;
  if (v.n_ranks < 1) return "ranks must be >= 1, the row has " + std::to_string(v.n_ranks);
  if (v.n_nodes < 1) return "nodes must be >= 1, the row has " + std::to_string(v.n_nodes);
  if (v.n_nodes > v.n_ranks)
    return "more nodes (" + std::to_string(v.n_nodes) + ") than ranks (" + std::to_string(v.n_ranks) + ")";
  if (v.min_bytes > v.max_bytes) return "byte range is inverted (min > max)";
  if (!parseCollective(v.collective)) return "unknown collective \"" + v.collective + "\"";
  const auto algo = parseAlgo(v.algo);
  if (!algo || *algo == Algo::Default) return "unknown algo \"" + v.algo + "\"";
  if (!parseProto(v.proto)) return "unknown proto \"" + v.proto + "\"";  // "default": NCCL's, within the algo
  if (v.n < 0 || v.base_n < 0) return "sample counts must be non-negative";
  return {};
}

}  // namespace

Expected<VerifiedProfile> profileFromStore(store::Store& db, const std::string& name) {
  auto rows = db.latestVerdicts();
  if (!rows) return makeError(rows.error());
  VerifiedProfile out;
  out.profile.name = name;
  out.verdicts = *rows;
  auto refuse = [&](const store::VerdictRow& v, std::string reason) {
    out.refused.push_back({v, std::move(reason), static_cast<size_t>(&v - rows->data())});
  };
  for (const store::VerdictRow& v : *rows) {
    if (v.state != "promoted") continue;
    if (const std::string why = rowProblem(v); !why.empty()) {
      refuse(v, why);
      continue;
    }
    policy::Rule r;
    r.collective = *parseCollective(v.collective);
    r.minBytes = v.min_bytes;
    r.maxBytes = v.max_bytes;
    r.minRanks = r.maxRanks = v.n_ranks;
    r.minNodes = r.maxNodes = v.n_nodes;
    r.decision = policy::Decision{*parseAlgo(v.algo), *parseProto(v.proto), v.n_channels > 0 ? v.n_channels : 0,
                                  v.chunk > 0 ? static_cast<uint64_t>(v.chunk) : 0};
    if (auto s = policy::validateDecision(r.decision); !s) {
      refuse(v, s.error());
      continue;
    }
    policy::Evidence e;
    e.provenance = policy::Provenance::MeasuredInJob;
    bool named = false;
    if (!v.fingerprint.empty()) {
      auto hw = policy::parseClusterHardwareJson(v.fingerprint);
      if (hw) e.fingerprint = *hw, named = true;
    }
    e.ncclVersion = v.nccl_version;
    e.samples = static_cast<int>(std::min<int64_t>(v.n, INT32_MAX));
    e.defaultSamples = static_cast<int>(std::min<int64_t>(v.base_n, INT32_MAX));
    if (std::isfinite(v.gain) && std::isfinite(v.gain_low) && std::isfinite(v.gain_high)) {
      e.gain = v.gain;
      e.gainLow = v.gain_low;
      e.gainHigh = v.gain_high;
    }
    e.date = isoDate(v.ts_ns);
    if (auto s = policy::validateEvidence(e); !s) {
      refuse(v, "evidence: " + s.error());
      continue;
    }
    if (!policy::measuredGain(e)) {  // promoted, yet its own figures show no win: the plugin would refuse it
      refuse(v, "promoted, but its gain is no gain beyond its interval");
      continue;
    }
    r.evidence = e;
    // The plugin's own reader is the judge: a rule it would refuse is never written.
    policy::Profile one;
    one.rules.push_back(r);
    auto back = policy::parseProfileJson(policy::profileToJson(one));
    if (!back) {
      refuse(v, back.error());
      continue;
    }
    if (!back->rules.empty() && back->rules[0].evidenceProblem.size()) {
      refuse(v, "evidence: " + back->rules[0].evidenceProblem);
      continue;
    }
    out.withoutFingerprint += !named;
    out.profile.rules.push_back(std::move(r));
  }
  return out;
}

}  // namespace dynamiccl::verdicts
