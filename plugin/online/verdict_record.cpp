#include "plugin/online/verdict_record.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

constexpr const char* kFormat = "dynamiccl-verdicts";
constexpr int kVersion = 2;  // 2: a ring of records, each with its sequence and every row's time
// Records one scope keeps, slots 1..8: each folds the newest one before it, so a reader needs only the
// newest; the others ride out jobs that end together. Memory and reads stay this size whatever the jobs.
constexpr uint64_t kRingSlots = 8;
constexpr int kPublishTries = 4;         // a job that ended meanwhile took our slot: read the ring again
constexpr size_t kMaxRows = 4096;        // a record with more is not one this build writes
// Every op is bounded by the backend; the publish also by this (the first try is always made).
constexpr auto kPublishBudget = std::chrono::milliseconds(200);
constexpr auto kCutShortMargin = std::chrono::milliseconds(5);

using nlohmann::json;

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

bool text(const json& o, const char* key, std::string& out) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}
template <typename Int>
bool integer(const json& o, const char* key, Int& out) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) return false;
  out = it->get<Int>();
  return true;
}
bool real(const json& o, const char* key, double& out, bool nullIsNan = false) {
  const auto it = o.find(key);
  if (it == o.end()) return false;
  if (nullIsNan && it->is_null()) {
    out = NAN;
    return true;
  }
  if (!it->is_number()) return false;
  out = it->get<double>();
  return std::isfinite(out);
}

std::optional<store::VerdictRow> decodeRow(const json& v, const VerdictScope& scope, const std::string& ncclVersion) {
  if (!v.is_object()) return std::nullopt;
  store::VerdictRow r;
  r.fingerprint = scope.fingerprint;
  r.nccl_version = ncclVersion;
  r.n_ranks = scope.nRanks;
  r.n_nodes = scope.nNodes;
  const bool ok = integer(v, "ts_ns", r.ts_ns) && text(v, "collective", r.collective) && integer(v, "min_bytes", r.min_bytes) &&
                  integer(v, "max_bytes", r.max_bytes) && text(v, "algo", r.algo) && text(v, "proto", r.proto) &&
                  integer(v, "n_channels", r.n_channels) && integer(v, "chunk", r.chunk) &&
                  text(v, "base_algo", r.base_algo) && text(v, "base_proto", r.base_proto) && integer(v, "n", r.n) &&
                  real(v, "mean_log_us", r.mean_log_us) && real(v, "var_log_us", r.var_log_us) &&
                  integer(v, "base_n", r.base_n) && real(v, "base_mean_log_us", r.base_mean_log_us) &&
                  real(v, "base_var_log_us", r.base_var_log_us) && real(v, "gain", r.gain, true) &&
                  real(v, "gain_low", r.gain_low, true) && real(v, "gain_high", r.gain_high, true) &&
                  text(v, "state", r.state);
  if (!ok || r.n < 0 || r.base_n < 0 || r.var_log_us < 0 || r.base_var_log_us < 0 || r.min_bytes > r.max_bytes)
    return std::nullopt;
  return r;
}

// One record of the ring: which job of the scope wrote it (1, 2, ...) and the verdicts it folds.
struct VerdictRecord {
  uint64_t sequence = 0;
  std::vector<store::VerdictRow> rows;
};

// JSON of a record; "" when it would exceed the backend's record bound.
std::string encodeVerdictRecord(const VerdictScope& scope, const VerdictRecord& record) {
  if (record.rows.size() > kMaxRows) return "";
  json verdicts = json::array();
  for (const store::VerdictRow& r : record.rows)
    verdicts.push_back({{"ts_ns", r.ts_ns}, {"collective", r.collective}, {"min_bytes", r.min_bytes},
                        {"max_bytes", r.max_bytes}, {"algo", r.algo}, {"proto", r.proto}, {"n_channels", r.n_channels},
                        {"chunk", r.chunk}, {"base_algo", r.base_algo}, {"base_proto", r.base_proto}, {"n", r.n},
                        {"mean_log_us", r.mean_log_us}, {"var_log_us", r.var_log_us}, {"base_n", r.base_n},
                        {"base_mean_log_us", r.base_mean_log_us}, {"base_var_log_us", r.base_var_log_us},
                        {"gain", number(r.gain)}, {"gain_low", number(r.gain_low)}, {"gain_high", number(r.gain_high)},
                        {"state", r.state}});
  const json out = {{"format", kFormat},           {"version", kVersion},         {"fingerprint", scope.fingerprint},
                    {"n_ranks", scope.nRanks},     {"n_nodes", scope.nNodes},     {"nccl_version", scope.ncclVersion},
                    {"sequence", record.sequence}, {"verdicts", std::move(verdicts)}};
  std::string bytes = out.dump();
  return bytes.size() <= coord::kMaxRecordBytes ? bytes : "";
}

// A record of this scope, each field checked; nullopt for anything else (another scope's, an older
// format's, planted bytes).
std::optional<VerdictRecord> decodeVerdictRecord(const std::string& bytes, const VerdictScope& scope) {
  if (bytes.size() > coord::kMaxRecordBytes) return std::nullopt;
  const json record = json::parse(bytes, nullptr, false);
  if (!record.is_object()) return std::nullopt;
  std::string format, fingerprint, ncclVersion;
  int version = 0, nRanks = 0, nNodes = 0;
  int64_t sequence = 0;
  VerdictRecord out;
  const auto verdicts = record.find("verdicts");
  if (!text(record, "format", format) || format != kFormat || !integer(record, "version", version) ||
      version != kVersion || !text(record, "fingerprint", fingerprint) || fingerprint != scope.fingerprint ||
      !integer(record, "n_ranks", nRanks) || nRanks != scope.nRanks || !integer(record, "n_nodes", nNodes) ||
      nNodes != scope.nNodes || !text(record, "nccl_version", ncclVersion) ||
      !integer(record, "sequence", sequence) || sequence <= 0 || verdicts == record.end() ||
      !verdicts->is_array() || verdicts->size() > kMaxRows)
    return std::nullopt;
  out.sequence = static_cast<uint64_t>(sequence);
  for (const json& v : *verdicts) {
    auto r = decodeRow(v, scope, ncclVersion);
    if (!r) return std::nullopt;
    out.rows.push_back(std::move(*r));
  }
  return out;
}

// The ring as one read (one etcd request): each slot's bytes, and the newest record of this scope.
struct Ring {
  std::vector<std::optional<std::string>> slots;  // slot i + 1
  VerdictRecord newest;                            // sequence 0: none
  size_t unreadable = 0;                           // records not of this scope (ignored)
};

std::vector<uint64_t> ringKeys() {
  std::vector<uint64_t> keys;
  for (uint64_t s = 1; s <= kRingSlots; ++s) keys.push_back(s);
  return keys;
}

Expected<Ring> readRing(coord::RecordStore& backend, const VerdictScope& scope, coord::Deadline by = coord::kNoDeadline) {
  auto slots = backend.readMany(verdictNamespace(scope), ringKeys(), 0, by);
  if (!slots.ok()) return makeError(slots.error());
  Ring ring;
  ring.slots = std::move(*slots);
  for (const std::optional<std::string>& bytes : ring.slots) {
    if (!bytes) continue;
    auto record = decodeVerdictRecord(*bytes, scope);
    if (!record) ++ring.unreadable;
    else if (record->sequence > ring.newest.sequence) ring.newest = std::move(*record);
  }
  return ring;
}

// The ring's newest verdicts with this job's over them, per candidate the newer.
std::vector<store::VerdictRow> folded(std::vector<store::VerdictRow> older, const std::vector<store::VerdictRow>& rows) {
  for (const store::VerdictRow& r : rows) {
    auto same = std::find_if(older.begin(), older.end(), [&](const store::VerdictRow& o) {
      return o.collective == r.collective && o.min_bytes == r.min_bytes && o.algo == r.algo && o.proto == r.proto &&
             o.n_channels == r.n_channels;  // a channel count is its own candidate
    });
    if (same == older.end()) older.push_back(r);
    else if (r.ts_ns >= same->ts_ns) *same = r;
  }
  return older;
}

}  // namespace

uint64_t verdictNamespace(const VerdictScope& scope) {
  const Digest d = sha256("dynamiccl-verdicts|" + scope.fingerprint + "|" + std::to_string(scope.nRanks) +
                                        "|" + std::to_string(scope.nNodes));
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = id << 8 | d[i];
  return id;
}

std::vector<store::VerdictRow> readTravelledVerdicts(coord::RecordStore& backend, const VerdictScope& scope) {
  auto ring = readRing(backend, scope);
  if (!ring.ok()) {
    logWarn("in-job verification: verdicts in %s unreadable (%s); not resumed from them", backend.describe().c_str(),
            ring.error().c_str());
    return {};
  }
  if (ring->unreadable)
    logWarn("in-job verification: %zu verdicts record(s) in %s not of this scope or format; ignored (the ring "
            "replaces them in turn)", ring->unreadable, backend.describe().c_str());
  return std::move(ring->newest.rows);
}

bool reachedDeadline(coord::Deadline by) { return std::chrono::steady_clock::now() + kCutShortMargin >= by; }

Expected<uint64_t> publishVerdicts(coord::RecordStore& backend, const VerdictScope& scope,
                                   const std::vector<store::VerdictRow>& rows, coord::Deadline by) {
  using Clock = std::chrono::steady_clock;
  const uint64_t ns = verdictNamespace(scope);
  const auto deadline = std::min<coord::Deadline>(Clock::now() + kPublishBudget, by);
  std::string why = "no time left";
  for (int attempt = 0; attempt < kPublishTries && Clock::now() < (attempt ? deadline : by); ++attempt) {
    // Read again at finalize: jobs that ended since this one started folded theirs; this record folds them all.
    auto ring = readRing(backend, scope, by);
    if (!ring.ok()) return makeError("the ring unreadable: " + ring.error());
    VerdictRecord record{ring->newest.sequence + 1, folded(std::move(ring->newest.rows), rows)};
    const std::string bytes = encodeVerdictRecord(scope, record);
    if (bytes.empty()) return makeError("the verdicts exceed a record's bound");
    const uint64_t slot = (record.sequence - 1) % kRingSlots + 1;
    // The slot holds a record 8 jobs old (folded into every newer one) or none: removed only if unchanged.
    if (const std::optional<std::string>& old = ring->slots[slot - 1]) {
      auto removed = backend.removeIf(ns, slot, *old, by);
      if (!removed.ok())
        return makeError((reachedDeadline(by) ? "no answer in time removing slot " : "the backend refused to remove slot ") +
                         std::to_string(slot) + " (" + removed.error() + ")");
      if (!*removed) {
        why = "slot " + std::to_string(slot) + " changed while this job replaced it";
        continue;
      }
    }
    switch (backend.publishBy(ns, slot, bytes, by)) {
      case coord::PublishResult::Won: return slot;
      case coord::PublishResult::Failed:
        return makeError((reachedDeadline(by) ? "no answer in time for slot " : "the backend refused slot ") +
                         std::to_string(slot));
      case coord::PublishResult::Lost:  // a job that ended meanwhile took it: read the ring again
        why = "jobs ending together took slot " + std::to_string(slot);
        break;
    }
  }
  return makeError(why);
}

}  // namespace dynamiccl::plugin
