#include "offline/tune/logs_to_profile.h"

#include <algorithm>
#include <filesystem>

#include "offline/files/files.h"
#include "offline/ingest/ingest.h"
#include "offline/sim/sim.h"
#include "offline/tune/profile_export.h"
#include "offline/tune/tune_shapes.h"
#include "store/store.h"

namespace dynamiccl::tune {

namespace {

Status ingestAll(const LogsProfilePlan& plan, const std::string& dbPath, LogsProfileReport& out) {
  store::StoreOptions so;
  so.path = dbPath;
  auto db = store::Store::open(so);
  if (!db) return makeError(db.error());
  auto writer = store::Writer::create(**db);
  if (!writer) return makeError(writer.error());
  const ingest::InputFiles inputs = ingest::expandPaths(plan.paths);
  out.unread = inputs.unreadable;
  for (const std::string& f : inputs.files) {
    auto r = ingest::ingestFile(**db, **writer, f);
    if (!r) {
      out.unread.push_back(r.error().starts_with(f + ":") ? r.error() : f + ": " + r.error());
      continue;
    }
    if (r->kind == "ambiguous") ++out.refused;
    for (std::string& line : ingest::describe(*r)) out.files.push_back(std::move(line));
  }
  auto csv = files::OutputFile::open(out.csvPath);
  if (!csv) return makeError(csv.error());
  auto rows = ingest::exportInterchangeCsv(**db, (*csv)->stream());
  if (!rows) return makeError(rows.error());
  if (auto s = (*csv)->close(); !s) return s;
  if (*rows == 0) return makeError("no measurement was read from the given files");
  return Ok{};
}

ShapeTable tableOf(const TunedShape& shape) {
  const TuneResult& result = shape.result;
  const SmoothedResult& s = shape.smoothed;
  ShapeTable t;
  t.shape = shape.backend;
  t.nRanks = result.nRanks;
  t.nNodes = result.nNodes;
  for (const std::string& n : result.dataNotes) t.notes.push_back(n);
  for (const std::string& u : result.undecidable) t.notes.push_back("undecidable: " + u);
  for (size_t c = 0; c < result.collectives.size(); ++c)
    for (size_t i = 0; i < result.collectives[c].keys.size(); ++i) {
      const KeyResult& k = result.collectives[c].keys[i];
      ProfileRow row;
      row.coll = k.key.coll;
      row.bytes = k.key.bytes;
      row.default_us = k.keep().median_us();
      row.default_busbw = measurements::busBandwidth_GBps(row.coll, row.bytes, row.default_us, t.nRanks);
      row.evidence = s.evidencePerCollective[c][i];
      const Config& chosen = s.chosenPerCollective[c][i];
      row.runs_us = row.default_us;
      if (!chosen.keepsAlgoProto()) {
        row.runs = decisionLabel(chosen);
        for (const ConfigStats& e : k.evaluated)
          if (e.config == chosen) row.runs_us = e.median_us();
      }
      row.runs_busbw = measurements::busBandwidth_GBps(row.coll, row.bytes, row.runs_us, t.nRanks);
      t.rows.push_back(row);
    }
  return t;
}

}  // namespace

Expected<LogsProfileReport> profileFromLogs(const LogsProfilePlan& plan) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(plan.workDir, ec);
  LogsProfileReport out;
  out.csvPath = (fs::path(plan.workDir) / "normalized.csv").string();
  const std::string dbPath = (fs::path(plan.workDir) / "store.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(dbPath + suffix, ec);  // every run reads its files afresh
  if (auto s = ingestAll(plan, dbPath, out); !s) return makeError(s.error());
  if (out.refused || (!out.unread.empty() && !plan.skipUnread)) return out;  // the caller names them, writes nothing
  TunePlan tp;
  tp.backend = BackendKind::Replay;
  tp.replay = {out.csvPath, plan.system, 0, 0, "", plan.declared};
  tp.request.collectives.clear();  // every one the data measured
  tp.rule = plan.rule;
  tp.name = plan.name;
  auto tuned = tuneShapes(tp);
  if (!tuned) return makeError(tuned.error());
  for (const TunedShape& shape : tuned->shapes) out.shapes.push_back(tableOf(shape));
  out.profile = std::move(tuned->merged.profile);
  return out;
}

}  // namespace dynamiccl::tune
