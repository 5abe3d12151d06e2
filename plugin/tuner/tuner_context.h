// Per-communicator state of the tuner role. Created at init, read by the hot path, freed at finalize.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "features/features.h"
#include "plugin/context_registry.h"
#include "plugin/metrics/metrics_file.h"
#include "plugin/online_comm.h"
#include "plugin/tuner/comm_decisions.h"
#include "plugin/tuner/profile_source.h"
#include "plugin/tuner/user_fixed.h"
#include "policy/policy.h"

namespace dynamiccl::plugin {

struct TunerContext {
  static constexpr uint64_t kMagic = 0x44796e4943434c31ull;  // "DynICCL1": guards against foreign pointers
  uint64_t magic = kMagic;
  int abiVersion = 0;
  abi::PickRule pickRule = abi::kNewestPickRule;  // NCCL's selection rules for this process (nccl_version.h)
  TunerView view;  // the communicator's shape and the decision log per call, what the other roles read
  std::shared_ptr<const LoadedProfile> loaded;  // keeps the profile alive while the table refers to it
  policy::DecisionTable table;       // what the hot path reads: the rules that apply under DYNAMICCL_TRUST
  policy::DecisionTable unverified;  // unverified rules, candidates for in-job verification; never read on the hot path

  // v6 getChunkSize runs after getCollInfo, per channel slice with other nBytes: remember the
  // chunk of the last decision per collective, applied only if NCCL runs that algo/proto.
  struct ChunkMemory {
    int8_t algo = -1, proto = -1;  // -1 algo with chunk: any algo/proto (rule kept NCCL's choice)
    bool valid = false;
    uint64_t chunkBytes = 0;
  };
  std::array<ChunkMemory, kNumCollectives> lastChunk{};
  // Calls where a rule's chunk was more than NCCL runs correctly for what it ran (NCCL's chunk kept),
  // and the first such pair (algo * kNumProtos + proto): counted on the hot path, said once at finalize.
  uint64_t chunksKept = 0;
  int firstChunkKeptPair = -1;

  // Online updates (plugin/online_comm.h); nullptr when off: the static table alone answers.
  std::shared_ptr<OnlineComm> online;
  // Decisions prepared off NCCL's init path (a big profile's parse, the ranks' input check): NCCL's
  // choices for the first calls, then those decisions (the same call on every rank: CommSetup::firstCall).
  std::shared_ptr<PendingDecisions> pending;
  bool awaitingPrepared = false;
  uint64_t callsUntilPrepared = 0;
  bool usualPath = false;  // tunerGetCollInfo's usual path may decide (takesUsualPath)

  // DYNAMICCL_BUDGET record= as a draw threshold: calls profiled and recorded though nothing decides on them.
  uint32_t recordThreshold = 0;

  // Read on the hot path after the table: kept out of the lines the lookup reads first.
  const abi::HostRules* host = &abi::kNcclRules;  // which library loaded us and its rules (abi/host_rules.h)
  UserFixed fixed;                                 // knobs the user fixed, left alone (user_fixed.h)
  MetricsTarget metrics;                           // DYNAMICCL_METRICS_DIR: finalize writes the last values

  static TunerContext* from(void* p) {
    auto* c = static_cast<TunerContext*>(p);
    return c && c->magic == kMagic ? c : nullptr;
  }
};

}  // namespace dynamiccl::plugin
