#include "offline/tune/job_knobs.h"

#include <algorithm>
#include <sstream>

namespace dynamiccl::tune {

namespace {
constexpr uint64_t kNcclDefaultBuffSize = 4 << 20;  // NCCL_BUFFSIZE default
constexpr int kNcclSteps = 8;                       // NCCL_STEPS: a chunk is one step of the buffer
}  // namespace

JobKnobAdvice recommendJobKnobs(MeasurementBackend& backend, const TuneResult& result,
                                const std::vector<TunedInterval>& intervals, const SmoothingOptions& o,
                                int iterations) {
  JobKnobAdvice advice;
  uint64_t maxChunk = 0;
  for (const TunedInterval& t : intervals)
    if (!t.config.keepsAlgoProto()) maxChunk = std::max(maxChunk, t.config.chunkBytes);
  if (maxChunk * kNcclSteps > kNcclDefaultBuffSize) {
    advice.knobs.buffSizeBytes = maxChunk * kNcclSteps;
    advice.reasons.push_back("NCCL_BUFFSIZE=" + std::to_string(advice.knobs.buffSizeBytes) + ": tuned chunk " +
                             sizeText(maxChunk) + " needs " + std::to_string(kNcclSteps) + " steps of buffer");
  }
  if (!backend.supportsJobKnobs()) {
    advice.reasons.push_back("NCCL_NTHREADS: not measurable with " + backend.name() + "; NCCL's default kept");
    return advice;
  }
  for (int threads : {256, 512}) {
    bool winsEverywhere = true;
    int judged = 0;
    for (const CollectiveResult& cr : result.collectives) {
      if (cr.keys.empty()) continue;
      const KeyResult& k = cr.keys.back();
      const Config c = k.best().config;
      auto base = backend.measure(c, k.key, iterations);
      auto with = backend.measure(c, k.key, iterations, JobKnobs{threads, advice.knobs.buffSizeBytes});
      if (!base || !with) {
        winsEverywhere = false;
        break;
      }
      ++judged;
      winsEverywhere = winsEverywhere && beatsBeyondNoise(ConfigStats{c, *with}, ConfigStats{c, *base}, o);
    }
    if (judged > 0 && winsEverywhere) {
      advice.knobs.nThreads = threads;
      advice.reasons.push_back("NCCL_NTHREADS=" + std::to_string(threads) + ": faster beyond noise at the largest size");
      break;
    }
  }
  if (advice.knobs.nThreads == 0) advice.reasons.push_back("NCCL_NTHREADS: no value beat NCCL's default beyond noise");
  return advice;
}

std::string envScript(const JobKnobs& knobs, const std::string& profilePath, const std::string& pluginName) {
  std::ostringstream s;
  s << "export NCCL_TUNER_PLUGIN=" << pluginName << "\n";
  if (!profilePath.empty()) s << "export DYNAMICCL_PROFILE=" << profilePath << "\n";
  if (knobs.nThreads > 0) s << "export NCCL_NTHREADS=" << knobs.nThreads << "\n";
  if (knobs.buffSizeBytes > 0) s << "export NCCL_BUFFSIZE=" << knobs.buffSizeBytes << "\n";
  return s.str();
}

}  // namespace dynamiccl::tune
