#include "plugin/metrics/metrics_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "plugin/log.h"

namespace dynamiccl::plugin {
namespace {

// A label value as the text format quotes it: backslash, double quote and newline escaped.
std::string quoted(const std::string& v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

std::string sampleValue(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string commLabels(const CommMetrics& m, const ProcessLabels& p) {
  char id[24];
  std::snprintf(id, sizeof id, "%016" PRIx64, m.commId);
  return "comm_id=\"" + std::string(id) + "\",hostname=\"" + quoted(p.hostname) + "\",rank=\"" +
         std::to_string(m.rank) + "\",nranks=\"" + std::to_string(m.nRanks) + "\",n_nodes=\"" +
         std::to_string(m.nNodes) + "\",slurm_job_id=\"" + quoted(p.slurmJobId) + "\",library=\"" +
         quoted(m.library) + "\"";
}

// One metric family: its HELP and TYPE once, then a sample per communicator the filter keeps.
class Family {
 public:
  Family(std::string& out, const char* name, const char* type, const char* help) : out_(out), name_(name) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string& labels, double value) { out_ += name_ + "{" + labels + "} " + sampleValue(value) + "\n"; }

 private:
  std::string& out_;
  std::string name_;
};

struct Entry {
  CommMetrics metrics;
  uint64_t order = 0;
};

struct MetricsState {
  std::mutex mutex;
  std::map<std::pair<uint64_t, int>, Entry> comms;
  uint64_t order = 0;
  bool saidFailure = false;
  ProcessLabels labels;
  bool labelled = false;
};

MetricsState& state() {
  static auto* s = new MetricsState();  // never destroyed: a finalize may run after exit handlers
  return *s;
}

// Ended communicators kept in the file at most: a process that creates many keeps the newest.
constexpr size_t kMostEnded = 256;

void dropOldestEnded(MetricsState& s) {
  size_t ended = 0;
  for (const auto& [key, e] : s.comms) ended += e.metrics.ended;
  while (ended > kMostEnded) {
    auto oldest = s.comms.end();
    for (auto it = s.comms.begin(); it != s.comms.end(); ++it)
      if (it->second.metrics.ended && (oldest == s.comms.end() || it->second.order < oldest->second.order)) oldest = it;
    s.comms.erase(oldest);
    --ended;
  }
}

ProcessLabels processLabels() {
  ProcessLabels p;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) p.hostname = host;
  return p;
}

// Writes the whole text to a temporary file beside the target and renames it over the target: a
// reader sees the old file or the new one, never a part.
bool writeAtomically(const std::string& path, const std::string& text, std::string& why) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = std::strerror(n < 0 ? errno : ENOSPC);
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    why = std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string prometheusText(const std::vector<CommMetrics>& comms, const ProcessLabels& labels) {
  std::string out;
  std::vector<std::string> base;
  base.reserve(comms.size());
  for (const CommMetrics& m : comms) base.push_back(commLabels(m, labels));
  {
    Family f(out, "dynamiccl_calls_total", "counter", "Calls NCCL asked the tuner about.");
    for (size_t i = 0; i < comms.size(); ++i)
      for (int c = 0; c < kNumCollectives; ++c)
        if (const uint64_t v = comms[i].calls[c])
          f.sample(base[i] + ",collective=\"" + std::string(collectiveNcclName(static_cast<Collective>(c))) + "\"",
                   static_cast<double>(v));
  }
  {
    Family f(out, "dynamiccl_profiled_calls_total", "counter",
             "Profiled calls by what ran: the plugin's choice (honoured), another than it chose, or NCCL's own "
             "choice where the plugin left it (their shares estimate every call's).");
    for (size_t i = 0; i < comms.size(); ++i) {
      f.sample(base[i] + ",outcome=\"honoured\"", static_cast<double>(comms[i].profiledHonoured));
      f.sample(base[i] + ",outcome=\"not_honoured\"", static_cast<double>(comms[i].profiledNotHonoured));
      f.sample(base[i] + ",outcome=\"nccl_choice\"", static_cast<double>(comms[i].profiledNcclChoice));
    }
  }
  auto gauge = [&](const char* name, const char* help, auto value, bool leaderOnly) {
    Family f(out, name, "gauge", help);
    for (size_t i = 0; i < comms.size(); ++i)
      if (!leaderOnly || comms[i].leader) f.sample(base[i], static_cast<double>(value(comms[i])));
  };
  gauge("dynamiccl_online", "1 where online learning runs on the communicator.", [](const CommMetrics& m) { return m.online; }, false);
  gauge("dynamiccl_table_version", "The online table version in force; 0: the static table.",
        [](const CommMetrics& m) { return m.version; }, false);
  gauge("dynamiccl_coord_frozen", "1 where the version in force stays for good (a frozen record or a store that did not answer).",
        [](const CommMetrics& m) { return m.frozen; }, false);
  {
    Family f(out, "dynamiccl_coord_unadopted_records_total", "counter",
             "Records the coordination store held that this rank did not write or adopt, by cause.");
    for (size_t i = 0; i < comms.size(); ++i) {
      if (!comms[i].online) continue;
      f.sample(base[i] + ",cause=\"not_sealed_for_this_job\"", static_cast<double>(comms[i].foreignRecords));
      f.sample(base[i] + ",cause=\"other_than_adopted\"", static_cast<double>(comms[i].otherRecords));
    }
  }
  gauge("dynamiccl_measured_calls", "Calls the leader profiled for the learner.",
        [](const CommMetrics& m) { return m.measuredCalls; }, true);
  gauge("dynamiccl_measured_share", "Share of calls the leader profiles now.",
        [](const CommMetrics& m) { return m.measureShare; }, true);
  gauge("dynamiccl_measurement_cost_ratio", "What profiling costs, share of collective time.",
        [](const CommMetrics& m) { return m.measureCostShare; }, true);
  gauge("dynamiccl_exploration_cost_ratio", "What trials slower than NCCL's choice cost against it, measured, share of collective time.",
        [](const CommMetrics& m) { return m.exploreCostShare; }, true);
  gauge("dynamiccl_measured_gain_ratio", "What runs saves against NCCL's choices, measured, share of collective time.",
        [](const CommMetrics& m) { return m.gainShare; }, true);
  gauge("dynamiccl_collective_time_microseconds", "Collective time of the calls so far (measured where measured).",
        [](const CommMetrics& m) { return m.collectiveTime_us; }, true);
  gauge("dynamiccl_time_saved_microseconds", "Collective time saved against NCCL's choices so far (gain times time).",
        [](const CommMetrics& m) { return m.gainShare * m.collectiveTime_us; }, true);
  gauge("dynamiccl_net_gain_ratio", "Gain less measuring and exploring, share of collective time.",
        [](const CommMetrics& m) { return m.gainShare - m.measureCostShare - m.exploreCostShare; }, true);
  {
    Family f(out, "dynamiccl_keys", "gauge", "Keys (collective, size bucket) with calls, by the search's state.");
    for (size_t i = 0; i < comms.size(); ++i) {
      if (!comms[i].leader) continue;
      f.sample(base[i] + ",state=\"searching\"", comms[i].searchingKeys);
      f.sample(base[i] + ",state=\"settled\"", comms[i].keys - comms[i].searchingKeys);
    }
  }
  gauge("dynamiccl_communicator_ended", "1 once the communicator was finalized: its values are final.",
        [](const CommMetrics& m) { return m.ended; }, false);
  return out;
}

std::string metricsFilePath(const std::string& dir) {
  MetricsState& s = state();
  std::string host;
  {
    std::lock_guard lock(s.mutex);
    if (!s.labelled) {
      s.labels = processLabels();
      s.labelled = true;
    }
    host = s.labels.hostname.empty() ? "unknown" : s.labels.hostname;
  }
  for (char& ch : host)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.')) ch = '_';
  return dir + "/dynamiccl_metrics_" + host + "_" + std::to_string(getpid()) + ".prom";
}

void noteMetrics(const MetricsTarget& target, const CommMetrics& m) {
  if (target.dir.empty()) return;
  const std::string path = metricsFilePath(target.dir);
  MetricsState& s = state();
  std::lock_guard lock(s.mutex);
  s.labels.slurmJobId = target.slurmJobId;
  Entry& e = s.comms[{m.commId, m.rank}];
  e.metrics = m;
  e.order = ++s.order;
  dropOldestEnded(s);
  std::vector<CommMetrics> all;
  all.reserve(s.comms.size());
  for (const auto& [key, entry] : s.comms) all.push_back(entry.metrics);
  std::string why;
  if (!writeAtomically(path, prometheusText(all, s.labels), why) && !s.saidFailure) {
    s.saidFailure = true;
    logWarn("metrics: cannot write %s (%s): DYNAMICCL_METRICS_DIR must name a writable directory; no metrics file "
            "this process, retried at each boundary and finalize", path.c_str(), why.c_str());
  }
}

}  // namespace dynamiccl::plugin
