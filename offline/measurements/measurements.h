// Real measurements in the interchange format (shared/data/README.md), read for calibration and
// replay, and the topology each row's system string describes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"

namespace dynamiccl::sim {

struct Measurement {
  std::string system;
  Collective coll = Collective::AllReduce;
  int nRanks = 0, nNodes = 0;
  uint64_t bytes = 0;
  std::optional<Algo> forcedAlgo;    // nullopt: "default" (NCCL chose)
  std::optional<Proto> forcedProto;
  double time_us = 0;
  std::string note;
  std::string group;  // system, plus the environment variant where a dataset has several
  int ncclVersion = 0;  // from the note ("NCCL 2.23.4" -> 22304); 0 when the row does not say
  bool forced() const { return forcedAlgo.has_value() || forcedProto.has_value(); }
};

struct LoadedMeasurements {
  std::vector<Measurement> rows;
  std::map<std::string, int> skipped;  // reason -> rows
};

// Reads a normalized.csv. Skips (and counts, by reason) rows that are not tunable (alltoall,
// sendrecv), failed validation, or lack a usable time.
Expected<LoadedMeasurements> loadMeasurements(const std::string& csvPath);
// Splits one CSV line (RFC 4180 quoting).
std::vector<std::string> splitCsvLine(const std::string& line);

// The topology of the platform a dataset's system string names (platforms::Registry::forSystem),
// with the row's shape (ranks per node = nRanks / nNodes) and, when known (non-zero), the NCCL
// release that measured it. Errors with unknownSystemReason(system) when no platform matches.
Expected<model::Topology> topologyForSystem(const std::string& system, int nRanks, int nNodes, int ncclVersion = 0);
// The one reason (and count key) for rows whose system no platform matches; it names the system.
std::string unknownSystemReason(const std::string& system);
// "NCCL 2.23.4" anywhere in a note -> 22304; 0 if absent.
int ncclVersionFromNote(const std::string& note);

}  // namespace dynamiccl::sim
