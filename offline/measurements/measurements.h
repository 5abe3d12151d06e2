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

// The topology a dataset's system string describes, with the row's shape (ranks per node =
// nRanks / nNodes) and, when known (non-zero), the NCCL release that measured it. Errors for
// systems we have no preset for.
Expected<model::Topology> topologyForSystem(const std::string& system, int nRanks, int nNodes, int ncclVersion = 0);
// The same for a platform named by the user (a preset name), whatever the rows' system strings say.
Expected<model::Topology> topologyForPlatform(const std::string& name, int nRanks, int nNodes, int ncclVersion = 0);
// "NCCL 2.23.4" anywhere in a note -> 22304; 0 if absent.
int ncclVersionFromNote(const std::string& note);

}  // namespace dynamiccl::sim

namespace dynamiccl::sim {

// Every repeat of one measured arm (what the row forced: nothing, the algorithm, the protocol or
// both) at one point; rows are repeats when they agree on group, shape, collective, size and arm.
struct MeasuredArm {
  std::optional<Algo> forcedAlgo;
  std::optional<Proto> forcedProto;
  std::vector<double> samples_us;  // in row order
  bool forced() const { return forcedAlgo.has_value() || forcedProto.has_value(); }
  std::string label() const;  // "nccl-default", "NCCL_ALGO=RING", "NCCL_ALGO=RING NCCL_PROTO=LL"
};
struct MeasuredPoint {
  std::string system, group;
  Collective coll = Collective::AllReduce;
  int nRanks = 0, nNodes = 0;
  uint64_t bytes = 0;
  std::vector<MeasuredArm> arms;  // in order of first appearance
};
// Groups rows into points without averaging: every repeat stays a sample. Sorted by group, shape,
// collective and size.
std::vector<MeasuredPoint> groupRepeats(const std::vector<Measurement>& rows);

}  // namespace dynamiccl::sim
