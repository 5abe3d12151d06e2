// The search for one key (collective, size): TPE proposals inside Hyperband brackets, with random
// and grid search as baselines. Every timed iteration counts against the budget.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "offline/tune/measurement_backend.h"
#include "offline/tune/search_space.h"
#include "offline/tune/statistics.h"
#include "offline/tune/tpe.h"

namespace dynamiccl::tune {

enum class SearchMethod { TpeHyperband, Random, Grid };

struct SearchOptions {
  SearchMethod method = SearchMethod::TpeHyperband;
  int maxIterations = 27;        // Hyperband's R: timed iterations of a fully evaluated configuration
  int eta = 3;
  int64_t budgetIterations = 0;  // cap per key; 0 = none (grid then covers the whole space)
  int patienceBrackets = 2;      // converged after this many brackets without a gain beyond convergeTol
  int warmPatienceBrackets = 1;  // the same when a neighbouring size gave a warm start
  double convergeTol = 0.01;
  int confirmTop = 3;            // best configurations re-measured with the default before the guard
  int confirmIterations = 0;     // 0 = 2 x maxIterations
  uint64_t seed = 1;
  TpeOptions tpe;
};

struct TracePoint {
  int64_t spentIterations = 0;
  Config incumbent;
};

struct KeyResult {
  MeasureKey key;
  std::vector<ConfigStats> evaluated;  // [0] is NCCL's default (keep); failed configurations are absent
  int incumbent = 0;                   // index into evaluated
  std::vector<TracePoint> trace;       // after every measurement
  int64_t spentIterations = 0;
  int brackets = 0;
  bool converged = false;
  int fullIterations = 27;             // samples that count as a full evaluation
  // What NCCL's default ran here, when the backend saw it (NCCL's TUNING lines): a candidate equal
  // to it is no rule, since forcing it changes nothing.
  std::optional<Config> ncclRan;
  const ConfigStats& keep() const { return evaluated[0]; }
  const ConfigStats& best() const { return evaluated[incumbent]; }
  const ConfigStats* find(const Config& c) const;
  // Indices of configurations with at least minSamples samples, fastest median first.
  std::vector<int> ranking(int minSamples) const;
};

using ProgressFn = std::function<void(int64_t spentIterations)>;

// warmStart: configurations good at the neighbouring size, measured first at full fidelity and used
// as TPE's prior. Errors only when NCCL's default cannot be measured.
Expected<KeyResult> searchKey(MeasurementBackend& backend, const MeasureKey& key, const SearchSpace& space,
                              const SearchOptions& options, const std::vector<Config>& warmStart = {},
                              const ProgressFn& progress = {});

}  // namespace dynamiccl::tune
