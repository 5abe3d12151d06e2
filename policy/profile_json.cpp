// Reading and writing our JSON profile format (nlohmann::json; no exception leaves this file).
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "policy/json_limits.h"
#include "policy/network_eval.h"
#include "policy/profile.h"

namespace dynamiccl::policy {
namespace {

using nlohmann::json;

constexpr std::string_view kFormatName = "dynamiccl-profile";
const std::set<std::string> kTopKeys = {"format", "version", "name", "description", "created_by",
                                        "fingerprint", "rules", "policy", "meta"};
const std::set<std::string> kRuleKeys = {"collective", "bytes", "bytes_per_rank", "nodes", "ranks",
                                         "pipe_ops", "reg_buff", "algo", "proto", "channels", "chunk",
                                         "confidence", "note", "evidence"};
const std::set<std::string> kEvidenceKeys = {"provenance", "fingerprint", "nccl_version", "samples",
                                             "default_samples", "gain", "gain_ci", "date", "note"};

struct RuleError {
  std::string message;
};

uint64_t asU64(const json& v, const std::string& what) {
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw RuleError{what + " must be a non-negative integer"};
  return v.get<uint64_t>();
}

int asInt(const json& v, const std::string& what, int lo, int hi) {
  if (!v.is_number_integer()) throw RuleError{what + " must be an integer"};
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) throw RuleError{what + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"};
  return static_cast<int>(x);
}

// [lo, hi] with hi null meaning unbounded; a single integer means [n, n].
std::pair<uint64_t, uint64_t> asU64Range(const json& v, const std::string& what) {
  if (v.is_number_integer()) {
    const uint64_t n = asU64(v, what);
    return {n, n};
  }
  if (!v.is_array() || v.size() != 2) throw RuleError{what + " must be [lo, hi] (hi may be null)"};
  const uint64_t lo = asU64(v[0], what + "[0]");
  const uint64_t hi = v[1].is_null() ? UINT64_MAX : asU64(v[1], what + "[1]");
  if (lo > hi) throw RuleError{what + " is inverted (lo > hi)"};
  return {lo, hi};
}

std::pair<int, int> asIntRange(const json& v, const std::string& what) {
  if (v.is_number_integer()) {
    const int n = asInt(v, what, 1, INT_MAX);
    return {n, n};
  }
  if (!v.is_array() || v.size() != 2) throw RuleError{what + " must be [lo, hi] (hi may be null)"};
  const int lo = asInt(v[0], what + "[0]", 1, INT_MAX);
  const int hi = v[1].is_null() ? INT_MAX : asInt(v[1], what + "[1]", 1, INT_MAX);
  if (lo > hi) throw RuleError{what + " is inverted (lo > hi)"};
  return {lo, hi};
}

ClusterHardware parseFingerprint(const json& f);
Evidence parseEvidence(const json& e);

// An object's members found in one pass: a 60k-rule profile looks each key of a rule, its evidence
// and its fingerprint up a dozen times, and a map lookup per look was a good part of its first init.
// Built once the object's keys are checked against a set of at most 16 names.
class Members {
 public:
  explicit Members(const json& object) {
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (count_ == fields_.size()) throw RuleError{"too many keys"};
      fields_[count_++] = {it.key(), &it.value()};
    }
  }
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const json& operator[](std::string_view key) const { return *find(key); }

 private:
  const json* find(std::string_view key) const {
    for (size_t i = 0; i < count_; ++i)
      if (fields_[i].first == key) return fields_[i].second;
    return nullptr;
  }
  std::array<std::pair<std::string_view, const json*>, 16> fields_{};
  size_t count_ = 0;
};

Rule parseRule(const json& object, int version) {
  if (!object.is_object()) throw RuleError{"must be an object"};
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!kRuleKeys.count(it.key()) || (it.key() == "evidence" && version < kFirstEvidenceVersion))
      throw RuleError{"unknown key \"" + it.key() + "\"" +
                      (it.key() == "evidence" ? " (evidence needs \"version\": 2)" : "")};
  const Members r(object);
  Rule rule;
  if (r.contains("collective")) {
    const json& c = r["collective"];
    if (!c.is_string()) throw RuleError{"collective must be a string"};
    const std::string s = c.get<std::string>();
    if (s != "any" && s != "*") {
      auto coll = parseCollective(s);
      if (!coll) throw RuleError{"unknown collective \"" + s + "\""};
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
  auto nameOf = [&](const char* key) -> std::string {
    if (!r.contains(key)) return "default";
    if (!r[key].is_string()) throw RuleError{std::string(key) + " must be a string"};
    return r[key].get<std::string>();
  };
  const std::string algo = nameOf("algo"), proto = nameOf("proto");
  auto a = parseAlgo(algo);
  if (!a) throw RuleError{"unknown algo \"" + algo + "\""};
  auto p = parseProto(proto);
  if (!p) throw RuleError{"unknown proto \"" + proto + "\""};
  rule.decision.algo = *a;
  rule.decision.proto = *p;
  if (r.contains("channels")) rule.decision.nChannels = asInt(r["channels"], "channels", 0, kMaxChannels);
  if (r.contains("chunk")) rule.decision.chunkBytes = asU64(r["chunk"], "chunk");
  if (r.contains("confidence")) {
    const json& c = r["confidence"];
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

const std::set<std::string> kFingerprintKeys = {"gpu_cc", "nvlink_GBps", "nics_per_node", "nic_GBps", "source"};

double asNumber(const json& v, const std::string& what) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) throw RuleError{what + " must be a number"};
  return v.get<double>();
}

// {"gpu_cc": 90, "nvlink_GBps": 400, "nics_per_node": 8, "nic_GBps": 50, "source": "..."}: all four
// facts, because multi-node learned rules use nothing else (a partial one would leave them unknown).
ClusterHardware parseFingerprint(const json& object) {
  if (!object.is_object())
    throw RuleError{"must be an object {\"gpu_cc\", \"nvlink_GBps\", \"nics_per_node\", \"nic_GBps\"}"};
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!kFingerprintKeys.count(it.key())) throw RuleError{"unknown key \"" + it.key() + "\""};
  const Members f(object);
  for (const char* key : {"gpu_cc", "nvlink_GBps", "nics_per_node", "nic_GBps"})
    if (!f.contains(key))
      throw RuleError{std::string("missing \"") + key + "\" (declare gpu_cc, nvlink_GBps, nics_per_node, nic_GBps)"};
  ClusterHardware hw;
  hw.computeCap = asInt(f["gpu_cc"], "gpu_cc", kMinComputeCap, kMaxComputeCap);
  hw.nvlinkBwPerGpu_GBps = asNumber(f["nvlink_GBps"], "nvlink_GBps");
  hw.nicsPerNode = asInt(f["nics_per_node"], "nics_per_node", 1, kMaxNicsPerNode);
  hw.nicSpeed_GBps = asNumber(f["nic_GBps"], "nic_GBps");
  if (f.contains("source")) {
    if (!f["source"].is_string()) throw RuleError{"source must be a string"};
    hw.source = f["source"].get<std::string>();
  }
  if (auto s = validateClusterHardware(hw); !s) throw RuleError{s.error()};
  return hw;
}

// {"provenance": "measured-offline", "fingerprint": {...}, "nccl_version": "2.28.9", "samples": 27,
// "default_samples": 27, "gain": 0.12, "gain_ci": [0.08, 0.16], "date": "2026-11-23"}
Evidence parseEvidence(const json& object) {
  if (!object.is_object()) throw RuleError{"evidence must be an object"};
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!kEvidenceKeys.count(it.key())) throw RuleError{"evidence: unknown key \"" + it.key() + "\""};
  const Members e(object);
  Evidence ev;
  if (!e.contains("provenance") || !e["provenance"].is_string()) throw RuleError{"evidence: provenance missing"};
  const auto p = parseProvenance(e["provenance"].get<std::string>());
  if (!p)
    throw RuleError{"evidence: unknown provenance \"" + e["provenance"].get<std::string>() +
                    "\" (measured-offline, measured-in-job, simulated, learned)"};
  ev.provenance = *p;
  auto text = [&](const char* key) -> std::string {
    if (!e.contains(key)) return "";
    if (!e[key].is_string()) throw RuleError{std::string("evidence: ") + key + " must be a string"};
    return e[key].get<std::string>();
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
    const json& ci = e["gain_ci"];
    if (!ci.is_array() || ci.size() != 2) throw RuleError{"evidence: gain_ci must be [low, high]"};
    ev.gainLow = asNumber(ci[0], "evidence: gain_ci[0]");
    ev.gainHigh = asNumber(ci[1], "evidence: gain_ci[1]");
  }
  if (auto s = validateEvidence(ev); !s) throw RuleError{"evidence: " + s.error()};
  return ev;
}

json evidenceJson(const Evidence& ev);

json fingerprintJson(const ClusterHardware& hw) {
  json j = {{"gpu_cc", hw.computeCap}, {"nvlink_GBps", hw.nvlinkBwPerGpu_GBps}, {"nics_per_node", hw.nicsPerNode},
            {"nic_GBps", hw.nicSpeed_GBps}};
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
  if ((d.algo == Algo::Default) != (d.proto == Proto::Default))
    return makeError("algo and proto must be given together (or both left to NCCL)");
  if (d.nChannels < 0 || d.nChannels > kMaxChannels)
    return makeError("channels must be in [0, " + std::to_string(kMaxChannels) + "]");
  if (d.chunkBytes != 0 && (d.chunkBytes < kMinChunkBytes || d.chunkBytes > kMaxChunkBytes))
    return makeError("chunk must be 0 (keep NCCL's) or in [16, 2^30] bytes");
  if (d.keepsAlgoProto() && d.nChannels == 0 && d.chunkBytes == 0)
    return makeError("rule decides nothing (give algo+proto, channels or chunk)");
  return Ok{};
}

Status validateClusterHardware(const ClusterHardware& hw) {
  if (hw.computeCap < kMinComputeCap || hw.computeCap > kMaxComputeCap)
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
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError("fingerprint: not valid JSON");
  try {
    return parseFingerprint(doc);
  } catch (const RuleError& e) {
    return makeError("fingerprint: " + e.message);
  } catch (const std::exception& e) {
    return makeError(std::string("fingerprint: ") + e.what());
  }
}

namespace {

// Where the top-level "rules" array and each of its elements lie in the text: a 60k-rule profile is
// then parsed one rule at a time instead of as one tree of millions of nodes (first init waits for it).
struct RulesSpan {
  size_t open = 0, close = 0;                        // the array's '[' and ']'
  std::vector<std::pair<size_t, size_t>> elements;   // [begin, end) of each element's text
};

// Scans a JSON string from its opening quote; returns the index of its closing quote (or npos) and
// whether it held an escape.
size_t stringEnd(std::string_view text, size_t quote, bool* escaped) {
  for (size_t i = quote + 1; i < text.size(); ++i) {
    if (text[i] == '\\') *escaped = true, ++i;
    else if (text[i] == '"') return i;
  }
  return std::string_view::npos;
}

size_t skipSpace(std::string_view text, size_t i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  return i;
}

// The array's elements from its '[': nullopt when it does not close.
std::optional<RulesSpan> arrayElements(std::string_view text, size_t open) {
  RulesSpan span;
  span.open = open;
  int depth = 0;
  bool comma = false;
  size_t begin = open + 1;
  for (size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      bool escaped = false;
      if ((i = stringEnd(text, i, &escaped)) == std::string_view::npos) return std::nullopt;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (c == '}') {
      return std::nullopt;  // the array closed by a brace: not JSON, the whole parse says so
    } else if (c == ']') {
      // The last element (an empty one after a comma is kept: its parse fails like the whole one).
      if (comma || skipSpace(text, begin) < i) span.elements.emplace_back(begin, i);
      span.close = i;
      return span;
    } else if (c == ',' && depth == 0) {
      span.elements.emplace_back(begin, i);
      begin = i + 1;
      comma = true;
    }
  }
  return std::nullopt;
}

// The "rules" array of a top-level object, when it is plain to see: exactly one key "rules" spelled
// without escapes among keys without escapes, its value an array. Anything else: nullopt, and the
// document is parsed whole (the same answer, or the same error, just slower).
std::optional<RulesSpan> locateRules(std::string_view text) {
  std::optional<RulesSpan> found;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      bool escaped = false;
      const size_t close = stringEnd(text, i, &escaped);
      if (close == std::string_view::npos) return std::nullopt;
      const size_t after = skipSpace(text, close + 1);
      if (depth == 1 && after < text.size() && text[after] == ':') {  // a key of the top-level object
        if (escaped) return std::nullopt;
        if (text.substr(i + 1, close - i - 1) == "rules") {
          const size_t value = skipSpace(text, after + 1);
          if (found || value >= text.size() || text[value] != '[') return std::nullopt;
          found = arrayElements(text, value);
          if (!found) return std::nullopt;
          i = found->close;
          continue;
        }
      }
      i = close;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return found;
}

// The profile of a parsed document; rules come from ruleAt(i) for i < ruleCount (null: not JSON).
template <typename RuleAt>
Expected<Profile> profileFromDocument(const json& doc, size_t ruleCount, RuleAt&& ruleAt) {
  if (!doc.is_object()) return makeError("top level must be a JSON object");
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!kTopKeys.count(it.key())) return makeError("unknown top-level key \"" + it.key() + "\"");
  if (!doc.contains("format") || !doc["format"].is_string() || doc["format"].get<std::string>() != kFormatName)
    return makeError(std::string("\"format\" must be \"") + std::string(kFormatName) + "\"");
  if (!doc.contains("version") || !doc["version"].is_number_integer())
    return makeError("\"version\" must be an integer");
  Profile profile;
  const int64_t version = doc["version"].get<int64_t>();
  if (version < 1) return makeError("\"version\" must be >= 1");
  if (version > kProfileVersion)
    return makeError("profile version " + std::to_string(version) + " is newer than this plugin reads (" +
                     std::to_string(kProfileVersion) + ")");
  profile.version = static_cast<int>(version);
  if (doc.contains("name")) {
    if (!doc["name"].is_string()) return makeError("\"name\" must be a string");
    profile.name = doc["name"].get<std::string>();
  }
  if (doc.contains("policy")) {  // learned weights: bad ones make the whole profile unusable
    auto weights = parsePolicyWeights(doc["policy"].dump());
    auto network = weights ? PolicyNetwork::create(std::move(*weights)) : Error{weights.error()};
    if (!network) return makeError("policy: " + network.error());
    profile.network = *network;
  }
  if (doc.contains("fingerprint")) {
    try {
      profile.hardware = parseFingerprint(doc["fingerprint"]);
    } catch (const RuleError& e) {
      return makeError("fingerprint: " + e.message);
    } catch (const std::exception& e) {
      return makeError(std::string("fingerprint: ") + e.what());
    }
  }
  if (!doc.contains("rules") || !doc["rules"].is_array()) return makeError("\"rules\" must be an array");
  profile.rules.reserve(ruleCount);
  for (size_t i = 0; i < ruleCount; ++i) {
    const std::string where = "rules[" + std::to_string(i) + "]";
    const json* r = ruleAt(i);
    if (r == nullptr) return makeError("not valid JSON");
    try {
      Rule rule = parseRule(*r, profile.version);
      rule.origin = where;
      profile.rules.push_back(std::move(rule));
    } catch (const RuleError& e) {
      return makeError(where + ": " + e.message);
    } catch (const std::exception& e) {
      return makeError(where + ": " + e.what());
    }
  }
  return profile;
}

}  // namespace

Expected<Profile> parseProfileJson(std::string_view text) {
  if (auto s = checkJsonLimits(text, kMaxProfileBytes); !s) return makeError(s.error());
  if (const std::optional<RulesSpan> span = locateRules(text)) {
    // The document with an empty "rules", then each rule by itself.
    std::string top;
    top.reserve(span->open + 2 + (text.size() - span->close));
    top.append(text.substr(0, span->open)).append("[]").append(text.substr(span->close + 1));
    const json doc = json::parse(top.begin(), top.end(), nullptr, /*allow_exceptions=*/false);
    if (!doc.is_discarded()) {
      json one;
      auto ruleAt = [&](size_t i) -> const json* {
        const auto [begin, end] = span->elements[i];
        one = json::parse(text.begin() + begin, text.begin() + end, nullptr, /*allow_exceptions=*/false);
        return one.is_discarded() ? nullptr : &one;
      };
      auto profile = profileFromDocument(doc, span->elements.size(), ruleAt);
      if (profile) return profile;
      // The whole parse reports invalid JSON before any other fault: so does this one.
      for (const auto& [begin, end] : span->elements)
        if (!json::accept(text.begin() + begin, text.begin() + end)) return makeError("not valid JSON");
      return profile;
    }
  }
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError("not valid JSON");
  const json* rules = doc.is_object() && doc.contains("rules") ? &doc["rules"] : nullptr;
  const size_t count = rules && rules->is_array() ? rules->size() : 0;
  return profileFromDocument(doc, count, [&](size_t i) -> const json* { return &(*rules)[i]; });
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
  if (profile.network) doc["policy"] = json::parse(policyWeightsToJson(profile.network->weights()));  // export keeps it
  // Indented for people; a profile of many rules compact, so it stays within the size the plugin reads
  // (two merged 200k-rule profiles indented come to 106 MB, past kMaxProfileBytes).
  constexpr size_t kIndentedRules = 10000;
  return doc.dump(profile.rules.size() > kIndentedRules ? -1 : 2) + "\n";
}

}  // namespace dynamiccl::policy
