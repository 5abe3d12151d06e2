// Reading and writing our JSON profile format (nlohmann::json; no exception leaves this file).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <optional>
#include <tuple>
#include <vector>

#include "abi/abi.h"
#include "features/features.h"
#include "policy/json_limits.h"
#include "policy/profile.h"
#include "policy/profile_json_reader.h"

namespace dynamiccl::policy {
namespace {

using nlohmann::json;

constexpr std::string_view kFormatName = "dynamiccl-profile";
constexpr std::string_view kTopKeys[] = {"format", "version", "name", "description", "created_by",
                                         "fingerprint", "rules", "policy", "meta"};
constexpr std::string_view kRuleKeys[] = {"collective", "bytes", "bytes_per_rank", "nodes", "ranks",
                                          "pipe_ops", "reg_buff", "algo", "proto", "channels", "chunk",
                                          "confidence", "note", "evidence"};
constexpr std::string_view kEvidenceKeys[] = {"provenance", "fingerprint", "nccl_version", "samples",
                                              "default_samples", "gain", "gain_ci", "date", "note"};
constexpr std::string_view kFingerprintKeys[] = {"gpu_cc", "gpu_arch", "nvlink_GBps", "nics_per_node", "nic_GBps", "source"};

template <size_t N>
bool known(const std::string_view (&names)[N], std::string_view key) {
  return std::find(std::begin(names), std::end(names), key) != std::end(names);
}

// The first key in sorted order (nlohmann's objects iterate so) for which bad(key) holds: the one an
// error names.
template <typename Bad>
std::optional<std::string_view> firstBadKey(FlatValue object, Bad&& bad) {
  std::optional<std::string_view> first;
  object.forEachMember([&](std::string_view key, FlatValue) {
    if ((!first || key < *first) && bad(key)) first = key;
  });
  return first;
}

struct RuleError {
  std::string message;
};

// What a message names: "bytes" with "[0]" for its first element (built only for a message: a 60k-rule
// profile reads 60k of these).
std::string named(std::string_view what, std::string_view element) { return std::string(what).append(element); }

uint64_t asU64(FlatValue v, std::string_view what, std::string_view element = {}) {
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw RuleError{named(what, element) + " must be a non-negative integer"};
  return v.get<uint64_t>();
}

int asInt(FlatValue v, std::string_view what, int lo, int hi, std::string_view element = {}) {
  if (!v.is_number_integer()) throw RuleError{named(what, element) + " must be an integer"};
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    throw RuleError{named(what, element) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"};
  return static_cast<int>(x);
}

// [lo, hi] with hi null meaning unbounded; a single integer means [n, n].
std::pair<uint64_t, uint64_t> asU64Range(FlatValue v, std::string_view what) {
  if (v.is_number_integer()) {
    const uint64_t n = asU64(v, what);
    return {n, n};
  }
  if (!v.is_array() || v.size() != 2) throw RuleError{named(what, " must be [lo, hi] (hi may be null)")};
  const uint64_t lo = asU64(v[0], what, "[0]");
  const uint64_t hi = v[1].is_null() ? UINT64_MAX : asU64(v[1], what, "[1]");
  if (lo > hi) throw RuleError{named(what, " is inverted (lo > hi)")};
  return {lo, hi};
}

std::pair<int, int> asIntRange(FlatValue v, std::string_view what) {
  if (v.is_number_integer()) {
    const int n = asInt(v, what, 1, INT_MAX);
    return {n, n};
  }
  if (!v.is_array() || v.size() != 2) throw RuleError{named(what, " must be [lo, hi] (hi may be null)")};
  const int lo = asInt(v[0], what, 1, INT_MAX, "[0]");
  const int hi = v[1].is_null() ? INT_MAX : asInt(v[1], what, 1, INT_MAX, "[1]");
  if (lo > hi) throw RuleError{named(what, " is inverted (lo > hi)")};
  return {lo, hi};
}

ClusterHardware parseFingerprint(FlatValue f);
Evidence parseEvidence(FlatValue e);

// An object's members by their place in a list of known keys, found in one pass: a 60k-rule profile
// reads a dozen members of each rule, its evidence and its fingerprint, and comparing key texts for
// each was a third of its first init. A key given twice counts once, with its last value (as nlohmann
// keeps it); unknown(): the first key, in the text's order, that is none of the list.
template <const auto& names>
class Members {
 public:
  // A known key named in the code, placed while compiling ("colective" does not build).
  struct Key {
    consteval Key(const char* key) : name(key), at(place(key)) {}  // NOLINT: literals convert
    std::string_view name;
    int at;
  };
  explicit Members(FlatValue object) {
    object.forEachMember([&](std::string_view key, FlatValue value) {
      const int i = find(key);
      if (i < 0) {
        if (!unknown_) unknown_ = key;
        return;
      }
      values_[static_cast<size_t>(i)] = value;
      present_ |= 1u << i;
    });
  }
  std::optional<std::string_view> unknown() const { return unknown_; }
  bool contains(Key key) const { return present_ >> key.at & 1u; }
  FlatValue operator[](Key key) const { return values_[static_cast<size_t>(key.at)]; }

 private:
  static constexpr size_t kCount = std::size(names);
  static_assert(kCount <= 32, "present_ holds a bit per key");
  static consteval int place(std::string_view key) {
    for (size_t i = 0; i < kCount; ++i)
      if (names[i] == key) return static_cast<int>(i);
    throw "not a known key";  // a compile error: consteval cannot throw
  }
  static int find(std::string_view key) {
    for (size_t i = 0; i < kCount; ++i)
      if (names[i].size() == key.size() && names[i][0] == key[0] && names[i] == key) return static_cast<int>(i);
    return -1;
  }
  std::array<FlatValue, kCount> values_{};
  uint32_t present_ = 0;
  std::optional<std::string_view> unknown_;
};
using RuleMembers = Members<kRuleKeys>;
using EvidenceMembers = Members<kEvidenceKeys>;
using FingerprintMembers = Members<kFingerprintKeys>;
using TopMembers = Members<kTopKeys>;

// The key a rule of this profile version may not carry (evidence came with version 2), if any.
std::optional<std::string> ruleKeyProblem(FlatValue object, int version) {
  const auto key = firstBadKey(object, [&](std::string_view k) {
    return !known(kRuleKeys, k) || (k == "evidence" && version < kFirstEvidenceVersion);
  });
  if (!key) return std::nullopt;
  return "unknown key \"" + std::string(*key) + "\"" + (*key == "evidence" ? " (evidence needs \"version\": 2)" : "");
}

// r: the object's members (a rule of the newest version: evidence is a known key).
Rule parseRule(const RuleMembers& r) {
  if (const auto key = r.unknown()) throw RuleError{"unknown key \"" + std::string(*key) + "\""};
  Rule rule;
  if (r.contains("collective")) {
    const FlatValue c = r["collective"];
    if (!c.is_string()) throw RuleError{"collective must be a string"};
    const std::string_view s = c.text();
    if (s != "any" && s != "*") {
      auto coll = parseCollective(s);
      if (!coll) throw RuleError{"unknown collective \"" + std::string(s) + "\""};
      rule.collective = *coll;
    }
  }
  if (r.contains("bytes") && r.contains("bytes_per_rank")) throw RuleError{"give bytes or bytes_per_rank, not both"};
  if (r.contains("bytes")) std::tie(rule.minBytes, rule.maxBytes) = asU64Range(r["bytes"], "bytes");
  if (r.contains("bytes_per_rank")) {
    rule.sizeKey = SizeKey::BytesPerRank;
    std::tie(rule.minBytes, rule.maxBytes) = asU64Range(r["bytes_per_rank"], "bytes_per_rank");
  }
  if (r.contains("nodes")) std::tie(rule.minNodes, rule.maxNodes) = asIntRange(r["nodes"], "nodes");
  if (r.contains("ranks")) std::tie(rule.minRanks, rule.maxRanks) = asIntRange(r["ranks"], "ranks");
  if (r.contains("pipe_ops")) {
    rule.numPipeOps = asInt(r["pipe_ops"], "pipe_ops", -1, kMaxPipeOps);
    if (rule.numPipeOps == 0) throw RuleError{"pipe_ops must be -1 or 1.." + std::to_string(kMaxPipeOps)};
  }
  if (r.contains("reg_buff")) rule.regBuff = asInt(r["reg_buff"], "reg_buff", -1, 1);
  auto nameOf = [&](RuleMembers::Key key) -> std::string_view {
    if (!r.contains(key)) return "default";
    if (!r[key].is_string()) throw RuleError{std::string(key.name) + " must be a string"};
    return r[key].text();
  };
  const std::string_view algo = nameOf("algo"), proto = nameOf("proto");
  auto a = parseAlgo(algo);
  if (!a) throw RuleError{"unknown algo \"" + std::string(algo) + "\""};
  auto p = parseProto(proto);
  if (!p) throw RuleError{"unknown proto \"" + std::string(proto) + "\""};
  rule.decision.algo = *a;
  rule.decision.proto = *p;
  if (r.contains("channels")) rule.decision.nChannels = asInt(r["channels"], "channels", 0, kMaxChannels);
  if (r.contains("chunk")) rule.decision.chunkBytes = asU64(r["chunk"], "chunk");
  if (r.contains("confidence")) {
    const FlatValue c = r["confidence"];
    if (!c.is_number() || !std::isfinite(c.get<double>()) || c.get<double>() < 0 || c.get<double>() > 1)
      throw RuleError{"confidence must be a number in [0, 1]"};
    rule.confidence = c.get<double>();
  }
  if (auto s = validateDecision(rule.decision); !s) throw RuleError{s.error()};
  if (r.contains("evidence")) {  // malformed evidence makes the rule unverified, not the profile unusable
    try {
      rule.evidence = parseEvidence(r["evidence"]);
    } catch (const RuleError& e) {
      rule.evidenceProblem = e.message;
    } catch (const std::exception& e) {
      rule.evidenceProblem = e.what();
    }
  }
  return rule;
}

double asNumber(FlatValue v, std::string_view what) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) throw RuleError{named(what, " must be a number")};
  return v.get<double>();
}

// {"gpu_cc": 90, "nvlink_GBps": 400, "nics_per_node": 8, "nic_GBps": 50, "source": "..."}: all four
// facts, because multi-node learned rules use nothing else (a partial one would leave them unknown).
ClusterHardware parseFingerprint(FlatValue object) {
  if (!object.is_object())
    throw RuleError{"must be an object {\"gpu_cc\", \"nvlink_GBps\", \"nics_per_node\", \"nic_GBps\"}"};
  const FingerprintMembers f(object);
  if (const auto key = f.unknown()) throw RuleError{"unknown key \"" + std::string(*key) + "\""};
  static constexpr FingerprintMembers::Key kRequired[] = {"nvlink_GBps", "nics_per_node", "nic_GBps"};
  for (const FingerprintMembers::Key key : kRequired)
    if (!f.contains(key))
      throw RuleError{"missing \"" + std::string(key.name) + "\" (declare gpu_cc, nvlink_GBps, nics_per_node, nic_GBps)"};
  ClusterHardware hw;
  // An AMD GPU declares its architecture instead ("gpu_arch": "gfx942"; `dynamiccl probe` reads it from KFD).
  if (f.contains("gpu_arch")) {
    if (!f["gpu_arch"].is_string()) throw RuleError{"gpu_arch must be a string (\"gfx942\")"};
    hw.gpuArch = f["gpu_arch"].text();
  }
  if (f.contains("gpu_cc") || hw.gpuArch.empty()) {
    if (!f.contains("gpu_cc")) throw RuleError{"missing \"gpu_cc\" (declare gpu_cc, nvlink_GBps, nics_per_node, nic_GBps)"};
    hw.computeCap = asInt(f["gpu_cc"], "gpu_cc", kMinComputeCap, kMaxComputeCap);
  }
  hw.nvlinkBwPerGpu_GBps = asNumber(f["nvlink_GBps"], "nvlink_GBps");
  hw.nicsPerNode = asInt(f["nics_per_node"], "nics_per_node", 1, kMaxNicsPerNode);
  hw.nicSpeed_GBps = asNumber(f["nic_GBps"], "nic_GBps");
  if (f.contains("source")) {
    if (!f["source"].is_string()) throw RuleError{"source must be a string"};
    hw.source = f["source"].text();
  }
  if (auto s = validateClusterHardware(hw); !s) throw RuleError{s.error()};
  return hw;
}

// {"provenance": "measured-offline", "fingerprint": {...}, "nccl_version": "2.28.9", "samples": 27,
// "default_samples": 27, "gain": 0.12, "gain_ci": [0.08, 0.16], "date": "2026-11-23"}
Evidence parseEvidence(FlatValue object) {
  if (!object.is_object()) throw RuleError{"evidence must be an object"};
  const EvidenceMembers e(object);
  if (const auto key = e.unknown()) throw RuleError{"evidence: unknown key \"" + std::string(*key) + "\""};
  Evidence ev;
  if (!e.contains("provenance") || !e["provenance"].is_string()) throw RuleError{"evidence: provenance missing"};
  const auto p = parseProvenance(e["provenance"].text());
  if (!p)
    throw RuleError{"evidence: unknown provenance \"" + std::string(e["provenance"].text()) +
                    "\" (measured-offline, measured-in-job, simulated, learned)"};
  ev.provenance = *p;
  auto text = [&](EvidenceMembers::Key key) -> std::string_view {
    if (!e.contains(key)) return "";
    if (!e[key].is_string()) throw RuleError{"evidence: " + std::string(key.name) + " must be a string"};
    return e[key].text();
  };
  ev.ncclVersion = text("nccl_version");
  ev.date = text("date");
  text("note");
  if (e.contains("fingerprint")) {
    try {
      ev.fingerprint = parseFingerprint(e["fingerprint"]);
    } catch (const RuleError& err) {
      throw RuleError{"evidence: fingerprint: " + err.message};
    }
  }
  if (e.contains("samples")) ev.samples = asInt(e["samples"], "evidence: samples", 0, INT_MAX);
  if (e.contains("default_samples"))
    ev.defaultSamples = asInt(e["default_samples"], "evidence: default_samples", 0, INT_MAX);
  if (e.contains("gain")) ev.gain = asNumber(e["gain"], "evidence: gain");
  if (e.contains("gain_ci")) {
    const FlatValue ci = e["gain_ci"];
    if (!ci.is_array() || ci.size() != 2) throw RuleError{"evidence: gain_ci must be [low, high]"};
    ev.gainLow = asNumber(ci[0], "evidence: gain_ci[0]");
    ev.gainHigh = asNumber(ci[1], "evidence: gain_ci[1]");
  }
  if (auto s = validateEvidence(ev); !s) throw RuleError{"evidence: " + s.error()};
  return ev;
}

json evidenceJson(const Evidence& ev);

json fingerprintJson(const ClusterHardware& hw) {
  json j = {{"nvlink_GBps", hw.nvlinkBwPerGpu_GBps}, {"nics_per_node", hw.nicsPerNode}, {"nic_GBps", hw.nicSpeed_GBps}};
  if (hw.computeCap > 0 || hw.gpuArch.empty()) j["gpu_cc"] = hw.computeCap;
  if (!hw.gpuArch.empty()) j["gpu_arch"] = hw.gpuArch;
  if (!hw.source.empty()) j["source"] = hw.source;
  return j;
}

json evidenceJson(const Evidence& ev) {
  json j = {{"provenance", std::string(provenanceName(ev.provenance))}};
  if (ev.fingerprint) j["fingerprint"] = fingerprintJson(*ev.fingerprint);
  if (!ev.ncclVersion.empty()) j["nccl_version"] = ev.ncclVersion;
  if (ev.samples || ev.defaultSamples) {
    j["samples"] = ev.samples;
    j["default_samples"] = ev.defaultSamples;
  }
  if (std::isfinite(ev.gain)) j["gain"] = ev.gain;
  if (std::isfinite(ev.gainLow) && std::isfinite(ev.gainHigh)) j["gain_ci"] = json::array({ev.gainLow, ev.gainHigh});
  if (!ev.date.empty()) j["date"] = ev.date;
  return j;
}

json rangeJson(uint64_t lo, uint64_t hi) { return json::array({lo, hi == UINT64_MAX ? json(nullptr) : json(hi)}); }
json rangeJson(int lo, int hi) { return json::array({lo, hi == INT_MAX ? json(nullptr) : json(hi)}); }

}  // namespace

Status validateDecision(const Decision& d) {
  if (d.algo == Algo::Default && d.proto != Proto::Default)
    return makeError("a proto needs its algo (an algo alone leaves the protocol to NCCL)");
  if (d.nChannels < 0 || d.nChannels > kMaxChannels)
    return makeError("channels must be in [0, " + std::to_string(kMaxChannels) + "]");
  if (d.chunkBytes != 0 && (d.chunkBytes < kMinChunkBytes || d.chunkBytes > kMaxChunkBytes))
    return makeError("chunk must be 0 (keep NCCL's) or in [16, 2^30] bytes");
  if (const uint64_t most = abi::maxTunerChunkBytes(static_cast<int>(d.algo), static_cast<int>(d.proto));
      d.chunkBytes > most)
    return makeError("chunk " + std::to_string(d.chunkBytes) + " is more than NCCL runs correctly for " +
                     std::string(algoName(d.algo)) + "/" + std::string(protoName(d.proto)) + " (" +
                     (most ? "at most " + std::to_string(most) + " bytes at its default buffers" : "NCCL never runs it") +
                     "; docs/NCCL_CHUNKS.md)");
  if (d.keepsAlgoProto() && d.nChannels == 0 && d.chunkBytes == 0)
    return makeError("rule decides nothing (give algo+proto, channels or chunk)");
  return Ok{};
}

Status validateClusterHardware(const ClusterHardware& hw) {
  const bool archOk = hw.gpuArch.size() > 3 && hw.gpuArch.size() <= 16 && hw.gpuArch.starts_with("gfx") &&
                      std::all_of(hw.gpuArch.begin(), hw.gpuArch.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
  if (!hw.gpuArch.empty() && !archOk) return makeError("gpu_arch must be an AMD architecture name (\"gfx942\")");
  const bool amdWithoutCc = !hw.gpuArch.empty() && hw.computeCap == 0;
  if (!amdWithoutCc && (hw.computeCap < kMinComputeCap || hw.computeCap > kMaxComputeCap))
    return makeError("gpu_cc must be an integer in [" + std::to_string(kMinComputeCap) + ", " +
                     std::to_string(kMaxComputeCap) + "] (major x 10 + minor: 80, 90, 100)");
  if (!(hw.nvlinkBwPerGpu_GBps >= 0 && hw.nvlinkBwPerGpu_GBps <= kMaxNvlinkBw_GBps))
    return makeError("nvlink_GBps must be in [0, 1e5] (GB/s per GPU; 0: no NVLink)");
  if (hw.nicsPerNode < 1 || hw.nicsPerNode > kMaxNicsPerNode)
    return makeError("nics_per_node must be an integer in [1, " + std::to_string(kMaxNicsPerNode) + "]");
  if (!(hw.nicSpeed_GBps > 0 && hw.nicSpeed_GBps <= kMaxNicSpeed_GBps))
    return makeError("nic_GBps must be in (0, 1e4] (GB/s per NIC: 400 Gb/s is 50)");
  return Ok{};
}

std::string clusterHardwareToJson(const ClusterHardware& hw) { return fingerprintJson(hw).dump(); }

Expected<ClusterHardware> parseClusterHardwareJson(std::string_view text) {
  if (auto s = checkJsonLimits(text, kMaxProfileBytes); !s) return makeError(s.error());
  try {
    ProfileJsonReader reader(nullptr, nullptr);
    if (!reader.read(text)) return makeError("fingerprint: not valid JSON");
    return parseFingerprint(reader.top().root());
  } catch (const RuleError& e) {
    return makeError("fingerprint: " + e.message);
  } catch (const std::exception& e) {
    return makeError(std::string("fingerprint: ") + e.what());
  }
}

namespace {

// The rules as they are read; the first rule that fails under each profile version (which is known
// only at the end: writers put "version" after "rules").
struct RulesRead {
  std::vector<Rule> rules;
  std::optional<std::pair<size_t, std::string>> error;          // under version 2 (the first rule refused)
  std::optional<std::pair<size_t, std::string>> evidenceInV1;   // the first rule a version 1 refuses for its keys

  // A profile version 1 refuses a rule with evidence for that key (or one sorted before it) first.
  const std::optional<std::pair<size_t, std::string>>& firstError(int version) const {
    if (version >= kFirstEvidenceVersion || !evidenceInV1) return error;
    return error && error->first < evidenceInV1->first ? error : evidenceInV1;
  }
};

// The profile from its top-level members and the rules read (the checks in the order nlohmann's
// tree gave them: top-level keys sorted, then format, version, name, policy, fingerprint, rules).
Expected<Profile> profileFromDocument(FlatValue doc, const json* policy, RulesRead& read) {
  if (!doc.is_object()) return makeError("top level must be a JSON object");
  const TopMembers top(doc);
  if (const auto key = top.unknown()) return makeError("unknown top-level key \"" + std::string(*key) + "\"");
  if (!top.contains("format") || !top["format"].is_string() || top["format"].text() != kFormatName)
    return makeError(std::string("\"format\" must be \"") + std::string(kFormatName) + "\"");
  if (!top.contains("version") || !top["version"].is_number_integer())
    return makeError("\"version\" must be an integer");
  Profile profile;
  const int64_t version = top["version"].get<int64_t>();
  if (version < 1) return makeError("\"version\" must be >= 1");
  if (version > kProfileVersion)
    return makeError("profile version " + std::to_string(version) + " is newer than this plugin reads (" +
                     std::to_string(kProfileVersion) + ")");
  profile.version = static_cast<int>(version);
  if (top.contains("name")) {
    if (!top["name"].is_string()) return makeError("\"name\" must be a string");
    profile.name = top["name"].get<std::string>();
  }
  if (policy) {  // learned weights, kept opaque: learned/ reads them (a bad one refuses the profile there)
    if (!policy->is_object()) return makeError("policy: must be a JSON object");
    profile.policySection = policy->dump();
  }
  if (top.contains("fingerprint")) {
    try {
      profile.hardware = parseFingerprint(top["fingerprint"]);
    } catch (const RuleError& e) {
      return makeError("fingerprint: " + e.message);
    } catch (const std::exception& e) {
      return makeError(std::string("fingerprint: ") + e.what());
    }
  }
  if (!top.contains("rules") || !top["rules"].is_array()) return makeError("\"rules\" must be an array");
  if (const auto& error = read.firstError(profile.version))
    return makeError("rules[" + std::to_string(error->first) + "]: " + error->second);
  profile.rules = std::move(read.rules);
  return profile;
}

// No rule as our writers write it takes under 64 bytes: capacity for that many never moves the
// rules while they are read (a move touches all their memory again); capacity never used costs none.
constexpr size_t kFewestBytesPerRule = 64;

}  // namespace

Expected<Profile> parseProfileJson(std::string_view text) {
  if (auto s = checkJsonLimits(text, kMaxProfileBytes); !s) return makeError(s.error());
  try {
    RulesRead read;
    auto start = [&] {
      read = RulesRead{};
      read.rules.reserve(text.size() / kFewestBytesPerRule);
      adviseHugePages(read.rules.data(), read.rules.capacity() * sizeof(Rule));  // 60k rules are 20 MB
    };
    auto rule = [&](size_t index, FlatValue element) {
      try {
        if (!element.is_object()) throw RuleError{"must be an object"};
        const RuleMembers members(element);
        // Only a rule with evidence or an unknown key reads otherwise under version 1 (rare: checked apart).
        if (!read.evidenceInV1 && (members.unknown() || members.contains("evidence"))) {
          auto problem = ruleKeyProblem(element, kFirstEvidenceVersion - 1);
          if (problem && problem != ruleKeyProblem(element, kFirstEvidenceVersion)) read.evidenceInV1 = {index, *problem};
        }
        Rule& r = read.rules.emplace_back(parseRule(members));
        char origin[32] = "rules[";  // snprintf took 800 instructions a rule
        char* end = std::to_chars(origin + 6, origin + sizeof origin - 1, index).ptr;
        *end++ = ']';
        r.origin.assign(origin, end);
        return true;
      } catch (const RuleError& e) {
        read.error = {index, e.message};
      } catch (const std::exception& e) {
        read.error = {index, e.what()};
      }
      return false;  // the first refused rule is the one named: the rest are only checked as JSON
    };
    ProfileJsonReader reader(start, rule);
    if (!reader.read(text)) return makeError("not valid JSON");
    return profileFromDocument(reader.top().root(), reader.policy(), read);
  } catch (const std::exception& e) {
    return makeError(std::string("profile: ") + e.what());
  }
}

std::string profileToJson(const Profile& profile) {
  json doc;
  doc["format"] = kFormatName;
  doc["version"] = kProfileVersion;  // what this writer writes, whatever version was read
  if (!profile.name.empty()) doc["name"] = profile.name;
  if (profile.hardware) doc["fingerprint"] = fingerprintJson(*profile.hardware);
  json rules = json::array();
  for (const Rule& r : profile.rules) {
    json j;
    j["collective"] = r.collective ? std::string(collectiveName(*r.collective)) : "any";
    j[r.sizeKey == SizeKey::Bytes ? "bytes" : "bytes_per_rank"] = rangeJson(r.minBytes, r.maxBytes);
    if (r.minNodes != 1 || r.maxNodes != INT_MAX) j["nodes"] = rangeJson(r.minNodes, r.maxNodes);
    if (r.minRanks != 1 || r.maxRanks != INT_MAX) j["ranks"] = rangeJson(r.minRanks, r.maxRanks);
    if (r.numPipeOps != -1) j["pipe_ops"] = r.numPipeOps;
    if (r.regBuff != -1) j["reg_buff"] = r.regBuff;
    j["algo"] = std::string(algoName(r.decision.algo));
    j["proto"] = std::string(protoName(r.decision.proto));
    j["channels"] = r.decision.nChannels;
    if (r.decision.chunkBytes) j["chunk"] = r.decision.chunkBytes;
    if (r.confidence != 1.0) j["confidence"] = r.confidence;
    if (r.evidence) j["evidence"] = evidenceJson(*r.evidence);
    rules.push_back(std::move(j));
  }
  doc["rules"] = std::move(rules);
  if (!profile.policySection.empty()) {  // kept as read (learned/ writes it in the encoding that reads fast)
    json section = json::parse(profile.policySection, nullptr, false);
    if (!section.is_discarded()) doc["policy"] = std::move(section);
  }
  // Indented for people; a profile of many rules compact, so it stays within the size the plugin reads
  // (two merged 200k-rule profiles indented come to 106 MB, past kMaxProfileBytes).
  constexpr size_t kIndentedRules = 10000;
  return doc.dump(profile.rules.size() > kIndentedRules ? -1 : 2) + "\n";
}

}  // namespace dynamiccl::policy
