// Ingesting one file: detect its kind, map it onto runs/communicators/observations/decisions, one batch.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "offline/ingest/ingest.h"
#include "offline/measurements/measurements.h"

namespace dynamiccl::ingest {
namespace {

namespace fs = std::filesystem;
constexpr uintmax_t kMaxFileBytes = 512ull << 20;

std::string contentHash(std::string_view text) {  // FNV-1a 64: identity of content, not security
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(ch) >= 0x20) out.push_back(ch);
  }
  return out;
}

std::string envJson(const std::map<std::string, std::string>& env) {
  std::string out = "{";
  for (auto& [k, v] : env) out += (out.size() > 1 ? "," : "") + ("\"" + jsonEscape(k) + "\":\"" + jsonEscape(v) + "\"");
  return out + "}";
}

// AllGather/ReduceScatter TUNING lines print the per-rank share; nccl-tests prints the total.
uint64_t tuningBytesOf(const std::string& collective, uint64_t testBytes, int nRanks) {
  const bool perRank = collective == "allgather" || collective == "reducescatter";
  return perRank && nRanks > 0 ? testBytes / static_cast<uint64_t>(nRanks) : testBytes;
}

// NCCL's own choice for a size when every TUNING line for it agrees.
std::optional<TuningChoice> agreedChoice(const std::vector<TuningChoice>& tuning, const std::string& coll, uint64_t bytes) {
  std::optional<TuningChoice> found;
  for (const TuningChoice& t : tuning) {
    if (t.collective != coll || t.bytes != bytes) continue;
    if (found && (found->algo != t.algo || found->proto != t.proto || found->nChannels() != t.nChannels()))
      return std::nullopt;
    found = t;
  }
  return found;
}

std::string configName(Algo a, Proto p) {
  if (p == Proto::Default) return "algorithm " + std::string(algoNcclName(a)) + " (NCCL's protocol)";
  if (a == Algo::Default) return "protocol " + std::string(protoNcclName(p)) + " (NCCL's algorithm)";
  return std::string(algoNcclName(a)) + "/" + std::string(protoNcclName(p));
}

Status ingestLog(store::Store& store, store::Batch& batch, const ParsedLog& log, const std::string& path,
                 const std::string& hash, FileReport& report) {
  for (const NcclTestsSection& s : log.sections) {
    if (s.collective.empty()) {
      report.skipped["section with unknown collective"] += static_cast<int64_t>(s.rows.size());
      continue;
    }
    store::RunInfo run;
    run.host = s.host;
    if (!s.gpu_name.empty())
      run.system = s.gpu_name + (s.n_nodes > 0 ? " x" + std::to_string(s.n_ranks / s.n_nodes) + " per node" : "");
    // Measured on RCCL: the system text says so (measurements::measuredOnRccl: replays take RCCL's rules)
    // and the run's settings carry the host as the plugin's own rows do.
    const bool rccl = s.library == "RCCL";
    if (rccl) run.system += (run.system.empty() ? "RCCL" : "; RCCL") + (s.nccl_version.empty() ? "" : " " + s.nccl_version);
    run.nccl_version = s.nccl_version;
    std::map<std::string, std::string> env = s.env;
    if (rccl) env["host"] = "rccl";
    run.env_json = envJson(env);
    run.source = path;
    run.source_hash = hash;
    auto runId = store.addRun(run);
    if (!runId) return makeError(runId.error());
    auto comm = store.addCommunicator({*runId, 0, s.n_ranks, s.n_nodes, -1});
    if (!comm) return makeError(comm.error());

    int64_t seq = 0;
    for (const NcclTestsRow& r : s.rows) {
      for (bool inPlace : {false, true}) {
        const double time = inPlace ? r.ip_time_us : r.oop_time_us;
        const int64_t wrong = inPlace ? r.ip_wrong : r.oop_wrong;
        if (std::isnan(time)) {
          if (!inPlace) report.skipped["no time (N/A)"] += 1;
          continue;
        }
        if (wrong > 0) {
          report.skipped["validation failed (#wrong > 0)"] += 1;
          continue;
        }
        store::ObservationRow o;
        o.comm_row = *comm;
        o.seq = seq++;
        o.collective = s.collective;
        o.bytes = r.bytes;
        o.algo = s.forced_algo;
        o.proto = s.forced_proto;
        o.n_channels = s.forced_channels;
        // What ran: NCCL's TUNING line where it says (a count NCCL trimmed is the count that ran).
        int ranChannels = -1;
        if (auto t = agreedChoice(log.tuning, s.collective, tuningBytesOf(s.collective, r.bytes, s.n_ranks))) {
          o.algo = t->algo;
          o.proto = t->proto;
          o.n_channels = ranChannels = t->nChannels();
        } else if (r.reported_algo && r.reported_proto && (s.forced_algo != Algo::Default || s.forced_proto != Proto::Default)) {
          // A forced pair RCCL substitutes runs as the pair rccl-tests reports (a default row keeps it in the note).
          o.algo = *r.reported_algo;
          o.proto = *r.reported_proto;
        }
        o.cpu_us = time;
        o.timing = store::TimingSource::Host;
        o.in_place = inPlace;
        o.busbw_gbps = inPlace ? r.ip_busbw_gbps : r.oop_busbw_gbps;
        o.note = path + (inPlace ? "; in-place" : "; out-of-place");
        // A forced channel count is an arm of its own (measurements::Measurement::forcedChannels reads this).
        if (s.forced_channels > 0)
          o.note += "; forced by env " + s.channels_from +
                    (ranChannels > 0 && ranChannels != s.forced_channels
                         ? " (NCCL ran " + std::to_string(ranChannels) + ": its TUNING line)" : "");
        else if (ranChannels > 0)
          o.note += "; TUNING log: channels " + std::to_string(ranChannels) + " (NCCL's own count)";
        if (r.reported_algo && r.reported_proto)
          o.note += "; reported " + std::string(algoNcclName(*r.reported_algo)) + "/" + std::string(protoNcclName(*r.reported_proto)) +
                    (r.reported_channels > 0 ? "/" + std::to_string(r.reported_channels) + " (channels: a ceiling)" : "");
        batch.observations.push_back(std::move(o));
        report.observations += 1;
      }
    }
  }
  return Ok{};
}

// TUNING lines become decisions (source "nccl") of one communicator of unknown size.
Status ingestTuning(store::Store& store, store::Batch& batch, const ParsedLog& log, const std::string& path,
                    const std::string& hash, FileReport& report) {
  if (log.tuning.empty()) return Ok{};
  store::RunInfo run;
  run.source = path;
  run.source_hash = hash;
  auto runId = store.addRun(run);
  if (!runId) return makeError(runId.error());
  const int ranks = log.sections.empty() ? 0 : log.sections.front().n_ranks;
  const int nodes = log.sections.empty() ? 0 : log.sections.front().n_nodes;
  auto comm = store.addCommunicator({*runId, 0, ranks, nodes, 0});  // rank 0 prints these lines
  if (!comm) return makeError(comm.error());
  int64_t seq = 0;
  for (const TuningChoice& t : log.tuning) {
    store::DecisionRow d;
    d.comm_row = *comm;
    d.seq = seq++;
    d.collective = t.collective;
    d.bytes = t.bytes;
    d.algo = t.algo;
    d.proto = t.proto;
    d.n_channels = t.nChannels();
    d.source = "nccl";
    batch.decisions.push_back(std::move(d));
    report.decisions += 1;
  }
  return Ok{};
}

Status ingestCsv(store::Store& store, store::Batch& batch, const std::vector<measurements::InterchangeRow>& rows,
                 const std::string& path, const std::string& hash, FileReport& report) {
  std::map<std::string, int64_t> runBySystem;
  std::map<std::tuple<int64_t, int, int>, int64_t> commByShape;
  int64_t seq = 0;
  for (const measurements::InterchangeRow& r : rows) {
    auto algo = parseAlgo(r.algo);
    auto proto = parseProto(r.proto);
    auto coll = canonicalCollective(r.collective);
    if (!algo || !proto || !coll) {
      report.skipped["unknown collective/algo/proto name"] += 1;
      continue;
    }
    auto [runIt, newRun] = runBySystem.try_emplace(r.system, 0);
    if (newRun) {
      store::RunInfo run;
      run.system = r.system;
      run.source = path;
      run.source_hash = hash;
      auto id = store.addRun(run);
      if (!id) return makeError(id.error());
      runIt->second = *id;
    }
    auto [commIt, newComm] = commByShape.try_emplace({runIt->second, r.n_ranks, r.n_nodes}, 0);
    if (newComm) {
      auto id = store.addCommunicator({runIt->second, 0, r.n_ranks, r.n_nodes, -1});
      if (!id) return makeError(id.error());
      commIt->second = *id;
    }
    store::ObservationRow o;
    o.comm_row = commIt->second;
    o.seq = seq++;
    o.collective = *coll;
    o.bytes = r.bytes;
    o.algo = *algo;
    o.proto = *proto;
    o.n_channels = r.n_channels;
    o.chunk = r.chunk;
    o.cpu_us = r.time_us;
    o.timing = store::TimingSource::Host;
    o.busbw_gbps = r.busbw_gbps;
    o.note = r.source_note;
    batch.observations.push_back(std::move(o));
    report.observations += 1;
  }
  return Ok{};
}

}  // namespace

Detection detect(const NcclTestsSection& s, const std::vector<TuningChoice>& tuning) {
  Detection d{s.collective, s.n_ranks, s.n_nodes, "", "", s.ambiguous};
  const bool forced = s.forced_algo != Algo::Default || s.forced_proto != Proto::Default;
  // NCCL's TUNING lines say what it ran (they win over what was forced: NCCL ignores an algorithm a
  // collective does not support); sizes where they name another configuration are said.
  int told = 0, differ = 0;
  for (const NcclTestsRow& r : s.rows) {
    auto t = agreedChoice(tuning, s.collective, tuningBytesOf(s.collective, r.bytes, s.n_ranks));
    if (!t) continue;
    ++told;
    differ += (s.forced_algo != Algo::Default && t->algo != s.forced_algo) ||
              (s.forced_proto != Proto::Default && t->proto != s.forced_proto);
  }
  const std::string tuningFrom = "TUNING lines at " + std::to_string(told) + " of " + std::to_string(s.rows.size()) + " sizes";
  if (forced || s.forced_channels > 0) {
    d.config = (forced ? "forced " + configName(s.forced_algo, s.forced_proto) : "NCCL's algorithm and protocol") +
               (s.forced_channels > 0 ? ", forced " + std::to_string(s.forced_channels) + " channels" : "");
    d.from = s.forced_from + (s.forced_channels > 0 ? (s.forced_from.empty() ? "" : "; ") + s.channels_from : "");
    if (told > 0)
      d.from += "; " + tuningFrom + (differ == 0 ? " agree" : ", " + std::to_string(differ) + " naming another (NCCL ran that)");
  } else if (told > 0) {
    d.config = "NCCL's choice per size";
    d.from = tuningFrom;
  } else {
    d.config = "NCCL's default (nothing forced)";
  }
  return d;
}

std::string describe(const Detection& d) {
  std::string out = d.collective.empty() ? "unknown collective" : d.collective;
  out += ", " + (d.n_ranks > 0 ? std::to_string(d.n_ranks) : std::string("?")) + " ranks x " +
         (d.n_nodes > 0 ? std::to_string(d.n_nodes) : std::string("?")) + (d.n_nodes == 1 ? " node" : " nodes");
  if (!d.ambiguous.empty()) return out + ", ambiguous: " + d.ambiguous;
  return out + ", " + d.config + (d.from.empty() ? "" : " (" + d.from + ")");
}

std::vector<std::string> describe(const FileReport& r) {
  const bool whole = r.kind == "skipped" || r.kind == "ambiguous";
  std::string why;
  for (const auto& [reason, n] : r.skipped) why += (why.empty() ? "" : ", ") + reason + (whole ? "" : " x" + std::to_string(n));
  std::string line = r.path + ": ";
  if (r.kind == "ambiguous") line += "refused, " + why;
  else
    line += r.kind + ", " + std::to_string(r.observations) + " observations, " + std::to_string(r.decisions) +
            " decisions" + (why.empty() ? "" : "; skipped: " + why);
  std::vector<std::string> out{line};
  for (const Detection& d : r.detected) out.push_back("    " + describe(d));
  return out;
}

namespace {

// dir's regular files, recursively; links to directories are not followed (as find does).
void collectFiles(const fs::path& dir, InputFiles& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code typeEc;
    if (it->is_directory(typeEc) && !it->is_symlink(typeEc)) collectFiles(it->path(), out);
    else if (it->is_regular_file(typeEc)) out.files.push_back(it->path().string());
  }
  if (ec) out.unreadable.push_back(dir.string() + ": " + ec.message());
}

}  // namespace

InputFiles expandPaths(const std::vector<std::string>& paths) {
  InputFiles out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) collectFiles(p, out);
    else out.files.push_back(p);
  }
  std::sort(out.files.begin(), out.files.end());
  std::sort(out.unreadable.begin(), out.unreadable.end());
  return out;
}

Expected<FileReport> ingestFile(store::Store& store, store::Writer& writer, const std::string& path) try {
  FileReport report;
  report.path = path;
  report.kind = "skipped";
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return makeError(path + ": " + ec.message());
  if (size > kMaxFileBytes) {
    report.skipped["file larger than 512 MiB"] = 1;
    return report;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return makeError(path + ": read failed");
  if (text.substr(0, 4096).find('\0') != std::string::npos) {
    report.skipped["binary file"] = 1;
    return report;
  }
  const std::string hash = contentHash(text);
  auto seen = store.hasSourceHash(hash);
  if (!seen) return makeError(seen.error());
  if (*seen) {
    report.skipped["already ingested (same content)"] = 1;
    return report;
  }

  // Parsed before the transaction, so the write lock is held only while rows are inserted.
  const bool csv = measurements::looksLikeInterchangeCsv(text);
  Expected<std::vector<measurements::InterchangeRow>> rows = std::vector<measurements::InterchangeRow>{};
  ParsedLog log;
  if (csv) {
    report.kind = "interchange-csv";
    rows = measurements::parseInterchangeCsv(text);
    if (!rows) return makeError(path + ": " + rows.error());
  } else {
    log = parseNcclTestsLog(text, path);
    if (log.sections.empty() && log.tuning.empty()) {
      report.skipped[path.ends_with(".csv") ? "CSV without the interchange header" : "no nccl-tests table or TUNING line"] = 1;
      return report;
    }
    report.kind = log.sections.empty() ? "tuning-log" : "nccl-tests";
    for (const NcclTestsSection& section : log.sections) {
      report.detected.push_back(detect(section, log.tuning));
      if (const std::string& why = report.detected.back().ambiguous; !why.empty() && report.kind != "ambiguous") {
        report.kind = "ambiguous";  // refused: a guessed configuration would corrupt the baseline
        report.skipped["ambiguous forced configuration (" + why + ")"] = 1;
      }
    }
    if (report.kind == "ambiguous") return report;
  }

  // One transaction per file: its run rows (the "already ingested" mark) land with its observations,
  // so a process killed mid-ingest leaves nothing behind and the next run ingests the file whole.
  const FileReport parsed = report;
  auto writeRows = [&]() -> Status {
    report = parsed;
    auto seenNow = store.hasSourceHash(hash);  // another process may have ingested it meanwhile
    if (!seenNow) return makeError(seenNow.error());
    if (*seenNow) {
      report.kind = "skipped";
      report.skipped["already ingested (same content)"] = 1;
      return Ok{};
    }
    store::Batch batch;
    if (csv) {
      if (auto s = ingestCsv(store, batch, *rows, path, hash, report); !s) return s;
    } else {
      if (auto s = ingestLog(store, batch, log, path, hash, report); !s) return s;
      if (auto s = ingestTuning(store, batch, log, path, hash, report); !s) return s;
    }
    const store::WriteResult written = writer.write(batch);
    if (!written.committed) return makeError(written.report_once.empty() ? "batch dropped" : written.report_once);
    return Ok{};
  };
  if (auto s = store.atomically(writeRows); !s) return makeError(path + ": " + s.error());
  return report;
} catch (const std::exception& e) {
  return makeError(path + ": " + e.what());
}

}  // namespace dynamiccl::ingest
