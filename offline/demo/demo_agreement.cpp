// The demo's verdicts next to `dynamiccl tune --backend replay` on the same data, key by key: one
// decision rule (policy::judge) on two kinds of evidence, the dataset's runs and the job's calls.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "offline/demo/demo_steps.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {
namespace {

std::string labelOf(const tune::Config& c, const sim::Config& ncclDefault) {
  return armLabel(c.keepsAlgoProto() ? ncclDefault : sim::Config{c.algo, c.proto, 0, 0});
}

// (collective, key) indices of (coll, bytes) in tune's result; (-1, -1) where tune has no such key.
std::pair<int, int> keyIndex(const tune::TuneResult& result, Collective coll, uint64_t bytes) {
  int ci = -1, ki = -1;
  for (size_t c = 0; c < result.collectives.size(); ++c)
    for (size_t i = 0; i < result.collectives[c].keys.size(); ++i)
      if (result.collectives[c].coll == coll && result.collectives[c].keys[i].key.bytes == bytes)
        ci = static_cast<int>(c), ki = static_cast<int>(i);
  return {ci, ki};
}

// The runs' evidence for `disputed` at key ki, its most favourable arm's; nullopt: never measured there.
std::optional<tune::PointEvidence> evidenceFor(const std::vector<tune::KeyResult>& tk, int ki, const sim::Config& disputed,
                                               const tune::DecisionRule& rule) {
  std::optional<tune::PointEvidence> ev;
  for (size_t e = 1; e < tk[ki].evaluated.size(); ++e)
    if (tk[ki].evaluated[e].config.algo == disputed.algo && tk[ki].evaluated[e].config.proto == disputed.proto) {
      tune::PointEvidence x = tune::assessCandidate(tk, ki, static_cast<int>(e), rule);
      if (!ev || x.ratioUpper < ev->ratioUpper) ev = x;
    }
  return ev;
}

}  // namespace

Expected<RunsFindings> tuneOnRuns(const std::string& csv, const DemoOptions& o, const jobreplay::MeasuredJob& job) {
  tune::TunePlan plan;  // `dynamiccl tune --backend replay` on the job's shape, with its default rule
  plan.backend = tune::BackendKind::Replay;
  plan.replay = {csv, o.system, job.nRanks, job.nNodes > 1 ? job.nNodes : 0, "", std::nullopt};
  plan.everyShape = false;
  plan.request.collectives.clear();
  for (const jobreplay::JobKey& k : job.keys)
    if (std::find(plan.request.collectives.begin(), plan.request.collectives.end(), k.coll) ==
        plan.request.collectives.end())
      plan.request.collectives.push_back(k.coll);
  auto tuned = tune::tuneShapes(plan);
  if (!tuned) return makeError(tuned.error());
  RunsFindings out;
  out.tuned = std::make_shared<const tune::TunedShape>(std::move(tuned->shapes.front()));
  out.rule = plan.rule;
  out.command = "dynamiccl tune --backend replay --data " + csv + " --ranks " + std::to_string(job.nRanks) +
                (o.system.empty() ? "" : " --system '" + o.system + "'");
  return out;
}

bool RunsFindings::establishes(const jobreplay::JobKey& k, const jobreplay::MeasuredConfig& arm) const {
  const auto [ci, ki] = keyIndex(tuned->result, k.coll, k.bytes);
  if (ci < 0) return false;
  const std::optional<tune::PointEvidence> ev = evidenceFor(tuned->result.collectives[ci].keys, ki, arm.config, rule);
  return ev && ev->faster;
}

TuneAgreement compareWithTune(const RunsFindings& runs, const std::vector<jobreplay::KeyOutcome>& keys) {
  const tune::TuneResult& result = runs.tuned->result;
  const tune::SmoothedResult& smoothed = runs.tuned->smoothed;
  TuneAgreement out;
  out.command = runs.command;
  const tune::DecisionRule& rule = runs.rule;
  for (const jobreplay::KeyOutcome& k : keys) {
    const std::string jobRuns = armLabel(k.finalConfig);
    const std::string where = std::string(collectiveName(k.coll)) + " " + sizeText(k.bytes);
    const auto [ci, ki] = keyIndex(result, k.coll, k.bytes);
    if (ci < 0) {
      ++out.differ;
      out.lines.push_back(where + ": tune has no key here (no default row it can compare with); the job runs " + jobRuns);
      continue;
    }
    const std::string tuneRuns = labelOf(smoothed.chosenPerCollective[ci][ki], k.ncclDefault);
    if (tuneRuns == jobRuns) {
      ++out.agree;
      continue;
    }
    // The evidence in dispute: the runs' for the configuration the job moved to, else for tune's rule.
    const std::vector<tune::KeyResult>& tk = result.collectives[ci].keys;
    const sim::Config disputed = jobRuns != armLabel(k.ncclDefault)
                                     ? k.finalConfig
                                     : sim::Config{smoothed.chosenPerCollective[ci][ki].algo,
                                                   smoothed.chosenPerCollective[ci][ki].proto, 0, 0};
    const std::optional<tune::PointEvidence> ev = evidenceFor(tk, ki, disputed, rule);
    char buf[512];
    if (!ev) {
      ++out.differ;
      out.lines.push_back(where + ": tune runs " + tuneRuns + ", the job runs " + jobRuns + ", which the dataset never measured");
      continue;
    }
    const bool undecided = ev->finding == tune::Finding::Undecided || ev->finding == tune::Finding::NoiseUnknown;
    // Pooled neighbours said no gain, but this size's own runs decide nothing either way: the job's
    // calls decided what the runs cannot, as where tune is undecided.
    const bool pooledOverUndecided = ev->finding == tune::Finding::NotFaster && ev->pooledSizes > 1 && !ev->aloneFaster &&
                                     jobRuns != armLabel(k.ncclDefault);
    std::snprintf(buf, sizeof buf, "%s: tune runs %s, the job runs %s; the runs' evidence for %s: chosen/default %.3f [%.3f, "
                  "%.3f] on %d vs %d real runs, %s",
                  where.c_str(), tuneRuns.c_str(), jobRuns.c_str(), armLabel(disputed).c_str(),
                  ev->pooledRatio, ev->ratioLower, ev->ratioUpper, ev->samples, ev->defaultSamples,
                  std::string(tune::findingName(ev->finding)).c_str());
    std::string line = buf;
    const tune::Config& tuneRule = smoothed.chosenPerCollective[ci][ki];
    if (!tuneRule.keepsAlgoProto() && tuneRuns == armLabel(k.ncclDefault)) {
      ++out.differ;
      line += "; tune's rule forces " + tuneRuns + ", the configuration NCCL's model says NCCL runs itself, whose forced "
              "runs were faster than the default runs: a job cannot tell the two apart (forcing NCCL's own choice is "
              "the same arm), so it compares the other arms with the default's runs";
    } else if (undecided) {
      ++out.undecided;
      line += " (" + std::to_string(ev->repeatsToDecide) + " repeats of each would decide; the job decided on its own "
              "calls, here draws from those runs' fitted noise)";
    } else if (pooledOverUndecided) {
      ++out.undecided;
      std::snprintf(buf, sizeof buf, " (tune pools the %d neighbouring sizes whose ratios agree; this size's runs alone "
                    "decide nothing: %.3f, upper bound %.3f; the job decided on its own calls, here draws from those runs' "
                    "fitted noise)", ev->pooledSizes, ev->ratio, ev->aloneUpper);
      line += buf;
    } else {
      ++out.differ;
      if (ev->finding == tune::Finding::Faster && jobRuns == armLabel(k.ncclDefault))
        line += k.trialsToBest < 0 ? " (the job never tried it)" : " (the job tried it and had not decided by its end)";
      else if (ev->finding == tune::Finding::Faster) line += " (tune's smoothing over neighbouring sizes chose otherwise)";
      else if (ev->pooledSizes > 1) {
        std::snprintf(buf, sizeof buf, " (this size alone: %.3f, upper bound %.3f, faster; tune pools the %d neighbouring "
                      "sizes whose ratios agree, the job judges each size bucket alone)", ev->ratio, ev->aloneUpper,
                      ev->pooledSizes);
        line += buf;
      }
    }
    out.lines.push_back(line);
  }
  return out;
}

void printAgreement(const TuneAgreement& a) {
  printWrapped(textf("the same rule on the dataset's runs (`%s`): the same configuration at %d of %d keys; at %d the "
                     "real runs cannot decide the size (the job's calls did); %d differ",
                     a.command.c_str(), a.agree, a.agree + a.undecided + a.differ, a.undecided, a.differ),
               "  ", "    ");
  for (const std::string& l : a.lines) printWrapped(l, "    ", "      ");
}

}  // namespace dynamiccl::cli::demo
