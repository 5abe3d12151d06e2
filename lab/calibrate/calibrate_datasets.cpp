// The datasets `dynamiccl-lab calibrate` fits or checks, one at a time.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "lab/calibrate/calibrate.h"

namespace dynamiccl::sim {

std::vector<std::string> datasetDirs(const std::string& dataDir, const std::string& only) {
  namespace fs = std::filesystem;
  std::vector<std::string> datasets;
  for (const auto& e : fs::directory_iterator(dataDir))
    if (fs::exists(e.path() / "normalized.csv") && (only.empty() || e.path().filename() == only))
      datasets.push_back(e.path().string());
  std::sort(datasets.begin(), datasets.end());
  return datasets;
}

Expected<DatasetCalibrationRun> calibrateDatasetDir(const DatasetCalibrationPlan& plan) {
  CalibrateOptions co;
  co.iterations = plan.iterations;
  co.restarts = plan.restarts;
  std::optional<DatasetCalibration> stored;
  if (plan.check) {
    auto s = loadCalibrationFile(plan.calFile);
    if (!s) return makeError("--check: " + s.error());
    stored = s.value();
    co.fit = false;
  }
  std::optional<DatasetCalibration> warm;
  if (!plan.check && !plan.fresh && std::filesystem::exists(plan.calFile)) {
    if (auto s = loadCalibrationFile(plan.calFile)) warm = s.value();
    co.start = warm ? &*warm : nullptr;
  }
  DatasetCalibrationRun out;
  auto cal = calibrateDataset(plan.dir, co, stored ? &*stored : nullptr, plan.predictions ? &out.predictions : nullptr);
  if (!cal) return makeError(std::filesystem::path(plan.dir).filename().string() + ": " + cal.error());
  out.calibration = std::move(cal.value());
  return out;
}

}  // namespace dynamiccl::sim
