// `dynamiccl ingest <paths...> [--db F]`: nccl-tests logs, TUNING logs and interchange CSVs into the store.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "offline/cli/store_location.h"
#include "offline/ingest/ingest.h"
#include "offline/cli/commands.h"

namespace dynamiccl::cli {
namespace {

struct IngestOptions {
  std::vector<std::string> paths;
  std::string db;
  bool quiet = false;
};

int runIngest(const IngestOptions& o) {
  auto store = store::Store::open(storeOptions(o.db));
  if (!store) {
    std::cerr << "dynamiccl ingest: " << store.error() << "\n";
    return 1;
  }
  auto writer = store::Writer::create(**store);
  if (!writer) {
    std::cerr << "dynamiccl ingest: " << writer.error() << "\n";
    return 1;
  }
  const ingest::InputFiles inputs = ingest::expandPaths(o.paths);
  const std::vector<std::string>& files = inputs.files;
  int64_t observations = 0, decisions = 0, skippedFiles = 0, failed = 0, refused = 0;
  for (const std::string& dir : inputs.unreadable) std::cerr << "error: cannot read directory " << dir << "\n";
  std::map<std::string, int64_t> skippedWhy;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string progress = "[" + std::to_string(i + 1) + "/" + std::to_string(files.size()) + "] ";
    auto report = ingest::ingestFile(**store, **writer, files[i]);
    if (!report) {
      std::cerr << progress << "error: " << report.error() << "\n";
      ++failed;
      continue;
    }
    observations += report->observations;
    decisions += report->decisions;
    if (report->kind == "skipped") ++skippedFiles;
    if (report->kind == "ambiguous") ++refused;
    for (auto& [reason, n] : report->skipped) skippedWhy[reason] += n;
    // Said even with --quiet when refused: nothing of the file went in. Then what was detected, per
    // section: the collective, shape and configuration, and where they came from.
    const std::vector<std::string> lines = ingest::describe(*report);
    if (!o.quiet || report->kind == "ambiguous")
      for (size_t l = 0; l < lines.size(); ++l) std::cout << (l == 0 ? progress : "") << lines[l] << "\n";
  }
  std::cout << "ingested " << files.size() - skippedFiles - failed - refused << " of " << files.size()
            << " files into " << (*store)->path() << ": " << observations << " observations, " << decisions
            << " decisions\n";
  for (auto& [reason, n] : skippedWhy) std::cout << "  skipped (" << reason << "): " << n << "\n";
  if (refused > 0)
    std::cerr << "dynamiccl ingest: refused " << refused << " file(s) whose sources name different forced "
              << "configurations; rename them or fix their env lines\n";
  return failed == 0 && refused == 0 && inputs.unreadable.empty() ? 0 : 2;
}

}  // namespace

void addIngestCommand(CLI::App& app) {
  auto o = std::make_shared<IngestOptions>();
  CLI::App* sub = app.add_subcommand("ingest", "Read nccl-tests logs, NCCL TUNING logs and interchange CSVs into the store");
  sub->add_option("paths", o->paths, "files or directories (recursive)")->required();
  sub->add_option("--db", o->db, "database file (default: DYNAMICCL_DB or ~/.local/share/dynamiccl/<host>.db)");
  sub->add_flag("-q,--quiet", o->quiet, "only the summary");
  sub->callback([o] {
    if (int rc = runIngest(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli
