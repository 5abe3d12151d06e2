// Tuning profiles: the versioned rule file the plugin loads (our JSON) and NVIDIA's example CSV.
#pragma once

#include <climits>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"
#include "policy/evidence.h"

namespace dynamiccl::policy {

inline constexpr int kProfileVersion = 2;      // 2: rules carry "evidence"; version 1 still loads
inline constexpr int kFirstEvidenceVersion = 2;
inline constexpr int kMaxChannels = 64;                     // NCCL's MAXCHANNELS
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMinChunkBytes = 16;              // smallest protocol grain (LL)
inline constexpr int kMaxPipeOps = 255;
inline constexpr uint64_t kMaxProfileBytes = 64ull << 20;   // a bigger file is refused unread

// What the plugin tells NCCL. Algo/Proto Default together = keep NCCL's algorithm and protocol; an
// algorithm with proto Default forces the algorithm and leaves the protocol to NCCL's own costs in
// that algorithm (what NCCL_ALGO alone runs: a dataset's half-forced rows measure exactly this).
struct Decision {
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int nChannels = 0;        // 0 = keep NCCL's channel count
  uint64_t chunkBytes = 0;  // 0 = keep NCCL's chunk (v6 getChunkSize only)
  auto operator<=>(const Decision&) const = default;  // ordered: searches keep configurations in maps
  bool keepsAlgoProto() const { return algo == Algo::Default; }
  bool leavesProtoToNccl() const { return algo != Algo::Default && proto == Proto::Default; }
};

// The one label of a decision in every table and log: "ring/ll128 ch=16 chunk=512K", parts NCCL keeps
// left out ("ring/ll"); "nccl-default" when it keeps NCCL's algorithm and protocol.
std::string decisionLabel(const Decision& d);
// Its arm, (algo, proto) alone: "ring/ll" (what datasets measure: none sweeps channels or chunk).
std::string armLabel(const Decision& d);

enum class SizeKey : uint8_t { Bytes, BytesPerRank };

// A rule's guard: bit ncclChoiceSlot(a, p) set = the rule may replace NCCL's own choice when NCCL's
// cheapest usable cost-table entry is (a, p); bit kNcclChoiceUnknown = also when that is unknown
// (v2 ABI, no table). Profile rules admit everything; rules generated from the learned network
// admit only the choices they are predicted to beat by the guard margin.
using GuardMask = uint32_t;
inline constexpr int kNcclChoiceUnknown = 31;
inline constexpr GuardMask kAdmitsAny = ~GuardMask{0};
constexpr int ncclChoiceSlot(Algo a, Proto p) { return static_cast<int>(a) * kNumProtos + static_cast<int>(p); }
static_assert(kNumAlgos * kNumProtos <= kNcclChoiceUnknown, "a guard mask holds every (algo, proto) slot");

struct Rule {
  std::optional<Collective> collective;  // nullopt: every tunable collective
  SizeKey sizeKey = SizeKey::Bytes;
  uint64_t minBytes = 0;                 // inclusive, in the unit of sizeKey
  uint64_t maxBytes = UINT64_MAX;        // inclusive
  int minNodes = 1, maxNodes = INT_MAX;
  int minRanks = 1, maxRanks = INT_MAX;
  int numPipeOps = -1;                   // -1: any
  int regBuff = -1;                      // -1: any, else 0 or 1
  Decision decision;
  double confidence = 1.0;               // 0..1, from the offline tuner; informative
  GuardMask admits = kAdmitsAny;         // generated rules only; never read from or written to files
  std::string origin;                    // "rules[3]" or "line 7", for messages
  std::optional<Evidence> evidence;      // nullopt: none (old profile, NVIDIA CSV) or malformed
  std::string evidenceProblem;           // why the file's "evidence" was not usable (the rule is unverified)
};

struct Profile {
  int version = kProfileVersion;
  std::string name;
  std::string source;                    // path it was read from, if any
  std::vector<Rule> rules;
  // The "policy" section as read, as JSON text: a learned network that learned/ reads (readNetwork);
  // this module keeps it opaque. Empty: none.
  std::string policySection;
  // The "fingerprint" section: the cluster's hardware, the only source of those facts for learned
  // rules of multi-node communicators (a host probe may differ between nodes; policy_rules.h).
  std::optional<ClusterHardware> hardware;
  // NVIDIA's example-tuner CSV: the user's own explicit rules, applied as if opted in (no evidence).
  bool userRules = false;
};

// Our JSON format. Every semantic error (unknown name or key, inverted range, negative channels,
// non-integer where an integer belongs, newer version) is an error naming the offending rule.
Expected<Profile> parseProfileJson(std::string_view text);
std::string profileToJson(const Profile& profile);
// Profiles made separately as one: their rules in the order given. Refused, with a line naming both
// rules, where two answer the same calls differently; also a learned network, NVIDIA CSV rules, or
// two different declared clusters.
Expected<Profile> mergeProfiles(const std::vector<Profile>& profiles);

// NVIDIA's example tuner CSV: collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,
// nRanks[,numPipeOps[,regBuff]]; -1 wildcards; channels -1 keeps NCCL's count. Unlike NVIDIA's
// reader, unknown names are errors rather than silently Ring/Simple/AllReduce.
Expected<Profile> parseNvidiaCsv(std::string_view text);
std::string profileToNvidiaCsv(const Profile& profile);
// Whether that CSV can say a rule (one collective or all, a byte range, exact or any nodes and ranks,
// an algorithm with its protocol); the writer leaves the others out.
bool nvidiaCsvCanSay(const Rule& r);

enum class ProfileFormat { Auto, Json, NvidiaCsv };
// Reads a file with a size cap; Auto picks JSON when the first non-blank character is '{'. onRead,
// if given, sees the bytes read (before they are parsed): the plugin digests them, reading the file once.
Expected<Profile> loadProfileFile(const std::string& path, ProfileFormat format = ProfileFormat::Auto,
                                  uint64_t maxBytes = kMaxProfileBytes,
                                  const std::function<void(std::string_view)>& onRead = {});

// The same parse of bytes already read (the plugin reads at init and may parse on another thread);
// source names the file in errors and in Profile::source.
Expected<Profile> parseProfileText(std::string_view text, ProfileFormat format, const std::string& source);

// Checks one decision's values (shared by both readers and by writers of profiles).
Status validateDecision(const Decision& d);

// Checks declared hardware (the "fingerprint" section's bounds; shared by the reader and the writers).
inline constexpr int kMinComputeCap = 30, kMaxComputeCap = 200;  // major x 10 + minor
inline constexpr int kMaxNicsPerNode = 64;
inline constexpr double kMaxNvlinkBw_GBps = 1e5, kMaxNicSpeed_GBps = 1e4;
Status validateClusterHardware(const ClusterHardware& hw);
std::string clusterHardwareToJson(const ClusterHardware& hw);  // the "fingerprint" object
Expected<ClusterHardware> parseClusterHardwareJson(std::string_view text);  // its inverse

}  // namespace dynamiccl::policy
