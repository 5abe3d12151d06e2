#include "plugin/online/verdict_record.h"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

constexpr const char* kFormat = "dynamiccl-verdicts";
constexpr int kVersion = 1;
constexpr uint64_t kMaxReads = 256;      // slots read at init: jobs of one scope remembered
constexpr uint64_t kMaxPublishTries = 64;  // slots tried at finalize when later jobs took ours
constexpr size_t kMaxRows = 4096;        // a record with more is not one this build writes
// Every op is bounded by the backend; these bound the walk: init reads, finalize tries (the first is always made).
constexpr auto kReadBudget = std::chrono::milliseconds(1000);
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

std::optional<store::VerdictRow> decodeRow(const json& v, const VerdictScope& scope, const std::string& ncclVersion,
                                           int64_t ts_ns) {
  if (!v.is_object()) return std::nullopt;
  store::VerdictRow r;
  r.fingerprint = scope.fingerprint;
  r.nccl_version = ncclVersion;
  r.n_ranks = scope.nRanks;
  r.n_nodes = scope.nNodes;
  r.ts_ns = ts_ns;
  const bool ok = text(v, "collective", r.collective) && integer(v, "min_bytes", r.min_bytes) &&
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

int64_t newest(const std::vector<store::VerdictRow>& rows) {
  int64_t t = 0;
  for (const store::VerdictRow& r : rows) t = std::max(t, r.ts_ns);
  return t;
}

}  // namespace

uint64_t verdictNamespace(const VerdictScope& scope) {
  const coord::Digest d = coord::sha256("dynamiccl-verdicts|" + scope.fingerprint + "|" + std::to_string(scope.nRanks) +
                                        "|" + std::to_string(scope.nNodes));
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = id << 8 | d[i];
  return id;
}

std::string encodeVerdictRecord(const VerdictScope& scope, const std::vector<store::VerdictRow>& rows) {
  if (rows.size() > kMaxRows) return "";
  json verdicts = json::array();
  for (const store::VerdictRow& r : rows)
    verdicts.push_back({{"collective", r.collective}, {"min_bytes", r.min_bytes}, {"max_bytes", r.max_bytes},
                        {"algo", r.algo}, {"proto", r.proto}, {"n_channels", r.n_channels}, {"chunk", r.chunk},
                        {"base_algo", r.base_algo}, {"base_proto", r.base_proto}, {"n", r.n},
                        {"mean_log_us", r.mean_log_us}, {"var_log_us", r.var_log_us}, {"base_n", r.base_n},
                        {"base_mean_log_us", r.base_mean_log_us}, {"base_var_log_us", r.base_var_log_us},
                        {"gain", number(r.gain)}, {"gain_low", number(r.gain_low)}, {"gain_high", number(r.gain_high)},
                        {"state", r.state}});
  const json record = {{"format", kFormat},         {"version", kVersion},         {"fingerprint", scope.fingerprint},
                       {"n_ranks", scope.nRanks},   {"n_nodes", scope.nNodes},     {"nccl_version", scope.ncclVersion},
                       {"ts_ns", newest(rows)},     {"verdicts", std::move(verdicts)}};
  std::string bytes = record.dump();
  return bytes.size() <= coord::kMaxRecordBytes ? bytes : "";
}

std::optional<std::vector<store::VerdictRow>> decodeVerdictRecord(const std::string& bytes, const VerdictScope& scope) {
  if (bytes.size() > coord::kMaxRecordBytes) return std::nullopt;
  const json record = json::parse(bytes, nullptr, false);
  if (!record.is_object()) return std::nullopt;
  std::string format, fingerprint, ncclVersion;
  int version = 0, nRanks = 0, nNodes = 0;
  int64_t ts_ns = 0;
  const auto verdicts = record.find("verdicts");
  if (!text(record, "format", format) || format != kFormat || !integer(record, "version", version) ||
      version != kVersion || !text(record, "fingerprint", fingerprint) || fingerprint != scope.fingerprint ||
      !integer(record, "n_ranks", nRanks) || nRanks != scope.nRanks || !integer(record, "n_nodes", nNodes) ||
      nNodes != scope.nNodes || !text(record, "nccl_version", ncclVersion) || !integer(record, "ts_ns", ts_ns) ||
      verdicts == record.end() || !verdicts->is_array() || verdicts->size() > kMaxRows)
    return std::nullopt;
  std::vector<store::VerdictRow> rows;
  for (const json& v : *verdicts) {
    auto r = decodeRow(v, scope, ncclVersion, ts_ns);
    if (!r) return std::nullopt;
    rows.push_back(std::move(*r));
  }
  return rows;
}

std::vector<store::VerdictRow> readTravelledVerdicts(coord::RecordStore& backend, VerdictScope& scope) {
  const uint64_t ns = verdictNamespace(scope);
  const auto deadline = std::chrono::steady_clock::now() + kReadBudget;
  std::vector<store::VerdictRow> best;
  for (uint64_t n = 0; n < kMaxReads && std::chrono::steady_clock::now() < deadline; ++n, ++scope.nextSlot) {
    auto bytes = backend.read(ns, scope.nextSlot);
    if (!bytes.ok()) {
      logWarn("in-job verification: verdicts in %s unreadable (%s); resumed from what was read",
              backend.describe().c_str(), bytes.error().c_str());
      break;
    }
    if (!*bytes) break;  // the first free slot: where this job's verdicts go
    auto rows = decodeVerdictRecord(**bytes, scope);
    if (!rows) {
      logWarn("in-job verification: the verdicts record in slot %llu of %s is not one of this scope's; ignored",
              static_cast<unsigned long long>(scope.nextSlot), backend.describe().c_str());
      continue;
    }
    if (best.empty() || newest(*rows) >= newest(best)) best = std::move(*rows);
  }
  return best;
}

bool reachedDeadline(coord::Deadline by) { return std::chrono::steady_clock::now() + kCutShortMargin >= by; }

Expected<uint64_t> publishVerdicts(coord::RecordStore& backend, const VerdictScope& scope,
                                   const std::vector<store::VerdictRow>& rows, coord::Deadline by) {
  using Clock = std::chrono::steady_clock;
  const std::string bytes = encodeVerdictRecord(scope, rows);
  if (bytes.empty()) return makeError("the verdicts exceed a record's bound");
  const uint64_t ns = verdictNamespace(scope);
  const auto deadline = std::min<coord::Deadline>(Clock::now() + kPublishBudget, by);
  uint64_t slot = scope.nextSlot;
  for (uint64_t n = 0; n < kMaxPublishTries; ++n, ++slot) {
    if (Clock::now() >= (n ? deadline : by)) break;
    switch (backend.publishBy(ns, slot, bytes, by)) {
      case coord::PublishResult::Won: return slot;
      case coord::PublishResult::Failed:
        return makeError((reachedDeadline(by) ? "no answer in time for slot " : "the backend refused slot ") +
                         std::to_string(slot));
      case coord::PublishResult::Lost: break;  // a job that ended meanwhile took it: the next
    }
  }
  if (slot == scope.nextSlot) return makeError("no time left");
  return makeError("no free slot from " + std::to_string(scope.nextSlot) + " to " + std::to_string(slot - 1));
}

}  // namespace dynamiccl::plugin
