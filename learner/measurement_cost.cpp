#include "learner/measurement_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "policy/policy.h"

namespace dynamiccl::learner {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr uint64_t kMaxCalibrationBytes = 1 << 20;  // a calibration is a few dozen sizes
constexpr int kRelease231 = 23100;

}  // namespace

MeasurementCost MeasurementCost::published(int ncclVersionCode) {
  MeasurementCost m;
  // NVIDIA/nccl #2355 (8x A100, Coll|KernelCh on): 2.31.2 "about 4.3% to 13.3% overhead from 128 KB to
  // 4 MB", 2.29.7 "around 0.1% to 1.1%"; PR #2357: a 1 MB allreduce 10.49% slower on 2.31.2, 0.44% on 2.29.7.
  if (ncclVersionCode == 0 || ncclVersionCode >= kRelease231) {
    m.source_ = "published: NVIDIA/nccl #2355 and #2357, NCCL 2.31.2 on 8x A100";
    m.ncclVersion_ = "2.31.2";
    m.points_ = {{128 * kKiB, 0.043}, {1 * kMiB, 0.1049}, {4 * kMiB, 0.133}};
  } else {
    m.source_ = "published: NVIDIA/nccl #2355 and #2357, NCCL 2.29.7 on 8x A100";
    m.ncclVersion_ = "2.29.7";
    m.points_ = {{128 * kKiB, 0.001}, {1 * kMiB, 0.0044}, {4 * kMiB, 0.011}};
  }
  return m;
}

double MeasurementCost::share(uint64_t bytes) const {
  if (points_.empty()) return 0;
  if (bytes <= points_.front().bytes) return points_.front().share;
  if (bytes >= points_.back().bytes) return points_.back().share;
  auto hi = std::upper_bound(points_.begin(), points_.end(), bytes,
                             [](uint64_t b, const MeasurementCostPoint& p) { return b < p.bytes; });
  auto lo = hi - 1;
  const double x = std::log2(static_cast<double>(bytes)), x0 = std::log2(static_cast<double>(lo->bytes)),
               x1 = std::log2(static_cast<double>(hi->bytes));
  return lo->share + (hi->share - lo->share) * (x - x0) / (x1 - x0);
}

Expected<MeasurementCost> MeasurementCost::fromJson(std::string_view text) try {
  if (Status s = policy::checkJsonLimits(text, kMaxCalibrationBytes); !s) return makeError(s.error());
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("not a JSON object");
  if (!j.contains("points") || !j["points"].is_array() || j["points"].empty())
    return makeError("no \"points\" (an array of {\"bytes\", \"share\"})");
  std::map<uint64_t, double> byBytes;
  for (const auto& p : j["points"]) {
    if (!p.is_object() || !p.contains("bytes") || !p["bytes"].is_number_unsigned() || !p.contains("share") ||
        !p["share"].is_number())
      return makeError("a point is not {\"bytes\": unsigned, \"share\": number}");
    const double s = p["share"].get<double>();
    if (!std::isfinite(s) || s < 0 || s > 10) return makeError("a share outside [0, 10]");
    if (!byBytes.emplace(p["bytes"].get<uint64_t>(), s).second) return makeError("two points at one size");
  }
  MeasurementCost m;
  m.source_ = j.value("source", std::string("calibration"));
  m.ncclVersion_ = j.value("nccl_version", std::string());
  for (const auto& [b, s] : byBytes) m.points_.push_back({b, s});
  return m;
} catch (const std::exception& e) {
  return makeError(e.what());
}

Expected<MeasurementCost> MeasurementCost::fromRuns(const std::vector<std::pair<uint64_t, double>>& off_us,
                                                    const std::vector<std::pair<uint64_t, double>>& on_us,
                                                    std::string source) {
  std::map<uint64_t, double> off(off_us.begin(), off_us.end());
  MeasurementCost m;
  m.source_ = std::move(source);
  std::map<uint64_t, double> on(on_us.begin(), on_us.end());
  for (const auto& [bytes, t_on] : on) {
    auto it = off.find(bytes);
    if (it == off.end() || !(it->second > 0) || !(t_on > 0)) continue;
    m.points_.push_back({bytes, std::max(0.0, t_on / it->second - 1)});
  }
  if (m.points_.empty()) return makeError("no size measured both with and without the profiler");
  return m;
}

std::string MeasurementCost::toJson() const {
  nlohmann::json j;
  j["source"] = source_;
  if (!ncclVersion_.empty()) j["nccl_version"] = ncclVersion_;
  j["points"] = nlohmann::json::array();
  for (const auto& p : points_) j["points"].push_back({{"bytes", p.bytes}, {"share", p.share}});
  return j.dump(2) + "\n";
}

}  // namespace dynamiccl::learner
