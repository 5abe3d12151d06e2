// The offline tuner: per collective, sizes ascending, one key search each, the previous size's
// leaders as warm start and prior (configs good at 1 MiB are a strong prior at 2 MiB).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/tune/evidence.h"
#include "offline/tune/key_search.h"
#include "offline/tune/measurement_backend.h"
#include "offline/tune/search_space.h"

namespace dynamiccl::tune {

struct TuneRequest {
  std::vector<Collective> collectives{Collective::AllReduce};
  std::vector<uint64_t> sizes;  // ascending; empty = the backend's sizes, else powers of two 1K..1G
  SearchOptions search;
  SpaceDimensions dimensions = defaultDimensions();
  int warmStartTop = 3;         // leaders of the previous size carried over; 0 = no sharing
  bool progress = false;        // stderr progress bar
  // The NCCL release the rules are for (its channel rule shapes the space); nullopt: the backend's
  // NCCL version when it reports one, else 2.28 (the NCCL installed here).
  std::optional<abi::PickRule> ncclRule;
};

// The release a request targets (TuneRequest::ncclRule).
abi::PickRule targetRule(const TuneRequest& request, const MeasurementBackend& backend);

struct CollectiveResult {
  Collective coll = Collective::AllReduce;
  std::vector<KeyResult> keys;  // ascending bytes
};

struct TuneResult {
  std::string backend;
  int nRanks = 0, nNodes = 0;
  std::vector<CollectiveResult> collectives;
  int64_t spentIterations = 0;
  int64_t gridIterations = 0;  // what the exhaustive grid at full fidelity would have cost
  std::vector<std::string> undecidable;  // "allreduce 4M: why", for sizes that have no key
  std::vector<std::string> dataNotes;    // the backend's rows it could not use, by reason
  policy::Evidence evidence;   // what the backend's timings are; per-rule samples and gains are added on export
};

std::vector<uint64_t> powerOfTwoSizes(uint64_t minBytes, uint64_t maxBytes);
// A recorded backend's key: every arm with its repeats, NCCL's default first; nothing is searched.
Expected<KeyResult> recordedKey(const MeasurementBackend& backend, const MeasureKey& key);
// The backend's provenance, fingerprint and NCCL version, dated today (UTC).
policy::Evidence evidenceOf(const MeasurementBackend& backend);
Expected<TuneResult> tune(MeasurementBackend& backend, const TuneRequest& request);

// Where the rule could not decide (Undecided, NoiseUnknown), measures the most promising candidate
// and NCCL's default up to the repeats that would decide (at most maxRepeats each), on backends
// that can measure (not a recorded dataset). Returns how many sizes were measured again.
int measureUndecided(MeasurementBackend& backend, TuneResult& result, const DecisionRule& rule, int maxRepeats);

}  // namespace dynamiccl::tune
