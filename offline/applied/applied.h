// applied: was the plugin's decision what NCCL ran? Every observation of a plugin run is joined with
// the decision for the same call (store rows of the same communicator and seq) and counted per
// communicator shape, collective and size bucket, with the likely cause where NCCL ran something else.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "store/store.h"

namespace dynamiccl::applied {

enum class Cause : uint8_t {
  EnvOverride,      // NCCL_ALGO/NCCL_PROTO set in the run's environment
  CallOverride,     // another algorithm/protocol without those: per-call ncclCollConfig_t selection
  SymmetricKernel,  // NCCL ran a symmetric-memory kernel (no algorithm/protocol)
  ChannelCap,       // fewer channels than chosen, NCCL 2.31+: the tuner's count only lowers NCCL's own
  FewerChannels,    // fewer channels than chosen before 2.31 (the communicator has fewer) or NCCL unknown
  MoreChannels,
  WhatRanUnknown,   // NCCL named no algorithm/protocol we know
  NeverConsulted,   // a collective NCCL never asks tuners about (alltoall, p2p)
  GraphReplay,      // NCCL ran more calls than it asked the tuner about: CUDA-graph replays
  NoTuner,          // no tuner context of this communicator: the tuner role was not this library
  DecisionLost,     // asked, but the decision log had moved on
  NotRecorded,      // no decision and no join state (rows of older builds)
};
std::string_view causeText(Cause c);

// NoDecision: the call could not be attributed to a decision; it counts neither as honoured nor not.
enum class Outcome : uint8_t { Honoured, KeptNccl, NotHonoured, NoDecision };
struct Verdict {
  Outcome outcome = Outcome::Honoured;
  Cause cause = Cause::NotRecorded;  // for NotHonoured and NoDecision
};
Verdict classify(const store::AppliedRow& row);

struct KeyShare {
  int n_ranks = 0, n_nodes = 0;
  std::string collective;
  int bucket = 0;             // SizeBucket::of(bytes)
  int64_t calls = 0;          // observations
  int64_t chosen = 0;         // calls with a plugin decision other than NCCL's own choice
  int64_t honoured = 0;       // of chosen: NCCL ran it
  int64_t keptNccl = 0;       // calls where the plugin left NCCL's choice
  std::map<Cause, int64_t> causes;      // chosen but not honoured
  std::map<Cause, int64_t> unattributed;  // calls without a decision, by reason
  double share() const { return chosen ? static_cast<double>(honoured) / static_cast<double>(chosen) : NAN; }
  // Of the measured calls, those that reached the tuner (a decision, NCCL's own kept or not); the rest
  // the tuner was never asked about (a graph replay; RCCL's direct path where its profiler still saw them).
  double reached() const { return calls ? static_cast<double>(chosen + keptNccl) / static_cast<double>(calls) : NAN; }
};

struct Report {
  std::vector<KeyShare> keys;  // ordered by shape, collective, bucket
  KeyShare total;              // every key together
};

Expected<Report> appliedReport(store::Store& store);
Report reportOf(const std::vector<store::AppliedRow>& rows);
// The table `dynamiccl db applied` prints (figures measured: they come from observations).
std::string formatReport(const Report& report);

}  // namespace dynamiccl::applied
