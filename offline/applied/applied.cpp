#include "offline/applied/applied.h"

#include "abi/abi.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

namespace dynamiccl::applied {
namespace {

bool tunable(const std::string& collective) {
  auto c = parseCollective(collective);
  return c && (*c == Collective::AllReduce || *c == Collective::AllGather || *c == Collective::ReduceScatter ||
               *c == Collective::Broadcast || *c == Collective::Reduce);
}

bool envSets(const std::string& envJson, const char* name) {
  const nlohmann::json env = nlohmann::json::parse(envJson, nullptr, false);
  return env.is_object() && env.contains(name);
}

std::string bucketText(int bucket) {
  if (bucket <= 0) return "0 B";
  const uint64_t low = SizeBucket::lowest(bucket);
  return bucket < 64 ? sizeRangeText(low, SizeBucket::lowest(bucket + 1) - 1) : sizeText(low) + "..";
}

void count(KeyShare& k, const Verdict& v) {
  ++k.calls;
  switch (v.outcome) {
    case Outcome::Honoured: ++k.chosen, ++k.honoured; break;
    case Outcome::KeptNccl: ++k.keptNccl; break;
    case Outcome::NotHonoured: ++k.chosen, ++k.causes[v.cause]; break;
    case Outcome::NoDecision: ++k.unattributed[v.cause]; break;
  }
}

}  // namespace

std::string_view causeText(Cause c) {
  switch (c) {
    case Cause::EnvOverride: return "NCCL_ALGO/NCCL_PROTO set in the run's environment";
    case Cause::CallOverride: return "per-call override (ncclCollConfig_t algorithm selection)";
    case Cause::SymmetricKernel: return "symmetric-memory kernel";
    case Cause::ChannelCap: return "channel cap (fewer channels than chosen: NCCL 2.31+ only lowers its own count)";
    case Cause::FewerChannels: return "fewer channels than chosen (the communicator has fewer, or NCCL's version unknown)";
    case Cause::MoreChannels: return "more channels than chosen";
    case Cause::WhatRanUnknown: return "NCCL named no known algorithm/protocol";
    case Cause::NeverConsulted: return "never consulted (NCCL does not ask tuners about it)";
    case Cause::GraphReplay: return "never consulted for the call (likely a CUDA-graph replay: tuner asked at capture only)";
    case Cause::NoTuner: return "never consulted (the tuner role is not this plugin)";
    case Cause::DecisionLost: return "decision not found (log overwritten: many calls in flight)";
    case Cause::NotRecorded: return "no decision recorded";
  }
  return "?";
}

Verdict classify(const store::AppliedRow& r) {
  if (!r.has_decision) {
    if (!tunable(r.collective)) return {Outcome::NoDecision, Cause::NeverConsulted};
    if (r.decision_join == "not_asked") return {Outcome::NoDecision, Cause::GraphReplay};
    if (r.decision_join == "no_tuner") return {Outcome::NoDecision, Cause::NoTuner};
    if (r.decision_join == "lost") return {Outcome::NoDecision, Cause::DecisionLost};
    return {Outcome::NoDecision, Cause::NotRecorded};
  }
  if (r.source == "default") return {Outcome::KeptNccl, {}};
  const bool algoDiffers = r.chosen_algo != "default" && r.algo != r.chosen_algo;
  const bool protoDiffers = r.chosen_proto != "default" && r.proto != r.chosen_proto;
  // Channels: the used count from profiler v4 on (before: NCCL's maximum).
  const bool channelsKnown = r.profiler_version >= 4 && r.chosen_channels > 0 && r.n_channels > 0;
  const bool channelsDiffer = channelsKnown && r.n_channels != r.chosen_channels;
  if (!algoDiffers && !protoDiffers && !channelsDiffer) return {Outcome::Honoured, {}};
  if (r.is_sym_coll) return {Outcome::NotHonoured, Cause::SymmetricKernel};
  if (algoDiffers || protoDiffers) {
    if ((algoDiffers && envSets(r.env_json, "NCCL_ALGO")) || (protoDiffers && envSets(r.env_json, "NCCL_PROTO")))
      return {Outcome::NotHonoured, Cause::EnvOverride};
    if (r.algo == "default" || r.proto == "default") return {Outcome::NotHonoured, Cause::WhatRanUnknown};
    return {Outcome::NotHonoured, Cause::CallOverride};
  }
  if (r.n_channels > r.chosen_channels) return {Outcome::NotHonoured, Cause::MoreChannels};
  // Only 2.31's rules cap the tuner's count at NCCL's own; before, the count replaced NCCL's.
  const std::optional<int> version = abi::parseNcclVersion(r.nccl_version);
  const bool capped = version && abi::channelsAreCap(abi::pickRuleFor(*version));
  return {Outcome::NotHonoured, capped ? Cause::ChannelCap : Cause::FewerChannels};
}

Report reportOf(const std::vector<store::AppliedRow>& rows) {
  std::map<std::tuple<int, int, std::string, int>, KeyShare> keys;
  Report report;
  for (const store::AppliedRow& r : rows) {
    const int bucket = SizeBucket::of(r.bytes);
    KeyShare& k = keys[{r.n_ranks, r.n_nodes, r.collective, bucket}];
    k.n_ranks = r.n_ranks;
    k.n_nodes = r.n_nodes;
    k.collective = r.collective;
    k.bucket = bucket;
    const Verdict v = classify(r);
    count(k, v);
    count(report.total, v);
  }
  for (auto& [key, share] : keys) report.keys.push_back(std::move(share));
  return report;
}

Expected<Report> appliedReport(store::Store& store) {
  std::vector<store::AppliedRow> rows;
  auto s = store.forEachAppliedRow([&](const store::AppliedRow& r) { rows.push_back(r); });
  if (!s) return makeError(s.error());
  return reportOf(rows);
}

std::string formatReport(const Report& report) {
  std::ostringstream out;
  char line[512];
  auto pctText = [](double v) {  // share() and reached() are NaN where nothing was counted
    char b[16];
    if (std::isnan(v)) return std::string("-");
    std::snprintf(b, sizeof b, "%.1f%%", 100.0 * v);
    return std::string(b);
  };
  auto list = [](const std::map<Cause, int64_t>& m) {
    std::string s;
    for (const auto& [cause, n] : m) s += (s.empty() ? "" : "; ") + std::string(causeText(cause)) + ": " + std::to_string(n);
    return s;
  };
  auto causes = [&](const KeyShare& k) {
    std::string s = list(k.causes);
    if (!k.unattributed.empty()) s += (s.empty() ? "" : "; ") + std::string("unattributed: ") + list(k.unattributed);
    return s;
  };
  std::snprintf(line, sizeof line, "%-16s %-14s %-22s %8s %8s %8s %9s %7s %7s  %s\n", "shape", "collective", "size",
                "calls", "reached", "chosen", "honoured", "share", "kept", "not honoured; unattributed (calls)");
  out << line;
  for (const KeyShare& k : report.keys) {
    const std::string shape = std::to_string(k.n_ranks) + "r/" + std::to_string(k.n_nodes) + "n";
    std::snprintf(line, sizeof line, "%-16s %-14s %-22s %8lld %8s %8lld %9lld %7s %7lld  %s\n", shape.c_str(),
                  k.collective.c_str(), bucketText(k.bucket).c_str(), static_cast<long long>(k.calls),
                  pctText(k.reached()).c_str(), static_cast<long long>(k.chosen), static_cast<long long>(k.honoured), pctText(k.share()).c_str(),
                  static_cast<long long>(k.keptNccl), causes(k).c_str());
    out << line;
  }
  const KeyShare& t = report.total;
  std::snprintf(line, sizeof line,
                "measured: %lld calls, %s of them reached the tuner, %lld with a plugin choice, %lld honoured (%s), "
                "%lld left to NCCL's choice\n",
                static_cast<long long>(t.calls), pctText(t.reached()).c_str(), static_cast<long long>(t.chosen),
                static_cast<long long>(t.honoured),
                pctText(t.share()).c_str(), static_cast<long long>(t.keptNccl));
  out << line;
  if (!t.causes.empty()) out << "not honoured, likely causes: " << list(t.causes) << "\n";
  int64_t unattributed = 0;
  for (const auto& [cause, n] : t.unattributed) unattributed += n;
  if (unattributed > 0)
    out << unattributed << " calls could not be attributed to a decision (counted neither honoured nor not): "
        << list(t.unattributed) << "\n";
  return out.str();
}

}  // namespace dynamiccl::applied
