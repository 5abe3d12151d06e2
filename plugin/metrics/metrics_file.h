// Opt-in metrics for dashboards (DYNAMICCL_METRICS_DIR): one Prometheus text-format file per process,
// in the node exporter's textfile convention, rewritten atomically (a temporary file renamed over it)
// at epoch boundaries (at most every kMetricsInterval) and at each communicator's finalize. Names and
// labels follow NCCL's Inspector profiler where they mean the same. Never on the hot path.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "plugin/metrics/comm_metrics.h"

namespace dynamiccl::plugin {

// The node exporter reads its textfile directory every scrape (15-60 s); the Inspector writes at most
// every 30 s for the same reason.
inline constexpr std::chrono::seconds kMetricsInterval{30};

// The labels every series of the process carries.
struct ProcessLabels {
  std::string hostname, slurmJobId;
};

// Pure: the file's text for these communicators.
std::string prometheusText(const std::vector<CommMetrics>& comms, const ProcessLabels& labels);

// Where the metrics go (empty dir: nowhere) and the job's label, from the settings.
struct MetricsTarget {
  std::string dir;
  std::string slurmJobId;
};

// The file of this process in dir: dynamiccl_metrics_<hostname>_<pid>.prom.
std::string metricsFilePath(const std::string& dir);

// Keeps the communicator's snapshot and rewrites the file with every communicator's latest (callers
// pace it: the epoch agent every kMetricsInterval, finalize once). A directory that cannot be written
// is said once per process, then retried silently.
void noteMetrics(const MetricsTarget& target, const CommMetrics& m);

}  // namespace dynamiccl::plugin
