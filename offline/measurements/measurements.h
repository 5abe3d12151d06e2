// Real measurements in the interchange format (shared/data/README.md): the format's reader and
// writer, the rows read for calibration and replay, the topology each row's system string describes,
// and the settlement of the rows into points (settlement.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "features/features.h"
#include "offline/measurements/settlement.h"
#include "offline/model/model.h"

namespace dynamiccl::measurements {

// nccl-tests' bus bandwidth (GB/s) of `bytes` in `us` on nRanks: algbw times the collective's factor.
double busBandwidth_GBps(Collective coll, uint64_t bytes, double us, int nRanks);

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
  // What NCCL ran, where the note quotes its TUNING line ("Algo RING proto SIMPLE"); nullopt: unsaid.
  std::optional<std::pair<Algo, Proto>> ncclRan;
  // The channel count the row forced, where its text says so (statedNcclSettings: NCCL_MIN_NCHANNELS =
  // NCCL_MAX_NCHANNELS, NCCL_NCHANNELS); then the nchannels column is the count asked for. 0: not forced.
  int forcedChannels = 0;
  uint64_t forcedChunk = 0;  // the chunk column of a row that forced its configuration; 0: not stated
  // The nchannels column where nothing forced it: what NCCL reported running (a TUNING log); 0: unsaid.
  int reportedChannels = 0;
  // Where the note says the row is the median of several runs ("median of 3 runs, 3-run spread 3.2%"):
  // how many and their range relative to the median; 0 runs: unsaid.
  int statedRuns = 0;
  double statedSpread = 0;
  bool forced() const { return forcedAlgo.has_value() || forcedProto.has_value() || forcedChannels > 0; }
};

struct LoadedMeasurements {
  std::vector<Measurement> rows;
  std::map<std::string, int> skipped;  // reason -> rows
};

// One row of the interchange CSV as written: names as text, -1 / NaN where a cell is empty.
struct InterchangeRow {
  std::string system, collective;
  int n_ranks = 0, n_nodes = 0;
  uint64_t bytes = 0;
  std::string algo = "default", proto = "default";
  int n_channels = -1;
  int64_t chunk = -1;
  double time_us = NAN, busbw_gbps = NAN;
  std::string source_note;
};
inline constexpr std::string_view kInterchangeHeader =
    "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note";
bool looksLikeInterchangeCsv(std::string_view text);
// The one reader of the format (ingest and loadMeasurements): errors name the line.
Expected<std::vector<InterchangeRow>> parseInterchangeCsv(std::string_view text);
std::string formatInterchangeRow(const InterchangeRow& row);  // one line, no newline

// Reads a normalized.csv. Skips (and counts, by reason) rows that are not tunable (alltoall,
// sendrecv), failed validation, or lack a usable time.
Expected<LoadedMeasurements> loadMeasurements(const std::string& csvPath);

// The topology of the platform a dataset's system string names (platforms::Registry::forSystem),
// with the row's shape (ranks per node = nRanks / nNodes) and, when known (non-zero), the NCCL
// release that measured it. Errors with unknownSystemReason(system) when no platform matches.
Expected<model::Topology> topologyForSystem(const std::string& system, int nRanks, int nNodes, int ncclVersion = 0);
// The one reason (and count key) for rows whose system no platform matches; it names the system.
std::string unknownSystemReason(const std::string& system);
// The same for a platform named by the user (a preset name), whatever the rows' system strings say.
Expected<model::Topology> topologyForPlatform(const std::string& name, int nRanks, int nNodes, int ncclVersion = 0);
// The NCCL_* settings a text states (a dataset's system text, a default row's note) that take
// configurations out of NCCL's choice: NCCL_NVLS_ENABLE=0 (also written NVLS_ENABLE=0),
// NCCL_COLLNET_ENABLE=0, NCCL_ALGO and NCCL_PROTO naming one algorithm or protocol (a list: not read).
struct StatedNcclSettings {
  bool nvlsOff = false, collnetOff = false;
  std::optional<Algo> algo;
  std::optional<Proto> proto;
  // A forced channel count: NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS equal (also written
  // NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8), or NCCL_NCHANNELS=8; 0: none forced.
  int channels = 0;
  bool operator==(const StatedNcclSettings&) const = default;
  // Whether NCCL, so set, may run `a` at all.
  bool allows(Algo a) const;
  // Both texts' settings (a note's over a system's where both name an algorithm or protocol).
  StatedNcclSettings with(const StatedNcclSettings& over) const;
};
StatedNcclSettings statedNcclSettings(std::string_view text);
// Whether a system text says the rows were measured on AMD's RCCL (the word "RCCL"): the host whose
// rules a replay loads the plugin under (DYNAMICCL_HOST=rccl).
bool measuredOnRccl(std::string_view system);
inline constexpr const char* kRcclRulesLine = "host: RCCL's rules (DYNAMICCL_HOST=rccl: the rows were measured on RCCL)";
// A row's own runs as its note states them: "median of 3 runs" and "3-run spread 3.2%" -> {3, 0.032};
// {0, 0} where it says neither.
std::pair<int, double> statedRunsOf(std::string_view note);
// The per-run sd of log time that `runs` runs spanning `spread` (range / median) show: the range of n
// normal draws is d2(n) sds on average. 0 where runs < 2.
double logSdOfSpread(int runs, double spread);
// "NCCL 2.23.4" anywhere in a note -> 22304; 0 if absent.
int ncclVersionFromNote(const std::string& note);
// NCCL's TUNING words quoted in a note ("... Algo NVLS proto SIMPLE channels 16") -> (NVLS, Simple), or
// rccl-tests' `-A 1` report ("reported TREE/LL/1"); nullopt where the note quotes none, or names an
// algorithm or protocol NCCL does not have.
std::optional<std::pair<Algo, Proto>> ncclChoiceFromNote(const std::string& note);
// The channel count the library reported running at its own choice: the TUNING line's "channels 16"
// after its protocol, or an INFO count ("channels at this size ...: 4"); 0 where the note says neither.
// (rccl-tests' `-A 1` count is a planned ceiling, not what ran: never read.)
int ncclChannelsFromNote(const std::string& note);

}  // namespace dynamiccl::measurements

namespace dynamiccl::measurements {

// Every repeat of one measured arm (what the row forced: nothing, the algorithm, the protocol, the
// channel count, the chunk) at one point; rows are repeats when they agree on group, shape,
// collective, size and arm. Two channel counts are two arms, never repeats of one.
struct MeasuredArm {
  std::optional<Algo> forcedAlgo;
  std::optional<Proto> forcedProto;
  int forcedChannels = 0;    // 0: NCCL's own count
  uint64_t forcedChunk = 0;  // 0: NCCL's own chunk
  std::vector<double> samples_us;  // in row order
  // The runs behind the samples where the rows state them (a median of 3 with its spread): sum of
  // squares of log time around each row's mean and its degrees of freedom (runs - 1 per row).
  double statedSumSquares = 0, statedDof = 0;
  bool forced() const { return forcedAlgo.has_value() || forcedProto.has_value() || forcedChannels > 0; }
  // "nccl-default", "NCCL_ALGO=RING", "NCCL_ALGO=RING NCCL_PROTO=LL NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8"
  std::string label() const;
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

}  // namespace dynamiccl::measurements
