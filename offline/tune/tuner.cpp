#include "offline/tune/tuner.h"

#include <algorithm>
#include <ctime>

#include "offline/tune/progress_bar.h"

namespace dynamiccl::tune {

std::vector<uint64_t> powerOfTwoSizes(uint64_t minBytes, uint64_t maxBytes) {
  std::vector<uint64_t> out;
  uint64_t b = 1;
  while (b < minBytes && b <= (UINT64_MAX >> 1)) b <<= 1;
  for (; b <= maxBytes; b <<= 1) {
    out.push_back(b);
    if (b > (UINT64_MAX >> 1)) break;
  }
  return out;
}

Expected<KeyResult> recordedKey(const MeasurementBackend& backend, const MeasureKey& key) {
  auto arms = backend.recordedArms(key);
  if (!arms) return makeError(arms.error());
  KeyResult r;
  r.key = key;
  r.evaluated = std::move(arms.value());
  r.fullIterations = 1;  // every recorded arm counts, however few its repeats
  r.ncclRan = backend.ncclDefaultRuns(key);
  for (int i = 1; i < static_cast<int>(r.evaluated.size()); ++i)
    if (r.evaluated[i].median_us() < r.evaluated[r.incumbent].median_us()) r.incumbent = i;
  return r;
}

policy::Evidence evidenceOf(const MeasurementBackend& backend) {
  policy::Evidence e;
  e.provenance = backend.provenance();
  e.fingerprint = backend.measuredOn();
  e.ncclVersion = backend.ncclVersion();
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(date, sizeof date, "%Y-%m-%d", &utc);
  e.date = date;
  return e;
}

abi::PickRule targetRule(const TuneRequest& request, const MeasurementBackend& backend) {
  if (request.ncclRule) return *request.ncclRule;
  if (auto r = abi::parsePickRule(backend.ncclVersion())) return *r;
  return abi::PickRule::Nccl2_28;
}

Expected<TuneResult> tune(MeasurementBackend& backend, const TuneRequest& req) {
  const abi::PickRule rule = targetRule(req, backend);
  TuneResult result;
  result.backend = backend.name();
  result.nRanks = backend.nRanks();
  result.nNodes = backend.nNodes();
  result.dataNotes = backend.dataNotes();
  result.evidence = evidenceOf(backend);
  std::vector<std::vector<uint64_t>> sizes;
  size_t totalKeys = 0;
  for (Collective c : req.collectives) {
    std::vector<uint64_t> s = req.sizes;
    if (s.empty()) s = backend.measurableSizes(c);
    if (s.empty()) s = powerOfTwoSizes(1 << 10, 1 << 30);
    totalKeys += s.size();
    sizes.push_back(std::move(s));
  }
  ProgressBar bar(req.progress);
  size_t doneKeys = 0;
  for (size_t ci = 0; ci < req.collectives.size(); ++ci) {
    CollectiveResult cr;
    cr.coll = req.collectives[ci];
    std::vector<Config> warm;
    for (size_t si = 0; si < sizes[ci].size(); ++si) {
      const MeasureKey key{cr.coll, sizes[ci][si], backend.nRanks(), backend.nNodes()};
      const SearchSpace space(req.dimensions, [&](const Config& c) {
        return backend.available(c, key) && channelsProposable(c, rule, backend.ncclChannels(c, key));
      });
      result.gridIterations += int64_t{space.size() + 1} * req.search.maxIterations;
      SearchOptions opt = req.search;
      opt.seed = req.search.seed * 1000003 + ci * 1009 + si;
      const std::string label = std::string(collectiveName(cr.coll)) + " " + sizeText(key.bytes) + " (" +
                                std::to_string(doneKeys + 1) + "/" + std::to_string(totalKeys) + ")";
      const int64_t before = result.spentIterations;
      auto r = backend.recorded() ? recordedKey(backend, key)
                                  : searchKey(backend, key, space, opt, warm, [&](int64_t spent) {
        bar.update(static_cast<int64_t>(doneKeys) * 1000 + std::min<int64_t>(999, spent * 999 / std::max<int64_t>(1, 8 * opt.maxIterations * 27)),
                   static_cast<int64_t>(totalKeys) * 1000, label + " it=" + std::to_string(before + spent));
      });
      ++doneKeys;
      if (!r) {  // no rule at a size NCCL's default cannot be measured at; said, not dropped silently
        result.undecidable.push_back(std::string(collectiveName(cr.coll)) + " " + sizeText(key.bytes) + ": " + r.error());
        continue;
      }
      result.spentIterations += r->spentIterations;
      warm.clear();
      if (req.warmStartTop > 0)
        for (int e : r->ranking(r->fullIterations)) {
          if (static_cast<int>(warm.size()) >= req.warmStartTop) break;
          if (e != 0) warm.push_back(r->evaluated[e].config);
        }
      cr.keys.push_back(std::move(r.value()));
    }
    result.collectives.push_back(std::move(cr));
  }
  bar.finish();
  return result;
}

int measureUndecided(MeasurementBackend& backend, TuneResult& result, const DecisionRule& rule, int maxRepeats) {
  if (backend.recorded() || maxRepeats < 1) return 0;
  int measured = 0;
  for (CollectiveResult& cr : result.collectives) {
    const std::vector<PointEvidence> ev = bestCandidates(cr.keys, rule);
    for (size_t i = 0; i < cr.keys.size(); ++i) {
      if (ev[i].finding != Finding::Undecided && ev[i].finding != Finding::NoiseUnknown) continue;
      if (ev[i].config.keepsAlgoProto()) continue;
      KeyResult& k = cr.keys[i];
      const int target = std::min(maxRepeats, std::max(ev[i].repeatsToDecide, 2));
      bool more = false;
      for (ConfigStats& s : k.evaluated) {
        if (&s != &k.evaluated[0] && !(s.config == ev[i].config && s.arm == ev[i].arm)) continue;
        const int need = target - s.count();
        if (need <= 0) continue;
        auto samples = backend.measure(s.config, k.key, need);
        if (!samples) continue;
        s.samples_us.insert(s.samples_us.end(), samples->begin(), samples->end());
        result.spentIterations += static_cast<int64_t>(samples->size());
        more = true;
      }
      measured += more;
    }
  }
  return measured;
}

}  // namespace dynamiccl::tune
