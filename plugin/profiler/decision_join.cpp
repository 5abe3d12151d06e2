#include "plugin/profiler/decision_join.h"

#include "plugin/context_registry.h"
#include "plugin/log.h"
#include "plugin/profiler/profiler_names.h"

namespace dynamiccl::plugin {
namespace {

std::string describe(Algo a, Proto p, int nChannels) {
  std::string s = a == Algo::Default ? "NCCL's algorithm" : std::string(algoNcclName(a));
  s += "/";
  s += p == Proto::Default ? "NCCL's protocol" : std::string(protoNcclName(p));
  if (nChannels > 0) s += "/" + std::to_string(nChannels) + "ch";
  return s;
}

}  // namespace

JoinedDecision joinDecision(const Observation& o) {
  JoinedDecision j;
  if (o.commId == 0) return j;
  bool anyContext = false, asked = false;
  const int coll = static_cast<int>(o.coll);
  // Every context of one commId decides identically (several ranks of a process share it): any will do.
  forEachContextWithCommId(o.commId, [&](const TunerView& c) {
    if (j.join == DecisionJoin::Joined) return;
    anyContext = true;
    if (c.decisions->find(coll, o.seq, o.bytes, &j.decision)) j.join = DecisionJoin::Joined;
    else if (o.seq < c.decisions->callsSoFar(coll)) asked = true;
  });
  if (j.join != DecisionJoin::Joined && anyContext) j.join = asked ? DecisionJoin::Lost : DecisionJoin::NotAsked;
  return j;
}

std::string notHonouredBecause(const Observation& o, const LoggedDecision& d) {
  if (d.source == DecisionSource::NcclDefault) return {};
  const bool algoDiffers = d.algo != Algo::Default && o.algo != d.algo;
  const bool protoDiffers = d.proto != Proto::Default && o.proto != d.proto;
  if (o.isSymColl && (algoDiffers || protoDiffers)) return "NCCL ran a symmetric-memory kernel";
  if (algoDiffers || protoDiffers) {
    if (o.algo == Algo::Default || o.proto == Proto::Default) return {};  // NCCL did not say what it ran
    return "NCCL ran another algorithm/protocol (NCCL_ALGO/NCCL_PROTO or a per-call selection)";
  }
  // Before v4 the descriptor gives the channel maximum, not the channels used.
  if (o.profilerVersion >= 4 && d.nChannels > 0 && o.nChannels > 0 && o.nChannels != d.nChannels)
    return o.nChannels < d.nChannels ? "fewer channels than chosen (NCCL's channel cap)" : "more channels than chosen";
  return {};
}

std::shared_ptr<DecisionLog> AppliedWatch::logOf(uint64_t commId) {
  if (auto it = logs_.find(commId); it != logs_.end())
    if (auto log = it->second.lock()) return log;
  std::shared_ptr<DecisionLog> found;
  forEachContextWithCommId(commId, [&](const TunerView& c) {
    if (!found) found = c.decisions;
  });
  if (found) logs_[commId] = found;
  else logs_.erase(commId);
  return found;
}

void AppliedWatch::check(const Observation& o, const JoinedDecision& j) {
  if (j.join == DecisionJoin::NotAsked)
    if (const auto log = logOf(o.commId)) log->countProfiled(DecisionLog::Ran::NotAsked);
  if (j.join != DecisionJoin::Joined) return;
  const std::string why = notHonouredBecause(o, j.decision);
  if (const auto log = logOf(o.commId))
    log->countProfiled(j.decision.source == DecisionSource::NcclDefault ? DecisionLog::Ran::NcclChoice
                       : why.empty()                                    ? DecisionLog::Ran::Honoured
                                                                        : DecisionLog::Ran::NotHonoured);
  if (why.empty() || warned_.count(o.commId)) return;
  warned_.insert(o.commId);
  logWarn("communicator %llx: NCCL did not run the plugin's choice for %s of %llu B (call %llu): chose %s, ran %s: "
          "%s; reported once per communicator, `dynamiccl db applied` counts every call",
          static_cast<unsigned long long>(o.commId), collectiveName(o.coll).data(),
          static_cast<unsigned long long>(o.bytes), static_cast<unsigned long long>(o.seq),
          describe(j.decision.algo, j.decision.proto, j.decision.nChannels).c_str(),
          o.isSymColl ? (std::string("symmetric kernel ") + kernelVariantName(o.kernelVariant)).c_str()
                      : describe(o.algo, o.proto, o.nChannels).c_str(),
          why.c_str());
}

}  // namespace dynamiccl::plugin
